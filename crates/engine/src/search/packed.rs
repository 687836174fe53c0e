//! The frequency set's `GROUP BY qi…, sa… count(*)`, counted here instead of by DataFusion's
//! aggregation when the columns allow it.
//!
//! DataFusion groups rows by comparing each row's values with the stored groups' (a
//! multi-column group table), and under a memory limit it sorts and merges spilled runs of
//! groups. On 100M generated rows (10.5M combinations of 5 quasi-identifiers) that took 33 s
//! under `--memory-limit 2GiB` and 18 s without a limit, for a scan of 1.5 s. Here each
//! partition of the scan:
//! 1. codes every value of each column in its own small map (text through
//!    [`LabelCodes`](crate::label_codes::LabelCodes), integers and dates by their `i64`
//!    value), keeping each new value once (its first row, by `take`);
//! 2. packs a row's codes into one `u128` (128 / width bits a column, at most 32) and counts
//!    it in a hash map of `u128` keys.
//!
//! At the end the partitions' distinct values are interned into one dictionary per column,
//! put in value order, and the partitions' combinations recoded to those ranks, sorted and
//! summed where equal. The result is the same [`StreamedCodes`] as
//! [`stream_codes`](super::codes::stream_codes) gives, already in the frequency set's
//! canonical order (which then costs one pass to confirm).
//!
//! Plan before and after, for `GROUP BY zip, age count(*)` on two partitions:
//! ```text
//! before: AggregateExec(final) ← RepartitionExec(hash) ← AggregateExec(partial) ← scan
//! after:  this module's counting tasks, one per partition ← scan (projection zip, age)
//! ```
//!
//! It gives up (returns `None`, and the caller runs the aggregation) when a column has
//! another type (floats, decimals, binary, nested…), when there are more than 16 columns,
//! when a column's codes outgrow their bits, or when the counts do not fit the memory pool:
//! the aggregation can spill, these maps cannot. NULL is a value with a code of its own, as
//! in `GROUP BY`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::{CastOptions, cast_with_options, concat, take};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::EmitTo;
use datafusion::physical_plan::execute_stream_partitioned;
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};
use hashbrown::{DefaultHashBuilder, HashMap};

use super::codes::{StreamedCodes, decoded, decoded_type, ranked};
use crate::functions::histogram::new_dictionary;
use crate::label_codes::LabelCodes;
use crate::progress::ScanProgress;

/// At most this many columns (8 bits of key each).
const MAX_COLUMNS: usize = 16;

/// A packed key as stored: two `u64`s (a `u128` would be aligned to 16 bytes, and an entry
/// with its count 33 bytes instead of 25).
type Key = [u64; 2];

fn stored(key: u128) -> Key {
    [key as u64, (key >> 64) as u64]
}

fn unstored(key: Key) -> u128 {
    u128::from(key[0]) | (u128::from(key[1]) << 64)
}

/// The counts of the packed combinations. Their tables come from the system allocator, not
/// the process's (mimalloc, which keeps freed memory for reuse): tables of hundreds of MiB,
/// freed when the frequency set is built, then go back to the system at once. Kept by
/// mimalloc, they stayed in the process's resident memory through the publish (a 100M-row
/// anonymize under `--memory-limit 2GiB` peaked at 2.8 GB instead of 2.2 GB).
type Counts = HashMap<Key, u64, DefaultHashBuilder, Os>;

fn new_counts() -> Counts {
    HashMap::with_hasher_in(DefaultHashBuilder::default(), Os)
}

/// The system allocator as an [`Allocator`] for hashbrown.
#[derive(Debug, Clone, Copy, Default)]
struct Os;

// SAFETY: blocks come from `System` with the layout asked for and go back to it with the same
// layout; a zero-sized request gets a dangling, well-aligned pointer and is never freed
unsafe impl Allocator for Os {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let ptr = if layout.size() == 0 {
            std::ptr::without_provenance_mut(layout.align())
        } else {
            // SAFETY: the layout's size is not zero
            unsafe { System.alloc(layout) }
        };
        NonNull::new(ptr)
            .map(|ptr| NonNull::slice_from_raw_parts(ptr, layout.size()))
            .ok_or(AllocError)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if layout.size() != 0 {
            // SAFETY: `ptr` was allocated by `allocate` above with this layout
            unsafe { System.dealloc(ptr.as_ptr(), layout) }
        }
    }
}

/// Bytes a counted combination takes in a hash map of [`Key`] → `u64`, with its control byte.
const ENTRY_BYTES: usize = size_of::<(Key, u64)>() + 1;

/// The bytes of a hash map's table with room for `capacity` entries (hashbrown keeps at most
/// 7/8 of its slots full).
fn table_bytes(capacity: usize) -> usize {
    capacity.saturating_mul(8) / 7 * ENTRY_BYTES
}

/// Makes room in `counts` for `more` entries, the memory for it reserved first: while a hash
/// map grows, its old and new tables are both allocated. `held` is the rest of what
/// `reservation` covers. `false` if the pool cannot give it.
fn make_room(
    counts: &mut Counts,
    more: usize,
    held: usize,
    reservation: &mut MemoryReservation,
) -> bool {
    let capacity = counts.capacity();
    if counts.len() + more <= capacity {
        return reservation.try_resize(held + table_bytes(capacity)).is_ok();
    }
    let grown = (counts.len() + more).max(capacity * 2);
    if reservation
        .try_resize(held + table_bytes(capacity) + table_bytes(grown))
        .is_err()
    {
        return false;
    }
    counts.reserve(more);
    reservation
        .try_resize(held + table_bytes(counts.capacity()))
        .is_ok()
}

/// How a column's values are coded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// text, as Utf8View
    Text,
    /// integers, dates and timestamps, by their value as `i64` (lossless for these types)
    Integer,
}

/// The kind of a column's (decoded) type, if this module counts it.
fn kind(data_type: &DataType) -> Option<Kind> {
    match data_type {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Some(Kind::Text),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::Date32
        | DataType::Date64
        | DataType::Timestamp(_, _) => Some(Kind::Integer),
        DataType::Dictionary(_, value) => kind(value),
        _ => None,
    }
}

/// One column's codes in one partition.
enum ColumnCodes {
    Text(LabelCodes),
    Integer {
        codes: HashMap<i64, u32>,
        null: Option<u32>,
        next: u32,
    },
}

impl ColumnCodes {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::Text => ColumnCodes::Text(LabelCodes::default()),
            Kind::Integer => ColumnCodes::Integer {
                codes: HashMap::new(),
                null: None,
                next: 0,
            },
        }
    }

    fn len(&self) -> usize {
        match self {
            ColumnCodes::Text(codes) => codes.len(),
            ColumnCodes::Integer { next, .. } => *next as usize,
        }
    }

    fn memory_size(&self) -> usize {
        match self {
            ColumnCodes::Text(codes) => codes.memory_size(),
            ColumnCodes::Integer { codes, .. } => codes.capacity() * (size_of::<(i64, u32)>() + 1),
        }
    }

    /// The codes of `column`'s rows into `codes`, and into `new_rows` the first row of each
    /// value coded for the first time (in code order).
    fn encode(
        &mut self,
        column: &ArrayRef,
        codes: &mut Vec<u32>,
        new_rows: &mut Vec<u32>,
    ) -> Result<()> {
        new_rows.clear();
        match self {
            ColumnCodes::Text(labels) => {
                let before = labels.len();
                let views = match column.data_type() {
                    DataType::Utf8View => Arc::clone(column),
                    _ => cast_with_options(column, &DataType::Utf8View, &CastOptions::default())?,
                };
                labels.encode(views.as_string_view(), codes);
                let fresh = labels.len() - before;
                if fresh > 0 {
                    // codes are given in order of first appearance: the first row of each new
                    // code comes in code order
                    let mut next = before as u32;
                    for (row, &code) in codes.iter().enumerate() {
                        if code == next {
                            new_rows.push(row as u32);
                            next += 1;
                        }
                    }
                }
            }
            ColumnCodes::Integer {
                codes: map,
                null,
                next,
            } => {
                let strict = CastOptions {
                    safe: false,
                    ..Default::default()
                };
                let values = cast_with_options(column, &DataType::Int64, &strict)?;
                let values = values.as_primitive::<Int64Type>();
                codes.clear();
                codes.reserve(values.len());
                for (row, &value) in values.values().iter().enumerate() {
                    let code = if values.is_null(row) {
                        *null.get_or_insert_with(|| {
                            new_rows.push(row as u32);
                            *next += 1;
                            *next - 1
                        })
                    } else {
                        *map.entry(value).or_insert_with(|| {
                            new_rows.push(row as u32);
                            *next += 1;
                            *next - 1
                        })
                    };
                    codes.push(code);
                }
            }
        }
        Ok(())
    }
}

/// One partition's count.
struct PartitionCount {
    columns: Vec<ColumnCodes>,
    /// per column, its values in code order (one array per batch that brought new ones)
    distinct: Vec<Vec<ArrayRef>>,
    distinct_bytes: usize,
    counts: Counts,
    reservation: MemoryReservation,
}

/// The bits of a column in a packed key.
fn bits_per_column(width: usize) -> u32 {
    (128 / width.max(1)).min(32) as u32
}

/// The `GROUP BY … count(*)` of every column of `df` (see the module docs), or `None` when
/// this module does not count it.
pub(super) async fn counted(
    ctx: &SessionContext,
    df: DataFrame,
    progress: Option<Arc<ScanProgress>>,
) -> Result<Option<StreamedCodes>> {
    let schema: SchemaRef = df.schema().inner().clone();
    let width = schema.fields().len();
    let kinds: Option<Vec<Kind>> = schema
        .fields()
        .iter()
        .map(|f| kind(f.data_type()))
        .collect();
    let Some(kinds) = kinds.filter(|_| (1..=MAX_COLUMNS).contains(&width)) else {
        return Ok(None);
    };
    let bits = bits_per_column(width);
    let task_ctx = Arc::new(df.task_ctx());
    // each partition counts into its own map (the merge below gives the same frequency set
    // however the rows are split)
    let (mut state, logical) = df.into_parts();
    crate::session::partitions_per_thread(&mut state, 2);
    let plan = state.create_physical_plan(&logical).await?;
    let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
    let pool = &ctx.runtime_env().memory_pool;
    let given_up = Arc::new(AtomicBool::new(false));
    let mut tasks = tokio::task::JoinSet::new();
    for (partition, mut stream) in execute_stream_partitioned(plan, task_ctx)?
        .into_iter()
        .enumerate()
    {
        let mut count = PartitionCount {
            columns: kinds.iter().map(|&k| ColumnCodes::new(k)).collect(),
            distinct: vec![Vec::new(); width],
            distinct_bytes: 0,
            counts: new_counts(),
            reservation: MemoryConsumer::new(format!("frequency set[{partition}]")).register(pool),
        };
        let given_up = Arc::clone(&given_up);
        tasks.spawn(async move {
            let (mut codes, mut new_rows, mut keys) = (Vec::new(), Vec::new(), Vec::new());
            let mut batches = 0usize;
            while let Some(batch) = stream.next().await {
                if given_up.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                let batch = batch?;
                keys.clear();
                keys.resize(batch.num_rows(), 0u128);
                for (c, column) in count.columns.iter_mut().enumerate() {
                    column.encode(batch.column(c), &mut codes, &mut new_rows)?;
                    if column.len() > 1 << bits {
                        given_up.store(true, Ordering::Relaxed);
                        return Ok(None);
                    }
                    if !new_rows.is_empty() {
                        let rows = UInt32Array::from(new_rows.clone());
                        let values = take(batch.column(c).as_ref(), &rows, None)?;
                        count.distinct_bytes += values.get_array_memory_size();
                        count.distinct[c].push(values);
                    }
                    let shift = c as u32 * bits;
                    for (key, &code) in keys.iter_mut().zip(&codes) {
                        *key |= u128::from(code) << shift;
                    }
                }
                let held = count.distinct_bytes
                    + count
                        .columns
                        .iter()
                        .map(ColumnCodes::memory_size)
                        .sum::<usize>();
                if !make_room(&mut count.counts, keys.len(), held, &mut count.reservation) {
                    given_up.store(true, Ordering::Relaxed);
                    return Ok(None);
                }
                for &key in &keys {
                    *count.counts.entry(stored(key)).or_insert(0) += 1;
                }
                batches += 1;
                if batches.is_multiple_of(YIELD_EVERY_BATCHES) {
                    // the input is read without waiting, so a task would otherwise keep its
                    // thread to the end: yielding lets an idle thread take a partition over
                    tokio::task::yield_now().await;
                }
            }
            Ok::<_, DataFusionError>(Some((partition, count)))
        });
    }
    let mut partitions = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let counted = done.map_err(|e| {
            DataFusionError::Execution(format!("counting the frequency set failed: {e}"))
        })??;
        match counted {
            Some(counted) => partitions.push(counted),
            None => return Ok(None),
        }
    }
    partitions.sort_by_key(|(partition, _)| *partition);
    merged(
        &schema,
        partitions.into_iter().map(|(_, c)| c).collect(),
        bits,
        pool,
    )
}

/// A partition's task yields its thread after this many batches (see
/// [`crate::session::partitions_per_thread`]).
const YIELD_EVERY_BATCHES: usize = 8;

/// The partitions' counts under one dictionary per column, in value order, the combinations
/// in ascending order of their codes (the frequency set's canonical order).
///
/// No hash map is merged: each partition's combinations are recoded straight to the value
/// ranks of the global dictionaries and packed into one key (first column highest, each
/// column in the fewest bits that hold its values), the keys of all partitions sorted (a
/// radix sort while a key fits 32 bits), and equal keys, which come together, summed.
fn merged(
    schema: &SchemaRef,
    partitions: Vec<PartitionCount>,
    bits: u32,
    pool: &Arc<dyn datafusion::execution::memory_pool::MemoryPool>,
) -> Result<Option<StreamedCodes>> {
    let width = schema.fields().len();
    let mask = (1u128 << bits) - 1;
    // per column, the global dictionary; per partition and column, local code → global code
    let mut dictionaries = schema
        .fields()
        .iter()
        .map(|f| new_dictionary(decoded_type(f.data_type())))
        .collect::<Result<Vec<_>>>()?;
    let mut remaps: Vec<Vec<Vec<u32>>> = Vec::with_capacity(partitions.len());
    let mut scratch = Vec::new();
    for partition in &partitions {
        let mut remap = Vec::with_capacity(width);
        for (dictionary, values) in dictionaries.iter_mut().zip(&partition.distinct) {
            let values: Vec<&dyn Array> = values.iter().map(|v| v.as_ref()).collect();
            let global: Vec<u32> = if values.is_empty() {
                Vec::new()
            } else {
                let values = decoded(&concat(&values)?)?;
                scratch.clear();
                dictionary.intern(std::slice::from_ref(&values), &mut scratch)?;
                scratch.iter().map(|&c| c as u32).collect()
            };
            if global.len() > 1 << bits || dictionary.len() > 1 << bits {
                return Ok(None);
            }
            remap.push(global);
        }
        remaps.push(remap);
    }
    // the dictionaries in value order, and each partition's local codes mapped to ranks
    let mut distinct = Vec::with_capacity(width);
    let mut widths = Vec::with_capacity(width);
    for (c, dictionary) in dictionaries.iter_mut().enumerate() {
        let values = dictionary.emit(EmitTo::All)?.swap_remove(0);
        let (rank, values) = ranked(values)?;
        for remap in &mut remaps {
            for code in &mut remap[c] {
                *code = rank[*code as usize];
            }
        }
        widths.push(u32::BITS - (values.len().max(1) as u32 - 1).leading_zeros());
        distinct.push(values);
    }
    let key_bits: u32 = widths.iter().sum();
    // the first column in the highest bits
    let shifts: Vec<u32> = (0..width)
        .map(|c| widths[c + 1..].iter().sum::<u32>())
        .collect();
    let total: usize = partitions.iter().map(|p| p.counts.len()).sum();
    // a partition's count of one combination fits 32 bits unless it read 2^32 rows
    let small_counts = partitions
        .iter()
        .all(|p| p.counts.values().all(|&c| c <= u64::from(u32::MAX)));
    let radix = key_bits <= 32 && small_counts;
    // the keys and counts, and the sort's scratch
    let entry_bytes = if radix { 8 + 8 } else { 2 * 32 };
    let reservation = MemoryConsumer::new("frequency set").register(pool);
    if reservation.try_grow(total * entry_bytes).is_err() {
        return Ok(None);
    }
    // each partition's combinations recoded on a thread of its own, into its own stretch of
    // one array: radix sorted, the key and the count in one word; else (key, count) pairs
    let ranked_key = |remap: &[Vec<u32>], key: Key| {
        let key = unstored(key);
        let mut ranked = 0u128;
        for (c, remap) in remap.iter().enumerate() {
            let local = ((key >> (c as u32 * bits)) & mask) as usize;
            ranked |= u128::from(remap[local]) << shifts[c];
        }
        ranked
    };
    let (mut words, mut entries): (Vec<u64>, Vec<(u128, u64)>) = if radix {
        let mut words = vec![0u64; total];
        recode_partitions(&partitions, &remaps, &mut words, |remap, key, count| {
            ((ranked_key(remap, key) as u64) << 32) | count
        })?;
        (words, Vec::new())
    } else {
        let mut entries = vec![(0u128, 0u64); total];
        recode_partitions(&partitions, &remaps, &mut entries, |remap, key, count| {
            (ranked_key(remap, key), count)
        })?;
        (Vec::new(), entries)
    };
    // the partitions' maps are gone: their memory with them
    for partition in partitions {
        partition.reservation.free();
    }
    let (columns, totals) = if radix {
        crate::sort::radix_sort(&mut words, 32, key_bits);
        unpacked(
            || {
                words
                    .iter()
                    .map(|&word| (u128::from(word >> 32), word & u64::from(u32::MAX)))
            },
            &shifts,
            &widths,
        )?
    } else {
        entries.sort_unstable_by_key(|&(key, _)| key);
        unpacked(|| entries.iter().copied(), &shifts, &widths)?
    };
    Ok(Some(StreamedCodes {
        columns: columns.into_iter().zip(distinct).collect(),
        counts: totals,
    }))
}

/// Fills `out` with every partition's combinations, `recode(remap, key, count)` each, the
/// partitions one after the other, each on a thread of its own.
fn recode_partitions<T: Send>(
    partitions: &[PartitionCount],
    remaps: &[Vec<Vec<u32>>],
    out: &mut [T],
    recode: impl Fn(&[Vec<u32>], Key, u64) -> T + Sync,
) -> Result<()> {
    let mut stretches = Vec::with_capacity(partitions.len());
    let mut rest = out;
    for partition in partitions {
        let (stretch, tail) = rest.split_at_mut(partition.counts.len());
        stretches.push(stretch);
        rest = tail;
    }
    crate::parallel::map_scoped(
        "recoding the frequency set",
        partitions.iter().zip(remaps).zip(stretches),
        |((partition, remap), stretch)| {
            for (slot, (&key, &count)) in stretch.iter_mut().zip(partition.counts.iter()) {
                *slot = recode(remap, key, count);
            }
        },
    )?;
    Ok(())
}

/// Per column, its code in each distinct key of the sorted `(key, count)` pairs `sorted`
/// gives (column c in `widths[c]` bits from `shifts[c]`), each column on a thread of its own;
/// and each distinct key's total count.
fn unpacked<I: Iterator<Item = (u128, u64)>>(
    sorted: impl Fn() -> I + Sync,
    shifts: &[u32],
    widths: &[u32],
) -> Result<(Vec<Vec<u32>>, Vec<u64>)> {
    let mut totals: Vec<u64> = Vec::new();
    let mut previous = None;
    for (key, count) in sorted() {
        match totals.last_mut() {
            Some(last) if previous == Some(key) => *last += count,
            _ => totals.push(count),
        }
        previous = Some(key);
    }
    let unique = totals.len();
    let columns = crate::parallel::map_scoped(
        "unpacking the frequency set",
        shifts.iter().zip(widths),
        |(&shift, &width)| {
            let mask = (1u128 << width) - 1;
            let mut codes = Vec::with_capacity(unique);
            let mut previous = None;
            for (key, _) in sorted() {
                if previous != Some(key) {
                    codes.push(((key >> shift) & mask) as u32);
                    previous = Some(key);
                }
            }
            codes
        },
    )?;
    Ok((columns, totals))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap as StdHashMap;

    use datafusion::arrow::array::{
        Date32Array, DictionaryArray, Float64Array, Int32Array, RecordBatch, StringArray,
        StringViewArray,
    };
    use datafusion::arrow::datatypes::{Field, Int32Type, Schema};
    use datafusion::common::ScalarValue;
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionConfig;

    use super::*;

    /// Rows of every kind counted here: short and long text with NULLs (as views), plain
    /// Utf8, dictionary-coded text, integers with NULLs, dates; values drawn from an LCG.
    /// With `wide`, integers and dates take thousands of values, so that the packed ranks
    /// need more than 32 bits (the comparison sort rather than the radix sort).
    fn batch(schema: &SchemaRef, seed: u64, rows: usize, wide: bool) -> RecordBatch {
        let mut state = seed;
        let mut draw = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let mut short = Vec::new();
        let mut long = Vec::new();
        let mut plain = Vec::new();
        let mut coded = Vec::new();
        let mut ints = Vec::new();
        let mut dates = Vec::new();
        for _ in 0..rows {
            let s = draw(7);
            short.push((s != 0).then(|| format!("s{s}")));
            long.push(format!("a value longer than twelve bytes {}", draw(3)));
            plain.push(format!("p{}", draw(2)));
            coded.push(["x", "y"][draw(2) as usize]);
            let i = draw(if wide { 1 << 22 } else { 5 }) as i32;
            ints.push((i != 4).then_some(i - 2));
            dates.push(19000 + draw(if wide { 1 << 16 } else { 3 }) as i32);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringViewArray::from(short)),
            Arc::new(StringViewArray::from_iter_values(long)),
            Arc::new(StringArray::from(plain)),
            Arc::new(coded.into_iter().collect::<DictionaryArray<Int32Type>>()),
            Arc::new(Int32Array::from(ints)),
            Arc::new(Date32Array::from(dates)),
        ];
        RecordBatch::try_new(Arc::clone(schema), columns).unwrap()
    }

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("short", DataType::Utf8View, true),
            Field::new("long", DataType::Utf8View, false),
            Field::new("plain", DataType::Utf8, false),
            Field::new(
                "coded",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                false,
            ),
            Field::new("int", DataType::Int32, true),
            Field::new("date", DataType::Date32, false),
        ]))
    }

    /// A session over three partitions of `batches` batches each.
    fn session(schema: &SchemaRef, batches: usize, wide: bool) -> SessionContext {
        let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3));
        let partitions: Vec<Vec<RecordBatch>> = (0..3)
            .map(|p| {
                (0..batches)
                    .map(|b| batch(schema, (p * 100 + b) as u64, 500, wide))
                    .collect()
            })
            .collect();
        let table = MemTable::try_new(Arc::clone(schema), partitions).unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        ctx
    }

    /// A row's values as scalars of the decoded types.
    fn tuple(columns: &[ArrayRef], row: usize) -> Vec<ScalarValue> {
        columns
            .iter()
            .map(|column| {
                let decoded = match column.data_type() {
                    DataType::Dictionary(_, value) => {
                        cast_with_options(column, value, &CastOptions::default()).unwrap()
                    }
                    _ => Arc::clone(column),
                };
                ScalarValue::try_from_array(&decoded, row).unwrap()
            })
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_match_a_brute_force_grouping() {
        for wide in [false, true] {
            counts_match_a_brute_force_grouping_of(wide).await;
        }
    }

    async fn counts_match_a_brute_force_grouping_of(wide: bool) {
        let schema = schema();
        let ctx = session(&schema, 4, wide);
        let df = ctx.table("t").await.unwrap();
        let streamed = counted(&ctx, df.clone(), None).await.unwrap().unwrap();
        // the reference: every row's value tuple counted, one by one
        let mut expected: StdHashMap<Vec<ScalarValue>, u64> = StdHashMap::new();
        for batch in df.collect().await.unwrap() {
            for row in 0..batch.num_rows() {
                *expected.entry(tuple(batch.columns(), row)).or_insert(0) += 1;
            }
        }
        let mut got: StdHashMap<Vec<ScalarValue>, u64> = StdHashMap::new();
        for (i, &count) in streamed.counts.iter().enumerate() {
            let values: Vec<ScalarValue> = streamed
                .columns
                .iter()
                .map(|(codes, distinct)| {
                    ScalarValue::try_from_array(distinct, codes[i] as usize).unwrap()
                })
                .collect();
            // each combination once
            assert!(got.insert(values, count).is_none());
        }
        assert_eq!(got, expected);
        assert_eq!(expected.values().sum::<u64>(), 3 * 4 * 500);
        // each column's distinct values once, in value order (NULL first)
        for (_, distinct) in &streamed.columns {
            let values: Vec<ScalarValue> = (0..distinct.len())
                .map(|r| ScalarValue::try_from_array(distinct, r).unwrap())
                .collect();
            let unique: std::collections::HashSet<&ScalarValue> = values.iter().collect();
            assert_eq!(unique.len(), distinct.len());
            let mut sorted = values.clone();
            sorted.sort_by(|a, b| match (a.is_null(), b.is_null()) {
                (true, false) => std::cmp::Ordering::Less,
                (false, true) => std::cmp::Ordering::Greater,
                _ => a.partial_cmp(b).unwrap(),
            });
            assert_eq!(values, sorted, "wide: {wide}");
        }
        // the combinations in ascending order of their codes
        let tuples: Vec<Vec<u32>> = (0..streamed.counts.len())
            .map(|i| streamed.columns.iter().map(|(codes, _)| codes[i]).collect())
            .collect();
        assert!(tuples.windows(2).all(|w| w[0] < w[1]), "wide: {wide}");
    }

    #[tokio::test]
    async fn gives_up_where_the_aggregation_must_count() {
        // a float column
        let schema = Arc::new(Schema::new(vec![Field::new("f", DataType::Float64, false)]));
        let ctx = SessionContext::new();
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Float64Array::from(vec![1.0, 2.0]))],
        )
        .unwrap();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("f", Arc::new(table)).unwrap();
        let df = ctx.table("f").await.unwrap();
        assert!(counted(&ctx, df, None).await.unwrap().is_none());
        // 16 columns get 8 bits each: a column of 300 distinct values outgrows them
        let fields: Vec<Field> = (0..16)
            .map(|c| Field::new(format!("c{c}"), DataType::Int32, false))
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let columns: Vec<ArrayRef> = (0..16)
            .map(|c| {
                let values: Vec<i32> = (0..300).map(|r| if c == 0 { r } else { 0 }).collect();
                Arc::new(Int32Array::from(values)) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
        let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
        ctx.register_table("wide", Arc::new(table)).unwrap();
        let df = ctx.table("wide").await.unwrap();
        assert!(counted(&ctx, df.clone(), None).await.unwrap().is_none());
        // and 256 distinct values fit them
        let df = df.limit(0, Some(256)).unwrap();
        let streamed = counted(&ctx, df, None).await.unwrap().unwrap();
        assert_eq!(streamed.counts.len(), 256);
        // counts that do not fit the memory pool (4 KiB) are left to the aggregation
        use datafusion::execution::memory_pool::GreedyMemoryPool;
        use datafusion::execution::runtime_env::RuntimeEnvBuilder;
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(GreedyMemoryPool::new(4 << 10)))
            .build_arc()
            .unwrap();
        let mixed = super::tests::schema();
        let small = SessionContext::new_with_config_rt(SessionConfig::new(), runtime);
        let rows = super::tests::batch(&mixed, 1, 500, false);
        let table = MemTable::try_new(Arc::clone(&mixed), vec![vec![rows]]);
        small.register_table("t", Arc::new(table.unwrap())).unwrap();
        let df = small.table("t").await.unwrap();
        assert!(counted(&small, df, None).await.unwrap().is_none());
    }
}
