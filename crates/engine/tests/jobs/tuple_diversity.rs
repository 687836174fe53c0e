//! `tuple_diversity` as a policy requirement (issue 37, item 5): searched, published and
//! verified, recounted here from the written rows; the bad inputs write nothing.

use std::path::Path;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use crate::support::{self, ADULT_QIS, repo};

const QIS: [&str; 4] = ["sex", "race", "marital-status", "education"];

/// Adult with four quasi-identifiers without hierarchies, `sensitive` sensitive with
/// `requirement` on it, the other columns insensitive.
fn policy(dir: &Path, privacy: &str, sensitive: &str, requirement: &str) -> String {
    let mut text = format!(
        "[input]\npath = \"{}\"\n[privacy]\n{privacy}\n[attributes]\n",
        repo("examples/adult/adult.parquet").display()
    );
    for column in ADULT_QIS.into_iter().chain(["salary-class"]) {
        let spec = if QIS.contains(&column) {
            "role = \"quasi_identifier\"".to_string()
        } else if column == sensitive {
            format!("role = \"sensitive\", {requirement}")
        } else {
            "role = \"insensitive\"".to_string()
        };
        text.push_str(&format!("\"{column}\" = {{ {spec} }}\n"));
    }
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

async fn anonymize(policy: &str, out: &Path, report: &Path, algorithm: &str) -> Result<(), String> {
    support::anonymize(policy, out, Some(report), |o| {
        o.method = support::algorithm(algorithm)
    })
    .await
    .map(|_| ())
}

/// Per written class (grouped by the quasi-identifiers' labels): rows, min and max age, and
/// whether every label is `*`.
async fn age_ranges(out: &Path) -> Vec<(i64, f64, f64, bool)> {
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "out",
        out.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let keys: Vec<String> = QIS.iter().map(|q| format!("\"{q}\"")).collect();
    let all_top: Vec<String> = keys.iter().map(|k| format!("{k} = '*'")).collect();
    let sql = format!(
        "SELECT count(*), CAST(min(age) AS DOUBLE), CAST(max(age) AS DOUBLE), \
         bool_and({}) FROM out GROUP BY {}",
        all_top.join(" AND "),
        keys.join(", ")
    );
    let batches = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    let mut classes = Vec::new();
    for b in &batches {
        let rows = b.column(0).as_primitive::<Int64Type>();
        let lo = b.column(1).as_primitive::<Float64Type>();
        let hi = b.column(2).as_primitive::<Float64Type>();
        let top = cast(b.column(3), &DataType::Boolean).unwrap();
        let top = top.as_boolean();
        for i in 0..b.num_rows() {
            classes.push((rows.value(i), lo.value(i), hi.value(i), top.value(i)));
        }
    }
    classes
}

/// Adult, age sensitive with tuple diversity ≥ 0.5 (a class must span half of age's range),
/// k = 5, 5 % suppression: searched full-domain (failing classes dropped) and with Mondrian
/// (masked), published and verified. Recounted from the written file: every class has ≥ 5
/// rows and (max − min)/(max_T − min_T) ≥ 0.5, T the written rows (the masked all-`*` class,
/// when it fails on its own, excluded as the verification excludes it); the report's worst
/// value is the recount's. The requirement binds: k = 5 alone publishes a narrower class.
#[tokio::test]
async fn adult_tuple_diversity_publishes_verified_output() {
    let dir = tempfile::tempdir().unwrap();
    let bound = 0.5;
    for (algorithm, suppression) in [("optimal", "drop"), ("mondrian", "mask")] {
        let privacy = format!("k = 5\nmax_suppression = 0.05\nsuppression = \"{suppression}\"");
        let context = algorithm;
        // k alone: some class spans less than half the range
        let k_alone = policy(dir.path(), &privacy, "age", "");
        let out = dir.path().join(format!("k-{algorithm}.parquet"));
        let report = dir.path().join(format!("k-{algorithm}.json"));
        let published = anonymize(&k_alone, &out, &report, algorithm).await;
        assert!(published.is_ok(), "{context}: {published:?}");
        let classes = age_ranges(&out).await;
        let lo = classes.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
        let hi = classes
            .iter()
            .map(|c| c.2)
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(
            classes.iter().any(|c| (c.2 - c.1) / (hi - lo) < bound),
            "{context}: k alone already meets the bound"
        );

        let with_bound = policy(
            dir.path(),
            &privacy,
            "age",
            &format!("tuple_diversity = {bound}"),
        );
        let out = dir.path().join(format!("td-{algorithm}.parquet"));
        let report = dir.path().join(format!("td-{algorithm}.json"));
        let published = anonymize(&with_bound, &out, &report, algorithm).await;
        assert!(published.is_ok(), "{context}: {published:?}");
        let classes = age_ranges(&out).await;
        let lo = classes.iter().map(|c| c.1).fold(f64::INFINITY, f64::min);
        let hi = classes
            .iter()
            .map(|c| c.2)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut worst = f64::INFINITY;
        let mut published = 0;
        for &(rows, min, max, all_top) in &classes {
            let spread = (max - min) / (hi - lo);
            let met = spread >= bound && rows >= 5;
            if suppression == "mask" && all_top && !met {
                continue;
            }
            assert!(met, "{context}: a class of {rows} rows spans {spread}");
            worst = worst.min(spread);
            published += rows;
        }
        assert!(
            published as f64 >= 30_162.0 * 0.95,
            "{context}: {published}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        let reported = json["publish"]["verification"]["sensitive"][0]["tuple_diversity"]
            .as_f64()
            .unwrap_or_else(|| panic!("{context}: no tuple_diversity in the report"));
        assert!(
            (reported - worst).abs() < 1e-9,
            "{context}: report {reported}, recount {worst}"
        );
    }
}

/// Tuple diversity on a text attribute, and bounds outside (0, 1]: one error naming the
/// policy and the column, and nothing written.
#[tokio::test]
async fn bad_tuple_diversity_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.parquet");
    let report = dir.path().join("report.json");
    let text = policy(dir.path(), "k = 5", "salary-class", "tuple_diversity = 0.5");
    let message = anonymize(&text, &out, &report, "mondrian")
        .await
        .unwrap_err();
    assert!(
        message.contains(&format!("policy {text}"))
            && message.contains("sensitive attribute 'salary-class' has type Utf8")
            && message.contains(": tuple_diversity needs a numeric, decimal or temporal column"),
        "{message}"
    );
    assert!(!out.exists() && !report.exists());
    for bad in ["0", "1.5", "-0.25"] {
        let text = policy(
            dir.path(),
            "k = 5",
            "age",
            &format!("tuple_diversity = {bad}"),
        );
        let message = anonymize(&text, &out, &report, "optimal")
            .await
            .unwrap_err();
        assert!(
            message.contains(&format!("policy {text}"))
                && message.contains(&format!(
                    "tuple_diversity of 'age': tuple_diversity is a share of the attribute's \
                     range in (0, 1], got {}",
                    bad.parse::<f64>().unwrap()
                )),
            "{message}"
        );
        assert!(!out.exists() && !report.exists());
    }
}
