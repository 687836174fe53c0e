//! `profile`: the risk and utility report of a table, with its optional comparisons (a
//! population, the original, another release to re-link, a bucketized release's sensitive
//! table). The command line's `anon profile` and Python's `profile()` are this function; they
//! differ only in how they show the report (text, JSON, HTML; a dict).

use crate::errors::{Opt, UsageError};
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use super::Observer;
use crate::policy::{Policy, PolicySource, Role};
use crate::profile::{
    self, DEFAULT_BACKGROUND_VALUES, DEFAULT_QUERIES, DEFAULT_RECURSIVE_C, DEFAULT_SEED,
    FingerprintOptions, Profile, ProfileOptions, ProfileProgress,
};
use crate::session;
use crate::storage::Location;
use crate::tables::{self, BadValues, CsvOptions, TableFormat};

/// The fingerprint-correlation attack on a bucketized release.
#[derive(Debug, Clone)]
pub struct FingerprintTarget {
    /// The release's sensitive table (the input being its generalized table).
    pub sensitive_table: String,
    /// Its bucket id column.
    pub bucket_column: String,
    /// The linking attribute.
    pub linking: String,
    /// The attributes the adversary knows the linking value determines (`None`: every other).
    pub determined: Option<Vec<String>>,
}

/// What to profile and against what; the command line's flags, Python's keywords.
#[derive(Debug, Clone)]
pub struct ProfileJobOptions {
    /// The table: Parquet or CSV, a file or a directory, a path or a URL.
    pub input: String,
    /// CSV values that do not convert to their column's type: overrides the policy's.
    pub bad_values: Option<BadValues>,
    /// The quasi-identifiers (empty: the policy's).
    pub quasi_identifiers: Vec<String>,
    /// The sensitive attributes (empty: the policy's).
    pub sensitive: Vec<String>,
    /// A column identifying persons.
    pub person_id: Option<String>,
    /// A population table with the same quasi-identifiers.
    pub population: Option<String>,
    /// The table before anonymization, for the utility figures.
    pub original: Option<String>,
    /// The column matching rows of the input and the original.
    pub key: Option<String>,
    /// Match the input's and the original's rows by position.
    pub by_position: bool,
    /// Another release of the same data, for the re-linking attack.
    pub relink: Option<String>,
    /// A policy: its hierarchies (checked against the original), its quasi-identifiers and
    /// sensitive attributes unless given.
    pub policy: Option<PolicySource>,
    /// Tree hierarchies by column (ARX CSV files, paths or URLs); override the policy's.
    pub hierarchies: Vec<(String, String)>,
    pub recursive_c: f64,
    pub background_values: usize,
    pub queries: usize,
    pub seed: u64,
    /// Show the quasi-identifier values of the riskiest classes.
    pub show_values: bool,
    pub fingerprint: Option<FingerprintTarget>,
}

impl ProfileJobOptions {
    /// The defaults of `anon profile <input>`.
    pub fn new(input: impl Into<String>) -> Self {
        Self {
            input: input.into(),
            bad_values: None,
            quasi_identifiers: Vec::new(),
            sensitive: Vec::new(),
            person_id: None,
            population: None,
            original: None,
            key: None,
            by_position: false,
            relink: None,
            policy: None,
            hierarchies: Vec::new(),
            recursive_c: DEFAULT_RECURSIVE_C,
            background_values: DEFAULT_BACKGROUND_VALUES,
            queries: DEFAULT_QUERIES,
            seed: DEFAULT_SEED,
            show_values: false,
            fingerprint: None,
        }
    }
}

/// The tables of a profile that are CSV, read with `csv_options`, kept to locate CSV errors.
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

fn columns_with_role(policy: &Policy, role: Role) -> Vec<String> {
    policy
        .columns()
        .iter()
        .filter(|c| c.role == role)
        .map(|c| c.name.clone())
        .collect()
}

/// Profiles `job.input` on `ctx`; see the module documentation.
pub async fn profile(
    ctx: &SessionContext,
    job: &ProfileJobOptions,
    observer: &dyn Observer,
) -> Result<Profile> {
    let mut quasi_identifiers = job.quasi_identifiers.clone();
    let mut sensitive = job.sensitive.clone();
    let mut hierarchies = HashMap::new();
    let mut csv = CsvTables {
        csv_options: CsvOptions {
            bad_values: job.bad_values.unwrap_or_default(),
            ..CsvOptions::default()
        },
        tables: Vec::new(),
    };
    if let Some(source) = &job.policy {
        let mut policy = source.read()?;
        if let Some(bad_values) = job.bad_values {
            policy.set_bad_values(bad_values);
        }
        // the policy's column types describe the data profiled too
        csv.csv_options = policy.csv_options();
        if quasi_identifiers.is_empty() {
            quasi_identifiers = columns_with_role(&policy, Role::QuasiIdentifier);
        }
        if sensitive.is_empty() {
            sensitive = columns_with_role(&policy, Role::Sensitive);
        }
        // the hierarchies describe the original data: check them there (in a session of
        // their own, so the policy's table name cannot clash) and size masks from it
        if let Some(original) = &job.original {
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
    if quasi_identifiers.is_empty() {
        return Err(UsageError::new()
            .text("profile needs quasi-identifiers: give them (")
            .opt(Opt::Qi)
            .text(") or a policy")
            .into());
    }
    let mut options = ProfileOptions::new("input", Vec::new());
    options.hierarchies = hierarchies;
    register(ctx, &mut options, &mut csv, "input", &job.input).await?;
    // attributes from the policy: in the input's column order, not the file's
    let schema = ctx.table_provider("input").await?.schema();
    let position = |name: &String| schema.index_of(name).unwrap_or(usize::MAX);
    if job.quasi_identifiers.is_empty() {
        quasi_identifiers.sort_by_key(position);
    }
    if job.sensitive.is_empty() {
        sensitive.sort_by_key(position);
    }
    options.quasi_identifiers = quasi_identifiers;
    if let Some(path) = &job.population {
        register(ctx, &mut options, &mut csv, "population", path).await?;
        options.population = Some("population".into());
    }
    if let Some(path) = &job.original {
        register(ctx, &mut options, &mut csv, "original", path).await?;
        options.original = Some("original".into());
    }
    for (column, path) in &job.hierarchies {
        let tree = super::tree_hierarchy(column, path)?;
        options.hierarchies.insert(column.clone(), tree);
    }
    if let Some(path) = &job.relink {
        register(ctx, &mut options, &mut csv, "other_release", path).await?;
        options.relink = Some("other_release".into());
    }
    if let Some(target) = &job.fingerprint {
        register(
            ctx,
            &mut options,
            &mut csv,
            "sensitive_table",
            &target.sensitive_table,
        )
        .await?;
        options.fingerprint = Some(FingerprintOptions {
            sensitive_table: "sensitive_table".into(),
            bucket_column: target.bucket_column.clone(),
            linking: target.linking.clone(),
            determined: target.determined.clone(),
        });
    }
    options.sensitive = sensitive;
    options.person_id = job.person_id.clone();
    options.key = job.key.clone();
    options.by_position = job.by_position;
    options.recursive_c = job.recursive_c;
    options.background_values = job.background_values;
    options.queries = job.queries;
    options.seed = job.seed;
    options.show_values = job.show_values;
    let scanned = ProfileProgress::new();
    options.progress = Some(Arc::clone(&scanned));
    let total = if observer.wants_progress() {
        super::input_rows_from_metadata(ctx, "input", &job.input).await
    } else {
        None
    };
    let mut passes = Vec::new();
    if !options.sensitive.is_empty() {
        passes.push(("sensitive values", Arc::clone(&scanned.values)));
    }
    passes.push(("classes", Arc::clone(&scanned.classes)));
    observer.scans_started(passes, total);
    let profiled = profile::profile(ctx, &options).await;
    observer.scans_finished().await;
    match profiled {
        Ok(report) => Ok(report),
        Err(e) if matches!(e.find_root(), DataFusionError::ArrowError(..)) => {
            // a CSV record that does not fit its inferred schema: name the file and line
            for (name, path) in &csv.tables {
                let provider = ctx.table_provider(name.as_str()).await?;
                tables::check_csv(path, provider.schema(), &csv.csv_options)?;
            }
            Err(e)
        }
        Err(e) => Err(e),
    }
}

/// How a profile is shown: the command line's `--format`, Python's `text_report` and
/// `html_report` files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileFormat {
    /// Aligned text for a terminal.
    Text,
    /// Every figure, with the keys of docs/guide/profile.md (pretty, one trailing line break).
    Json,
    /// One self-contained HTML page with charts.
    Html,
}

/// `profile` shown as `format`.
pub fn render(profile: &Profile, format: ProfileFormat) -> Result<String> {
    Ok(match format {
        ProfileFormat::Text => crate::profile::render_text::render(profile),
        ProfileFormat::Json => {
            let mut json = serde_json::to_string_pretty(profile).map_err(|e| {
                DataFusionError::Execution(format!("cannot write the report as JSON: {e}"))
            })?;
            json.push('\n');
            json
        }
        ProfileFormat::Html => crate::profile::render_html::render(profile),
    })
}

/// Writes `profile` shown as `format` to `location` (a path or URL), as one whole.
pub async fn write_rendered(
    profile: &Profile,
    format: ProfileFormat,
    location: &str,
) -> Result<()> {
    let text = render(profile, format)?;
    let location = Location::parse(location)?;
    crate::storage::put(
        &location,
        &crate::storage::StoreOptions::default(),
        text.into(),
    )
    .await
}
