//! `anon bench`: times each anonymity query against its plain-SQL floor in one run, on the same
//! data, and prints the ratios with their targets (see BENCHMARKS.md).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::Result;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

/// Options of `anon bench`.
#[derive(clap::Args, Debug)]
pub struct BenchArgs {
    /// Rows of generated data (ignored with --data).
    #[arg(long, default_value_t = 10_000_000)]
    pub rows: usize,
    /// An existing patients Parquet file to use instead of generated data.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Timed runs per query (after one warm-up run); the median is reported.
    #[arg(long, default_value_t = 3)]
    pub iterations: usize,
    /// Seed of the generated data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
}

/// One comparison: a query with our functions against the plain SQL that bounds its cost.
struct Case {
    name: &'static str,
    floor: String,
    query: String,
    target: f64,
}

const QIS: &str = "zip, age, sex";

fn cases() -> Vec<Case> {
    let grouped = |select: &str| format!("SELECT {QIS}, {select} FROM patients GROUP BY {QIS}");
    vec![
        Case {
            name: "k_anonymity()",
            floor: grouped("count(*)"),
            query: grouped("k_anonymity()"),
            target: 1.2,
        },
        Case {
            name: "l_diversity(disease)",
            floor: grouped("count(DISTINCT disease)"),
            query: grouped("l_diversity(disease)"),
            target: 1.2,
        },
        Case {
            name: "t_closeness(disease)",
            floor: format!("SELECT {QIS}, disease, count(*) FROM patients GROUP BY {QIS}, disease"),
            query: grouped("t_closeness(disease)"),
            target: 2.0,
        },
        Case {
            name: "all functions",
            floor: grouped("count(*)"),
            query: grouped(
                "k_anonymity(), k_anonymity(patient_id), l_diversity(disease), \
                 entropy_l_diversity(disease), recursive_cl_diversity(disease, 2), \
                 t_closeness(disease), t_closeness_ordered(income), ncp(zip, age), \
                 entropy_leakage(), reidentification_risk()",
            ),
            target: 3.0,
        },
    ]
}

/// Median wall time of `iterations` runs of `sql`, after one warm-up run.
async fn time_query(ctx: &SessionContext, sql: &str, iterations: usize) -> Result<Duration> {
    ctx.sql(sql).await?.collect().await?;
    let mut times = Vec::with_capacity(iterations);
    for _ in 0..iterations.max(1) {
        let start = Instant::now();
        ctx.sql(sql).await?.collect().await?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// The data file: `--data`, or generated once into `target/bench-data/`.
fn data_path(args: &BenchArgs) -> Result<PathBuf> {
    if let Some(path) = &args.data {
        return Ok(path.clone());
    }
    let dir = PathBuf::from("target/bench-data");
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("patients-{}-{}.parquet", args.rows, args.seed));
    if !path.exists() {
        eprintln!("generating {} rows into {}", args.rows, path.display());
        crate::generate::write_patients(&path, args.rows, args.seed)?;
    }
    Ok(path)
}

/// Runs the benchmark and prints one line per case.
pub async fn run(args: BenchArgs) -> Result<()> {
    let path = data_path(&args)?;
    let ctx = SessionContext::new();
    crate::register(&ctx)?;
    ctx.register_parquet(
        "patients",
        &path.to_string_lossy(),
        ParquetReadOptions::default(),
    )
    .await?;
    let rows = ctx
        .sql("SELECT count(*) FROM patients")
        .await?
        .collect()
        .await?;
    let rows = rows
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .map_or(0, |c| c.value(0));
    println!(
        "data: {} ({} rows), cores: {}, target_partitions: {}, iterations: {} (median)",
        path.display(),
        rows,
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        ctx.state().config().target_partitions(),
        args.iterations
    );
    println!(
        "{:<24} {:>10} {:>10} {:>7} {:>7}  result",
        "query", "floor (s)", "fn (s)", "ratio", "target"
    );
    for case in cases() {
        let floor = time_query(&ctx, &case.floor, args.iterations).await?;
        let query = time_query(&ctx, &case.query, args.iterations).await?;
        let ratio = query.as_secs_f64() / floor.as_secs_f64();
        println!(
            "{:<24} {:>10.3} {:>10.3} {:>7.2} {:>7.1}  {}",
            case.name,
            floor.as_secs_f64(),
            query.as_secs_f64(),
            ratio,
            case.target,
            if ratio <= case.target { "PASS" } else { "over" }
        );
    }
    Ok(())
}
