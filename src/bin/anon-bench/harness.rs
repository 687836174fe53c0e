//! The harness of `anon-bench`: times each anonymity query against its plain-SQL floor in one run, on the same
//! data, and prints the ratios with their targets (see BENCHMARKS.md).
//!
//! Hygiene: one process, one data file, one `SessionContext`; every query runs once untimed
//! (warm-up: file metadata, page cache, allocator) and then `--iterations` times, with the floor
//! and the function query interleaved so background load hits both alike. Each run collects the
//! full result. The reported time is the median; min and max show the spread.

use crate::measure::{
    PATIENTS_POLICY, Timings, cpu_seconds, interleaved, median, peak_rss_mib, print_row,
    reset_peak_rss, run_once, secs,
};
use crate::{bucketize, large};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::Result;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use datafusion_anonymity_engine::search::local::LocalAlgorithm;
use datafusion_anonymity_engine::search::{Algorithm, Method};

/// Rows of `--quick`.
const QUICK_ROWS: usize = 100_000;

/// `anon-bench`: times each anonymity query and job against its plain-SQL floor, measured in
/// the same run, and prints the ratios (BENCHMARKS.md has the figures and commands).
#[derive(clap::Parser, Debug)]
#[command(name = "anon-bench")]
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
    /// Smoke test: 100,000 rows and one timed run (overrides --rows and --iterations).
    #[arg(long)]
    pub quick: bool,
    /// Which comparisons to run.
    #[arg(long, value_enum, default_value_t = Suite::All)]
    pub suite: Suite,
    /// The memory limit of the large suite's `anon anonymize` and of the shuffle suite's
    /// sessions.
    #[arg(long, default_value = "2GiB")]
    pub memory_limit: String,
    /// The large suite's input as a URL (e.g. `s3://bucket/patients.parquet`) instead of the
    /// generated local file.
    #[arg(long)]
    pub data_url: Option<String>,
}

/// Groups of comparisons of `anon-bench`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// Everything.
    All,
    /// The measurement functions against GROUP BY floors.
    Measure,
    /// `anon apply` (recode, suppress, write, verify) and `anon anonymize` (scan, search,
    /// apply, write, verify) against a plain COPY to Parquet.
    Publish,
    /// `anon profile` against `GROUP BY` the quasi-identifiers.
    Profile,
    /// `anon anonymize --algorithm mondrian` (local recoding) against a plain COPY to Parquet.
    Local,
    /// (c,k)-anonymization of the generated medical table (read, bucketize, write GT and ST,
    /// verify) against a plain COPY to Parquet, and the fingerprint-correlation attack.
    Bucketize,
    /// The figures of seed 002 §6 for (c,k) and (p,k) on the medical table (try --rows
    /// 100000): NCP, query error and vulnerable records, as Markdown tables.
    BucketizeExperiments,
    /// `anon apply` with the rows shuffled (the default) against the same apply writing them
    /// in input order (not in `all`): the shuffle's cost and each variant's peak RSS.
    Shuffle,
    /// Whole `anon anonymize --memory-limit` and COPY processes on N generated rows (not in
    /// `all`): time ratio and each process's peak RSS.
    Large,
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

/// The data file: `--data`, or generated once into `<target dir>/bench-data/` (the target dir is
/// `$CARGO_TARGET_DIR` when set, else `target`), and reused by later runs.
fn data_path(args: &BenchArgs, rows: usize) -> Result<PathBuf> {
    if let Some(path) = &args.data {
        return Ok(path.clone());
    }
    let dir = bench_data_dir()?;
    let path = dir.join(format!("patients-{rows}-{}.parquet", args.seed));
    if !path.exists() {
        eprintln!("generating {rows} rows into {}", path.display());
        let start = Instant::now();
        datafusion_anonymity_generate::write_patients(&path, rows, args.seed)?;
        eprintln!("generated in {:.1} s", start.elapsed().as_secs_f64());
    }
    Ok(path)
}

/// Where generated bench data are kept: `$CARGO_TARGET_DIR/bench-data` (or `target/`).
fn bench_data_dir() -> Result<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from("target"), PathBuf::from);
    let dir = target.join("bench-data");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// The 1-minute load average, if the platform has `/proc/loadavg`.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "n/a".to_string())
}

async fn count_rows(ctx: &SessionContext) -> Result<i64> {
    let batches = ctx
        .sql("SELECT count(*) FROM patients")
        .await?
        .collect()
        .await?;
    Ok(batches
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .map_or(0, |c| c.value(0)))
}

/// Runs the benchmark and prints one line per case.
pub async fn run(args: BenchArgs) -> Result<()> {
    let (rows, iterations) = if args.quick {
        (QUICK_ROWS, 1)
    } else {
        (args.rows, args.iterations.max(1))
    };
    if args.suite == Suite::BucketizeExperiments {
        let dir = bench_data_dir()?;
        return bucketize::experiments(&bucketize::medical_path(&dir, rows, args.seed)?).await;
    }
    let path = data_path(&args, rows)?;
    if args.suite == Suite::Large {
        // absolute: the policy is written to the scratch directory, and a relative input
        // path would be read relative to it
        let input = match &args.data_url {
            Some(url) => url.clone(),
            None => std::path::absolute(&path)?.display().to_string(),
        };
        let scratch = path.with_extension("bench-large");
        large::run(&input, &scratch, &args.memory_limit, iterations)?;
        return Ok(());
    }
    let ctx = SessionContext::new();
    datafusion_anonymity_engine::register(&ctx)?;
    register_data(&ctx, &path).await?;
    let table_rows = count_rows(&ctx).await?;
    println!("data:              {} ({table_rows} rows)", path.display());
    println!(
        "machine:           {} cores (available parallelism), load average {} at start",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average()
    );
    println!(
        "datafusion:        {}, target_partitions {}, batch_size {}",
        datafusion::DATAFUSION_VERSION,
        ctx.state().config().target_partitions(),
        ctx.state().config().batch_size()
    );
    println!(
        "timing:            1 warm-up + {iterations} timed runs per query, median; floor and function interleaved"
    );
    println!("group by:          {QIS}");
    println!();
    println!(
        "{:<22} {:>9} {:>9} {:>6} {:>6}  {:<6} {:>8} {:>17} {:>17}",
        "query",
        "floor_s",
        "fn_s",
        "ratio",
        "target",
        "result",
        "classes",
        "floor_min-max_s",
        "fn_min-max_s"
    );
    let mut over = Vec::new();
    let measure = matches!(args.suite, Suite::All | Suite::Measure);
    let mut case_count = 0;
    for case in cases().into_iter().filter(|_| measure) {
        case_count += 1;
        // warm-up, untimed
        run_once(&ctx, &case.floor).await?;
        let (_, classes) = run_once(&ctx, &case.query).await?;
        let mut floor = Timings::default();
        let mut query = Timings::default();
        for _ in 0..iterations {
            floor.0.push(run_once(&ctx, &case.floor).await?.0);
            query.0.push(run_once(&ctx, &case.query).await?.0);
        }
        if !print_row(case.name, &floor, &query, case.target, &classes.to_string()) {
            over.push(case.name);
        }
    }
    if matches!(args.suite, Suite::All | Suite::Measure | Suite::Profile) {
        case_count += 1;
        profile_case(&ctx, iterations, &mut over).await?;
    }
    if matches!(args.suite, Suite::All | Suite::Publish) {
        case_count += 1;
        if !publish_case(&ctx, &path, iterations).await? {
            over.push("anon apply");
        }
        case_count += 1;
        if !anonymize_case(
            &ctx,
            &path,
            iterations,
            Method::FullDomain(Algorithm::Optimal),
        )
        .await?
        {
            over.push("anon anonymize");
        }
    }
    if args.suite == Suite::Shuffle {
        case_count += 1;
        let limit = datafusion_anonymity_engine::session::parse_size(&args.memory_limit)?;
        if !shuffle_case(&path, iterations, limit).await? {
            over.push("anon apply, shuffled");
        }
    }
    if matches!(args.suite, Suite::All | Suite::Publish | Suite::Local) {
        case_count += 1;
        let mondrian = Method::Local(LocalAlgorithm::Mondrian);
        if !anonymize_case(&ctx, &path, iterations, mondrian).await? {
            over.push("anon anonymize --algorithm mondrian");
        }
    }
    if matches!(args.suite, Suite::All | Suite::Bucketize) {
        case_count += 1;
        let medical = bucketize::medical_path(&bench_data_dir()?, table_rows as usize, args.seed)?;
        if !bucketize::ck_case(&medical, iterations).await? {
            over.push("anonymize (c,k)");
        }
    }
    println!();
    println!("load average {} at end", load_average());
    if over.is_empty() {
        println!("summary: all {case_count} queries within target");
    } else {
        println!("summary: over target: {}", over.join(", "));
    }
    Ok(())
}

/// `anon apply` of the patients policy against `COPY (SELECT * FROM patients) TO ... STORED AS
/// PARQUET`, both writing a directory of Parquet files next to the data; prints one line and
/// returns whether the ratio is within its 1.5 target.
async fn publish_case(ctx: &SessionContext, path: &Path, iterations: usize) -> Result<bool> {
    const TARGET: f64 = 1.5;
    let scratch = path.with_extension("bench-out");
    std::fs::create_dir_all(&scratch)?;
    let copy_dir = scratch.join("copy");
    let apply_dir = scratch.join("apply");
    let copy = format!(
        "COPY (SELECT * FROM patients) TO '{}/' STORED AS PARQUET",
        copy_dir.display()
    );
    // smaller tables (e.g. --quick) suppress more than the policy's 5%: lift the limit so
    // every size runs; the suppressed rows are printed
    let text = PATIENTS_POLICY.replace("max_suppression = 0.05", "max_suppression = 1.0");
    let mut policy = datafusion_anonymity_engine::policy::Policy::from_toml(
        "examples/patients/policy.toml",
        Path::new("."),
        &text,
    )?;
    policy.set_input(datafusion_anonymity_engine::storage::Location::Local(
        path.to_path_buf(),
    ));
    let publish_ctx = SessionContext::new_with_config(ctx.state().config().clone());
    datafusion_anonymity_engine::register(&publish_ctx)?;
    policy.register(&publish_ctx).await?;
    let levels = policy.transformation().unwrap_or_default();
    let mut suppressed = 0;
    let mut phases = datafusion_anonymity_engine::publish::PublishTimings::default();
    let apply_once = async || -> Result<Duration> {
        let start = Instant::now();
        let report = datafusion_anonymity_engine::publish::publish(
            &publish_ctx,
            &policy,
            &datafusion_anonymity_engine::release::Release::FullDomain(levels.clone()),
            &datafusion_anonymity_engine::storage::Location::Local(apply_dir.clone()),
            true,
        )
        .await?;
        suppressed = report.suppressed_rows;
        phases = report.seconds;
        Ok(start.elapsed())
    };
    let copy_once = async || -> Result<Duration> {
        let _ = std::fs::remove_dir_all(&copy_dir);
        Ok(run_once(ctx, &copy).await?.0)
    };
    let (floor, query) = interleaved(iterations, copy_once, apply_once).await?;
    let _ = std::fs::remove_dir_all(&scratch);
    let pass = print_row("anon apply (5 QIs)", &floor, &query, TARGET, "-");
    println!(
        "                       (floor: COPY of all rows to Parquet; apply: recode {} at levels {levels:?}, suppress, write, verify; {suppressed} rows suppressed; last run: classes {:.2} s, write {:.2} s, verify {:.2} s)",
        policy
            .quasi_identifiers()
            .iter()
            .map(|(name, _)| name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        phases.classes,
        phases.write,
        phases.verify,
    );
    Ok(pass)
}

/// `anon apply` of the publish case's policy with its rows shuffled (seed 1) against the same
/// apply in input order, interleaved, both writing a directory of Parquet files, in a session
/// of `memory_limit` bytes (the shuffle keeps rows within its pool, spilling beyond); prints the
/// medians, the ratio against the 1.15 target and each variant's largest peak RSS (reset
/// before every run).
async fn shuffle_case(path: &Path, iterations: usize, memory_limit: usize) -> Result<bool> {
    use datafusion_anonymity_engine::publish::RowOrder;
    const TARGET: f64 = 1.15;
    let scratch = path.with_extension("bench-shuffle");
    std::fs::create_dir_all(&scratch)?;
    let text = PATIENTS_POLICY.replace("max_suppression = 0.05", "max_suppression = 1.0");
    let mut policy = datafusion_anonymity_engine::policy::Policy::from_toml(
        "examples/patients/policy.toml",
        Path::new("."),
        &text,
    )?;
    policy.set_input(datafusion_anonymity_engine::storage::Location::Local(
        path.to_path_buf(),
    ));
    let ctx = datafusion_anonymity_engine::session::context(Some(memory_limit))?;
    policy.register(&ctx).await?;
    let release = datafusion_anonymity_engine::release::Release::FullDomain(
        policy.transformation().unwrap_or_default(),
    );
    let mut peaks = [0u64; 2];
    let mut phases = [datafusion_anonymity_engine::publish::PublishTimings::default(); 2];
    // CPU seconds of each run: on a machine shared with other work, the wall-clock ratio
    // swings with the neighbours' load, the work done much less
    let mut cpu: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let mut once = async |order: RowOrder| -> Result<Duration> {
        let variant = usize::from(order != RowOrder::Input);
        reset_peak_rss();
        let cpu_start = cpu_seconds();
        let start = Instant::now();
        let report = datafusion_anonymity_engine::publish::publish_ordered(
            &ctx,
            &policy,
            &release,
            None,
            &datafusion_anonymity_engine::storage::Location::Local(scratch.join(order.name())),
            true,
            order,
        )
        .await?;
        let elapsed = start.elapsed();
        if let (Some(from), Some(to)) = (cpu_start, cpu_seconds()) {
            cpu[variant].push(to - from);
        }
        peaks[variant] = peaks[variant].max(peak_rss_mib().unwrap_or(0));
        phases[variant] = report.seconds;
        Ok(elapsed)
    };
    let (mut kept, mut shuffled) = (Timings::default(), Timings::default());
    // one warm-up of each, then the two in turn
    once(RowOrder::Input).await?;
    once(RowOrder::Shuffled(1)).await?;
    for _ in 0..iterations {
        kept.0.push(once(RowOrder::Input).await?);
        shuffled.0.push(once(RowOrder::Shuffled(1)).await?);
    }
    for runs in &mut cpu {
        // the warm-up's
        runs.remove(0);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let pass = print_row("anon apply, shuffled", &kept, &shuffled, TARGET, "-");
    println!(
        "                       (floor: the same apply in input order; peak RSS {} MiB in \
         input order, {} MiB shuffled; last runs' write phase {:.2} s / {:.2} s; memory \
         limit {} MiB, the pool {} MiB)",
        peaks[0],
        peaks[1],
        phases[0].write,
        phases[1].write,
        memory_limit >> 20,
        ((memory_limit as f64 * datafusion_anonymity_engine::session::POOL_SHARE) as usize) >> 20
    );
    if let [Some(kept), Some(shuffled)] = cpu.map(|runs| median(&runs)) {
        println!(
            "                       (CPU time, user + system, median: {kept:.2} s in input \
             order, {shuffled:.2} s shuffled, ratio {:.2})",
            shuffled / kept
        );
    }
    Ok(pass)
}

/// Memory of the anonymize case: DataFusion's pool (spilling beyond it); the frequency set
/// and the search live outside the pool and show in the peak RSS printed.
const ANONYMIZE_MEMORY_LIMIT: usize = 2 * 1024 * 1024 * 1024;

/// `anon anonymize` of the patients policy (5 quasi-identifiers, k = 5, at most 5%
/// suppressed) end to end with `method` — frequency set, the decision (optimal search or local
/// recoding), failing classes (derived from the frequency set; printed as the suppression
/// count), write, verify — under a 2 GiB memory pool, against the same COPY as the publish
/// case; prints the phases and the peak RSS of the case.
async fn anonymize_case(
    ctx: &SessionContext,
    path: &Path,
    iterations: usize,
    method: datafusion_anonymity_engine::search::Method,
) -> Result<bool> {
    const TARGET: f64 = 3.0;
    let scratch = path.with_extension(format!("bench-{}", method.name()));
    std::fs::create_dir_all(&scratch)?;
    let copy_dir = scratch.join("copy");
    let out_dir = scratch.join("anonymized");
    let copy = format!(
        "COPY (SELECT * FROM patients) TO '{}/' STORED AS PARQUET",
        copy_dir.display()
    );
    let copy_once = async || -> Result<Duration> {
        let _ = std::fs::remove_dir_all(&copy_dir);
        Ok(run_once(ctx, &copy).await?.0)
    };
    let mut phases = String::new();
    let anonymize_once = async || -> Result<Duration> {
        let start = Instant::now();
        let ctx = datafusion_anonymity_engine::session::context(Some(ANONYMIZE_MEMORY_LIMIT))?;
        let mut policy = datafusion_anonymity_engine::policy::Policy::from_toml(
            "examples/patients/policy.toml",
            Path::new("."),
            PATIENTS_POLICY,
        )?;
        policy.set_input(datafusion_anonymity_engine::storage::Location::Local(
            path.to_path_buf(),
        ));
        policy.register_with(&ctx, false).await?;
        let sensitive = policy.requirements().constrained_attributes();
        let registered = start.elapsed();
        let freq = datafusion_anonymity_engine::search::FrequencySet::build(
            &ctx,
            policy.table_name(),
            &policy.quasi_identifiers(),
            &sensitive,
        )
        .await?;
        let built = start.elapsed();
        let decision = datafusion_anonymity_engine::search::decide(
            &freq,
            policy.requirements(),
            method,
            datafusion_anonymity_engine::search::Metric::Loss,
            datafusion_anonymity_engine::search::local::LocalOptions::default(),
            &mut |_, _| {},
        )?;
        let decided = start.elapsed();
        let report = datafusion_anonymity_engine::publish::publish_with_failing_classes(
            &ctx,
            &policy,
            &decision.release,
            Some(decision.failing.clone()),
            &datafusion_anonymity_engine::storage::Location::Local(out_dir.clone()),
            true,
        )
        .await?;
        let total = start.elapsed();
        phases = format!(
            "register+check {:.2} s, frequency set {:.2} s ({} combinations), decision {:.3} s ({}), suppression count {:.2} s, write {:.2} s, verify {:.2} s, post-analytics {:.2} s; {} rows suppressed",
            secs(registered),
            secs(built - registered),
            freq.combinations(),
            secs(decided - built),
            decision.summary(&freq),
            report.seconds.classes,
            report.seconds.write,
            report.seconds.verify,
            report.seconds.post_analytics,
            report.suppressed_rows,
        );
        Ok(total)
    };
    let (floor, query) = interleaved(iterations, copy_once, anonymize_once).await?;
    let peak = peak_rss_mib();
    let _ = std::fs::remove_dir_all(&scratch);
    let pass = print_row(
        &format!("anonymize {}", method.name()),
        &floor,
        &query,
        TARGET,
        "-",
    );
    println!("                       (last run: {phases})");
    println!(
        "                       (memory pool 2 GiB; peak RSS of the process since the case began, COPY included: {})",
        peak.map_or("n/a".to_string(), |m| format!("{m} MiB"))
    );
    Ok(pass)
}

/// The whole `anon profile` (QIs zip, age, sex; sensitive disease; no original) against
/// `SELECT zip, age, sex, count(*) … GROUP BY zip, age, sex`, interleaved like the SQL cases.
async fn profile_case(
    ctx: &SessionContext,
    iterations: usize,
    over: &mut Vec<&'static str>,
) -> Result<()> {
    const NAME: &str = "anon profile";
    const TARGET: f64 = 4.0;
    let floor_sql = format!("SELECT {QIS}, count(*) FROM patients GROUP BY {QIS}");
    let mut options = datafusion_anonymity_engine::profile::ProfileOptions::new(
        "patients",
        QIS.split(',').map(|q| q.trim().to_string()).collect(),
    );
    options.sensitive = vec!["disease".to_string()];
    let run_profile = || async {
        let start = Instant::now();
        let profile = datafusion_anonymity_engine::profile::profile(ctx, &options).await?;
        Ok::<_, datafusion::error::DataFusionError>((start.elapsed(), profile.anonymity.classes))
    };
    // warm-up, untimed
    run_once(ctx, &floor_sql).await?;
    let (_, classes) = run_profile().await?;
    let mut floor = Timings::default();
    let mut query = Timings::default();
    for _ in 0..iterations {
        floor.0.push(run_once(ctx, &floor_sql).await?.0);
        query.0.push(run_profile().await?.0);
    }
    if !print_row(NAME, &floor, &query, TARGET, &classes.to_string()) {
        over.push(NAME);
    }
    Ok(())
}

async fn register_data(ctx: &SessionContext, path: &Path) -> Result<()> {
    ctx.register_parquet(
        "patients",
        &path.to_string_lossy(),
        ParquetReadOptions::default(),
    )
    .await
}
