//! `anon apply`: publish a policy's input at the policy's fixed transformation, or with a
//! saved local recoding (`--recoding`).

use std::path::PathBuf;

use datafusion::error::Result;

use datafusion_anonymity_engine::jobs::{
    self,
    apply::{AppliedRelease, ApplyOptions},
};
use datafusion_anonymity_engine::publish::PublishReport;
use datafusion_anonymity_engine::text::whole_number;

use super::ReportArgs;
use super::progress::TerminalObserver;

#[derive(clap::Args, Debug)]
pub struct ApplyArgs {
    /// The policy file; it must fix a transformation (`[transformation]`, a level per
    /// quasi-identifier).
    #[arg(long, value_name = "FILE")]
    policy: PathBuf,
    /// Output: a `.parquet` file, or a directory of Parquet files (default: the policy's
    /// `[output] path`).
    #[arg(long, value_name = "PATH")]
    out: Option<PathBuf>,
    /// Replace an existing output (only once the new one is complete and verified).
    #[arg(long)]
    overwrite: bool,
    /// Seed of the row order: the rows are written in a random order drawn from it, so that
    /// releases cannot be joined row by row. Without it, a random seed, printed as `seed:`;
    /// the same input, policy and seed give byte-identical output. Keep it as secret as the
    /// data: it undoes the shuffle.
    #[arg(long)]
    seed: Option<u64>,
    /// Memory limit of the process (e.g. 2GiB): DataFusion's pool gets 80% of it, and
    /// aggregations, sorts and the frequency set spill or stop with a clear error beyond it.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    #[command(flatten)]
    cluster: super::ClusterArg,
    /// No progress or timings on stderr (warnings and errors still).
    #[arg(long, short = 'q')]
    quiet: bool,
    /// Also measure the release's utility against each row's own original (the profile's
    /// utility section, as `anon anonymize --utility`), printed and in the reports as
    /// `utility`: one more scan, the quasi-identifier and sensitive columns held in memory.
    #[arg(long)]
    utility: bool,
    #[command(flatten)]
    reports: ReportArgs,
    #[command(flatten)]
    output: super::OutputFormatArgs,
    /// Publish with a local recoding saved by `anon anonymize --recoding-out` instead of the
    /// policy's `[transformation]`: each combination of quasi-identifiers joins the narrowest
    /// class whose labels cover it, combinations no class covers are suppressed (counted as
    /// `recoding_file.uncovered_rows`), then failing classes are suppressed and the output
    /// verified as always.
    #[arg(long, value_name = "FILE")]
    recoding: Option<PathBuf>,
}

pub async fn run(args: ApplyArgs) -> Result<()> {
    let path_text =
        |path: &Option<PathBuf>| path.as_deref().map(|p| p.to_string_lossy().to_string());
    let options = ApplyOptions {
        policy: args.policy.to_string_lossy().to_string().into(),
        levels: None,
        recoding: path_text(&args.recoding),
        out: path_text(&args.out),
        report: path_text(&args.reports.report),
        html_report: path_text(&args.reports.html_report),
        seed: args.seed,
        overwrite: args.overwrite,
        record_seed: args.reports.record_seed,
        utility: args.utility,
        output: args.output.request()?,
    };
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    let observer = TerminalObserver::new(args.quiet);
    let applied = match jobs::apply::apply(&ctx, &options, &observer).await? {
        AppliedRelease::Generalized(applied) => applied,
        AppliedRelease::Perturbed(report) => {
            super::perturb::print_summary(&report);
            return Ok(());
        }
    };
    let report = &applied.report;
    print_summary(&report.publish);
    if let Some(utility) = &report.utility {
        print_utility(utility);
    }
    if !args.quiet {
        let t = &report.seconds;
        eprintln!(
            "time: input {:.2} s, classes {:.2} s, write {:.2} s, verify {:.2} s, \
             post-analytics {:.2} s, commit {:.2} s",
            t.input, t.suppression_count, t.write, t.verify, t.post_analytics, t.commit
        );
    }
    Ok(())
}

/// The utility's headline figures, on stdout.
pub fn print_utility(utility: &datafusion_anonymity_engine::profile::Utility) {
    println!(
        "utility: loss {:.4}, ncp {:.4}, discernibility {}",
        utility.loss_metric,
        utility.ncp,
        whole_number(utility.discernibility)
    );
}

/// The figures of a publication, one per line, on stdout (the job told its warnings).
pub fn print_summary(report: &PublishReport) {
    let v = &report.verification;
    let levels: Vec<String> = report
        .levels
        .iter()
        .map(|l| format!("{}={} ({})", l.quasi_identifier, l.level, l.meaning))
        .collect();
    println!("output: {}", report.output);
    if report.recoding == "local" {
        println!("recoding: local");
    } else {
        println!("levels: {}", levels.join(", "));
    }
    println!("rows: {} of {} input rows", v.rows, report.input_rows);
    println!("classes: {}", v.classes);
    match &report.person {
        Some(person) if person.k_counts_persons => {
            let persons = person.k_persons.map_or("-".to_string(), |k| k.to_string());
            println!("k: {persons} (persons of {})", person.column);
            println!("k_rows: {}", v.k);
        }
        _ => println!("k: {}", v.k),
    }
    if let Some(person) = &report.person {
        println!("person column: {} ({})", person.column, person.published);
    }
    for s in &v.sensitive {
        for (key, worst) in &s.worst {
            if let Some(worst) = worst {
                println!("{key}({}): {}", s.attribute, trim(*worst));
            }
        }
    }
    let share = if report.input_rows == 0 {
        0.0
    } else {
        100.0 * report.suppressed_rows as f64 / report.input_rows as f64
    };
    println!("suppressed rows: {} ({share:.2}%)", report.suppressed_rows);
    match report.seed {
        Some(seed) => println!("order: shuffled, seed: {seed}"),
        None => println!("order: input"),
    }
}

fn trim(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}
