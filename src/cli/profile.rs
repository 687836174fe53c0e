//! `anon profile`: the risk and utility report of a table (see `datafusion_anonymity_engine::profile`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use clap::ValueEnum;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use datafusion_anonymity::generalize::Hierarchy;
use datafusion_anonymity_engine::policy::{Policy, Role};
use datafusion_anonymity_engine::profile::{
    self, DEFAULT_BACKGROUND_VALUES, DEFAULT_QUERIES, DEFAULT_RECURSIVE_C, DEFAULT_SEED,
    FingerprintOptions, ProfileOptions, ProfileProgress, render_html, render_text,
};
use datafusion_anonymity_engine::session;
use datafusion_anonymity_engine::storage::{self, Location, StoreOptions};
use datafusion_anonymity_engine::tables::{self, BadValues, CsvOptions, TableFormat};

use datafusion_anonymity_engine::jobs::input_rows_from_metadata;

use super::progress::ScanReport;

/// How `anon profile` writes its report.
#[derive(ValueEnum, Clone, Copy, Debug, Default)]
pub enum ProfileFormat {
    /// Aligned text for a terminal.
    #[default]
    Text,
    /// Every figure, with the keys documented in docs/guide/profile.md.
    Json,
    /// One self-contained HTML file with charts.
    Html,
}

/// Options of `anon profile`.
#[derive(clap::Args, Debug)]
pub struct ProfileArgs {
    /// The table to profile: a Parquet file, a directory of Parquet files, a CSV file or a
    /// directory of CSV files (CSV read with the column `type`s of --policy, if any).
    #[arg(value_name = "INPUT")]
    input: String,
    /// CSV values that do not convert to the `type` the policy gives their column: `error`
    /// (default: the file, line and column are named) or `null` (read as NULL, counted on
    /// stderr). Overrides the policy's `[input] bad_values`.
    #[arg(long, value_name = "error|null", value_parser = ["error", "null"])]
    bad_values: Option<String>,
    /// The quasi-identifiers, comma-separated (default with --policy: the policy's).
    #[arg(
        long = "qi",
        value_delimiter = ',',
        required_unless_present = "policy",
        value_name = "COLUMNS"
    )]
    quasi_identifiers: Vec<String>,
    /// Sensitive attributes, comma-separated (the first is the class label of the
    /// classification metric; default with --policy: the policy's).
    #[arg(long, value_delimiter = ',', value_name = "COLUMNS")]
    sensitive: Vec<String>,
    /// A column identifying persons, when a person may have several rows.
    #[arg(long, value_name = "COLUMN")]
    person_id: Option<String>,
    /// A population table with the same quasi-identifiers: k-map, journalist and marketer risk.
    #[arg(long, value_name = "PATH")]
    population: Option<String>,
    /// The same table before anonymization: utility figures.
    #[arg(long, value_name = "PATH")]
    original: Option<String>,
    /// The column matching rows of INPUT and --original: one both keep unchanged and unique
    /// (e.g. an id). Published rows are shuffled, so a key or --by-position is required.
    #[arg(
        long,
        value_name = "COLUMN",
        requires = "original",
        conflicts_with = "by_position"
    )]
    key: Option<String>,
    /// Match rows of INPUT and --original by position: only for a table that keeps the
    /// original's row order; refused when a column both keep unchanged differs row by row.
    #[arg(long, requires = "original")]
    by_position: bool,
    /// Another release of the same data: counts the rows that can be re-linked to it by
    /// position (same row number, same values in every column both keep besides the
    /// quasi-identifiers) — the unsorted matching attack.
    #[arg(long, value_name = "PATH")]
    relink: Option<String>,
    /// A policy file: the hierarchies of its quasi-identifiers for loss and WHD (checked
    /// against --original, which stands in for the policy's input), its quasi-identifiers and
    /// sensitive attributes unless --qi / --sensitive are given.
    #[arg(long, value_name = "P.toml")]
    policy: Option<PathBuf>,
    /// A generalization hierarchy of a quasi-identifier for loss and WHD, repeatable:
    /// COLUMN=PATH, PATH an ARX hierarchy CSV file (overrides the policy's).
    #[arg(long = "hierarchy", value_name = "COLUMN=PATH")]
    hierarchies: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ProfileFormat::Text)]
    format: ProfileFormat,
    /// Write the report to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Show the quasi-identifier values of the riskiest classes (hidden by default).
    #[arg(long)]
    show_values: bool,
    /// Memory limit of the process (e.g. 2GiB): DataFusion's pool gets 80% of it; the
    /// aggregations spill beyond it.
    #[arg(long, value_name = "SIZE")]
    memory_limit: Option<String>,
    #[command(flatten)]
    cluster: super::ClusterArg,
    /// No progress on stderr.
    #[arg(long, short = 'q')]
    quiet: bool,
    /// The c of recursive (c,l)-diversity.
    #[arg(long, default_value_t = DEFAULT_RECURSIVE_C)]
    recursive_c: f64,
    /// The background-knowledge attack: report, per sensitive attribute, the rows whose value
    /// an adversary learns when she can rule out 1, 2, …, M values for her target (the rows of
    /// classes with at most m + 1 distinct values; at most 100).
    #[arg(long, value_name = "M", default_value_t = DEFAULT_BACKGROUND_VALUES)]
    background_values: usize,
    /// Random COUNT(*) range queries of the query-accuracy figure.
    #[arg(long, default_value_t = DEFAULT_QUERIES)]
    queries: usize,
    /// Seed of the query workload.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
    /// The sensitive table of a bucketized release (INPUT being its generalized table): adds
    /// the fingerprint-correlation attack to the report.
    #[arg(long, value_name = "PATH", requires = "linking")]
    fingerprint_st: Option<String>,
    /// The linking attribute of the attack (with --fingerprint-st).
    #[arg(long, value_name = "COLUMN", requires = "fingerprint_st")]
    linking: Option<String>,
    /// The attributes the adversary knows the linking value determines (default: every
    /// other one; contradicted ones are dropped).
    #[arg(
        long,
        value_name = "A,B,...",
        value_delimiter = ',',
        requires = "fingerprint_st"
    )]
    determined: Option<Vec<String>>,
    /// The bucket id column of --fingerprint-st.
    #[arg(long, default_value = "bucket_id")]
    bucket_column: String,
}

/// The tables of a profile are CSV read with `csv_options`, kept to locate CSV errors.
struct CsvTables {
    csv_options: CsvOptions,
    tables: Vec<(String, String)>,
}

/// Registers `path` as `name`, remembering it for the report and for locating CSV errors.
async fn register(
    ctx: &SessionContext,
    options: &mut ProfileOptions,
    csv: &mut CsvTables,
    name: &str,
    path: &str,
) -> Result<()> {
    tables::register_path_with(ctx, name, path, &csv.csv_options).await?;
    options.labels.insert(name.to_string(), path.to_string());
    if tables::table_format(path)? == TableFormat::Csv {
        csv.tables.push((name.to_string(), path.to_string()));
    }
    Ok(())
}

/// Runs `anon profile`.
pub async fn run(args: ProfileArgs) -> Result<()> {
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    let mut quasi_identifiers = args.quasi_identifiers.clone();
    let mut sensitive = args.sensitive.clone();
    let mut hierarchies = HashMap::new();
    let bad_values = args
        .bad_values
        .as_deref()
        .map(BadValues::parse)
        .transpose()?;
    let mut csv = CsvTables {
        csv_options: CsvOptions {
            bad_values: bad_values.unwrap_or_default(),
            ..CsvOptions::default()
        },
        tables: Vec::new(),
    };
    if let Some(path) = &args.policy {
        let mut policy = Policy::from_file(path)?;
        if let Some(bad_values) = bad_values {
            policy.set_bad_values(bad_values);
        }
        // the policy's column types describe the data profiled too
        csv.csv_options = policy.csv_options();
        if quasi_identifiers.is_empty() {
            quasi_identifiers = policy
                .columns()
                .iter()
                .filter(|c| c.role == Role::QuasiIdentifier)
                .map(|c| c.name.clone())
                .collect();
        }
        if sensitive.is_empty() {
            sensitive = policy
                .columns()
                .iter()
                .filter(|c| c.role == Role::Sensitive)
                .map(|c| c.name.clone())
                .collect();
        }
        // the hierarchies describe the original data: check them there (in a session of
        // their own, so the policy's table name cannot clash) and size masks from it
        if let Some(original) = &args.original {
            policy.set_input(Location::parse(original)?);
            let policy_ctx = session::context(None)?;
            policy.register(&policy_ctx).await?;
            for (column, hierarchy) in policy.quasi_identifiers() {
                if quasi_identifiers.contains(&column) {
                    hierarchies.insert(column, hierarchy);
                }
            }
        }
    }
    let mut options = ProfileOptions::new("input", Vec::new());
    options.hierarchies = hierarchies;
    register(&ctx, &mut options, &mut csv, "input", &args.input).await?;
    // attributes from the policy: in the input's column order, not the file's
    let schema = ctx.table_provider("input").await?.schema();
    let position = |name: &String| schema.index_of(name).unwrap_or(usize::MAX);
    if args.quasi_identifiers.is_empty() {
        quasi_identifiers.sort_by_key(position);
    }
    if args.sensitive.is_empty() {
        sensitive.sort_by_key(position);
    }
    options.quasi_identifiers = quasi_identifiers;
    if let Some(path) = &args.population {
        register(&ctx, &mut options, &mut csv, "population", path).await?;
        options.population = Some("population".into());
    }
    if let Some(path) = &args.original {
        register(&ctx, &mut options, &mut csv, "original", path).await?;
        options.original = Some("original".into());
    }
    for hierarchy in &args.hierarchies {
        let (column, path) = tables::parse_name_path("--hierarchy", hierarchy)?;
        let tree = Hierarchy::tree_from_csv_file(column.as_str(), &path)?;
        options.hierarchies.insert(column, Arc::new(tree));
    }
    if let Some(path) = &args.relink {
        register(&ctx, &mut options, &mut csv, "other_release", path).await?;
        options.relink = Some("other_release".into());
    }
    if let (Some(path), Some(linking)) = (&args.fingerprint_st, &args.linking) {
        register(&ctx, &mut options, &mut csv, "sensitive_table", path).await?;
        options.fingerprint = Some(FingerprintOptions {
            sensitive_table: "sensitive_table".into(),
            bucket_column: args.bucket_column.clone(),
            linking: linking.clone(),
            determined: args.determined.clone(),
        });
    }
    options.sensitive = sensitive;
    options.person_id = args.person_id;
    options.key = args.key;
    options.by_position = args.by_position;
    options.recursive_c = args.recursive_c;
    options.background_values = args.background_values;
    options.queries = args.queries;
    options.seed = args.seed;
    options.show_values = args.show_values;
    let scanned = ProfileProgress::new();
    options.progress = Some(Arc::clone(&scanned));
    let total = if args.quiet {
        None
    } else {
        input_rows_from_metadata(&ctx, "input", &args.input).await
    };
    let mut passes = Vec::new();
    if !options.sensitive.is_empty() {
        passes.push(("sensitive values", Arc::clone(&scanned.values)));
    }
    passes.push(("classes", Arc::clone(&scanned.classes)));

    let progress = ScanReport::start_passes(passes, total, args.quiet);
    let profiled = profile::profile(&ctx, &options).await;
    progress.finish().await;
    let report = match profiled {
        Ok(report) => report,
        Err(e) if matches!(e.find_root(), DataFusionError::ArrowError(..)) => {
            // a CSV record that does not fit its inferred schema: name the file and line
            for (name, path) in &csv.tables {
                let provider = ctx.table_provider(name.as_str()).await?;
                tables::check_csv(path, provider.schema(), &csv.csv_options)?;
            }
            return Err(e);
        }
        Err(e) => return Err(e),
    };
    let text = match args.format {
        ProfileFormat::Text => render_text::render(&report),
        ProfileFormat::Json => {
            let mut json = serde_json::to_string_pretty(&report).map_err(|e| {
                DataFusionError::Execution(format!("cannot write the report as JSON: {e}"))
            })?;
            json.push('\n');
            json
        }
        ProfileFormat::Html => render_html::render(&report),
    };
    match &args.out {
        Some(path) => {
            let location = Location::parse(&path.to_string_lossy())?;
            storage::put(&location, &StoreOptions::default(), text.into()).await
        }
        None => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(
                    DataFusionError::Execution(format!("cannot print the report: {e}")),
                ),
                _ => Ok(()),
            }
        }
    }
}
