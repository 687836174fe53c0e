//! `sql`: run SQL statements, in order, in a session with every anonymity function, the
//! tables given (paths or batches), a policy's input, hierarchies and `<name>_anon`, and
//! extra hierarchies; the last statement's result. The command line's `anon sql` prints it,
//! Python's `sql()` returns it.

use std::collections::VecDeque;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;
use datafusion_anonymity::generalize::register_hierarchy;

use super::apply::levels_in_order;
use crate::policy::PolicySource;
use crate::search::release::Release;
use crate::tables::{self, BadValues, CsvOptions, TableFormat};

/// A table of a query: a path (Parquet, CSV, a directory or a URL) or batches in memory.
pub enum TableSource {
    Path(String),
    Batches(SchemaRef, Vec<RecordBatch>),
}

/// What to run and over what; the command line's flags, Python's keywords.
pub struct SqlOptions {
    /// The statements, separated by `;`.
    pub query: String,
    /// Where the query came from (a file's name), for messages; `None`: "the query".
    pub source: Option<String>,
    /// Tables by name.
    pub tables: Vec<(String, TableSource)>,
    /// A policy: its input, its hierarchies under the column names, and `<name>_anon` when it
    /// fixes a transformation (or `levels` give one).
    pub policy: Option<PolicySource>,
    /// The level of each quasi-identifier, replacing the policy's `[transformation]`.
    pub levels: Option<Vec<(String, usize)>>,
    /// Tree hierarchies for `generalize(col, 'NAME', level)`: (NAME, ARX CSV path or URL).
    pub hierarchies: Vec<(String, String)>,
    /// CSV values that do not convert to their column's type: overrides the policy's.
    pub bad_values: Option<BadValues>,
}

impl SqlOptions {
    /// `query` over nothing yet.
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            source: None,
            tables: Vec::new(),
            policy: None,
            levels: None,
            hierarchies: Vec::new(),
            bad_values: None,
        }
    }
}

/// Runs `options.query` on `ctx`; see the module documentation.
pub async fn sql(
    ctx: &SessionContext,
    options: SqlOptions,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let mut policy = None;
    if let Some(source) = &options.policy {
        let mut read = source.read()?;
        if let Some(bad_values) = options.bad_values {
            read.set_bad_values(bad_values);
        }
        read.register(ctx).await?;
        if let Some(levels) = &options.levels {
            let release = Release::FullDomain(levels_in_order(&read, levels)?);
            let table = read.generalized_table(ctx, release).await?;
            let name = format!("{}_anon", read.table_name());
            ctx.deregister_table(name.as_str())?;
            ctx.register_table(name, Arc::new(table))?;
        }
        policy = Some(read);
    }
    let csv_options = CsvOptions {
        bad_values: options.bad_values.unwrap_or_default(),
        ..CsvOptions::default()
    };
    let mut csv_tables = Vec::new();
    for (name, source) in options.tables {
        if ctx.table_exist(name.as_str())? {
            return Err(DataFusionError::Plan(format!(
                "table '{name}' is given twice (in the tables, or as the policy's)"
            )));
        }
        match source {
            TableSource::Path(path) => {
                tables::register_path_with(ctx, &name, &path, &csv_options).await?;
                if tables::table_format(&path)? == TableFormat::Csv {
                    csv_tables.push((name, path));
                }
            }
            TableSource::Batches(schema, batches) => {
                ctx.register_table(
                    name.as_str(),
                    Arc::new(MemTable::try_new(schema, vec![batches])?),
                )?;
            }
        }
    }
    for (name, path) in &options.hierarchies {
        register_hierarchy(ctx, name, super::tree_hierarchy(name, path)?)?;
    }
    // a syntax error's "Line: l, Column: c" is in the file: say which
    let source = options.source.as_deref().unwrap_or("the query");
    let statements = parse(ctx, &options.query, source).map_err(|e| match &options.source {
        Some(file) => DataFusionError::Plan(format!(
            "{file}: {}",
            crate::errors::one_line(&e, crate::errors::Vocabulary::KEYS)
        )),
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
        if !ctx.table_exist(generalized.as_str())? && named.contains(&generalized) {
            return Err(DataFusionError::Plan(format!(
                "table '{generalized}' is served only when policy {} has a [transformation]: \
                 add the levels `anon anonymize` chose (its `levels:` line, or `levels` in its \
                 report), e.g. `[transformation]` with `zip = 3`",
                policy.source()
            )));
        }
    }
    match run_statements(ctx, statements).await {
        Err(e) if matches!(e.find_root(), DataFusionError::ArrowError(..)) => {
            csv_tables.sort_by_key(|(name, _)| !named.contains(name));
            Err(
                match locate_csv_error(ctx, &csv_tables, &csv_options).await {
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

/// Runs `statements` in order; the last one's result.
async fn run_statements(
    ctx: &SessionContext,
    statements: VecDeque<Statement>,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let count = statements.len();
    for (index, statement) in statements.into_iter().enumerate() {
        // each statement sees what the previous ones created (views, tables, settings)
        let plan = ctx.state().statement_to_plan(statement).await?;
        let frame = ctx.execute_logical_plan(plan).await?;
        let schema = frame.schema().inner().clone();
        let batches = frame.collect().await?;
        if index + 1 == count {
            return Ok((schema, batches));
        }
    }
    Err(DataFusionError::Internal("no statement ran".to_string()))
}

/// A data error in a query over CSV tables names neither the file nor (for a large file read
/// in parallel ranges) the file's line: re-read the CSV tables, in order, from the start to
/// find the first record that does not fit its table's schema.
async fn locate_csv_error(
    ctx: &SessionContext,
    csv_tables: &[(String, String)],
    options: &CsvOptions,
) -> Option<DataFusionError> {
    for (name, path) in csv_tables {
        let provider = ctx.table_provider(name.as_str()).await.ok()?;
        if let Err(e) = tables::check_csv(path, provider.schema(), options) {
            return Some(DataFusionError::Execution(format!(
                "table '{name}': {}",
                e.message()
            )));
        }
    }
    None
}
