//! `anon scheduler` and `anon executor`: a Ballista cluster that knows the crate.

use std::net::{SocketAddr, ToSocketAddrs};

use datafusion::error::{DataFusionError, Result};
use datafusion_anonymity_ballista::servers::{self, ExecutorOptions};
use datafusion_anonymity_engine::session::parse_size;

#[derive(clap::Args, Debug)]
pub struct SchedulerArgs {
    /// Address to listen on.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    bind: String,
}

#[derive(clap::Args, Debug)]
pub struct ExecutorArgs {
    /// The scheduler to serve (waited for up to 60 s when it is not listening yet).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50050")]
    scheduler: String,
    /// Address of the executor's Arrow Flight service, where results are fetched.
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:50051")]
    bind: String,
    /// Port of the executor's gRPC service.
    #[arg(long, value_name = "PORT", default_value_t = 50052)]
    grpc_port: u16,
    /// Tasks run at once (default: one per core).
    #[arg(long, value_name = "N", default_value_t = 0)]
    concurrent_tasks: usize,
    /// Memory of the executor's tasks together (e.g. 4GiB); they spill beyond it.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    /// Directory for shuffle files and spills (default: a new temporary directory).
    #[arg(long, value_name = "DIR")]
    work_dir: Option<String>,
}

fn socket_address(text: &str, what: &str) -> Result<SocketAddr> {
    text.to_socket_addrs()
        .ok()
        .and_then(|mut addresses| addresses.next())
        .ok_or_else(|| DataFusionError::Plan(format!("{what} '{text}' is not a HOST:PORT address")))
}

/// Fails, naming the address and the flags that pick another, when `address` cannot be
/// listened on: a second scheduler or executor on one machine would otherwise stop with
/// Ballista's bare "Address already in use (os error 98)" or, when only the executor's Flight
/// port is taken, register with the scheduler and then exit with status 0 and no message.
fn check_can_listen(address: SocketAddr, what: &str, process: &str, flags: &str) -> Result<()> {
    match std::net::TcpListener::bind(address) {
        Ok(_) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
            Err(DataFusionError::Plan(format!(
                "{what} {address} is already in use (another {process} on this machine?): \
                 {flags}"
            )))
        }
        Err(error) => Err(DataFusionError::Plan(format!(
            "cannot listen on {what} {address}: {error}"
        ))),
    }
}

pub async fn scheduler(args: SchedulerArgs) -> Result<()> {
    let bind = socket_address(&args.bind, "--bind")?;
    check_can_listen(
        bind,
        "the scheduler's --bind address",
        "scheduler",
        "pick another with --bind HOST:PORT (and point the executors' --scheduler and the \
         clients' --cluster df://HOST:PORT at it)",
    )?;
    eprintln!("scheduler listening on {bind} (clients: --cluster df://{bind})");
    servers::serve_scheduler(bind).await
}

pub async fn executor(args: ExecutorArgs) -> Result<()> {
    let bind = socket_address(&args.bind, "--bind")?;
    let (host, port) = args
        .scheduler
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.to_string(), port.parse::<u16>().ok()?)))
        .ok_or_else(|| {
            DataFusionError::Plan(format!(
                "--scheduler '{}' is not a HOST:PORT address",
                args.scheduler
            ))
        })?;
    let memory_limit = args
        .memory_limit
        .as_deref()
        .map(parse_size)
        .transpose()?
        .map(|bytes| bytes as u64);
    let flags = "give each executor on a machine its own --bind HOST:PORT and --grpc-port PORT";
    check_can_listen(
        bind,
        "the executor's --bind address (Arrow Flight)",
        "executor",
        flags,
    )?;
    let grpc = SocketAddr::new(bind.ip(), args.grpc_port);
    check_can_listen(
        grpc,
        "the executor's --grpc-port address",
        "executor",
        flags,
    )?;
    eprintln!("executor on {bind} serving the scheduler at {host}:{port}");
    servers::serve_executor(ExecutorOptions {
        scheduler: (host, port),
        bind,
        grpc_port: args.grpc_port,
        concurrent_tasks: args.concurrent_tasks,
        memory_limit,
        work_dir: args.work_dir,
    })
    .await
}
