//! What Python sees of a running job ([`Watch`], the job's [`Observer`]): its warnings, kept
//! for the calling thread to raise through Python's `warnings` module once the job is over
//! ([`crate::errors::warn`]), and its progress, which the calling thread hands to the caller's
//! `progress` callback while the job runs ([`Watch::progress`]). The job runs on another
//! thread, without the GIL, where neither a warning nor a callback could run (and stderr
//! cannot be caught).

use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use datafusion_anonymity_engine::jobs::Observer;
use datafusion_anonymity_engine::progress::ScanProgress;

/// Where a job is: its phase, the units done of the total (when known), and the unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub phase: &'static str,
    pub done: u64,
    pub total: Option<u64>,
    pub unit: &'static str,
}

#[derive(Default)]
struct State {
    warnings: Vec<String>,
    /// The passes over the input of the last `scans_started`, in their order, and the
    /// input's rows when known.
    passes: Vec<(&'static str, Arc<ScanProgress>)>,
    total: Option<u64>,
    /// The pass shown last: a later one replaces it once its counter moves.
    shown: usize,
    /// An in-memory phase's steps (phase, unit, done, total), while it runs.
    steps: Option<(&'static str, &'static str, usize, usize)>,
}

/// The observer of a Python job; see the module documentation.
#[derive(Default)]
pub struct Watch {
    state: Mutex<State>,
}

impl Watch {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The warnings so far, without their `warning: ` prefix; none are kept.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut self.state().warnings)
    }

    /// Where the job is now, as the command line's bar would show it: an in-memory phase's
    /// steps while it runs, else the first pass over the input at once and then the latest
    /// pass whose counter has moved; `None` between phases.
    pub fn progress(&self) -> Option<Snapshot> {
        let mut state = self.state();
        if let Some((phase, unit, done, total)) = state.steps {
            return Some(Snapshot {
                phase,
                done: done as u64,
                total: Some(total as u64),
                unit,
            });
        }
        let moved = state
            .passes
            .iter()
            .rposition(|(_, counter)| counter.rows() > 0);
        if let Some(moved) = moved {
            state.shown = state.shown.max(moved);
        }
        let (phase, counter) = state.passes.get(state.shown)?;
        Some(Snapshot {
            phase,
            done: counter.rows(),
            total: counter.total().or(state.total),
            unit: "rows",
        })
    }
}

#[async_trait]
impl Observer for Watch {
    fn wants_progress(&self) -> bool {
        true
    }

    fn scans_started(&self, passes: Vec<(&'static str, Arc<ScanProgress>)>, total: Option<u64>) {
        let mut state = self.state();
        state.passes = passes;
        state.total = total;
        state.shown = 0;
    }

    async fn scans_finished(&self) {
        self.state().passes.clear();
    }

    fn steps(&self, phase: &'static str, unit: &'static str, done: usize, total: usize) {
        self.state().steps = Some((phase, unit, done, total));
    }

    fn steps_finished(&self) {
        self.state().steps = None;
    }

    fn note(&self, line: &str) {
        if let Some(warning) = line.strip_prefix("warning: ") {
            self.state().warnings.push(warning.to_string());
        }
    }
}
