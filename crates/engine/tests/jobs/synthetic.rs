//! Synthetic records (`[synthetic]`, docs/definitions.md "Synthetic records"): classes below
//! the thresholds get records drawn inside them, capped by a share, re-verified, and
//! reported privately. By hand, on this table (zip published as is, k = 2):
//!
//! ```text
//! class  zip   rows  disease                    age
//! A      1000  2     flu, flu                   31, 32
//! B      2000  3     flu, cold, hiv             41, 42, 43
//! C      3000  5     flu, cold, flu, cold, flu  51..55
//! ```
//!
//! The written disease column: flu 6, cold 3, hiv 1. With `[synthetic] k = 4, l = 2`:
//! - A: 2 rows < 4 → 2 records; 1 distinct value < 2 → one record carries a value A lacks
//!   (cold or hiv); added = max(2, 1) = 2;
//! - B: 3 rows < 4 → 1 record; 3 distinct ≥ 2;
//! - C: 5 rows, 2 distinct: none.
//!
//! So 3 records (A first, the smaller), 13 published rows, share 3/13, count bias 3/10 over
//! the table and 2/2 = 1 for A. With max_share = 0.1 the cap is ⌊0.1 · 10 / 0.9⌋ = 1: A (2)
//! does not fit and is left below, B (1) does.

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use crate::support::{self, read_json};

const TABLE: &str = "zip,disease,age\n\
                     1000,flu,31\n\
                     2000,flu,41\n\
                     3000,flu,51\n\
                     1000,flu,32\n\
                     2000,cold,42\n\
                     3000,cold,52\n\
                     2000,hiv,43\n\
                     3000,flu,53\n\
                     3000,cold,54\n\
                     3000,flu,55\n";

/// `apply` of the table with `synthetic` and `extra` (in `[privacy]`) at seed 7, into
/// `out.parquet` with `report.json`.
async fn release(dir: &std::path::Path, synthetic: &str, extra: &str) -> Result<(), String> {
    std::fs::write(dir.join("visits.csv"), TABLE).unwrap();
    let policy = format!(
        "[input]\npath = \"visits.csv\"\n[privacy]\nk = 2\n{extra}\n[attributes]\n\
         zip = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"mask\", length = 4 }} }}\n\
         disease = {{ role = \"sensitive\" }}\nage = {{ role = \"insensitive\" }}\n\
         [transformation]\nzip = 0\n{synthetic}\n"
    );
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let arg = |name: &str| dir.join(name).display().to_string();
    support::apply(&arg("policy.toml"), &dir.join("out.parquet"), |o| {
        o.report = Some(arg("report.json"));
        o.seed = Some(7);
    })
    .await
    .map(|_| ())
}

/// (zip, rows, distinct diseases, ages seen) per published class, by zip.
async fn classes(path: &std::path::Path) -> Vec<(String, i64, i64, Vec<i64>)> {
    let ctx = SessionContext::new();
    ctx.register_parquet("out", path.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let batches = ctx
        .sql(
            "SELECT CAST(zip AS VARCHAR) AS z, count(*), count(DISTINCT disease), \
             array_agg(DISTINCT CAST(age AS BIGINT)) FROM out GROUP BY zip ORDER BY z",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut out = Vec::new();
    for b in &batches {
        for i in 0..b.num_rows() {
            let ages = b.column(3).as_list::<i32>().value(i);
            let mut ages = ages.as_primitive::<Int64Type>().values().to_vec();
            ages.sort_unstable();
            out.push((
                array_value_to_string(b.column(0), i).unwrap(),
                b.column(1).as_primitive::<Int64Type>().value(i),
                b.column(2).as_primitive::<Int64Type>().value(i),
                ages,
            ));
        }
    }
    out
}

#[tokio::test]
async fn classes_below_the_thresholds_get_records_inside_them() {
    let dir = tempfile::tempdir().unwrap();
    release(dir.path(), "[synthetic]\nk = 4\nl = 2\nmax_share = 0.5", "")
        .await
        .unwrap();
    let published = classes(&dir.path().join("out.parquet")).await;
    assert_eq!(published.len(), 3);
    // A: 2 real + 2 synthetic, now 2 distinct diseases; its synthetic ages are its own
    assert_eq!(published[0].0, "1000");
    assert_eq!((published[0].1, published[0].2), (4, 2));
    assert_eq!(published[0].3, vec![31, 32]);
    // B: 3 + 1, ages of B only
    assert_eq!((published[1].1, published[1].2), (4, 3));
    assert_eq!(published[1].3, vec![41, 42, 43]);
    // C untouched
    assert_eq!((published[2].1, published[2].2), (5, 2));

    let report = read_json(dir.path().join("report.json"));
    let synthetic = &report["publish"]["synthetic"];
    assert_eq!(synthetic["rows"], 3);
    assert_eq!(synthetic["classes_topped_up"], 2);
    assert_eq!(synthetic["classes_left_below"], 0);
    assert!((synthetic["share"].as_f64().unwrap() - 3.0 / 13.0).abs() < 1e-12);
    assert!((synthetic["count_bias"]["total"].as_f64().unwrap() - 0.3).abs() < 1e-12);
    assert!((synthetic["count_bias"]["max_class"].as_f64().unwrap() - 1.0).abs() < 1e-12);
    let served: Vec<(String, u64, u64)> = synthetic["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["labels"][0].as_str().unwrap().to_string(),
                c["real_rows"].as_u64().unwrap(),
                c["added"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        served,
        vec![("1000".to_string(), 2, 2), ("2000".to_string(), 3, 1)]
    );
    // verified again, with them
    let verification = &report["publish"]["verification"];
    assert_eq!(verification["rows"], 13);
    assert_eq!(verification["k"], 4);
    // post-analytics measured them: the smallest class is now 4 rows, so 1/4
    let prosecutor = report["publish"]["post_analytics"]["prosecutor_max"]
        .as_f64()
        .unwrap();
    assert!((prosecutor - 0.25).abs() < 1e-12, "{prosecutor}");

    // the same seed gives the same bytes
    let first = std::fs::read(dir.path().join("out.parquet")).unwrap();
    let again = tempfile::tempdir().unwrap();
    release(
        again.path(),
        "[synthetic]\nk = 4\nl = 2\nmax_share = 0.5",
        "",
    )
    .await
    .unwrap();
    assert_eq!(
        first,
        std::fs::read(again.path().join("out.parquet")).unwrap()
    );
}

#[tokio::test]
async fn the_cap_leaves_a_class_that_does_not_fit_below() {
    let dir = tempfile::tempdir().unwrap();
    release(dir.path(), "[synthetic]\nk = 4\nmax_share = 0.1", "")
        .await
        .unwrap();
    let published = classes(&dir.path().join("out.parquet")).await;
    let sizes: Vec<i64> = published.iter().map(|c| c.1).collect();
    assert_eq!(sizes, vec![2, 4, 5]);
    let report = read_json(dir.path().join("report.json"));
    let synthetic = &report["publish"]["synthetic"];
    assert_eq!(synthetic["rows"], 1);
    assert_eq!(synthetic["classes_left_below"], 1);
    assert_eq!(synthetic["classes"][0]["labels"][0], "2000");
}

#[tokio::test]
async fn synthetic_records_with_a_person_or_a_masked_release_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let message = release(dir.path(), "[synthetic]\nk = 4", "suppression = \"mask\"")
        .await
        .unwrap_err();
    assert!(
        message.contains("[synthetic] needs privacy.suppression = \"drop\""),
        "{message}"
    );
    assert!(!dir.path().join("out.parquet").exists());
    let message = release(dir.path(), "[synthetic]\nk = 1", "")
        .await
        .unwrap_err();
    assert!(
        message.contains("synthetic.k must be at least 2, got 1"),
        "{message}"
    );
    assert!(!dir.path().join("out.parquet").exists());
}
