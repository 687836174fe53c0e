//! What each published column that is not a quasi-identifier gives away together with the
//! quasi-identifiers (the pre-analytics of seed 000 §3.1, applied to the written output): the
//! rows it makes unique and the leakage of the combination.
//!
//! A column declared insensitive can still single people out: an exact amount beside the
//! published quasi-identifiers made 478,479 of 499,999 published rows unique in one release,
//! and nothing said so. Each column takes one `GROUP BY` (quasi-identifiers, column) of the
//! written files, folded in the same plan into three numbers (Σ c·log2 c, the groups of one
//! row, the rows): only they leave DataFusion. The columns are measured one after the other,
//! so that at most one such aggregation (up to one group per row) is held at a time.
//!
//! NULL equals NULL, as in a `GROUP BY` and to a reader of the output; the masked all-`*`
//! rows of a mask release are published rows and count like any other.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::functions::math::expr_fn::log2;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{cast, col, ident, lit, when};

use crate::policy::ColumnUniqueness;
use crate::profile::leakage::normalized;

/// The uniqueness of each of `columns` of `frame` with `quasi_identifiers`, highest unique
/// share first (then highest leakage, then by name).
pub(super) async fn column_uniqueness(
    frame: &DataFrame,
    quasi_identifiers: &[String],
    columns: &[&str],
) -> Result<Vec<ColumnUniqueness>> {
    let mut measured = Vec::with_capacity(columns.len());
    for &column in columns {
        measured.push(one_column(frame, quasi_identifiers, column).await?);
    }
    measured.sort_by(|a, b| {
        b.unique_share
            .total_cmp(&a.unique_share)
            .then_with(|| {
                b.leakage_with_quasi_identifiers
                    .total_cmp(&a.leakage_with_quasi_identifiers)
            })
            .then_with(|| a.attribute.cmp(&b.attribute))
    });
    Ok(measured)
}

/// One `GROUP BY` (quasi-identifiers, `column`) folded into Σ c·log2 c, the groups of one
/// row and the rows.
async fn one_column(
    frame: &DataFrame,
    quasi_identifiers: &[String],
    column: &str,
) -> Result<ColumnUniqueness> {
    let keys = quasi_identifiers
        .iter()
        .map(|q| ident(q.as_str()))
        .chain(std::iter::once(ident(column)))
        .collect();
    let rows = col("__anon_rows");
    let rows_f = cast(rows.clone(), DataType::Float64);
    let batches = frame
        .clone()
        .aggregate(keys, vec![count(lit(1i64)).alias("__anon_rows")])?
        .aggregate(
            vec![],
            vec![
                sum(rows_f.clone() * log2(rows_f)).alias("s"),
                sum(when(rows.clone().eq(lit(1i64)), lit(1i64)).otherwise(lit(0i64))?)
                    .alias("unique"),
                sum(rows).alias("rows"),
            ],
        )?
        .collect()
        .await?;
    let batch = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .ok_or_else(|| DataFusionError::Internal("uniqueness: no result row".into()))?;
    // a sum over no group is NULL: no rows
    let s = batch.column(0).as_primitive::<Float64Type>();
    let sum_c_log_c = if s.is_null(0) { 0.0 } else { s.value(0) };
    let count = |i: usize| {
        let values = batch.column(i).as_primitive::<Int64Type>();
        if values.is_null(0) {
            0
        } else {
            values.value(0) as u64
        }
    };
    let (unique_rows, rows) = (count(1), count(2));
    Ok(ColumnUniqueness {
        attribute: column.to_string(),
        unique_rows,
        unique_share: if rows > 0 {
            unique_rows as f64 / rows as f64
        } else {
            0.0
        },
        leakage_with_quasi_identifiers: if rows > 0 {
            normalized(rows, sum_c_log_c)
        } else {
            0.0
        },
        rows,
    })
}
