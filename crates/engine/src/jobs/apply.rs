//! `apply`: publish a policy's input at a fixed transformation (the policy's
//! `[transformation]`, or levels given by the caller) or with a saved local recoding, with the
//! same staged, verified write as `anonymize`. A perturbation policy fixes its whole release
//! (each attribute names its transformation): `apply` publishes it exactly as `anonymize`
//! does. The command line's `anon apply` and Python's
//! `apply()` are this function.

use crate::errors::{Opt, UsageError};
use std::sync::Arc;
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion_anonymity::generalize::tree::MissingFromTree;

use super::Observer;
use super::anonymize::{MethodOptions, output_location};
use super::output::{OutputRequest, PlannedOutput, release_info};
use super::report::{FrequencySetFigures, Report, ReportParts, ReportTargets};
use crate::policy::{Policy, PolicySource, ReleaseMethod};
use crate::publish::perturbed::PerturbedReport;
use crate::publish::{self, PublishProgress, PublishRequest, RowOrder};
use crate::saved_recoding::{RecodingFileFigures, SavedRecoding};
use crate::search;
use crate::search::release::Release;
use crate::storage::Location;

/// What to publish and how; the command line's flags, Python's keywords.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    /// The policy (a file, a path or URL, or text) and the input read instead of its `[input]
    /// path`, if any.
    pub policy: PolicySource,
    /// The level of each quasi-identifier, replacing the policy's `[transformation]`.
    pub levels: Option<Vec<(String, usize)>>,
    /// A local recoding saved by `anonymize` (`recoding_out`), instead of levels.
    pub recoding: Option<String>,
    /// The output; default: the policy's `[output] path`.
    pub out: Option<String>,
    /// The JSON report, if wanted.
    pub report: Option<String>,
    /// The HTML report, if wanted.
    pub html_report: Option<String>,
    /// The seed of the written rows' order; `None` draws one (in the report).
    pub seed: Option<u64>,
    /// Replace existing outputs (once the new ones are complete and verified).
    pub overwrite: bool,
    /// Write the seed into the JSON and HTML reports (see
    /// [`super::report::ReportTargets::recording_seed`]).
    pub record_seed: bool,
    /// Also measure the release's utility against each row's own original.
    pub utility: bool,
    /// Where and how the release is written: Parquet or a Delta table, replaced or appended
    /// to (`overwrite` is copied into it).
    pub output: OutputRequest,
}

impl ApplyOptions {
    /// The defaults of `anon apply --policy <policy>`.
    pub fn new(policy: impl Into<PolicySource>) -> Self {
        Self {
            policy: policy.into(),
            levels: None,
            recoding: None,
            out: None,
            report: None,
            html_report: None,
            seed: None,
            overwrite: false,
            record_seed: false,
            utility: false,
            output: OutputRequest::default(),
        }
    }
}

/// A release published: its report and where it went.
#[derive(Debug)]
pub struct Applied {
    pub report: Report,
    pub out: Location,
}

/// What [`apply`] published: a generalization at fixed levels (or a saved recoding), or a
/// perturbation policy's release, which the policy fixes whole (as `anonymize` publishes it).
#[derive(Debug)]
pub enum AppliedRelease {
    Generalized(Box<Applied>),
    Perturbed(Box<PerturbedReport>),
}

impl AppliedRelease {
    /// The report as JSON, the keys `--report` writes.
    pub fn to_json(&self) -> Result<serde_json::Value> {
        match self {
            AppliedRelease::Generalized(applied) => serde_json::to_value(&applied.report),
            AppliedRelease::Perturbed(report) => serde_json::to_value(report),
        }
        .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))
    }
}

/// A perturbation policy published by `apply`: the options that pick levels or a recoding,
/// or ask for generalization-only outputs, are refused (naming the option); the rest is
/// [`super::anonymize`]'s pipeline for it.
async fn perturbed(
    ctx: &SessionContext,
    options: &ApplyOptions,
    policy: Policy,
    out: &Location,
    planned: &PlannedOutput,
    observer: &dyn Observer,
) -> Result<PerturbedReport> {
    let fixed = if options.levels.is_some() {
        Some(Opt::Levels)
    } else if options.recoding.is_some() {
        Some(Opt::Recoding)
    } else {
        None
    };
    if let Some(option) = fixed {
        return Err(UsageError::new()
            .text(format!("policy {}: ", policy.source()))
            .opt(option)
            .text(
                " generalizes quasi-identifiers; method = \"perturbation\" publishes the \
                 transformations its attributes name",
            )
            .into());
    }
    let taken = MethodOptions {
        report: options.report.as_deref(),
        html_report: options.html_report.as_deref(),
        seed: options.seed,
        overwrite: options.overwrite,
        record_seed: options.record_seed,
        recoding_out: false,
        utility: options.utility,
    };
    super::anonymize::perturbed(ctx, "apply", &taken, policy, out, planned, observer).await
}

/// Publishes `options.policy`'s input on `ctx`; see the module documentation. Outputs are
/// checked before anything is read.
pub async fn apply(
    ctx: &SessionContext,
    options: &ApplyOptions,
    observer: &dyn Observer,
) -> Result<AppliedRelease> {
    let started = Instant::now();
    let mut policy = options.policy.read()?;
    let anonymize_only = match policy.release_method() {
        ReleaseMethod::Bucketization => policy.bucketization().map(|b| b.method().name()),
        ReleaseMethod::Cloaking => Some("cloaking"),
        ReleaseMethod::Generalization | ReleaseMethod::Perturbation => None,
    };
    if let Some(method) = anonymize_only {
        return Err(DataFusionError::Plan(format!(
            "policy {}: method = \"{method}\" is published by `anon anonymize` (apply publishes \
             a fixed generalization or perturbation)",
            policy.source(),
        )));
    }
    let out = output_location(options.out.as_deref(), &policy)?;
    let request = OutputRequest {
        overwrite: options.overwrite,
        ..options.output
    };
    let planned = PlannedOutput::check(&policy, &out, request).await?;
    if policy.release_method() == ReleaseMethod::Perturbation {
        return perturbed(ctx, options, policy, &out, &planned, observer)
            .await
            .map(|report| AppliedRelease::Perturbed(Box::new(report)));
    }
    let recoding = options
        .recoding
        .as_deref()
        .map(Location::parse)
        .transpose()?;
    if recoding.is_none() && options.levels.is_none() && policy.transformation().is_none() {
        return Err(DataFusionError::Plan(format!(
            "policy {} has no [transformation] (a level per quasi-identifier); \
             add one, or let `anon anonymize` search for the best",
            policy.source()
        )));
    }
    // refused before anything is read: a report is an output too
    let reports = ReportTargets::check(
        options.report.as_deref(),
        options.html_report.as_deref(),
        &policy,
        &out,
        options.overwrite,
    )
    .await?
    .recording_seed(options.record_seed);
    let saved = match &recoding {
        Some(location) => Some(SavedRecoding::read(location, policy.storage()).await?),
        None => None,
    };
    // the recoding refuses values missing from a value tree itself: no scan to check first
    policy.register_with(ctx, false).await?;
    let input_warnings = super::input_warnings(ctx, &policy, observer).await?;
    // in the data's column order, known once registered
    let levels = match &options.levels {
        Some(levels) => levels_in_order(&policy, levels)?,
        None => policy.transformation().unwrap_or_default(),
    };
    let order = options
        .seed
        .map_or_else(RowOrder::random, RowOrder::Shuffled);
    let total = super::input_rows(ctx, &policy, observer).await;
    let input_seconds = started.elapsed().as_secs_f64();
    // k-map and δ-presence are judged on the frequency set, which carries the population's
    // counts: one scan more than the other requirements need
    let mut frequency_set = None;
    let mut recoding_file = None;
    let (release, failing) = if let (Some(saved), Some(location)) = (&saved, &recoding) {
        let mapped = saved_release(ctx, &policy, saved, location, observer, total).await?;
        frequency_set = Some((mapped.combinations, mapped.seconds));
        recoding_file = Some(mapped.figures);
        // the classes are judged on this input's rows, as publishing counts them
        (mapped.release, None)
    } else if policy.requirements().population.is_some() {
        let (freq, seconds) = super::frequency_set(ctx, &policy, observer, total).await?;
        frequency_set = Some((freq.combinations(), seconds));
        let failing = search::failing_classes(&freq, policy.requirements(), &levels)?;
        (Release::FullDomain(levels), Some(failing))
    } else {
        (Release::FullDomain(levels), None)
    };
    let progress = PublishProgress::new();
    observer.scans_started(
        super::publish_passes(
            &progress,
            failing.is_none(),
            matches!(order, RowOrder::Shuffled(_)),
        ),
        total,
    );
    let output = planned.output(|| release_info("apply", &policy, &release, None, None));
    let published = publish::publish_to(
        PublishRequest::new(ctx, &policy, &output),
        &release,
        failing,
        order,
        Some(progress),
    )
    .await;
    observer.scans_finished().await;
    let published = match published {
        Ok(report) => report,
        Err(e) if MissingFromTree::is_cause_of(&e) => {
            // the refusal counted one batch's values: count them over the whole column
            policy.check_tree_values(ctx).await?;
            return Err(e);
        }
        Err(e) => return Err(policy.locate_input_error(e)),
    };
    let utility = if options.utility {
        let phase = Instant::now();
        let utility =
            publish::release_utility(ctx, &policy, &release, published.failing_classes.clone())
                .await?;
        Some((utility, phase.elapsed().as_secs_f64()))
    } else {
        None
    };
    super::report::note_release_warnings(&published, observer);
    let report = Report::new(ReportParts {
        command: "apply",
        policy: &policy,
        input_warnings,
        publish: published,
        search: None,
        frequency_set: frequency_set.map(|(combinations, seconds)| FrequencySetFigures {
            combinations,
            seconds,
        }),
        recoding_file,
        utility,
        started,
        input_seconds,
    });
    reports.write(&report, policy.storage()).await?;
    Ok(AppliedRelease::Generalized(Box::new(Applied {
        report,
        out,
    })))
}

/// A recoding saved by `anonymize` (`recoding_out`) mapped onto the registered policy's input.
pub struct SavedRelease {
    /// The saved classes as a local release of this input.
    pub release: Release,
    /// The file, its classes and the rows of combinations no class covers (suppressed).
    pub figures: RecodingFileFigures,
    /// The frequency set's combinations, and the seconds it took.
    pub combinations: usize,
    pub seconds: f64,
}

/// The local release of `saved` (read from `location`) on the registered `policy`'s input:
/// its classes mapped onto this input's combinations (one scan, the frequency set, watched by
/// `observer` of `total` rows when known); a combination no class covers is suppressed. What
/// `apply --recoding` publishes and Python's `generalized_table(recoding=...)` serves.
pub async fn saved_release(
    ctx: &SessionContext,
    policy: &Policy,
    saved: &SavedRecoding,
    location: &Location,
    observer: &dyn Observer,
    total: Option<u64>,
) -> Result<SavedRelease> {
    let (freq, seconds) = super::frequency_set(ctx, policy, observer, total).await?;
    let (local, uncovered) =
        saved.recoding_for(&location.to_string(), &freq, policy.requirements().k)?;
    observer.note(&format!(
        "recoding: {} classes from {location}; {uncovered} rows in no class (suppressed)",
        saved.classes.len()
    ));
    Ok(SavedRelease {
        release: Release::Local(Arc::new(local)),
        figures: RecodingFileFigures {
            file: location.to_string(),
            classes: saved.classes.len(),
            uncovered_rows: Some(uncovered),
        },
        combinations: freq.combinations(),
        seconds,
    })
}

/// `levels` by quasi-identifier, in the policy's quasi-identifier order, as
/// [`Policy::levels_by_name`] reads a transformation (one not named stays at 0); a name that
/// is not a quasi-identifier is refused.
pub fn levels_in_order(policy: &Policy, levels: &[(String, usize)]) -> Result<Vec<usize>> {
    if let Some((extra, _)) = levels
        .iter()
        .find(|(name, _)| !policy.quasi_identifiers().iter().any(|(qi, _)| qi == name))
    {
        return Err(DataFusionError::Plan(format!(
            "levels: '{extra}' is not a quasi-identifier of policy {}",
            policy.source()
        )));
    }
    Ok(policy.levels_by_name(|column| {
        levels
            .iter()
            .find(|(name, _)| name == column)
            .map(|(_, level)| *level)
    }))
}
