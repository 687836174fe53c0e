//! Transform and publish: the GeneralizedTable against a brute-force recoding and
//! suppression, `anon apply` end to end, every bad input of the policy/apply path (one clear
//! error, nothing written), and output atomicity under `kill -9`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::{Scratch, anon, repo, stderr};
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::publish;
use datafusion_anonymity_engine::release::Release;

use crate::reference::Rng;

/// One input row: an identifier, two quasi-identifiers (a 5-digit zip string, an age), a
/// sensitive disease and an insensitive value.
#[derive(Clone, Debug)]
struct Row {
    id: i64,
    zip: String,
    age: i64,
    disease: String,
    value: i64,
}

fn gen_rows(seed: u64, n: usize) -> Vec<Row> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|i| {
            // a few zip prefixes, skewed ages: some classes are rare at every level
            let prefix = ["476", "479", "130", "131"][rng.below(4) as usize];
            let spread = if rng.below(3) == 0 { 40 } else { 6 };
            let zip = format!("{prefix}{:02}", rng.below(spread));
            let age = 18 + (rng.below(30) + rng.below(40)) as i64;
            let disease = ["flu", "cold", "ulcer", "cancer", "asthma"][rng.below(5) as usize];
            Row {
                id: i as i64,
                zip,
                age,
                disease: disease.to_string(),
                value: rng.below(1000) as i64,
            }
        })
        .collect()
}

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("zip", DataType::Utf8, false),
        Field::new("age", DataType::Int64, false),
        Field::new("disease", DataType::Utf8, false),
        Field::new("value", DataType::Int64, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.id))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.zip.as_str()),
            )),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.age))),
            Arc::new(StringArray::from_iter_values(
                rows.iter().map(|r| r.disease.as_str()),
            )),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.value))),
        ],
    )
    .unwrap()
}

/// Writes `rows` as `files` Parquet files under `dir`.
fn write_parquet_dir(dir: &Path, rows: &[Row], files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    let chunk = rows.len().div_ceil(files);
    for (i, part) in rows.chunks(chunk.max(1)).enumerate() {
        let file = std::fs::File::create(dir.join(format!("part-{i}.parquet"))).unwrap();
        let batch = batch(part);
        let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
    }
}

// ---------------------------------------------------------------- brute force

/// zip with its last `level` characters masked (zips have 5 characters).
fn mask(zip: &str, level: usize) -> String {
    let keep = zip.chars().count().saturating_sub(level);
    zip.chars()
        .take(keep)
        .chain(std::iter::repeat_n('*', level.min(5)))
        .collect()
}

/// age at level 0..=3 of interval widths [5, 20] (level 3 = `*`): `[lo, hi)` labels.
fn age_label(age: i64, level: usize) -> String {
    match level {
        0 => age.to_string(),
        1 | 2 => {
            let width = if level == 1 { 5 } else { 20 };
            let lo = age.div_euclid(width) * width;
            format!("[{lo}, {})", lo + width)
        }
        _ => "*".to_string(),
    }
}

/// The rows the policy should publish: (zip, age, disease, value) per kept row, and how many
/// rows are suppressed. Classes below k are dropped (or masked).
fn expected(
    rows: &[Row],
    zip_level: usize,
    age_level: usize,
    k: usize,
    masked: bool,
) -> (Vec<(String, String, String, i64)>, usize) {
    let recoded: Vec<(String, String)> = rows
        .iter()
        .map(|r| (mask(&r.zip, zip_level), age_label(r.age, age_level)))
        .collect();
    let mut sizes: HashMap<&(String, String), usize> = HashMap::new();
    for key in &recoded {
        *sizes.entry(key).or_default() += 1;
    }
    let mut out = Vec::new();
    let mut suppressed = 0;
    for (row, key) in rows.iter().zip(&recoded) {
        if sizes[key] >= k {
            out.push((key.0.clone(), key.1.clone(), row.disease.clone(), row.value));
        } else {
            suppressed += 1;
            if masked {
                out.push(("*".into(), "*".into(), row.disease.clone(), row.value));
            }
        }
    }
    out.sort();
    (out, suppressed)
}

fn policy_text(
    input: &str,
    k: usize,
    suppression: &str,
    zip_level: usize,
    age_level: usize,
    max_suppression: f64,
) -> String {
    format!(
        r#"name = "patients"
[input]
path = "{input}"
[privacy]
k = {k}
max_suppression = {max_suppression}
suppression = "{suppression}"
[attributes]
id = {{ role = "identifier" }}
zip = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask", length = 5 }} }}
age = {{ role = "quasi_identifier", hierarchy = {{ kind = "interval", widths = [5, 20] }} }}
disease = {{ role = "sensitive" }}
value = {{ role = "insensitive" }}
[transformation]
zip = {zip_level}
age = {age_level}
"#
    )
}

/// (zip, age, disease, value) rows of a table or file, sorted.
async fn published_rows(ctx: &SessionContext, sql: &str) -> Vec<(String, String, String, i64)> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let mut out = Vec::new();
    for b in &batches {
        // Parquet reads strings back as Utf8View
        let utf8 =
            |i: usize| datafusion::arrow::compute::cast(b.column(i), &DataType::Utf8).unwrap();
        let (zip, age, disease) = (utf8(0), utf8(1), utf8(2));
        let (zip, age, disease) = (
            zip.as_string::<i32>(),
            age.as_string::<i32>(),
            disease.as_string::<i32>(),
        );
        let value = b.column(3).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            out.push((
                zip.value(i).to_string(),
                age.value(i).to_string(),
                disease.value(i).to_string(),
                value.value(i),
            ));
        }
    }
    out.sort();
    out
}

/// The GeneralizedTable over several Parquet files, with 1 and 4 partitions, drop and mask,
/// equals the brute-force recoding and suppression, and leaves no class below k; `publish`
/// writes the same rows to Parquet (round trip) and counts the same suppressed rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generalized_table_matches_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for seed in 1..=4u64 {
        let rows = gen_rows(seed, 300 + 97 * seed as usize);
        let input = dir.path().join(format!("input-{seed}"));
        write_parquet_dir(&input, &rows, 3);
        let mut rng = Rng(seed * 7919);
        for (partitions, masked) in [(1, false), (4, false), (4, true)] {
            let k = 2 + rng.below(5) as usize;
            let zip_level = rng.below(4) as usize;
            let age_level = rng.below(4) as usize;
            let suppression = if masked { "mask" } else { "drop" };
            let text = policy_text(
                &input.display().to_string(),
                k,
                suppression,
                zip_level,
                age_level,
                1.0,
            );
            let mut policy = Policy::from_toml("test.toml", dir.path(), &text).unwrap();
            let ctx = SessionContext::new_with_config(
                SessionConfig::new()
                    .with_target_partitions(partitions)
                    .with_batch_size(64),
            );
            datafusion_anonymity_engine::register(&ctx).unwrap();
            policy.register(&ctx).await.unwrap();
            let (want, want_suppressed) = expected(&rows, zip_level, age_level, k, masked);
            let got =
                published_rows(&ctx, "SELECT zip, age, disease, value FROM patients_anon").await;
            assert_eq!(
                got.len(),
                want.len(),
                "seed {seed} k {k} levels {zip_level},{age_level} {suppression}"
            );
            assert_eq!(
                got, want,
                "seed {seed} k {k} levels {zip_level},{age_level} {suppression}"
            );
            // property: no published class (masked rows aside) is below k
            let mut sizes: HashMap<(&str, &str), usize> = HashMap::new();
            for r in &got {
                if !(masked && r.0 == "*" && r.1 == "*") {
                    *sizes.entry((&r.0, &r.1)).or_default() += 1;
                }
            }
            assert!(sizes.values().all(|&s| s >= k), "a class below k = {k}");

            // round trip through publish: Parquet directory out, same rows, same count
            let out = dir
                .path()
                .join(format!("out-{seed}-{partitions}-{suppression}"));
            let levels = policy.transformation().unwrap();
            let published = publish::publish(
                &ctx,
                &policy,
                &Release::FullDomain(levels.clone()),
                &out.as_path().into(),
                false,
            )
            .await;
            if want_suppressed == rows.len() && !masked {
                // nothing would be left: refused, nothing written
                let err = published.unwrap_err().to_string();
                assert!(err.contains("suppresses all"), "{err}");
                assert!(!out.exists());
                cases += 1;
                continue;
            }
            let report = published.unwrap();
            assert_eq!(report.suppressed_rows as usize, want_suppressed);
            if !masked {
                assert_eq!(
                    report.verification.suppressed_rows as usize,
                    want_suppressed
                );
            }
            assert_eq!(report.input_rows as usize, rows.len());
            let written = SessionContext::new();
            written
                .register_parquet(
                    "w",
                    &format!("{}/", out.display()),
                    ParquetReadOptions::default(),
                )
                .await
                .unwrap();
            let back = published_rows(&written, "SELECT zip, age, disease, value FROM w").await;
            assert_eq!(back, want);
            cases += 1;
        }
    }
    assert_eq!(cases, 12);
}

/// The inner scan reads only what the query needs: selecting the insensitive column reads
/// neither the identifier nor the sensitive column (the quasi-identifiers only to find the
/// failing classes); a filter on a kept column reaches the Parquet scan.
#[tokio::test]
async fn projection_and_filters_reach_the_inner_scan() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input");
    write_parquet_dir(&input, &gen_rows(3, 200), 2);
    let text = policy_text(&input.display().to_string(), 2, "drop", 2, 1, 0.0);
    let mut policy = Policy::from_toml("test.toml", dir.path(), &text).unwrap();
    let ctx = SessionContext::new();
    policy.register(&ctx).await.unwrap();
    let explain = |sql: &str| {
        let ctx = ctx.clone();
        let sql = sql.to_string();
        async move {
            let batches = ctx
                .sql(&format!("EXPLAIN {sql}"))
                .await
                .unwrap()
                .collect()
                .await
                .unwrap();
            datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                .unwrap()
                .to_string()
        }
    };
    // the rows' scan and the failing classes' scan read the quasi-identifiers (to find the
    // classes of fewer than k = 2 rows) and the value, never id or disease
    let plan = explain("SELECT value FROM patients_anon").await;
    let scans: Vec<&str> = plan
        .lines()
        .filter(|l| l.contains("DataSourceExec"))
        .collect();
    assert_eq!(scans.len(), 2, "{plan}");
    for scan in &scans {
        let projection = scan.split("projection=[").nth(1).unwrap();
        assert!(
            !projection.contains("disease") && !projection.contains("id@"),
            "{scan}"
        );
    }
    assert!(scans.iter().any(|s| s.contains(", value]")), "{plan}");
    // the filter reaches the rows' scan (the failing classes are counted over every row)
    let plan = explain("SELECT zip FROM patients_anon WHERE value > 500").await;
    let scans: Vec<&str> = plan
        .lines()
        .filter(|l| l.contains("DataSourceExec"))
        .collect();
    assert!(
        scans.iter().any(|s| s.contains("predicate=value@")),
        "{plan}"
    );
    assert!(!scans.iter().any(|s| s.contains("disease")), "{plan}");
}

// ---------------------------------------------------------------- the CLI

const LI2007: &str = "id,zip,age,salary,disease
1,47677,29,3,gastric ulcer
2,47602,22,4,gastritis
3,47678,27,5,stomach cancer
4,47905,43,6,gastritis
5,47909,52,11,flu
6,47906,47,8,bronchitis
7,47605,30,7,bronchitis
8,47673,36,9,pneumonia
9,47607,32,10,stomach cancer
";

const ATTRIBUTES: &str = r#"id = { role = "identifier" }
zip = { role = "quasi_identifier", hierarchy = { kind = "mask" } }
age = { role = "quasi_identifier", hierarchy = { kind = "interval", widths = [10, 20] } }
salary = { role = "insensitive" }
disease = { role = "sensitive" }
"#;

/// A scratch directory with the 9-row Li et al. table as `li2007.csv`.
fn li2007() -> Scratch {
    let scratch = Scratch::new();
    scratch.write("li2007.csv", LI2007);
    scratch
}

/// A policy over li2007.csv with these attributes and transformation.
fn write_policy(scratch: &Scratch, attributes: &str, transformation: &str) -> String {
    scratch.write(
        "policy.toml",
        &format!(
            "[input]\npath = \"li2007.csv\"\n[privacy]\nk = 3\nmax_suppression = 0.5\n\
             [attributes]\n{attributes}[transformation]\n{transformation}"
        ),
    )
}

#[tokio::test]
async fn values_missing_from_a_tree_are_counted_over_the_whole_column() {
    // `anon apply` registers without the tree scan: the recoding refuses a missing value with
    // its batch's count, then the check counts the whole column
    let s = li2007();
    // rows 5 (47909) and 9 (47607) of li2007.csv have no leaf
    s.write(
        "zip.csv",
        "47677;476**;*\n47602;476**;*\n47678;476**;*\n47905;479**;*\n47906;479**;*\n47605;476**;*\n47673;476**;*\n",
    );
    let path = write_policy(
        &s,
        &ATTRIBUTES.replace(
            r#"{ kind = "mask" }"#,
            r#"{ kind = "tree", file = "zip.csv" }"#,
        ),
        "zip = 1\nage = 1\n",
    );
    let config = SessionConfig::new()
        .with_batch_size(4)
        .with_target_partitions(1);
    let ctx = SessionContext::new_with_config(config);
    let mut policy = Policy::from_file(Path::new(&path)).unwrap();
    policy.register_with(&ctx, false).await.unwrap();
    let levels = policy.transformation().unwrap();
    let out = s.path("out.parquet");
    let err = publish::publish(
        &ctx,
        &policy,
        &Release::FullDomain(levels.clone()),
        &out.as_path().into(),
        false,
    )
    .await
    .unwrap_err();
    // the recoding's error keeps its type through the write: `apply` recounts on it
    assert!(
        datafusion_anonymity::generalize::tree::MissingFromTree::is_cause_of(&err),
        "{err}"
    );
    let err = err.to_string();
    // batches of 4 rows: rows 5–8 hold one of the two
    assert!(
        err.contains("1 distinct value is missing from hierarchy"),
        "{err}"
    );
    let err = policy
        .check_tree_values(&ctx)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("2 distinct values are missing from hierarchy"),
        "{err}"
    );
    assert!(!out.exists());
    assert!(s.hidden().is_empty(), "{:?}", s.hidden());
}

/// Runs `anon apply` expecting a one-line error containing every one of `words`, nothing at
/// the output path, no temporary left over, and no raw data value in the message.
fn assert_refused(scratch: &Scratch, args: &[&str], out: &Path, words: &[&str]) {
    let output = anon(args);
    let err = stderr(&output);
    assert!(!output.status.success(), "succeeded: {args:?}");
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    assert!(err.starts_with("error: "), "{err}");
    for word in words {
        assert!(err.contains(word), "'{word}' missing from: {err}");
    }
    for value in ["47677", "47909", "gastritis", "flu"] {
        assert!(!err.contains(value), "raw value {value} in: {err}");
    }
    assert!(
        !out.exists() || out.is_file() && std::fs::read(out).unwrap() == b"keep",
        "output written"
    );
    assert!(
        scratch.hidden().is_empty(),
        "temporary left: {:?}",
        scratch.hidden()
    );
}

#[test]
fn apply_writes_verified_output_and_refuses_to_overwrite() {
    let s = li2007();
    let policy = write_policy(&s, ATTRIBUTES, "zip = 2\nage = 1\n");
    let out = s.path("out.parquet");
    let out_arg = out.display().to_string();
    let output = anon(&["apply", "--policy", &policy, "--out", &out_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // by hand (sql/generalized_table.slt): classes of 3, 3, 2, 1 rows at zip 2 / age 1; k = 3
    // drops the last two: 6 rows, 2 classes, k = 3, 3 rows suppressed
    assert!(stdout.contains("rows: 6 of 9 input rows"), "{stdout}");
    assert!(stdout.contains("classes: 2\n"), "{stdout}");
    assert!(stdout.contains("k: 3\n"), "{stdout}");
    assert!(stdout.contains("suppressed rows: 3 (33.33%)"), "{stdout}");
    assert!(out.is_file());
    // exists: refused without --overwrite, replaced with it
    std::fs::write(&out, b"keep").unwrap();
    assert_refused(
        &s,
        &["apply", "--policy", &policy, "--out", &out_arg],
        &out,
        &["exists", "--overwrite"],
    );
    let output = anon(&[
        "apply",
        "--policy",
        &policy,
        "--out",
        &out_arg,
        "--overwrite",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(std::fs::read(&out).unwrap().starts_with(b"PAR1"));
    assert!(s.hidden().is_empty());
}

#[test]
fn apply_refuses_more_suppression_than_allowed() {
    let s = li2007();
    let policy = s.write(
        "policy.toml",
        &format!(
            "[input]\npath = \"li2007.csv\"\n[privacy]\nk = 3\nmax_suppression = 0.3\n\
             [attributes]\n{ATTRIBUTES}[transformation]\nzip = 2\nage = 1\n"
        ),
    );
    // 3 of 9 rows suppressed > ⌊0.3 · 9⌋ = 2
    let out = s.path("out.parquet");
    assert_refused(
        &s,
        &[
            "apply",
            "--policy",
            &policy,
            "--out",
            &out.display().to_string(),
        ],
        &out,
        &["suppresses 3 of 9 rows", "limit of 2"],
    );
}

#[test]
fn bad_inputs_are_refused_with_one_clear_line_and_nothing_written() {
    let s = li2007();
    let out = s.path("out.parquet");
    let out_arg = out.display().to_string();
    let apply = |policy: &str| {
        vec![
            "apply".to_string(),
            "--policy".into(),
            policy.to_string(),
            "--out".into(),
            out_arg.clone(),
        ]
    };
    let run = |args: Vec<String>, words: &[&str]| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_refused(&s, &args, &out, words);
    };

    // a value of the data missing from its tree hierarchy: 2 of the 9 zips have no leaf
    s.write("zip.csv", "47677;476**;*\n47602;476**;*\n47678;476**;*\n47905;479**;*\n47906;479**;*\n47605;476**;*\n47673;476**;*\n");
    let policy = write_policy(
        &s,
        &ATTRIBUTES.replace(
            r#"{ kind = "mask" }"#,
            r#"{ kind = "tree", file = "zip.csv" }"#,
        ),
        "zip = 1\nage = 1\n",
    );
    run(apply(&policy), &["zip", "2 distinct value"]);

    // a ragged hierarchy file (line 2 has one level fewer)
    s.write("zip.csv", "47677;476**;*\n47602;*\n");
    let policy = write_policy(
        &s,
        &ATTRIBUTES.replace(
            r#"{ kind = "mask" }"#,
            r#"{ kind = "tree", file = "zip.csv" }"#,
        ),
        "zip = 1\nage = 1\n",
    );
    run(apply(&policy), &["zip.csv", "line 2"]);

    // an inconsistent one: 476** has two parents at level 2 (lines 1 and 2)
    s.write("zip.csv", "47677;476**;47***;*\n47602;476**;4****;*\n");
    run(apply(&policy), &["zip.csv", "line 2"]);

    // a level above the hierarchy's height (mask of length 5: levels 0 to 5)
    let policy = write_policy(&s, ATTRIBUTES, "zip = 9\nage = 1\n");
    run(apply(&policy), &["level 9", "zip"]);

    // a hierarchy kind that does not fit the column type
    let policy = write_policy(&s,
        &ATTRIBUTES.replace(
            r#"disease = { role = "sensitive" }"#,
            r#"disease = { role = "quasi_identifier", hierarchy = { kind = "interval", widths = [10] } }"#,
        ),
        "zip = 2\nage = 1\n",
    );
    run(apply(&policy), &["disease", "interval", "numeric"]);

    // an unknown column
    let policy = write_policy(
        &s,
        &format!("{ATTRIBUTES}nationality = {{ role = \"insensitive\" }}\n"),
        "zip = 2\n",
    );
    run(apply(&policy), &["nationality", "not a column"]);

    // a column without a role
    let policy = write_policy(
        &s,
        &ATTRIBUTES.replace("salary = { role = \"insensitive\" }\n", ""),
        "zip = 2\n",
    );
    run(apply(&policy), &["salary", "no role"]);

    // no quasi-identifier
    let policy = write_policy(
        &s,
        "id = { role = \"identifier\" }\nzip = { role = \"insensitive\" }\nage = { role = \"insensitive\" }\n\
         salary = { role = \"insensitive\" }\ndisease = { role = \"sensitive\" }\n",
        "",
    );
    run(apply(&policy), &["no quasi-identifier"]);

    // a malformed policy: the line is named
    let policy = s.write(
        "policy.toml",
        "[input]\npath = \"li2007.csv\"\n[privacy]\nk = \"five\"\n",
    );
    run(apply(&policy), &["policy.toml", "line 4"]);

    // the output is the input, or inside a directory input
    let policy = write_policy(&s, ATTRIBUTES, "zip = 2\nage = 1\n");
    let input = s.path("li2007.csv").display().to_string();
    let output = anon(&["apply", "--policy", &policy, "--out", &input, "--overwrite"]);
    assert!(
        !output.status.success() && stderr(&output).contains("is the input"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(s.path("li2007.csv")).unwrap(),
        LI2007
    );

    let data_dir = s.path("data");
    write_parquet_dir(&data_dir, &gen_rows(5, 50), 2);
    let policy = s.write(
        "dir_policy.toml",
        &policy_text(&data_dir.display().to_string(), 2, "drop", 2, 2, 1.0),
    );
    let inside = data_dir.join("out").display().to_string();
    let output = anon(&["apply", "--policy", &policy, "--out", &inside]);
    assert!(
        !output.status.success() && stderr(&output).contains("inside the input directory"),
        "{}",
        stderr(&output)
    );
    assert!(!data_dir.join("out").exists());
    // and an output that contains the input would delete it
    let parent = s.path("").display().to_string();
    let output = anon(&[
        "apply",
        "--policy",
        &policy,
        "--out",
        &parent,
        "--overwrite",
    ]);
    assert!(
        !output.status.success() && stderr(&output).contains("contains the input"),
        "{}",
        stderr(&output)
    );
    assert!(data_dir.join("part-0.parquet").exists());
}

// ------------------------------------------------- failing classes from the frequency set

/// Sorted (labels, rows) of failing-class batches: `__anon_key_<i>` as text (NULL = None),
/// then `__anon_class_rows`.
fn class_rows(batches: &[RecordBatch], qis: usize) -> Vec<(Vec<Option<String>>, i64)> {
    let mut out = Vec::new();
    for b in batches {
        let keys: Vec<_> = (0..qis)
            .map(|i| {
                let column = b.column_by_name(&format!("__anon_key_{i}")).unwrap();
                datafusion::arrow::compute::cast(column, &DataType::Utf8).unwrap()
            })
            .collect();
        let rows = b.column_by_name("__anon_class_rows").unwrap();
        let rows = rows.as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            let labels = keys
                .iter()
                .map(|k| {
                    let k = k.as_string::<i32>();
                    k.is_valid(r).then(|| k.value(r).to_string())
                })
                .collect();
            out.push((labels, rows.value(r)));
        }
    }
    out.sort();
    out
}

/// For `policy` (registered on `ctx`) and each node of `nodes`: the failing classes derived
/// from the frequency set equal those DataFusion finds with the provider's plan (same label
/// tuples, same sizes), with the same total and input rows. Returns how many nodes have
/// failing classes.
async fn check_failing_classes(
    ctx: &SessionContext,
    policy: &Policy,
    nodes: &[Vec<usize>],
) -> usize {
    let freq = datafusion_anonymity_engine::search::FrequencySet::build(
        ctx,
        policy.table_name(),
        &policy.quasi_identifiers(),
        &policy.requirements().constrained_attributes(),
    )
    .await
    .unwrap();
    let count = ctx
        .sql(&format!("SELECT count(*) FROM {}", policy.table_name()))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let input_rows = count[0].column(0).as_primitive::<Int64Type>().value(0) as u64;
    let qis = policy.quasi_identifiers().len();
    let mut with_failures = 0;
    for levels in nodes {
        let derived = datafusion_anonymity_engine::search::failing_classes(
            &freq,
            policy.requirements(),
            levels,
        )
        .unwrap();
        let table = policy
            .generalized_table(ctx, Release::FullDomain(levels.to_vec()))
            .await
            .unwrap();
        let plan = table.failing_classes_plan().unwrap();
        let mut want = ctx
            .execute_logical_plan(plan)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        // drop mode with t: the provider settles on the rows (SQL) what the search settles on
        // the frequency set
        if policy.requirements().depends_on_table() {
            table.settle_failing(ctx, &mut want).await.unwrap();
        }
        let want = class_rows(&want, qis);
        let got = class_rows(&derived.batches, qis);
        assert_eq!(got, want, "levels {levels:?}");
        let total: i64 = want.iter().map(|(_, n)| n).sum();
        assert_eq!(derived.suppressed_rows, total as u64, "levels {levels:?}");
        assert_eq!(derived.input_rows, input_rows);
        assert_eq!(
            derived.quasi_identifiers,
            table
                .generalization()
                .quasi_identifiers()
                .iter()
                .map(|q| q.to_string())
                .collect::<Vec<_>>()
        );
        with_failures += usize::from(!want.is_empty());
    }
    with_failures
}

/// The failing classes the search derives for publishing (`search::failing_classes`) are
/// those of the provider's failing-classes plan run by DataFusion, on random data with NULL
/// quasi-identifiers and sensitive values (k only; k and distinct, entropy l; k and t) and
/// on the Adult data (k only; k and distinct l; k and t), at every node of the random
/// table's lattice and at some of Adult's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_classes_from_the_search_match_the_provider() {
    let dir = tempfile::tempdir().unwrap();
    let privacies = [
        "k = 4",
        "k = 2\nl_diversity = { kind = \"distinct\", l = 2 }",
        "k = 3\nl_diversity = { kind = \"entropy\", l = 1.8 }",
        "k = 2\nt_closeness = { kind = \"equal\", t = 0.35 }",
    ];
    let input = random_input(dir.path());
    let nodes: Vec<Vec<usize>> = (0..=5)
        .flat_map(|z| (0..=3).map(move |a| vec![z, a]))
        .collect();
    let mut with_failures = 0;
    for privacy in privacies {
        let text = random_policy(&input, privacy, "drop");
        let mut policy = Policy::from_toml("random.toml", dir.path(), &text).unwrap();
        let ctx = SessionContext::new_with_config(
            SessionConfig::new()
                .with_target_partitions(4)
                .with_batch_size(64),
        );
        datafusion_anonymity_engine::register(&ctx).unwrap();
        policy.register(&ctx).await.unwrap();
        with_failures += check_failing_classes(&ctx, &policy, &nodes).await;
    }
    // most nodes fail some class, so the comparison is not between empty lists
    assert!(with_failures >= 40, "{with_failures}");

    // Adult: 8 tree hierarchies, salary-class sensitive
    let adult = std::fs::read_to_string(repo("examples/adult/policy.toml")).unwrap();
    let adult = adult
        .split("\n[transformation]")
        .next()
        .unwrap()
        .replace("max_suppression = 0.02", "max_suppression = 1.0");
    let nodes = [
        vec![0, 0, 0, 0, 0, 0, 0, 0],
        vec![0, 2, 1, 1, 3, 1, 1, 1],
        vec![1, 1, 0, 2, 2, 0, 2, 1],
        vec![1, 4, 1, 2, 3, 2, 2, 2],
    ];
    let mut with_failures = 0;
    for privacy in [
        "k = 5",
        "k = 3\nl_diversity = { kind = \"distinct\", l = 2 }",
        "k = 2\nt_closeness = { kind = \"equal\", t = 0.15 }",
    ] {
        let text = adult.replace("k = 5 ", &format!("{privacy}\n# "));
        let mut policy = Policy::from_toml("adult.toml", &repo("examples/adult"), &text).unwrap();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
        datafusion_anonymity_engine::register(&ctx).unwrap();
        policy.register(&ctx).await.unwrap();
        with_failures += check_failing_classes(&ctx, &policy, &nodes).await;
    }
    assert!(with_failures >= 8, "{with_failures}");
}

/// Rows of zip, age, disease as text (NULL as None), sorted.
async fn text_rows(ctx: &SessionContext, sql: &str) -> Vec<[Option<String>; 3]> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let mut rows = Vec::new();
    for b in &batches {
        let text: Vec<_> = (0..3)
            .map(|i| datafusion::arrow::compute::cast(b.column(i), &DataType::Utf8).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            rows.push(std::array::from_fn(|i| {
                let column = text[i].as_string::<i32>();
                column.is_valid(r).then(|| column.value(r).to_string())
            }));
        }
    }
    rows.sort();
    rows
}

/// `publish` (classes counted in memory, rows suppressed on their way to the writer, written
/// classes measured there) writes exactly the rows of the GeneralizedTable view (a join
/// against the aggregated classes): two independent implementations, on random data with
/// NULLs in every column, drop and mask, k alone and with l, at several levels; and its k is
/// the smallest class of those rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_writes_the_rows_of_the_generalized_table() {
    let dir = tempfile::tempdir().unwrap();
    let input = random_input(dir.path());
    let mut compared = 0;
    for (privacy, suppression) in [
        ("k = 4", "drop"),
        ("k = 6", "mask"),
        (
            "k = 2\nl_diversity = { kind = \"distinct\", l = 2 }",
            "mask",
        ),
    ] {
        let text = random_policy(&input, privacy, suppression);
        let mut policy = Policy::from_toml("random.toml", dir.path(), &text).unwrap();
        let ctx = SessionContext::new_with_config(
            SessionConfig::new()
                .with_target_partitions(3)
                .with_batch_size(50),
        );
        datafusion_anonymity_engine::register(&ctx).unwrap();
        policy.register(&ctx).await.unwrap();
        for levels in [vec![0, 0], vec![1, 1], vec![2, 0], vec![3, 2], vec![5, 3]] {
            let table = policy
                .generalized_table(&ctx, Release::FullDomain(levels.clone()))
                .await
                .unwrap();
            ctx.register_table("view", Arc::new(table)).unwrap();
            let want = text_rows(&ctx, "SELECT zip, age, disease FROM view").await;
            ctx.deregister_table("view").unwrap();
            let out = dir.path().join(format!("out-{compared}.parquet"));
            let Ok(report) = publish::publish(
                &ctx,
                &policy,
                &Release::FullDomain(levels.clone()),
                &out.as_path().into(),
                false,
            )
            .await
            else {
                // refused (everything suppressed): the view is empty too
                assert!(want.is_empty(), "{privacy} {suppression} {levels:?}");
                continue;
            };
            let written = SessionContext::new();
            written
                .register_parquet("w", out.to_str().unwrap(), ParquetReadOptions::default())
                .await
                .unwrap();
            let got = text_rows(&written, "SELECT zip, age, disease FROM w").await;
            assert_eq!(got, want, "{privacy} {suppression} {levels:?}");
            // k: the smallest class of the written rows (masked rows' all-* class aside
            // when it is below k, as the verification excludes it)
            let mut sizes: HashMap<(Option<String>, Option<String>), u64> = HashMap::new();
            for [zip, age, _] in &got {
                *sizes.entry((zip.clone(), age.clone())).or_default() += 1;
            }
            let star = (Some("*".to_string()), Some("*".to_string()));
            let k = policy.requirements().k;
            let smallest = sizes
                .iter()
                .filter(|(key, size)| !(suppression == "mask" && **key == star && **size < k))
                .map(|(_, &size)| size)
                .min()
                .unwrap();
            assert_eq!(
                report.verification.k, smallest,
                "{privacy} {suppression} {levels:?}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 12, "{compared}");
}

/// A random table (2,000 rows) as `random.parquet` under `dir`: zip (mask), age (interval),
/// disease (sensitive), some NULLs in each.
fn random_input(dir: &Path) -> PathBuf {
    let mut rng = Rng(20261123);
    let n = 2000;
    let (mut zips, mut ages, mut diseases) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..n {
        let prefix = ["476", "479", "130"][rng.below(3) as usize];
        let spread = if rng.below(3) == 0 { 30 } else { 5 };
        let zip = format!("{prefix}{:02}", rng.below(spread));
        zips.push((rng.below(40) != 0).then_some(zip));
        ages.push((rng.below(50) != 0).then(|| 18 + (rng.below(30) + rng.below(40)) as i64));
        let disease = ["flu", "cold", "ulcer", "cancer", "asthma"][rng.below(5) as usize];
        // one disease far more frequent, so t and entropy l fail some classes
        let disease = if rng.below(3) == 0 { "flu" } else { disease };
        diseases.push((rng.below(30) != 0).then_some(disease));
    }
    let schema = Arc::new(Schema::new(vec![
        Field::new("zip", DataType::Utf8, true),
        Field::new("age", DataType::Int64, true),
        Field::new("disease", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(StringArray::from(zips)),
            Arc::new(Int64Array::from(ages)),
            Arc::new(StringArray::from(diseases)),
        ],
    )
    .unwrap();
    let input = dir.join("random.parquet");
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&input).unwrap(), schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    input
}

/// The policy of [`random_input`] with `privacy` (k, l, t lines), any suppression allowed.
fn random_policy(input: &Path, privacy: &str, suppression: &str) -> String {
    format!(
        "name = \"random\"\n[input]\npath = \"{}\"\n[privacy]\n{privacy}\nmax_suppression = 1.0\n\
         suppression = \"{suppression}\"\n[attributes]\n\
         zip = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"mask\", length = 5 }} }}\n\
         age = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"interval\", widths = [5, 20] }} }}\n\
         disease = {{ role = \"sensitive\" }}\n",
        input.display()
    )
}

/// `publish_with_failing_classes` with the classes derived from the search publishes what
/// `publish` does (drop and mask: same suppressed rows, same output rows), and refuses
/// classes of other levels, classes that miss a failing class (verification) and a wrong
/// suppressed count (rows unaccounted for); nothing is written when it refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_with_derived_failing_classes_matches_publish() {
    let dir = tempfile::tempdir().unwrap();
    let input = random_input(dir.path());
    for suppression in ["drop", "mask"] {
        let text = random_policy(
            &input,
            "k = 2\nl_diversity = { kind = \"distinct\", l = 2 }",
            suppression,
        );
        let mut policy = Policy::from_toml("random.toml", dir.path(), &text).unwrap();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(4));
        datafusion_anonymity_engine::register(&ctx).unwrap();
        policy.register(&ctx).await.unwrap();
        let freq = datafusion_anonymity_engine::search::FrequencySet::build(
            &ctx,
            policy.table_name(),
            &policy.quasi_identifiers(),
            &policy.requirements().constrained_attributes(),
        )
        .await
        .unwrap();
        let levels = vec![2, 1];
        let derive = |levels: &[usize]| {
            datafusion_anonymity_engine::search::failing_classes(
                &freq,
                policy.requirements(),
                levels,
            )
            .unwrap()
        };
        let plain_out = dir.path().join(format!("plain-{suppression}.parquet"));
        let plain = publish::publish(
            &ctx,
            &policy,
            &Release::FullDomain(levels.clone()),
            &plain_out.as_path().into(),
            false,
        )
        .await
        .unwrap();
        let out = dir.path().join(format!("derived-{suppression}.parquet"));
        let derived = publish::publish_with_failing_classes(
            &ctx,
            &policy,
            &Release::FullDomain(levels.clone()),
            Some(derive(&levels)),
            &out.as_path().into(),
            false,
        )
        .await
        .unwrap();
        assert!(plain.suppressed_rows > 0);
        assert_eq!(derived.suppressed_rows, plain.suppressed_rows);
        assert_eq!(derived.input_rows, plain.input_rows);
        assert_eq!(derived.verification.rows, plain.verification.rows);
        let read = SessionContext::new();
        for (name, path) in [("plain", &plain_out), ("derived", &out)] {
            read.register_parquet(
                name,
                &path.display().to_string(),
                ParquetReadOptions::default(),
            )
            .await
            .unwrap();
        }
        let sql = |table: &str| format!("SELECT zip, age, disease, CAST(0 AS BIGINT) FROM {table}");
        assert_eq!(
            published_rows(&read, &sql("derived")).await,
            published_rows(&read, &sql("plain")).await
        );

        let refused = dir.path().join(format!("refused-{suppression}.parquet"));
        let refused_location = refused.as_path().into();
        let release = Release::FullDomain(levels.clone());
        let attempt = |failing| {
            publish::publish_with_failing_classes(
                &ctx,
                &policy,
                &release,
                Some(failing),
                &refused_location,
                false,
            )
        };
        let err = attempt(derive(&[2, 2])).await.unwrap_err().to_string();
        assert!(err.contains("not those of this policy"), "{err}");
        let mut missing = derive(&levels);
        missing.batches = vec![missing.batches[0].slice(0, 0)];
        let err = attempt(missing).await.unwrap_err().to_string();
        assert!(err.contains("fails the policy"), "{err}");
        if suppression == "drop" {
            let mut miscounted = derive(&levels);
            miscounted.suppressed_rows -= 1;
            let err = attempt(miscounted).await.unwrap_err().to_string();
            assert!(err.contains("were expected"), "{err}");
        }
        assert!(!refused.exists());
    }
}

/// The Adult policy of TOML `text` (relative paths from `examples/adult`), registered in a
/// session of two partitions with the crate's functions.
/// Publishes `release` in input order and shuffled, and checks that each writes exactly the
/// rows of the release's view (`EXCEPT ALL` both ways), whether the rows travel by label or
/// by class key on the way; the rows written.
async fn assert_writes_what_it_serves(
    ctx: &SessionContext,
    policy: &Policy,
    release: &Release,
    failing: Option<datafusion_anonymity_engine::search::FailingClasses>,
    tag: &str,
) -> i64 {
    use datafusion_anonymity_engine::publish::RowOrder;
    let dir = tempfile::tempdir().unwrap();
    let view = policy
        .generalized_table(ctx, release.clone())
        .await
        .unwrap();
    ctx.register_table("served", Arc::new(view)).unwrap();
    let count = async |sql: &str| -> i64 {
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        batches[0].column(0).as_primitive::<Int64Type>().value(0)
    };
    let input_rows = count(&format!("SELECT count(*) FROM \"{}\"", policy.table_name())).await;
    let columns = ctx
        .table("served")
        .await
        .unwrap()
        .schema()
        .fields()
        .iter()
        .map(|f| format!("\"{}\"", f.name()))
        .collect::<Vec<_>>()
        .join(", ");
    let mut written_rows = Vec::new();
    for order in [RowOrder::Input, RowOrder::Shuffled(5)] {
        let case = format!("{tag}, {order:?}");
        let out = dir.path().join(format!("{}.parquet", order.name()));
        let report = publish::publish_ordered(
            ctx,
            policy,
            release,
            failing.clone(),
            &out.as_path().into(),
            false,
            order,
        )
        .await
        .unwrap();
        ctx.register_parquet("written", out.to_str().unwrap(), Default::default())
            .await
            .unwrap();
        let written = count("SELECT count(*) FROM written").await;
        assert_eq!(
            written,
            count("SELECT count(*) FROM served").await,
            "{case}"
        );
        assert_eq!(report.verification.rows as i64, written, "{case}");
        assert_eq!(report.input_rows as i64, input_rows, "{case}");
        written_rows.push(written);
        // as multisets: each distinct row with its count (an `EXCEPT ALL` of the rows
        // themselves pairs equal rows quadratically, and a release has many)
        let counted = |table: &str| {
            format!("SELECT {columns}, count(*) AS n FROM {table} GROUP BY {columns}")
        };
        for (a, b) in [("written", "served"), ("served", "written")] {
            let sql = format!(
                "SELECT count(*) FROM ({} EXCEPT {})",
                counted(a),
                counted(b)
            );
            assert_eq!(count(&sql).await, 0, "{case}: rows of {a} not in {b}");
        }
        ctx.deregister_table("written").unwrap();
    }
    ctx.deregister_table("served").unwrap();
    written_rows[0]
}

/// A full-domain release, shuffled, travels by written class key (`publish/expand.rs`):
/// Adult at the example's transformation (some classes under k), dropped and masked;
/// and a table with NULL labels, read in three partitions (one of them empty), with failing
/// classes of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_domain_release_writes_the_rows_its_view_serves() {
    for suppression in ["drop", "mask"] {
        let (policy, ctx) = adult_suppressing(suppression).await;
        let release = Release::FullDomain(policy.transformation().unwrap());
        let tag = format!("Adult, {suppression}");
        let written = assert_writes_what_it_serves(&ctx, &policy, &release, None, &tag).await;
        // some classes fail at this transformation: dropped, their rows are missing
        match suppression {
            "drop" => assert!(written < 30162, "{tag}: nothing dropped"),
            _ => assert_eq!(written, 30162, "{tag}"),
        }
    }

    // 3,000 rows in row groups of 1,200, read in three partitions; `a` is NULL in every 7th
    // row
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("nulls.parquet");
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Utf8, true),
        Field::new("c", DataType::Utf8, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let mut rng = Rng(11);
    let rows = 3000;
    let a: StringArray = (0..rows)
        .map(|i| (i % 7 != 0).then(|| format!("{:03}", rng.below(300))))
        .collect();
    let c: StringArray = (0..rows)
        .map(|_| Some(["x", "y", "z"][rng.below(3) as usize]))
        .collect();
    let s_values: StringArray = (0..rows)
        .map(|_| Some(format!("s{}", rng.below(5))))
        .collect();
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![Arc::new(a), Arc::new(c), Arc::new(s_values)],
    )
    .unwrap();
    let props = datafusion::parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(1200))
        .build();
    let mut writer =
        ArrowWriter::try_new(std::fs::File::create(&input).unwrap(), schema, Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    for suppression in ["drop", "mask"] {
        let text = format!(
            r#"name = "nulls"
[input]
path = "nulls.parquet"
[privacy]
k = 4
max_suppression = 1.0
suppression = "{suppression}"
[attributes]
a = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask", length = 3 }} }}
c = {{ role = "quasi_identifier", hierarchy = {{ kind = "tree", rows = [["x", "*"], ["y", "*"], ["z", "*"]] }} }}
s = {{ role = "sensitive" }}
[transformation]
a = 0
c = 0
"#
        );
        let mut policy = Policy::from_toml("nulls.toml", dir.path(), &text).unwrap();
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3));
        datafusion_anonymity_engine::register(&ctx).unwrap();
        policy.register(&ctx).await.unwrap();
        let release = Release::FullDomain(policy.transformation().unwrap());
        let count = async |sql: &str| -> i64 {
            let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
            batches[0].column(0).as_primitive::<Int64Type>().value(0)
        };
        // the rows of classes under k, counted by a plain GROUP BY (NULL a class of its own)
        let failing = count(
            "SELECT coalesce(sum(n), 0) FROM (SELECT count(*) AS n FROM nulls GROUP BY a, c \
             HAVING count(*) < 4)",
        )
        .await;
        assert!(failing > 0, "some classes fail");
        let expected = match suppression {
            "drop" => rows as i64 - failing,
            _ => rows as i64,
        };
        let tag = format!("NULL labels, {suppression}");
        let written = assert_writes_what_it_serves(&ctx, &policy, &release, None, &tag).await;
        assert_eq!(written, expected, "{tag}");
    }
}

async fn adult_registered(text: &str) -> (Policy, SessionContext) {
    let mut policy = Policy::from_toml("adult.toml", &repo("examples/adult"), text).unwrap();
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(2));
    datafusion_anonymity_engine::register(&ctx).unwrap();
    policy.register(&ctx).await.unwrap();
    (policy, ctx)
}

/// The example Adult policy with `suppression = "<suppression>"`, registered.
async fn adult_suppressing(suppression: &str) -> (Policy, SessionContext) {
    let adult = std::fs::read_to_string(repo("examples/adult/policy.toml")).unwrap();
    let set = "suppression = \"drop\"";
    assert!(adult.contains(set), "the example policy sets {set}");
    let text = adult.replace(set, &format!("suppression = \"{suppression}\""));
    adult_registered(&text).await
}

#[test]
fn sql_json_output_keeps_null_keys() {
    // two rows, the second with a NULL: both lines carry both keys
    let output = anon(&[
        "sql",
        "--format",
        "json",
        "SELECT column1 AS a, column2 AS b FROM (VALUES (1, 'x'), (2, NULL))",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines,
        [r#"{"a":1,"b":"x"}"#, r#"{"a":2,"b":null}"#],
        "{text}"
    );
}

/// The progress counters of a publication reach the totals they announce: the count of the
/// classes scans the input once, whether it counts in memory (k alone) or by SQL
/// (l-diversity), and stays 0 when the failing classes are given; the shuffle reads every
/// input row, suppressed or not; the writer gets the rows kept (every row when masked). Rows
/// are dropped or masked in every case, so the totals differ.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn publish_progress_reaches_its_totals() {
    use datafusion_anonymity_engine::publish::{PublishProgress, RowOrder};
    let dir = tempfile::tempdir().unwrap();
    let adult = std::fs::read_to_string(repo("examples/adult/policy.toml")).unwrap();
    let cases = [
        ("k = 5", "drop", false, RowOrder::Shuffled(3)),
        ("k = 5", "mask", false, RowOrder::Input),
        ("k = 5", "drop", true, RowOrder::Input),
        (
            "k = 3\nl_diversity = { kind = \"distinct\", l = 2 }",
            "drop",
            false,
            RowOrder::Shuffled(3),
        ),
        (
            "k = 3\nl_diversity = { kind = \"distinct\", l = 2 }",
            "mask",
            true,
            RowOrder::Shuffled(3),
        ),
    ];
    for (i, (privacy, suppression, given, order)) in cases.into_iter().enumerate() {
        let case = format!("{privacy}, {suppression}, given {given}, {order:?}");
        let text = adult
            .replace("k = 5 ", &format!("{privacy}\n# "))
            .replace("max_suppression = 0.02", "max_suppression = 0.1")
            .replace(
                "suppression = \"drop\"",
                &format!("suppression = \"{suppression}\""),
            );
        let (policy, ctx) = adult_registered(&text).await;
        let release = Release::FullDomain(policy.transformation().unwrap());
        let failing = if given {
            let freq = policy.frequency_set(&ctx, None).await.unwrap();
            let levels = release.levels().unwrap();
            Some(
                datafusion_anonymity_engine::search::failing_classes(
                    &freq,
                    policy.requirements(),
                    levels,
                )
                .unwrap(),
            )
        } else {
            None
        };
        let progress = PublishProgress::new();
        let out = dir.path().join(format!("out-{i}.parquet"));
        let report = publish::publish_observed(
            &ctx,
            &policy,
            &release,
            failing,
            &out.as_path().into(),
            false,
            order,
            Some(Arc::clone(&progress)),
        )
        .await
        .unwrap();
        let n = report.input_rows;
        assert_eq!(n, 30162, "{case}");
        assert!(report.suppressed_rows > 0, "{case}");
        let classes = if given { 0 } else { n };
        assert_eq!(progress.classes.rows(), classes, "{case}");
        assert_eq!(progress.classes.total(), None, "{case}");
        let (shuffled, shuffled_total) = match order {
            RowOrder::Shuffled(_) => (n, Some(n)),
            RowOrder::Input => (0, None),
        };
        assert_eq!(progress.shuffled.rows(), shuffled, "{case}");
        assert_eq!(progress.shuffled.total(), shuffled_total, "{case}");
        let written = if suppression == "drop" {
            n - report.suppressed_rows
        } else {
            n
        };
        assert_eq!(progress.written.rows(), written, "{case}");
        assert_eq!(progress.written.total(), Some(written), "{case}");
    }
}

/// `anon apply -q` prints no progress and no timings: on the bundled Adult policy, whose
/// transformation erases two quasi-identifiers, stderr holds only those two warnings.
#[test]
fn apply_quiet_prints_nothing_but_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let policy = repo("examples/adult/policy.toml").display().to_string();
    let run = |name: &str, quiet: bool| {
        let out = dir.path().join(name).display().to_string();
        let mut args = vec!["apply", "--policy", &policy, "--out", &out, "--seed", "1"];
        if quiet {
            args.push("-q");
        }
        let output = anon(&args);
        assert!(output.status.success(), "{}", stderr(&output));
        stderr(&output)
    };
    let loud = run("loud.parquet", false);
    assert!(loud.contains("time: input"), "{loud}");
    let quiet = run("quiet.parquet", true);
    let lines: Vec<&str> = quiet.lines().collect();
    assert_eq!(
        lines,
        [
            "warning: quasi-identifier 'race' is erased entirely: level 1 publishes every value as *",
            "warning: quasi-identifier 'education' is erased entirely: level 3 publishes every value as *",
        ],
        "{quiet}"
    );
}

/// A local release is published by class key (the labels made from each row's key just
/// before the writer), while the view serves the labelling function's labels: both must give
/// the same rows. Mondrian on Adult (k = 5, up to 2 % of outliers suppressed, so some rows
/// are suppressed by the release itself), dropped or masked, shuffled or in input order: the
/// written rows equal the view's as multisets (see [`assert_writes_what_it_serves`]), and the
/// counts add up (dropped: the view's rows; masked: every input row).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_release_writes_the_rows_its_view_serves() {
    use datafusion_anonymity_engine::search::local::{LocalAlgorithm, LocalOptions};
    use datafusion_anonymity_engine::search::{Method, Metric};
    for suppression in ["drop", "mask"] {
        let (policy, ctx) = adult_suppressing(suppression).await;
        let freq = policy.frequency_set(&ctx, None).await.unwrap();
        let decision = datafusion_anonymity_engine::search::decide(
            &freq,
            policy.requirements(),
            Method::Local(LocalAlgorithm::Mondrian),
            Metric::Loss,
            LocalOptions::default(),
            &mut |_, _| {},
        )
        .unwrap();
        let Release::Local(local) = &decision.release else {
            panic!("Mondrian gives a local release");
        };
        assert!(
            local.suppressed_rows() > 0,
            "the release suppresses outliers"
        );
        let expected = match suppression {
            "drop" => 30162 - local.suppressed_rows() as i64,
            _ => 30162,
        };
        let failing = Some(decision.failing.clone());
        let tag = format!("Mondrian, {suppression}");
        let written =
            assert_writes_what_it_serves(&ctx, &policy, &decision.release, failing, &tag).await;
        assert_eq!(written, expected, "{tag}");
    }
}
