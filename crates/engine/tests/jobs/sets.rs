//! `anonymize` with set-based local recoding (issue 37): quasi-identifiers without a
//! hierarchy, weights, and the bad inputs that write nothing.

use std::path::Path;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use crate::support::{self, ADULT_QIS, repo};

/// Adult with `qis` as quasi-identifiers without hierarchies (`extra` appended to each), the
/// other columns insensitive, salary-class sensitive.
fn set_policy(dir: &Path, privacy: &str, qis: &[&str], extra: &str) -> String {
    let mut text = format!(
        "[input]\npath = \"{}\"\n[privacy]\n{privacy}\n[attributes]\n",
        repo("examples/adult/adult.parquet").display()
    );
    for qi in ADULT_QIS {
        if qis.contains(&qi) {
            text.push_str(&format!(
                "\"{qi}\" = {{ role = \"quasi_identifier\"{extra} }}\n"
            ));
        } else {
            text.push_str(&format!("\"{qi}\" = {{ role = \"insensitive\" }}\n"));
        }
    }
    text.push_str("\"salary-class\" = { role = \"sensitive\" }\n");
    let path = dir.join("policy.toml");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Mondrian over `policy` into `out`.
async fn run(policy: &str, out: &Path) -> Result<(), String> {
    support::anonymize(policy, out, None, |o| {
        o.method = support::algorithm("mondrian")
    })
    .await
    .map(|_| ())
}

/// Without hierarchies, Mondrian publishes sets and value-free intervals; the output passes
/// its own verification (the command fails otherwise), and every workclass label is a set
/// holding values or `*`, every age label a number or an open interval.
#[tokio::test]
async fn adult_without_hierarchies_publishes_sets() {
    let dir = tempfile::tempdir().unwrap();
    let policy = set_policy(dir.path(), "k = 5", &["age", "workclass", "education"], "");
    let out = dir.path().join("out.parquet");
    run(&policy, &out).await.unwrap();
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "t",
        out.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let batches = ctx
        .sql("SELECT age, workclass FROM t")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut sets = 0;
    for batch in batches {
        let age = cast(batch.column(0), &DataType::Utf8).unwrap();
        let work = cast(batch.column(1), &DataType::Utf8).unwrap();
        let (age, work) = (age.as_string::<i32>(), work.as_string::<i32>());
        for i in 0..batch.num_rows() {
            let w = work.value(i);
            assert!(w == "*" || (w.starts_with('{') && w.ends_with('}')), "{w}");
            sets += usize::from(w.contains(", "));
            let a = age.value(i);
            assert!(
                a == "*" || a.parse::<f64>().is_ok() || (a.starts_with('(') && a.ends_with(')')),
                "{a}"
            );
        }
    }
    assert!(sets > 0, "no set of several values");
}

/// A set beyond `max_set_values` with no `set_fallback`: one error naming the policy and the
/// column, and nothing written.
#[tokio::test]
async fn a_set_over_the_cap_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // k = 20000 of 30,162 rows: one class, holding every workclass (7 values)
    let policy = set_policy(
        dir.path(),
        "k = 20000\nmax_set_values = 3",
        &["workclass"],
        "",
    );
    let out = dir.path().join("out.parquet");
    let message = run(&policy, &out).await.unwrap_err();
    assert!(
        message.contains(&format!("policy {policy}"))
            && message.contains("quasi-identifier 'workclass'")
            && message.contains("max_set_values = 3")
            && message.contains("nothing written"),
        "{message}"
    );
    assert!(!out.exists());
    // with the fallback, the set is published as `*`
    let policy = set_policy(
        dir.path(),
        "k = 20000\nmax_set_values = 3\nset_fallback = \"*\"",
        &["workclass"],
        "",
    );
    run(&policy, &out).await.unwrap();
}

/// A weight at or below 0: one error naming the policy and the column, nothing written.
#[tokio::test]
async fn a_weight_at_or_below_zero_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for weight in ["0", "-2.5"] {
        let policy = set_policy(
            dir.path(),
            "k = 5",
            &["age", "workclass"],
            &format!(", weight = {weight}"),
        );
        let out = dir.path().join("out.parquet");
        let message = run(&policy, &out).await.unwrap_err();
        assert!(
            message.contains(&format!("policy {policy}"))
                && message.contains("quasi-identifier 'age': weight must be a number above 0"),
            "{message}"
        );
        assert!(!out.exists());
    }
}
