//! `anon anonymize` end to end on the bundled Adult data: search, publish, verify, report.
//! Each published file is checked again here, independently of the command's own verification,
//! by counting classes with plain SQL (no function of this crate).

use std::path::Path;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use datafusion_anonymity_engine::jobs::anonymize::{AnonymizeOptions, Published};

use crate::support::{self, ADULT_QIS, AdultPolicy, read_json, repo};

/// The Adult policy of issue 4 (8 QIs with the ARX hierarchies, salary-class sensitive) with
/// `privacy` as its `[privacy]` section.
fn adult_policy(dir: &Path, privacy: &str) -> String {
    AdultPolicy::new(privacy).write(dir)
}

async fn anonymize(
    policy: &str,
    out: &Path,
    report: &Path,
    configure: impl FnOnce(&mut AnonymizeOptions),
) -> Result<Published, String> {
    support::anonymize(policy, out, Some(report), configure).await
}

/// A shell's defaults (optimal, Loss).
fn defaults(_: &mut AnonymizeOptions) {}

/// The algorithm named `name`, else a shell's defaults.
fn with_algorithm(name: &str) -> impl FnOnce(&mut AnonymizeOptions) {
    move |options| options.method = support::algorithm(name)
}

/// A session with the Parquet file `path` registered as `name`.
async fn read_parquet(name: &str, path: &Path) -> SessionContext {
    let ctx = SessionContext::new();
    ctx.register_parquet(
        name,
        &path.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    ctx
}

/// (classes, smallest class, rows, distinct salary classes in the least diverse class) of a
/// published file, by plain SQL.
async fn recount(path: &Path) -> (i64, i64, i64, i64) {
    let ctx = read_parquet("out", path).await;
    let keys: Vec<String> = ADULT_QIS.iter().map(|q| format!("\"{q}\"")).collect();
    let sql = format!(
        "SELECT count(*), min(n), sum(n), min(l) FROM (SELECT count(*) AS n, \
         count(DISTINCT \"salary-class\") AS l FROM out GROUP BY {})",
        keys.join(", ")
    );
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let value = |i: usize| batches[0].column(i).as_primitive::<Int64Type>().value(0);
    (value(0), value(1), value(2), value(3))
}

/// Runs `anonymize`, requires success, and recounts the output with plain SQL: every
/// class at least 5 rows, at least `l` salary classes in each. (classes, rows, report)
async fn anonymize_checked(
    policy: &str,
    out: &Path,
    report: &Path,
    configure: impl FnOnce(&mut AnonymizeOptions),
    privacy: &str,
    l: i64,
) -> (i64, i64, serde_json::Value) {
    if let Err(message) = anonymize(policy, out, report, configure).await {
        panic!("{privacy}: {message}");
    }
    let (classes, k, rows, min_l) = recount(out).await;
    assert!(k >= 5, "{privacy}: smallest class {k}");
    assert!(min_l >= l, "{privacy}: l {min_l}");
    (classes, rows, read_json(report))
}

/// `refine = false`: Mondrian's plain top-down partitioning. On Adult at k = 5 it still publishes
/// every row, verified (k ≥ 5 recounted from the file), at a higher Loss than the refined
/// release (the refinement only cuts or moves leaf classes where that lowers the Loss, and on
/// Adult it does). With another algorithm the flag is refused before anything is written.
#[tokio::test]
async fn mondrian_without_refinement_publishes_a_coarser_verified_release() {
    let dir = tempfile::tempdir().unwrap();
    let privacy = "k = 5\nmax_suppression = 0.0";
    let policy = adult_policy(dir.path(), privacy);
    let mut losses = Vec::new();
    for (name, refine) in [("refined", true), ("plain", false)] {
        let out = dir.path().join(format!("{name}.parquet"));
        let report = dir.path().join(format!("{name}.json"));
        let html = dir.path().join(format!("{name}.html"));
        let configure = |o: &mut AnonymizeOptions| {
            o.method = support::algorithm("mondrian");
            o.refine = refine;
            o.html_report = Some(html.display().to_string());
        };
        let (_, rows, json) =
            anonymize_checked(&policy, &out, &report, configure, privacy, 1).await;
        assert_eq!(rows, 30_162, "{name}");
        assert_eq!(json["refined"], name == "refined", "{name}");
        // the HTML report's row: its meaning, and "no (refinement off)" for the plain release only
        let page = std::fs::read_to_string(&html).unwrap();
        assert!(page.contains("small regions refined where that lowers the Loss"));
        assert_eq!(
            page.contains("no (refinement off)"),
            name == "plain",
            "{name}"
        );
        losses.push(json["metric_value"].as_f64().unwrap());
    }
    assert!(
        losses[1] > losses[0],
        "Loss refined {} plain {}",
        losses[0],
        losses[1]
    );

    let out = dir.path().join("refused.parquet");
    let message = anonymize(&policy, &out, &dir.path().join("refused.json"), |o| {
        o.refine = false
    })
    .await
    .unwrap_err();
    assert!(
        message.contains("refine = false is for algorithm mondrian, not optimal"),
        "{message}"
    );
    assert!(!out.exists());
}

#[tokio::test]
async fn adult_policies_publish_verified_output() {
    let dir = tempfile::tempdir().unwrap();
    // (privacy section, allowed suppressed rows = ⌊rate · 30162⌋, l required)
    let cases = [
        ("k = 5\nmax_suppression = 0.0", 0, 1),
        ("k = 5\nmax_suppression = 0.02", 603, 1),
        (
            "k = 5\nmax_suppression = 0.0\nl_diversity = { kind = \"distinct\", l = 2 }",
            0,
            2,
        ),
        (
            "k = 5\nmax_suppression = 0.0\nt_closeness = { kind = \"equal\", t = 0.2 }",
            0,
            1,
        ),
    ];
    for (i, (privacy, allowed, l)) in cases.iter().enumerate() {
        let policy = adult_policy(dir.path(), privacy);
        let out = dir.path().join(format!("out-{i}.parquet"));
        let report = dir.path().join(format!("report-{i}.json"));
        let (classes, rows, json) =
            anonymize_checked(&policy, &out, &report, defaults, privacy, *l).await;
        let suppressed = 30_162 - rows;
        assert!(suppressed <= *allowed, "{privacy}: {suppressed} suppressed");
        assert_eq!(json["publish"]["verification"]["classes"], classes);
        assert_eq!(json["publish"]["input_rows"], 30_162);
        assert_eq!(json["publish"]["suppressed_rows"], suppressed);
        assert_eq!(json["publish"]["levels"].as_array().unwrap().len(), 8);
        for key in [
            "frequency_set",
            "search",
            "suppression_count",
            "write",
            "verify",
            "post_analytics",
            "total",
        ] {
            assert!(json["seconds"][key].as_f64().unwrap() >= 0.0, "{key}");
        }
        assert!(json["nodes_checked"].as_u64().unwrap() >= 1);
        assert_eq!(json["lattice_size"], 2 * 5 * 2 * 3 * 4 * 3 * 3 * 3);
        if privacy.contains("t_closeness") {
            let t = json["publish"]["verification"]["sensitive"][0]["t"]
                .as_f64()
                .unwrap();
            assert!(t <= 0.2 + 1e-9, "t {t}");
        }
        // the chosen loss is no worse than the IAB heuristic's (optimal is optimal)
        if i == 1 {
            let iab_out = dir.path().join("iab.parquet");
            let iab_report = dir.path().join("iab.json");
            anonymize(
                &policy,
                &iab_out,
                &iab_report,
                with_algorithm("iab-full-domain"),
            )
            .await
            .unwrap();
            let iab = read_json(&iab_report)["metric_value"].as_f64().unwrap();
            let optimal = json["metric_value"].as_f64().unwrap();
            assert!(optimal <= iab + 1e-12, "optimal {optimal} > iab {iab}");
        }
    }
}

#[tokio::test]
async fn an_impossible_policy_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // k beyond the table's 30,162 rows: not even the all-`*` node has a class that large
    let policy = adult_policy(dir.path(), "k = 40000\nmax_suppression = 0.5");
    let out = dir.path().join("out.parquet");
    let report = dir.path().join("report.json");
    let message = anonymize(&policy, &out, &report, defaults)
        .await
        .unwrap_err();
    assert!(
        message.contains("no generalization") && message.contains("nothing written"),
        "{message}"
    );
    assert_eq!(message.trim_end().lines().count(), 1, "{message}");
    assert!(!out.exists() && !report.exists());
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.starts_with('.').then_some(name)
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn a_value_missing_from_a_tree_is_counted_not_shown() {
    let dir = tempfile::tempdir().unwrap();
    let policy = adult_policy(dir.path(), "k = 5\nmax_suppression = 0.02");
    // the sex hierarchy without its Female leaf
    std::fs::write(dir.path().join("sex.csv"), "Male;*\n").unwrap();
    let text = std::fs::read_to_string(&policy).unwrap().replace(
        &repo("examples/adult/hierarchies/adult_hierarchy_sex.csv")
            .display()
            .to_string(),
        &dir.path().join("sex.csv").display().to_string(),
    );
    std::fs::write(&policy, text).unwrap();
    let out = dir.path().join("out.parquet");
    let message = anonymize(&policy, &out, &dir.path().join("r.json"), defaults)
        .await
        .unwrap_err();
    assert!(
        message.contains("'sex'") && message.contains("1 distinct value"),
        "{message}"
    );
    assert!(!message.contains("Female"), "{message}");
    assert!(!out.exists());
}

/// Every label of each of a leaf's hierarchy levels, read straight from the ARX CSV file.
fn hierarchy_labels(qi: &str) -> std::collections::HashMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo(&format!(
        "examples/adult/hierarchies/adult_hierarchy_{qi}.csv"
    )))
    .unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let labels: Vec<String> = line.split(';').map(str::to_string).collect();
            (labels[0].clone(), labels)
        })
        .collect()
}

/// The QI columns of a Parquet file as text, row by row.
/// [`qi_rows`] in the order of `order_by` (`ORDER BY …`, or nothing for the file's order).
async fn qi_rows_ordered(path: &Path, order_by: &str) -> Vec<Vec<String>> {
    let ctx = read_parquet("t", path).await;
    let columns: Vec<String> = ADULT_QIS
        .iter()
        .map(|q| format!("CAST(\"{q}\" AS VARCHAR)"))
        .collect();
    let sql = format!("SELECT {} FROM t {order_by}", columns.join(", "));
    let mut rows = Vec::new();
    for b in ctx.sql(&sql).await.unwrap().collect().await.unwrap() {
        let text: Vec<_> = (0..ADULT_QIS.len())
            .map(|c| cast(b.column(c), &DataType::Utf8).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            rows.push(
                text.iter()
                    .map(|t| t.as_string::<i32>().value(r).to_string())
                    .collect(),
            );
        }
    }
    rows
}

/// Mondrian on Adult with the bundled hierarchies: k = 5 with no suppression, k = 5 plus
/// distinct l = 2, k = 5 plus t = 0.2. Each output is recounted with plain SQL, every label is
/// checked against the raw value in the same row (the rows keep the input order when nothing
/// is suppressed) using the hierarchy files themselves, and Mondrian's loss must be below the
/// optimal full-domain loss of the same policy.
#[tokio::test]
async fn adult_mondrian_publishes_verified_local_recoding() {
    let dir = tempfile::tempdir().unwrap();
    // published rows are shuffled: the input gets a row id (insensitive, published as is) to
    // pair each published row with its original
    let input = dir.path().join("adult-ids.parquet");
    let ids = read_parquet("adult", &repo("examples/adult/adult.parquet")).await;
    ids.sql(&format!(
        "COPY (SELECT row_number() OVER () AS row_id, * FROM adult) TO '{}' STORED AS PARQUET",
        input.display()
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let original = qi_rows_ordered(&input, "ORDER BY row_id").await;
    let trees: Vec<_> = ADULT_QIS.iter().map(|q| hierarchy_labels(q)).collect();
    let cases = [
        ("k = 5\nmax_suppression = 0.0", 1),
        (
            "k = 5\nmax_suppression = 0.0\nl_diversity = { kind = \"distinct\", l = 2 }",
            2,
        ),
        (
            "k = 5\nmax_suppression = 0.0\nt_closeness = { kind = \"equal\", t = 0.2 }",
            1,
        ),
    ];
    for (i, (privacy, l)) in cases.iter().enumerate() {
        let policy = adult_policy(dir.path(), privacy);
        let text = std::fs::read_to_string(&policy)
            .unwrap()
            .replace(
                &repo("examples/adult/adult.parquet").display().to_string(),
                &input.display().to_string(),
            )
            .replace(
                "[attributes]\n",
                "[attributes]\nrow_id = { role = \"insensitive\" }\n",
            );
        std::fs::write(&policy, text).unwrap();
        let out = dir.path().join(format!("mondrian-{i}.parquet"));
        let report = dir.path().join(format!("mondrian-{i}.json"));
        let (classes, rows, json) = anonymize_checked(
            &policy,
            &out,
            &report,
            with_algorithm("mondrian"),
            privacy,
            *l,
        )
        .await;
        assert_eq!(rows, 30_162, "{privacy}: Mondrian suppresses nothing");
        assert_eq!(json["recoding"], "local");
        assert_eq!(json["algorithm"], "mondrian");
        assert_eq!(json["publish"]["verification"]["classes"], classes);
        assert_eq!(json["publish"]["suppressed_rows"], 0);
        if privacy.contains("t_closeness") {
            let t = json["publish"]["verification"]["sensitive"][0]["t"]
                .as_f64()
                .unwrap();
            assert!(t <= 0.2 + 1e-9, "t {t}");
        }

        let published = qi_rows_ordered(&out, "ORDER BY row_id").await;
        assert_eq!(published.len(), original.len());
        for (raw, labels) in original.iter().zip(&published) {
            for (q, (value, label)) in raw.iter().zip(labels).enumerate() {
                // age's value-free intervals (a, b): a < x < b, neither end a member's value
                // (the age tree's first and last nodes have no neighbour: -inf, inf)
                let end = |e: &str| match e {
                    "-inf" => i64::MIN,
                    "inf" => i64::MAX,
                    e => e.parse().unwrap(),
                };
                let covered = label == "*"
                    || trees[q][value].contains(label)
                    || label
                        .strip_prefix('(')
                        .and_then(|s| s.strip_suffix(')'))
                        .and_then(|s| s.split_once(", "))
                        .is_some_and(|(lo, hi)| {
                            let (lo, hi, x): (i64, i64, i64) =
                                (end(lo), end(hi), value.parse().unwrap());
                            ADULT_QIS[q] == "age" && lo < x && x < hi
                        });
                assert!(
                    covered,
                    "{privacy}: a label of {} does not cover its value",
                    ADULT_QIS[q]
                );
            }
        }

        // full-domain's optimum of the same policy keeps less
        let optimal_report = dir.path().join(format!("optimal-{i}.json"));
        anonymize(
            &policy,
            &dir.path().join(format!("optimal-{i}.parquet")),
            &optimal_report,
            defaults,
        )
        .await
        .unwrap();
        let optimal = read_json(&optimal_report)["metric_value"].as_f64().unwrap();
        let local = json["metric_value"].as_f64().unwrap();
        assert!(
            local < optimal,
            "{privacy}: mondrian {local} vs optimal {optimal}"
        );
    }
}

/// The same input, policy and seed give the same bytes, for every local algorithm (KACA and
/// IAB on four of the QIs, to keep the test short in debug builds).
#[tokio::test]
async fn local_recoding_output_is_byte_identical() {
    let dir = tempfile::tempdir().unwrap();
    let all = adult_policy(dir.path(), "k = 5\nmax_suppression = 0.02");
    let small_dir = dir.path().join("small");
    std::fs::create_dir_all(&small_dir).unwrap();
    let small = AdultPolicy::new("k = 5\nmax_suppression = 0.02")
        .qis(&["sex", "age", "race", "education"])
        .write(&small_dir);
    for (algorithm, policy) in [("mondrian", &all), ("kaca", &small), ("iab", &small)] {
        let mut outputs = Vec::new();
        for run in 0..2 {
            let out = dir.path().join(format!("{algorithm}-{run}.parquet"));
            let report = dir.path().join(format!("{algorithm}-{run}.json"));
            anonymize(policy, &out, &report, |o| {
                o.method = support::algorithm(algorithm);
                o.seed = Some(7);
            })
            .await
            .unwrap();
            outputs.push(std::fs::read(&out).unwrap());
        }
        assert!(outputs[0] == outputs[1], "{algorithm}: two runs differ");
    }
}

/// An unknown algorithm is refused when its name is read (by every shell), listing the valid
/// ones.
#[test]
fn unknown_algorithm_lists_the_valid_ones() {
    let error = "datafly"
        .parse::<datafusion_anonymity_engine::search::Method>()
        .unwrap_err();
    let message = support::message(&error);
    for name in ["optimal", "iab-full-domain", "mondrian", "kaca", "iab"] {
        assert!(message.contains(name), "{message}");
    }
}

/// A policy an algorithm cannot serve is one clear error, and nothing is written: ordered
/// t-closeness on a string attribute; a metric other than loss for local recoding.
#[tokio::test]
async fn local_recoding_refuses_what_it_cannot_serve() {
    let dir = tempfile::tempdir().unwrap();
    let policy = adult_policy(
        dir.path(),
        "k = 5\nt_closeness = { kind = \"ordered\", t = 0.2 }",
    );
    let out = dir.path().join("x.parquet");
    let report = dir.path().join("x.json");
    for algorithm in ["mondrian", "kaca", "iab"] {
        let message = anonymize(&policy, &out, &report, with_algorithm(algorithm))
            .await
            .unwrap_err();
        assert_eq!(message.lines().count(), 1, "{message}");
        assert!(
            message.contains("'salary-class'") && message.contains("ordered"),
            "{message}"
        );
    }
    let policy = adult_policy(dir.path(), "k = 5");
    let message = anonymize(&policy, &out, &report, |o| {
        o.method = support::algorithm("mondrian");
        o.metric = "precision".parse().unwrap();
    })
    .await
    .unwrap_err();
    assert!(
        message.contains("precision") && message.contains("local"),
        "{message}"
    );
    assert!(!out.exists() && !report.exists());
    // no staging left behind either
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("anon-tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

/// Per class of a published file: (rows with salary `<=50K`, rows with `>50K`, whether every
/// quasi-identifier is `*`), by plain SQL.
async fn salary_counts(path: &Path) -> Vec<(f64, f64, bool)> {
    let ctx = read_parquet("out", path).await;
    let keys: Vec<String> = ADULT_QIS.iter().map(|q| format!("\"{q}\"")).collect();
    let sql = format!(
        "SELECT count(*) FILTER (WHERE \"salary-class\" = '<=50K'), \
         count(*) FILTER (WHERE \"salary-class\" = '>50K'), \
         count(*) FILTER (WHERE \"salary-class\" IS NULL OR \"salary-class\" NOT IN ('<=50K', '>50K')), \
         {} FROM out GROUP BY {}",
        keys.iter()
            .map(|k| format!("{k} = '*'"))
            .collect::<Vec<_>>()
            .join(" AND "),
        keys.join(", ")
    );
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let mut classes = Vec::new();
    for batch in &batches {
        let column = |i: usize| batch.column(i).as_primitive::<Int64Type>().clone();
        let (low, high, other) = (column(0), column(1), column(2));
        let all_top = batch.column(3).as_boolean();
        for row in 0..batch.num_rows() {
            assert_eq!(other.value(row), 0, "Adult's salary-class has two values");
            classes.push((
                low.value(row) as f64,
                high.value(row) as f64,
                all_top.value(row),
            ));
        }
    }
    classes
}

/// α, basic β, enhanced β and δ of a two-valued attribute, straight from their definitions
/// (docs/definitions.md): per class (a, b) counts against the table's (A, B).
fn two_value_measures(class: (f64, f64), table: (f64, f64)) -> (f64, f64, f64, f64) {
    let (e, n) = (class.0 + class.1, table.0 + table.1);
    let (pe, pt) = ([class.0 / e, class.1 / e], [table.0 / n, table.1 / n]);
    let alpha = pe[0].max(pe[1]);
    let gains: Vec<(f64, f64)> = (0..2)
        .filter(|&v| pe[v] > pt[v])
        .map(|v| ((pe[v] - pt[v]) / pt[v], -pt[v].ln()))
        .collect();
    let beta = gains.iter().map(|g| g.0).fold(0.0, f64::max);
    let enhanced = if gains.iter().any(|&(g, cap)| g > cap + 1e-12) {
        f64::INFINITY
    } else {
        beta
    };
    let delta = if pe[0] == 0.0 || pe[1] == 0.0 {
        f64::INFINITY
    } else {
        (0..2)
            .map(|v| (pe[v] / pt[v]).ln().abs())
            .fold(0.0, f64::max)
    };
    (alpha, beta, enhanced, delta)
}

/// α, β (basic and enhanced) and δ as policy requirements, searched full-domain (failing
/// classes dropped) and with Mondrian (failing classes masked), published and verified: every
/// class of the written file meets them when measured here from plain SQL counts (against the
/// output's own distribution, as a reader would; the masked all-`*` class, which fails on its
/// own, excluded as the verification excludes it), and the report's worst values are those of
/// the recount.
#[tokio::test]
async fn adult_attribute_disclosure_requirements_publish_verified_output() {
    let dir = tempfile::tempdir().unwrap();
    // (privacy section, report key, which measure, bound)
    let cases = [
        ("alpha = 0.9", "alpha", 0, 0.9),
        ("beta_likeness = { beta = 2.0 }", "beta", 1, 2.0),
        (
            "beta_likeness = { beta = 1.0, enhanced = true }",
            "beta",
            2,
            1.0,
        ),
        ("delta_disclosure = 1.0", "delta", 3, 1.0),
    ];
    for (i, (requirement, key, which, bound)) in cases.iter().enumerate() {
        for (algorithm, suppression) in [("optimal", "drop"), ("mondrian", "mask")] {
            let privacy = format!(
                "k = 5\nmax_suppression = 0.05\nsuppression = \"{suppression}\"\n{requirement}"
            );
            let policy = adult_policy(dir.path(), &privacy);
            let out = dir.path().join(format!("out-{i}-{algorithm}.parquet"));
            let report = dir.path().join(format!("report-{i}-{algorithm}.json"));
            let context = format!("{requirement}, {algorithm}");
            if let Err(message) = anonymize(&policy, &out, &report, with_algorithm(algorithm)).await
            {
                panic!("{context}: {message}");
            }
            let classes = salary_counts(&out).await;
            let table = classes
                .iter()
                .fold((0.0, 0.0), |t, c| (t.0 + c.0, t.1 + c.1));
            let mut worst: f64 = 0.0;
            let mut excluded = 0.0;
            for &(low, high, all_top) in &classes {
                let m = two_value_measures((low, high), table);
                let value = [m.0, m.1, m.2, m.3][*which];
                let met = if *which == 3 {
                    value < *bound
                } else {
                    value <= bound + 1e-9
                };
                if suppression == "mask" && all_top && (!met || low + high < 5.0) {
                    excluded += low + high;
                    continue;
                }
                assert!(low + high >= 5.0, "{context}: class ({low}, {high})");
                assert!(met, "{context}: class ({low}, {high}) has {value}");
                worst = worst.max(value);
            }
            let published = table.0 + table.1 - excluded;
            assert!(published >= 30_162.0 * 0.95, "{context}: {published} rows");
            let json = read_json(&report);
            let reported = json["publish"]["verification"]["sensitive"][0][key]
                .as_f64()
                .unwrap_or_else(|| panic!("{context}: no {key} in the report"));
            assert!(
                (reported - worst).abs() < 1e-9,
                "{context}: report {reported}, recount {worst}"
            );
        }
    }
}

/// Post-analytics: the report's risk and leakage figures equal a recount of the written file
/// with plain SQL, and a threshold the output breaks (prosecutor, average prosecutor,
/// marketer risk, leakage) publishes nothing, with an error naming the threshold and by how
/// much.
#[tokio::test]
async fn post_analytics_thresholds_fail_closed() {
    let dir = tempfile::tempdir().unwrap();
    let privacy = "k = 5\nmax_suppression = 0.02";
    let policy = adult_policy(dir.path(), privacy);
    let out = dir.path().join("out.parquet");
    let report = dir.path().join("report.json");
    let (classes, rows, json) =
        anonymize_checked(&policy, &out, &report, defaults, privacy, 1).await;
    let (_, k, _, _) = recount(&out).await;
    let figures = &json["publish"]["post_analytics"];
    // prosecutor risk 1/k of the smallest class; average and marketer #classes / rows
    let close = |key: &str, expected: f64| {
        let got = figures[key].as_f64().unwrap();
        assert!((got - expected).abs() < 1e-12, "{key}: {got} vs {expected}");
    };
    close("prosecutor_max", 1.0 / k as f64);
    close("prosecutor_average", classes as f64 / rows as f64);
    close("marketer", classes as f64 / rows as f64);
    // leakage of every ranked attribute (the quasi-identifiers come from the written classes,
    // the others from the files): H(a)/log2 n over the written rows, from plain counts
    let ctx = read_parquet("out", &out).await;
    let leakage = figures["leakage"].as_array().unwrap();
    let mut sex_leakage = f64::NAN;
    for figure in leakage {
        let attribute = figure["attribute"].as_str().unwrap();
        let batches = ctx
            .sql(&format!(
                "SELECT count(*) FROM out GROUP BY \"{attribute}\""
            ))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let counts: Vec<f64> = batches
            .iter()
            .flat_map(|b| {
                b.column(0)
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .map(|&c| c as f64)
                    .collect::<Vec<_>>()
            })
            .collect();
        let n: f64 = counts.iter().sum();
        let entropy: f64 = counts.iter().map(|c| -(c / n) * (c / n).log2()).sum();
        let expected = entropy / n.log2();
        let got = figure["leakage"].as_f64().unwrap();
        assert!(
            (got - expected).abs() < 1e-9,
            "{attribute}: {got} vs {expected}"
        );
        if attribute == "sex" {
            sex_leakage = expected;
        }
    }
    // the sensitive attribute is not ranked; the others are, highest first
    assert!(leakage.iter().all(|l| l["attribute"] != "salary-class"));
    assert_eq!(leakage.len(), ADULT_QIS.len());
    let values: Vec<f64> = leakage
        .iter()
        .map(|l| l["leakage"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] >= w[1]), "{values:?}");

    // thresholds just below the recounted figures: nothing is published, the error says which
    // threshold and by how much; at the figures themselves, it is published. The average and
    // marketer bounds are 0.9 of the recounted #classes / rows, written with 6 decimals; the
    // error gives the figure and the gap with 4
    let below = 0.9 / k as f64;
    let average = classes as f64 / rows as f64;
    let average_below: f64 = format!("{:.6}", 0.9 * average).parse().unwrap();
    let cases = [
        (
            format!("max_prosecutor_risk = {below}"),
            "max_prosecutor_risk".to_string(),
            true,
        ),
        (
            format!("max_leakage = {{ sex = {} }}", sex_leakage * 0.5),
            "max_leakage of 'sex'".to_string(),
            true,
        ),
        (
            format!("max_average_risk = {average_below}"),
            format!(
                "the average prosecutor risk {average:.4} is above max_average_risk = \
                 {average_below} (by {:.4})",
                average - average_below
            ),
            true,
        ),
        (
            format!("max_marketer_risk = {average_below}"),
            format!(
                "the marketer risk {average:.4} is above max_marketer_risk = {average_below} \
                 (by {:.4})",
                average - average_below
            ),
            true,
        ),
        (
            format!(
                "max_prosecutor_risk = {}\nmax_leakage = {{ sex = {} }}\n\
                 max_average_risk = {average}\nmax_marketer_risk = {average}",
                1.0 / k as f64,
                sex_leakage
            ),
            String::new(),
            false,
        ),
    ];
    for (i, (thresholds, named, fails)) in cases.iter().enumerate() {
        let policy = adult_policy(dir.path(), &format!("{privacy}\n{thresholds}"));
        let out = dir.path().join(format!("thresholded-{i}.parquet"));
        let published = anonymize(&policy, &out, &dir.path().join("r.json"), defaults).await;
        if *fails {
            let message = published.unwrap_err();
            assert!(
                message.contains(named.as_str())
                    && message.contains("by ")
                    && message.contains("not published"),
                "{thresholds}: {message}"
            );
            assert!(!out.exists(), "{thresholds}: an output appeared");
            let leftovers: Vec<_> = std::fs::read_dir(dir.path())
                .unwrap()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().contains("anon-tmp"))
                .collect();
            assert!(leftovers.is_empty(), "staging left behind");
        } else {
            assert!(published.is_ok(), "{thresholds}: {published:?}");
            assert!(out.exists());
        }
    }
}

/// Dropping a failing class changes the table's distribution, so a class that met β against
/// the input can fail against the published rows: the publisher settles that before writing.
/// By hand, β = 1 on s, classes by g (level 0):
///   A: x, y, y (3)   C: x ×5 (5)   D: y, y (2)       input p(y) = 4/10 = 0.4
///   D: gain of y (1 − 0.4)/0.4 = 1.5 > 1: fails. A: (2/3 − 0.4)/0.4 = 0.667, C: x (1 − 0.6)/0.6
///   = 0.667: pass.
///   Without D, p(y) = 2/8 = 0.25: A's gain (2/3 − 0.25)/0.25 = 1.667 > 1: fails too.
///   Without A, p(x) = 1: C's gain 0: passes. Published: C's 5 rows only (5 of 10 suppressed,
///   the most max_suppression = 0.5 allows). Without settling, A would be written and the
///   verification (against the written rows) would refuse the whole output.
#[tokio::test]
async fn dropping_classes_settles_table_relative_requirements() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("in.csv");
    let rows = [
        ("A", "x"),
        ("A", "y"),
        ("A", "y"),
        ("C", "x"),
        ("C", "x"),
        ("C", "x"),
        ("C", "x"),
        ("C", "x"),
        ("D", "y"),
        ("D", "y"),
    ];
    let mut text = String::from("id,g,s\n");
    for (i, (g, s)) in rows.iter().enumerate() {
        text.push_str(&format!("{i},{g},{s}\n"));
    }
    std::fs::write(&csv, text).unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "[input]\npath = \"{}\"\n[privacy]\nk = 1\nmax_suppression = 0.5\n\
             beta_likeness = {{ beta = 1.0 }}\n[attributes]\nid = {{ role = \"insensitive\" }}\n\
             g = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", rows = \
             [[\"A\", \"*\"], [\"C\", \"*\"], [\"D\", \"*\"]] }} }}\n\
             s = {{ role = \"sensitive\" }}\n[transformation]\ng = 0\n",
            csv.display()
        ),
    )
    .unwrap();
    let out = dir.path().join("out.parquet");
    support::apply(&policy.display().to_string(), &out, |_| {})
        .await
        .unwrap();
    let ctx = read_parquet("out", &out).await;
    let batches = ctx
        .sql("SELECT g, count(*) FROM out GROUP BY g")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut classes = Vec::new();
    for batch in &batches {
        let g = cast(batch.column(0), &DataType::Utf8).unwrap();
        for row in 0..batch.num_rows() {
            classes.push((
                g.as_string::<i32>().value(row).to_string(),
                batch.column(1).as_primitive::<Int64Type>().value(row),
            ));
        }
    }
    assert_eq!(classes, vec![("C".to_string(), 5)]);
}

/// `--utility`: the profile's utility section with every row paired with its own original,
/// although the written rows are shuffled. Two independent computations agree: the search's
/// Loss of the chosen release (from its roll-up of the frequency set) and the profile's Loss
/// over the row pairs (from the hierarchy files, suppressed rows counting 1 per QI), for a
/// full-domain release with drop and a local one with mask.
#[tokio::test]
async fn utility_in_the_report_pairs_every_row_with_its_original() {
    let dir = tempfile::tempdir().unwrap();
    for (i, (algorithm, suppression)) in [("optimal", "drop"), ("mondrian", "mask")]
        .iter()
        .enumerate()
    {
        let privacy = format!("k = 5\nmax_suppression = 0.02\nsuppression = \"{suppression}\"");
        let policy = adult_policy(dir.path(), &privacy);
        let out = dir.path().join(format!("out-{i}.parquet"));
        let report = dir.path().join(format!("report-{i}.json"));
        anonymize(&policy, &out, &report, |o| {
            o.method = support::algorithm(algorithm);
            o.utility = true;
        })
        .await
        .unwrap();
        let json = read_json(&report);
        let utility = &json["utility"];
        let (search_loss, profile_loss) = (
            json["metric_value"].as_f64().unwrap(),
            utility["loss_metric"].as_f64().unwrap(),
        );
        assert!(
            (search_loss - profile_loss).abs() < 1e-9,
            "{algorithm}: search {search_loss}, profile {profile_loss}"
        );
        assert_eq!(
            utility["suppressed_rows"], json["publish"]["suppressed_rows"],
            "{algorithm}"
        );
        // paired by recoding each input row again, not by the shuffled rows' positions
        assert_eq!(
            utility["matched_by"],
            datafusion_anonymity_engine::publish::RELEASE_PAIRING,
            "{algorithm}"
        );
        if *algorithm == "optimal" {
            // `apply` with utility at the same levels reports the same Loss
            let mut text = std::fs::read_to_string(&policy).unwrap();
            text.push_str("[transformation]\n");
            for level in json["levels"].as_array().unwrap() {
                text.push_str(&format!(
                    "\"{}\" = {}\n",
                    level["quasi_identifier"].as_str().unwrap(),
                    level["level"]
                ));
            }
            let fixed = dir.path().join("fixed.toml");
            std::fs::write(&fixed, text).unwrap();
            let applied = dir.path().join("applied.json");
            let applied_out = dir.path().join("applied.parquet");
            support::apply(&fixed.display().to_string(), &applied_out, |o| {
                o.utility = true;
                o.report = Some(applied.display().to_string());
            })
            .await
            .unwrap();
            let applied = read_json(&applied);
            let applied_loss = applied["utility"]["loss_metric"].as_f64().unwrap();
            assert!(
                (applied_loss - profile_loss).abs() < 1e-12,
                "apply {applied_loss}, anonymize {profile_loss}"
            );
            assert_eq!(
                applied["utility"]["suppressed_rows"],
                utility["suppressed_rows"]
            );
        }
    }
}

/// Several rows per person (pid a pseudonym, published as it is; one id unknown):
///   zip    age  pid          zip    age  pid
///   47601  25   p1 ×2        47602  33   p3 ×2
///   47601  27   p2 ×2        47602  36   p4 ×2
///   47603  52   p5, NULL
const VISITS: &str = "id,zip,age,pid,diagnosis\n\
    1,47601,25,p1,flu\n2,47601,25,p1,cold\n3,47601,27,p2,flu\n4,47601,27,p2,cold\n\
    5,47602,33,p3,flu\n6,47602,33,p3,cold\n7,47602,36,p4,flu\n8,47602,36,p4,cold\n\
    9,47603,52,p5,flu\n10,47603,52,,cold\n";

/// A policy on [`VISITS`] (written to `dir`): zip masked digit by digit, age in 10-year
/// buckets, pid insensitive, diagnosis sensitive, with `privacy` as its `[privacy]` section.
fn visits_policy(dir: &Path, privacy: &str) -> String {
    let csv = dir.join("visits.csv");
    std::fs::write(&csv, VISITS).unwrap();
    let path = dir.join("visits.toml");
    std::fs::write(
        &path,
        format!(
            "[input]\npath = \"{}\"\n[privacy]\n{privacy}\n[attributes]\n\
             id = {{ role = \"identifier\" }}\n\
             zip = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"mask\", length = 5 }} }}\n\
             age = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"interval\", widths = [10] }} }}\n\
             pid = {{ role = \"insensitive\" }}\n\
             diagnosis = {{ role = \"sensitive\" }}\n",
            csv.display()
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// Per published class (GROUP BY zip, age) of a written file, by plain SQL: (zip, age, rows,
/// distinct non-NULL person ids), ordered by zip and age.
async fn person_classes(path: &Path) -> Vec<(String, String, i64, i64)> {
    let ctx = read_parquet("out", path).await;
    let batches = ctx
        .sql(
            "SELECT CAST(zip AS VARCHAR), CAST(age AS VARCHAR), count(*), count(DISTINCT pid) \
             FROM out GROUP BY zip, age",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut classes = Vec::new();
    for b in &batches {
        let text = |i: usize| cast(b.column(i), &DataType::Utf8).unwrap();
        let (zip, age) = (text(0), text(1));
        for r in 0..b.num_rows() {
            classes.push((
                zip.as_string::<i32>().value(r).to_string(),
                age.as_string::<i32>().value(r).to_string(),
                b.column(2).as_primitive::<Int64Type>().value(r),
                b.column(3).as_primitive::<Int64Type>().value(r),
            ));
        }
    }
    classes.sort();
    classes
}

/// The levels the report gives, as (quasi-identifier, level).
fn report_levels(json: &serde_json::Value) -> Vec<(String, u64)> {
    json["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["quasi_identifier"].as_str().unwrap().to_string(),
                l["level"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// The worst distinct-persons figure the report's verification gives for `pid`.
fn reported_persons(json: &serde_json::Value) -> f64 {
    json["publish"]["verification"]["sensitive"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["attribute"] == "pid")
        .and_then(|s| s["persons"].as_f64())
        .unwrap_or_else(|| panic!("no persons figure in {}", json["publish"]["verification"]))
}

/// k over persons end to end ([`VISITS`], k = 2 rows, max_suppression 0.2, so at most 2 of
/// the 10 rows dropped). By hand:
/// - Rows only: at the finest levels (zip 0, age 0) the classes are the five pairs of equal
///   rows, 2 rows each: k = 2 holds with Loss 0, the optimum.
/// - With k_persons = 2, every class of age level 0 holds one person whatever the zip level
///   (each age belongs to one person; the NULL id may be p5), so all 10 rows fail, beyond the
///   budget: rows-k passes where persons-k fails, and the search must generalize age.
///   At (zip 0, age 1): 47601/[20, 30) p1, p2 (4 rows, 2 persons), 47602/[30, 40) p3, p4
///   (4 rows, 2 persons), 47603/[50, 60) p5 and NULL (1 person): dropped, 2 rows. Loss: the
///   age cells cover 2 of the 5 ages, (2 − 1)/(5 − 1) = 1/4, for 8 rows; the 2 dropped rows
///   cost 1 per QI: (8 · 1/4 + 2 · 2)/(10 · 2) = 0.3. Every other node with age level 1 costs
///   more on zip and drops the same 2 rows; age level 2 costs 1 on age for every row
///   (≥ 8/20 + 0.2 or, at a zip level that merges 47603 with the rest, ≥ 0.5): (0, 1) is the
///   optimum.
/// Mondrian with k_persons = 2 is checked by recounting its output. Every written class is
/// recounted with plain SQL (count(DISTINCT pid), which ignores NULL ids: stricter than the
/// definition), and the report's worst persons figure equals the recount.
#[tokio::test]
async fn k_persons_publishes_classes_of_enough_persons() {
    let dir = tempfile::tempdir().unwrap();
    let rows_only = "k = 2\nmax_suppression = 0.2";
    let persons = "k = 2\nk_persons = 2\nperson_id = \"pid\"\nmax_suppression = 0.2";

    // rows only: the raw table
    let policy = visits_policy(dir.path(), rows_only);
    let (out, report) = (
        dir.path().join("rows.parquet"),
        dir.path().join("rows.json"),
    );
    anonymize(&policy, &out, &report, defaults).await.unwrap();
    let json = read_json(&report);
    assert_eq!(
        report_levels(&json),
        vec![("zip".to_string(), 0), ("age".to_string(), 0)]
    );
    let classes = person_classes(&out).await;
    assert_eq!(classes.len(), 5);
    assert!(classes.iter().all(|c| c.2 == 2 && c.3 <= 1), "{classes:?}");

    // persons: age generalized, 47603/[50, 60) dropped
    let policy = visits_policy(dir.path(), persons);
    let (out, report) = (
        dir.path().join("persons.parquet"),
        dir.path().join("persons.json"),
    );
    anonymize(&policy, &out, &report, defaults).await.unwrap();
    let json = read_json(&report);
    assert_eq!(
        report_levels(&json),
        vec![("zip".to_string(), 0), ("age".to_string(), 1)]
    );
    let s = |x: &str| x.to_string();
    assert_eq!(
        person_classes(&out).await,
        vec![
            (s("47601"), s("[20, 30)"), 4, 2),
            (s("47602"), s("[30, 40)"), 4, 2),
        ]
    );
    assert_eq!(json["publish"]["suppressed_rows"], 2);
    assert!((json["metric_value"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert_eq!(reported_persons(&json), 2.0);
    // post-analytics counts persons, not rows: each written class has 4 rows of 2 persons,
    // so a record's risk is 1/2, not 1/4: prosecutor max 1/2, average and marketer
    // (4 · 1/2 + 4 · 1/2)/8 = 1/2; the person id (a pseudonym) is not ranked for leakage
    let post = &json["publish"]["post_analytics"];
    for figure in ["prosecutor_max", "prosecutor_average", "marketer"] {
        assert_eq!(post[figure].as_f64(), Some(0.5), "{figure}: {post}");
    }
    let ranked: Vec<&str> = post["leakage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["attribute"].as_str().unwrap())
        .collect();
    assert!(
        !ranked.contains(&"pid") && ranked.contains(&"zip"),
        "{ranked:?}"
    );

    // Mondrian: every written class has 2 rows and 2 persons, at most 2 rows dropped
    let (out, report) = (
        dir.path().join("mondrian.parquet"),
        dir.path().join("mondrian.json"),
    );
    anonymize(&policy, &out, &report, with_algorithm("mondrian"))
        .await
        .unwrap();
    let json = read_json(&report);
    assert_eq!(json["algorithm"], "mondrian");
    let classes = person_classes(&out).await;
    assert!(!classes.is_empty());
    for (zip, age, rows, persons) in &classes {
        assert!(
            *rows >= 2 && *persons >= 2,
            "{zip}/{age}: {rows} rows, {persons} persons"
        );
    }
    let written: i64 = classes.iter().map(|c| c.2).sum();
    assert!(written >= 8, "{written} rows written");
    assert_eq!(json["publish"]["suppressed_rows"], 10 - written);
    let fewest = classes.iter().map(|c| c.3).min().unwrap();
    assert_eq!(reported_persons(&json), fewest as f64);
}
