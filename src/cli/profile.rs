//! `anon profile`: the risk and utility report of a table (see `datafusion_anonymity_engine::profile`).

use std::path::PathBuf;

use clap::ValueEnum;
use datafusion::error::{DataFusionError, Result};

use datafusion_anonymity_engine::jobs::{
    self,
    profile::{FingerprintTarget, ProfileJobOptions},
};
use datafusion_anonymity_engine::profile::{
    DEFAULT_BACKGROUND_VALUES, DEFAULT_QUERIES, DEFAULT_RECURSIVE_C, DEFAULT_SEED,
};
use datafusion_anonymity_engine::tables::{self, BadValues};

use super::progress::TerminalObserver;

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

/// Runs `anon profile`.
pub async fn run(args: ProfileArgs) -> Result<()> {
    let ctx =
        datafusion_anonymity_ballista::session(args.memory_limit.as_deref(), args.cluster.url())
            .await?;
    let mut hierarchies = Vec::new();
    for hierarchy in &args.hierarchies {
        hierarchies.push(tables::parse_name_path("--hierarchy", hierarchy)?);
    }
    let job = ProfileJobOptions {
        input: args.input.clone(),
        bad_values: args
            .bad_values
            .as_deref()
            .map(BadValues::parse)
            .transpose()?,
        quasi_identifiers: args.quasi_identifiers,
        sensitive: args.sensitive,
        person_id: args.person_id,
        population: args.population,
        original: args.original,
        key: args.key,
        by_position: args.by_position,
        relink: args.relink,
        policy: args.policy.map(|p| p.to_string_lossy().to_string().into()),
        hierarchies,
        recursive_c: args.recursive_c,
        background_values: args.background_values,
        queries: args.queries,
        seed: args.seed,
        show_values: args.show_values,
        fingerprint: match (args.fingerprint_st, args.linking) {
            (Some(sensitive_table), Some(linking)) => Some(FingerprintTarget {
                sensitive_table,
                bucket_column: args.bucket_column,
                linking,
                determined: args.determined,
            }),
            _ => None,
        },
    };
    let report = jobs::profile::profile(&ctx, &job, &TerminalObserver::new(args.quiet)).await?;
    let format = match args.format {
        ProfileFormat::Text => jobs::profile::ProfileFormat::Text,
        ProfileFormat::Json => jobs::profile::ProfileFormat::Json,
        ProfileFormat::Html => jobs::profile::ProfileFormat::Html,
    };
    match &args.out {
        Some(path) => jobs::profile::write_rendered(&report, format, &path.to_string_lossy()).await,
        None => {
            let text = jobs::profile::render(&report, format)?;
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
