//! Subcommands of `anon`. Every error ends as one `error: ...` line on stderr and exit code 1.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use datafusion::arrow::array::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use datafusion_anonymity::{bench, generate, register, tables};

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
    /// Write a deterministic synthetic patients table to Parquet.
    Generate(GenerateArgs),
    /// Time each function against its plain-SQL floor and print the ratios.
    Bench(bench::BenchArgs),
}

#[derive(clap::Args, Debug)]
struct SqlArgs {
    /// A table to register: NAME=PATH (Parquet file, directory of Parquet files, or CSV file).
    #[arg(long = "table", value_name = "NAME=PATH")]
    tables: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// A file holding the SQL statement (instead of QUERY).
    #[arg(long, short = 'f', conflicts_with = "query")]
    file: Option<PathBuf>,
    /// The SQL statement to run.
    #[arg(allow_hyphen_values = true, required_unless_present = "file")]
    query: Option<String>,
}

#[derive(ValueEnum, Clone, Copy, Debug)]
enum Format {
    Table,
    Csv,
    Json,
}

#[derive(clap::Args, Debug)]
struct GenerateArgs {
    /// Number of rows.
    #[arg(long)]
    rows: usize,
    /// Output Parquet file.
    #[arg(long)]
    out: PathBuf,
    /// Seed: the same seed gives the same table.
    #[arg(long, default_value_t = 42)]
    seed: u64,
}

/// Parses the command line, runs it, and turns any error into one line on stderr.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
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
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// DataFusion errors nest contexts and may span lines; users get the innermost message on
/// one line.
fn one_line(error: &DataFusionError) -> String {
    error
        .find_root()
        .to_string()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Sql(args) => sql(args).await,
        Command::Generate(args) => {
            let start = std::time::Instant::now();
            generate::write_patients(&args.out, args.rows, args.seed)?;
            eprintln!(
                "wrote {} rows to {} in {:.1}s",
                args.rows,
                args.out.display(),
                start.elapsed().as_secs_f64()
            );
            Ok(())
        }
        Command::Bench(args) => bench::run(args).await,
    }
}

async fn sql(args: SqlArgs) -> Result<()> {
    let ctx = SessionContext::new();
    register(&ctx)?;
    for table in &args.tables {
        let (name, path) = tables::parse_table_arg(table)?;
        tables::register_path(&ctx, &name, &path).await?;
    }
    let query = match (&args.file, args.query) {
        (Some(file), _) => std::fs::read_to_string(file).map_err(|e| {
            DataFusionError::Plan(format!("cannot read SQL file {}: {e}", file.display()))
        })?,
        (None, Some(query)) => query,
        (None, None) => return Err(DataFusionError::Plan("no SQL statement given".into())),
    };
    let batches = ctx.sql(&query).await?.collect().await?;
    print_batches(&batches, args.format)
}

fn print_batches(batches: &[RecordBatch], format: Format) -> Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match format {
        Format::Table => {
            let table = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            writeln!(out, "{table}")?;
        }
        Format::Csv => {
            let mut writer = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            for batch in batches {
                writer.write(batch)?;
            }
        }
        Format::Json => {
            let mut writer = datafusion::arrow::json::LineDelimitedWriter::new(&mut out);
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
        }
    }
    Ok(())
}
