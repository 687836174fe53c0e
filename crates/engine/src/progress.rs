//! Rows scanned so far by a running plan, for progress reports on long runs.
//!
//! DataFusion has no progress hook, but every scan counts the rows it has produced in its
//! live `output_rows` metric. [`watch`] reads those counters of a plan's leaves (its scans)
//! every 100 ms into a [`ScanProgress`] that a reporter (the CLI's bar) reads in turn. Rows
//! are counted as the scans emit them, before any aggregation; a plan run elsewhere (on a
//! cluster) reports nothing. A stage that sees the rows itself (the writing of a
//! publication) counts them with [`ScanProgress::add`] instead.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use datafusion::physical_plan::ExecutionPlan;

/// Rows scanned so far, shared between the work and its reporter, and the rows expected in
/// all when the work knows them.
#[derive(Debug, Default)]
pub struct ScanProgress {
    rows: AtomicU64,
    total: OnceLock<u64>,
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

    /// Counts `rows` more.
    pub(crate) fn add(&self, rows: u64) {
        self.rows.fetch_add(rows, Ordering::Relaxed);
    }

    /// The rows expected in all, when the work has said (before counting them).
    pub fn total(&self) -> Option<u64> {
        self.total.get().copied()
    }

    /// Says that `total` rows are expected in all (the first total said stays).
    pub(crate) fn set_total(&self, total: u64) {
        let _ = self.total.set(total);
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

/// Copies [`rows_scanned`] of `plan` into `progress` (when higher) every 100 ms until the
/// returned guard is dropped, and once more then, so that a finished scan leaves its whole
/// count.
pub(crate) fn watch(plan: Arc<dyn ExecutionPlan>, progress: Arc<ScanProgress>) -> WatchGuard {
    let task = {
        let (plan, progress) = (Arc::clone(&plan), Arc::clone(&progress));
        tokio::spawn(async move {
            loop {
                progress
                    .rows
                    .fetch_max(rows_scanned(&plan), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    WatchGuard {
        task,
        plan,
        progress,
    }
}

/// Stops a [`watch`] when dropped, after a last copy of the count.
pub(crate) struct WatchGuard {
    task: tokio::task::JoinHandle<()>,
    plan: Arc<dyn ExecutionPlan>,
    progress: Arc<ScanProgress>,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.task.abort();
        // the scans' counts only grow: a copy the aborted task makes late cannot undo this one
        self.progress
            .rows
            .fetch_max(rows_scanned(&self.plan), Ordering::Relaxed);
    }
}
