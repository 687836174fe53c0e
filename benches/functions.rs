//! Criterion benches: each anonymity function next to its plain-SQL floor, on 1M generated rows
//! (`cargo bench`). The one-run ratio report on 10M rows is `anon bench` (see BENCHMARKS.md).

use criterion::{Criterion, criterion_group, criterion_main};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use tokio::runtime::Runtime;

const ROWS: usize = 1_000_000;

fn setup(runtime: &Runtime, dir: &std::path::Path) -> SessionContext {
    let path = dir.join("patients.parquet");
    datafusion_anonymity::generate::write_patients(&path, ROWS, 42).expect("generate data");
    let ctx = SessionContext::new();
    datafusion_anonymity::register(&ctx).expect("register functions");
    runtime
        .block_on(ctx.register_parquet(
            "patients",
            path.to_string_lossy().as_ref(),
            ParquetReadOptions::default(),
        ))
        .expect("register table");
    ctx
}

fn functions(c: &mut Criterion) {
    let runtime = Runtime::new().expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let ctx = setup(&runtime, dir.path());
    let grouped = |select: &str| {
        format!("SELECT zip, age, sex, {select} FROM patients GROUP BY zip, age, sex")
    };
    let queries = [
        ("floor count(*)", grouped("count(*)")),
        ("k_anonymity()", grouped("k_anonymity()")),
        (
            "floor count(DISTINCT disease)",
            grouped("count(DISTINCT disease)"),
        ),
        ("l_diversity(disease)", grouped("l_diversity(disease)")),
        (
            "entropy_l_diversity(disease)",
            grouped("entropy_l_diversity(disease)"),
        ),
        (
            "floor GROUP BY qi, disease",
            "SELECT zip, age, sex, disease, count(*) FROM patients GROUP BY zip, age, sex, disease"
                .to_string(),
        ),
        ("t_closeness(disease)", grouped("t_closeness(disease)")),
        (
            "t_closeness_ordered(income)",
            grouped("t_closeness_ordered(income)"),
        ),
        ("ncp(zip, age)", grouped("ncp(zip, age)")),
        (
            "k_anonymity(patient_id)",
            grouped("k_anonymity(patient_id)"),
        ),
    ];
    let mut group = c.benchmark_group("per-class functions, 1M rows, GROUP BY zip, age, sex");
    group.sample_size(10);
    for (name, sql) in &queries {
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
