//! `anon anonymize` with a perturbation policy, end to end: the CASC Census set
//! microaggregated (MDAV's published IL), the written file re-measured here with plain SQL,
//! reproducibility, suppression of NULLs, noise, swapping and PRAM, and every bad input of
//! the issue refused with one clear message and nothing written.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

use crate::{anon, read_json, stderr};

pub(super) fn census() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/casc/census.csv")
}

/// A policy with `privacy` and `extra` sections over `input`, every column of `attributes`
/// (name, TOML inline table) listed.
pub(super) fn policy(
    dir: &Path,
    input: &Path,
    privacy: &str,
    attributes: &[(&str, &str)],
) -> String {
    let mut text = format!(
        "[input]\npath = \"{}\"\n[privacy]\nmethod = \"perturbation\"\n{privacy}\n[attributes]\n",
        input.display()
    );
    for (name, spec) in attributes {
        text.push_str(&format!("{name} = {spec}\n"));
    }
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

pub(super) fn census_columns() -> Vec<String> {
    std::fs::read_to_string(census())
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(str::to_string)
        .collect()
}

fn anonymize(policy: &str, out: &Path, report: &Path, seed: &str) -> Output {
    crate::anonymize_quietly(policy, out, Some(report), &["--seed", seed])
}

/// A session with the release at `out` as `p` and its CSV input as `o`.
async fn published_and_original(out: &Path, input: &Path) -> SessionContext {
    let ctx = SessionContext::new();
    ctx.register_parquet("p", out.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    ctx.register_csv("o", input.to_str().unwrap(), CsvReadOptions::default())
        .await
        .unwrap();
    ctx
}

async fn scalar(ctx: &SessionContext, sql: &str) -> f64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let column = cast(batches[0].column(0), &DataType::Float64).unwrap();
    column.as_primitive::<Float64Type>().value(0)
}

/// The Census set microaggregated by MDAV at k = 3: the report's IL is the published 5.69
/// (examples/casc/README.md), the written file has every record, every class of equal
/// published values holds ≥ 3 rows, and the published means keep each attribute's total
/// (a group's mean times its size is its sum), recounted here against the original CSV.
#[tokio::test]
async fn census_microaggregated_by_mdav_has_the_published_information_loss() {
    let dir = tempfile::tempdir().unwrap();
    let columns = census_columns();
    let attributes: Vec<(&str, &str)> = columns
        .iter()
        .map(|c| {
            (
                c.as_str(),
                "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
            )
        })
        .collect();
    let policy = policy(
        dir.path(),
        &census(),
        "k = 3\n[perturbation]\nalgorithm = \"mdav\"",
        &attributes,
    );
    let out = dir.path().join("census.parquet");
    let report_path = dir.path().join("report.json");
    let output = anonymize(&policy, &out, &report_path, "7");
    assert!(output.status.success(), "{}", stderr(&output));
    let report = read_json(&report_path);
    let il = report["microaggregation"]["information_loss"]
        .as_f64()
        .unwrap();
    assert!((il - 5.69).abs() < 0.005, "IL {il}");
    assert_eq!(report["input_rows"], 1080);
    assert_eq!(report["verification"]["k"].as_u64().unwrap(), 3);
    assert!(
        report.get("seed").is_none(),
        "the seed is as secret as the data"
    );

    let ctx = SessionContext::new();
    ctx.register_parquet(
        "published",
        out.to_str().unwrap(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    ctx.register_csv(
        "original",
        census().to_str().unwrap(),
        CsvReadOptions::default(),
    )
    .await
    .unwrap();
    assert_eq!(scalar(&ctx, "SELECT count(*) FROM published").await, 1080.0);
    let keys: Vec<String> = columns.iter().map(|c| format!("\"{c}\"")).collect();
    let smallest = scalar(
        &ctx,
        &format!(
            "SELECT min(c) FROM (SELECT count(*) c FROM published GROUP BY {})",
            keys.join(", ")
        ),
    )
    .await;
    assert!(smallest >= 3.0, "a class of {smallest}");
    for c in &columns {
        let published = scalar(&ctx, &format!("SELECT sum(\"{c}\") FROM published")).await;
        let original = scalar(&ctx, &format!("SELECT sum(\"{c}\") FROM original")).await;
        assert!(
            (published - original).abs() <= 1e-6 * original.abs().max(1.0),
            "{c}: {published} vs {original}"
        );
    }
}

/// The same policy, input and seed give the same bytes; another seed another file; `anon
/// apply` the same bytes as `anon anonymize`.
#[test]
fn the_same_seed_gives_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let policy = policy(
        dir.path(),
        &census(),
        "k = 5",
        &[
            (
                "AFNLWGT",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
            ),
            (
                "AGI",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.1 } }",
            ),
            (
                "EMCONTRB",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"rank_swap\", p = 5 } }",
            ),
            (
                "FEDTAX",
                "{ role = \"sensitive\", perturbation = { kind = \"permute\" } }",
            ),
            ("PTOTVAL", "{ role = \"insensitive\" }"),
            ("STATETAX", "{ role = \"identifier\" }"),
            ("TAXINC", "{ role = \"insensitive\" }"),
            ("POTHVAL", "{ role = \"insensitive\" }"),
            ("INTVAL", "{ role = \"insensitive\" }"),
            ("PEARNVAL", "{ role = \"insensitive\" }"),
            ("FICA", "{ role = \"insensitive\" }"),
            ("WSALVAL", "{ role = \"insensitive\" }"),
            ("ERNVAL", "{ role = \"insensitive\" }"),
        ],
    );
    let run = |name: &str, seed: &str| {
        let out = dir.path().join(name);
        let output = anonymize(
            &policy,
            &out,
            &dir.path().join(format!("{name}.json")),
            seed,
        );
        assert!(output.status.success(), "{}", stderr(&output));
        std::fs::read(out).unwrap()
    };
    let first = run("a.parquet", "11");
    assert_eq!(first, run("b.parquet", "11"));
    assert_ne!(first, run("c.parquet", "12"));

    // `anon apply` publishes the policy as `anonymize` does: the same bytes, the same report
    let applied = dir.path().join("d.parquet");
    let apply = |extra: &[&str]| {
        let mut args = vec!["apply", "--quiet", "--policy", &policy, "--seed", "11"];
        let (out, json) = (
            applied.display().to_string(),
            dir.path().join("d.json").display().to_string(),
        );
        args.extend(["--out", &out, "--report", &json]);
        args.extend(extra);
        anon(&args)
    };
    let output = apply(&[]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(first, std::fs::read(&applied).unwrap());
    let (anonymized, applied_report) = (
        read_json(dir.path().join("a.parquet.json")),
        read_json(dir.path().join("d.json")),
    );
    assert_eq!(anonymized["attributes"], applied_report["attributes"]);
    assert_eq!(anonymized["utility"], applied_report["utility"]);
    // a saved recoding generalizes: refused, naming the option, nothing written
    std::fs::remove_file(&applied).unwrap();
    let output = apply(&["--recoding", "saved.json"]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--recoding generalizes quasi-identifiers"),
        "{}",
        stderr(&output)
    );
    assert!(!applied.exists());
}

/// A small table by hand, k = 2:
///
/// | id | x    | y  | city |
/// |----|------|----|------|
/// | 1  | 1    | 10 | a    |
/// | 2  | 2    | 11 | a    |
/// | 3  | NULL | 12 | b    |
/// | 4  | 3    | 13 | b    |
/// | 5  | 4    | 14 | b    |
///
/// x and y are microaggregated: record 3 (NULL x) is suppressed, never averaged into a group.
/// With max_suppression 0.2 (1 of 5 allowed) four records are written, in groups of 2:
/// {1, 2} and {4, 5} (the k-d order of the line), so the published x are 1.5, 1.5, 3.5, 3.5,
/// and written + suppressed = 5. With max_suppression 0 nothing is written.
#[test]
fn records_with_a_null_are_suppressed_within_the_limit_and_never_averaged() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("small.csv");
    std::fs::write(
        &input,
        "id,x,y,city\n1,1,10,a\n2,2,11,a\n3,,12,b\n4,3,13,b\n5,4,14,b\n",
    )
    .unwrap();
    let attributes = [
        ("id", "{ role = \"identifier\" }"),
        (
            "x",
            "{ role = \"quasi_identifier\", type = \"float64\", perturbation = { kind = \"microaggregation\" } }",
        ),
        (
            "y",
            "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
        ),
        ("city", "{ role = \"insensitive\" }"),
    ];
    let strict = policy(dir.path(), &input, "k = 2", &attributes);
    let out = dir.path().join("out.parquet");
    let refused = anonymize(&strict, &out, &dir.path().join("r.json"), "1");
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains(
            "1 of 5 records (20.00 %) have a NULL or NaN in a numeric perturbed attribute"
        ) && message.contains("nothing written"),
        "{message}"
    );
    assert!(!out.exists());

    let allowed = policy(
        dir.path(),
        &input,
        "k = 2\nmax_suppression = 0.2",
        &attributes,
    );
    let report_path = dir.path().join("r.json");
    let output = anonymize(&allowed, &out, &report_path, "1");
    assert!(output.status.success(), "{}", stderr(&output));
    let report = read_json(&report_path);
    assert_eq!(report["suppressed_rows"], 1);
    assert_eq!(report["verification"]["rows"], 4);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ctx = SessionContext::new();
        ctx.register_parquet("p", out.to_str().unwrap(), ParquetReadOptions::default())
            .await
            .unwrap();
        let batches = ctx
            .sql("SELECT x FROM p ORDER BY x")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let xs: Vec<f64> = batches
            .iter()
            .flat_map(|b| b.column(0).as_primitive::<Float64Type>().values().to_vec())
            .collect();
        assert_eq!(xs, vec![1.5, 1.5, 3.5, 3.5]);
        // the identifier is not published
        let columns = ctx.table("p").await.unwrap().schema().fields().len();
        assert_eq!(columns, 3);
    });
}

/// Rank swapping publishes a permutation of the values (each value still there, the type
/// kept), PRAM only categories of the data, and noise a Float64 column.
#[tokio::test]
async fn swapped_values_are_a_permutation_and_pram_publishes_only_known_categories() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    let mut text = String::from("id,income,age,sector\n");
    for i in 0..200 {
        text.push_str(&format!(
            "{i},{},{},{}\n",
            1000 + i * 37 % 500,
            20 + i % 50,
            ["x", "y", "z"][i % 3]
        ));
    }
    std::fs::write(&input, text).unwrap();
    let policy = policy(
        dir.path(),
        &input,
        "k = 2",
        &[
            ("id", "{ role = \"identifier\" }"),
            (
                "income",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"rank_swap\", p = 10 } }",
            ),
            (
                "age",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.2 } }",
            ),
            (
                "sector",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"pram\", categories = [\"x\", \"y\", \"z\"], matrix = [[0.8, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.1, 0.9]], invariant = false } }",
            ),
        ],
    );
    let out = dir.path().join("out.parquet");
    let report_path = dir.path().join("r.json");
    let output = anonymize(&policy, &out, &report_path, "3");
    assert!(output.status.success(), "{}", stderr(&output));
    let ctx = published_and_original(&out, &input).await;
    let schema = ctx.table("p").await.unwrap().schema().as_arrow().clone();
    assert_eq!(
        schema.field_with_name("income").unwrap().data_type(),
        &DataType::Int64
    );
    assert_eq!(
        schema.field_with_name("age").unwrap().data_type(),
        &DataType::Float64
    );
    // the same multiset of incomes: every value's count equal
    let differing = scalar(
        &ctx,
        "SELECT count(*) FROM (SELECT income, count(*) c FROM p GROUP BY income) a \
         FULL JOIN (SELECT income, count(*) c FROM o GROUP BY income) b ON a.income = b.income \
         WHERE a.c IS DISTINCT FROM b.c",
    )
    .await;
    assert_eq!(differing, 0.0);
    // PRAM as given (invariant = false): only x, y, z; y is absorbing and z never becomes x,
    // so y can only grow
    let unknown = scalar(
        &ctx,
        "SELECT count(*) FROM p WHERE sector NOT IN ('x', 'y', 'z')",
    )
    .await;
    assert_eq!(unknown, 0.0);
    let y = scalar(&ctx, "SELECT count(*) FROM p WHERE sector = 'y'").await;
    assert!(y >= 66.0, "y: {y}");
    let report = read_json(&report_path);
    let pram = &report["pram"][0];
    assert_eq!(pram["categories"], serde_json::json!(["x", "y", "z"]));
    assert!(pram["estimated_counts"].is_array());
    let batches = ctx
        .sql("SELECT count(*) FROM p")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        batches[0].column(0).as_primitive::<Int64Type>().value(0),
        200
    );
    assert!(batches[0].column(0).null_count() == 0);
}

/// Each bad input of the issue: one clear error naming the column or key, nothing written.
#[test]
fn bad_inputs_are_refused_with_one_clear_error_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    std::fs::write(&input, "name,income,region\nann,10,n\nbob,20,s\ncid,30,n\n").unwrap();
    let cases: [(&str, &str, &str, &str); 5] = [
        (
            "k = 2",
            "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
            "{ role = \"insensitive\" }",
            "attribute 'name' of",
        ),
        (
            "k = 5",
            "{ role = \"insensitive\" }",
            "{ role = \"insensitive\" }",
            "3 records to microaggregate, fewer than k = 5",
        ),
        (
            "k = 2",
            "{ role = \"insensitive\" }",
            "{ role = \"insensitive\" }",
            "attribute 'income': the noise level is a multiple of the attribute's standard deviation, at least 0, got -0.1",
        ),
        (
            "k = 2",
            "{ role = \"insensitive\" }",
            "{ role = \"quasi_identifier\", perturbation = { kind = \"pram\", categories = [\"n\", \"s\"], matrix = [[0.5, 0.5], [0.3, 0.6]] } }",
            "attribute 'region': row 2 of the PRAM matrix sums to",
        ),
        (
            "k = 2",
            "{ role = \"insensitive\" }",
            "{ role = \"insensitive\" }",
            "attribute 'income': rank swapping's p is a percentage of the records in (0, 100], got 150",
        ),
    ];
    let income_specs = [
        "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
        "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
        "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = -0.1 } }",
        "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
        "{ role = \"quasi_identifier\", perturbation = { kind = \"rank_swap\", p = 150 } }",
    ];
    for ((privacy, name, region, expected), income) in cases.iter().zip(income_specs) {
        let policy = policy(
            dir.path(),
            &input,
            privacy,
            &[("name", name), ("income", income), ("region", region)],
        );
        let out = dir.path().join("out.parquet");
        let output = anonymize(&policy, &out, &dir.path().join("r.json"), "1");
        assert!(!output.status.success(), "{expected}");
        let message = stderr(&output);
        assert!(
            message.contains(expected),
            "expected '{expected}' in: {message}"
        );
        assert!(!out.exists(), "{expected}: something was written");
        assert!(!dir.path().join("r.json").exists());
        // one error, and no value of the data in it
        assert!(
            !message.contains("ann") && !message.contains("bob"),
            "{message}"
        );
    }
}

/// `anon profile --original … --key …` on a microaggregated release gives the perturbation
/// figures, by hand on one attribute (standardizing one attribute scales every distance, SSE
/// and SST alike):
///
/// x = 1, 2, 4, 10, 11, 15 (ids 0..5), k = 3. MDAV: 6 < 3k, the farthest from the mean 43/6
/// is 15, with its nearest 11 and 10: {10, 11, 15}; the rest {1, 2, 4} (sizes 3 = k can
/// neither move nor gain by a swap). Published 7/3 and 12.
/// - SSE = 16/9 + 1/9 + 25/9 + 4 + 1 + 9 = 56/3; SST = Σx² − n·x̄² = 467 − 1849/6 = 953/6;
///   IL = 100 · (56/3)/(953/6) = 100 · 112/953 = 11.7524.
/// - SDID at ±10 %: only 11 (|11 − 12| = 1 ≤ 1.2): 1/6.
/// - DBRL: 7/3 is nearest 2 (1/3 away, then 1 at 4/3 and 4 at 5/3), 12 nearest 11 (1, then
///   10 at 2): records 2 and 11 are linked, 2/6 = 1/3.
#[test]
fn the_profile_measures_a_perturbed_release_against_its_original() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    std::fs::write(&input, "id,x\n0,1\n1,2\n2,4\n3,10\n4,11\n5,15\n").unwrap();
    let attributes = [
        ("id", "{ role = \"insensitive\" }"),
        (
            "x",
            "{ role = \"quasi_identifier\", type = \"float64\", perturbation = { kind = \"microaggregation\" } }",
        ),
    ];
    let policy = policy(dir.path(), &input, "k = 3", &attributes);
    let out = dir.path().join("out.parquet");
    let output = anonymize(&policy, &out, &dir.path().join("r.json"), "1");
    assert!(output.status.success(), "{}", stderr(&output));
    let profile = dir.path().join("profile.json");
    let output = anon(&[
        "profile",
        out.to_str().unwrap(),
        "--qi",
        "x",
        "--original",
        input.to_str().unwrap(),
        "--key",
        "id",
        "--format",
        "json",
        "--out",
        profile.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let figures = &read_json(&profile)["utility"]["perturbation"];
    assert_eq!(figures["rows"], 6);
    let il = figures["utility"]["il"].as_f64().unwrap();
    assert!((il - 100.0 * 112.0 / 953.0).abs() < 1e-9, "{il}");
    let sdid = figures["risk"]["sdid"].as_f64().unwrap();
    assert!((sdid - 1.0 / 6.0).abs() < 1e-12, "{sdid}");
    let dbrl = figures["risk"]["dbrl"].as_f64().unwrap();
    assert!((dbrl - 1.0 / 3.0).abs() < 1e-12, "{dbrl}");
}

/// Both passes read the input in partitions of their own row groups, decoded in parallel, and
/// line the records up partition by partition: 2,000 records in 8 row groups read in 4
/// partitions give the release read in one partition gives (the same published rows, in
/// another shuffled order), with microaggregation, rank swapping and PRAM.
#[tokio::test]
async fn several_partitions_publish_the_release_of_one() {
    use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;
    use datafusion::physical_plan::ExecutionPlanProperties;
    use datafusion::prelude::SessionConfig;
    use datafusion_anonymity_engine::jobs::{Silent, anonymize};

    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.parquet");
    let ids: Vec<i64> = (0..2_000).collect();
    let column = |f: fn(i64) -> i64| {
        Arc::new(Int64Array::from_iter_values(ids.iter().map(|&i| f(i)))) as ArrayRef
    };
    let batch = RecordBatch::try_from_iter([
        ("x", column(|i| i * 7 % 1_000)),
        ("y", column(|i| i % 37)),
        ("z", column(|i| i * 13 % 501)),
        (
            "c",
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| ["a", "b", "c"][*i as usize % 3]),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    let properties = WriterProperties::builder()
        .set_max_row_group_row_count(Some(250))
        .build();
    let mut writer = ArrowWriter::try_new(
        std::fs::File::create(&input).unwrap(),
        batch.schema(),
        Some(properties),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let micro = "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }";
    let policy = policy(
        dir.path(),
        &input,
        "k = 3",
        &[
            ("x", micro),
            ("y", micro),
            (
                "z",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"rank_swap\", p = 5 } }",
            ),
            (
                "c",
                "{ role = \"insensitive\", perturbation = { kind = \"pram\", retention = 0.8 } }",
            ),
        ],
    );
    let mut published = Vec::new();
    for partitions in [1, 4] {
        let config = SessionConfig::new()
            .with_target_partitions(partitions)
            .with_repartition_file_min_size(0);
        let ctx = SessionContext::new_with_config_rt(
            config,
            RuntimeEnvBuilder::new().build_arc().unwrap(),
        );
        datafusion_anonymity_engine::register(&ctx).unwrap();
        ctx.register_parquet(
            "probe",
            input.display().to_string(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
        // the file as the passes split it: its 8 row groups in `partitions` byte ranges
        let scan = ctx
            .table("probe")
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let split = scan
            .repartitioned(partitions, ctx.state().config().options())
            .unwrap()
            .unwrap_or(scan);
        assert_eq!(split.output_partitioning().partition_count(), partitions);
        let out = dir.path().join(format!("out{partitions}.parquet"));
        let mut options = anonymize::AnonymizeOptions::new(policy.clone());
        options.out = Some(out.display().to_string());
        options.seed = Some(5);
        anonymize::anonymize(&ctx, &options, &Silent).await.unwrap();
        ctx.register_parquet(
            "out",
            out.display().to_string(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
        let rows = ctx
            .sql("SELECT CAST(x AS VARCHAR) || ' ' || CAST(y AS VARCHAR) || ' ' || CAST(z AS VARCHAR) || ' ' || c AS r FROM out ORDER BY r")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let rows: Vec<String> = rows
            .iter()
            .flat_map(|b| {
                let texts = cast(b.column(0), &DataType::Utf8).unwrap();
                let texts = texts.as_string::<i32>().clone();
                (0..texts.len()).map(move |i| texts.value(i).to_string())
            })
            .collect();
        assert_eq!(rows.len(), 2_000);
        published.push(rows);
    }
    assert_eq!(published[0], published[1]);
}

/// Issue 52: microaggregation with k = 1 published every record as it was and called it
/// verified. It is refused when the policy is read, naming the key, and nothing is written;
/// the same for a generalization policy with no other requirement.
#[test]
fn k_of_one_is_refused_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let columns = census_columns();
    let attributes: Vec<(&str, &str)> = columns
        .iter()
        .map(|c| {
            (
                c.as_str(),
                "{ role = \"quasi_identifier\", perturbation = { kind = \"microaggregation\" } }",
            )
        })
        .collect();
    let policy = policy(dir.path(), &census(), "k = 1", &attributes);
    let out = dir.path().join("census.parquet");
    let report = dir.path().join("report.json");
    let output = anonymize(&policy, &out, &report, "7");
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(error.contains("privacy.k = 1 protects nobody"), "{error}");
    assert!(!out.exists() && !report.exists());

    let generalization = dir.path().join("g.toml");
    std::fs::write(
        &generalization,
        crate::patients_policy("patients.parquet", 1, 0.0, 0, 0),
    )
    .unwrap();
    let output = anon(&[
        "apply",
        "--policy",
        &generalization.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("privacy.k = 1 protects nobody"), "{error}");
    assert!(!out.exists());
}

/// PRAM is invariant by default (issue 52): a rare category keeps its frequency in
/// expectation. By hand, two categories a (9,000 records) and b (1,000), retention 0.5: P has
/// every entry 1/2, so Q_ij = π_j and R = P·Q has every row π = (0.9, 0.1). Invariant PRAM
/// publishes b with probability 0.1 for every record: 1,000 expected, standard deviation
/// √(10,000 · 0.1 · 0.9) = 30; plain PRAM (`invariant = false`) 0.5 for every record: 5,000
/// expected (sd 50). Both within 5 sd here. The report gives the association PRAM leaves
/// with the numeric attribute y (1 for a, 2 for b, published unchanged by noise of level 0):
/// η = 1 before; after, R's rows are all equal, so the published category is independent of y:
/// η near 0 (here below 0.1).
#[test]
fn pram_keeps_frequencies_by_default_and_reports_the_association_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    let mut text = String::from("c,y\n");
    for i in 0..10_000 {
        text.push_str(if i < 9_000 { "a,1\n" } else { "b,2\n" });
    }
    std::fs::write(&input, text).unwrap();
    for (invariant, expected) in [("", 1000.0), (", invariant = false", 5000.0)] {
        let pram = format!(
            "{{ role = \"quasi_identifier\", perturbation = {{ kind = \"pram\", retention = 0.5{invariant} }} }}"
        );
        let policy = policy(
            dir.path(),
            &input,
            "k = 2",
            &[
                ("c", pram.as_str()),
                (
                    "y",
                    "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.0 } }",
                ),
            ],
        );
        let out = dir.path().join("out.parquet");
        let report_path = dir.path().join("r.json");
        let _ = std::fs::remove_file(&out);
        let _ = std::fs::remove_file(&report_path);
        let output = anonymize(&policy, &out, &report_path, "9");
        assert!(output.status.success(), "{}", stderr(&output));
        let report = read_json(&report_path);
        let pram = &report["pram"][0];
        let categories = pram["categories"].as_array().unwrap();
        let b = categories.iter().position(|c| c == "b").unwrap();
        let published_b = pram["published_counts"][b].as_f64().unwrap();
        assert!(
            (published_b - expected).abs() < 250.0,
            "{invariant}: b published {published_b} times, expected about {expected}"
        );
        let association = &pram["associations"][0];
        assert_eq!(association["with"], "y");
        assert_eq!(association["measure"], "eta");
        assert_eq!(association["before"].as_f64().unwrap(), 1.0);
        assert!(
            association["after"].as_f64().unwrap() < 0.1,
            "{invariant}: {association}"
        );
    }
}

/// Noise that stays in the domain (issue 52). Tips of 0 to 4 (a fifth each, 1,000 records, so
/// σ ≈ 1.41): additive noise of level 1 puts many outside [0, 4], and the release says how
/// many, recounted here; `bounds = "observed"` reflects them into [0, 4]; multiplicative
/// noise never makes a tip negative and keeps the zeros (200 of them) zero.
#[tokio::test]
async fn noise_stays_in_the_domain_when_asked_and_says_when_it_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("tips.csv");
    let mut text = String::from("id,tip,shift\n");
    for i in 0..1000 {
        text.push_str(&format!("{i},{},s{}\n", i % 5, i % 3));
    }
    std::fs::write(&input, text).unwrap();
    let run = |spec: &str, name: &str| {
        let tip = format!("{{ role = \"quasi_identifier\", perturbation = {spec} }}");
        let policy = policy(
            dir.path(),
            &input,
            "k = 2",
            &[
                ("id", "{ role = \"identifier\" }"),
                ("tip", tip.as_str()),
                ("shift", "{ role = \"insensitive\" }"),
            ],
        );
        let out = dir.path().join(format!("{name}.parquet"));
        let report = dir.path().join(format!("{name}.json"));
        let output = anonymize(&policy, &out, &report, "13");
        assert!(output.status.success(), "{}", stderr(&output));
        (out, read_json(&report), stderr(&output))
    };
    let count = |out: PathBuf, sql: &'static str| async move {
        let ctx = SessionContext::new();
        ctx.register_parquet("p", out.to_str().unwrap(), ParquetReadOptions::default())
            .await
            .unwrap();
        scalar(&ctx, sql).await
    };

    let (out, report, printed) = run("{ kind = \"noise\", level = 1.0 }", "plain");
    let outside = count(out, "SELECT count(*) FROM p WHERE tip < 0 OR tip > 4").await;
    assert!(outside > 100.0, "{outside}");
    let warning = format!(
        "noise put {} published values of 'tip' outside the input's range",
        outside as u64
    );
    assert!(printed.contains(&warning), "{printed}");
    assert!(
        report["warnings"][0]
            .as_str()
            .unwrap()
            .starts_with(&warning)
    );

    let (out, report, printed) = run(
        "{ kind = \"noise\", level = 1.0, bounds = \"observed\" }",
        "bounded",
    );
    assert_eq!(
        count(out, "SELECT count(*) FROM p WHERE tip < 0 OR tip > 4").await,
        0.0
    );
    assert!(!printed.contains("noise put"), "{printed}");
    let warned = report["warnings"].as_array().unwrap();
    assert!(
        !warned
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("noise put"))
    );

    let (out, _, printed) = run(
        "{ kind = \"multiplicative_noise\", level = 0.5 }",
        "multiplied",
    );
    let negative_or_zero = count(
        out,
        "SELECT sum(CASE WHEN tip < 0 THEN 1000 WHEN tip = 0 THEN 1 ELSE 0 END) FROM p",
    )
    .await;
    assert_eq!(
        negative_or_zero, 200.0,
        "no negative tip, the 200 zeros kept"
    );
    // a factor above 1 can still pass the largest tip: said, not hidden
    let above = printed.contains("noise put");
    assert!(above, "{printed}");
}

/// Strata for every perturbation (issue 52), without microaggregation. Two strata by region:
/// A holds incomes 1…100, category x only and an age of 40 for all; B incomes 1001…1100 and
/// categories y and z. By hand: rank swapping within each stratum keeps each region's
/// multiset of incomes; invariant PRAM within a stratum never publishes a category the
/// stratum lacks (A stays all x, B never gets x); noise within a stratum scales by the
/// stratum's own σ, which is 0 for A's ages: they are published unchanged.
#[tokio::test]
async fn strata_split_noise_swapping_and_pram_without_microaggregation() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    let mut text = String::from("region,income,c,age\n");
    for i in 0..100 {
        text.push_str(&format!("A,{},x,40\n", 1 + i));
        text.push_str(&format!(
            "B,{},{},{}\n",
            1001 + i,
            ["y", "z"][i % 2],
            20 + i % 30
        ));
    }
    std::fs::write(&input, text).unwrap();
    let policy = policy(
        dir.path(),
        &input,
        "k = 2\n[perturbation]\nstrata = [\"region\"]",
        &[
            ("region", "{ role = \"quasi_identifier\" }"),
            (
                "income",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"rank_swap\", p = 20 } }",
            ),
            (
                "c",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"pram\", retention = 0.5 } }",
            ),
            (
                "age",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.5 } }",
            ),
        ],
    );
    let out = dir.path().join("out.parquet");
    let report = dir.path().join("r.json");
    let output = anonymize(&policy, &out, &report, "21");
    assert!(output.status.success(), "{}", stderr(&output));
    let ctx = published_and_original(&out, &input).await;
    let differing = scalar(
        &ctx,
        "SELECT count(*) FROM (SELECT region, income, count(*) c FROM p GROUP BY region, income) a \
         FULL JOIN (SELECT region, income, count(*) c FROM o GROUP BY region, income) b \
         ON a.region = b.region AND a.income = b.income WHERE a.c IS DISTINCT FROM b.c",
    )
    .await;
    assert_eq!(differing, 0.0, "each region keeps its incomes");
    let crossed = scalar(
        &ctx,
        "SELECT count(*) FROM p WHERE (region = 'A' AND c <> 'x') OR (region = 'B' AND c = 'x')",
    )
    .await;
    assert_eq!(crossed, 0.0);
    let moved = scalar(
        &ctx,
        "SELECT count(*) FROM p WHERE region = 'A' AND age <> 40",
    )
    .await;
    assert_eq!(moved, 0.0);
    let moved_in_b = scalar(
        &ctx,
        "SELECT count(*) FROM p WHERE region = 'B' AND age <> floor(age)",
    )
    .await;
    assert!(moved_in_b > 90.0, "B's ages got noise: {moved_in_b}");
}

/// A text value in an untyped CSV number column (issue 52): the column is read as text, and
/// the refusal names the file, the line of the value that made it so (the fourth record is
/// line 5) and what to do, never the value; nothing is written.
#[test]
fn a_text_value_in_a_csv_number_column_is_named_by_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("tips.csv");
    std::fs::write(&input, "id,tip\n1,3\n2,4\n3,5\n4,unknown-amount\n5,6\n").unwrap();
    let policy = policy(
        dir.path(),
        &input,
        "k = 2",
        &[
            ("id", "{ role = \"identifier\" }"),
            (
                "tip",
                "{ role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.1 } }",
            ),
        ],
    );
    let out = dir.path().join("out.parquet");
    let output = anonymize(&policy, &out, &dir.path().join("r.json"), "1");
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(
        error.contains("line 5, column 'tip'") && error.contains("noise needs numbers"),
        "{error}"
    );
    assert!(!error.contains("unknown-amount"), "{error}");
    assert!(!out.exists());
}
