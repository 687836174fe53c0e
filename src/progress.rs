//! Rows scanned so far by a running plan, for progress reports on long runs.
//!
//! DataFusion has no progress hook, but every scan counts the rows it has produced in its
//! live `output_rows` metric. [`watch`] reads those counters of a plan's leaves (its scans)
//! every 100 ms into a [`ScanProgress`] that a reporter (the CLI's bar) reads in turn. Rows
//! are counted as the scans emit them, before any aggregation; a plan run elsewhere (on a
//! cluster) reports nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use datafusion::physical_plan::ExecutionPlan;

/// Rows scanned so far, shared between the work and its reporter.
#[derive(Debug, Default)]
pub struct ScanProgress {
    rows: AtomicU64,
}

impl ScanProgress {
    /// A counter at 0.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Rows scanned so far.
    pub fn rows(&self) -> u64 {
        self.rows.load(Ordering::Relaxed)
    }
}

/// The rows the leaves of `plan` (its scans) have produced so far, from their live metrics.
pub fn rows_scanned(plan: &Arc<dyn ExecutionPlan>) -> u64 {
    let children = plan.children();
    if children.is_empty() {
        return plan
            .metrics()
            .and_then(|m| m.output_rows())
            .map_or(0, |rows| rows as u64);
    }
    children.into_iter().map(rows_scanned).sum()
}

/// Copies [`rows_scanned`] of `plan` into `progress` every 100 ms until the returned guard is
/// dropped.
pub(crate) fn watch(plan: Arc<dyn ExecutionPlan>, progress: Arc<ScanProgress>) -> WatchGuard {
    let task = tokio::spawn(async move {
        loop {
            progress.rows.store(rows_scanned(&plan), Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    WatchGuard(task)
}

/// Stops a [`watch`] when dropped.
pub(crate) struct WatchGuard(tokio::task::JoinHandle<()>);

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}
