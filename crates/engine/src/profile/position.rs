//! Rows compared by position: the relink check of two releases (the unsorted matching attack,
//! seed 004 §3.2) and the check that a table matched to its original by position is in the
//! original's order.
//!
//! Both tables are read in file order (one partition, no repartitioned scans) and streamed
//! side by side: memory holds one batch of each, the comparison is one `IS NOT DISTINCT FROM`
//! kernel per column and slice (NULL agrees with NULL).

use std::collections::HashSet;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::kernels::cmp::not_distinct;
use datafusion::arrow::compute::{and, cast};
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::logical_expr::ident;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use serde::Serialize;

use super::{ProfileOptions, label, table};
use crate::text::quote_ident;

/// How many rows of two releases of the same data can be re-linked by their position.
#[derive(Debug, Clone, Serialize)]
pub struct Relink {
    /// The other release.
    pub other: String,
    /// Its rows.
    pub other_rows: u64,
    /// The columns compared: those of both releases that are not quasi-identifiers (kept
    /// unchanged by generalization), in the input's column order.
    pub columns: Vec<String>,
    /// Positions compared: the fewer rows of the two.
    pub positions: u64,
    /// Positions whose compared columns agree in both releases (NULL agrees with NULL).
    pub relinked: u64,
    /// `relinked / positions`.
    pub share: f64,
    /// The positions expected to agree if the two orders were unrelated:
    /// positions · Σ_t (n_A(t)/n_A)·(n_B(t)/n_B) over the tuples t of the compared columns.
    pub expected_by_chance: f64,
}

/// A session reading files in order, in one partition: rows keep their file order.
pub(crate) fn ordered_context(ctx: &SessionContext) -> SessionContext {
    let config = ctx
        .copied_config()
        .with_target_partitions(1)
        .with_repartition_file_scans(false)
        // keep the catalog (and the tables registered in it)
        .with_create_default_catalog_and_schema(false);
    let state = datafusion::execution::SessionStateBuilder::new_from_existing(ctx.state())
        .with_config(config)
        .build();
    SessionContext::new_with_state(state)
}

/// What comparing two tables position by position found.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub rows_a: u64,
    pub rows_b: u64,
    /// Positions where every compared column agrees.
    pub agreeing: u64,
    /// The first position (0-based) where a column disagrees, and that column's index.
    pub first_disagreement: Option<(u64, usize)>,
}

/// The columns of both `a` and `b` that are not in `excluded`, in `a`'s order.
pub(crate) fn shared_columns(a: &DataFrame, b: &DataFrame, excluded: &[String]) -> Vec<String> {
    let in_b: HashSet<&str> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    a.schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|name| in_b.contains(name.as_str()) && !excluded.contains(name))
        .collect()
}

/// One side of the comparison: its stream and the rest of its current batch.
struct Side {
    stream: SendableRecordBatchStream,
    batch: Option<RecordBatch>,
    offset: usize,
    rows: u64,
    done: bool,
}

impl Side {
    async fn new(frame: DataFrame, columns: &[String]) -> Result<Self> {
        let stream = frame
            .select(columns.iter().map(ident).collect::<Vec<_>>())?
            .execute_stream()
            .await?;
        Ok(Self {
            stream,
            batch: None,
            offset: 0,
            rows: 0,
            done: false,
        })
    }

    /// Rows left in the current batch, reading the next non-empty one when it is used up.
    async fn available(&mut self) -> Result<usize> {
        loop {
            if let Some(batch) = &self.batch
                && self.offset < batch.num_rows()
            {
                return Ok(batch.num_rows() - self.offset);
            }
            if self.done {
                return Ok(0);
            }
            match self.stream.next().await {
                Some(batch) => {
                    let batch = batch?;
                    self.rows += batch.num_rows() as u64;
                    self.batch = Some(batch);
                    self.offset = 0;
                }
                None => {
                    self.done = true;
                    self.batch = None;
                }
            }
        }
    }

    fn take(&mut self, len: usize) -> Option<RecordBatch> {
        let slice = self.batch.as_ref().map(|b| b.slice(self.offset, len));
        self.offset += len;
        slice
    }
}

/// Compares `columns` of `a` and `b` (both read in file order) position by position.
pub(crate) async fn compare(a: DataFrame, b: DataFrame, columns: &[String]) -> Result<Comparison> {
    let mut a = Side::new(a, columns).await?;
    let mut b = Side::new(b, columns).await?;
    let mut result = Comparison::default();
    let mut position = 0u64;
    loop {
        let (left, right) = (a.available().await?, b.available().await?);
        let len = left.min(right);
        if len == 0 {
            // drain the longer side to count its rows
            while a.available().await? > 0 {
                let rest = a.available().await?;
                a.take(rest);
            }
            while b.available().await? > 0 {
                let rest = b.available().await?;
                b.take(rest);
            }
            break;
        }
        let (Some(x), Some(y)) = (a.take(len), b.take(len)) else {
            break;
        };
        let mut all: Option<BooleanArray> = None;
        for (i, name) in columns.iter().enumerate() {
            let (left, right) = (x.column(i), y.column(i));
            let right: ArrayRef = if left.data_type() == right.data_type() {
                right.clone()
            } else {
                cast(right, left.data_type()).map_err(|_| {
                    DataFusionError::Plan(format!(
                        "column '{name}' has different types in the two tables: they cannot \
                         be compared"
                    ))
                })?
            };
            let same = not_distinct(left, &right)?;
            if same.true_count() < len
                && let Some(first) = (0..len).find(|&r| !same.value(r))
            {
                let at = position + first as u64;
                if result.first_disagreement.is_none_or(|(p, _)| at < p) {
                    result.first_disagreement = Some((at, i));
                }
            }
            all = Some(match all {
                None => same,
                Some(all) => and(&all, &same)?,
            });
        }
        result.agreeing += all.map_or(len, |all| all.true_count()) as u64;
        position += len as u64;
    }
    result.rows_a = a.rows;
    result.rows_b = b.rows;
    Ok(result)
}

/// The relink check of the profiled table against the release registered as `other`.
pub(crate) async fn relink(
    ctx: &SessionContext,
    options: &ProfileOptions,
    other: &str,
) -> Result<Relink> {
    let ordered = ordered_context(ctx);
    let input = table(&ordered, &options.table, "input").await?;
    let release = table(&ordered, other, "other release").await?;
    let columns = shared_columns(&input, &release, &options.quasi_identifiers);
    if columns.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "'{}' and '{}' share no column besides the quasi-identifiers: there is nothing to \
             re-link rows by",
            label(options),
            options.label_of(other)
        )));
    }
    let comparison = compare(input, release, &columns).await?;
    let positions = comparison.rows_a.min(comparison.rows_b);
    let expected_by_chance = if positions == 0 {
        0.0
    } else {
        positions as f64 * agreement_chance(ctx, &options.table, other, &columns).await?
            / (comparison.rows_a as f64 * comparison.rows_b as f64)
    };
    Ok(Relink {
        other: options.label_of(other),
        other_rows: comparison.rows_b,
        columns,
        positions,
        relinked: comparison.agreeing,
        share: if positions == 0 {
            0.0
        } else {
            comparison.agreeing as f64 / positions as f64
        },
        expected_by_chance,
    })
}

/// Σ_t n_A(t)·n_B(t) over the tuples t of `columns` (NULL equal to NULL).
async fn agreement_chance(
    ctx: &SessionContext,
    a: &str,
    b: &str,
    columns: &[String],
) -> Result<f64> {
    let quoted: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    let list = quoted.join(", ");
    let on: Vec<String> = quoted
        .iter()
        .map(|c| format!("(x.{c} IS NOT DISTINCT FROM y.{c})"))
        .collect();
    let sql = format!(
        "SELECT CAST(sum(CAST(x.n AS DOUBLE) * CAST(y.n AS DOUBLE)) AS DOUBLE) \
         FROM (SELECT {list}, count(*) AS n FROM {} GROUP BY {list}) x \
         JOIN (SELECT {list}, count(*) AS n FROM {} GROUP BY {list}) y ON {}",
        quote_ident(a),
        quote_ident(b),
        on.join(" AND ")
    );
    let batches = ctx.sql(&sql).await?.collect().await?;
    Ok(batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| {
            let column = b
                .column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Float64Array>()?;
            column.is_valid(0).then(|| column.value(0))
        })
        .unwrap_or(0.0))
}

/// Refuses to match the profiled table to `original` by position unless every column both
/// keep unchanged (neither a quasi-identifier nor dropped) agrees row by row; names the first
/// column and row (counted from 1) that do not, never the values. Returns the columns checked.
pub(crate) async fn check_same_order(
    ctx: &SessionContext,
    options: &ProfileOptions,
    original: &str,
) -> Result<Vec<String>> {
    let ordered = ordered_context(ctx);
    let input = table(&ordered, &options.table, "input").await?;
    let source = table(&ordered, original, "original").await?;
    let columns = shared_columns(&input, &source, &options.quasi_identifiers);
    if columns.is_empty() {
        return Ok(columns);
    }
    let comparison = compare(input, source, &columns).await?;
    if comparison.rows_a != comparison.rows_b {
        // the utility's own check names the row counts
        return Ok(columns);
    }
    if let Some((row, column)) = comparison.first_disagreement {
        return Err(crate::errors::UsageError::new()
            .text(format!(
                "rows matched by position disagree: column '{}', kept unchanged by \
                 anonymization, differs between '{}' and the original '{}' at row {} — the rows \
                 are not in the original's order (a shuffled release never is); match them by a \
                 key column with ",
                columns[column],
                label(options),
                options.label_of(original),
                row + 1
            ))
            .opt(crate::errors::Opt::Key)
            .into());
    }
    Ok(columns)
}
