//! Subcommands of `anon`. Every error ends as one `error: ...` line on stderr and a non-zero
//! exit code (1, or 2 for a malformed command line).

mod anonymize;
mod apply;
mod attack;
mod bucketize;
mod cluster;
mod errors;
mod output;
mod profile;
mod progress;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

use crate::bench;
use datafusion_anonymity::generalize::{Hierarchy, register_hierarchy};
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::tables::{self, BadValues, CsvOptions, TableFormat};
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
    /// Write a deterministic synthetic table (patients or medical) to Parquet.
    Generate(GenerateArgs),
    /// Write the input of a policy generalized at its fixed transformation, suppressed and
    /// verified, as Parquet, and report it.
    Apply(apply::ApplyArgs),
    /// Search the transformation with the least information loss that satisfies a policy,
    /// publish it as Parquet, verify it and report.
    Anonymize(anonymize::AnonymizeArgs),
    /// Time each function against its plain-SQL floor and print the ratios.
    Bench(bench::BenchArgs),
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
    /// patient_id, sex, birth_date, zip, department, diagnosis, visit_date, cost).
    #[arg(long, value_enum, default_value_t = GeneratedTable::Patients)]
    table: GeneratedTable,
}

/// The synthetic tables `anon generate` writes.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum GeneratedTable {
    Patients,
    Medical,
    Visits,
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
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runtime.block_on(run(cli))));
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

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Sql(args) => sql(args).await,
        Command::Generate(args) => {
            let start = std::time::Instant::now();
            match args.table {
                GeneratedTable::Patients => {
                    generate::write_patients(&args.out, args.rows, args.seed)?
                }
                GeneratedTable::Medical => {
                    generate::write_medical(&args.out, args.rows, args.seed)?
                }
                GeneratedTable::Visits => generate::write_visits(&args.out, args.rows, args.seed)?,
            }
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
        Command::Bench(args) => bench::run(args).await,
        Command::Profile(args) => profile::run(*args).await,
        Command::Attack(args) => attack::run(args).await,
        Command::Scheduler(args) => cluster::scheduler(args).await,
        Command::Executor(args) => cluster::executor(args).await,
    }
}

/// A CSV table of this run, kept to locate a bad record when a query fails on it.
struct CsvTable {
    name: String,
    path: String,
}

async fn sql(args: SqlArgs) -> Result<()> {
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    let bad_values = args
        .bad_values
        .as_deref()
        .map(BadValues::parse)
        .transpose()?;
    let mut policy = None;
    if let Some(path) = &args.policy {
        let mut read = Policy::from_file(path)?;
        if let Some(bad_values) = bad_values {
            read.set_bad_values(bad_values);
        }
        read.register(&ctx).await?;
        policy = Some(read);
    }
    let csv_options = CsvOptions {
        bad_values: bad_values.unwrap_or_default(),
        ..CsvOptions::default()
    };
    let mut csv_tables = Vec::new();
    for table in &args.tables {
        let (name, path) = tables::parse_table_arg(table)?;
        if ctx.table_exist(name.as_str())? {
            return Err(DataFusionError::Plan(format!(
                "table '{name}' is given twice with --table"
            )));
        }
        tables::register_path_with(&ctx, &name, &path, &csv_options).await?;
        if tables::table_format(&path)? == TableFormat::Csv {
            csv_tables.push(CsvTable { name, path });
        }
    }
    for hierarchy in &args.hierarchies {
        let (name, path) = tables::parse_name_path("--hierarchy", hierarchy)?;
        let tree = Hierarchy::tree_from_csv_file(name.as_str(), &path)?;
        register_hierarchy(&ctx, &name, Arc::new(tree))?;
    }
    let (query, file) = match (&args.file, args.query) {
        (Some(file), _) => (
            std::fs::read_to_string(file).map_err(|e| {
                DataFusionError::Plan(format!("cannot read SQL file {}: {e}", file.display()))
            })?,
            Some(file.display().to_string()),
        ),
        (_, Some(query)) => (query, None),
        (None, None) => return Err(DataFusionError::Plan("no SQL given".into())),
    };
    // a syntax error's "Line: l, Column: c" is in the file: say which
    let source = file.as_deref().unwrap_or("the query");
    let statements = parse(&ctx, &query, source).map_err(|e| match &file {
        Some(file) => DataFusionError::Plan(format!("{file}: {}", errors::one_line(&e))),
        None => e,
    })?;
    // the tables the statements name, to look for a bad CSV record there first
    let state = ctx.state();
    let mut named = Vec::new();
    for statement in &statements {
        for reference in state.resolve_table_references(statement)? {
            named.push(reference.table().to_string());
        }
    }
    if let Some(policy) = &policy {
        let generalized = format!("{}_anon", policy.table_name());
        if policy.transformation().is_none() && named.contains(&generalized) {
            return Err(DataFusionError::Plan(format!(
                "table '{generalized}' is served only when policy {} has a [transformation]: \
                 add the levels `anon anonymize` chose (its `levels:` line, or `levels` in its \
                 --report), e.g. `[transformation]` with `zip = 3`",
                policy.source()
            )));
        }
    }
    match run_statements(&ctx, statements, args.format).await {
        Err(e) if is_data_error(&e) => {
            csv_tables.sort_by_key(|table| !named.contains(&table.name));
            Err(
                match locate_csv_error(&ctx, &csv_tables, &csv_options).await {
                    Some(located) => located,
                    None => match &policy {
                        Some(policy) => policy.locate_input_error(e),
                        None => e,
                    },
                },
            )
        }
        other => other,
    }
}

/// The statements of `query` (from `source`, for messages), parsed as DataFusion would.
fn parse(ctx: &SessionContext, query: &str, source: &str) -> Result<VecDeque<Statement>> {
    let state = ctx.state();
    let options = &state.config().options().sql_parser;
    let dialect = dialect_from_str(options.dialect).ok_or_else(|| {
        DataFusionError::Plan(format!("unsupported SQL dialect {}", options.dialect))
    })?;
    let statements = DFParserBuilder::new(query)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.recursion_limit.get())
        .build()?
        .parse_statements()?;
    if statements.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "{source} holds no SQL statement"
        )));
    }
    Ok(statements)
}

/// Runs `statements` in order and prints the last one's result.
async fn run_statements(
    ctx: &SessionContext,
    statements: VecDeque<Statement>,
    format: Format,
) -> Result<()> {
    let count = statements.len();
    for (index, statement) in statements.into_iter().enumerate() {
        // each statement sees what the previous ones created (views, tables, settings)
        let plan = ctx.state().statement_to_plan(statement).await?;
        let frame = ctx.execute_logical_plan(plan).await?;
        let schema = frame.schema().inner().clone();
        let batches = frame.collect().await?;
        if index + 1 == count {
            output::print(schema, &batches, format)?;
        }
    }
    Ok(())
}

/// Whether `error` came from reading or converting data (rather than from planning).
fn is_data_error(error: &DataFusionError) -> bool {
    matches!(error.find_root(), DataFusionError::ArrowError(..))
}

/// A data error in a query over CSV tables names neither the file nor (for a large file read
/// in parallel ranges) the file's line: re-read the CSV tables, in order, from the start to
/// find the first record that does not fit its table's schema.
async fn locate_csv_error(
    ctx: &SessionContext,
    csv_tables: &[CsvTable],
    options: &CsvOptions,
) -> Option<DataFusionError> {
    for table in csv_tables {
        let provider = ctx.table_provider(table.name.as_str()).await.ok()?;
        if let Err(e) = tables::check_csv(&table.path, provider.schema(), options) {
            return Some(DataFusionError::Execution(format!(
                "table '{}': {}",
                table.name,
                e.message()
            )));
        }
    }
    None
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
}
