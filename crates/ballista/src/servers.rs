//! A scheduler and executors that know the crate: what `anon scheduler` and `anon executor`
//! run. A stock Ballista executor cannot decode a plan that uses the crate's functions.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::SessionConfig;

use super::{AnonymityLogicalCodec, AnonymityPhysicalCodec, cluster_config, cluster_state};
use datafusion_anonymity_engine::storage::LakeStoreRegistry;

/// A runtime that reads every object-store URL ([`LakeStoreRegistry`]), spilling to
/// `spill_dir` when given.
fn lake_runtime(spill_dir: Option<&str>) -> Result<Arc<RuntimeEnv>> {
    let mut builder =
        RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(LakeStoreRegistry::default()));
    if let Some(dir) = spill_dir {
        builder = builder.with_temp_file_path(dir);
    }
    builder.build_arc()
}

fn ballista_error(what: &str, error: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Execution(format!("{what}: {error}"))
}

/// Runs a scheduler on `bind` until the process ends. Every job is planned with the crate's
/// rules and functions ([`cluster_state`]).
pub async fn serve_scheduler(bind: SocketAddr) -> Result<()> {
    let session_builder =
        Arc::new(|config: SessionConfig| cluster_state(config, lake_runtime(None)?));
    let config = SchedulerConfig {
        bind_host: bind.ip().to_string(),
        external_host: bind.ip().to_string(),
        bind_port: bind.port(),
        override_session_builder: Some(session_builder),
        override_config_producer: Some(Arc::new(|| cluster_config(SessionConfig::new()))),
        override_logical_codec: Some(Arc::new(AnonymityLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(AnonymityPhysicalCodec::default())),
        ..SchedulerConfig::default()
    };
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| ballista_error("cannot set up the scheduler", e))?;
    start_server(cluster, bind, Arc::new(config))
        .await
        .map_err(|e| ballista_error(&format!("scheduler on {bind}"), e))
}

/// Where an executor listens and whom it serves.
#[derive(Debug, Clone)]
pub struct ExecutorOptions {
    /// The scheduler's host and port.
    pub scheduler: (String, u16),
    /// Host and port of the executor's Arrow Flight service (where other executors and the
    /// client fetch results).
    pub bind: SocketAddr,
    /// Port of the executor's gRPC service.
    pub grpc_port: u16,
    /// Tasks run at once (0: one per core).
    pub concurrent_tasks: usize,
    /// The executor's memory pool in bytes, shared by its tasks; unbounded when `None`.
    pub memory_limit: Option<u64>,
    /// Where shuffle files and spills go (a new temporary directory when `None`).
    pub work_dir: Option<String>,
}

/// How long an executor waits for its scheduler to accept connections. A cluster's processes
/// may start in any order, and a scheduler on a loaded machine can take seconds to listen;
/// Ballista's executor gives up at once ("Could not connect to scheduler") and a client's
/// job then waits for executors forever.
pub const SCHEDULER_WAIT: Duration = Duration::from_secs(60);

/// Returns once `host:port` accepts a TCP connection, or fails naming it after `wait`.
pub async fn wait_for_scheduler(host: &str, port: u16, wait: Duration) -> Result<()> {
    let deadline = Instant::now() + wait;
    loop {
        match tokio::net::TcpStream::connect((host, port)).await {
            Ok(_) => return Ok(()),
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => {
                return Err(DataFusionError::Execution(format!(
                    "no scheduler accepts connections at {host}:{port} after {} s ({e}): start \
                     `anon scheduler` there, or point --scheduler at the one running",
                    wait.as_secs()
                )));
            }
        }
    }
}

/// Runs an executor until the process ends, with the crate's functions and codecs and a
/// runtime that reads every object-store URL; it first waits up to [`SCHEDULER_WAIT`] for the
/// scheduler.
pub async fn serve_executor(options: ExecutorOptions) -> Result<()> {
    wait_for_scheduler(&options.scheduler.0, options.scheduler.1, SCHEDULER_WAIT).await?;
    let state = cluster_state(SessionConfig::new(), lake_runtime(None)?)?;
    let work_dir = options.work_dir.clone();
    let mut config = ExecutorProcessConfig {
        bind_host: options.bind.ip().to_string(),
        external_host: Some(options.bind.ip().to_string()),
        port: options.bind.port(),
        grpc_port: options.grpc_port,
        scheduler_host: options.scheduler.0.clone(),
        scheduler_port: options.scheduler.1,
        work_dir: options.work_dir.clone(),
        memory_pool_size: options.memory_limit,
        override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(&state))),
        override_runtime_producer: Some(Arc::new(move |_: &SessionConfig| {
            lake_runtime(work_dir.as_deref())
        })),
        override_config_producer: Some(Arc::new(|| cluster_config(SessionConfig::new()))),
        override_logical_codec: Some(Arc::new(AnonymityLogicalCodec::default())),
        override_physical_codec: Some(Arc::new(AnonymityPhysicalCodec::default())),
        print_thread_info: false,
        ..ExecutorProcessConfig::default()
    };
    if options.concurrent_tasks > 0 {
        config.vcores = options.concurrent_tasks;
    }
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| ballista_error("executor", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port nothing listens on: the wait ends after its time with an error naming the
    /// address; one something listens on: it returns at once.
    #[tokio::test]
    async fn the_wait_for_a_scheduler_ends_naming_its_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap().port();
        wait_for_scheduler("127.0.0.1", open, Duration::ZERO)
            .await
            .unwrap();
        drop(listener);
        let started = Instant::now();
        let error = wait_for_scheduler("127.0.0.1", open, Duration::from_millis(600))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            started.elapsed() >= Duration::from_millis(600),
            "gave up early"
        );
        assert!(
            error.contains(&format!(
                "no scheduler accepts connections at 127.0.0.1:{open} after 0 s"
            )),
            "{error}"
        );
    }
}
