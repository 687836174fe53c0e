//! `hierarchy build` and `hierarchy check`: a hierarchy file built from a column of a table,
//! or a hierarchy file checked against one. Both read the column's frequency set with one
//! `GROUP BY` (the table is a Parquet or CSV path, a directory or a URL, read as a policy's
//! `[input]` is) and work on it alone. The command line's `anon hierarchy` prints the report's
//! summary; Python's `build_hierarchy()` and `check_hierarchy()` return it.
//!
//! `build` checks the file it writes by every rule a policy's `kind = "tree"` applies, with
//! the same code, on the label arrays the file is written from ([`tree_rules::check_arrays`]:
//! line r + 1 is row r; nothing is parsed, no string is made per field), and makes the file
//! visible only once every check passed: nothing is left at the target on any error, and an
//! existing file is replaced only with `overwrite`. By the file's size:
//! - **at most [`READ_BACK_LEAVES`] leaves** (every hierarchy of an ordinary
//!   quasi-identifier): the rules are checked, then the text is read back through the policy
//!   loader itself (its parser, the rules again, and the column's values against the leaves),
//!   then written whole ([`storage::put`]);
//! - **more**: the text is streamed to a staged copy ([`storage::StagedFile`]; encoded on one
//!   thread while written on another) while the rules are checked on a third, and the copy is
//!   committed when both are done, or removed. It is not read back: parsing a file of millions
//!   of lines back costs many times the build (a string per field, a hash map per level),
//!   while its leaves are the column's values as the loader matches them (their
//!   `CAST(x AS VARCHAR)` text) and the writer's round trip through the parser is tested.

use crate::errors::{FailureKind, Opt, UsageError};
use std::sync::Arc;
use std::time::Instant;

use futures::{SinkExt, StreamExt};

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{concat, filter, is_not_null};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::generalize::Hierarchy;
use crate::generalize::tree_rules::{self, Origin};
use crate::hierarchies::{
    BuilderSpec, LevelSummary, Levels, build, built_level_summaries, csv, level_summaries,
};
use crate::storage::{self, Location, StagedFile, StoreOptions};
use crate::tables::{self, CsvOptions};
use crate::text::quote_ident;

/// The name the table is registered under.
const TABLE: &str = "hierarchy_input";

/// The most leaves a built file has for it to be read back through the policy loader before
/// it is written (a few hundred KB of text, read back in milliseconds).
pub const READ_BACK_LEAVES: usize = 10_000;

/// What `hierarchy build` builds, from what, and where it goes.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The table: a Parquet or CSV path, a directory or a URL.
    pub table: String,
    pub column: String,
    /// The hierarchy file to write (a path or a URL).
    pub out: String,
    pub spec: BuilderSpec,
    /// Replace `out` when it exists.
    pub overwrite: bool,
}

/// The report of `hierarchy build`.
#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub file: String,
    pub table: String,
    pub column: String,
    pub kind: &'static str,
    /// The file's rows: the column's distinct non-null values.
    pub leaves: usize,
    /// Non-null rows of the column.
    pub rows: u64,
    /// NULL rows: they stay NULL, in no class of the hierarchy.
    pub null_rows: u64,
    pub levels: Vec<LevelSummary>,
    pub seconds: f64,
}

/// What `hierarchy check` checks.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    /// The hierarchy file (a path or a URL).
    pub file: String,
    pub column: String,
    /// The table: a Parquet or CSV path, a directory or a URL.
    pub table: String,
}

/// The report of a hierarchy that passed every check.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    pub file: String,
    pub table: String,
    pub column: String,
    /// The file's rows.
    pub leaves: usize,
    /// Leaves no row of the column has (they count in the Loss metric's domain).
    pub unused_leaves: usize,
    pub rows: u64,
    pub null_rows: u64,
    pub levels: Vec<LevelSummary>,
    pub seconds: f64,
}

impl BuildReport {
    /// The summary the command line prints.
    pub fn summary(&self) -> String {
        format!(
            "wrote {}: a {} hierarchy of column '{}' of {}, {} leaves, {} levels ({} rows, \
             {} NULL)\n{}",
            self.file,
            self.kind,
            self.column,
            self.table,
            self.leaves,
            self.levels.len(),
            self.rows,
            self.null_rows,
            crate::hierarchies::summary::summary_table(&self.levels)
        )
    }
}

impl CheckReport {
    /// The summary the command line prints.
    pub fn summary(&self) -> String {
        format!(
            "{}: valid for column '{}' of {}: {} leaves ({} not in the data), {} levels ({} \
             rows, {} NULL)\n{}",
            self.file,
            self.column,
            self.table,
            self.leaves,
            self.unused_leaves,
            self.levels.len(),
            self.rows,
            self.null_rows,
            crate::hierarchies::summary::summary_table(&self.levels)
        )
    }
}

/// A column's frequency set: distinct non-null values, their rows, and the NULL rows.
struct FrequencySet {
    values: ArrayRef,
    counts: Vec<u64>,
    null_rows: u64,
}

/// Registers `table` and reads the frequency set of `column` (one `GROUP BY`).
async fn frequency_set(ctx: &SessionContext, table: &str, column: &str) -> Result<FrequencySet> {
    if crate::generalize::hierarchy_registry(ctx).is_none() {
        crate::register(ctx)?;
    }
    tables::register_path_with(ctx, TABLE, table, &CsvOptions::default()).await?;
    let schema = ctx.table_provider(TABLE).await?.schema();
    if schema.field_with_name(column).is_err() {
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(DataFusionError::Plan(format!(
            "column '{column}' is not a column of {table} (its columns: {})",
            names.join(", ")
        )));
    }
    let ident = quote_ident(column);
    let sql = format!("SELECT {ident}, count(*) FROM {TABLE} GROUP BY {ident}");
    let batches = ctx.sql(&sql).await?.collect().await?;
    let field = schema.field_with_name(column)?;
    if batches.is_empty() {
        return Ok(FrequencySet {
            values: datafusion::arrow::array::new_empty_array(field.data_type()),
            counts: Vec::new(),
            null_rows: 0,
        });
    }
    let values: Vec<&dyn Array> = batches.iter().map(|b| b.column(0).as_ref()).collect();
    let counts: Vec<&dyn Array> = batches.iter().map(|b| b.column(1).as_ref()).collect();
    let (values, counts) = (concat(&values)?, concat(&counts)?);
    let counts = counts.as_primitive::<Int64Type>();
    let valid = is_not_null(&values)?;
    let mut null_rows = 0;
    let mut kept = Vec::with_capacity(values.len());
    for (i, &n) in counts.values().iter().enumerate() {
        if valid.value(i) {
            kept.push(n as u64);
        } else {
            null_rows += n as u64;
        }
    }
    let values = if null_rows > 0 {
        filter(&values, &valid)?
    } else {
        values
    };
    Ok(FrequencySet {
        values,
        counts: kept,
        null_rows,
    })
}

/// Builds the hierarchy `options` asks for, writes it and reports it.
pub async fn build_hierarchy(ctx: &SessionContext, options: BuildOptions) -> Result<BuildReport> {
    let started = Instant::now();
    options.spec.check()?;
    let out = Location::parse(&options.out)?;
    let store = StoreOptions::default();
    storage::register_store(ctx, &out, &store)?;
    if !options.overwrite && storage::exists(&out, &store).await? {
        return Err(UsageError::new()
            .text(format!("{out} exists; give "))
            .opt(Opt::Overwrite)
            .text(" to replace it")
            .kind(FailureKind::AlreadyExists)
            .into());
    }
    let FrequencySet {
        values,
        counts,
        null_rows,
    } = frequency_set(ctx, &options.table, &options.column).await?;
    let levels = build::build(
        &options.spec,
        &options.column,
        &options.table,
        &values,
        &counts,
    )?;
    // the levels hold the values sorted
    drop((values, counts));
    let (leaves, rows) = (levels.values.len(), levels.counts.iter().sum());
    let file = out.to_string();
    let summaries = if levels.values.len() <= READ_BACK_LEAVES {
        let summaries = check_levels(&levels, &options.column, &file)?;
        let text = csv::to_csv(&levels, &options.column)?;
        // what a policy would read, as it reads it
        let hierarchy = Hierarchy::tree_from_csv_str(&options.column, &file, &text)?;
        hierarchy.validate_values(&options.column, &levels.values)?;
        storage::put(&out, &store, text.into()).await?;
        summaries
    } else {
        write_while_checking(&out, &store, &Arc::new(levels), &options.column).await?
    };
    Ok(BuildReport {
        file,
        table: options.table,
        column: options.column,
        kind: options.spec.kind(),
        leaves,
        rows,
        null_rows,
        levels: summaries,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Every rule a policy applies, on the labels of a hierarchy about to be written to `file`
/// (line r + 1 is row r); the summary of its levels.
fn check_levels(levels: &Levels, column: &str, file: &str) -> Result<Vec<LevelSummary>> {
    let interned = tree_rules::check_arrays(
        column,
        Origin::File(file),
        &levels.labels[0],
        &levels.labels[1..],
    )?;
    Ok(built_level_summaries(
        &interned,
        &levels.counts,
        &levels.meanings,
    ))
}

/// Writes a large hierarchy file to a staged copy while its rules are checked on a thread of
/// their own ([`check_levels`]), and makes the copy visible only when both succeeded (else
/// removes it; a broken rule is the error reported, before a failed write). The summary of
/// its levels.
async fn write_while_checking(
    out: &Location,
    store: &StoreOptions,
    levels: &Arc<Levels>,
    column: &str,
) -> Result<Vec<LevelSummary>> {
    let check = {
        let (levels, column, file) = (Arc::clone(levels), column.to_string(), out.to_string());
        tokio::task::spawn_blocking(move || check_levels(&levels, &column, &file))
    };
    let mut staged = StagedFile::create(out, store)?;
    let written = write_chunks(&mut staged, levels, column).await;
    let checked = check.await.unwrap_or_else(|e| {
        Err(DataFusionError::Internal(format!(
            "checking hierarchy file {out} failed: {e}"
        )))
    });
    match (checked, written) {
        (Ok(summaries), Ok(())) => {
            staged.commit().await?;
            Ok(summaries)
        }
        (Err(e), _) | (Ok(_), Err(e)) => {
            // the error that matters is the rule's or the write's; an upload left
            // incomplete is invisible anyway
            let _ = staged.abort().await;
            Err(e)
        }
    }
}

/// Streams the file's text to `staged`: the chunks are encoded on a thread of their own while
/// the ones before are written (at most two waiting).
async fn write_chunks(staged: &mut StagedFile, levels: &Arc<Levels>, column: &str) -> Result<()> {
    let (mut to_writer, mut chunks) = futures::channel::mpsc::channel::<Result<Vec<u8>>>(1);
    let encoder = {
        let (levels, column) = (Arc::clone(levels), column.to_string());
        tokio::task::spawn_blocking(move || {
            let mut send = |text| futures::executor::block_on(to_writer.send(text)).is_ok();
            let writer = match csv::CsvWriter::new(&levels, &column) {
                Ok(writer) => writer,
                Err(e) => {
                    send(Err(e));
                    return;
                }
            };
            for rows in csv::CsvWriter::chunks(writer.rows()) {
                let text = writer.lines(rows);
                let failed = text.is_err();
                // a writer that stopped has dropped its end
                if !send(text) || failed {
                    return;
                }
            }
        })
    };
    let mut written = Ok(());
    while let Some(text) = chunks.next().await {
        written = match text {
            Ok(text) => staged.write(text.into()).await,
            Err(e) => Err(e),
        };
        if written.is_err() {
            break;
        }
    }
    // an encoder still sending stops
    drop(chunks);
    encoder
        .await
        .map_err(|e| DataFusionError::Internal(format!("writing hierarchy file failed: {e}")))?;
    written
}

/// Checks the hierarchy file of `options` by every rule, against its column, and reports it.
pub async fn check_hierarchy(ctx: &SessionContext, options: CheckOptions) -> Result<CheckReport> {
    let started = Instant::now();
    let hierarchy = super::tree_hierarchy(&options.column, &options.file)?;
    let freq = frequency_set(ctx, &options.table, &options.column).await?;
    hierarchy.validate_values(&options.column, &freq.values)?;
    let levels = level_summaries(&hierarchy, &options.column, &freq.values, &freq.counts)?;
    let leaves = hierarchy.leaf_count().unwrap_or(0);
    Ok(CheckReport {
        file: options.file,
        table: options.table,
        column: options.column,
        leaves,
        unused_leaves: leaves.saturating_sub(freq.values.len()),
        rows: freq.counts.iter().sum(),
        null_rows: freq.null_rows,
        levels,
        seconds: started.elapsed().as_secs_f64(),
    })
}
