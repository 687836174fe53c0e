//! A scatter kernel: the rows of several batches, read once in order, each written to its
//! own position of one new batch.
//!
//! The shuffle moves every row twice (grouped by bucket, then permuted), and a *gather*
//! (`interleave`/`take`: output position by output position, each row fetched from wherever
//! it is) reads its sources at random. On 10M rows those reads missed the cache on almost
//! every 16-byte string view, and the gathers took ~2.4 core-seconds. A scatter reads its
//! sources sequentially and writes at random into one destination of a few hundred KiB to a
//! few MiB per column, where a bucket's write position stays in cache; Arrow has no such
//! kernel (`take` and `interleave` are gathers), hence this one.
//!
//! Fixed-width columns and string/binary views are scattered directly (a view of a string
//! longer than 12 bytes gets its buffer's new index: the destination keeps every source's data
//! buffers, in source order); any other type falls back to `interleave`.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayData, ArrayRef, AsArray, BinaryViewArray, RecordBatch, StringViewArray, make_array,
};
use datafusion::arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use datafusion::arrow::compute::interleave;
use datafusion::arrow::datatypes::{ArrowNativeType, i256};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::Result;

/// The rows of `sources` (taken in order, batch after batch) written to one batch of
/// `schema`: the r-th row read goes to position `dest[r]`. `dest` must be a permutation of
/// `0..dest.len()`, and `dest.len()` the sources' total row count.
pub(crate) fn scattered(
    schema: &SchemaRef,
    sources: &[RecordBatch],
    dest: &[u32],
) -> Result<RecordBatch> {
    let rows = dest.len();
    debug_assert_eq!(rows, sources.iter().map(|b| b.num_rows()).sum::<usize>());
    let columns = (0..schema.fields().len())
        .map(|c| {
            let arrays: Vec<&ArrayRef> = sources.iter().map(|b| b.column(c)).collect();
            scattered_column(&arrays, dest)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// One column of [`scattered`].
fn scattered_column(arrays: &[&ArrayRef], dest: &[u32]) -> Result<ArrayRef> {
    let data_type = arrays
        .first()
        .map_or(DataType::Null, |a| a.data_type().clone());
    // computed only by the branches that scatter (the fallback carries its own)
    let nulls = || scattered_nulls(arrays, dest);
    let array: ArrayRef = match &data_type {
        DataType::Utf8View => {
            let (views, buffers) = scattered_views(arrays, dest, |a| {
                let a = a.as_string_view();
                (a.views(), a.data_buffers())
            });
            // SAFETY: every view is a source's valid view, its buffer index moved to where that
            // source's buffers now start, so it points at the same valid UTF-8 bytes
            Arc::new(unsafe { StringViewArray::new_unchecked(views, buffers, nulls()) })
        }
        DataType::BinaryView => {
            let (views, buffers) = scattered_views(arrays, dest, |a| {
                let a = a.as_binary_view();
                (a.views(), a.data_buffers())
            });
            // SAFETY: as for strings, each view points at the bytes it pointed at before
            Arc::new(unsafe { BinaryViewArray::new_unchecked(views, buffers, nulls()) })
        }
        t if t.is_primitive() => {
            let width = t.primitive_width().unwrap_or(0);
            let values = match width {
                1 => scattered_values::<u8>(arrays, dest),
                2 => scattered_values::<u16>(arrays, dest),
                4 => scattered_values::<u32>(arrays, dest),
                8 => scattered_values::<u64>(arrays, dest),
                16 => scattered_values::<i128>(arrays, dest),
                32 => scattered_values::<i256>(arrays, dest),
                _ => return fallback(arrays, dest),
            };
            let data = ArrayData::builder(data_type)
                .len(dest.len())
                .add_buffer(values)
                .nulls(nulls())
                .build()?;
            make_array(data)
        }
        _ => return fallback(arrays, dest),
    };
    Ok(array)
}

/// The values buffer of a fixed-width column whose values are `T`-sized.
fn scattered_values<T: ArrowNativeType>(arrays: &[&ArrayRef], dest: &[u32]) -> Buffer {
    let mut out = vec![T::default(); dest.len()];
    let mut next = 0;
    for array in arrays {
        let data = array.to_data();
        let values: &[T] = data.buffer::<T>(0);
        for (value, &to) in values[..array.len()].iter().zip(&dest[next..]) {
            out[to as usize] = *value;
        }
        next += array.len();
    }
    Buffer::from_vec(out)
}

/// The views of a view column, and the data buffers of every source in order (each source's
/// long views re-pointed at its buffers' new indices).
fn scattered_views<'a>(
    arrays: &[&'a ArrayRef],
    dest: &[u32],
    parts: impl Fn(&'a ArrayRef) -> (&'a ScalarBuffer<u128>, &'a [Buffer]),
) -> (ScalarBuffer<u128>, Vec<Buffer>) {
    let mut out = vec![0u128; dest.len()];
    let mut buffers = Vec::new();
    let mut next = 0;
    for array in arrays {
        let (views, data) = parts(array);
        let first = buffers.len() as u128;
        buffers.extend(data.iter().cloned());
        let to = &dest[next..next + views.len()];
        if first == 0 || data.is_empty() {
            for (&view, &to) in views.iter().zip(to) {
                out[to as usize] = view;
            }
        } else {
            for (&view, &to) in views.iter().zip(to) {
                // bits 64..96 of a long view (length > 12) hold its buffer index
                let long = (view as u32) > 12;
                out[to as usize] = if long { view + (first << 64) } else { view };
            }
        }
        next += views.len();
    }
    (ScalarBuffer::from(out), buffers)
}

/// The validity of the scattered column, if any source has nulls.
fn scattered_nulls(arrays: &[&ArrayRef], dest: &[u32]) -> Option<NullBuffer> {
    if arrays.iter().all(|a| a.null_count() == 0) {
        return None;
    }
    let mut bits = vec![0u8; dest.len().div_ceil(8)];
    let mut next = 0;
    for array in arrays {
        let to = &dest[next..next + array.len()];
        match array.nulls() {
            Some(valid) => {
                for (row, &to) in to.iter().enumerate() {
                    if valid.is_valid(row) {
                        bits[to as usize / 8] |= 1 << (to % 8);
                    }
                }
            }
            None => {
                for &to in to {
                    bits[to as usize / 8] |= 1 << (to % 8);
                }
            }
        }
        next += array.len();
    }
    Some(NullBuffer::new(BooleanBuffer::new(
        Buffer::from_vec(bits),
        0,
        dest.len(),
    )))
}

/// Any other type: the inverse permutation, gathered by `interleave`.
fn fallback(arrays: &[&ArrayRef], dest: &[u32]) -> Result<ArrayRef> {
    let mut indices = vec![(0usize, 0usize); dest.len()];
    let mut next = 0;
    for (source, array) in arrays.iter().enumerate() {
        for row in 0..array.len() {
            indices[dest[next + row] as usize] = (source, row);
        }
        next += array.len();
    }
    let arrays: Vec<&dyn Array> = arrays.iter().map(|a| a.as_ref()).collect();
    Ok(interleave(&arrays, &indices)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        BooleanArray, Float64Array, Int32Array, Int64Array, StringArray, StringViewArray,
    };
    use datafusion::arrow::compute::interleave_record_batch;
    use datafusion::arrow::datatypes::{Field, Schema};

    /// Rows of every kind the kernel handles: fixed widths with and without nulls, short and
    /// long strings (views inline and in buffers), a type it falls back for (Utf8), booleans.
    fn batch(schema: &SchemaRef, first: i64, rows: usize) -> RecordBatch {
        let ids: Vec<i64> = (first..first + rows as i64).collect();
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(Int32Array::from_iter(
                ids.iter().map(|i| (i % 3 != 0).then_some(*i as i32)),
            )),
            Arc::new(Float64Array::from_iter_values(
                ids.iter().map(|i| *i as f64 / 2.0),
            )),
            Arc::new(StringViewArray::from_iter(ids.iter().map(|i| {
                (i % 5 != 0).then(|| {
                    if i % 2 == 0 {
                        format!("s{i}")
                    } else {
                        format!("a string longer than twelve bytes, row {i}")
                    }
                })
            }))),
            Arc::new(StringArray::from_iter_values(
                ids.iter().map(|i| format!("u{i}")),
            )),
            Arc::new(BooleanArray::from_iter(
                ids.iter().map(|i| (i % 7 != 0).then_some(i % 2 == 0)),
            )),
        ];
        RecordBatch::try_new(Arc::clone(schema), columns).unwrap()
    }

    #[test]
    fn scatter_matches_a_gather_of_the_inverse_permutation() {
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("some", DataType::Int32, true),
            Field::new("half", DataType::Float64, false),
            Field::new("text", DataType::Utf8View, true),
            Field::new("utf8", DataType::Utf8, false),
            Field::new("flag", DataType::Boolean, true),
        ]));
        // three sources (one sliced, so its arrays have an offset) of 37 + 20 + 50 rows
        let sources = vec![
            batch(&schema, 0, 37),
            batch(&schema, 100, 40).slice(10, 20),
            batch(&schema, 200, 50),
        ];
        let rows = 107;
        // a permutation from a simple LCG, independent of the kernel
        let mut dest: Vec<u32> = (0..rows as u32).collect();
        let mut state = 12345u64;
        for i in (1..rows).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
            dest.swap(i, (state >> 33) as usize % (i + 1));
        }
        let got = scattered(&schema, &sources, &dest).unwrap();
        // the reference: output position p holds the row r with dest[r] = p, gathered
        let mut indices = vec![(0usize, 0usize); rows];
        let mut r = 0;
        for (source, batch) in sources.iter().enumerate() {
            for row in 0..batch.num_rows() {
                indices[dest[r] as usize] = (source, row);
                r += 1;
            }
        }
        let refs: Vec<&RecordBatch> = sources.iter().collect();
        let expected = interleave_record_batch(&refs, &indices).unwrap();
        assert_eq!(got, expected);
        // and every view is valid (its buffer index and bytes)
        got.column(3).to_data().validate_full().unwrap();
    }
}
