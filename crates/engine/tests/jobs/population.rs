//! k-map and δ-presence against a population table, end to end: a sample of Adult is
//! published with the whole Adult extract as its population, and every written class's
//! population count F_E is recounted here from the ARX hierarchy files and the raw
//! population rows (no function of this crate).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use datafusion_anonymity_engine::jobs::anonymize::{AnonymizeOptions, Published};

use crate::support::{self, AdultPolicy, read_json, repo};

const QIS: [&str; 4] = ["sex", "age", "race", "education"];

/// About a third of Adult (rows picked by a mix of their values), as Parquet in `dir`.
async fn sample(dir: &Path) -> PathBuf {
    let ctx = SessionContext::new();
    let adult = repo("examples/adult/adult.parquet");
    ctx.register_parquet(
        "adult",
        &adult.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let path = dir.join("sample.parquet");
    let sql = format!(
        "COPY (SELECT * FROM adult WHERE (age * 7 + length(education) + length(occupation)) % 3 = 0) \
         TO '{}' STORED AS PARQUET",
        path.display()
    );
    ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    path
}

/// A scratch directory with the sample in it, the population (all of Adult), and the output
/// and report paths.
async fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let input = sample(dir.path()).await;
    let (out, report) = (
        dir.path().join("out.parquet"),
        dir.path().join("report.json"),
    );
    (
        dir,
        input,
        repo("examples/adult/adult.parquet"),
        out,
        report,
    )
}

/// A policy over `input` (the 4 QIs with Adult's tree hierarchies, salary-class sensitive)
/// with `privacy` and, if given, `[population] path`.
fn policy(dir: &Path, input: &Path, privacy: &str, population: Option<&Path>) -> String {
    let policy = AdultPolicy::new(privacy).qis(&QIS).input(input);
    match population {
        Some(population) => policy.population(population).write(dir),
        None => policy.write(dir),
    }
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

/// Replacing the last run's output.
fn overwrite(options: &mut AnonymizeOptions) {
    options.overwrite = true;
}

/// Each QI's labels per level, from the ARX hierarchy file: value → [value, level 1, …].
fn hierarchy(qi: &str) -> HashMap<String, Vec<String>> {
    let text = std::fs::read_to_string(repo(&format!(
        "examples/adult/hierarchies/adult_hierarchy_{qi}.csv"
    )))
    .unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let labels: Vec<String> = l.split(';').map(str::to_string).collect();
            (labels[0].clone(), labels)
        })
        .collect()
}

/// The rows of `path` as text tuples of `columns`, with a count each (`GROUP BY`).
async fn grouped(path: &Path, columns: &[&str]) -> Vec<(Vec<String>, u64)> {
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "t",
        &path.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let keys: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    let sql = format!(
        "SELECT {k}, count(*) FROM t GROUP BY {k}",
        k = keys.join(", ")
    );
    let mut out = Vec::new();
    for batch in ctx.sql(&sql).await.unwrap().collect().await.unwrap() {
        let texts: Vec<_> = (0..columns.len())
            .map(|i| cast(batch.column(i), &DataType::Utf8).unwrap())
            .collect();
        let counts = batch.column(columns.len()).as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            let tuple = texts
                .iter()
                .map(|c| {
                    let c = c.as_string::<i32>();
                    assert!(c.is_valid(row), "no NULLs in Adult");
                    c.value(row).to_string()
                })
                .collect();
            out.push((tuple, counts.value(row) as u64));
        }
    }
    out
}

/// F per label tuple: every population row recoded through the hierarchy files at `levels`;
/// and the population's rows.
async fn recoded_population(
    population: &Path,
    levels: &HashMap<String, usize>,
) -> (HashMap<Vec<String>, u64>, u64) {
    let hierarchies: Vec<_> = QIS.iter().map(|q| hierarchy(q)).collect();
    let mut covered: HashMap<Vec<String>, u64> = HashMap::new();
    let mut population_rows = 0;
    for (values, n) in grouped(population, &QIS).await {
        let labels = values
            .iter()
            .zip(&hierarchies)
            .zip(QIS)
            .map(|((v, h), qi)| h[v][levels[qi]].clone())
            .collect();
        *covered.entry(labels).or_default() += n;
        population_rows += n;
    }
    (covered, population_rows)
}

/// k-map of 20 and δ ≤ 0.5 with full-domain generalization: the search must generalize
/// more than k = 2 alone needs, and every written class's F_E, recounted from the raw
/// population through the hierarchy files, meets both bounds; the report's figures are
/// exactly the recount's.
#[tokio::test]
async fn full_domain_release_meets_k_map_and_delta_presence_recounted() {
    let (dir, input, population, out, report) = setup().await;
    let base = "k = 2\nmax_suppression = 0.02";

    // k = 2 alone
    let plain = policy(dir.path(), &input, base, None);
    anonymize(&plain, &out, &report, defaults).await.unwrap();
    let json: serde_json::Value = read_json(&report);
    let plain_loss = json["metric_value"].as_f64().unwrap();

    let privacy = format!("{base}\nk_map = 20\ndelta_presence = {{ max = 0.5 }}");
    let with_population = policy(dir.path(), &input, &privacy, Some(&population));
    anonymize(&with_population, &out, &report, overwrite)
        .await
        .unwrap();
    let json: serde_json::Value = read_json(&report);
    let loss = json["metric_value"].as_f64().unwrap();
    assert!(
        loss > plain_loss,
        "the population requirements bind: {loss} vs {plain_loss}"
    );
    let levels: HashMap<String, usize> = json["publish"]["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["quasi_identifier"].as_str().unwrap().to_string(),
                l["level"].as_u64().unwrap() as usize,
            )
        })
        .collect();

    let (covered, population_rows) = recoded_population(&population, &levels).await;
    let (mut k_map, mut delta_min, mut delta_max) = (u64::MAX, f64::MAX, 0f64);
    let (mut rows, mut expected_matches) = (0u64, 0f64);
    let written = grouped(&out, &QIS).await;
    assert!(!written.is_empty());
    for (labels, size) in &written {
        let f = covered.get(labels).copied().unwrap_or(0);
        assert!(f >= 20, "class F = {f}");
        let delta = *size as f64 / f as f64;
        assert!(delta <= 0.5, "class δ = {size}/{f}");
        k_map = k_map.min(f);
        delta_min = delta_min.min(delta);
        delta_max = delta_max.max(delta);
        rows += size;
        expected_matches += delta;
    }
    // post-analytics against the population (Dankar & El Emam): journalist max 1/F_E,
    // marketer (1/n) Σ |E|/F_E
    let post = &json["publish"]["post_analytics"];
    let close = |v: &serde_json::Value, x: f64| (v.as_f64().unwrap() - x).abs() < 1e-12;
    assert!(close(&post["journalist"], 1.0 / k_map as f64), "{post}");
    assert!(
        close(&post["population_marketer"], expected_matches / rows as f64),
        "{post}"
    );
    let figures = &json["publish"]["verification"]["population"];
    assert_eq!(figures["population_rows"], population_rows);
    assert_eq!(figures["k_map"], k_map);
    assert!(
        close(&figures["delta_presence"]["min"], delta_min),
        "{figures}"
    );
    assert!(
        close(&figures["delta_presence"]["max"], delta_max),
        "{figures}"
    );
}

/// Mondrian builds its classes from the sample; the classes whose cells cover fewer than
/// k_map population rows are suppressed after it. Recounted here by cover: a population row
/// counts for a written class when each label is its value, one of its value's hierarchy
/// labels, an open interval `(lo, hi)` holding it, or `*`.
#[tokio::test]
async fn mondrian_release_meets_k_map_recounted_by_cover() {
    mondrian_k_map_recounted(&[]).await;
}

/// Set-based QIs (race and education without hierarchies) under k-map: a set cell covers the
/// population rows whose value is one of the set's, so the classes are judged as exactly as
/// hierarchy labels. Recounted here by cover from the written labels and the raw population.
#[tokio::test]
async fn mondrian_sets_meet_k_map_recounted_by_cover() {
    let sets = mondrian_k_map_recounted(&["race", "education"]).await;
    assert!(sets > 0, "the release publishes sets");
}

/// Mondrian under k = 2, 5 % suppression and k_map = 10, the QIs `sets` without their
/// hierarchies (published as sets): every written class's F_E, recounted by cover, is at
/// least 10, and the report's k_map is the smallest of them. Returns the set labels written.
async fn mondrian_k_map_recounted(sets: &[&str]) -> usize {
    let (dir, input, population, out, report) = setup().await;
    let with_population = policy(
        dir.path(),
        &input,
        "k = 2\nmax_suppression = 0.05\nk_map = 10",
        Some(&population),
    );
    let text: String = std::fs::read_to_string(&with_population)
        .unwrap()
        .lines()
        .map(|line| {
            match sets
                .iter()
                .find(|qi| line.starts_with(&format!("\"{qi}\"")))
            {
                Some(qi) => format!("\"{qi}\" = {{ role = \"quasi_identifier\" }}\n"),
                None => format!("{line}\n"),
            }
        })
        .collect();
    std::fs::write(&with_population, text).unwrap();
    anonymize(&with_population, &out, &report, |o| {
        o.method = support::algorithm("mondrian")
    })
    .await
    .unwrap();
    let (k_map, written_sets) = written_k_map_by_cover(&out, &population, 10).await;
    let json: serde_json::Value = read_json(&report);
    assert_eq!(
        json["publish"]["verification"]["population"]["k_map"],
        k_map
    );
    written_sets
}

/// The smallest F_E of the classes written to `out`, each recounted from the raw `population`
/// by cover (and asserted at least `k_map`); and how many set labels were written. A
/// population row counts for a class when each label is `*`, its value, one of its value's
/// hierarchy labels, an open interval `(lo, hi)` holding it, or a set `{a, b, …}` holding it.
async fn written_k_map_by_cover(out: &Path, population: &Path, k_map: u64) -> (u64, usize) {
    let hierarchies: Vec<_> = QIS.iter().map(|q| hierarchy(q)).collect();
    let people = grouped(population, &QIS).await;
    let mut sets = 0;
    let mut smallest = u64::MAX;
    for (labels, _) in &grouped(out, &QIS).await {
        sets += labels.iter().filter(|l| l.starts_with('{')).count();
        let f: u64 = people
            .iter()
            .filter(|(values, _)| {
                (0..QIS.len()).all(|j| label_covers(&labels[j], &values[j], &hierarchies[j]))
            })
            .map(|(_, n)| n)
            .sum();
        assert!(f >= k_map, "class {labels:?}: F = {f}");
        smallest = smallest.min(f);
    }
    (smallest, sets)
}

/// Whether the written `label` covers the raw `value` (see [`written_k_map_by_cover`]);
/// `hierarchy` is the value's QI's file.
fn label_covers(label: &str, value: &str, hierarchy: &HashMap<String, Vec<String>>) -> bool {
    if label == "*" || label == value || hierarchy[value].iter().any(|l| l == label) {
        return true;
    }
    // `{a, b}`: Adult's values hold no separator or brace to escape
    if let Some(inner) = label.strip_prefix('{').and_then(|l| l.strip_suffix('}')) {
        assert!(!inner.contains('\\'), "{label}");
        return inner.split(", ").any(|v| v == value);
    }
    // value-free intervals (the default) are open: (lo, hi), lo < v < hi; ends beyond the
    // domain are -inf / inf, which parse as f64 infinities
    let inner = label.strip_prefix('(').and_then(|l| l.strip_suffix(')'));
    match inner.and_then(|i| i.split_once(", ")) {
        Some((lo, hi)) => {
            let (lo, hi, v): (f64, f64, f64) = (
                lo.parse().unwrap(),
                hi.parse().unwrap(),
                value.parse().unwrap(),
            );
            lo < v && v < hi
        }
        None => false,
    }
}

/// δ ≥ 0.9 cannot hold for a sample of a third of its population: refused before anything
/// is written, with the reason; and the policy mistakes each give one error naming the key
/// or column.
#[tokio::test]
async fn population_requirements_fail_closed() {
    let (dir, input, population, out, report) = setup().await;
    let impossible = policy(
        dir.path(),
        &input,
        "k = 2\nmax_suppression = 0.02\ndelta_presence = { min = 0.9, max = 1.0 }",
        Some(&population),
    );
    let message = anonymize(&impossible, &out, &report, defaults)
        .await
        .unwrap_err();
    assert!(message.contains("no generalization"), "{message}");
    // and why: the top class holds every sample row against every population row
    let (sample_rows, population_rows) = (
        grouped(&input, &QIS)
            .await
            .iter()
            .map(|(_, n)| n)
            .sum::<u64>(),
        grouped(&population, &QIS)
            .await
            .iter()
            .map(|(_, n)| n)
            .sum::<u64>(),
    );
    let delta = format!("δ = {:.4}", sample_rows as f64 / population_rows as f64);
    assert!(message.contains(&delta), "{delta} in {message}");
    assert!(!out.exists() && !report.exists());

    // a journalist risk above its threshold: checked on the written output, nothing published
    // (k = 2 alone leaves classes of under 100 population rows, whose risk is above 0.01)
    let risky = policy(
        dir.path(),
        &input,
        "k = 2\nmax_suppression = 0.02\nmax_journalist_risk = 0.01",
        Some(&population),
    );
    let message = anonymize(&risky, &out, &report, defaults)
        .await
        .unwrap_err();
    assert!(
        message.contains("the journalist risk") && message.contains("max_journalist_risk = 0.01"),
        "{message}"
    );
    assert!(!out.exists() && !report.exists());

    let without = policy(dir.path(), &input, "k = 2\nk_map = 5", None);
    let message = anonymize(&without, &out, &report, defaults)
        .await
        .unwrap_err();
    assert!(
        message.contains("privacy.k_map need [population] path"),
        "{message}"
    );

    // a population without one of the quasi-identifiers
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "adult",
        &population.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let partial = dir.path().join("partial.parquet");
    ctx.sql(&format!(
        "COPY (SELECT sex, age, race FROM adult) TO '{}' STORED AS PARQUET",
        partial.display()
    ))
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let missing = policy(dir.path(), &input, "k = 2\nk_map = 5", Some(&partial));
    let message = anonymize(&missing, &out, &report, defaults)
        .await
        .unwrap_err();
    assert!(
        message.contains("quasi-identifier 'education' is not a column of the population"),
        "{message}"
    );
    assert!(!out.exists());
}

/// `anon apply` at fixed levels judges k-map on the frequency set: the classes under 20
/// population rows are suppressed, and every written class covers at least 20 (recounted).
#[tokio::test]
async fn apply_suppresses_classes_under_k_map() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample(dir.path()).await;
    let population = repo("examples/adult/adult.parquet");
    let out = dir.path().join("out.parquet");
    let mut text = std::fs::read_to_string(policy(
        dir.path(),
        &input,
        "k = 1\nmax_suppression = 0.5\nk_map = 20",
        Some(&population),
    ))
    .unwrap();
    text.push_str("[transformation]\nage = 2\neducation = 1\n");
    let path = dir.path().join("apply.toml");
    std::fs::write(&path, text).unwrap();
    support::apply(&path.display().to_string(), &out, |_| {})
        .await
        .unwrap();
    let levels: HashMap<String, usize> = [("sex", 0), ("age", 2), ("race", 0), ("education", 1)]
        .into_iter()
        .map(|(q, l)| (q.to_string(), l))
        .collect();
    let (covered, _) = recoded_population(&population, &levels).await;
    let written = grouped(&out, &QIS).await;
    let (mut rows, mut input_rows) = (0, 0);
    for (labels, size) in &written {
        let f = covered.get(labels).copied().unwrap_or(0);
        assert!(f >= 20, "class {labels:?}: F = {f}");
        rows += size;
    }
    for (_, n) in grouped(&input, &QIS).await {
        input_rows += n;
    }
    // k = 1 alone would publish every row: some classes were under 20
    assert!(rows < input_rows, "{rows} of {input_rows}");
}

/// With the sample as its own population, F_E = |E|, so k-map k is k-anonymity k (Sweeney
/// 2001: the two coincide when the population is the sample): the search must choose the
/// same levels and suppress the same rows for k = 2 plus k_map = 20 as for k = 20 alone.
#[tokio::test]
async fn k_map_against_the_sample_itself_is_k_anonymity() {
    let dir = tempfile::tempdir().unwrap();
    let input = sample(dir.path()).await;
    let out = dir.path().join("out.parquet");
    let report = dir.path().join("report.json");
    let run = async |privacy: &str, population: Option<&Path>| {
        let policy = policy(dir.path(), &input, privacy, population);
        anonymize(&policy, &out, &report, overwrite).await.unwrap();
        let json: serde_json::Value = read_json(&report);
        (
            json["publish"]["levels"].clone(),
            json["publish"]["suppressed_rows"].clone(),
        )
    };
    let k = run("k = 20\nmax_suppression = 0.02", None).await;
    let k_map = run(
        "k = 2\nmax_suppression = 0.02\nk_map = 20",
        Some(input.as_path()),
    )
    .await;
    assert_eq!(k, k_map);
}
