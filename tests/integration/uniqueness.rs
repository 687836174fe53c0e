//! The uniqueness of each published column that is not a quasi-identifier with the
//! quasi-identifiers (docs/definitions.md, "Post-analytics"): the issue's situation — an exact
//! amount declared insensitive beside the published quasi-identifiers — is warned about on
//! stderr and in the report, refused with `max_unique_share`, and a coarse column is not
//! warned about. By hand, on this table (g at level 1: classes A = rows 1-4, B = rows 5-8):
//!
//! ```text
//! row  g   cost    ward  s       cost in its class       ward, s in their class
//!  1   a1  101.17  w1    flu     A: 101.17 alone         A: w1 ×2, w2 ×2; flu ×2, cold ×2
//!  2   a1  87.50   w1    flu     A: 87.50 twice          (no row alone)
//!  3   a2  240.00  w2    cold    A: 240.00 alone
//!  4   a2  87.50   w2    cold    A: 87.50 twice
//!  5   b1  55.25   w1    cold    B: 55.25 twice          B: w1 ×2, w2 ×2; cold ×2, flu ×2
//!  6   b1  55.25   w1    cold    B: 55.25 twice          (no row alone)
//!  7   b2  310.80  w2    flu     B: 310.80 alone
//!  8   b2  19.99   w2    flu     B: 19.99 alone
//! ```
//!
//! cost: 4 of 8 rows alone in their (g, cost) group → unique share 4/8 = 0.5 (50.00%); groups
//! of sizes 1, 2, 1 | 2, 1, 1: Σ c log2 c = 2 + 2 = 4, so the leakage with g is
//! (log2 8 − 4/8)/log2 8 = 2.5/3 = 0.8333. ward and s: groups of 2 only → 0 unique rows,
//! Σ c log2 c = 4 · 2 = 8, leakage (3 − 1)/3 = 0.6667.

use super::{anon, stderr};

const TABLE: &str = "g,cost,ward,s\n\
                     a1,101.17,w1,flu\n\
                     a1,87.50,w1,flu\n\
                     a2,240.00,w2,cold\n\
                     a2,87.50,w2,cold\n\
                     b1,55.25,w1,cold\n\
                     b1,55.25,w1,cold\n\
                     b2,310.80,w2,flu\n\
                     b2,19.99,w2,flu\n";

/// The table in a fresh directory and a policy over it publishing g at level 1, with `cost`
/// given `cost_role` and `privacy` added to `[privacy]`.
struct Release {
    dir: tempfile::TempDir,
}

impl Release {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("visits.csv"), TABLE).unwrap();
        Self { dir }
    }

    fn arg(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Runs `anon apply --quiet` with the policy; returns its output.
    fn apply(&self, cost_role: &str, privacy: &str) -> std::process::Output {
        let policy = format!(
            "[input]\npath = \"visits.csv\"\n[privacy]\nk = 2\n{privacy}\n[attributes]\n\
             g = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", rows = [\
             [\"a1\", \"A\", \"*\"], [\"a2\", \"A\", \"*\"], [\"b1\", \"B\", \"*\"], \
             [\"b2\", \"B\", \"*\"]] }} }}\n\
             cost = {{ role = \"{cost_role}\" }}\nward = {{ role = \"insensitive\" }}\n\
             s = {{ role = \"sensitive\" }}\n[transformation]\ng = 1\n"
        );
        std::fs::write(self.dir.path().join("policy.toml"), policy).unwrap();
        anon(&[
            "apply",
            "--quiet",
            "--policy",
            &self.arg("policy.toml"),
            "--out",
            &self.arg("out.parquet"),
            "--report",
            &self.arg("report.json"),
        ])
    }
}

/// The exact amount: one warning on stderr naming 'cost' with its hand-computed share, the
/// same in the report, and the ranking's figures by hand; ward and s are not warned about.
#[test]
fn an_exact_insensitive_column_is_warned_about() {
    let release = Release::new();
    let output = release.apply("insensitive", "");
    let error = stderr(&output);
    assert!(output.status.success(), "{error}");
    let warnings: Vec<&str> = error
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning, for cost only: {error}");
    assert!(
        warnings[0].starts_with(
            "warning: 'cost' makes 50.00% of the published rows unique (4 of 8) with the \
             quasi-identifiers: whoever knows a person's 'cost' and quasi-identifiers finds \
             their row"
        ),
        "{error}"
    );
    assert!(warnings[0].contains("max_unique_share"), "{error}");
    // never a value
    for value in ["101.17", "87.50", "240.00", "55.25", "310.80", "19.99"] {
        assert!(!error.contains(value), "{value} on stderr: {error}");
    }
    let report = crate::read_json(release.dir.path().join("report.json"));
    let publish = &report["publish"];
    assert_eq!(publish["warnings"].as_array().unwrap().len(), 1);
    assert_eq!(
        format!("warning: {}", publish["warnings"][0].as_str().unwrap()),
        warnings[0]
    );
    let ranking = publish["post_analytics"]["uniqueness"].as_array().unwrap();
    let names: Vec<&str> = ranking
        .iter()
        .map(|c| c["attribute"].as_str().unwrap())
        .collect();
    // cost first (share 0.5); s and ward tie on share and leakage: by name
    assert_eq!(names, ["cost", "s", "ward"]);
    let figure = |i: usize, key: &str| ranking[i][key].as_f64().unwrap();
    assert_eq!(ranking[0]["unique_rows"], 4);
    assert!((figure(0, "unique_share") - 0.5).abs() < 1e-12);
    assert!((figure(0, "leakage_with_quasi_identifiers") - 2.5 / 3.0).abs() < 1e-12);
    for i in [1, 2] {
        assert_eq!(ranking[i]["unique_rows"], 0);
        assert!((figure(i, "leakage_with_quasi_identifiers") - 2.0 / 3.0).abs() < 1e-12);
    }
    assert!(report["thresholds"]["max_unique_share"].is_null());
}

/// `max_unique_share` below the column's share refuses the release, fail-closed: nothing at
/// the output path, no report, and the error names the column, its share and the threshold;
/// at or above the share, the release is published (with the warning).
#[test]
fn max_unique_share_refuses_the_exact_column() {
    let release = Release::new();
    let output = release.apply("insensitive", "max_unique_share = 0.3");
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(
        error.contains(
            "the written output breaks the policy's thresholds, so it was not published: \
             'cost' makes 50.00% of the published rows unique (4 of 8) with the \
             quasi-identifiers, above max_unique_share = 0.3"
        ),
        "{error}"
    );
    assert!(!release.dir.path().join("out.parquet").exists());
    assert!(!release.dir.path().join("report.json").exists());
    let leftovers: Vec<_> = std::fs::read_dir(release.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("anon-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let output = release.apply("insensitive", "max_unique_share = 0.5");
    assert!(output.status.success(), "{}", stderr(&output));

    let output = release.apply("insensitive", "max_unique_share = 1.5");
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("max_unique_share is a share between 0 and 1, got 1.5"),
        "{}",
        stderr(&output)
    );
}

/// Without the exact amount (dropped as an identifier), the coarse ward and the sensitive s
/// make no row unique: published without a warning.
#[test]
fn a_coarse_column_is_not_warned_about() {
    let release = Release::new();
    let output = release.apply("identifier", "max_unique_share = 0.05");
    let error = stderr(&output);
    assert!(output.status.success(), "{error}");
    // (the dropped amount repeats, 4 of 8 rows, which the person-column check points out)
    assert!(!error.contains("rows unique"), "{error}");
    let report = crate::read_json(release.dir.path().join("report.json"));
    assert_eq!(report["publish"]["warnings"], serde_json::json!([]));
    let ranking = report["publish"]["post_analytics"]["uniqueness"]
        .as_array()
        .unwrap();
    assert_eq!(ranking.len(), 2, "ward and s: {ranking:?}");
    assert!(ranking.iter().all(|c| c["unique_rows"] == 0), "{ranking:?}");
}

/// Four events at one place within one 15-minute window, of three devices (d1 twice), with
/// an event id and an activity beside them.
const EVENTS: &str = "device_id,lat,lon,ts,activity,event_id\n\
                      d1,48.85,2.35,2024-03-04T08:00:00,home,e1\n\
                      d2,48.85,2.35,2024-03-04T08:01:00,home,e2\n\
                      d3,48.85,2.35,2024-03-04T08:02:00,work,e3\n\
                      d1,48.85,2.35,2024-03-04T08:03:00,home,e4\n";

/// Four records in two pairs of near incomes and ages, with a region and a code beside them.
const RECORDS: &str = "id,income,age,region,code\n\
                       1,10,20,A,c1\n2,11,21,A,c2\n3,100,60,B,c3\n4,101,61,C,c4\n";

/// A cloaking policy over [`EVENTS`] (k = 2, 3 km, 15 minutes), `extra` added to `[privacy]`.
fn cloaking_policy(extra: &str) -> String {
    format!(
        "[input]\npath = \"data.csv\"\n[privacy]\nmethod = \"cloaking\"\nperson = \
         \"device_id\"\nlatitude = \"lat\"\nlongitude = \"lon\"\ntime = \"ts\"\nk = 2\n\
         max_cell_side = 3000\nwindow = \"15m\"\n{extra}\n[attributes]\n\
         device_id = {{ role = \"identifier\" }}\nlat = {{ role = \"quasi_identifier\" }}\n\
         lon = {{ role = \"quasi_identifier\" }}\n\
         ts = {{ role = \"quasi_identifier\", type = \"timestamp\" }}\n\
         activity = {{ role = \"insensitive\" }}\nevent_id = {{ role = \"insensitive\" }}\n"
    )
}

/// A perturbation policy over [`RECORDS`]: income and age microaggregated by MDAV at k = 2,
/// region and code published as they are, `extra` added to `[privacy]`.
fn perturbation_policy(extra: &str) -> String {
    let micro = "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }";
    format!(
        "[input]\npath = \"data.csv\"\n[privacy]\nmethod = \"perturbation\"\nk = 2\n{extra}\n\
         [perturbation]\nalgorithm = \"mdav\"\n[attributes]\nid = {{ role = \"identifier\" }}\n\
         income = {micro}\nage = {micro}\nregion = {{ role = \"insensitive\" }}\n\
         code = {{ role = \"insensitive\" }}\n"
    )
}

/// Runs `anon anonymize --policy <text> --out out.parquet --report r.json` over `input`
/// (written as `data.csv`) in a fresh directory: the output, its stderr, the report (when it
/// succeeded) and what the directory holds afterwards.
fn publish_other_method(
    input: &str,
    policy: &str,
) -> (std::process::Output, Option<serde_json::Value>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.csv"), input).unwrap();
    std::fs::write(dir.path().join("p.toml"), policy).unwrap();
    let path = |name: &str| dir.path().join(name).display().to_string();
    let output = anon(&[
        "anonymize",
        "--quiet",
        "--policy",
        &path("p.toml"),
        "--out",
        &path("out.parquet"),
        "--report",
        &path("r.json"),
        "--seed",
        "5",
    ]);
    let report = output
        .status
        .success()
        .then(|| super::read_json(dir.path().join("r.json")));
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    (output, report, left)
}

/// The unique share of `attribute` in a report's `uniqueness` list.
fn share_of(uniqueness: &serde_json::Value, attribute: &str) -> f64 {
    uniqueness
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["attribute"] == attribute)
        .unwrap_or_else(|| panic!("{attribute} not measured: {uniqueness}"))["unique_share"]
        .as_f64()
        .unwrap()
}

/// Cloaking gets the same check, its label columns in the quasi-identifiers' place. By hand:
/// the four events share one place and one 15-minute window, so they are one label of three
/// subjects (k = 2 holds). `event_id` (e1…e4) makes every row unique with the label: 4 of 4,
/// 100 %; `activity` (home ×3, work ×1) makes 1 of 4 unique, 25 %. Both are above the 5 %
/// warning; `max_unique_share = 0.3` refuses `event_id` (not `activity`) and writes nothing.
#[test]
fn cloaking_releases_get_the_uniqueness_check() {
    let events = EVENTS;
    let policy = cloaking_policy;
    let (output, report, _) = publish_other_method(events, &policy(""));
    assert!(output.status.success(), "{}", stderr(&output));
    let report = report.unwrap();
    let publish = &report["publish"];
    assert_eq!(publish["verification"]["labels"], 1);
    assert_eq!(share_of(&publish["uniqueness"], "event_id"), 1.0);
    assert_eq!(share_of(&publish["uniqueness"], "activity"), 0.25);
    assert_eq!(publish["warnings"].as_array().unwrap().len(), 2);
    let warned = stderr(&output);
    assert!(
        warned.contains("warning: 'event_id' makes 100.00% of the published rows unique (4 of 4)"),
        "{warned}"
    );

    let (output, _, left) = publish_other_method(events, &policy("max_unique_share = 0.3"));
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(
        error.contains("'event_id' makes 100.00% of the published rows unique (4 of 4)")
            && error.contains("above max_unique_share = 0.3")
            && !error.contains("'activity'"),
        "{error}"
    );
    assert!(!error.contains("e1"), "a value was shown: {error}");
    assert_eq!(left, ["data.csv", "p.toml"]);
}

/// Perturbation gets the same check, its microaggregated values (and strata) in the
/// quasi-identifiers' place; a perturbed attribute is not measured (noise makes every value
/// unique by design). By hand: MDAV at k = 2 pairs the records (10, 20) with (11, 21) and
/// (100, 60) with (101, 61), so the published (income, age) make two classes of two. `region`
/// (A, A | B, C) leaves the second class's two rows unique: 2 of 4, 50 %; `code` (all
/// distinct) 4 of 4, 100 %.
#[test]
fn perturbed_releases_get_the_uniqueness_check() {
    let records = RECORDS;
    let policy = perturbation_policy;
    let (output, report, _) = publish_other_method(records, &policy(""));
    assert!(output.status.success(), "{}", stderr(&output));
    let report = report.unwrap();
    assert_eq!(report["verification"]["classes"], 2);
    assert_eq!(share_of(&report["uniqueness"], "region"), 0.5);
    assert_eq!(share_of(&report["uniqueness"], "code"), 1.0);
    let measured: Vec<&str> = report["uniqueness"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["attribute"].as_str().unwrap())
        .collect();
    assert_eq!(measured, ["code", "region"], "highest share first");

    let (output, _, left) = publish_other_method(records, &policy("max_unique_share = 0.6"));
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("'code' makes 100.00% of the published rows unique (4 of 4)")
            && !error.contains("'region'"),
        "{error}"
    );
    assert_eq!(left, ["data.csv", "p.toml"]);
}

/// Every method gets the same reports (issue 52): a cloaked and a perturbed release write an
/// HTML page beside the JSON, holding the release's figures and its uniqueness ranking, and
/// without the seed unless `--record-seed`.
#[test]
fn cloaked_and_perturbed_releases_have_html_reports() {
    let events = EVENTS;
    for (input, policy, says) in [
        (events, cloaking_policy(""), "fewest subjects of a label"),
        (RECORDS, perturbation_policy(""), "k on the written files"),
    ] {
        for record_seed in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("data.csv"), input).unwrap();
            std::fs::write(dir.path().join("p.toml"), &policy).unwrap();
            let path = |name: &str| dir.path().join(name).display().to_string();
            let mut args = vec![
                "anonymize".to_string(),
                "--quiet".into(),
                "--policy".into(),
                path("p.toml"),
                "--out".into(),
                path("out.parquet"),
                "--html-report".into(),
                path("r.html"),
                "--seed".into(),
                "987654".into(),
            ];
            if record_seed {
                args.push("--record-seed".into());
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let output = anon(&args);
            assert!(output.status.success(), "{}", stderr(&output));
            let page = std::fs::read_to_string(dir.path().join("r.html")).unwrap();
            assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
            assert!(
                page.contains("Release report") && page.contains(says),
                "{page}"
            );
            assert!(
                page.contains("Uniqueness") && page.contains("warning:"),
                "{page}"
            );
            assert_eq!(page.contains("seed 987654"), record_seed, "{page}");
            // the summary on stdout, with the seed, for every method
            let printed = String::from_utf8_lossy(&output.stdout);
            assert!(printed.contains("seed: 987654"), "{printed}");
        }
    }
}
