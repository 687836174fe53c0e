//! `anon anonymize`: search the best transformation for a policy, publish it, verify it,
//! report it.

use std::path::PathBuf;

use datafusion::error::Result;

use datafusion_anonymity_engine::jobs::{
    self,
    anonymize::{AnonymizeOptions, Published},
};
use datafusion_anonymity_engine::search::{Method, Metric};

use super::apply::{print_summary, print_utility};
use super::progress::TerminalObserver;

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
    reports: super::ReportArgs,
    #[command(flatten)]
    output: super::OutputFormatArgs,
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
    /// as `seed:` (in the reports only with `--record-seed`); the same input, policy and seed give
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
    /// Mondrian: plain top-down partitioning, without refining its small regions (rollout
    /// cuts, leaf classes moved between classes): faster on millions of combinations (about
    /// 1 s of 10M rows' decision), at a higher Loss; the classes stay strict.
    #[arg(long)]
    no_refine: bool,
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

/// The name clap gives `value` (`iab-full-domain`, `loss`): what the engine parses.
fn value_name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default()
}

pub async fn run(args: AnonymizeArgs) -> Result<()> {
    let options = AnonymizeOptions {
        policy: args.policy.to_string_lossy().to_string().into(),
        out: path_text(&args.out),
        report: path_text(&args.reports.report),
        html_report: path_text(&args.reports.html_report),
        // clap lists and checks the names; the engine reads them (one reading for every shell)
        method: value_name(args.algorithm).parse::<Method>()?,
        metric: value_name(args.metric).parse::<Metric>()?,
        seed: args.seed,
        overwrite: args.overwrite,
        record_seed: args.reports.record_seed,
        utility: args.utility,
        recoding_out: path_text(&args.recoding_out),
        refine: !args.no_refine,
        output: args.output.request()?,
    };
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    let observer = TerminalObserver::new(args.quiet);
    let anonymized = match jobs::anonymize::anonymize(&ctx, &options, &observer).await? {
        Published::Generalized(anonymized) => anonymized,
        Published::Bucketized(report) => {
            super::bucketize::print_summary(&report);
            return Ok(());
        }
        Published::Perturbed(report) => {
            super::perturb::print_summary(&report);
            return Ok(());
        }
        Published::Cloaked(report) => {
            print_cloaked_summary(&report);
            println!("order: shuffled, seed: {}", report.seed);
            return Ok(());
        }
    };
    let report = &anonymized.report;
    print_summary(&report.publish);
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
            report.table_name,
            levels.join(", ")
        );
    }
    if let (Some(metric), Some(value)) = (report.metric, report.metric_value) {
        println!("{}: {}", metric.name(), metric.display(value));
    }
    if let Some(utility) = &report.utility {
        print_utility(utility);
    }
    Ok(())
}

/// A path flag as the text the jobs take.
fn path_text(path: &Option<PathBuf>) -> Option<String> {
    path.as_deref().map(|p| p.to_string_lossy().to_string())
}

/// The summary of a cloaked release, on stdout like every method's.
fn print_cloaked_summary(report: &datafusion_anonymity_engine::jobs::cloak::CloakingReport) {
    let f = &report.figures;
    let metres = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} m"));
    let seconds = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} s"));
    println!(
        "cloaking ({}, k = {}): {} of {} events published ({:.2}%) in {} labels of at least {} \
         subjects (verified); median cell side {}, p90 {}; median window {}, p90 {}",
        report.cells,
        report.k,
        f.published,
        f.events,
        f.share_published * 100.0,
        f.labels,
        report.publish.verification.min_subjects,
        metres(f.median_cell_side_m),
        metres(f.p90_cell_side_m),
        seconds(f.median_window_s),
        seconds(f.p90_window_s),
    );
    let shares = |u: &[f64]| {
        u.iter()
            .map(|s| format!("{:.1}%", s * 100.0))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "unicity for p = 1..5: input {}; release with pseudonyms {}",
        shares(&report.unicity_input.unique),
        shares(&report.unicity_release.unique)
    );
    println!("wrote {}", report.publish.output);
}
