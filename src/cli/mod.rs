//! Subcommands of `anon`. Every error ends as one `error: ...` line on stderr and a non-zero
//! exit code (1, or 2 for a malformed command line).

mod anonymize;
mod apply;
mod attack;
mod bucketize;
mod cluster;
mod errors;
mod hierarchy;
mod output;
mod perturb;
mod profile;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};

use clap::{Parser, Subcommand};
use datafusion::error::{DataFusionError, Result};

use datafusion_anonymity_engine::interrupt;
use datafusion_anonymity_engine::jobs::{
    self,
    sql::{SqlOptions, TableSource},
};
use datafusion_anonymity_engine::tables::{self, BadValues};
use datafusion_anonymity_generate as generate;

use output::Format;

/// Privacy-preserving data publishing with SQL: k-anonymity, l-diversity, t-closeness and
/// friends as DataFusion functions over Parquet and CSV.
#[derive(Parser, Debug)]
#[command(name = "anon", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run SQL with the anonymity functions registered.
    Sql(SqlArgs),
    /// Write a deterministic synthetic table (patients, medical or visits) to Parquet.
    Generate(GenerateArgs),
    /// Write the input of a policy generalized at its fixed transformation, suppressed and
    /// verified, as Parquet, and report it.
    Apply(apply::ApplyArgs),
    /// Search the transformation with the least information loss that satisfies a policy,
    /// publish it as Parquet, verify it and report.
    Anonymize(anonymize::AnonymizeArgs),
    /// Build a hierarchy file from a column's values, or check one against them.
    Hierarchy(hierarchy::HierarchyArgs),
    /// Risk and utility report of a table: anonymity, risk, leakage ranking, utility.
    Profile(Box<profile::ProfileArgs>),
    /// Run an attack on a published release and count the records it breaks.
    Attack(attack::AttackArgs),
    /// Run a Ballista scheduler that plans with the anonymity rules and functions.
    Scheduler(cluster::SchedulerArgs),
    /// Run a Ballista executor with the anonymity functions, serving a scheduler.
    Executor(cluster::ExecutorArgs),
}

/// `--cluster`: where a command's queries run.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ClusterArg {
    /// Run the queries on the Ballista cluster whose scheduler is at this URL
    /// (`df://host:port`, started with `anon scheduler` and `anon executor`); the search and
    /// the writing of outputs stay on this machine.
    #[arg(long, value_name = "URL")]
    pub(crate) cluster: Option<String>,
}

impl ClusterArg {
    pub(crate) fn url(&self) -> Option<&str> {
        self.cluster.as_deref()
    }
}

#[derive(clap::Args, Debug)]
struct SqlArgs {
    /// A table to register, repeatable: NAME=PATH, PATH a Parquet file, a directory of Parquet
    /// files, a CSV file with a header row (`,` or `;` separated) or a directory of CSV files.
    /// A CSV column is read as a number, date or timestamp only when every value is written
    /// exactly as that type prints it (`02134` stays text).
    #[arg(long = "table", short = 't', value_name = "NAME=PATH")]
    tables: Vec<String>,
    /// CSV values that do not convert to the `type` a policy gives their column: `error`
    /// (default: the file, line and column are named) or `null` (read as NULL, counted on
    /// stderr). Overrides the policy's `[input] bad_values`.
    #[arg(long, value_name = "error|null", value_parser = ["error", "null"])]
    bad_values: Option<String>,
    /// A generalization hierarchy for `generalize(col, 'NAME', level)`, repeatable: NAME=PATH,
    /// PATH an ARX hierarchy CSV file (one row per value, `;`-separated levels ending in `*`).
    #[arg(long = "hierarchy", value_name = "NAME=PATH")]
    hierarchies: Vec<String>,
    /// A policy file: registers its input table, its quasi-identifiers' hierarchies (under the
    /// column names) and, when it fixes a transformation, `<name>_anon`.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Memory limit of the process (e.g. 2GiB): DataFusion's pool gets 80% of it; sorts and
    /// aggregations spill beyond it.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    #[command(flatten)]
    cluster: ClusterArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A file holding the SQL (instead of QUERY).
    #[arg(long, short = 'f', value_name = "FILE", conflicts_with = "query")]
    file: Option<PathBuf>,
    /// The SQL to run. Statements separated by `;` run in order; the last one's result is
    /// printed.
    #[arg(allow_hyphen_values = true, required_unless_present = "file")]
    query: Option<String>,
}

#[derive(clap::Args, Debug)]
struct GenerateArgs {
    /// Number of rows.
    #[arg(long)]
    rows: usize,
    /// Output Parquet file (written whole or not at all).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Seed: the same seed gives the same table.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// The table: `patients` (repeated persons, one disease per visit), `medical` (one row
    /// per patient with physician, specialty, diagnosis, symptom, diagnostic method and
    /// treatment) or `visits` (hospital visits, 1 to 22 per patient, about 2.2 on average:
    /// patient_id, sex, birth_date, zip, department, diagnosis, visit_date, cost), `firms`
    /// (one row per business: firm_id, region, sector and five correlated numeric attributes,
    /// employees, turnover, wages, assets and costs, for microaggregation) or `trips`
    /// (location pings of devices commuting in a city over a week, 100 per device on average:
    /// device_id, lat, lon, ts, activity).
    #[arg(long, value_enum, default_value_t = GeneratedTable::Patients)]
    table: GeneratedTable,
}

/// The synthetic tables `anon generate` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum GeneratedTable {
    Patients,
    Medical,
    Visits,
    Firms,
    Trips,
}

/// Parses the command line, runs it, and turns any error (or panic) into one line on stderr.
pub fn main() -> ExitCode {
    errors::install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version are not errors: let clap print them as it likes
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{}", errors::clap_line(&e));
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(async {
            // a cluster's scheduler and executors are servers: a signal ends them as it
            // always does; a job stops at its next check and commits nothing
            if matches!(cli.command, Command::Scheduler(_) | Command::Executor(_)) {
                return run(cli).await;
            }
            listen_for_signals()?;
            interrupt::run(run(cli)).await
        })
    }));
    if matches!(outcome, Ok(Err(_))) && interrupt::requested() {
        // an interrupted job: its tasks stopped (waited for a few seconds), then the staging
        // they may have written into after its removal is removed again
        runtime.shutdown_timeout(std::time::Duration::from_secs(5));
        interrupt::sweep();
        eprintln!("error: {}", interrupt::INTERRUPTED);
        // the shell's convention: 128 + the signal's number
        return ExitCode::from(128 + SIGNAL.load(Ordering::SeqCst) as u8);
    }
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("error: {}", errors::one_line(&e));
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("{}", errors::panic_line());
            ExitCode::FAILURE
        }
    }
}

/// The number of the first SIGINT or SIGTERM received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Listens for SIGINT (Ctrl-C) and SIGTERM: the first asks the job to stop
/// ([`interrupt::request`]: it stops at its next check, commits nothing and removes its
/// staging) and says so; a second exits at once, leaving the staging to the next run.
fn listen_for_signals() -> Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let listen = |kind: SignalKind| {
        signal(kind)
            .map_err(|e| DataFusionError::Execution(format!("cannot listen for signals: {e}")))
    };
    let (mut interrupts, mut terminations) = (
        listen(SignalKind::interrupt())?,
        listen(SignalKind::terminate())?,
    );
    tokio::spawn(async move {
        loop {
            let (number, name) = tokio::select! {
                _ = interrupts.recv() => (libc::SIGINT, "SIGINT"),
                _ = terminations.recv() => (libc::SIGTERM, "SIGTERM"),
            };
            if SIGNAL
                .compare_exchange(0, number, Ordering::SeqCst, Ordering::SeqCst)
                .is_err()
            {
                eprintln!(
                    "{name} again: exiting now; the next run to the same output removes what \
                     this one staged"
                );
                std::process::exit(128 + number);
            }
            interrupt::request();
            eprintln!("{name}: stopping; nothing will be published (again to exit at once)");
        }
    });
    Ok(())
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Sql(args) => sql(args).await,
        Command::Generate(args) => {
            let start = std::time::Instant::now();
            let table = clap::ValueEnum::to_possible_value(&args.table)
                .map(|value| value.get_name().to_string())
                .unwrap_or_default();
            generate::write_named(&table, &args.out, args.rows, args.seed)?;
            eprintln!(
                "wrote {} rows to {} in {:.1}s",
                args.rows,
                args.out.display(),
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Apply(args) => apply::run(args).await,
        Command::Anonymize(args) => anonymize::run(args).await,
        Command::Profile(args) => profile::run(*args).await,
        Command::Hierarchy(args) => hierarchy::run(args).await,
        Command::Attack(args) => attack::run(args).await,
        Command::Scheduler(args) => cluster::scheduler(args).await,
        Command::Executor(args) => cluster::executor(args).await,
    }
}

async fn sql(args: SqlArgs) -> Result<()> {
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    let mut options = match (&args.file, args.query) {
        (Some(file), _) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                DataFusionError::Plan(format!("cannot read SQL file {}: {e}", file.display()))
            })?;
            let mut options = SqlOptions::new(text);
            options.source = Some(file.display().to_string());
            options
        }
        (_, Some(query)) => SqlOptions::new(query),
        (None, None) => return Err(DataFusionError::Plan("no SQL given".into())),
    };
    options.bad_values = args
        .bad_values
        .as_deref()
        .map(BadValues::parse)
        .transpose()?;
    options.policy = args.policy.map(|p| p.to_string_lossy().to_string().into());
    for table in &args.tables {
        let (name, path) = tables::parse_table_arg(table)?;
        if options.tables.iter().any(|(given, _)| *given == name) {
            return Err(DataFusionError::Plan(format!(
                "table '{name}' is given twice with --table"
            )));
        }
        options.tables.push((name, TableSource::Path(path)));
    }
    for hierarchy in &args.hierarchies {
        options
            .hierarchies
            .push(tables::parse_name_path("--hierarchy", hierarchy)?);
    }
    let (schema, batches) = jobs::sql::sql(&ctx, options).await?;
    output::print(schema, &batches, args.format)
}

/// How a release is written: `--format`, `--append` (`anon anonymize`, `anon apply`).
#[derive(clap::Args, Debug)]
pub(crate) struct OutputFormatArgs {
    /// Output format: `parquet` (files, the default) or `delta` (a Delta Lake table: the
    /// verified files committed as one new version, whose commitInfo records the release's
    /// method, requirements and figures). Default: the policy's `[output] format`, or `delta`
    /// when the output already is a Delta table. With `delta`, `--overwrite` publishes a new
    /// version replacing the table's rows.
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    out_format: Option<OutFormatArg>,
    /// Add the release to the Delta table at the output as a new version, keeping its rows:
    /// only onto a release of the same full-domain levels with the same columns.
    #[arg(long)]
    append: bool,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum OutFormatArg {
    Parquet,
    Delta,
}

impl OutputFormatArgs {
    /// The jobs' output request.
    pub(crate) fn request(
        &self,
    ) -> Result<datafusion_anonymity_engine::jobs::output::OutputRequest> {
        let format = self.out_format.map(|f| match f {
            OutFormatArg::Parquet => "parquet",
            OutFormatArg::Delta => "delta",
        });
        datafusion_anonymity_engine::jobs::output::OutputRequest::new(format, self.append)
    }
}

/// `--report` and `--html-report`, the same on both commands.
#[derive(clap::Args, Debug, Default)]
pub(crate) struct ReportArgs {
    /// Also write a JSON report: the levels (or local classes), rows and suppressed rows, the
    /// verification and post-analytics figures with the policy's thresholds, and the seconds
    /// of each phase; for `anonymize` also the search's algorithm, metric and nodes checked
    /// (null for `apply`); with `--utility`, the utility section. Replaced only with
    /// `--overwrite`; written once the release is published, never when it fails.
    #[arg(long, value_name = "FILE")]
    pub(crate) report: Option<std::path::PathBuf>,
    /// Also write the same report as one self-contained HTML page (inline style, no script,
    /// nothing fetched; every text escaped), with `--utility` the utility section as `anon
    /// profile --format html` renders it. Replaced only with `--overwrite`.
    #[arg(long, value_name = "FILE")]
    pub(crate) html_report: Option<std::path::PathBuf>,
    /// Also write the seed into the reports. By default no report holds it (whatever the
    /// method), nor does a Delta commit: the seed orders the rows and draws the noise, so
    /// with the input it undoes the shuffle. It is printed as `seed:` either way.
    #[arg(long)]
    pub(crate) record_seed: bool,
}
