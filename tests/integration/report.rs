//! The release report of `anon apply` and `anon anonymize` (`--report` JSON, `--html-report`
//! HTML), on a table small enough to work out by hand:
//!
//! ```text
//! g (tree: g-a1, g-a2 → G-A; g-b1, g-b2 → G-B; g-c1 → G-C; all → *, |D| = 5 leaves)
//!   g-a1 ×2, g-a2 ×2, g-b1 ×1, g-b2 ×2, g-c1 ×1: 8 rows; s sensitive
//! k = 3, max_suppression = 0.2 (⌊1.6⌋ = 1 row may be suppressed)
//!   level 0: every class is below 3 rows: 8 suppressed, refused
//!   level 1: G-A 4 rows, G-B 3 rows, G-C 1 row (suppressed): k = 3, 2 classes, 7 rows
//!   level 2: one class of 8 rows, every cell *
//! Loss at level 1 (hierarchy NCP (leaves − 1)/(|D| − 1), suppressed cells 1):
//!   (4 · 1/4 + 3 · 1/4 + 1 · 1) / 8 = 2.75 / 8 = 0.34375 — the least, so `optimal` picks it.
//! ```
//!
//! Each figure of the report is checked against an independent recount of the written file
//! with plain SQL (no function of this crate) or against the hand computation above.

use std::path::{Path, PathBuf};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use super::{anon, read_json, stderr};

const ROWS: [(&str, &str); 8] = [
    ("g-a1", "sick-x"),
    ("g-a1", "sick-y"),
    ("g-a2", "sick-x"),
    ("g-a2", "sick-z"),
    ("g-b1", "sick-y"),
    ("g-b2", "sick-x"),
    ("g-b2", "sick-z"),
    ("g-c1", "sick-y"),
];

/// The hand-computed Loss of level 1 (module documentation).
const LOSS_AT_LEVEL_1: f64 = 2.75 / 8.0;

/// A directory holding the table as `in.csv` and policies over it.
pub(super) struct Table {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Table {
    /// The table in a fresh directory, or in its subdirectory `sub` when given.
    pub(super) fn new(sub: Option<&str>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = match sub {
            Some(sub) => dir.path().join(sub),
            None => dir.path().to_path_buf(),
        };
        std::fs::create_dir_all(&root).unwrap();
        let mut text = String::from("id,g,s\n");
        for (i, (g, s)) in ROWS.iter().enumerate() {
            text.push_str(&format!("{i},{g},{s}\n"));
        }
        std::fs::write(root.join("in.csv"), text).unwrap();
        Self { _dir: dir, root }
    }

    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    pub(super) fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// A policy over the table, with `privacy` added to its `[privacy]` and `extra` appended
    /// (a `[transformation]`, say), written to `name`.
    pub(super) fn policy(&self, name: &str, privacy: &str, extra: &str) -> String {
        let text = format!(
            "[input]\npath = \"in.csv\"\n[privacy]\nk = 3\nmax_suppression = 0.2\n\
             max_prosecutor_risk = 0.5\n{privacy}\n\
             [attributes]\nid = {{ role = \"insensitive\" }}\n\
             g = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", rows = [\
             [\"g-a1\", \"G-A\", \"*\"], [\"g-a2\", \"G-A\", \"*\"], [\"g-b1\", \"G-B\", \"*\"], \
             [\"g-b2\", \"G-B\", \"*\"], [\"g-c1\", \"G-C\", \"*\"]] }} }}\n\
             s = {{ role = \"sensitive\" }}\n{extra}"
        );
        std::fs::write(self.path(name), text).unwrap();
        self.arg(name)
    }

    /// Runs `anon <command> --quiet --policy <policy> --out <out> --report <report>` with
    /// `flags` (files named within the table's directory) and asserts that it succeeded.
    fn publish(&self, command: &str, policy: &str, out: &str, report: &str, flags: &[&str]) {
        let (out, report) = (self.arg(out), self.arg(report));
        let mut args = vec![command, "--quiet", "--policy", policy, "--out", &out];
        args.extend(["--report", report.as_str()]);
        args.extend(flags);
        let output = anon(&args);
        assert!(output.status.success(), "{}", stderr(&output));
    }

    /// The policy fixing level 1.
    fn fixed(&self) -> String {
        self.policy("fixed.toml", "", "[transformation]\ng = 1\n")
    }
}

/// (classes, smallest class, rows) of a written file, by plain SQL.
async fn recount(path: &Path) -> (i64, i64, i64) {
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "out",
        &path.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let batches = ctx
        .sql("SELECT count(*), min(n), sum(n) FROM (SELECT count(*) AS n FROM out GROUP BY g)")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let value = |i: usize| batches[0].column(i).as_primitive::<Int64Type>().value(0);
    (value(0), value(1), value(2))
}

/// `apply --report`: the verification figures equal a recount of the written file (k the
/// smallest class, suppressed rows the input's minus those written, as the policy drops), the
/// search's figures are null and every key of `anonymize`'s report is there.
#[tokio::test]
async fn apply_report_figures_equal_a_recount_of_the_written_output() {
    let t = Table::new(None);
    let policy = t.fixed();
    let out = t.path("out.parquet");
    let report = t.path("report.json");
    t.publish(
        "apply",
        &policy,
        "out.parquet",
        "report.json",
        &["--seed", "7"],
    );
    let (classes, k, rows) = recount(&out).await;
    // by hand: G-A 4, G-B 3 written, G-C's 1 row dropped
    assert_eq!((classes, k, rows), (2, 3, 7));
    let json = read_json(&report);
    let publish = &json["publish"];
    let verification = &publish["verification"];
    assert_eq!(json["command"], "apply");
    assert_eq!(verification["k"], k);
    assert_eq!(verification["classes"], classes);
    assert_eq!(verification["rows"], rows);
    assert_eq!(publish["input_rows"], ROWS.len());
    assert_eq!(publish["suppressed_rows"], ROWS.len() as i64 - rows);
    assert_eq!(verification["suppressed_rows"], ROWS.len() as i64 - rows);
    // the seed undoes the shuffle: no written report holds it unless asked for
    assert!(publish.get("seed").is_none(), "{publish}");
    assert_eq!(json["levels"][0]["quasi_identifier"], "g");
    assert_eq!(json["levels"][0]["level"], 1);
    // 1/k and #classes / rows
    let risk = publish["post_analytics"]["prosecutor_max"]
        .as_f64()
        .unwrap();
    assert!((risk - 1.0 / k as f64).abs() < 1e-12, "{risk}");
    assert_eq!(json["thresholds"]["max_prosecutor_risk"], 0.5);
    for key in [
        "algorithm",
        "metric",
        "metric_value",
        "lattice_size",
        "nodes_checked",
        "local_classes",
        "frequency_set_rows",
        "utility",
    ] {
        assert!(json[key].is_null(), "{key}: {}", json[key]);
    }
    assert!(json["seconds"]["search"].is_null());
    assert!(json["seconds"]["total"].as_f64().unwrap() >= 0.0);

    // anonymize's report has the same keys, its search's figures filled in
    let searched = t.path("searched.json");
    t.publish(
        "anonymize",
        &t.policy("search.toml", "", ""),
        "searched.parquet",
        "searched.json",
        &[],
    );
    let searched = read_json(&searched);
    let keys = |value: &serde_json::Value| -> Vec<String> {
        value.as_object().unwrap().keys().cloned().collect()
    };
    assert_eq!(keys(&json), keys(&searched));
    assert_eq!(keys(&json["seconds"]), keys(&searched["seconds"]));
    assert_eq!(searched["command"], "anonymize");
    for key in [
        "algorithm",
        "metric",
        "metric_value",
        "lattice_size",
        "nodes_checked",
        "frequency_set_rows",
    ] {
        assert!(!searched[key].is_null(), "{key}");
    }
    // the search chose level 1, which apply published: the same verification
    assert_eq!(searched["levels"], json["levels"]);
    assert_eq!(
        searched["publish"]["verification"],
        json["publish"]["verification"]
    );
}

/// `--utility`: `apply`'s report carries the utility of its release, whose Loss is the hand
/// computation and equals the one `anonymize --utility` reports for the same level (and the
/// search's own metric).
#[test]
fn apply_utility_in_the_report_equals_anonymize_for_the_same_levels() {
    let t = Table::new(None);
    t.publish(
        "apply",
        &t.fixed(),
        "applied.parquet",
        "applied.json",
        &["--utility"],
    );
    let applied = read_json(t.path("applied.json"));
    t.publish(
        "anonymize",
        &t.policy("search.toml", "", ""),
        "searched.parquet",
        "searched.json",
        &["--utility"],
    );
    let searched = read_json(t.path("searched.json"));
    assert_eq!(searched["levels"], applied["levels"]);
    let loss = |report: &serde_json::Value| report["utility"]["loss_metric"].as_f64().unwrap();
    for (name, value) in [
        ("apply", loss(&applied)),
        ("anonymize", loss(&searched)),
        ("the search", searched["metric_value"].as_f64().unwrap()),
    ] {
        assert!(
            (value - LOSS_AT_LEVEL_1).abs() < 1e-12,
            "{name}: {value} vs {LOSS_AT_LEVEL_1}"
        );
    }
    assert_eq!(applied["utility"]["suppressed_rows"], 1);
    // the written rows are shuffled: each row is paired with its original by recoding it
    // again, not by its position in the output
    assert_eq!(
        applied["utility"]["matched_by"],
        "recoding: each input row recoded again beside its own original values, before any \
         shuffle (the written order is not used)"
    );
    assert!(applied["seconds"]["utility"].as_f64().unwrap() >= 0.0);
}

/// `--html-report`: one self-contained page with the release's figures as the renderer
/// formats them, the utility section under the profile's heading, every text escaped (the
/// policy and the input lie in a directory named `r&d <x>`) and no value of the data.
#[test]
fn html_report_renders_the_figures_and_escapes_every_text() {
    let t = Table::new(Some("r&d <x>"));
    t.publish(
        "apply",
        &t.fixed(),
        "out.parquet",
        "report.json",
        &["--utility", "--html-report", &t.arg("report.html")],
    );
    let html = std::fs::read_to_string(t.path("report.html")).unwrap();
    let json = read_json(t.path("report.json"));
    assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    assert!(
        !html.contains("<script") && !html.contains("http"),
        "{html}"
    );
    // the utility section, rendered by the profile's renderer, with the report's Loss
    let loss = json["utility"]["loss_metric"].as_f64().unwrap();
    assert!(html.contains("<h2>Utility</h2>"), "{html}");
    assert!(
        html.contains(&format!("<td>loss</td><td class=\"v\">{loss:.4}</td>")),
        "loss {loss:.4} missing: {html}"
    );
    // the verification and post-analytics figures, under the profile's labels
    assert!(
        html.contains("<td>k (rows)</td><td class=\"v\">3</td><td class=\"v\">≥ 3</td>"),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<td>prosecutor risk, max</td><td class=\"v\">{:.4}</td>\
             <td class=\"v\">≤ 0.5 (max_prosecutor_risk)</td>",
            1.0 / 3.0
        )),
        "{html}"
    );
    assert!(
        html.contains("<td>suppressed rows</td><td class=\"v\">1 (12.50%)</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td>g</td><td class=\"v\">1</td><td class=\"e\">tree level 1</td>"),
        "{html}"
    );
    // the utility section says how rows were paired (shuffled: not by position), and that
    // this drop release left its suppressed row out rather than publishing it as *
    assert!(
        html.contains(
            "rows matched by recoding: each input row recoded again beside its own original \
             values, before any shuffle (the written order is not used).</p>"
        ),
        "{html}"
    );
    assert!(!html.contains("matched by position"), "{html}");
    assert!(
        html.contains(
            "<td>suppressed rows</td><td class=\"v\">1</td><td class=\"e\">rows of the \
             classes that fail the requirements: left out of the release (drop), counted by \
             the figures below as rows whose quasi-identifiers are all *</td>"
        ),
        "{html}"
    );
    // every path escaped, none raw
    assert!(html.contains("r&amp;d &lt;x&gt;"), "{html}");
    assert!(!html.contains("r&d") && !html.contains("<x>"), "{html}");
    // no value of the data, generalized or not
    for (g, s) in ROWS {
        for value in [g, s, "G-A", "G-B", "G-C"] {
            assert!(!html.contains(value), "{value} in the page");
        }
    }
}

/// `--html-report` charts the release as the profile's page does: the rows by class size and,
/// with `--utility`, each quasi-identifier's loss. By hand (module documentation): 7 rows
/// written in classes of 4 and 3, all in the range 3-4, none in the others; g's loss is
/// 2.75 / 8. A bar's length is its share of the chart's 420 pixels.
#[test]
fn html_report_charts_class_sizes_and_loss() {
    let t = Table::new(None);
    t.publish(
        "apply",
        &t.fixed(),
        "out.parquet",
        "report.json",
        &["--utility", "--html-report", &t.arg("report.html")],
    );
    let html = std::fs::read_to_string(t.path("report.html")).unwrap();
    let bar = |label: &str, width: f64, caption: &str| {
        let label_at = html
            .find(&format!(">{label}</text><rect "))
            .unwrap_or_else(|| panic!("no bar {label}: {html}"));
        let rest = &html[label_at..];
        let end = rest.find("</text>").unwrap() + 7;
        let end = end + rest[end..].find("</text>").unwrap();
        let bar = &rest[..end];
        assert!(
            bar.contains(&format!("width=\"{width:.1}\"")),
            "{label}: {bar}"
        );
        assert!(bar.ends_with(&format!(">{caption}")), "{label}: {bar}");
    };
    assert!(
        html.contains("<figcaption>Rows by class size</figcaption>"),
        "{html}"
    );
    bar("size 1", 0.0, "0 rows in 0 classes");
    bar("size 2", 0.0, "0 rows in 0 classes");
    bar("size 3-4", 420.0, "7 rows in 2 classes");
    bar("size 5-9", 0.0, "0 rows in 0 classes");
    bar("size 10+", 0.0, "0 rows in 0 classes");
    assert!(
        html.contains("<figcaption>Loss by quasi-identifier</figcaption>"),
        "{html}"
    );
    bar(
        "g",
        LOSS_AT_LEVEL_1 * 420.0,
        &format!("{LOSS_AT_LEVEL_1:.4}"),
    );
    // the JSON has the same class sizes
    let json = read_json(t.path("report.json"));
    let sizes = json["publish"]["class_sizes"].as_array().unwrap();
    assert_eq!(sizes[2]["size"], "3-4");
    assert_eq!(
        (sizes[2]["classes"].clone(), sizes[2]["rows"].clone()),
        (2.into(), 7.into())
    );
}

/// The report's phases add up to its total: the new `input` phase (reading the policy and the
/// CSV input, registering it) and `commit` close the gap, and no phase is counted twice (their
/// sum is at most the total).
#[test]
fn report_phases_add_up_to_the_total() {
    let t = Table::new(None);
    for command in ["apply", "anonymize"] {
        let policy = match command {
            "apply" => t.fixed(),
            _ => t.policy("search.toml", "", ""),
        };
        let report = format!("{command}.json");
        t.publish(
            command,
            &policy,
            &format!("{command}.parquet"),
            &report,
            &["--utility"],
        );
        let seconds = read_json(t.path(&report))["seconds"].clone();
        let phases = seconds.as_object().unwrap();
        for key in ["input", "commit"] {
            assert!(phases[key].as_f64().unwrap() >= 0.0, "{command}: {key}");
        }
        let total = phases["total"].as_f64().unwrap();
        let sum: f64 = phases
            .iter()
            .filter(|(key, _)| key.as_str() != "total")
            .filter_map(|(_, value)| value.as_f64())
            .sum();
        assert!(
            sum <= total + 1e-9,
            "{command}: phases {sum} > total {total}"
        );
    }
}

/// Reports are outputs: an existing one is refused, naming it, before anything is published
/// (unless `--overwrite`), and none is written when publishing fails.
#[test]
fn reports_are_refused_if_they_exist_and_never_written_for_a_failed_release() {
    let t = Table::new(None);
    let policy = t.fixed();
    for flag in ["--report", "--html-report"] {
        let (out, report) = (t.path("out.parquet"), t.path("earlier"));
        std::fs::write(&report, "earlier report").unwrap();
        let args = [
            "apply",
            "--quiet",
            "--policy",
            &policy,
            "--out",
            &t.arg("out.parquet"),
            flag,
            &t.arg("earlier"),
        ];
        let refused = anon(&args);
        assert!(!refused.status.success(), "{flag}");
        let error = stderr(&refused);
        assert!(
            error.contains(&t.arg("earlier")) && error.contains("--overwrite"),
            "{flag}: {error}"
        );
        assert!(!out.exists(), "{flag}: published");
        assert_eq!(std::fs::read_to_string(&report).unwrap(), "earlier report");
        let replaced = anon(&[&args[..], &["--overwrite"]].concat());
        assert!(replaced.status.success(), "{flag}: {}", stderr(&replaced));
        assert_ne!(std::fs::read_to_string(&report).unwrap(), "earlier report");
        std::fs::remove_file(&out).unwrap();
    }
    // the report may not be the output, nor both reports one file
    let (out, r) = (t.arg("out.parquet"), t.arg("r"));
    for reports in [
        vec!["--report", out.as_str()],
        vec!["--report", r.as_str(), "--html-report", r.as_str()],
    ] {
        let args = [
            &["apply", "--policy", &policy, "--out", &out][..],
            &reports[..],
        ]
        .concat();
        let refused = anon(&args);
        assert!(!refused.status.success(), "{args:?}");
        assert!(stderr(&refused).contains("report"), "{}", stderr(&refused));
        assert!(!t.path("out.parquet").exists() && !t.path("r").exists());
    }
    // level 0 suppresses every row, more than allowed: nothing published, no report
    let failing = t.policy("failing.toml", "", "[transformation]\ng = 0\n");
    let output = anon(&[
        "apply",
        "--quiet",
        "--policy",
        &failing,
        "--out",
        &t.arg("failed.parquet"),
        "--report",
        &t.arg("failed.json"),
        "--html-report",
        &t.arg("failed.html"),
    ]);
    assert!(!output.status.success());
    for name in ["failed.parquet", "failed.json", "failed.html"] {
        assert!(!t.path(name).exists(), "{name} written");
    }
}

/// A bucketization policy has the JSON report only: `--html-report` is refused before
/// anything is read.
#[test]
fn a_bucketization_refuses_the_html_report() {
    let t = Table::new(None);
    std::fs::write(
        t.path("ck.toml"),
        "[input]\npath = \"in.csv\"\n[privacy]\nmethod = \"ck-anonymization\"\nk = 2\nc = 1\n\
         lambda = 2\n[attributes]\nid = { role = \"identifier\" }\n\
         g = { role = \"quasi_identifier\" }\ns = { role = \"sensitive\" }\n",
    )
    .unwrap();
    let output = anon(&[
        "anonymize",
        "--policy",
        &t.arg("ck.toml"),
        "--out",
        &t.arg("release"),
        "--html-report",
        &t.arg("r.html"),
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("--html-report"), "{error}");
    assert!(!t.path("release").exists() && !t.path("r.html").exists());
}

/// The seed is in a written report (JSON and HTML) only with `--record-seed`, for every
/// method: here generalization, whose report puts it under `publish.seed`.
#[test]
fn the_seed_is_written_only_when_asked_for() {
    let t = Table::new(None);
    let policy = t.fixed();
    let html = t.arg("with-seed.html");
    t.publish(
        "apply",
        &policy,
        "with-seed.parquet",
        "with-seed.json",
        &["--seed", "424242", "--record-seed", "--html-report", &html],
    );
    assert_eq!(
        read_json(t.path("with-seed.json"))["publish"]["seed"],
        424242
    );
    let page = std::fs::read_to_string(t.path("with-seed.html")).unwrap();
    assert!(
        page.contains("seed 424242"),
        "the HTML report lacks the seed"
    );
    let html = t.arg("without.html");
    t.publish(
        "apply",
        &policy,
        "without.parquet",
        "without.json",
        &["--seed", "424242", "--html-report", &html],
    );
    let written = std::fs::read_to_string(t.path("without.json")).unwrap();
    let page = std::fs::read_to_string(t.path("without.html")).unwrap();
    for text in [&written, &page] {
        assert!(!text.contains("424242"), "the seed was written: {text}");
    }
}
