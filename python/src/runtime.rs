//! The extension's own tokio runtime. datafusion-python runs its queries on its own runtime,
//! a different copy of tokio in a different library: code of this library that spawns tasks
//! or does blocking I/O must run on this one (see [`handle`]).

use std::sync::OnceLock;

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
