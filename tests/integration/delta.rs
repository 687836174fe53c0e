//! Delta Lake tables in and out, read back with delta-rs itself (not through `anon`): one
//! commit per release with its figures in `commitInfo` and no value of the data, new versions
//! with `--overwrite` and `--append`, time travel on input, kills at named points, two
//! publishes at once, and the bad inputs of issue 38, each with one error naming the table.

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use serde_json::Value;

use super::{Scratch, anon, stderr};

/// A scratch directory with the generated patients table (`rows` rows) and `policy.toml` over
/// it.
fn scratch(rows: usize) -> Scratch {
    let scratch = Scratch::with_patients(rows);
    write_policy(&scratch, "policy.toml", "path = \"patients.parquet\"", 2, 1);
    scratch
}

/// A patients policy named `name` whose `[input]` holds `input` (k = 2, zip at `zip_level`,
/// age at `age_level` for `apply`).
fn write_policy(
    scratch: &Scratch,
    name: &str,
    input: &str,
    zip_level: usize,
    age_level: usize,
) -> String {
    let text = super::patients_policy("patients.parquet", 2, 1.0, zip_level, age_level).replacen(
        "path = \"patients.parquet\"",
        input,
        1,
    );
    scratch.write(name, &text)
}

/// Runs `anon` and asserts it succeeded.
fn ok(args: &[&str]) -> Output {
    let output = anon(args);
    assert!(output.status.success(), "{}", stderr(&output));
    output
}

/// The log entries (commit files) of the table at `dir`, in version order.
pub(super) fn commits(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("_delta_log"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The `commitInfo` of version `version` of the table at `dir`, and the commit's whole text.
pub(super) fn commit_info(dir: &Path, version: u64) -> (Value, String) {
    let text = std::fs::read_to_string(dir.join(format!("_delta_log/{version:020}.json"))).unwrap();
    let info = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find_map(|action| action.get("commitInfo").cloned())
        .expect("a commitInfo action");
    (info, text)
}

/// The release directories (`anon-…`) under the table root.
pub(super) fn release_dirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("anon-"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every row of `sql`'s result as `a|b|c` text, sorted (a multiset of rows).
async fn rows_of(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let options = FormatOptions::default();
    let mut rows = Vec::new();
    for batch in &batches {
        let formatters: Vec<_> = batch
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
            .collect();
        for row in 0..batch.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| f.value(row).to_string())
                    .collect::<Vec<_>>()
                    .join("|"),
            );
        }
    }
    rows.sort();
    rows
}

/// The rows of the Delta table at `dir` (at `version`, else the latest) read by delta-rs's
/// own table provider, columns in name order; and the version read.
pub(super) async fn delta_rows(dir: &Path, version: Option<i64>) -> (i64, Vec<String>) {
    let url = deltalake_core::ensure_table_uri(dir.to_str().unwrap()).unwrap();
    let mut builder = deltalake_core::DeltaTableBuilder::from_url(url).unwrap();
    if let Some(version) = version {
        builder = builder.with_version(version as u64);
    }
    let table = builder.load().await.unwrap();
    let ctx = SessionContext::new();
    table.update_datafusion_session(&ctx.state()).unwrap();
    ctx.register_table("t", table.table_provider().await.unwrap())
        .unwrap();
    let columns = ordered_columns(&ctx, "t").await;
    let rows = rows_of(&ctx, &format!("SELECT {columns} FROM t")).await;
    (table.version().unwrap() as i64, rows)
}

/// The rows of Parquet output `path`, columns in name order.
pub(super) async fn parquet_rows(path: &Path) -> Vec<String> {
    let ctx = SessionContext::new();
    ctx.register_parquet("t", path.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let columns = ordered_columns(&ctx, "t").await;
    rows_of(&ctx, &format!("SELECT {columns} FROM t")).await
}

async fn ordered_columns(ctx: &SessionContext, table: &str) -> String {
    let schema = ctx.table_provider(table).await.unwrap().schema();
    let mut names: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| format!("\"{}\"", f.name()))
        .collect();
    names.sort();
    names.join(", ")
}

/// Whether `value` occurs in `text` with no letter or digit right before or after it.
fn contains_token(text: &str, value: &str) -> bool {
    text.match_indices(value).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + value.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// The text of a Delta log (one JSON action per line) where a value of a text column could
/// show: every key and every string, one per line. Numbers are left out: they are Delta's own
/// sizes, counts and times (a data file of 13,504 bytes is `"size":13504`, which a 5-digit
/// zip code matched by chance in one CI run), while a leaked text value would be a string
/// (a statistic, a partition value, a path).
fn log_strings(text: &str) -> String {
    fn walk(value: &Value, out: &mut String) {
        match value {
            Value::String(s) => {
                out.push_str(s);
                out.push('\n');
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => {
                for (key, v) in map {
                    out.push_str(key);
                    out.push('\n');
                    walk(v, out);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    let mut out = String::new();
    for line in text.lines() {
        walk(&serde_json::from_str::<Value>(line).unwrap(), &mut out);
    }
    out
}

/// Every distinct value of the input's text columns: none may appear in a commit.
async fn input_values(input: &Path) -> BTreeSet<String> {
    let ctx = SessionContext::new();
    ctx.register_parquet("t", input.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let mut values = BTreeSet::new();
    for column in ["zip", "disease", "race", "marital_status", "education"] {
        for row in rows_of(&ctx, &format!("SELECT DISTINCT \"{column}\" FROM t")).await {
            values.insert(row);
        }
    }
    values
}

#[tokio::test]
async fn a_release_is_one_commit_with_its_figures_and_no_value() {
    let s = scratch(3_000);
    let policy = s.arg("policy.toml");
    let table = s.path("release");
    let run = ok(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &s.arg("release"),
        "--format",
        "delta",
        "--seed",
        "7",
        "--report",
        &s.arg("report.json"),
    ]);
    // the same release as Parquet (same seed): the table holds exactly its rows
    ok(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &s.arg("release.parquet"),
        "--seed",
        "7",
    ]);
    assert_eq!(commits(&table), ["00000000000000000000.json"]);
    let (version, rows) = delta_rows(&table, None).await;
    assert_eq!(version, 0);
    assert_eq!(rows, parquet_rows(&s.path("release.parquet")).await);
    let report = s.report("report.json");
    assert_eq!(report["publish"]["delta_version"], 0);
    assert_eq!(
        rows.len() as u64,
        report["publish"]["verification"]["rows"].as_u64().unwrap()
    );

    let (info, text) = commit_info(&table, 0);
    let release = &info["anonymity"];
    assert_eq!(release["command"], "anonymize");
    assert_eq!(release["method"], "full-domain");
    assert_eq!(release["algorithm"], "optimal");
    assert_eq!(release["requirements"]["k"], 2);
    // the figures are the verified ones of the report
    let verification = &report["publish"]["verification"];
    assert_eq!(release["figures"]["k"], verification["k"]);
    assert!(release["figures"]["k"].as_u64().unwrap() >= 2);
    assert_eq!(release["figures"]["rows"], verification["rows"]);
    assert_eq!(
        release["figures"]["suppressed"],
        report["publish"]["suppressed_rows"]
    );
    assert_eq!(release["metric"], "loss");
    assert_eq!(release["metric_value"], report["metric_value"]);
    assert_eq!(release["levels"]["zip"], report["levels"][0]["level"]);
    // the policy's hash, computed here from the file
    let hash = blake3::hash(&std::fs::read(s.path("policy.toml")).unwrap());
    assert_eq!(release["policy_hash"], format!("blake3:{}", hash.to_hex()));
    // neither the seed nor any value of the data is in the log
    assert!(!text.contains("seed"), "{text}");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(!stdout.contains("seed: 7") || !text.contains("\"7\""));
    // the token rule sees a quoted value, not digits inside a longer number
    assert!(contains_token(r#"{"zip":"13053"}"#, "13053"));
    assert!(!contains_token(r#"{"timestamp":1764313053999}"#, "13053"));
    // a value as a string of the log is found; the same digits as a number are not
    let strings = log_strings("{\"add\":{\"path\":\"zip=13053/a.parquet\",\"size\":40312}}");
    assert!(contains_token(&strings, "13053") && !contains_token(&strings, "40312"));
    let strings = log_strings(&text);
    for value in input_values(&s.path("patients.parquet")).await {
        // longer values only: single characters and digits are parts of keys and numbers
        // as a whole token: a 5-digit zip may occur by chance inside a timestamp or an id
        if value.len() > 3 {
            assert!(
                !contains_token(&strings, &value),
                "the commit holds a value of the data"
            );
        }
    }
    // stats carry the row count only
    assert!(!text.contains("minValues") && !text.contains("maxValues"));
}

/// A perturbed release (the CASC Census set, microaggregation, noise and an identifier
/// dropped) is one Delta commit: the same rows as the Parquet release of the same seed, read
/// back by delta-rs, with the perturbation's names and verified figures in `commitInfo` and
/// neither the seed nor a value. A second release appends to it as a new version.
#[tokio::test]
async fn a_perturbed_release_is_one_commit_with_its_figures() {
    use crate::perturbation::{census, census_columns, policy};
    let dir = tempfile::tempdir().unwrap();
    let columns = census_columns();
    let attributes: Vec<(&str, &str)> = columns
        .iter()
        .map(|name| {
            let spec = match name.as_str() {
                "AFNLWGT" | "AGI" => {
                    "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }"
                }
                "EMCONTRB" => {
                    "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.1 } }"
                }
                "STATETAX" => "{ role = \"identifier\" }",
                _ => "{ role = \"insensitive\" }",
            };
            (name.as_str(), spec)
        })
        .collect();
    let policy = policy(dir.path(), &census(), "k = 3", &attributes);
    let table = dir.path().join("release");
    let (out, report_path) = (
        table.display().to_string(),
        dir.path().join("report.json").display().to_string(),
    );
    let parquet = dir.path().join("release.parquet").display().to_string();
    let publish = |out: &str, extra: &[&str]| {
        let mut args = vec!["anonymize", "--quiet", "--policy", &policy, "--seed", "11"];
        args.extend(["--out", out]);
        args.extend(extra);
        anon(&args)
    };
    let run = publish(&out, &["--format", "delta", "--report", &report_path]);
    assert!(run.status.success(), "{}", stderr(&run));
    let run = publish(&parquet, &[]);
    assert!(run.status.success(), "{}", stderr(&run));

    assert_eq!(commits(&table), ["00000000000000000000.json"]);
    let (version, rows) = delta_rows(&table, None).await;
    assert_eq!(version, 0);
    assert_eq!(rows, parquet_rows(Path::new(&parquet)).await);
    // every Census record, the identifier dropped
    let records = std::fs::read_to_string(census()).unwrap().lines().count() - 1;
    assert_eq!(rows.len(), records);
    let report: Value = crate::read_json(&report_path);
    assert_eq!(report["delta_version"], 0);

    let (info, text) = commit_info(&table, 0);
    let release = &info["anonymity"];
    assert_eq!(release["command"], "anonymize");
    assert_eq!(release["method"], "perturbation");
    assert_eq!(release["attributes"]["AFNLWGT"], "microaggregation");
    assert_eq!(release["attributes"]["EMCONTRB"], "noise");
    assert_eq!(release["k"], 3);
    assert_eq!(release["figures"]["rows"], rows.len() as u64);
    assert_eq!(release["figures"]["k"], report["verification"]["k"]);
    assert!(release["figures"]["k"].as_u64().unwrap() >= 3);
    assert!(!text.contains("seed"), "{text}");
    assert!(!text.contains("minValues") && !text.contains("maxValues"));

    // the next period appends as a new version (each release verified on its own): the
    // same records again here, so version 1 holds every record twice
    let appended = publish(&out, &["--format", "delta", "--append"]);
    assert!(appended.status.success(), "{}", stderr(&appended));
    let (version, both) = delta_rows(&table, None).await;
    assert_eq!((version, both.len()), (1, 2 * records));
    let (info, _) = commit_info(&table, 1);
    assert_eq!(info["anonymity"]["method"], "perturbation");
    assert!(info["anonymity"]["figures"]["k"].as_u64().unwrap() >= 3);
}

#[tokio::test]
async fn overwrite_and_append_make_new_versions_and_old_ones_stay_readable() {
    let s = scratch(2_000);
    // apply: a fixed full-domain transformation, so appends have the same labels
    let policy = s.arg("policy.toml");
    let table = s.path("t");
    let out = s.arg("t");
    ok(&[
        "apply", "--policy", &policy, "--out", &out, "--format", "delta", "--seed", "1",
    ]);
    let (_, first) = delta_rows(&table, None).await;
    // a path that is a Delta table is published as one without --format
    let refused = anon(&["apply", "--policy", &policy, "--out", &out, "--seed", "2"]);
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains(&format!(
            "output Delta table {out}: exists; pass --overwrite"
        )),
        "{message}"
    );
    ok(&[
        "apply", "--policy", &policy, "--out", &out, "--seed", "2", "--append",
    ]);
    let (version, appended) = delta_rows(&table, None).await;
    assert_eq!(version, 1);
    assert_eq!(appended.len(), 2 * first.len());
    let (info, _) = commit_info(&table, 1);
    assert_eq!(info["operation"], "WRITE");
    assert_eq!(info["operationParameters"]["mode"], "Append");

    // other levels: other labels, refused, nothing committed, no file left
    let other = write_policy(&s, "other.toml", "path = \"patients.parquet\"", 3, 1);
    let refused = anon(&["apply", "--policy", &other, "--out", &out, "--append"]);
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains(&format!(
            "cannot append to Delta table {out}: its labels are those of levels"
        )),
        "{message}"
    );
    assert_eq!(commits(&table).len(), 2);
    assert_eq!(
        release_dirs(&table).len(),
        2,
        "the refused release's files were left"
    );
    // a local recoding appends to nothing (its labels are its own classes' boxes), refused
    // before anything is read
    let local = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out,
        "--append",
        "--algorithm",
        "mondrian",
    ]);
    assert!(!local.status.success());
    let message = stderr(&local);
    assert!(
        message.contains("this release is local, the table's last version full-domain"),
        "{message}"
    );
    // refused before the input was read: no frequency set was built
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert_eq!(commits(&table).len(), 2);
    assert_eq!(release_dirs(&table).len(), 2, "{message}");

    // overwrite with other levels: a new version replacing the rows, columns changed
    ok(&[
        "apply",
        "--policy",
        &other,
        "--out",
        &out,
        "--overwrite",
        "--seed",
        "3",
    ]);
    let (version, replaced) = delta_rows(&table, None).await;
    assert_eq!(version, 2);
    // exactly the rows of the same release as Parquet
    ok(&[
        "apply",
        "--policy",
        &other,
        "--out",
        &s.arg("other.parquet"),
        "--seed",
        "3",
    ]);
    assert_eq!(replaced, parquet_rows(&s.path("other.parquet")).await);
    assert_ne!(replaced, first);
    // time travel: versions 0 and 1 read as they were
    assert_eq!(delta_rows(&table, Some(0)).await.1, first);
    assert_eq!(delta_rows(&table, Some(1)).await.1, appended);
}

/// Writes the patients table `rows`/`seed` as version(s) of a Delta table at `dir` with
/// delta-rs itself (overwriting).
pub(super) async fn write_input(dir: &Path, parquet: &Path) {
    let ctx = SessionContext::new();
    let batches = ctx
        .read_parquet(parquet.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    std::fs::create_dir_all(dir).unwrap();
    let url = deltalake_core::ensure_table_uri(dir.to_str().unwrap()).unwrap();
    let table = deltalake_core::DeltaTable::try_from_url(url).await.unwrap();
    table
        .write(batches)
        .with_save_mode(deltalake_core::protocol::SaveMode::Overwrite)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_delta_input_at_a_version_gives_the_same_release_later() {
    let s = scratch(1_500);
    let input = s.path("input");
    write_input(&input, &s.path("patients.parquet")).await;
    let pinned = write_policy(&s, "pinned.toml", "path = \"input\"\nversion = 0", 2, 1);
    let args = |out: &str, report: &str| {
        vec![
            "anonymize".to_string(),
            "--policy".into(),
            pinned.clone(),
            "--out".into(),
            s.arg(out),
            "--seed".into(),
            "11".into(),
            "--report".into(),
            s.arg(report),
        ]
    };
    let run = |a: Vec<String>| ok(&a.iter().map(String::as_str).collect::<Vec<_>>());
    run(args("early.parquet", "early.json"));
    assert_eq!(s.report("early.json")["input_version"], 0);
    // a newer version of the input with other rows
    super::generate_patients(&s.path("newer.parquet"), 1_000, 99);
    write_input(&input, &s.path("newer.parquet")).await;
    assert_eq!(commits(&input).len(), 2);
    run(args("late.parquet", "late.json"));
    assert_eq!(s.report("late.json")["input_version"], 0);
    // the same seed over the same version: the same bytes
    assert_eq!(
        std::fs::read(s.path("early.parquet")).unwrap(),
        std::fs::read(s.path("late.parquet")).unwrap()
    );
    // and the latest version is read without a pin, recorded as version 1
    let latest = write_policy(&s, "latest.toml", "path = \"input\"", 2, 1);
    ok(&[
        "anonymize",
        "--policy",
        &latest,
        "--out",
        &s.arg("latest.parquet"),
        "--report",
        &s.arg("latest.json"),
    ]);
    assert_eq!(s.report("latest.json")["input_version"], 1);
    assert_eq!(s.report("latest.json")["publish"]["input_rows"], 1_000);
    // a time before the table's first commit reads no version (delta-rs alone would give
    // version 0); a time after the last reads the latest
    let before = write_policy(
        &s,
        "before.toml",
        "path = \"input\"\ntimestamp = \"2000-01-01T00:00:00Z\"",
        2,
        1,
    );
    let failed = anon(&[
        "anonymize",
        "--policy",
        &before,
        "--out",
        &s.arg("b.parquet"),
    ]);
    assert!(!failed.status.success());
    let message = stderr(&failed);
    let table = s.arg("input");
    assert!(
        message.contains(&format!(
            "Delta table {table}: no version was committed at or before 2000-01-01T00:00:00Z"
        )),
        "{message}"
    );
    let after = write_policy(
        &s,
        "after.toml",
        "path = \"input\"\ntimestamp = \"2999-01-01T00:00:00Z\"",
        2,
        1,
    );
    ok(&[
        "anonymize",
        "--policy",
        &after,
        "--out",
        &s.arg("a.parquet"),
        "--report",
        &s.arg("after.json"),
    ]);
    assert_eq!(s.report("after.json")["input_version"], 1);
}

#[test]
fn bad_inputs_give_one_error_naming_the_table_and_commit_nothing() {
    let s = scratch(500);
    let out = s.arg("out");
    // a path that is not a Delta table where one is required
    let not_delta = write_policy(
        &s,
        "not_delta.toml",
        "path = \"patients.parquet\"\nformat = \"delta\"",
        2,
        1,
    );
    let failed = anon(&["anonymize", "--policy", &not_delta, "--out", &out]);
    assert!(!failed.status.success());
    let message = stderr(&failed);
    let input = s.arg("patients.parquet");
    assert!(
        message.contains(&format!("{input} is not a Delta table")),
        "{message}"
    );
    // --append onto a path that is no Delta table
    let policy = s.arg("policy.toml");
    let failed = anon(&["apply", "--policy", &policy, "--out", &out, "--append"]);
    assert!(!failed.status.success());
    let message = stderr(&failed);
    assert!(
        message.contains(&format!("{out} is not a Delta table")),
        "{message}"
    );
    assert!(!s.path("out").exists());

    // a version that does not exist
    ok(&[
        "apply", "--policy", &policy, "--out", &out, "--format", "delta",
    ]);
    let missing = write_policy(&s, "missing.toml", "path = \"out\"\nversion = 5", 2, 1);
    let failed = anon(&["anonymize", "--policy", &missing, "--out", &s.arg("o2")]);
    assert!(!failed.status.success());
    let message = stderr(&failed);
    assert!(
        message.contains(&format!(
            "Delta table {out}: version 5 does not exist (the latest is 0)"
        )),
        "{message}"
    );
    // a table whose schema lacks a policy column (the release dropped patient_id)
    let lacking = write_policy(&s, "lacking.toml", "path = \"out\"", 2, 1);
    let failed = anon(&["anonymize", "--policy", &lacking, "--out", &s.arg("o3")]);
    assert!(!failed.status.success());
    let message = stderr(&failed);
    assert!(message.contains("patient_id"), "{message}");
    assert!(!s.path("o2").exists() && !s.path("o3").exists());
    // an existing path that holds something else is not made a table
    let failed = anon(&[
        "apply",
        "--policy",
        &policy,
        "--out",
        &s.arg("patients.parquet"),
        "--format",
        "delta",
    ]);
    assert!(!failed.status.success());
}

/// Starts `anon args` with the test hook pausing it at `point` for `seconds`, stderr to a
/// file; the child and the file.
fn start_paused(
    s: &Scratch,
    args: &[&str],
    point: &str,
    seconds: u64,
    log: &str,
) -> (std::process::Child, PathBuf) {
    let log = s.path(log);
    let child = Command::new(env!("CARGO_BIN_EXE_anon"))
        .args(args)
        .env("ANON_TEST_PAUSE_AT", point)
        .env("ANON_TEST_PAUSE_SECONDS", seconds.to_string())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    (child, log)
}

/// Waits until the file `log` says `paused at <point>`.
fn wait_for_pause(log: &Path, point: &str) {
    let deadline = Instant::now() + Duration::from_secs(180);
    while Instant::now() < deadline {
        if std::fs::read_to_string(log).is_ok_and(|t| t.contains(&format!("paused at {point}"))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "never paused at {point}: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

#[tokio::test]
async fn a_kill_at_any_point_leaves_the_previous_or_the_new_complete_version() {
    let s = scratch(20_000);
    let policy = s.arg("policy.toml");
    let table = s.path("t");
    let out = s.arg("t");
    ok(&[
        "apply", "--policy", &policy, "--out", &out, "--format", "delta", "--seed", "1",
    ]);
    let (_, previous) = delta_rows(&table, None).await;
    let other = write_policy(&s, "other.toml", "path = \"patients.parquet\"", 3, 2);
    let overwrite = [
        "apply",
        "--policy",
        other.as_str(),
        "--out",
        out.as_str(),
        "--overwrite",
        "--seed",
        "2",
    ];

    // files written (not verified), then verified (not committed): killed there, the new
    // files are on disk and the log has no new entry; the table reads as before
    for point in ["after-write", "before-commit"] {
        let (mut child, log) = start_paused(&s, &overwrite, point, 120, "kill.log");
        wait_for_pause(&log, point);
        child.kill().unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(9));
        let dirs = release_dirs(&table);
        assert_eq!(
            dirs.len(),
            2,
            "{point}: the killed run's files should be there: {dirs:?}"
        );
        assert_eq!(
            commits(&table).len(),
            1,
            "{point}: nothing may be committed"
        );
        let (version, rows) = delta_rows(&table, None).await;
        assert_eq!((version, &rows), (0, &previous), "{point}");
    }
    // the next publish removes the killed runs' files (their process is gone, no version
    // references them) and says so
    let (mut child, log) = start_paused(&s, &overwrite, "after-commit", 120, "kill.log");
    wait_for_pause(&log, "after-commit");
    child.kill().unwrap();
    assert_eq!(child.wait().unwrap().signal(), Some(9));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("the uncommitted files of an earlier run"),
        "{text}"
    );
    // killed after its commit: the new version is complete
    assert_eq!(commits(&table).len(), 2);
    let (version, rows) = delta_rows(&table, None).await;
    assert_eq!(version, 1);
    assert_ne!(rows, previous);
    // its rows are the release's: the same release published as Parquet
    ok(&[
        "apply",
        "--policy",
        &other,
        "--out",
        &s.arg("same.parquet"),
        "--seed",
        "2",
    ]);
    assert_eq!(rows, parquet_rows(&s.path("same.parquet")).await);
    assert_eq!(
        release_dirs(&table).len(),
        2,
        "the committed and the first release"
    );
}

#[tokio::test]
async fn a_kill_while_writing_leaves_the_previous_version() {
    let s = scratch(300_000);
    let policy = s.arg("policy.toml");
    let table = s.path("t");
    let out = s.arg("t");
    ok(&[
        "apply", "--policy", &policy, "--out", &out, "--format", "delta", "--seed", "1",
    ]);
    let before = commits(&table);
    let (_, previous) = delta_rows(&table, None).await;
    let other = write_policy(&s, "other.toml", "path = \"patients.parquet\"", 3, 2);
    for _ in 0..5 {
        // paused after writing: a kill that comes before that line came while writing
        let (mut child, log) = start_paused(
            &s,
            &["apply", "--policy", &other, "--out", &out, "--overwrite"],
            "after-write",
            120,
            "write.log",
        );
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut writing = false;
        while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
            writing = release_dirs(&table).len() == 2;
            if writing {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let paused = std::fs::read_to_string(&log)
            .unwrap()
            .contains("paused at after-write");
        if writing && !paused {
            assert_eq!(commits(&table), before);
            let (version, rows) = delta_rows(&table, None).await;
            assert_eq!(version, 0);
            assert_eq!(rows, previous);
            return;
        }
        // caught too late: clean up and try again
        for dir in release_dirs(&table).into_iter().skip(1) {
            let _ = std::fs::remove_dir_all(table.join(dir));
        }
    }
    panic!("no run was killed while writing");
}

#[test]
fn two_publishes_at_once_one_commits_the_other_fails_clearly() {
    let s = scratch(5_000);
    let policy = s.arg("policy.toml");
    let table = s.path("t");
    let out = s.arg("t");
    // a new table, then a new version over it: both races
    for (round, extra) in [(0, None), (1, Some("--overwrite"))] {
        let mut args = vec![
            "apply",
            "--policy",
            policy.as_str(),
            "--out",
            out.as_str(),
            "--format",
            "delta",
        ];
        args.extend(extra);
        // both read the table within their first second, then pause 4 s before committing
        let (a, log_a) = start_paused(&s, &args, "before-commit", 4, "a.log");
        let (b, log_b) = start_paused(&s, &args, "before-commit", 4, "b.log");
        let results = [(a, log_a), (b, log_b)].map(|(mut child, log)| {
            let status = child.wait().unwrap();
            (status.success(), std::fs::read_to_string(log).unwrap())
        });
        let winners = results.iter().filter(|(ok, _)| *ok).count();
        assert_eq!(winners, 1, "round {round}: {results:?}");
        let (_, loser) = results.iter().find(|(ok, _)| !ok).unwrap();
        assert!(
            loser.contains(&format!("Delta table {out}: commit conflict")),
            "round {round}: {loser}"
        );
        assert!(loser.contains("nothing was committed"), "{loser}");
        assert_eq!(commits(&table).len(), round + 1);
        // the loser's files are gone: one release directory per version written
        assert_eq!(release_dirs(&table).len(), round + 1, "round {round}");
    }
}
