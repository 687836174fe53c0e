//! Reads the columns of a bucketization into dictionary codes in value order, in one scan.
//!
//! Values get codes in the order they are first seen ([`ValueCodes`]: integers by value,
//! short strings by their inline view, no allocation per row); at the end the distinct values
//! (kept in the input's type) are sorted with Arrow's sort kernel, NULL first, and the codes
//! renumbered into value order. Errors name the column, never a value.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, UInt32Array, new_empty_array};
use datafusion::arrow::compute::{SortOptions, concat, sort_to_indices, take};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::{EncodedColumn, MsaTable};
use crate::functions::common::{is_ordered, ordered_as_f64};
use crate::text::quote_ident;
use crate::value_codes::ValueCodes;

/// Codes one column batch by batch: first-seen order while reading, value order at the end.
struct Interner {
    name: String,
    codes: ValueCodes,
    /// Per record, its first-seen code.
    record_codes: Vec<u32>,
    /// The distinct values in first-seen order, a slice per batch.
    distinct: Vec<ArrayRef>,
    first: Vec<u32>,
    refuse_nulls: bool,
}

impl Interner {
    fn new(name: &str, data_type: &DataType, refuse_nulls: bool) -> Result<Self> {
        Ok(Self {
            name: name.to_string(),
            codes: ValueCodes::new(data_type)?,
            record_codes: Vec::new(),
            distinct: Vec::new(),
            first: Vec::new(),
            refuse_nulls,
        })
    }

    fn push(&mut self, values: &ArrayRef) -> Result<()> {
        if self.refuse_nulls && values.null_count() > 0 {
            return Err(DataFusionError::Plan(format!(
                "quasi-identifier '{}' has NULL values; bucketization publishes [min, max] ranges, \
                 which cannot cover NULL (fill or drop them first)",
                self.name
            )));
        }
        self.first.clear();
        self.codes
            .intern(values, &mut self.record_codes, &mut self.first)?;
        if !self.first.is_empty() {
            let rows = UInt32Array::from(std::mem::take(&mut self.first));
            self.distinct.push(take(values.as_ref(), &rows, None)?);
        }
        Ok(())
    }

    /// Renumbers the codes in value order (NULL first) and returns the column.
    fn finish(self, data_type: &DataType) -> Result<EncodedColumn> {
        let parts: Vec<&dyn Array> = self.distinct.iter().map(|a| a.as_ref()).collect();
        let seen = if parts.is_empty() {
            new_empty_array(data_type)
        } else {
            concat(&parts)?
        };
        let order = sort_to_indices(
            &seen,
            Some(SortOptions {
                descending: false,
                nulls_first: true,
            }),
            None,
        )?;
        let mut rank = vec![0u32; seen.len()];
        for (position, &first_seen) in order.values().iter().enumerate() {
            rank[first_seen as usize] = position as u32;
        }
        let values = take(seen.as_ref(), &order, None)?;
        let numeric = if is_ordered(values.data_type()) {
            Some(
                ordered_as_f64(&values)?
                    .into_iter()
                    .map(|v| v.unwrap_or(f64::NAN))
                    .collect(),
            )
        } else {
            None
        };
        let mut codes = self.record_codes;
        for code in &mut codes {
            *code = rank[*code as usize];
        }
        Ok(EncodedColumn {
            name: self.name,
            codes,
            values,
            numeric,
        })
    }
}

/// Reads `quasi_identifiers` and `sensitive` of table `table` (registered on `ctx`) in one
/// scan. Columns that must line up row by row have to come from one call: two scans of several
/// partitions need not return the rows in the same order.
pub async fn read_table(
    ctx: &SessionContext,
    table: &str,
    quasi_identifiers: &[String],
    sensitive: &[String],
) -> Result<MsaTable> {
    let columns: Vec<String> = quasi_identifiers
        .iter()
        .chain(sensitive)
        .map(|c| quote_ident(c))
        .collect();
    let sql = format!("SELECT {} FROM {}", columns.join(", "), quote_ident(table));
    let frame = ctx.sql(&sql).await?;
    let schema = Arc::new(frame.schema().as_arrow().clone());
    let mut interners = Vec::with_capacity(columns.len());
    for (i, field) in schema.fields().iter().enumerate() {
        let name = if i < quasi_identifiers.len() {
            &quasi_identifiers[i]
        } else {
            &sensitive[i - quasi_identifiers.len()]
        };
        interners.push(Interner::new(
            name,
            field.data_type(),
            i < quasi_identifiers.len(),
        )?);
    }
    let mut stream = frame.execute_stream().await?;
    // columns are coded independently: the first half of them on one worker thread for the
    // whole read, fed batch by batch (a thread per batch cost a fresh stack and allocator
    // pages each time: 1,220 threads for 10M rows)
    let parallel = std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let half = if parallel { interners.len() / 2 } else { 0 };
    let mut own = interners.split_off(half);
    let push_all = |interners: &mut [Interner], columns: &[ArrayRef]| {
        interners
            .iter_mut()
            .zip(columns)
            .try_for_each(|(interner, column)| interner.push(column))
    };
    let (to_worker, batches) = std::sync::mpsc::sync_channel::<RecordBatch>(4);
    let mut theirs = interners;
    let worker = (half > 0).then(|| {
        std::thread::spawn(move || {
            for batch in batches {
                push_all(&mut theirs, &batch.columns()[..half])?;
            }
            Ok::<_, DataFusionError>(theirs)
        })
    });
    let read = async {
        while let Some(batch) = stream.next().await {
            let batch = batch?;
            if worker.is_some() && to_worker.send(batch.clone()).is_err() {
                // the worker stopped on an error, which its result gives
                break;
            }
            push_all(&mut own, &batch.columns()[half..])?;
        }
        Ok::<_, DataFusionError>(())
    }
    .await;
    drop(to_worker);
    let mut interners = match worker {
        Some(worker) => worker.join().unwrap_or_else(|_| {
            Err(DataFusionError::Internal("a coding thread panicked".into()))
        })?,
        None => Vec::new(),
    };
    read?;
    interners.extend(own);
    let mut encoded = interners
        .into_iter()
        .zip(schema.fields())
        .map(|(interner, field)| interner.finish(field.data_type()))
        .collect::<Result<Vec<_>>>()?;
    let sensitive = encoded.split_off(quasi_identifiers.len());
    Ok(MsaTable {
        quasi_identifiers: encoded,
        sensitive,
    })
}
