//! Criterion benches: each anonymity function next to its plain-SQL floor, on 1M generated rows
//! (`cargo bench`). The one-run ratio report on 10M rows is `anon bench` (see BENCHMARKS.md).
//!
//! All queries are in one group, so criterion's report lists each floor right above the
//! function queries it bounds. Sample counts are small so the whole run takes a few minutes.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use tokio::runtime::Runtime;

// the same allocator as the `anon` binary, so the figures are comparable with `anon-bench`
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ROWS: usize = 1_000_000;

fn setup(runtime: &Runtime, dir: &std::path::Path) -> SessionContext {
    let path = dir.join("patients.parquet");
    datafusion_anonymity_generate::write_patients(&path, ROWS, 42).expect("generate data");
    let ctx = SessionContext::new();
    datafusion_anonymity_engine::register(&ctx).expect("register functions");
    runtime
        .block_on(ctx.register_parquet(
            "patients",
            path.to_string_lossy().as_ref(),
            ParquetReadOptions::default(),
        ))
        .expect("register table");
    ctx
}

fn queries() -> Vec<(&'static str, String)> {
    let grouped = |select: &str| {
        format!("SELECT zip, age, sex, {select} FROM patients GROUP BY zip, age, sex")
    };
    vec![
        // floor of the one-count functions
        ("floor count(*)", grouped("count(*)")),
        ("k_anonymity()", grouped("k_anonymity()")),
        (
            "reidentification_risk()",
            grouped("reidentification_risk()"),
        ),
        ("entropy_leakage()", grouped("entropy_leakage()")),
        // floor of the distinct-count functions
        (
            "floor count(DISTINCT patient_id)",
            grouped("count(DISTINCT patient_id)"),
        ),
        (
            "k_anonymity(patient_id)",
            grouped("k_anonymity(patient_id)"),
        ),
        (
            "floor count(DISTINCT disease)",
            grouped("count(DISTINCT disease)"),
        ),
        ("l_diversity(disease)", grouped("l_diversity(disease)")),
        // floor of the histogram functions
        (
            "floor GROUP BY qi, disease",
            "SELECT zip, age, sex, disease, count(*) FROM patients GROUP BY zip, age, sex, disease"
                .to_string(),
        ),
        (
            "entropy_l_diversity(disease)",
            grouped("entropy_l_diversity(disease)"),
        ),
        (
            "recursive_cl_diversity(disease, 2)",
            grouped("recursive_cl_diversity(disease, 2)"),
        ),
        ("t_closeness(disease)", grouped("t_closeness(disease)")),
        (
            "floor GROUP BY qi, income",
            "SELECT zip, age, sex, income, count(*) FROM patients GROUP BY zip, age, sex, income"
                .to_string(),
        ),
        (
            "t_closeness_ordered(income)",
            grouped("t_closeness_ordered(income)"),
        ),
        // floor of ncp: per-class min/max and distinct count
        (
            "floor min, max, count(DISTINCT zip)",
            grouped("min(age), max(age), count(DISTINCT zip)"),
        ),
        ("ncp(zip, age)", grouped("ncp(zip, age)")),
        // everything at once, against the plain count
        (
            "all functions",
            grouped(
                "k_anonymity(), k_anonymity(patient_id), l_diversity(disease), \
                 entropy_l_diversity(disease), recursive_cl_diversity(disease, 2), \
                 t_closeness(disease), t_closeness_ordered(income), ncp(zip, age), \
                 entropy_leakage(), reidentification_risk()",
            ),
        ),
    ]
}

fn functions(c: &mut Criterion) {
    let runtime = Runtime::new().expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let ctx = setup(&runtime, dir.path());
    let mut group = c.benchmark_group("1M rows, GROUP BY zip, age, sex");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (name, sql) in &queries() {
        group.bench_function(*name, |b| {
            b.iter(|| {
                runtime
                    .block_on(async { ctx.sql(sql).await?.collect().await })
                    .expect("query")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, functions);
criterion_main!(benches);
