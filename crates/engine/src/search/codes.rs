//! The `GROUP BY … count(*)` of the quasi-identifiers, interned as it streams
//! ([`stream_codes`]), and the value order of interned values ([`ranked`]): what the
//! frequency set ([`super::frequency`]), the packed count ([`super::packed`]) and the
//! population ([`super::population`]) build on.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::kernels::sort::SortOptions;
use datafusion::arrow::compute::{cast, sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::logical_expr::EmitTo;
use datafusion::physical_plan::execute_stream;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use crate::errors::MemoryExhausted;
use crate::functions::histogram::new_dictionary;
use crate::progress::ScanProgress;

/// The aggregate's output, interned as it streams: per column, the codes of its rows (in
/// first appearance or value order) and its distinct values; and the count of each row.
pub(super) struct StreamedCodes {
    pub columns: Vec<(Vec<u32>, ArrayRef)>,
    pub counts: Vec<u64>,
}

/// Runs the `GROUP BY … count(*)` of `df` (`width` grouped columns, then the count) and
/// interns each batch as it arrives, so the aggregate's output is never held whole: only the
/// codes (4 bytes a row and column), the counts and the distinct values stay. They are
/// reserved in the session's memory pool as they grow; a pool too small for them is one clear
/// error before anything is written.
pub(super) async fn stream_codes(
    ctx: &SessionContext,
    df: DataFrame,
    width: usize,
    progress: Option<Arc<ScanProgress>>,
) -> Result<StreamedCodes> {
    let schema = df.schema().inner().clone();
    let mut dictionaries = (0..width)
        .map(|i| new_dictionary(decoded_type(schema.field(i).data_type())))
        .collect::<Result<Vec<_>>>()?;
    let mut codes: Vec<Vec<u32>> = vec![Vec::new(); width];
    let mut counts: Vec<u64> = Vec::new();
    let reservation = MemoryConsumer::new("frequency set").register(&ctx.runtime_env().memory_pool);
    let mut scratch = Vec::new();
    let task_ctx = Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await?;
    let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
    let mut stream = execute_stream(plan, task_ctx)?;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        for (i, dictionary) in dictionaries.iter_mut().enumerate() {
            let column = decoded(batch.column(i))?;
            scratch.clear();
            dictionary.intern(std::slice::from_ref(&column), &mut scratch)?;
            codes[i].extend(scratch.iter().map(|&c| c as u32));
        }
        let batch_counts = batch.column(width).as_primitive::<Int64Type>();
        counts.extend(batch_counts.values().iter().map(|&c| c.max(0) as u64));
        let bytes = codes.iter().map(|c| c.capacity() * 4).sum::<usize>()
            + counts.capacity() * 8
            + dictionaries.iter().map(|d| d.size()).sum::<usize>();
        reservation.try_resize(bytes).map_err(|_| {
            MemoryExhausted::new(
                "the frequency set",
                format!(
                    "{} distinct combinations so far, {:.1} MiB",
                    counts.len(),
                    bytes as f64 / (1024.0 * 1024.0)
                ),
            )
        })?;
    }
    let columns = dictionaries
        .iter_mut()
        .zip(codes)
        .map(|(dictionary, codes)| Ok((codes, dictionary.emit(EmitTo::All)?.swap_remove(0))))
        .collect::<Result<Vec<_>>>()?;
    Ok(StreamedCodes { columns, counts })
}

/// The value type of a dictionary-encoded type, else the type itself.
pub(super) fn decoded_type(data_type: &DataType) -> &DataType {
    match data_type {
        DataType::Dictionary(_, value) => value,
        other => other,
    }
}

/// `values` with a dictionary decoded.
pub(super) fn decoded(values: &ArrayRef) -> Result<ArrayRef> {
    Ok(match values.data_type() {
        DataType::Dictionary(_, value) => cast(values, value)?,
        _ => Arc::clone(values),
    })
}

/// The rank of each distinct value in ascending value order (NULL first), or `None` for a
/// type without an order.
pub(super) fn value_ranks(distinct: &ArrayRef) -> Option<Vec<u32>> {
    let options = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let order = sort_to_indices(distinct.as_ref(), Some(options), None).ok()?;
    let mut rank = vec![0u32; distinct.len()];
    for (r, &code) in order.values().iter().enumerate() {
        rank[code as usize] = r as u32;
    }
    Some(rank)
}

/// The rank of each value of `values` in value order (NULL first), and the values in that
/// order; a type without an order (never a QI type in practice) keeps its order.
pub(super) fn ranked(values: ArrayRef) -> Result<(Vec<u32>, ArrayRef)> {
    let Some(rank) = value_ranks(&values) else {
        return Ok(((0..values.len() as u32).collect(), values));
    };
    let mut order = vec![0u32; rank.len()];
    for (code, &r) in rank.iter().enumerate() {
        order[r as usize] = code as u32;
    }
    let sorted = take(values.as_ref(), &UInt32Array::from(order), None)?;
    Ok((rank, sorted))
}
