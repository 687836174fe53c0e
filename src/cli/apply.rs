//! `anon apply`: publish a policy's input at the policy's fixed transformation, or with a
//! saved local recoding (`--recoding`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};

use datafusion_anonymity::generalize::tree::MISSING_FROM_TREE;
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::profile::render_text::whole_number;
use datafusion_anonymity_engine::progress::ScanProgress;
use datafusion_anonymity_engine::publish::{self, PublishProgress, PublishReport, RowOrder};
use datafusion_anonymity_engine::release::Release;
use datafusion_anonymity_engine::saved_recoding::{RecodingFileFigures, SavedRecoding};
use datafusion_anonymity_engine::search;
use datafusion_anonymity_engine::storage::Location;

use datafusion_anonymity_engine::jobs::report::{Report, ReportTargets};
use datafusion_anonymity_engine::jobs::{self, anonymize::output_location};

use super::ReportArgs;
use super::progress::{ScanReport, TerminalObserver};

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
    /// Publish with a local recoding saved by `anon anonymize --recoding-out` instead of the
    /// policy's `[transformation]`: each combination of quasi-identifiers joins the narrowest
    /// class whose labels cover it, combinations no class covers are suppressed (counted as
    /// `recoding_file.uncovered_rows`), then failing classes are suppressed and the output
    /// verified as always.
    #[arg(long, value_name = "FILE")]
    recoding: Option<PathBuf>,
}

pub async fn run(args: ApplyArgs) -> Result<()> {
    let started = Instant::now();
    let mut policy = Policy::from_file(&args.policy)?;
    if let Some(bucketization) = policy.bucketization() {
        return Err(DataFusionError::Plan(format!(
            "policy {}: method = \"{}\" is published by `anon anonymize` (apply publishes a \
             fixed generalization)",
            policy.source(),
            bucketization.method().name()
        )));
    }
    let recoding = args
        .recoding
        .as_deref()
        .map(|path| Location::parse(&path.to_string_lossy()))
        .transpose()?;
    if recoding.is_none() && policy.transformation().is_none() {
        return Err(DataFusionError::Plan(format!(
            "policy {} has no [transformation] (a level per quasi-identifier); \
             add one, or let `anon anonymize` search for the best",
            policy.source()
        )));
    }
    let path_text =
        |path: &Option<PathBuf>| path.as_deref().map(|p| p.to_string_lossy().to_string());
    let out = output_location(path_text(&args.out).as_deref(), &policy)?;
    // refused before anything is read: a report is an output too
    let reports = ReportTargets::check(
        path_text(&args.reports.report)
            .as_deref()
            .map(Location::parse)
            .transpose()?,
        path_text(&args.reports.html_report)
            .as_deref()
            .map(Location::parse)
            .transpose()?,
        &policy,
        &out,
        args.overwrite,
    )
    .await?;
    let saved = match &recoding {
        Some(location) => Some(SavedRecoding::read(location, policy.storage()).await?),
        None => None,
    };
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    // the recoding refuses values missing from a value tree itself: no scan to check first
    policy.register_with(&ctx, false).await?;
    for repeated in policy.repeated_identifiers(&ctx).await? {
        eprintln!("{}", repeated.warning());
    }
    // in the data's column order, known once registered
    let levels = policy.transformation().unwrap_or_default();
    let order = args.seed.map_or_else(RowOrder::random, RowOrder::Shuffled);
    let total = jobs::input_rows(&ctx, &policy, &TerminalObserver::new(args.quiet)).await;
    let input_seconds = started.elapsed().as_secs_f64();
    // k-map and δ-presence are judged on the frequency set, which carries the population's
    // counts: one scan more than the other requirements need
    let mut frequency_set = None;
    let mut recoding_file = None;
    let (release, failing) = if let (Some(saved), Some(location)) = (&saved, &recoding) {
        // the saved classes, mapped onto this input's combinations: one scan
        let phase = Instant::now();
        let scanned = ScanProgress::new();
        let report = ScanReport::start("frequency set", total, args.quiet, Arc::clone(&scanned));
        let freq = policy.frequency_set(&ctx, Some(scanned)).await;
        report.finish().await;
        let freq = freq?;
        frequency_set = Some((freq.combinations(), phase.elapsed().as_secs_f64()));
        let (local, uncovered) =
            saved.recoding_for(&location.to_string(), &freq, policy.requirements().k)?;
        if !args.quiet {
            eprintln!(
                "recoding: {} classes from {location}; {uncovered} rows in no class (suppressed)",
                saved.classes.len()
            );
        }
        recoding_file = Some(RecodingFileFigures {
            file: location.to_string(),
            classes: saved.classes.len(),
            uncovered_rows: Some(uncovered),
        });
        // the classes are judged on this input's rows, as publishing counts them
        (Release::Local(Arc::new(local)), None)
    } else if policy.requirements().population.is_some() {
        let phase = Instant::now();
        let scanned = ScanProgress::new();
        let report = ScanReport::start("frequency set", total, args.quiet, Arc::clone(&scanned));
        let freq = policy.frequency_set(&ctx, Some(scanned)).await;
        report.finish().await;
        let freq = freq?;
        frequency_set = Some((freq.combinations(), phase.elapsed().as_secs_f64()));
        let failing = search::failing_classes(&freq, policy.requirements(), &levels)?;
        (Release::FullDomain(levels), Some(failing))
    } else {
        (Release::FullDomain(levels), None)
    };
    let progress = PublishProgress::new();
    let report = ScanReport::start_passes(
        jobs::publish_passes(
            &progress,
            failing.is_none(),
            matches!(order, RowOrder::Shuffled(_)),
        ),
        total,
        args.quiet,
    );
    let published = publish::publish_observed(
        &ctx,
        &policy,
        &release,
        failing,
        &out,
        args.overwrite,
        order,
        Some(progress),
    )
    .await;
    report.finish().await;
    let report = match published {
        Ok(report) => report,
        Err(e) if e.to_string().contains(MISSING_FROM_TREE) => {
            // the refusal counted one batch's values: count them over the whole column
            policy.check_tree_values(&ctx).await?;
            return Err(e);
        }
        Err(e) => return Err(policy.locate_input_error(e)),
    };
    print_summary(&report);
    let utility = if args.utility {
        let phase = Instant::now();
        let utility =
            publish::release_utility(&ctx, &policy, &release, report.failing_classes.clone())
                .await?;
        print_utility(&utility);
        Some((utility, phase.elapsed().as_secs_f64()))
    } else {
        None
    };
    if !args.quiet {
        let t = report.seconds;
        eprintln!(
            "time: input {input_seconds:.2} s, classes {:.2} s, write {:.2} s, verify {:.2} s, \
             post-analytics {:.2} s, commit {:.2} s",
            t.classes, t.write, t.verify, t.post_analytics, t.commit
        );
    }
    if reports.any() {
        let mut written = Report::new(
            "apply",
            &policy,
            report.clone(),
            utility,
            started,
            input_seconds,
        );
        if let Some((rows, seconds)) = frequency_set {
            written.frequency_set_rows = Some(rows);
            written.seconds.frequency_set = Some(seconds);
        }
        written.recoding_file = recoding_file;
        reports.write(&written, policy.storage()).await?;
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

/// The figures of a publication, one per line, on stdout; its warnings on stderr.
pub fn print_summary(report: &PublishReport) {
    let v = &report.verification;
    let levels: Vec<String> = report
        .levels
        .iter()
        .map(|l| format!("{}={} ({})", l.quasi_identifier, l.level, l.meaning))
        .collect();
    let erased = report
        .levels
        .iter()
        .filter(|l| l.meaning == datafusion_anonymity::generalize::ERASED);
    for erased in erased {
        eprintln!(
            "warning: quasi-identifier '{}' is erased entirely: level {} publishes every value as *",
            erased.quasi_identifier, erased.level
        );
    }
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
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
