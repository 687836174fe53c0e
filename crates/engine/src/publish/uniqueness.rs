//! What each published column that is not a quasi-identifier gives away together with the
//! quasi-identifiers (the pre-analytics of seed 000 §3.1, applied to the written output): the
//! rows it makes unique and the leakage of the combination.
//!
//! A column declared insensitive can still single people out: an exact amount beside the
//! published quasi-identifiers made 478,479 of 499,999 published rows unique in one release,
//! and nothing said so.
//!
//! One pass over the written files gives every row its class (the exact label counter of
//! `classes.rs`) and each measured column's value a dense code ([`ValueCodes`]: text by the
//! label codes of `codes.rs`, fixed-width values by their bits, anything else by Arrow's row
//! format), the classes and each column's codes on threads of their own, a chunk of rows at a
//! time (the dictionaries are independent, so the pass uses as many cores as it has
//! dictionaries); then, per column, the rows' (class, code) words are counted, each in a slot of its
//! own while there are few enough possible words, else radix sorted and counted by runs:
//! Σ c·log2 c over the groups and the groups of one row. Memory is a few words per row and
//! column (reserved in the pool); when the pool refuses more rows, each column's words so far
//! are sorted and spilled as a run, and the runs merged at the end (`crate::word_runs`: exact, in
//! the memory of one chunk of rows). Only when the codes of the values and classes alone do
//! not fit the pool, or the session has no disk to spill to, does each column take one
//! `GROUP BY` (quasi-identifiers, column) of the files instead, folded in the same plan into
//! the same numbers. On 10M rows the pass costs about a tenth of three such `GROUP BY`s; on
//! 3M rows under a 128 MiB pool (debug build) the spilled runs took 4.9 s where the
//! `GROUP BY`s took 32 s.
//!
//! NULL equals NULL, as in a `GROUP BY` and to a reader of the output; the masked all-`*`
//! rows of a mask release are published rows and count like any other.

use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use datafusion::functions::math::expr_fn::log2;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{Expr, cast, col, ident, lit, when};
use futures::StreamExt;
use hashbrown::HashTable;

use super::classes::ClassCounter;
use crate::errors::is_memory_exhausted;
use crate::label_codes::LabelCodes;
use crate::policy::{ColumnUniqueness, RiskThresholds};
use crate::profile::KeyInterner;
use crate::profile::leakage::{Sums, normalized};
use crate::storage::Location;
use crate::word_runs::SpilledRuns;
use datafusion::prelude::SessionContext;

/// The uniqueness check every method's release passes before it is committed: each column
/// of the staged files at `staged` that is neither one of `keys` nor `unmeasured`, measured
/// with `keys` (the columns that make the release's classes: generalization's
/// quasi-identifiers, cloaking's label columns, microaggregation's published values and
/// strata); refused when one breaks `thresholds.max_unique_share`, else the figures (highest
/// share first) and a warning for each column above [`crate::policy::UNIQUE_SHARE_WARNING`].
pub(super) async fn check_release(
    ctx: &SessionContext,
    staged: &Location,
    keys: &[String],
    unmeasured: &[&str],
    thresholds: &RiskThresholds,
) -> Result<CheckedUniqueness> {
    let table = super::verify::register_written(ctx, staged, "uniqueness").await?;
    let measured = async {
        let frame = ctx.table(table.as_str()).await?;
        let columns: Vec<String> = frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|name| !keys.contains(name) && !unmeasured.contains(&name.as_str()))
            .collect();
        let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
        column_uniqueness(&frame, keys, &columns).await
    }
    .await;
    ctx.deregister_table(table.as_str())?;
    let columns = measured?.columns;
    let broken = thresholds.unique_share_broken_by(&columns);
    if !broken.is_empty() {
        return Err(crate::policy::thresholds_broken(&broken));
    }
    Ok(CheckedUniqueness {
        warnings: crate::policy::unique_share_warnings(&columns),
        columns,
    })
}

/// What [`check_release`] measured of a release that passed it.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CheckedUniqueness {
    /// Each measured column, highest unique share first.
    pub columns: Vec<ColumnUniqueness>,
    /// The warnings, as printed on stderr.
    pub warnings: Vec<String>,
}

/// What [`column_uniqueness`] measured: each column with the quasi-identifiers and, when the
/// pass coded the values (not the `GROUP BY` fallback), each column alone: its values' counts
/// as leakage sums, which the post-analytics then need not count in a scan of their own.
pub(super) struct Measured {
    /// Highest unique share first (then highest leakage, then by name).
    pub columns: Vec<ColumnUniqueness>,
    /// Per column, in the order asked for; empty after the fallback.
    pub value_sums: Vec<(String, Sums)>,
}

/// The uniqueness of each of `columns` of `frame` with `quasi_identifiers`; see [`Measured`].
pub(super) async fn column_uniqueness(
    frame: &DataFrame,
    quasi_identifiers: &[String],
    columns: &[&str],
) -> Result<Measured> {
    let pool = Arc::clone(frame.task_ctx().memory_pool());
    let (mut measured, value_sums) = match by_codes(frame, quasi_identifiers, columns, &pool).await
    {
        Ok(measured) => measured,
        Err(e) if is_memory_exhausted(&e) => {
            let mut measured = Vec::with_capacity(columns.len());
            for &column in columns {
                measured.push(by_group_by(frame, quasi_identifiers, column).await?);
            }
            (measured, Vec::new())
        }
        Err(e) => return Err(e),
    };
    measured.sort_by(|a, b| {
        b.unique_share
            .total_cmp(&a.unique_share)
            .then_with(|| {
                b.leakage_with_quasi_identifiers
                    .total_cmp(&a.leakage_with_quasi_identifiers)
            })
            .then_with(|| a.attribute.cmp(&b.attribute))
    });
    Ok(Measured {
        columns: measured,
        value_sums,
    })
}

/// The figures of `column` from n, Σ c·log2 c over its groups and its groups of one row.
fn figures(column: &str, rows: u64, sum_c_log_c: f64, unique_rows: u64) -> ColumnUniqueness {
    ColumnUniqueness {
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
    }
}

/// Bits for codes below `n`.
fn bits_for(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// Every column measured from one pass over `frame` (see the module documentation), with its
/// values' own counts as leakage sums; a memory error ([`is_memory_exhausted`]) when the pool
/// cannot hold the codes.
async fn by_codes(
    frame: &DataFrame,
    quasi_identifiers: &[String],
    columns: &[&str],
    pool: &Arc<dyn MemoryPool>,
) -> Result<(Vec<ColumnUniqueness>, Vec<(String, Sums)>)> {
    if columns.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let width = quasi_identifiers.len();
    let selected: Vec<Expr> = quasi_identifiers
        .iter()
        .map(|q| ident(q.as_str()))
        .chain(columns.iter().map(|&c| ident(c)))
        .collect();
    let selected = frame.clone().select(selected)?;
    let interners = (0..columns.len())
        .map(|j| ValueCodes::new(selected.schema().field(width + j).data_type()))
        .collect::<Result<Vec<_>>>()?;
    let mut words = RowWords {
        width,
        counter: ClassCounter::new(width),
        interners,
        classes: Vec::new(),
        codes: vec![Vec::new(); columns.len()],
        value_counts: vec![Vec::new(); columns.len()],
        spilled: columns.iter().map(|_| SpilledRuns::default()).collect(),
        rows: 0,
        reservation: MemoryConsumer::new("anon uniqueness").register(pool),
        disk: Arc::clone(&frame.task_ctx().runtime_env().disk_manager),
    };
    let mut stream = selected.execute_stream().await?;
    let (mut chunk, mut chunk_rows) = (Vec::new(), 0);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        chunk_rows += batch.num_rows();
        chunk.push(batch);
        if chunk_rows >= CHUNK_ROWS {
            words.absorb(&chunk)?;
            (chunk, chunk_rows) = (Vec::new(), 0);
        }
    }
    words.absorb(&chunk)?;
    let value_sums = columns
        .iter()
        .zip(&words.value_counts)
        .map(|(&column, counts)| (column.to_string(), Sums::of_counts(counts.iter().copied())))
        .collect();
    Ok((words.measure(columns)?, value_sums))
}

/// Rows whose classes and codes are computed together, the classes on one thread and each
/// column's codes on another: enough rows that a thread each costs nothing next to them, few
/// enough that the batches held meanwhile are small beside the pool.
const CHUNK_ROWS: usize = 1 << 16;

/// The words of the rows read so far: each row's class and, per measured column, its value's
/// code, held in the pool or spilled as sorted runs when it refuses more.
struct RowWords {
    /// The columns that make the classes (the first of each batch).
    width: usize,
    counter: ClassCounter,
    interners: Vec<ValueCodes>,
    /// The class of each row held.
    classes: Vec<u32>,
    /// Per measured column, the code of each row held.
    codes: Vec<Vec<u32>>,
    /// Per measured column, the rows of each code (all rows read, held or spilled).
    value_counts: Vec<Vec<u64>>,
    /// Per measured column, the runs spilled so far.
    spilled: Vec<SpilledRuns>,
    /// Rows read, held or spilled.
    rows: usize,
    reservation: MemoryReservation,
    disk: Arc<DiskManager>,
}

/// One part of [`RowWords::absorb`]'s work, on a thread of its own.
enum Coding<'a> {
    Classes(&'a mut ClassCounter, &'a mut Vec<u32>),
    /// The batch column at this index, its codes, where they go, and the rows of each code.
    Values(
        usize,
        &'a mut ValueCodes,
        &'a mut Vec<u32>,
        &'a mut Vec<u64>,
    ),
}

impl RowWords {
    /// Gives the rows of `chunk` their classes and codes (side by side), then holds them if
    /// the pool lets it, else spills every column's words so far as one run each.
    fn absorb(&mut self, chunk: &[RecordBatch]) -> Result<()> {
        if chunk.is_empty() {
            return Ok(());
        }
        let width = self.width;
        let parts = std::iter::once(Coding::Classes(&mut self.counter, &mut self.classes)).chain(
            self.interners
                .iter_mut()
                .zip(&mut self.codes)
                .zip(&mut self.value_counts)
                .enumerate()
                .map(|(j, ((interner, codes), counts))| {
                    Coding::Values(width + j, interner, codes, counts)
                }),
        );
        let coded = crate::parallel::map_scoped("the uniqueness check", parts, |part| {
            match part {
                Coding::Classes(counter, classes) => {
                    let mut batch_classes = Vec::new();
                    for batch in chunk {
                        if width == 0 {
                            classes.resize(classes.len() + batch.num_rows(), 0);
                        } else {
                            counter.classify(
                                &batch.columns()[..width],
                                batch.num_rows(),
                                &mut batch_classes,
                            )?;
                            classes.extend_from_slice(&batch_classes);
                        }
                    }
                }
                Coding::Values(index, interner, codes, counts) => {
                    for batch in chunk {
                        let from = codes.len();
                        interner.encode(batch.column(index), codes)?;
                        for &code in &codes[from..] {
                            let code = code as usize;
                            if code >= counts.len() {
                                counts.resize(code + 1, 0);
                            }
                            counts[code] += 1;
                        }
                    }
                }
            }
            Ok::<_, DataFusionError>(())
        })?;
        coded.into_iter().collect::<Result<()>>()?;
        self.rows += chunk.iter().map(RecordBatch::num_rows).sum::<usize>();
        self.hold_or_spill()
    }

    /// Reserves the rows held and room to sort one column's words (a word and the sort's
    /// second buffer per row), or, refused, spills them (the codes of values and classes stay:
    /// they must fit).
    fn hold_or_spill(&mut self) -> Result<()> {
        let dictionaries = self
            .interners
            .iter()
            .map(ValueCodes::memory_size)
            .sum::<usize>()
            + self.counter.memory_size()
            + self.value_counts.iter().map(Vec::capacity).sum::<usize>() * size_of::<u64>();
        let held = (self.classes.capacity() + self.codes.iter().map(Vec::capacity).sum::<usize>())
            * size_of::<u32>()
            + self.classes.len() * SORT_ROOM_PER_ROW;
        if let Err(refused) = self.reservation.try_resize(held + dictionaries) {
            if !self.disk.tmp_files_enabled() {
                return Err(refused);
            }
            // the room reserved for the rows before this chunk sorts them
            let class_bits = self.class_bits();
            for (runs, codes) in self.spilled.iter_mut().zip(&mut self.codes) {
                runs.spill(&self.classes, codes, class_bits, &self.disk)?;
                *codes = Vec::new();
            }
            self.classes = Vec::new();
            self.reservation.try_resize(dictionaries)?;
        }
        Ok(())
    }

    fn class_bits(&self) -> u32 {
        bits_for(self.counter.classes().max(1))
    }

    /// The figures of each of `columns`: from the runs, if any were spilled, else counted in
    /// memory column by column.
    fn measure(mut self, columns: &[&str]) -> Result<Vec<ColumnUniqueness>> {
        let class_bits = self.class_bits();
        if self.spilled.iter().any(|runs| !runs.is_empty()) {
            return merged(
                columns,
                &mut self.spilled,
                (&self.classes, &self.codes),
                class_bits,
                self.rows,
                &self.disk,
            );
        }
        let rows = self.classes.len();
        let sort_room = rows * SORT_ROOM_PER_ROW;
        let mut measured = Vec::with_capacity(columns.len());
        for ((&column, interner), codes) in columns.iter().zip(&self.interners).zip(&mut self.codes)
        {
            let codes = std::mem::take(codes);
            let code_bits = bits_for(interner.len());
            let classes = &self.classes;
            let words = || {
                classes
                    .iter()
                    .zip(&codes)
                    .map(|(&class, &code)| (u64::from(class) << code_bits) | u64::from(code))
            };
            let bits = class_bits + code_bits;
            let by_slots = 1usize << bits <= 2 * rows.max(1 << 12);
            // the counts, or the words and the sort's second buffer
            let held = if by_slots {
                (1usize << bits) * size_of::<u32>()
            } else {
                2 * rows * size_of::<u64>()
            };
            // beyond the room reserved while reading
            let beyond = held.saturating_sub(sort_room);
            self.reservation.try_grow(beyond)?;
            let (sum_c_log_c, unique_rows) = if by_slots {
                count_in_slots(words(), bits)
            } else {
                count_sorted(words().collect(), bits)
            };
            self.reservation.shrink(beyond);
            measured.push(figures(column, rows as u64, sum_c_log_c, unique_rows));
        }
        Ok(measured)
    }
}

/// Bytes per row held while reading for sorting one column's words: a word and the radix
/// sort's second buffer.
const SORT_ROOM_PER_ROW: usize = 2 * size_of::<u64>();

/// The figures of `columns` whose words were spilled in runs (see [`crate::word_runs`]): the rows
/// still held (`left`: classes, and codes per column) spilled as one run more, then each
/// column's runs merged into its group sizes.
fn merged(
    columns: &[&str],
    spilled: &mut [SpilledRuns],
    left: (&[u32], &[Vec<u32>]),
    class_bits: u32,
    rows: usize,
    disk: &Arc<DiskManager>,
) -> Result<Vec<ColumnUniqueness>> {
    let (classes, codes) = left;
    let mut measured = Vec::with_capacity(columns.len());
    for ((&column, runs), codes) in columns.iter().zip(spilled).zip(codes) {
        if !classes.is_empty() {
            runs.spill(classes, codes, class_bits, disk)?;
        }
        let mut sums = GroupSums::default();
        runs.merge(|size| sums.add(size))?;
        measured.push(figures(
            column,
            rows as u64,
            sums.sum_c_log_c,
            sums.unique_rows,
        ));
    }
    Ok(measured)
}

/// The groups of equal `words` (each below 2^`bits`), each counted in a slot of its own:
/// [`group_sums`].
fn count_in_slots(words: impl Iterator<Item = u64>, bits: u32) -> (f64, u64) {
    let mut counts = vec![0u32; 1 << bits];
    for word in words {
        counts[word as usize] += 1;
    }
    group_sums(counts.iter().map(|&c| c as usize))
}

/// The groups of equal `words` (each below 2^`bits`), as runs once radix sorted:
/// [`group_sums`].
fn count_sorted(mut words: Vec<u64>, bits: u32) -> (f64, u64) {
    crate::sort::radix_sort_on_all_cores(&mut words, 0, bits);
    group_sums(words.chunk_by(|a, b| a == b).map(<[u64]>::len))
}

/// Σ c·log2 c over the groups of sizes `sizes` (0 for an empty one) and the groups of one row.
fn group_sums(sizes: impl Iterator<Item = usize>) -> (f64, u64) {
    let mut sums = GroupSums::default();
    sizes.for_each(|c| sums.add(c));
    (sums.sum_c_log_c, sums.unique_rows)
}

/// Σ c·log2 c and the groups of one row, group by group.
#[derive(Default)]
struct GroupSums {
    sum_c_log_c: f64,
    unique_rows: u64,
}

impl GroupSums {
    fn add(&mut self, c: usize) {
        match c {
            0 => {}
            1 => self.unique_rows += 1,
            c => self.sum_c_log_c += c as f64 * (c as f64).log2(),
        }
    }
}

/// Dense codes for the values of one column, from 0 in order of first appearance: equal values
/// (NULL with NULL) share a code, different ones never do.
enum ValueCodes {
    /// Text, by the publishing label codes (a short value's view is its key).
    Text(LabelCodes),
    /// Fixed-width values of at most 8 bytes (integers, floats, dates, times), by their bits.
    Bits(BitCodes),
    /// Any other type, by its bytes in Arrow's row format.
    Rows(KeyInterner),
}

impl ValueCodes {
    fn new(data_type: &DataType) -> Result<Self> {
        Ok(match data_type {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Self::Text(LabelCodes::default())
            }
            t if t.primitive_width().is_some_and(|w| w <= 8) => Self::Bits(BitCodes::default()),
            t => Self::Rows(KeyInterner::new(std::slice::from_ref(t))?),
        })
    }

    /// Appends the code of each row of `column` to `codes`, giving new values new codes.
    fn encode(&mut self, column: &ArrayRef, codes: &mut Vec<u32>) -> Result<()> {
        match self {
            Self::Text(labels) => {
                let views = datafusion::arrow::compute::cast(column, &DataType::Utf8View)?;
                codes.reserve(views.len());
                labels.encode_each(views.as_string_view(), |_, code| codes.push(code));
            }
            Self::Bits(bits) => bits.encode(column, codes),
            Self::Rows(rows) => rows.intern(std::slice::from_ref(column), codes)?,
        }
        Ok(())
    }

    /// The codes given.
    fn len(&self) -> usize {
        match self {
            Self::Text(labels) => labels.len(),
            Self::Bits(bits) => bits.values.len() + usize::from(bits.null.is_some()),
            Self::Rows(rows) => rows.len(),
        }
    }

    /// Bytes held, about (for the memory pool).
    fn memory_size(&self) -> usize {
        match self {
            Self::Text(labels) => labels.memory_size(),
            Self::Bits(bits) => {
                bits.table.capacity() * (size_of::<u32>() + 1)
                    + bits.values.capacity() * size_of::<u64>()
            }
            Self::Rows(rows) => rows.memory_size(),
        }
    }
}

/// Codes of fixed-width values by their bits (zero-extended to 64): exact, a float's NaNs
/// and its −0 and +0 told apart (more rows unique, never fewer).
#[derive(Default)]
struct BitCodes {
    /// the codes, hashed by their values' bits
    table: HashTable<u32>,
    /// the bits of each value's code (NULL's code is not among them)
    values: Vec<u64>,
    null: Option<u32>,
}

/// A 64-bit mix of `bits` (splitmix64's finalizer).
fn hash_bits(bits: u64) -> u64 {
    let mut h = bits ^ (bits >> 30);
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The place in [`BitCodes::values`] of the value of `code`: codes after NULL's are one past
/// their place.
fn index_of(code: u32, null: Option<u32>) -> usize {
    match null {
        Some(null) if code > null => code as usize - 1,
        _ => code as usize,
    }
}

impl BitCodes {
    /// The code of the value `bits`, `next` if new.
    fn code(&mut self, bits: u64, next: u32) -> u32 {
        let hash = hash_bits(bits);
        let (values, null) = (&self.values, self.null);
        if let Some(&code) = self
            .table
            .find(hash, |&c| values[index_of(c, null)] == bits)
        {
            return code;
        }
        self.values.push(bits);
        let values = &self.values;
        self.table
            .insert_unique(hash, next, |&c| hash_bits(values[index_of(c, null)]));
        next
    }

    fn encode(&mut self, column: &ArrayRef, codes: &mut Vec<u32>) {
        let data = column.to_data();
        let width = data.data_type().primitive_width().unwrap_or(8);
        let bytes = &data.buffers()[0].as_slice()[data.offset() * width..][..data.len() * width];
        let nulls = data.nulls().filter(|nulls| nulls.null_count() > 0);
        codes.reserve(data.len());
        for (row, value) in bytes.chunks_exact(width).enumerate() {
            let next = (self.values.len() + usize::from(self.null.is_some())) as u32;
            let code = if nulls.is_some_and(|nulls| nulls.is_null(row)) {
                *self.null.get_or_insert(next)
            } else {
                let mut word = [0u8; 8];
                word[..width].copy_from_slice(value);
                self.code(u64::from_le_bytes(word), next)
            };
            codes.push(code);
        }
    }
}

/// `column` measured by one `GROUP BY` (quasi-identifiers, `column`) of `frame`, folded in the
/// same plan into Σ c·log2 c, the groups of one row and the rows.
async fn by_group_by(
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
    Ok(figures(column, count(2), sum_c_log_c, count(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
    use datafusion::prelude::SessionContext;

    /// Counting in slots and by sorting agree with a hash map's count of the same words: 5,000
    /// words of 9 bits (many repeats, some alone) and 300 of 40 bits (spread).
    #[test]
    fn slots_and_sorting_count_the_groups_of_a_brute_force_reference() {
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 11
        };
        for (n, bits) in [(5000, 9), (300, 40)] {
            let words: Vec<u64> = (0..n).map(|_| next() & ((1u64 << bits) - 1)).collect();
            let mut reference = std::collections::HashMap::<u64, usize>::new();
            for &w in &words {
                *reference.entry(w).or_default() += 1;
            }
            let unique = reference.values().filter(|&&c| c == 1).count() as u64;
            let sum: f64 = reference
                .values()
                .filter(|&&c| c > 1)
                .map(|&c| c as f64 * (c as f64).log2())
                .sum();
            let sorted = count_sorted(words.clone(), bits);
            assert_eq!(sorted.1, unique, "{bits} bits");
            assert!((sorted.0 - sum).abs() < 1e-6, "{bits} bits");
            if bits <= 20 {
                let slots = count_in_slots(words.iter().copied(), bits);
                assert_eq!(slots.1, unique);
                assert!((slots.0 - sum).abs() < 1e-6);
            }
        }
    }

    /// Both ways of measuring, on a table worked by hand (NULL equal to NULL):
    ///
    /// ```text
    /// g  A    A    A    A   | B    B    B    B
    /// v  1.5  NULL NULL 2.0 | 3.0  3.0  NULL 4.0   groups 1,2,1 | 2,1,1: 4 rows alone
    /// w  x    x    y    y   | x    NULL NULL z     groups 2,2 | 1,2,1: 2 rows alone
    /// ```
    ///
    /// v: unique share 4/8, Σ c log2 c = 2 + 2 = 4, leakage (log2 8 − 4/8)/log2 8 = 2.5/3;
    /// w: 2/8, Σ c log2 c = 2 + 2 + 2 = 6, leakage (3 − 6/8)/3 = 0.75. d holds v's values as
    /// decimals (coded by Arrow's row format where v is coded by its bits and w as text): v's
    /// figures.
    #[tokio::test]
    async fn sorted_codes_and_group_by_agree_with_the_hand_count() {
        let g: ArrayRef = Arc::new(StringArray::from(vec![
            "A", "A", "A", "A", "B", "B", "B", "B",
        ]));
        let v: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(1.5),
            None,
            None,
            Some(2.0),
            Some(3.0),
            Some(3.0),
            None,
            Some(4.0),
        ]));
        let w: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            Some("x"),
            Some("y"),
            Some("y"),
            Some("x"),
            None,
            None,
            Some("z"),
        ]));
        let d: ArrayRef = Arc::new(
            datafusion::arrow::array::Decimal128Array::from(vec![
                Some(150),
                None,
                None,
                Some(200),
                Some(300),
                Some(300),
                None,
                Some(400),
            ])
            .with_precision_and_scale(10, 2)
            .unwrap(),
        );
        let batch = RecordBatch::try_from_iter([("g", g), ("v", v), ("w", w), ("d", d)]).unwrap();
        let ctx = SessionContext::new();
        let frame = ctx.read_batch(batch).unwrap();
        let qis = ["g".to_string()];
        let expected = [("v", 4, 2.5 / 3.0), ("w", 2, 0.75), ("d", 4, 2.5 / 3.0)];
        let pool = Arc::clone(frame.task_ctx().memory_pool());
        let by_codes = by_codes(&frame, &qis, &["v", "w", "d"], &pool)
            .await
            .unwrap()
            .0;
        for (i, (column, unique, leakage)) in expected.into_iter().enumerate() {
            let grouped = by_group_by(&frame, &qis, column).await.unwrap();
            for measured in [&by_codes[i], &grouped] {
                assert_eq!(measured.attribute, column);
                assert_eq!(
                    (measured.unique_rows, measured.rows),
                    (unique, 8),
                    "{column}"
                );
                assert!((measured.unique_share - unique as f64 / 8.0).abs() < 1e-12);
                assert!(
                    (measured.leakage_with_quasi_identifiers - leakage).abs() < 1e-12,
                    "{column}: {measured:?}"
                );
            }
        }
        // ranked: d and v (share 0.5, same leakage: by name) before w (0.25)
        let ranked = column_uniqueness(&frame, &qis, &["w", "v", "d"])
            .await
            .unwrap()
            .columns;
        let names: Vec<&str> = ranked.iter().map(|c| c.attribute.as_str()).collect();
        assert_eq!(names, ["d", "v", "w"]);
    }

    /// A pool too small for the rows' words: they are spilled in sorted runs and merged, with
    /// the figures of a brute-force count of (class, value) pairs. 60,000 rows in batches of
    /// 4,096 (40 classes; an integer with 1,000 values, NULLs among them; text of 200 values)
    /// take 28 bytes a row, 1.7 MB, against a pool of 512 KiB; without a disk manager the
    /// same pool refuses them, so the runs were needed.
    #[tokio::test]
    async fn spilled_runs_measure_what_a_brute_force_count_does() {
        use datafusion::arrow::array::Int64Array;
        use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
        use datafusion::execution::memory_pool::GreedyMemoryPool;
        use datafusion::execution::runtime_env::RuntimeEnvBuilder;
        use datafusion::prelude::SessionConfig;
        use std::collections::HashMap;

        let mut state = 5u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % n
        };
        let rows = 60_000;
        let g: Vec<String> = (0..rows).map(|_| format!("g{}", next(40))).collect();
        let v: Vec<Option<i64>> = (0..rows)
            .map(|_| match next(1000) {
                0..=9 => None,
                x => Some(x as i64),
            })
            .collect();
        let w: Vec<String> = (0..rows).map(|_| format!("w{}", next(200))).collect();
        let reference = |values: &dyn Fn(usize) -> String| {
            let mut groups = HashMap::<(String, String), u64>::new();
            for (row, class) in g.iter().enumerate() {
                *groups.entry((class.clone(), values(row))).or_default() += 1;
            }
            let unique = groups.values().filter(|&&c| c == 1).count() as u64;
            let sum: f64 = groups.values().map(|&c| c as f64 * (c as f64).log2()).sum();
            (unique, normalized(rows as u64, sum))
        };
        let expected = [
            reference(&|row| format!("{:?}", v[row])),
            reference(&|row| w[row].clone()),
        ];
        let batches: Vec<RecordBatch> = (0..rows)
            .step_by(4096)
            .map(|start| {
                let end = (start + 4096).min(rows);
                RecordBatch::try_from_iter([
                    (
                        "g",
                        Arc::new(StringArray::from(g[start..end].to_vec())) as ArrayRef,
                    ),
                    (
                        "v",
                        Arc::new(Int64Array::from(v[start..end].to_vec())) as ArrayRef,
                    ),
                    (
                        "w",
                        Arc::new(StringArray::from(w[start..end].to_vec())) as ArrayRef,
                    ),
                ])
                .unwrap()
            })
            .collect();
        let context = |disk: DiskManagerMode| {
            let runtime = RuntimeEnvBuilder::new()
                .with_memory_pool(Arc::new(GreedyMemoryPool::new(512 * 1024)))
                .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(disk))
                .build_arc()
                .unwrap();
            SessionContext::new_with_config_rt(SessionConfig::new(), runtime)
        };
        let qis = ["g".to_string()];
        let ctx = context(DiskManagerMode::OsTmpDirectory);
        let frame = ctx.read_batches(batches.clone()).unwrap();
        let pool = Arc::clone(frame.task_ctx().memory_pool());
        let (measured, value_sums) = by_codes(&frame, &qis, &["v", "w"], &pool).await.unwrap();
        // each column alone, counted again: its values' counts, as a GROUP BY of it gives them
        for ((name, sums), values) in value_sums.iter().zip([
            v.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>(),
            w.clone(),
        ]) {
            let mut counts = HashMap::<String, u64>::new();
            for value in values {
                *counts.entry(value).or_default() += 1;
            }
            let sum: f64 = counts.values().map(|&c| c as f64 * (c as f64).log2()).sum();
            assert_eq!(sums.values(), counts.len() as u64, "{name}");
            assert!(
                (sums.sum_c_log_c() - sum).abs() < 1e-6 * sum.max(1.0),
                "{name}"
            );
        }
        for (measured, (unique, leakage)) in measured.iter().zip(expected) {
            assert_eq!(
                (measured.unique_rows, measured.rows),
                (unique, rows as u64),
                "{}",
                measured.attribute
            );
            assert!(
                (measured.leakage_with_quasi_identifiers - leakage).abs() < 1e-9,
                "{measured:?}"
            );
        }
        let ctx = context(DiskManagerMode::Disabled);
        let frame = ctx.read_batches(batches).unwrap();
        let pool = Arc::clone(frame.task_ctx().memory_pool());
        let refused = by_codes(&frame, &qis, &["v", "w"], &pool)
            .await
            .unwrap_err();
        assert!(is_memory_exhausted(&refused), "{refused}");
    }
}
