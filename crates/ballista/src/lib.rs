//! Running on a Ballista cluster: DataFusion's own distributed engine.
//!
//! A query on a cluster is planned in three places, and each needs the crate:
//!
//! ```text
//! client (anon … --cluster df://host:port)     scheduler (anon scheduler)       executors (anon executor)
//!   parse, analyze (whole-table rewrite),  ──▶   physical planning with     ──▶   run the tasks with the
//!   optimize; the logical plan is sent           SinglePhaseAggregation;          crate's functions
//!   with AnonymityLogicalCodec                   stages sent with                 (register_udfs) and
//!                                                AnonymityPhysicalCodec           LakeStoreRegistry
//! ```
//!
//! - The client rewrites whole-table aggregates before the plan leaves
//!   ([`datafusion_anonymity::rewrite::WholeTableRewrite`] is an analyzer rule), so the scheduler receives
//!   the rewritten plan: an aggregate, a window `OVER ()` over one row per class, a projection.
//! - Functions travel by name, except those with parameters in their struct (hierarchies, a
//!   local release, a histogram's domain), whose parameters travel in the payload
//!   ([`codec`]). A `GeneralizedTable` is a view, inlined into the plan before it leaves; its
//!   failing classes, a `MemTable`, travel as their batches.
//! - `SessionContext::remote_with_state` and `standalone_with_state` replace the client's
//!   function maps with Ballista's, so [`connect`] and [`standalone`] register the crate's
//!   functions again afterwards.
//!
//! # How the work scales (on paper)
//!
//! - **The frequency set** (`GROUP BY` the raw quasi-identifiers, with per-class histograms
//!   where l or t is required) is a hash aggregation: executors aggregate their partitions,
//!   shuffle by the QI hash and merge. Scan and partial aggregation scale with executors;
//!   the merged frequency set (one row per distinct QI combination, C rows) is streamed to
//!   the client, which holds it in memory: O(C × QIs) on one machine, independent of rows.
//! - **The search** rolls the frequency set up over the lattice (full-domain) or partitions
//!   it (local recoding) on the client. It grows with C and the lattice, not with rows or
//!   executors, and stays on one machine: it is small next to the scan for realistic C (the
//!   100M-row benchmark's 10.5M combinations are the largest measured).
//! - **Publishing** scans again on the cluster: recoding, the class counts and the join
//!   against the failing classes run on executors; the output streams to the client, which
//!   writes, verifies and commits it (staged, as locally). The write is one stream, so it
//!   scales with the client's bandwidth, not with executors.

pub mod codec;
#[cfg(feature = "servers")]
pub mod servers;

use std::sync::Arc;

use ballista::prelude::SessionContextExt;
use ballista_core::extension::SessionConfigExt;
#[cfg(feature = "servers")]
use ballista_core::serde::protobuf::scheduler_grpc_client::SchedulerGrpcClient;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_anonymity_engine::session;

pub use codec::{AnonymityLogicalCodec, AnonymityPhysicalCodec};

/// `config` made ready for Ballista, with the crate's codecs.
pub fn cluster_config(config: SessionConfig) -> SessionConfig {
    // the packed GROUP BY kernel is an execution plan of the crate's own, which the stages
    // sent to executors could not carry: DataFusion's aggregation runs on a cluster
    let mut options = config
        .options()
        .extensions
        .get::<datafusion_anonymity::options::AnonymityOptions>()
        .cloned()
        .unwrap_or_default();
    options.packed_aggregation = false;
    config
        .with_option_extension(options)
        .upgrade_for_ballista()
        .with_ballista_logical_extension_codec(Arc::new(AnonymityLogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(AnonymityPhysicalCodec::default()))
        // Ballista 55's adaptive planner leaves a job waiting forever when a join side turns
        // out empty at run time (a GeneralizedTable query whose filter keeps no failing
        // class); the static planner runs it (tests/integration/cluster.rs)
        .set_bool(
            ballista_core::config::BALLISTA_ADAPTIVE_PLANNER_ENABLED,
            false,
        )
        // an executor runs one partition of a scan as its own task: with DataFusion's work
        // stealing, that task would also read the files of the partitions it never polls
        .set_bool(
            "datafusion.execution.enable_file_stream_work_stealing",
            false,
        )
}

/// A session state with the crate's rules and functions, Ballista's configuration and the
/// crate's codecs, over `runtime`: what schedulers plan with and executors run with.
pub fn cluster_state(
    config: SessionConfig,
    runtime: Arc<RuntimeEnv>,
) -> Result<datafusion::execution::SessionState> {
    let builder = SessionStateBuilder::new()
        .with_default_features()
        .with_config(cluster_config(config))
        .with_runtime_env(runtime)
        .with_optimizer_rules(ballista_core::optimizer::ballista_default_optimizer_rules());
    let mut state = datafusion_anonymity::with_anonymity_rules(builder).build();
    datafusion_anonymity::register_udfs(&mut state)?;
    Ok(state)
}

/// A client session whose queries run on the Ballista scheduler at `url` (`df://host:port`),
/// with the crate's functions, rules and codecs, and `runtime` for what runs on the client
/// (writing outputs, reading small files).
pub async fn connect(url: &str, runtime: Arc<RuntimeEnv>) -> Result<SessionContext> {
    reachable(url).await?;
    let state = cluster_state(SessionConfig::new(), runtime)?;
    let ctx = SessionContext::remote_with_state(url, state)
        .await
        .map_err(|e| cluster_error(url, e))?;
    // remote_with_state replaced the function maps with Ballista's
    datafusion_anonymity_engine::register(&ctx)?;
    Ok(ctx)
}

/// Starts a cluster in this process: a scheduler and one executor on loopback (random
/// ports), with the crate's rules, functions and codecs, running on `runtime`. Returns the
/// scheduler's URL for [`connect`] (from this process or another). For tests and
/// single-machine trials; the cluster lives as long as the process.
#[cfg(feature = "servers")]
pub async fn start_standalone_cluster(runtime: Arc<RuntimeEnv>) -> Result<String> {
    let state = cluster_state(SessionConfig::new(), runtime)?;
    let address = ballista_scheduler::standalone::new_standalone_scheduler_from_state(&state)
        .await
        .map_err(|e| DataFusionError::Execution(format!("cannot start a scheduler: {e}")))?;
    let scheduler_url = format!("http://localhost:{}", address.port());
    let scheduler = loop {
        match SchedulerGrpcClient::connect(scheduler_url.clone()).await {
            Ok(client) => break client,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
        }
    };
    let vcores = std::thread::available_parallelism().map_or(2, |n| n.get());
    ballista_executor::new_standalone_executor_from_state(scheduler, vcores, &state)
        .await
        .map_err(|e| DataFusionError::Execution(format!("cannot start an executor: {e}")))?;
    Ok(format!("df://localhost:{}", address.port()))
}

/// The session a job runs on, for the `--memory-limit` and `--cluster` options: local, or a
/// client of the Ballista scheduler at `cluster` (`df://host:port`), whose queries run on the
/// cluster while the memory limit bounds what stays on this machine (the frequency set, the
/// search, the write).
pub async fn session(memory_limit: Option<&str>, cluster: Option<&str>) -> Result<SessionContext> {
    match cluster {
        None => session::context_with_limit(memory_limit),
        Some(url) => {
            let limit = memory_limit.map(session::parse_size).transpose()?;
            connect(url, session::runtime(limit)?).await
        }
    }
}

/// A client session on a cluster started in this process ([`start_standalone_cluster`]).
#[cfg(feature = "servers")]
pub async fn standalone(runtime: Arc<RuntimeEnv>) -> Result<SessionContext> {
    let url = start_standalone_cluster(Arc::clone(&runtime)).await?;
    connect(&url, runtime).await
}

/// How long [`connect`] waits for the scheduler's port to answer.
const REACH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether the scheduler at `url` (`df://host:port`) takes a connection, before anything is
/// planned: Ballista's client connects only when the first query runs, and its error there is
/// the transport's own, without the address the user gave.
async fn reachable(url: &str) -> Result<()> {
    let address = url.strip_prefix("df://").unwrap_or(url);
    let refused = |why: String| {
        DataFusionError::Execution(format!(
            "cannot use the Ballista cluster at {url}: no scheduler answers there ({why})"
        ))
    };
    match tokio::time::timeout(REACH_TIMEOUT, tokio::net::TcpStream::connect(address)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(refused(e.to_string())),
        Err(_) => Err(refused(format!(
            "no answer within {} s",
            REACH_TIMEOUT.as_secs()
        ))),
    }
}

fn cluster_error(url: &str, error: DataFusionError) -> DataFusionError {
    DataFusionError::Execution(format!("cannot use the Ballista cluster at {url}: {error}"))
}
