//! The jobs, one pipeline each: what `anon anonymize` runs and what Python's `anonymize()`
//! runs is the same function, with typed options in and a typed [`report::Report`] out. The
//! shells (the command line, Python) parse their arguments into the options, watch the job
//! through an [`Observer`] (the command line draws progress bars; Python watches nothing), and
//! print or return the report. So a seed means the same output everywhere, and a report has the
//! same keys whoever asked for it.
//!
//! The top layer of the engine: it imports the policy, the search, publishing and the profile,
//! and nothing imports it.

pub mod anonymize;
pub mod apply;
pub mod attack;
pub mod bucketize;
pub mod cloak;
pub mod hierarchy;
pub mod method_pages;
pub mod output;
pub mod perturb;
pub mod profile;
pub mod report;
pub mod sql;

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::stats::Precision;
use datafusion::physical_plan::{StatisticsArgs, StatisticsContext};
use datafusion::prelude::SessionContext;

use datafusion::error::DataFusionError;
use datafusion_anonymity::generalize::Hierarchy;

use crate::policy::Policy;
use crate::progress::ScanProgress;
use crate::publish::PublishProgress;
use crate::storage::{self, Location, StoreOptions};
use crate::tables::{TableFormat, table_format};

/// What a shell sees of a running job. Every method has a do-nothing default: a shell that
/// wants nothing (a library caller, Python) passes [`Silent`].
#[async_trait]
pub trait Observer: Send + Sync {
    /// Whether progress is wanted at all: without it, the job skips the work that only
    /// progress needs (reading the input's row count from its metadata).
    fn wants_progress(&self) -> bool {
        false
    }

    /// Passes over the input start, in this order, each counting its rows in its
    /// [`ScanProgress`]; `total` is the input's rows when known.
    fn scans_started(&self, _passes: Vec<(&'static str, Arc<ScanProgress>)>, _total: Option<u64>) {}

    /// The passes of the last [`Observer::scans_started`] are over (or failed).
    async fn scans_finished(&self) {}

    /// An in-memory phase (the search) has done `done` of `total` steps of `unit`.
    fn steps(&self, _phase: &'static str, _unit: &'static str, _done: usize, _total: usize) {}

    /// The in-memory phase is over.
    fn steps_finished(&self) {}

    /// A line for the user: a phase's summary, or a warning (which starts with `warning:`).
    /// Never a value of the data.
    fn note(&self, _line: &str) {}
}

/// The observer that watches nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {}

/// The policy's input rows from its Parquet metadata (no scan), for a progress total; `None`
/// for CSV inputs, inexact statistics, or when the observer wants no progress.
pub async fn input_rows(
    ctx: &SessionContext,
    policy: &Policy,
    observer: &dyn Observer,
) -> Option<u64> {
    if !observer.wants_progress() {
        return None;
    }
    let path = policy.input().datafusion_path();
    input_rows_from_metadata(ctx, policy.table_name(), &path).await
}

/// A registered table's rows from its Parquet metadata, without a scan; `None` for other
/// formats or when the statistics are not exact.
pub async fn input_rows_from_metadata(
    ctx: &SessionContext,
    table: &str,
    path: &str,
) -> Option<u64> {
    if !matches!(table_format(path), Ok(TableFormat::Parquet)) {
        return None;
    }
    let provider = ctx.table_provider(table).await.ok()?;
    let state = ctx.state();
    let plan = provider.scan(&state, None, &[], None).await.ok()?;
    let statistics = StatisticsContext::new()
        .compute(plan.as_ref(), &StatisticsArgs::new())
        .ok()?;
    match statistics.num_rows {
        Precision::Exact(rows) => Some(rows as u64),
        _ => None,
    }
}

/// The frequency set of the registered `policy` (one scan, watched by `observer`, of `total`
/// input rows when known), and its seconds.
pub async fn frequency_set(
    ctx: &SessionContext,
    policy: &Policy,
    observer: &dyn Observer,
    total: Option<u64>,
) -> datafusion::error::Result<(crate::search::FrequencySet, f64)> {
    let phase = std::time::Instant::now();
    let scanned = ScanProgress::new();
    observer.scans_started(vec![("frequency set", Arc::clone(&scanned))], total);
    let freq = policy.frequency_set(ctx, Some(scanned)).await;
    observer.scans_finished().await;
    Ok((freq?, phase.elapsed().as_secs_f64()))
}

/// The warnings about the registered `policy`'s input (an identifier whose values repeat),
/// each told to `observer` as the command line prints it; returned without their `warning: `
/// prefix, for the report. Called after the first scan, whose errors about the input come
/// first.
pub async fn input_warnings(
    ctx: &SessionContext,
    policy: &Policy,
    observer: &dyn Observer,
) -> datafusion::error::Result<Vec<String>> {
    let repeated = policy.repeated_identifiers(ctx).await?;
    for identifier in &repeated {
        observer.note(&identifier.warning());
    }
    Ok(repeated.iter().map(|r| r.message()).collect())
}

/// The tree hierarchy `name` read from `path` (an ARX hierarchy CSV file, a path or a URL),
/// for the jobs' `--hierarchy NAME=PATH`.
pub fn tree_hierarchy(name: &str, path: &str) -> datafusion::error::Result<Arc<Hierarchy>> {
    let location = Location::parse(path)?;
    let text = storage::read_text_blocking(&location, &StoreOptions::default()).map_err(|e| {
        DataFusionError::Plan(format!("cannot read hierarchy '{name}': {}", e.message()))
    })?;
    Ok(Arc::new(Hierarchy::tree_from_csv_str(
        name,
        &location.to_string(),
        &text,
    )?))
}

/// A publication's passes (see [`PublishProgress`]): the count of the classes to suppress
/// (unless the classes are given: `count_classes` false), the shuffle (when `shuffled`), then
/// the writing.
pub fn publish_passes(
    progress: &PublishProgress,
    count_classes: bool,
    shuffled: bool,
) -> Vec<(&'static str, Arc<ScanProgress>)> {
    let mut passes = Vec::new();
    if count_classes {
        passes.push(("classes", Arc::clone(&progress.classes)));
    }
    if shuffled {
        passes.push(("shuffle", Arc::clone(&progress.shuffled)));
    }
    passes.push(("write", Arc::clone(&progress.written)));
    passes
}
