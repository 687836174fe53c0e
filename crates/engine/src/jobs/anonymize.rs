//! `anonymize`: read a policy, build the frequency set (one scan), search the release, publish
//! it (staged, shuffled with the run's seed, verified, committed), optionally save the local
//! recoding and measure the utility, and report. The command line's `anon anonymize` and
//! Python's `anonymize()` are this function.

use crate::errors::{Opt, UsageError};
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use super::Observer;
use super::bucketize::BucketizationReport;
use super::output::{OutputRequest, PlannedOutput, release_info};
use super::report::{FrequencySetFigures, Report, ReportParts, ReportTargets, SearchFigures};
use crate::policy::{Policy, PolicySource, ReleaseMethod};
use crate::publish::perturbed::PerturbedReport;
use crate::publish::{self, PublishProgress, PublishRequest, RowOrder};
use crate::saved_recoding;
use crate::search::local::sets::SetCapExceeded;
use crate::search::local::{LocalAlgorithm, LocalOptions};
use crate::search::{self, Method, Metric};
use crate::storage::Location;

/// What to anonymize and how; the command line's flags, Python's keywords.
#[derive(Debug, Clone)]
pub struct AnonymizeOptions {
    /// The policy (a file, a path or URL, or text) and the input read instead of its `[input]
    /// path`, if any; its `[transformation]`, if any, is ignored.
    pub policy: PolicySource,
    /// The output (a `.parquet` file or a directory); default: the policy's `[output] path`.
    pub out: Option<String>,
    /// The JSON report, if wanted.
    pub report: Option<String>,
    /// The HTML report, if wanted (generalized releases only).
    pub html_report: Option<String>,
    /// The algorithm: full-domain or local.
    pub method: Method,
    /// What the optimal search minimizes.
    pub metric: Metric,
    /// The seed of every random choice (the written rows' order, KACA's next class); `None`
    /// draws one, which the report records.
    pub seed: Option<u64>,
    /// Replace existing outputs (once the new ones are complete and verified).
    pub overwrite: bool,
    /// Write the seed into the JSON and HTML reports (by default they do not hold it; see
    /// [`ReportTargets::recording_seed`]).
    pub record_seed: bool,
    /// Also measure the release's utility against each row's own original.
    pub utility: bool,
    /// Local recoding: also save the published classes' labels here.
    pub recoding_out: Option<String>,
    /// Mondrian: refine its small regions (the default); `false` for plain top-down
    /// partitioning (see [`LocalOptions::refine`]). Other algorithms refuse `false`.
    pub refine: bool,
    /// Where and how the release is written: Parquet or a Delta table, replaced or appended
    /// to (`overwrite` is copied into it).
    pub output: OutputRequest,
}

impl AnonymizeOptions {
    /// The defaults of `anon anonymize --policy <policy>`: optimal, Loss, a random seed.
    pub fn new(policy: impl Into<PolicySource>) -> Self {
        Self {
            policy: policy.into(),
            out: None,
            report: None,
            html_report: None,
            method: Method::FullDomain(search::Algorithm::Optimal),
            metric: Metric::Loss,
            seed: None,
            overwrite: false,
            record_seed: false,
            utility: false,
            recoding_out: None,
            refine: true,
            output: OutputRequest::default(),
        }
    }
}

/// A generalized release made: its report (what `--report` writes), the seed it was
/// shuffled with, and where it went.
#[derive(Debug)]
pub struct Anonymized {
    pub report: Report,
    pub seed: u64,
    pub out: Location,
}

/// What [`anonymize`] published: a generalized release, or a bucketized one (a policy with a
/// bucketization `method`).
#[derive(Debug)]
pub enum Published {
    Generalized(Box<Anonymized>),
    Bucketized(Box<BucketizationReport>),
    Perturbed(Box<PerturbedReport>),
    Cloaked(Box<super::cloak::CloakingReport>),
}

impl Published {
    /// The report as JSON, the keys `--report` writes.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        match self {
            Published::Generalized(anonymized) => serde_json::to_value(&anonymized.report),
            Published::Bucketized(report) => serde_json::to_value(report),
            Published::Perturbed(report) => serde_json::to_value(report),
            Published::Cloaked(report) => serde_json::to_value(report),
        }
        .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))
    }
}

/// The output `out` names, or the policy's `[output] path`.
pub fn output_location(out: Option<&str>, policy: &Policy) -> Result<Location> {
    out.map(Location::parse)
        .transpose()?
        .or_else(|| policy.output().cloned())
        .ok_or_else(|| {
            UsageError::new()
                .text("no output: give ")
                .opt(Opt::Out)
                .text(format!(", or [output] path in policy {}", policy.source()))
                .into()
        })
}

/// Searches, publishes and reports the release of `options.policy` on `ctx`; see the module
/// documentation. Outputs (the release, the reports, the recoding file) are checked before
/// anything is read, and written only once the release is verified.
pub async fn anonymize(
    ctx: &SessionContext,
    options: &AnonymizeOptions,
    observer: &dyn Observer,
) -> Result<Published> {
    let started = Instant::now();
    let policy = options.policy.read()?;
    let out = output_location(options.out.as_deref(), &policy)?;
    let request = OutputRequest {
        overwrite: options.overwrite,
        ..options.output
    };
    let planned = PlannedOutput::check(&policy, &out, request).await?;
    match policy.release_method() {
        ReleaseMethod::Cloaking => {
            cloaked(ctx, policy, options, &out, &planned, observer, started).await
        }
        ReleaseMethod::Bucketization => {
            bucketized(ctx, policy, options, &out, &planned, observer, started).await
        }
        ReleaseMethod::Perturbation => perturbed(
            ctx,
            "anonymize",
            &options.method_options(),
            policy,
            &out,
            &planned,
            observer,
        )
        .await
        .map(|report| Published::Perturbed(Box::new(report))),
        ReleaseMethod::Generalization => {
            generalized(ctx, policy, options, out, &planned, observer, started).await
        }
    }
}

/// [`anonymize`] for a policy with a bucketization `method` ([`super::bucketize`]).
async fn bucketized(
    ctx: &SessionContext,
    policy: Policy,
    options: &AnonymizeOptions,
    out: &Location,
    planned: &PlannedOutput,
    observer: &dyn Observer,
    started: Instant,
) -> Result<Published> {
    let Some(bucketization) = policy.bucketization() else {
        return Err(DataFusionError::Internal(
            "a bucketized release without its bucketization".to_string(),
        ));
    };
    if planned.is_delta() {
        return Err(DataFusionError::Plan(format!(
            "output {out}: a {} release is two tables, which Delta Lake cannot commit \
             together (a reader could see one without the other); publish it as Parquet",
            bucketization.method().name()
        )));
    }
    if options.html_report.is_some() {
        return Err(UsageError::new()
            .text(format!("policy {}: ", policy.source()))
            .opt(Opt::HtmlReport)
            .text(format!(
                " is for generalized releases; a {} release has ",
                bucketization.method().name()
            ))
            .opt(Opt::Report)
            .text(" (JSON) only")
            .into());
    }
    let reports = ReportTargets::check(
        options.report.as_deref(),
        None,
        &policy,
        out,
        options.overwrite,
    )
    .await?
    .recording_seed(options.record_seed);
    let storage = policy.storage().clone();
    // a Delta output was refused above, so the output is files and needs no commit figures
    let output = planned.output(|| serde_json::Value::Null);
    let report = super::bucketize::bucketize(ctx, policy, &output, observer, started).await?;
    reports.write_json(&report, &storage).await?;
    Ok(Published::Bucketized(Box::new(report)))
}

/// [`anonymize`] for a generalization: the frequency set, the search (or local recoding),
/// publishing, the recoding file and utility on request, the report.
async fn generalized(
    ctx: &SessionContext,
    mut policy: Policy,
    options: &AnonymizeOptions,
    out: Location,
    planned: &PlannedOutput,
    observer: &dyn Observer,
    started: Instant,
) -> Result<Published> {
    let reports = ReportTargets::check(
        options.report.as_deref(),
        options.html_report.as_deref(),
        &policy,
        &out,
        options.overwrite,
    )
    .await?
    .recording_seed(options.record_seed);
    let method = options.method;
    // refused before the scan, not after it
    method.metric(options.metric)?;
    if !options.refine && method != Method::Local(LocalAlgorithm::Mondrian) {
        return Err(UsageError::new()
            .opt(Opt::NoRefine)
            .text(" is for ")
            .opt(Opt::Mondrian)
            .text(format!(", not {}", method.name()))
            .into());
    }
    let recoding_out = recoding_target(options, &policy, &out).await?;
    if matches!(method, Method::Local(_)) {
        planned.check_append_of("local").await?;
    }
    // the frequency set checks every value against its tree in its own scan
    policy.register_with(ctx, false).await?;
    let input_seconds = started.elapsed().as_secs_f64();

    // 1. the frequency set: one scan
    let total = super::input_rows(ctx, &policy, observer).await;
    let (freq, frequency_seconds) = super::frequency_set(ctx, &policy, observer, total).await?;
    let input_warnings = super::input_warnings(ctx, &policy, observer).await?;
    observer.note(&format!(
        "frequency set: {} rows in {} combinations ({:.2} s)",
        freq.rows(),
        freq.combinations(),
        frequency_seconds
    ));

    // 2. the decision, in memory
    let phase = Instant::now();
    // the full-domain searches count nodes; Mondrian rows, KACA leaf classes, IAB tables
    let (phase_name, unit) = match method {
        Method::FullDomain(_) => ("search", "nodes"),
        Method::Local(LocalAlgorithm::Mondrian) => ("mondrian", "rows"),
        Method::Local(LocalAlgorithm::Kaca) => ("kaca", "combinations"),
        Method::Local(LocalAlgorithm::Iab) => ("iab", "tables expanded"),
    };
    let seed = options.seed.unwrap_or_else(publish::random_seed);
    let local = LocalOptions {
        seed,
        refine: options.refine,
        ..LocalOptions::default()
    };
    crate::interrupt::hook_pause("before-search");
    let decision = search::decide(
        &freq,
        policy.requirements(),
        method,
        options.metric,
        local,
        &mut |done, size| observer.steps(phase_name, unit, done, size),
    )
    .map_err(|e| {
        // a set label beyond the cap is the policy's to fix: name it
        let policy_named = if matches!(e.find_root(), DataFusionError::External(inner) if inner.is::<SetCapExceeded>()) {
            format!("policy {}: ", policy.source())
        } else {
            String::new()
        };
        DataFusionError::Execution(format!("{policy_named}{}; nothing written", e.message()))
    });
    observer.steps_finished();
    let decision = decision?;
    let search_seconds = phase.elapsed().as_secs_f64();
    if let (Some(checked), Some(size)) = (decision.nodes_checked, decision.lattice_size) {
        observer.note(&format!("search: {checked} / {size} nodes checked"));
    }
    observer.note(&format!(
        "chosen by {} ({search_seconds:.3} s)",
        decision.summary(&freq)
    ));
    // the decision holds what publishing needs (the release, its failing classes): the
    // frequency set's memory, outside the pool's account from here on, is given back before
    // the rows are written
    let combinations = freq.combinations();
    drop(freq);

    // 3. publish: write, verify, move into place
    let progress = PublishProgress::new();
    // the failing classes come from the frequency set: no count of them
    observer.scans_started(super::publish_passes(&progress, false, true), total);
    let output = planned.output(|| {
        release_info(
            "anonymize",
            &policy,
            &decision.release,
            Some(method.name()),
            Some((decision.metric.name(), decision.metric_value)),
        )
    });
    let published = publish::publish_to(
        PublishRequest::new(ctx, &policy, &output),
        &decision.release,
        Some(decision.failing.clone()),
        RowOrder::Shuffled(seed),
        Some(progress),
    )
    .await;
    observer.scans_finished().await;
    let published = published.map_err(|e| policy.locate_input_error(e))?;

    let recoding_file = match &recoding_out {
        Some(location) => {
            let figures = saved_recoding::save_published(
                &decision.release,
                method.name(),
                policy.local_labels(),
                &published,
                location,
                policy.storage(),
            )
            .await?;
            observer.note(&format!(
                "recoding: {} classes written to {location}",
                figures.classes
            ));
            Some(figures)
        }
        None => None,
    };
    let utility = if options.utility {
        let phase = Instant::now();
        let utility = publish::release_utility(
            ctx,
            &policy,
            &decision.release,
            published.failing_classes.clone(),
        )
        .await?;
        Some((utility, phase.elapsed().as_secs_f64()))
    } else {
        None
    };
    super::report::note_release_warnings(&published, observer);
    let report = Report::new(ReportParts {
        command: "anonymize",
        policy: &policy,
        input_warnings,
        publish: published,
        search: Some(SearchFigures {
            algorithm: method.name(),
            refined: (method == Method::Local(LocalAlgorithm::Mondrian)).then_some(options.refine),
            metric: decision.metric,
            metric_value: decision.metric_value,
            lattice_size: decision.lattice_size,
            nodes_checked: decision.nodes_checked,
            local_classes: decision.local_classes,
            seconds: search_seconds,
        }),
        frequency_set: Some(FrequencySetFigures {
            combinations,
            seconds: frequency_seconds,
        }),
        recoding_file,
        utility,
        started,
        input_seconds,
    });
    reports.write(&report, policy.storage()).await?;
    Ok(Published::Generalized(Box::new(Anonymized {
        report,
        seed,
        out,
    })))
}

/// [`anonymize`] for a policy with `method = "cloaking"` ([`super::cloak`]).
async fn cloaked(
    ctx: &SessionContext,
    policy: Policy,
    options: &AnonymizeOptions,
    out: &Location,
    planned: &PlannedOutput,
    observer: &dyn Observer,
    started: Instant,
) -> Result<Published> {
    let reports = method_reports(&options.method_options(), &policy, out, "a cloaking").await?;
    let storage = policy.storage().clone();
    let seed = options.seed.unwrap_or_else(publish::random_seed);
    let report = super::cloak::cloak(ctx, policy, planned, seed, observer, started).await?;
    reports
        .write_with_page(
            &report,
            |record_seed| super::method_pages::cloaking_page(&report, record_seed),
            &storage,
        )
        .await?;
    Ok(Published::Cloaked(Box::new(report)))
}

/// Where `recoding_out` writes, checked before anything is read: a local algorithm's, not the
/// output or a report, and replaced only with `overwrite` (a recoding file is an output too).
async fn recoding_target(
    options: &AnonymizeOptions,
    policy: &Policy,
    out: &Location,
) -> Result<Option<Location>> {
    let Some(path) = &options.recoding_out else {
        return Ok(None);
    };
    if !matches!(options.method, Method::Local(_)) {
        return Err(UsageError::new()
            .opt(Opt::RecodingOut)
            .text(" is for local recoding (")
            .opt(Opt::LocalAlgorithms)
            .text(format!("), not {}", options.method.name()))
            .into());
    }
    let location = Location::parse(path)?;
    let reports = [&options.report, &options.html_report];
    if &location == out || reports.iter().any(|r| r.as_deref() == Some(path.as_str())) {
        return Err(UsageError::new()
            .opt(Opt::RecodingOut)
            .text(format!(
                " {location} is also the output or a report; choose another path"
            ))
            .into());
    }
    publish::check_target(
        &location,
        policy.input(),
        options.overwrite,
        policy.storage(),
        false,
        publish::Written::RecodingFile,
    )
    .await?;
    Ok(Some(location))
}

/// A perturbation policy's release ([`super::perturb`]) and its JSON report: what both
/// `anonymize` and `apply` (`command`) publish for it (the policy fixes every
/// transformation), to Parquet or as a new version of a Delta table.
pub(super) async fn perturbed(
    ctx: &SessionContext,
    command: &str,
    options: &MethodOptions<'_>,
    policy: Policy,
    out: &Location,
    planned: &PlannedOutput,
    observer: &dyn Observer,
) -> Result<PerturbedReport> {
    let reports = method_reports(options, &policy, out, "a perturbation").await?;
    let storage = policy.storage().clone();
    let seed = options.seed.unwrap_or_else(publish::random_seed);
    let report = super::perturb::perturb(ctx, command, policy, planned, seed, observer).await?;
    reports
        .write_with_page(
            &report,
            |record_seed| super::method_pages::perturbation_page(&report, record_seed),
            &storage,
        )
        .await?;
    Ok(report)
}

/// What a cloaked or perturbed release takes of its job's options (`anonymize`'s or
/// `apply`'s): its reports and seed, and whether the job was given a generalization's own
/// outputs, which these releases refuse.
pub(super) struct MethodOptions<'a> {
    pub report: Option<&'a str>,
    pub html_report: Option<&'a str>,
    pub seed: Option<u64>,
    pub overwrite: bool,
    pub record_seed: bool,
    /// `recoding_out` was given
    pub recoding_out: bool,
    /// `utility` was asked for
    pub utility: bool,
}

impl AnonymizeOptions {
    /// What a cloaked or perturbed release takes of these options.
    fn method_options(&self) -> MethodOptions<'_> {
        MethodOptions {
            report: self.report.as_deref(),
            html_report: self.html_report.as_deref(),
            seed: self.seed,
            overwrite: self.overwrite,
            record_seed: self.record_seed,
            recoding_out: self.recoding_out.is_some(),
            utility: self.utility,
        }
    }
}

/// The report targets of a cloaked or perturbed release (`what`: "a cloaking", "a
/// perturbation"): the JSON and HTML reports, checked before anything is read; the
/// generalization's own outputs refused (a perturbed release measures its utility anyway).
async fn method_reports(
    options: &MethodOptions<'_>,
    policy: &Policy,
    out: &Location,
    what: &str,
) -> Result<ReportTargets> {
    if options.recoding_out || options.utility {
        return Err(UsageError::new()
            .text(format!("policy {}: ", policy.source()))
            .opt(Opt::RecodingOut)
            .text(" and ")
            .opt(Opt::Utility)
            .text(format!(" are for generalized releases; {what} has "))
            .opt(Opt::Report)
            .text(" and ")
            .opt(Opt::HtmlReport)
            .into());
    }
    ReportTargets::check(
        options.report,
        options.html_report,
        policy,
        out,
        options.overwrite,
    )
    .await
    .map(|targets| targets.recording_seed(options.record_seed))
}
