//! `anon anonymize`: search the best transformation for a policy, publish it, verify it,
//! report it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};

use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::progress::ScanProgress;
use datafusion_anonymity_engine::publish::{self, PublishProgress, RowOrder};
use datafusion_anonymity_engine::saved_recoding;
use datafusion_anonymity_engine::search::local::{LocalAlgorithm, LocalOptions};
use datafusion_anonymity_engine::search::{self, Algorithm, Method, Metric};
use datafusion_anonymity_engine::storage::Location;

use super::apply::{output_path, print_summary, print_utility};
use super::progress::{Progress, ScanReport, policy_input_rows, publish_report};
use super::report::{Report, ReportTargets};

#[derive(clap::Args, Debug)]
pub struct AnonymizeArgs {
    /// The policy file (its `[transformation]`, if any, is ignored: the search chooses).
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// Output: a `.parquet` file, or a directory of Parquet files (default: the policy's
    /// `[output] path`).
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
    #[command(flatten)]
    reports: super::report::ReportArgs,
    /// The algorithm. Full-domain (one level per quasi-identifier for the whole table):
    /// `optimal` (least information loss, exact) or `iab-full-domain` (the IAB best-first
    /// heuristic over whole columns). Local recoding (each class generalized on its own):
    /// `mondrian` (strict top-down partitioning), `kaca` (clustering by least weighted
    /// hierarchical distance) or `iab` (IAB generalizing only violating values and their
    /// siblings).
    #[arg(long, value_enum, default_value_t = AlgorithmArg::Optimal)]
    algorithm: AlgorithmArg,
    /// Seed of every random choice: the order of the written rows (shuffled, so that releases
    /// cannot be joined row by row) and KACA's next class. Without it, a random seed, printed
    /// as `seed:` and recorded in the report; the same input, policy and seed give
    /// byte-identical output. Keep it as secret as the data: it undoes the shuffle.
    #[arg(long)]
    seed: Option<u64>,
    /// What the optimal search minimizes.
    #[arg(long, value_enum, default_value_t = MetricArg::Loss)]
    metric: MetricArg,
    /// Replace an existing output (only once the new one is complete and verified).
    #[arg(long)]
    overwrite: bool,
    /// Memory limit of the process (e.g. 2GiB): DataFusion's pool gets 80% of it, and
    /// aggregations, sorts and the frequency set spill or stop with a clear error beyond it.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    #[command(flatten)]
    cluster: super::ClusterArg,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Also measure the release's utility against each row's own original (the profile's
    /// utility section, printed, and in the reports as `utility`): one more scan, and the
    /// quasi-identifier and sensitive columns held in memory.
    #[arg(long)]
    utility: bool,
    /// Local recoding: also write the published classes' labels to FILE (JSON), once the
    /// output is verified, for `anon apply --recoding FILE` to publish new data with them.
    /// It holds the published labels only.
    #[arg(long, value_name = "FILE")]
    recoding_out: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum AlgorithmArg {
    Optimal,
    IabFullDomain,
    Mondrian,
    Kaca,
    Iab,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum MetricArg {
    /// Hierarchy NCP ("Loss" in ARX): mean cell cost, suppressed cells cost 1.
    Loss,
    /// Σ|E|² + n·suppressed.
    Discernibility,
    /// Most equivalence classes.
    Classes,
    /// Mean generalization height (level / top) over the quasi-identifiers.
    Precision,
}

pub async fn run(args: AnonymizeArgs) -> Result<()> {
    let started = Instant::now();
    let mut policy = Policy::from_file(&args.policy)?;
    let out = output_path(args.out.clone(), &policy)?;
    publish::check_output(&out, policy.input(), args.overwrite, policy.storage()).await?;
    if let Some(bucketization) = policy.bucketization()
        && args.reports.html_report.is_some()
    {
        return Err(DataFusionError::Plan(format!(
            "policy {}: --html-report is for generalized releases; a {} release has --report \
             (JSON) only",
            policy.source(),
            bucketization.method().name()
        )));
    }
    let reports = ReportTargets::check(&args.reports, &policy, &out, args.overwrite).await?;
    if policy.bucketization().is_some() {
        return super::bucketize::run(
            policy,
            out,
            reports.json(),
            args.overwrite,
            args.memory_limit.as_deref(),
            args.quiet,
        )
        .await;
    }
    let metric = match args.metric {
        MetricArg::Loss => Metric::Loss,
        MetricArg::Discernibility => Metric::Discernibility,
        MetricArg::Classes => Metric::Classes,
        MetricArg::Precision => Metric::Precision,
    };
    let method = match args.algorithm {
        AlgorithmArg::Optimal => Method::FullDomain(Algorithm::Optimal),
        AlgorithmArg::IabFullDomain => Method::FullDomain(Algorithm::IabFullDomain),
        AlgorithmArg::Mondrian => Method::Local(LocalAlgorithm::Mondrian),
        AlgorithmArg::Kaca => Method::Local(LocalAlgorithm::Kaca),
        AlgorithmArg::Iab => Method::Local(LocalAlgorithm::Iab),
    };
    // refused before the scan, not after it
    method.metric(metric)?;
    let recoding_out =
        recoding_target(args.recoding_out.as_deref(), method, &policy, &out, &args).await?;
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    // the frequency set checks every value against its tree in its own scan
    policy.register_with(&ctx, false).await?;

    let input_seconds = started.elapsed().as_secs_f64();

    // 1. the frequency set: one scan
    let phase = Instant::now();
    let scanned = ScanProgress::new();
    let total = policy_input_rows(&ctx, &policy, args.quiet).await;
    let report = ScanReport::start("frequency set", total, args.quiet, Arc::clone(&scanned));
    let freq = policy.frequency_set(&ctx, Some(scanned)).await;
    report.finish().await;
    let freq = freq?;
    let frequency_seconds = phase.elapsed().as_secs_f64();
    // after the scan, whose errors about the input come first
    for repeated in policy.repeated_identifiers(&ctx).await? {
        eprintln!("{}", repeated.warning());
    }
    if !args.quiet {
        eprintln!(
            "frequency set: {} rows in {} combinations ({:.2} s)",
            freq.rows(),
            freq.combinations(),
            frequency_seconds
        );
    }

    // 2. the decision, in memory
    let phase = Instant::now();
    let mut nodes: Option<Progress> = None;
    let quiet = args.quiet;
    // the full-domain searches count nodes; Mondrian rows, KACA leaf classes, IAB tables
    let (phase_name, unit) = match method {
        Method::FullDomain(_) => ("search", "nodes"),
        Method::Local(LocalAlgorithm::Mondrian) => ("mondrian", "rows"),
        Method::Local(LocalAlgorithm::Kaca) => ("kaca", "combinations"),
        Method::Local(LocalAlgorithm::Iab) => ("iab", "tables expanded"),
    };
    let mut progress = |checked: usize, size: usize| {
        nodes
            .get_or_insert_with(|| Progress::new(phase_name, unit, Some(size as u64), quiet))
            .set(checked as u64);
    };
    let seed = args.seed.unwrap_or_else(publish::random_seed);
    let options = LocalOptions {
        seed,
        ..LocalOptions::default()
    };
    let decision = search::decide(
        &freq,
        policy.requirements(),
        method,
        metric,
        options,
        &mut progress,
    )
    .map_err(|e| DataFusionError::Execution(format!("{}; nothing written", e.message())))?;
    if let Some(nodes) = &nodes {
        nodes.finish();
    }
    let search_seconds = phase.elapsed().as_secs_f64();
    if !args.quiet {
        if let (Some(checked), Some(size)) = (decision.nodes_checked, decision.lattice_size) {
            eprintln!("search: {checked} / {size} nodes checked");
        }
        eprintln!(
            "chosen by {} ({search_seconds:.3} s)",
            decision.summary(&freq)
        );
    }

    // 3. publish: write, verify, move into place
    let progress = PublishProgress::new();
    // the failing classes come from the frequency set: no count of them
    let report = publish_report(total, args.quiet, &progress, false, true);
    let published = publish::publish_observed(
        &ctx,
        &policy,
        &decision.release,
        Some(decision.failing.clone()),
        &out,
        args.overwrite,
        RowOrder::Shuffled(seed),
        Some(progress),
    )
    .await;
    report.finish().await;
    let report = published.map_err(|e| policy.locate_input_error(e))?;
    print_summary(&report);
    if !args.quiet && !report.levels.is_empty() {
        // the levels as a policy section, so `anon sql --policy` can serve <name>_anon
        let levels: Vec<String> = report
            .levels
            .iter()
            .map(|l| format!("{} = {}", l.quasi_identifier, l.level))
            .collect();
        eprintln!(
            "to query this release as {}_anon with `anon sql --policy`, add to the policy: \
             [transformation] {}",
            policy.table_name(),
            levels.join(", ")
        );
    }
    let recoding_file = match &recoding_out {
        Some(location) => {
            let figures = saved_recoding::save_published(
                &decision.release,
                method.name(),
                policy.local_labels(),
                &report,
                location,
                policy.storage(),
            )
            .await?;
            if !args.quiet {
                eprintln!(
                    "recoding: {} classes written to {location}",
                    figures.classes
                );
            }
            Some(figures)
        }
        None => None,
    };
    let metric = decision.metric;
    println!(
        "{}: {}",
        metric.name(),
        metric.display(decision.metric_value)
    );
    let utility = if args.utility {
        let phase = Instant::now();
        let utility = publish::release_utility(
            &ctx,
            &policy,
            &decision.release,
            report.failing_classes.clone(),
        )
        .await?;
        print_utility(&utility);
        Some((utility, phase.elapsed().as_secs_f64()))
    } else {
        None
    };
    if reports.any() {
        let mut written = Report::new(
            "anonymize",
            &policy,
            &report,
            utility,
            started,
            input_seconds,
        );
        written.algorithm = Some(method.name());
        written.metric = Some(metric);
        written.metric_value = Some(decision.metric_value);
        written.lattice_size = decision.lattice_size;
        written.nodes_checked = decision.nodes_checked;
        written.local_classes = decision.local_classes;
        written.frequency_set_rows = Some(freq.combinations());
        written.recoding_file = recoding_file;
        written.seconds.frequency_set = Some(frequency_seconds);
        written.seconds.search = Some(search_seconds);
        reports.write(&written, policy.storage()).await?;
    }
    Ok(())
}

/// Where `--recoding-out` writes, checked before anything is read: a local algorithm's, not the
/// output, and replaced only with `--overwrite` (a recoding file is an output too).
async fn recoding_target(
    path: Option<&std::path::Path>,
    method: Method,
    policy: &Policy,
    out: &Location,
    args: &AnonymizeArgs,
) -> Result<Option<Location>> {
    let Some(path) = path else {
        return Ok(None);
    };
    if !matches!(method, Method::Local(_)) {
        return Err(DataFusionError::Plan(format!(
            "--recoding-out is for local recoding (--algorithm mondrian, kaca or iab), not {}",
            method.name()
        )));
    }
    let location = Location::parse(&path.to_string_lossy())?;
    let reports = [&args.reports.report, &args.reports.html_report];
    if &location == out || reports.iter().any(|r| r.as_deref() == Some(path)) {
        return Err(DataFusionError::Plan(format!(
            "--recoding-out {location} is also the output or a report; choose another path"
        )));
    }
    publish::check_target(
        &location,
        policy.input(),
        args.overwrite,
        policy.storage(),
        false,
    )
    .await
    .map_err(|e| DataFusionError::Plan(e.message().replacen("output", "recoding file", 1)))?;
    Ok(Some(location))
}
