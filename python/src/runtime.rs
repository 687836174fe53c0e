//! The extension's own tokio runtime. datafusion-python runs its queries on its own runtime,
//! a different copy of tokio in a different library: code of this library that spawns tasks
//! or does blocking I/O must run on this one (see [`handle`]).
//!
//! A job ([`run_job`]) runs on a thread of its own while the caller's thread, the GIL
//! released, looks every 50 ms for a signal Python must handle (Ctrl-C's
//! `KeyboardInterrupt`): Python runs signal handlers only on its main thread, which would
//! otherwise wait for the job to end before raising it.

use std::sync::OnceLock;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::time::Duration;

use datafusion_anonymity_engine::interrupt;
use pyo3::prelude::*;

use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use tokio::runtime::{Handle, Runtime};

static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

fn runtime() -> Result<&'static Runtime> {
    RUNTIME
        .get_or_init(|| {
            tokio::runtime::Builder::new_multi_thread()
                .thread_name("datafusion-anonymity")
                .enable_all()
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| DataFusionError::Execution(format!("cannot start the runtime: {e}")))
}

/// The runtime's handle, given to the FFI objects whose plans run here.
pub fn handle() -> Result<Handle> {
    Ok(runtime()?.handle().clone())
}

/// Runs `future` to completion on the runtime (the caller has released the GIL).
pub fn block_on<F: Future>(future: F) -> Result<F::Output> {
    Ok(runtime()?.block_on(future))
}

/// Runs `future` on the runtime from any executor (datafusion-python's, during planning) and
/// awaits its output there.
pub async fn on_runtime<F>(future: F) -> Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    runtime()?
        .spawn(future)
        .await
        .map_err(|e| DataFusionError::Execution(format!("a planning task failed: {e}")))
}

/// How often the caller's thread asks Python for its signals while a job runs.
const SIGNALS_EVERY: Duration = Duration::from_millis(50);

/// How long the tasks of an interrupted job get to stop before its staging is removed again.
const SETTLE: Duration = Duration::from_millis(200);

/// What a job came to: its outcome, and the exception of the signal that interrupted it (the
/// job stopped, committing nothing) or came too late to (the job had committed).
pub struct JobOutcome<T> {
    pub outcome: Result<T>,
    pub signal: Option<PyErr>,
}

/// Runs the future `job` makes on the runtime, on a thread of its own, the GIL released,
/// while this thread runs Python's signal handlers and then `tick` (the caller's progress
/// callback) every [`SIGNALS_EVERY`]: a handler that raises (Ctrl-C), or a `tick` that does,
/// asks the job to stop ([`interrupt::request`]); it then stops at its next check, commits
/// nothing and removes its staging, and the exception is the outcome's `signal`.
pub fn run_job<T, F>(
    py: Python<'_>,
    job: impl FnOnce() -> F + Send,
    mut tick: impl FnMut(Python<'_>) -> PyResult<()> + Send,
) -> JobOutcome<T>
where
    T: Send,
    F: Future<Output = Result<T>>,
{
    interrupt::reset();
    let mut signal: Option<PyErr> = None;
    let outcome = py.detach(|| {
        std::thread::scope(|scope| {
            let (finished, done) = channel::<()>();
            let worker = scope.spawn(move || {
                let outcome = block_on(interrupt::run(job())).and_then(|r| r);
                let _ = finished.send(());
                outcome
            });
            while let Err(RecvTimeoutError::Timeout) = done.recv_timeout(SIGNALS_EVERY) {
                if signal.is_none()
                    && let Err(raised) =
                        Python::attach(|py| py.check_signals().and_then(|()| tick(py)))
                {
                    signal = Some(raised);
                    interrupt::request();
                }
            }
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    });
    if signal.is_some() && outcome.is_err() {
        // a task of the job may still write into a staging after its removal
        std::thread::sleep(SETTLE);
        interrupt::sweep();
    }
    JobOutcome { outcome, signal }
}
