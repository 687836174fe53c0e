//! `anon anonymize` with a bucketization policy ((c,k)-anonymization and the (p,k)
//! baseline) and `anon attack fingerprint`, end to end on generated medical data. The two
//! published tables are checked again here with plain SQL, independently of the command's
//! own verification.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::{anon, stderr};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

const SENSITIVE: [&str; 6] = [
    "physician",
    "specialty",
    "diagnosis",
    "symptom",
    "diagnostic_method",
    "treatment",
];

/// The most label tuples of GT one bucket id links to.
const ONE_TO_MANY: &str = "SELECT max(n) FROM (SELECT bucket_id, count(*) n FROM \
     (SELECT DISTINCT bucket_id, age, sex, zip FROM gt) GROUP BY bucket_id)";

/// A generated medical table of `rows` rows in `dir`.
fn medical(dir: &Path, rows: usize) -> PathBuf {
    let path = dir.join("medical.parquet");
    crate::generate("medical", &path, rows, 42);
    path
}

/// A policy over the medical table with `privacy` as its `[privacy]` section.
fn policy(dir: &Path, input: &Path, privacy: &str) -> String {
    let mut text = format!(
        "[input]\npath = \"{}\"\n[privacy]\n{privacy}\n[attributes]\n\
         patient_id = {{ role = \"identifier\" }}\n\
         age = {{ role = \"quasi_identifier\" }}\n\
         sex = {{ role = \"quasi_identifier\" }}\n\
         zip = {{ role = \"quasi_identifier\" }}\n",
        input.display()
    );
    for s in SENSITIVE {
        text.push_str(&format!("{s} = {{ role = \"sensitive\" }}\n"));
    }
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn anonymize(policy: &str, out: &Path, report: &Path) -> Output {
    crate::anonymize_quietly(policy, out, Some(report), &[])
}

async fn scalar(ctx: &SessionContext, sql: &str) -> i64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let column = cast(batches[0].column(0), &DataType::Int64).unwrap();
    column.as_primitive::<Int64Type>().value(0)
}

/// The input, GT and ST registered as `input`, `gt`, `st`.
async fn session(input: &Path, out: &Path) -> SessionContext {
    let ctx = SessionContext::new();
    for (name, path) in [
        ("input", input.to_path_buf()),
        ("gt", out.join("gt.parquet")),
        ("st", out.join("st.parquet")),
    ] {
        ctx.register_parquet(
            name,
            &path.display().to_string(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
    }
    ctx
}

#[tokio::test]
async fn ck_anonymization_publishes_two_tables_that_keep_every_promise() {
    let dir = tempfile::tempdir().unwrap();
    let input = medical(dir.path(), 20_000);
    let policy = policy(
        dir.path(),
        &input,
        "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2\nexternal_factor = \"physician\"",
    );
    let out = dir.path().join("release");
    let report = dir.path().join("report.json");
    let output = anonymize(&policy, &out, &report);
    assert!(output.status.success(), "{}", stderr(&output));
    let ctx = session(&input, &out).await;
    // one row per record in each table
    assert_eq!(scalar(&ctx, "SELECT count(*) FROM gt").await, 20_000);
    assert_eq!(scalar(&ctx, "SELECT count(*) FROM st").await, 20_000);
    // GT: k-anonymous label tuples, identifiers gone
    assert!(
        scalar(
            &ctx,
            "SELECT min(n) FROM (SELECT count(*) n FROM gt GROUP BY age, sex, zip)"
        )
        .await
            >= 4
    );
    let gt_schema = ctx.table("gt").await.unwrap().schema().as_arrow().clone();
    let gt_columns: Vec<&str> = gt_schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(gt_columns, ["age", "sex", "zip", "bucket_id"]);
    // ST: every bucket ≥ k rows and ≥ c + 1 = 2 values of every attribute; λ = 2
    let distinct: Vec<String> = SENSITIVE
        .iter()
        .map(|s| format!("count(DISTINCT {s}) AS d_{s}"))
        .collect();
    let least: Vec<String> = SENSITIVE.iter().map(|s| format!("min(d_{s})")).collect();
    let per_bucket = format!(
        "SELECT count(*) AS n, {} FROM st GROUP BY bucket_id",
        distinct.join(", ")
    );
    assert!(scalar(&ctx, &format!("SELECT min(n) FROM ({per_bucket})")).await >= 4);
    let least_distinct = scalar(
        &ctx,
        &format!("SELECT least({}) FROM ({per_bucket})", least.join(", ")),
    )
    .await;
    assert!(least_distinct >= 2, "{least_distinct}");
    assert!(
        scalar(
            &ctx,
            "SELECT max(n) FROM (SELECT count(*) n FROM st GROUP BY bucket_id, physician)"
        )
        .await
            <= 2
    );
    // one-to-many: a fingerprint bucket links to records of several GBs
    assert!(scalar(&ctx, ONE_TO_MANY).await > 1);
    // GT and ST agree bucket by bucket
    assert_eq!(
        scalar(
            &ctx,
            "SELECT count(*) FROM (SELECT bucket_id, count(*) n FROM gt GROUP BY 1) g \
             FULL JOIN (SELECT bucket_id, count(*) n FROM st GROUP BY 1) s \
             ON g.bucket_id = s.bucket_id WHERE g.n IS DISTINCT FROM s.n"
        )
        .await,
        0
    );
    // every sensitive value of the input appears in ST exactly as often
    for s in SENSITIVE {
        let differing = scalar(
            &ctx,
            &format!(
                "SELECT count(*) FROM (SELECT {s}, count(*) n FROM input GROUP BY 1) a \
                 FULL JOIN (SELECT {s}, count(*) n FROM st GROUP BY 1) b ON a.{s} = b.{s} \
                 WHERE a.n IS DISTINCT FROM b.n"
            ),
        )
        .await;
        assert_eq!(differing, 0, "{s}");
    }
    // no ST row is a fingerprint of the input: a row's (physician, specialty) pair is often
    // not a pair of the input, since every column is sorted on its own within the bucket
    let foreign_pairs = scalar(
        &ctx,
        "SELECT count(*) FROM st LEFT JOIN (SELECT DISTINCT physician p, specialty s FROM input) i \
         ON st.physician = i.p AND st.specialty = i.s WHERE i.p IS NULL",
    )
    .await;
    assert!(foreign_pairs > 0);
    // the report: physician is the linking attribute (external factor), specialty is
    // determined by it, and the attack pins nobody
    let json: serde_json::Value = crate::read_json(&report);
    assert_eq!(json["method"], "ck-anonymization");
    assert_eq!(json["dependencies"]["linking"], 0);
    assert_eq!(json["dependencies"]["determined"][1], true);
    assert_eq!(json["publish"]["attack"]["partially_pinned"], 0);
    // the command-line attack on the written tables agrees
    let attack = anon(&[
        "attack",
        "fingerprint",
        "--st",
        &out.join("st.parquet").display().to_string(),
        "--gt",
        &out.join("gt.parquet").display().to_string(),
        "--linking",
        "physician",
        "--determined",
        "specialty",
    ]);
    let text = String::from_utf8_lossy(&attack.stdout);
    assert!(attack.status.success(), "{}", stderr(&attack));
    assert!(
        text.contains("records pinned: 0 partially, 0 fully, of 20000"),
        "{text}"
    );
}

#[tokio::test]
async fn the_attack_pins_the_pk_angelization_release_of_the_same_data() {
    // (p,k) puts each physician's patients into many QI-sorted buckets with varying
    // companions: intersecting them pins the physician's specialty (which it determines).
    let dir = tempfile::tempdir().unwrap();
    let input = medical(dir.path(), 20_000);
    let policy = policy(
        dir.path(),
        &input,
        "method = \"pk-angelization\"\nk = 4\np = 2\nexternal_factor = \"physician\"",
    );
    let out = dir.path().join("release");
    let report = dir.path().join("report.json");
    let output = anonymize(&policy, &out, &report);
    assert!(output.status.success(), "{}", stderr(&output));
    let ctx = session(&input, &out).await;
    // one-to-one: every bucket id is one GB, so it has one label tuple in GT
    assert_eq!(scalar(&ctx, ONE_TO_MANY).await, 1);
    let attack = anon(&[
        "attack",
        "fingerprint",
        "--st",
        &out.join("st.parquet").display().to_string(),
        "--linking",
        "physician",
        "--determined",
        "specialty",
        "--json",
    ]);
    assert!(attack.status.success(), "{}", stderr(&attack));
    let json: serde_json::Value = serde_json::from_slice(&attack.stdout).unwrap();
    let pinned = json["pinned_per_attribute"][0][1].as_u64().unwrap();
    assert_eq!(json["pinned_per_attribute"][0][0], "specialty");
    assert!(
        pinned > 10_000,
        "{pinned} of 20000 records pinned on specialty"
    );
    // pinned values are true: a pinned specialty is the physician's specialty, which the
    // report of the publisher counts the same way
    let report: serde_json::Value = crate::read_json(&report);
    assert_eq!(
        report["publish"]["attack"]["pinned_per_attribute"][0][1],
        pinned
    );
    // and anon profile of the release says the same
    let profile = anon(&[
        "profile",
        &out.join("gt.parquet").display().to_string(),
        "--qi",
        "age,sex,zip",
        "--fingerprint-st",
        &out.join("st.parquet").display().to_string(),
        "--linking",
        "physician",
        "--determined",
        "specialty",
        "--format",
        "json",
    ]);
    assert!(profile.status.success(), "{}", stderr(&profile));
    let json: serde_json::Value = serde_json::from_slice(&profile.stdout).unwrap();
    let attack = &json["fingerprint_attack"];
    assert_eq!(attack["pinned_per_attribute"][0][1], pinned);
    assert_eq!(attack["linked_attributes"][0], "specialty");
}

#[test]
fn bad_bucketization_policies_are_refused_with_one_clear_error_and_nothing_written() {
    let dir = tempfile::tempdir().unwrap();
    let input = medical(dir.path(), 2_000);
    let out = dir.path().join("release");
    let report = dir.path().join("report.json");
    let cases: [(&str, &str); 7] = [
        (
            "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 0",
            "privacy.lambda must be at least 1, got 0",
        ),
        (
            "method = \"ck-anonymization\"\nk = 4\nc = 1",
            "method = \"ck-anonymization\" needs privacy.lambda",
        ),
        (
            // 41 distinct values of every attribute per bucket: the table has 2 sexes
            "method = \"ck-anonymization\"\nk = 4\nc = 40\nlambda = 2",
            "c + 1 = 41 distinct values",
        ),
        (
            // 2,000 records, a bucket of k = 5,000 cannot exist
            "method = \"ck-anonymization\"\nk = 5000\nc = 1\nlambda = 2",
            "k = 5000",
        ),
        (
            "k = 4\nc = 1",
            "privacy.c applies to method = \"ck-anonymization\" or \"pk-angelization\"",
        ),
        (
            "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2\nmax_suppression = 0.1",
            "privacy.max_suppression applies to method = \"generalization\"",
        ),
        (
            "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2\nlocal_labels = \"exact\"",
            "privacy.local_labels applies to method = \"generalization\"",
        ),
    ];
    for (privacy, expected) in cases {
        let policy = policy(dir.path(), &input, privacy);
        let output = anonymize(&policy, &out, &report);
        assert!(!output.status.success(), "{privacy}");
        let message = stderr(&output);
        assert!(message.contains(expected), "{privacy}: {message}");
        assert_eq!(message.trim().lines().count(), 1, "{message}");
        assert!(
            !out.exists() && !report.exists(),
            "{privacy}: something was written"
        );
        // nothing staged is left behind either
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("anon-tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{privacy}");
    }
    // a single .parquet output, and `anon apply`, are refused by name
    let ck = policy(
        dir.path(),
        &input,
        "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2",
    );
    let file = dir.path().join("release.parquet");
    let output = anonymize(&ck, &file, &report);
    assert!(
        stderr(&output).contains("a bucketized release is two tables (gt.parquet and st.parquet)"),
        "{}",
        stderr(&output)
    );
    assert!(!file.exists() && !report.exists());
    let output = anon(&[
        "apply",
        "--policy",
        &ck,
        "--out",
        &out.display().to_string(),
    ]);
    assert!(
        stderr(&output).contains("method = \"ck-anonymization\" is published by `anon anonymize`"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
    // a sensitive attribute named twice: the policy's line
    let path = dir.path().join("twice.toml");
    let text = std::fs::read_to_string(policy(
        dir.path(),
        &input,
        "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2",
    ))
    .unwrap()
        + "physician = { role = \"sensitive\" }\n";
    std::fs::write(&path, text).unwrap();
    let output = anonymize(&path.display().to_string(), &out, &report);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("line 19") && message.contains("duplicate key"),
        "{message}"
    );
    assert!(!out.exists());
}

#[test]
fn marginal_publication_keeps_only_the_named_quasi_identifiers() {
    let dir = tempfile::tempdir().unwrap();
    let input = medical(dir.path(), 5_000);
    let policy = policy(
        dir.path(),
        &input,
        "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2\nmarginal = [\"age\", \"sex\"]",
    );
    let out = dir.path().join("release");
    let output = anonymize(&policy, &out, &dir.path().join("r.json"));
    assert!(output.status.success(), "{}", stderr(&output));
    let file = std::fs::File::open(out.join("gt.parquet")).unwrap();
    let reader = datafusion::parquet::file::reader::SerializedFileReader::new(file).unwrap();
    use datafusion::parquet::file::reader::FileReader;
    let schema = reader.metadata().file_metadata().schema_descr();
    let names: Vec<&str> = schema.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["age", "sex", "bucket_id"]);
    // an existing release is not replaced without --overwrite
    let again = anonymize(&policy, &out, &dir.path().join("r.json"));
    assert!(stderr(&again).contains("exists; pass --overwrite"));
}

/// A hand-made release that breaks the policy must be refused by the publisher's own
/// verification of the written files, and nothing may appear at the output.
#[tokio::test]
async fn verification_refuses_a_release_that_breaks_the_policy() {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
    use datafusion_anonymity_engine::bucketize::{
        BucketizedRelease, CkOptions, EncodedColumn, GroupRanges, MsaTable, Refinement, weights,
    };
    use datafusion_anonymity_engine::policy::Bucketization;
    use datafusion_anonymity_engine::publish::bucketized::publish_bucketized;

    let column = |name: &str, values: ArrayRef, codes: Vec<u32>| EncodedColumn {
        name: name.into(),
        codes,
        values,
        numeric: None,
    };
    // six records, two physicians (A: records 0-2, B: 3-5), two diagnoses
    let table = MsaTable {
        quasi_identifiers: vec![column(
            "age",
            Arc::new(Int64Array::from(vec![30, 40, 50, 60, 70, 80])),
            vec![0, 1, 2, 3, 4, 5],
        )],
        sensitive: vec![
            column(
                "physician",
                Arc::new(StringArray::from(vec!["A", "B"])),
                vec![0, 0, 0, 1, 1, 1],
            ),
            column(
                "diagnosis",
                Arc::new(StringArray::from(vec!["flu", "gout"])),
                vec![0, 1, 0, 1, 0, 1],
            ),
        ],
    };
    let options = CkOptions {
        c: 1,
        k: 3,
        lambda: 2,
        refinement: Refinement::Strict,
        external_factor: Some("physician".into()),
        dependency_threshold: 0.5,
    };
    let dependencies = weights::analyse(&table, &options).unwrap();
    // one GB of six; FB 0 = A's three records: one physician (c + 1 = 2 needed) three times
    // (λ = 2)
    let release = BucketizedRelease {
        bucket_of: vec![0, 0, 0, 1, 1, 1],
        buckets: 2,
        group_of: vec![0; 6],
        group_ranges: GroupRanges {
            width: 1,
            ranges: vec![(0, 5)],
        },
        cells: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("release");
    let ctx = SessionContext::new();
    let error = publish_bucketized(
        &ctx,
        &table,
        &release,
        &Bucketization::Ck(options),
        &dependencies,
        &out.as_path().into(),
        &Default::default(),
    )
    .await
    .unwrap_err()
    .to_string();
    assert!(
        error
            .contains("verification of the written release failed: a bucket has 1 distinct values"),
        "{error}"
    );
    assert!(!out.exists());
    // and no staging left behind
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_example_medical_policy_is_a_ck_policy() {
    use datafusion_anonymity_engine::policy::{Bucketization, Policy};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/medical/policy.toml");
    let policy = Policy::from_file(&path).unwrap();
    match policy.bucketization() {
        Some(Bucketization::Ck(options)) => {
            assert_eq!((options.k, options.c, options.lambda), (5, 1, 2));
            assert_eq!(options.external_factor.as_deref(), Some("physician"));
        }
        other => panic!("not a (c,k) policy: {other:?}"),
    }
}

/// GT and ST would be two Delta tables, and Delta Lake commits one table at a time: a
/// bucketized release is refused as Delta (docs/guide/delta.md), before anything is read.
#[test]
fn a_bucketized_release_is_not_published_as_delta() {
    let dir = tempfile::tempdir().unwrap();
    let input = medical(dir.path(), 200);
    let policy = policy(
        dir.path(),
        &input,
        "method = \"ck-anonymization\"\nk = 4\nc = 1\nlambda = 2\nexternal_factor = \"physician\"",
    );
    let out = dir.path().join("release");
    let output = anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        &out.display().to_string(),
        "--format",
        "delta",
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("release is two tables, which Delta Lake cannot commit together"),
        "{message}"
    );
    assert!(!out.exists());
}
