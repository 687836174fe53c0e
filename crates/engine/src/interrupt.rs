//! Stopping a job when its user asks (Ctrl-C or SIGTERM on the command line, Python's
//! `KeyboardInterrupt`): the job stops at its next check, commits nothing, and its staging is
//! removed.
//!
//! A request is one process-wide flag ([`request`]); a host (the CLI's signal handler, the
//! Python package's wait loop) sets it and runs the job through [`run`], which returns
//! [`interrupted`] as soon as the flag is seen:
//! - while the job awaits (a DataFusion query, a write, a read of the store), by dropping its
//!   future: DataFusion's streams and tasks stop there;
//! - while it computes in memory (the searches, microaggregation, cloaking), by the job's own
//!   checks ([`check`], [`requested`]) in its long loops, which turn the request into the
//!   same error;
//! - and always right before a commit ([`crate::publish::staged`]): a job interrupted before
//!   its commit publishes nothing.
//!
//! Dropping a job drops its uncommitted staged outputs, which remove their staging. A task of
//! the job still running then (a file being written on a blocking thread) could write into the
//! staging again, so each staging dropped while a request stands is also recorded, and the
//! host removes them again once the job's tasks have stopped ([`sweep`]).
//!
//! The flag is process-wide: a request stops every job of the process (a Python process
//! running jobs on several threads stops them all). [`reset`] clears it before a new job. A
//! host tells an interrupted job from a failed one by the flag ([`requested`]), not by the
//! error's text.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datafusion::error::{DataFusionError, Result};

use crate::storage::{Location, StoreOptions};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Stagings dropped while a request stood: removed again by [`sweep`].
static DROPPED: Mutex<Vec<(Location, StoreOptions)>> = Mutex::new(Vec::new());

/// How often [`run`] looks at the flag while the job awaits.
const POLL: Duration = Duration::from_millis(50);

/// The message of [`interrupted`].
pub const INTERRUPTED: &str =
    "interrupted: the job stopped before its commit; nothing was published";

/// Asks every running job to stop.
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Clears a request: before a new job of a process whose earlier job was interrupted.
pub fn reset() {
    REQUESTED.store(false, Ordering::SeqCst);
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// The error of an interrupted job.
pub fn interrupted() -> DataFusionError {
    DataFusionError::Execution(INTERRUPTED.to_string())
}

/// [`interrupted`] when a stop was asked for.
pub fn check() -> Result<()> {
    if requested() {
        Err(interrupted())
    } else {
        Ok(())
    }
}

/// `job`, or [`interrupted`] once a stop is asked for (the job's future dropped then).
pub async fn run<T>(job: impl Future<Output = Result<T>>) -> Result<T> {
    let watch = async {
        while !requested() {
            tokio::time::sleep(POLL).await;
        }
    };
    tokio::select! {
        outcome = job => outcome,
        () = watch => Err(interrupted()),
    }
}

/// Records a staging dropped uncommitted while a request stands (see the module docs).
pub(crate) fn dropped(staging: &Location, options: &StoreOptions) {
    if requested() {
        DROPPED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((staging.clone(), options.clone()));
    }
}

/// Removes again every staging dropped while a request stood, once the interrupted job's
/// tasks have stopped (a staging already gone is no error).
pub fn sweep() {
    let dropped = std::mem::take(&mut *DROPPED.lock().unwrap_or_else(|e| e.into_inner()));
    for (staging, options) in dropped {
        let _ = crate::storage::remove_blocking(&staging, &options);
    }
}

/// Test hook: with `ANON_TEST_PAUSE_AT=<point>` in the environment, prints
/// `paused at <point>` on stderr and sleeps `ANON_TEST_PAUSE_SECONDS` (default 60), so a test
/// can kill or interrupt the process at a named point (`before-search`: the input read, the
/// search not started; `after-write`: a generalization's files written, not yet verified;
/// `before-commit`: verified, not committed; `after-commit`: committed) or make two publishes
/// overlap.
pub fn hook_pause(point: &str) {
    if std::env::var("ANON_TEST_PAUSE_AT").is_ok_and(|p| p == point) {
        let seconds = std::env::var("ANON_TEST_PAUSE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60);
        eprintln!("paused at {point}");
        std::thread::sleep(std::time::Duration::from_secs(seconds));
    }
}
