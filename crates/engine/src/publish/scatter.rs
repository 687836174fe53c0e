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
//!
//! A text column may also arrive *coded* ([`scattered_decoding`]): as the `u16` codes of a
//! [`LabelCodes`](crate::label_codes::LabelCodes) dictionary, which the shuffle holds instead of
//! 16-byte views. Each code is written out as its label's view, so decoding costs nothing
//! beyond the scatter itself.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayData, ArrayRef, AsArray, BinaryViewArray, RecordBatch, StringViewArray, make_array,
};
use datafusion::arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use datafusion::arrow::compute::interleave;
use datafusion::arrow::datatypes::{ArrowNativeType, UInt16Type, i256};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};

/// The rows of `sources` (taken in order, batch after batch) written to one batch of
/// `schema`: the r-th row read goes to position `dest[r]`. `dest` must be a permutation of
/// `0..dest.len()`, and `dest.len()` the sources' total row count.
pub(crate) fn scattered(
    schema: &SchemaRef,
    sources: &[RecordBatch],
    dest: &[u32],
) -> Result<RecordBatch> {
    batch_of(schema, sources, dest.len(), |_, arrays| {
        scattered_column(arrays, dest)
    })
}

/// A batch of `schema` and `rows` rows whose column c is `column(c, the sources' column c)`.
fn batch_of(
    schema: &SchemaRef,
    sources: &[RecordBatch],
    rows: usize,
    mut column: impl FnMut(usize, &[&ArrayRef]) -> Result<ArrayRef>,
) -> Result<RecordBatch> {
    let columns = (0..schema.fields().len())
        .map(|c| {
            let arrays: Vec<&ArrayRef> = sources.iter().map(|b| b.column(c)).collect();
            column(c, &arrays)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// A view moved to a destination whose copy of its array's data buffers starts at index
/// `first`: bits 64..96 of a long view (length > 12) hold its buffer index.
#[inline]
fn moved_view(view: u128, first: u128) -> u128 {
    let long = (view as u32) > 12;
    if long { view + (first << 64) } else { view }
}

/// The rows of `sources` (taken in order, batch after batch) in the order `order`: output
/// position p holds the `order[p]`-th row read, so `order` must be a permutation of
/// `0..order.len()` (the inverse of [`scattered`]'s `dest`). A source's column may be coded:
/// `UInt16` where `schema` has `Utf8View`, each value a row of the dictionary
/// `dictionary(source, column)` (the labels of a [`LabelCodes`](crate::label_codes::LabelCodes), code
/// c at row c), written out decoded.
///
/// A column coded in every source is *gathered* ([`gathered_codes`]): its codes are a few
/// bytes a row and stay in cache, so reading them at random is cheap, and the 16-byte views
/// are written in order into memory that needs no clearing first. Any other column is
/// scattered by the inverse permutation.
pub(crate) fn permuted_decoding<'a>(
    schema: &SchemaRef,
    sources: &[RecordBatch],
    dictionary: impl Fn(usize, usize) -> Option<&'a StringViewArray>,
    order: &[u32],
) -> Result<RecordBatch> {
    let rows = order.len();
    debug_assert_eq!(rows, sources.iter().map(|b| b.num_rows()).sum::<usize>());
    // the inverse permutation, computed once if some column is scattered
    let dest = std::cell::OnceCell::new();
    let dest = || {
        dest.get_or_init(|| {
            let mut dest = vec![0u32; rows];
            for (position, &row) in order.iter().enumerate() {
                dest[row as usize] = position as u32;
            }
            dest
        })
    };
    batch_of(schema, sources, rows, |c, arrays| {
        let field = schema.field(c);
        let coded = |a: &&ArrayRef| a.data_type() == &DataType::UInt16;
        if field.data_type() != &DataType::Utf8View || !arrays.iter().any(coded) {
            return scattered_column(arrays, dest());
        }
        let dictionaries: Vec<Option<&StringViewArray>> =
            (0..sources.len()).map(|s| dictionary(s, c)).collect();
        let every_coded: Option<Vec<(&[u16], &StringViewArray)>> = arrays
            .iter()
            .zip(&dictionaries)
            .map(|(array, dictionary)| {
                let codes = array.as_primitive_opt::<UInt16Type>()?.values();
                Some((&codes[..], (*dictionary)?))
            })
            .collect();
        match every_coded {
            Some(coded) => Ok(gathered_codes(&coded, order)),
            None => scattered_text(arrays, &dictionaries, dest()),
        }
    })
}

/// A text column coded in every source, each source's codes with its dictionary, in the
/// order `order` (see [`permuted_decoding`]): the dictionaries' views are put in one table
/// (each distinct dictionary once, its long views re-pointed at its buffers' new indices),
/// every listed row's code becomes an index into it, and output position p is the view of
/// row `order[p]`.
fn gathered_codes(sources: &[(&[u16], &StringViewArray)], order: &[u32]) -> ArrayRef {
    let nullable = sources.iter().any(|(_, d)| d.null_count() > 0);
    let mut table: Vec<u128> = Vec::new();
    let mut valid: Vec<bool> = Vec::new();
    let mut buffers: Vec<Buffer> = Vec::new();
    // where each dictionary starts in the table (a dictionary serves many sources)
    let mut placed: Vec<(*const StringViewArray, u32)> = Vec::new();
    let mut indices: Vec<u32> = Vec::with_capacity(order.len());
    for &(codes, dictionary) in sources {
        let key = dictionary as *const StringViewArray;
        let base = match placed.iter().find(|(d, _)| *d == key) {
            Some(&(_, base)) => base,
            None => {
                let base = table.len() as u32;
                let first = buffers.len() as u128;
                buffers.extend(dictionary.data_buffers().iter().cloned());
                table.extend(
                    dictionary
                        .views()
                        .iter()
                        .map(|&view| moved_view(view, first)),
                );
                if nullable {
                    valid.extend((0..dictionary.len()).map(|i| dictionary.is_valid(i)));
                }
                placed.push((key, base));
                base
            }
        };
        indices.extend(codes.iter().map(|&code| base + code as u32));
    }
    let views: Vec<u128> = order
        .iter()
        .map(|&row| table[indices[row as usize] as usize])
        .collect();
    let nulls = nullable.then(|| {
        NullBuffer::new(BooleanBuffer::collect_bool(order.len(), |p| {
            valid[indices[order[p] as usize] as usize]
        }))
    });
    // SAFETY: every view is a dictionary's valid view, its buffer index moved to where that
    // dictionary's buffers now start, so it points at the same valid UTF-8 bytes
    Arc::new(unsafe { StringViewArray::new_unchecked(ScalarBuffer::from(views), buffers, nulls) })
}

/// One column of [`scattered`]: the rows of `arrays` (in order), row r written to `dest[r]`.
pub(crate) fn scattered_column(arrays: &[&ArrayRef], dest: &[u32]) -> Result<ArrayRef> {
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
                out[to as usize] = moved_view(view, first);
            }
        }
        next += views.len();
    }
    (ScalarBuffer::from(out), buffers)
}

/// A text column some of whose sources are coded (see [`permuted_decoding`]): each code
/// written as its label's view, each dictionary's data buffers kept once.
fn scattered_text(
    arrays: &[&ArrayRef],
    dictionaries: &[Option<&StringViewArray>],
    dest: &[u32],
) -> Result<ArrayRef> {
    enum Text<'a> {
        Views(&'a StringViewArray),
        Coded(&'a [u16], &'a StringViewArray),
    }
    let texts = arrays
        .iter()
        .zip(dictionaries)
        .map(
            |(array, dictionary)| match (array.data_type(), dictionary) {
                (DataType::UInt16, Some(dictionary)) => Ok(Text::Coded(
                    array.as_primitive::<UInt16Type>().values(),
                    dictionary,
                )),
                (DataType::Utf8View, _) => Ok(Text::Views(array.as_string_view())),
                (other, _) => Err(DataFusionError::Internal(format!(
                    "a text column to scatter holds {other} without a dictionary"
                ))),
            },
        )
        .collect::<Result<Vec<_>>>()?;
    let mut out = vec![0u128; dest.len()];
    let mut buffers: Vec<Buffer> = Vec::new();
    // where each dictionary's buffers start (a dictionary serves many sources)
    let mut placed: Vec<(*const StringViewArray, u128)> = Vec::new();
    let mut next = 0;
    for text in &texts {
        let (len, first) = match text {
            Text::Views(array) => {
                let first = buffers.len() as u128;
                buffers.extend(array.data_buffers().iter().cloned());
                (array.len(), first)
            }
            Text::Coded(codes, dictionary) => {
                let key = *dictionary as *const StringViewArray;
                let first = match placed.iter().find(|(d, _)| *d == key) {
                    Some(&(_, first)) => first,
                    None => {
                        let first = buffers.len() as u128;
                        buffers.extend(dictionary.data_buffers().iter().cloned());
                        placed.push((key, first));
                        first
                    }
                };
                (codes.len(), first)
            }
        };
        let to = &dest[next..next + len];
        let moved = |view: u128| moved_view(view, first);
        match text {
            Text::Views(array) if first == 0 || array.data_buffers().is_empty() => {
                for (&view, &to) in array.views().iter().zip(to) {
                    out[to as usize] = view;
                }
            }
            Text::Views(array) => {
                for (&view, &to) in array.views().iter().zip(to) {
                    out[to as usize] = moved(view);
                }
            }
            Text::Coded(codes, dictionary) => {
                let views = dictionary.views();
                if first == 0 || dictionary.data_buffers().is_empty() {
                    for (&code, &to) in codes.iter().zip(to) {
                        out[to as usize] = views[code as usize];
                    }
                } else {
                    for (&code, &to) in codes.iter().zip(to) {
                        out[to as usize] = moved(views[code as usize]);
                    }
                }
            }
        }
        next += len;
    }
    let nullable = texts.iter().any(|text| match text {
        Text::Views(array) => array.null_count() > 0,
        Text::Coded(_, dictionary) => dictionary.null_count() > 0,
    });
    let nulls = nullable.then(|| {
        let mut bits = vec![0u8; dest.len().div_ceil(8)];
        let mut next = 0;
        let mut set = |to: u32| bits[to as usize / 8] |= 1 << (to % 8);
        for text in &texts {
            match text {
                Text::Views(array) => {
                    let to = &dest[next..next + array.len()];
                    for (row, &to) in to.iter().enumerate() {
                        if array.is_valid(row) {
                            set(to);
                        }
                    }
                    next += array.len();
                }
                Text::Coded(codes, dictionary) => {
                    for (&code, &to) in codes.iter().zip(&dest[next..]) {
                        if dictionary.is_valid(code as usize) {
                            set(to);
                        }
                    }
                    next += codes.len();
                }
            }
        }
        NullBuffer::new(BooleanBuffer::new(Buffer::from_vec(bits), 0, dest.len()))
    });
    // SAFETY: every view is a source's or a dictionary's valid view, its buffer index moved to
    // where that array's buffers now start, so it points at the same valid UTF-8 bytes
    Ok(Arc::new(unsafe {
        StringViewArray::new_unchecked(ScalarBuffer::from(out), buffers, nulls)
    }))
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
    use crate::label_codes::LabelCodes;
    use datafusion::arrow::array::{
        BooleanArray, Float64Array, Int32Array, Int64Array, StringArray, StringViewArray,
        UInt16Array,
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

        // the same through permuted_decoding, which takes the inverse: order[p] = the row
        // with dest[row] = p
        let mut order = vec![0u32; rows];
        for (row, &p) in dest.iter().enumerate() {
            order[p as usize] = row as u32;
        }
        // the text column coded (one dictionary per source; inline and long labels, and
        // NULL) in the first and last sources only (scattered), then in every source, the
        // last two sharing one dictionary (gathered): decoded, the rows are the same
        let mut coded_fields = schema.fields().to_vec();
        coded_fields[3] = Arc::new(Field::new("text", DataType::UInt16, false));
        let coded_schema = Arc::new(Schema::new(coded_fields));
        for every_source in [false, true] {
            let mut dictionaries: Vec<LabelCodes> = vec![LabelCodes::default(); 2];
            let coded: Vec<RecordBatch> = sources
                .iter()
                .enumerate()
                .map(|(source, batch)| {
                    if source == 1 && !every_source {
                        return batch.clone();
                    }
                    let codes = &mut dictionaries[source.min(1)];
                    // a code taken first, so that codes and rows differ
                    codes.intern(Some(b"not in the column"));
                    let mut scratch = Vec::new();
                    codes.encode(batch.column(3).as_string_view(), &mut scratch);
                    let narrow: Vec<u16> = scratch.iter().map(|&c| c as u16).collect();
                    let mut columns = batch.columns().to_vec();
                    columns[3] = Arc::new(UInt16Array::from(narrow));
                    RecordBatch::try_new(Arc::clone(&coded_schema), columns).unwrap()
                })
                .collect();
            let dictionaries: Vec<StringViewArray> =
                dictionaries.iter().map(LabelCodes::dictionary).collect();
            let decoded = permuted_decoding(
                &schema,
                &coded,
                |source, column| {
                    let coded = column == 3 && (source != 1 || every_source);
                    coded.then(|| &dictionaries[source.min(1)])
                },
                &order,
            )
            .unwrap();
            assert_eq!(decoded, expected, "coded in every source: {every_source}");
            decoded.column(3).to_data().validate_full().unwrap();
        }
    }
}
