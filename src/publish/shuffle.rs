//! The order of published rows: random by default, so that two releases of the same data (at
//! different levels, or by different algorithms) cannot be joined row by row — the unsorted
//! matching attack (Sweeney 2002, seed 004 §3.2): with rows in input order, row i of one release
//! and row i of the other are the same person, and the less generalized value of each
//! quasi-identifier can be taken from whichever release has it.
//!
//! A two-pass shuffle, streaming and bounded in memory:
//! 1. **Scatter.** Every partition of the rows to write is read in its own task. Each row gets
//!    a *fine bucket* among F = 2^f: the top f bits of a seeded bijective mix of its partition
//!    and its position among the partition's rows (never of its values); its *bucket* among
//!    B = 2^b ≤ F is the top b of those bits, so a bucket is a range of fine buckets. The
//!    partition's rows are grouped by fine bucket [`GROUP_ROWS`] at a time (a stable counting
//!    sort, the rows written to their places by the [`scattered`] kernel), their text columns
//!    coded (each value as the 2-byte code of its label; see [`PartitionRows`]), and the
//!    grouped batch is kept within the partition's share of a memory budget — half the session's pool
//!    when it has a limit (the rest stays for what cannot spill), else [`SHUFFLE_MEMORY`].
//!    Beyond it, the partition appends each kept batch's bucket ranges to its own spill file
//!    per bucket (Arrow IPC), in order; partitions never wait for each other.
//! 2. **Gather.** Bucket by bucket (its spill files read back), fine bucket by fine bucket,
//!    the fine bucket's rows — partition by partition, each partition's in their order
//!    (spilled first, then kept) — are permuted by a Fisher–Yates shuffle drawn from the seed
//!    and the fine bucket, put in their permuted order (and decoded) by [`permuted_decoding`]
//!    and passed on in slices of [`BATCH_ROWS`].
//!
//! Fine buckets are i.i.d. uniform per row and each is permuted uniformly, so every output
//! position is equally likely for every row. B and F depend only on the input's row count and
//! the schema: a bucket holds about [`BUCKET_BYTES`] by the schema's estimate of a row, so it
//! fits in memory at the gather; a fine bucket about [`FINE_BUCKET_BYTES`], so that the
//! gather's random writes stay in the processor's cache (with one fine bucket per 256 MiB
//! bucket, the `interleave` of 10M rows took 6 of the gather's 9 seconds, waiting on memory).
//! The order does not depend on when, or whether, the scatter spilled: the same input,
//! release, seed and session configuration (`target_partitions`, which decides how the scan
//! splits the input) write the same rows in the same order, as long as each partition reads
//! the same rows every run (publishing's plans turn off DataFusion's file work stealing for
//! that: see [`super::in_order`]).
//!
//! The seed is as secret as the data: whoever holds it and the input can recompute every
//! row's bucket and permutation and so undo the shuffle.
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, RecordBatch, RecordBatchOptions, StringViewArray, UInt16Array,
};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::CompressionType;
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryReservation};
use datafusion::execution::spill_file::{SpillFile, SpillWriter};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use futures::StreamExt;

use super::codes::LabelCodes;
use super::scatter::{permuted_decoding, scattered, scattered_column};
use crate::rng::SplitMix64;

/// The shuffle's memory when the session has no limit: the scatter spills beyond it.
pub const SHUFFLE_MEMORY: usize = 1 << 30;

/// The order in which published rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOrder {
    /// A random permutation drawn from the seed (the default).
    Shuffled(u64),
    /// The order the rows are read in: open to the unsorted matching attack.
    Input,
}

impl RowOrder {
    /// Shuffled with a fresh random seed.
    pub fn random() -> Self {
        RowOrder::Shuffled(random_seed())
    }

    /// `shuffled` or `input`, as reports say.
    pub fn name(&self) -> &'static str {
        match self {
            RowOrder::Shuffled(_) => "shuffled",
            RowOrder::Input => "input",
        }
    }

    /// The seed, when shuffled.
    pub fn seed(&self) -> Option<u64> {
        match self {
            RowOrder::Shuffled(seed) => Some(*seed),
            RowOrder::Input => None,
        }
    }
}

/// A seed from the operating system's randomness (the standard library's hash keys).
pub fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id() as u64);
    hasher.finish()
}

/// The murmur3 64-bit finalizer: a bijection of u64 that mixes every input bit into every
/// output bit.
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The keys of one partition's rows, in the order they are passed on.
#[derive(Debug)]
pub(crate) struct OrderKeys {
    first: u64,
    second: u64,
    /// the partition in the top 24 bits, the row counter in the lower 40
    next: u64,
}

impl OrderKeys {
    pub(crate) fn new(seed: u64, partition: usize) -> Self {
        let mut rng = crate::rng::SplitMix64(seed);
        Self {
            first: rng.next_u64(),
            second: rng.next_u64(),
            next: (partition as u64) << 40,
        }
    }

    /// The buckets (the top `bits` bits of the keys) of the next `rows` rows.
    pub(crate) fn buckets(&mut self, rows: usize, bits: u32) -> Vec<u16> {
        let (first, second, start) = (self.first, self.second, self.next);
        self.next += rows as u64;
        if bits == 0 {
            return vec![0; rows];
        }
        (start..start + rows as u64)
            .map(|x| (fmix64(fmix64(x ^ first) ^ second) >> (64 - bits)) as u16)
            .collect()
    }

    /// The keys of the next `rows` rows.
    #[cfg(test)]
    pub(crate) fn next(&mut self, rows: usize) -> ArrayRef {
        let (first, second, start) = (self.first, self.second, self.next);
        let keys: Vec<u64> = (start..start + rows as u64)
            .map(|x| fmix64(fmix64(x ^ first) ^ second))
            .collect();
        self.next += rows as u64;
        Arc::new(datafusion::arrow::array::UInt64Array::from(keys))
    }
}

/// The bytes a bucket is sized for, by the schema's estimate of a row.
pub const BUCKET_BYTES: usize = 256 << 20;

/// The bytes a *fine* bucket (the unit the gather permutes) is sized for: well within the
/// last-level cache, so that gathering its rows in random order hits the cache.
pub const FINE_BUCKET_BYTES: usize = 4 << 20;

/// At most 2^12 buckets (then buckets grow beyond [`BUCKET_BYTES`]).
const MAX_BUCKET_BITS: u32 = 12;

/// At most 2^16 fine buckets (their ids are `u16`).
const MAX_FINE_BITS: u32 = 16;

/// Rows per written batch.
const BATCH_ROWS: usize = 8192;

/// At most this many codes per text column and partition (codes are `u16`): a column with
/// more distinct values is kept as views from then on.
const MAX_CODES: usize = 1 << 16;

/// Rows the scatter groups by fine bucket at a time (a partition's batches are collected up
/// to this many): the gather copies each fine bucket's slice of every group, so fewer,
/// larger groups mean fewer, longer copies (with one group per 8,192-row batch, a fine bucket
/// of 10M rows was ~1,200 slices of ~16 rows, and the gather waited on memory).
const GROUP_ROWS: usize = 1 << 16;

/// A row's size in memory as the schema suggests: fixed widths, 16 bytes per view, 24 for
/// other variable-width values.
fn estimated_row_bytes(schema: &Schema) -> usize {
    schema
        .fields()
        .iter()
        .map(|f| f.data_type().primitive_width().unwrap_or(24).max(1))
        .sum::<usize>()
        .max(1)
}

/// The bits of buckets of about `bucket_bytes` for `rows` rows of `schema`, at most `max`.
fn bucket_bits(rows: u64, schema: &Schema, bucket_bytes: usize, max: u32) -> u32 {
    let bytes = rows.saturating_mul(estimated_row_bytes(schema) as u64);
    let buckets = bytes.div_ceil(bucket_bytes as u64).max(1);
    buckets.next_power_of_two().trailing_zeros().min(max)
}

/// The bucket bits: (buckets of about [`BUCKET_BYTES`], the unit of spilling and loading;
/// fine buckets of about [`FINE_BUCKET_BYTES`], the unit of the permutation). A bucket is a
/// range of fine buckets: a fine bucket's top bits are its bucket.
fn bucket_levels(rows: u64, schema: &Schema) -> Levels {
    let bits = bucket_bits(rows, schema, BUCKET_BYTES, MAX_BUCKET_BITS);
    let fine = bucket_bits(rows, schema, FINE_BUCKET_BYTES, MAX_FINE_BITS).max(bits);
    Levels { bits, fine }
}

/// The bucket bits of a shuffle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Levels {
    /// 2^bits buckets (spill files, loaded one at a time by the gather)
    bits: u32,
    /// 2^fine fine buckets (each permuted on its own), fine ≥ bits
    fine: u32,
}

impl Levels {
    /// Fine buckets per bucket.
    fn per_bucket(self) -> usize {
        1 << (self.fine - self.bits)
    }
}

/// The rows of `partitions` (the partitions of the table to write), shuffled by `seed`, as
/// one partition; `rows` (an upper bound of the rows to come) sizes the buckets.
pub(crate) fn shuffled(
    schema: SchemaRef,
    partitions: Vec<Arc<dyn PartitionStream>>,
    seed: u64,
    rows: u64,
) -> Arc<dyn PartitionStream> {
    let levels = bucket_levels(rows, &schema);
    shuffled_in_buckets(schema, partitions, seed, levels, GROUP_ROWS, MAX_CODES)
}

/// [`shuffled`] into the buckets of `levels`, grouping `group_rows` rows at a time, coding
/// text columns with up to `max_codes` codes (0: none coded).
fn shuffled_in_buckets(
    schema: SchemaRef,
    partitions: Vec<Arc<dyn PartitionStream>>,
    seed: u64,
    levels: Levels,
    group_rows: usize,
    max_codes: usize,
) -> Arc<dyn PartitionStream> {
    Arc::new(ShuffledPartition {
        schema,
        partitions,
        seed,
        levels,
        group_rows,
        max_codes: max_codes.min(MAX_CODES),
    })
}

#[derive(Debug)]
struct ShuffledPartition {
    schema: SchemaRef,
    partitions: Vec<Arc<dyn PartitionStream>>,
    seed: u64,
    levels: Levels,
    group_rows: usize,
    max_codes: usize,
}

impl PartitionStream for ShuffledPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        let inputs: Vec<SendableRecordBatchStream> = self
            .partitions
            .iter()
            .map(|p| p.execute(Arc::clone(&ctx)))
            .collect();
        let settings = Settings {
            seed: self.seed,
            levels: self.levels,
            group_rows: self.group_rows,
            max_codes: self.max_codes,
        };
        let scatter_schema = Arc::clone(&schema);
        let batches =
            futures::stream::once(
                async move { scatter(inputs, scatter_schema, settings, &ctx).await },
            )
            .flat_map(|scattered| match scattered {
                Ok(scattered) => futures::stream::iter(Gather::new(scattered)).boxed(),
                Err(e) => futures::stream::once(async { Err(e) }).boxed(),
            });
        Box::pin(RecordBatchStreamAdapter::new(schema, batches))
    }
}

/// How a shuffle runs.
#[derive(Debug, Clone, Copy)]
struct Settings {
    seed: u64,
    levels: Levels,
    group_rows: usize,
    max_codes: usize,
}

/// A batch kept in memory, its rows grouped by fine bucket (stably: each fine bucket's rows
/// in their input order); `starts[f]..starts[f + 1]` are fine bucket f's rows.
struct Kept {
    batch: RecordBatch,
    starts: Vec<u32>,
}

/// One partition's rows during and after the scatter: kept in memory within the partition's
/// share of the budget, spilled beyond it. Each partition is scattered by its own task and
/// spills only its own rows, so a spill never holds up another partition.
///
/// Text columns are held *coded*: each value as the `u16` code of its label in the
/// partition's [`LabelCodes`] of the column (2 bytes a row instead of a 16-byte view; a
/// 10M-row release of 7 short text columns then fits a 2 GiB limit instead of spilling most
/// of its rows), decoded by the gather's scatter. A column that outgrows `max_codes` codes
/// is held as views from then on: the kept batches are decoded, and later spills go to a new
/// generation of spill files, whose batches hold it as views.
struct PartitionRows {
    kept: Vec<Kept>,
    /// per generation (see above), per bucket, the spill file of the rows spilled so far, and
    /// its writer until finished
    spilled: Vec<HashMap<u16, Spill>>,
    kept_bytes: usize,
    budget: usize,
    /// the memory of `kept` and `codes` (held until the gather has written every row)
    reservation: MemoryReservation,
    /// per column, the codes of a text column (`None` for other columns)
    codes: Vec<Option<LabelCodes>>,
    /// per column, whether it is coded now; the schema of the kept batches
    coded: Vec<bool>,
    coded_schema: SchemaRef,
    max_codes: usize,
    /// the rows' schema
    schema: SchemaRef,
}

/// `schema` with the columns `coded` marks as codes (`UInt16`, no NULLs: NULL has a code).
fn coded_schema(schema: &SchemaRef, coded: &[bool]) -> SchemaRef {
    if !coded.contains(&true) {
        return Arc::clone(schema);
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(coded)
        .map(|(field, &coded)| match coded {
            true => Field::new(field.name(), DataType::UInt16, false),
            false => field.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

struct Spill {
    file: Arc<dyn SpillFile>,
    writer: Option<StreamWriter<Box<dyn SpillWriter>>>,
    /// per batch written, in order: its fine buckets' row ranges, relative to the bucket's
    /// first fine bucket (as [`Kept::starts`])
    starts: Vec<Vec<u32>>,
}

/// The scatter's result.
struct Scattered {
    schema: SchemaRef,
    seed: u64,
    levels: Levels,
    partitions: Vec<PartitionRows>,
}

impl PartitionRows {
    /// Keeps `batch` (already grouped by fine bucket, see [`Kept`]); spills everything kept
    /// when over the budget.
    fn keep(
        &mut self,
        batch: RecordBatch,
        starts: Vec<u32>,
        levels: Levels,
        disk: &Arc<DiskManager>,
    ) -> Result<()> {
        self.kept_bytes += batch.get_array_memory_size() + starts.len() * 4;
        self.kept.push(Kept { batch, starts });
        self.fit(levels, disk)
    }

    /// Spills everything kept if it and the codes are over the budget.
    fn fit(&mut self, levels: Levels, disk: &Arc<DiskManager>) -> Result<()> {
        let held = self.kept_bytes + self.codes_bytes();
        if held > self.budget || self.reservation.try_resize(held).is_err() {
            self.spill(levels, disk)?;
        }
        Ok(())
    }

    fn codes_bytes(&self) -> usize {
        self.codes
            .iter()
            .flatten()
            .map(LabelCodes::memory_size)
            .sum()
    }

    /// The rows of `batches` (a group, as read), row r written to position `dest[r]` (see
    /// [`scattered`]), their coded columns coded on the way. A column that outgrows the codes
    /// is given up (see [`PartitionRows`]) and written as it is.
    fn grouped_coded(
        &mut self,
        batches: &[RecordBatch],
        dest: &[u32],
        levels: Levels,
        disk: &Arc<DiskManager>,
    ) -> Result<RecordBatch> {
        let rows = dest.len();
        let mut columns: Vec<Option<ArrayRef>> = vec![None; self.coded.len()];
        for (c, column) in columns.iter_mut().enumerate() {
            let Some(codes) = self.codes[c].as_mut().filter(|_| self.coded[c]) else {
                continue;
            };
            let mut out = vec![0u16; rows];
            let mut next = 0;
            let mut fits = true;
            for batch in batches {
                let to = &dest[next..next + batch.num_rows()];
                codes.encode_each(batch.column(c).as_string_view(), |row, code| {
                    out[to[row] as usize] = code as u16;
                });
                next += batch.num_rows();
                if codes.len() > self.max_codes {
                    fits = false;
                    break;
                }
            }
            if fits {
                *column = Some(Arc::new(UInt16Array::from(out)));
            } else {
                self.give_up(c, levels, disk)?;
            }
        }
        let columns = columns
            .into_iter()
            .enumerate()
            .map(|(c, coded)| match coded {
                Some(coded) => Ok(coded),
                None => {
                    let arrays: Vec<&ArrayRef> = batches.iter().map(|b| b.column(c)).collect();
                    scattered_column(&arrays, dest)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new_with_options(
            Arc::clone(&self.coded_schema),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )?)
    }

    /// Holds column `c` as views from now on: decodes it in the kept batches, and starts a
    /// new generation of spill files.
    fn give_up(&mut self, c: usize, levels: Levels, disk: &Arc<DiskManager>) -> Result<()> {
        self.coded[c] = false;
        self.coded_schema = coded_schema(&self.schema, &self.coded);
        self.spilled.push(HashMap::new());
        let Some(codes) = self.codes[c].as_ref() else {
            return Ok(());
        };
        let dictionary = codes.dictionary();
        self.kept_bytes = 0;
        for kept in &mut self.kept {
            let mut columns = kept.batch.columns().to_vec();
            columns[c] = take(&dictionary, columns[c].as_ref(), None)?;
            kept.batch = RecordBatch::try_new(Arc::clone(&self.coded_schema), columns)?;
            self.kept_bytes += kept.batch.get_array_memory_size() + kept.starts.len() * 4;
        }
        self.fit(levels, disk)
    }

    /// Appends the kept rows to the partition's bucket files: per bucket, one batch of the
    /// bucket's rows of every kept group, regrouped by fine bucket (each fine bucket's rows
    /// in their order). One batch per bucket and spill, not one per group, so that the gather
    /// copies long runs: with a group's share of a fine bucket (~16 rows at 100M rows, 4,096
    /// fine buckets) as the unit, the per-slice work outweighed the rows' own.
    fn spill(&mut self, levels: Levels, disk: &Arc<DiskManager>) -> Result<()> {
        let (buckets, per_bucket) = (1usize << levels.bits, levels.per_bucket());
        let kept = std::mem::take(&mut self.kept);
        let Some(schema) = kept.first().map(|k| k.batch.schema()) else {
            return Ok(());
        };
        let mut fine_of_row: Vec<u16> = Vec::new();
        for bucket in 0..buckets {
            // the bucket's slice of every kept group, and each of its rows' fine bucket
            // (relative to the bucket's first), group by group
            fine_of_row.clear();
            let mut slices = Vec::new();
            for kept in &kept {
                let fine = &kept.starts[bucket * per_bucket..=(bucket + 1) * per_bucket];
                let (start, end) = (fine[0] as usize, fine[per_bucket] as usize);
                if start == end {
                    continue;
                }
                slices.push(kept.batch.slice(start, end - start));
                for f in 0..per_bucket {
                    let rows = (fine[f + 1] - fine[f]) as usize;
                    fine_of_row.extend(std::iter::repeat_n(f as u16, rows));
                }
            }
            if slices.is_empty() {
                continue;
            }
            let (regrouped, starts) =
                grouped_by_bucket(&schema, &slices, &fine_of_row, per_bucket)?;
            let Some(generation) = self.spilled.last_mut() else {
                continue;
            };
            let spill = match generation.entry(bucket as u16) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    let file = disk.create_tmp_file("anon shuffle")?;
                    // LZ4: the spilled rows (mostly short strings in 16-byte views) shrink
                    // several times, and the spill's write and read-back through the page
                    // cache (23 of the 160 CPU seconds of a 100M-row anonymize) with them
                    let options = IpcWriteOptions::default()
                        .try_with_compression(Some(CompressionType::LZ4_FRAME))?;
                    let writer =
                        StreamWriter::try_new_with_options(file.open_writer()?, &schema, options)?;
                    e.insert(Spill {
                        file,
                        writer: Some(writer),
                        starts: Vec::new(),
                    })
                }
            };
            if let Some(writer) = spill.writer.as_mut() {
                writer.write(&compacted(&regrouped)?)?;
                spill.starts.push(starts);
            }
        }
        self.kept_bytes = 0;
        self.reservation.resize(self.codes_bytes());
        Ok(())
    }

    /// Closes the spill files.
    fn finish(&mut self) -> Result<()> {
        for spill in self.spilled.iter_mut().flat_map(|g| g.values_mut()) {
            if let Some(mut writer) = spill.writer.take() {
                writer.finish()?;
                writer.get_mut().finish()?;
            }
        }
        Ok(())
    }
}

/// `batch` with its view columns holding only the bytes their rows use: a slice or scatter of
/// a view array shares its sources' whole buffers, which the IPC writer would write out once
/// per batch. Columns without data buffers (every string inline) are left as they are.
fn compacted(batch: &RecordBatch) -> Result<RecordBatch> {
    let columns: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|column| match column.data_type() {
            DataType::Utf8View if !column.as_string_view().data_buffers().is_empty() => {
                Arc::new(column.as_string_view().gc()) as ArrayRef
            }
            DataType::BinaryView if !column.as_binary_view().data_buffers().is_empty() => {
                Arc::new(column.as_binary_view().gc()) as ArrayRef
            }
            _ => Arc::clone(column),
        })
        .collect();
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// Reads every input partition in its own task, bucketing its rows (see the module docs).
async fn scatter(
    inputs: Vec<SendableRecordBatchStream>,
    schema: SchemaRef,
    settings: Settings,
    ctx: &TaskContext,
) -> Result<Scattered> {
    let Settings {
        seed,
        levels,
        group_rows,
        max_codes,
    } = settings;
    let pool = ctx.memory_pool();
    // at most half a limited pool: the writer and the counters of the written classes, which
    // cannot spill, grow while the shuffle holds its rows, and a pool the shuffle had filled
    // would leave them nothing (a 10M-row Mondrian release, 525K classes, under 2 GiB did)
    let budget = match pool.memory_limit() {
        MemoryLimit::Finite(limit) => limit / 2,
        MemoryLimit::Infinite | MemoryLimit::Unknown => SHUFFLE_MEMORY,
    };
    // each partition its share, in its own task
    let share = budget / inputs.len().max(1);
    let mut tasks = tokio::task::JoinSet::new();
    for (partition, mut input) in inputs.into_iter().enumerate() {
        let codes: Vec<Option<LabelCodes>> = schema
            .fields()
            .iter()
            .map(|f| {
                (f.data_type() == &DataType::Utf8View && max_codes > 0).then(LabelCodes::default)
            })
            .collect();
        let coded: Vec<bool> = codes.iter().map(Option::is_some).collect();
        let mut rows = PartitionRows {
            kept: Vec::new(),
            spilled: vec![HashMap::new()],
            kept_bytes: 0,
            budget: share,
            reservation: MemoryConsumer::new(format!("anon shuffle[{partition}]"))
                .with_can_spill(true)
                .register(pool),
            coded_schema: coded_schema(&schema, &coded),
            codes,
            coded,
            max_codes,
            schema: Arc::clone(&schema),
        };
        let disk = Arc::clone(&ctx.runtime_env().disk_manager);
        tasks.spawn(async move {
            let mut keys = OrderKeys::new(seed, partition);
            let mut pending: Vec<RecordBatch> = Vec::new();
            let mut pending_rows = 0;
            loop {
                let batch = input.next().await.transpose()?;
                let end = batch.is_none();
                if let Some(batch) = batch.filter(|b| b.num_rows() > 0) {
                    pending_rows += batch.num_rows();
                    pending.push(batch);
                }
                if pending_rows > 0 && (end || pending_rows >= group_rows) {
                    let buckets = keys.buckets(pending_rows, levels.fine);
                    let (dest, starts) = bucket_positions(&buckets, 1 << levels.fine);
                    let batch = rows.grouped_coded(&pending, &dest, levels, &disk)?;
                    pending.clear();
                    pending_rows = 0;
                    rows.keep(batch, starts, levels, &disk)?;
                    // the input is read without waiting, so a task would otherwise keep its
                    // thread to the end: yielding lets an idle thread take a partition over
                    tokio::task::yield_now().await;
                }
                if end {
                    break;
                }
            }
            rows.finish()?;
            Ok::<_, DataFusionError>((partition, rows))
        });
    }
    let mut partitions: Vec<Option<PartitionRows>> = Vec::new();
    while let Some(done) = tasks.join_next().await {
        let (partition, rows) =
            done.map_err(|e| DataFusionError::Execution(format!("the shuffle failed: {e}")))??;
        if partitions.len() <= partition {
            partitions.resize_with(partition + 1, || None);
        }
        partitions[partition] = Some(rows);
    }
    Ok(Scattered {
        schema,
        seed,
        levels,
        partitions: partitions.into_iter().flatten().collect(),
    })
}

/// The rows of `batches` (in order) grouped by their `buckets` (stable: each bucket's rows in
/// order, a counting sort) into one batch, and where each bucket starts (`count + 1` offsets).
fn grouped_by_bucket(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    buckets: &[u16],
    count: usize,
) -> Result<(RecordBatch, Vec<u32>)> {
    let (dest, starts) = bucket_positions(buckets, count);
    if let ([batch], 1) = (batches, count) {
        return Ok((batch.clone(), starts));
    }
    Ok((scattered(schema, batches, &dest)?, starts))
}

/// Where a stable counting sort of rows by their `buckets` (among `count`) puts each row,
/// and where each bucket starts (`count + 1` offsets).
fn bucket_positions(buckets: &[u16], count: usize) -> (Vec<u32>, Vec<u32>) {
    let mut starts = vec![0u32; count + 1];
    for &b in buckets {
        starts[b as usize + 1] += 1;
    }
    for i in 0..count {
        starts[i + 1] += starts[i];
    }
    let mut fill = starts.clone();
    let dest: Vec<u32> = buckets
        .iter()
        .map(|&b| {
            let to = fill[b as usize];
            fill[b as usize] += 1;
            to
        })
        .collect();
    (dest, starts)
}

/// The gather: the buckets in order, each permuted fine bucket by fine bucket, as batches.
struct Gather {
    scattered: Scattered,
    /// the next bucket to load
    bucket: usize,
    /// the loaded bucket
    loaded: usize,
    /// the loaded bucket's sources (kept batches and spilled ones read back), each with its
    /// fine buckets' row ranges (relative to the bucket's first fine bucket, as
    /// [`Kept::starts`]) and its partition
    sources: Vec<(RecordBatch, Vec<u32>, usize)>,
    /// per partition, per column, the labels of its codes (see [`PartitionRows`])
    dictionaries: Vec<Vec<Option<StringViewArray>>>,
    /// the next fine bucket of the loaded bucket
    fine: usize,
    /// the current fine bucket's rows in their permuted order, and the next row to pass on
    permuted: Option<RecordBatch>,
    next: usize,
    /// the permutation: the listed row at each position (reused from fine bucket to fine
    /// bucket)
    order: Vec<u32>,
}

impl Gather {
    fn new(scattered: Scattered) -> Self {
        let fine = scattered.levels.per_bucket();
        let dictionaries = scattered
            .partitions
            .iter()
            .map(|p| {
                p.codes
                    .iter()
                    .map(|codes| codes.as_ref().map(LabelCodes::dictionary))
                    .collect()
            })
            .collect();
        Self {
            dictionaries,
            scattered,
            bucket: 0,
            loaded: 0,
            sources: Vec::new(),
            fine,
            permuted: None,
            next: 0,
            order: Vec::new(),
        }
    }

    /// Loads bucket `self.bucket`'s sources: partition by partition, spilled first, then kept.
    fn load(&mut self) -> Result<()> {
        let bucket = self.bucket;
        let per_bucket = self.scattered.levels.per_bucket();
        self.sources.clear();
        self.loaded = bucket;
        self.fine = 0;
        for (p, partition) in self.scattered.partitions.iter().enumerate() {
            let spills = partition
                .spilled
                .iter()
                .filter_map(|g| g.get(&(bucket as u16)));
            for spill in spills {
                let path = spill.file.path().ok_or_else(|| {
                    DataFusionError::Execution("the shuffle needs local spill files".into())
                })?;
                let file = std::fs::File::open(path).map_err(|e| {
                    DataFusionError::Execution(format!("cannot read a shuffle spill file: {e}"))
                })?;
                let reader = StreamReader::try_new(std::io::BufReader::new(file), None)?;
                // SAFETY: this process wrote the file moments ago from valid arrays (the
                // spill files are its own temporary files), so the checks — every string's
                // UTF-8 validated again — would only cost time (5 % of a 10M-row shuffle)
                let reader = unsafe { reader.with_skip_validation(true) };
                for (batch, starts) in reader.zip(&spill.starts) {
                    self.sources.push((batch?, starts.clone(), p));
                }
            }
            for kept in &partition.kept {
                let fine = &kept.starts[bucket * per_bucket..=(bucket + 1) * per_bucket];
                if fine[0] < fine[per_bucket] {
                    self.sources.push((kept.batch.clone(), fine.to_vec(), p));
                }
            }
        }
        Ok(())
    }

    /// Writes fine bucket `self.fine` of the loaded bucket out in its permuted order: its rows
    /// listed source by source, each in order (the same whether or not they were spilled),
    /// are permuted by a Fisher–Yates shuffle drawn from the seed and the fine bucket (see
    /// [`permuted_decoding`]).
    fn permute_fine_bucket(&mut self) -> Result<()> {
        let f = self.fine;
        let (slices, partitions): (Vec<RecordBatch>, Vec<usize>) = self
            .sources
            .iter()
            .filter_map(|(batch, starts, p)| {
                let (start, end) = (starts[f] as usize, starts[f + 1] as usize);
                (start < end).then(|| (batch.slice(start, end - start), *p))
            })
            .unzip();
        let rows = slices.iter().map(|s| s.num_rows()).sum::<usize>();
        // order[p]: the listed row at position p, a uniform permutation (Fisher–Yates)
        let fine_bucket = (self.loaded * self.scattered.levels.per_bucket() + f) as u64;
        let mut rng = SplitMix64(fmix64(self.scattered.seed ^ fmix64(fine_bucket + 1)));
        self.order.clear();
        self.order.extend(0..rows as u32);
        for i in (1..rows).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            self.order.swap(i, j);
        }
        let dictionaries = &self.dictionaries;
        self.permuted = Some(permuted_decoding(
            &self.scattered.schema,
            &slices,
            |source, column| dictionaries[partitions[source]][column].as_ref(),
            &self.order,
        )?);
        self.next = 0;
        self.fine += 1;
        Ok(())
    }

    /// The next batch, or `None` when every bucket is written.
    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let (buckets, per_bucket) = (
            1usize << self.scattered.levels.bits,
            self.scattered.levels.per_bucket(),
        );
        loop {
            if let Some(permuted) = self.permuted.as_ref() {
                if self.next < permuted.num_rows() {
                    let rows = BATCH_ROWS.min(permuted.num_rows() - self.next);
                    let batch = permuted.slice(self.next, rows);
                    self.next += rows;
                    return Ok(Some(batch));
                }
                self.permuted = None;
            }
            if self.fine < per_bucket {
                self.permute_fine_bucket()?;
            } else if self.bucket < buckets {
                self.load()?;
                self.bucket += 1;
            } else {
                self.sources.clear();
                return Ok(None);
            }
        }
    }
}

impl Iterator for Gather {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(batch) => batch.map(Ok),
            Err(e) => {
                // nothing after an error
                self.bucket = 1usize << self.scattered.levels.bits;
                self.fine = self.scattered.levels.per_bucket();
                self.permuted = None;
                Some(Err(e))
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Array;
    use datafusion::arrow::datatypes::UInt64Type;

    #[test]
    fn keys_are_distinct_and_depend_on_the_seed() {
        let collect = |seed, partition| {
            let mut keys = OrderKeys::new(seed, partition);
            let mut all: Vec<u64> = Vec::new();
            for rows in [3, 0, 5] {
                all.extend(keys.next(rows).as_primitive::<UInt64Type>().values().iter());
            }
            all
        };
        let a = collect(1, 0);
        let mut everything = a.clone();
        everything.extend(collect(1, 1));
        everything.sort_unstable();
        everything.dedup();
        assert_eq!(everything.len(), 16);
        assert_eq!(a, collect(1, 0));
        assert_ne!(a, collect(2, 0));
        // a batch boundary does not change a row's key
        let mut whole = OrderKeys::new(1, 0);
        let whole: Vec<u64> = whole.next(8).as_primitive::<UInt64Type>().values().to_vec();
        assert_eq!(a, whole);
        // buckets are the keys' top bits
        let mut keys = OrderKeys::new(1, 0);
        let buckets = keys.buckets(8, 3);
        let expected: Vec<u16> = whole.iter().map(|k| (k >> 61) as u16).collect();
        assert_eq!(buckets, expected);
    }

    /// A partition of fixed batches.
    #[derive(Debug)]
    struct Batches(SchemaRef, Vec<RecordBatch>);

    impl PartitionStream for Batches {
        fn schema(&self) -> &SchemaRef {
            &self.0
        }

        fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
            let batches: Vec<Result<RecordBatch>> = self.1.iter().cloned().map(Ok).collect();
            Box::pin(RecordBatchStreamAdapter::new(
                Arc::clone(&self.0),
                futures::stream::iter(batches),
            ))
        }
    }

    /// The short label of row `id`: 5 values and NULL.
    fn label(id: i64) -> Option<String> {
        (id % 7 != 0).then(|| format!("v{}", id % 5))
    }

    /// 3 partitions of 4 batches of 1,000 rows: (id, text, label), id = the row's number, text
    /// a long string of its own per row, label [`label`].
    fn partitions() -> (SchemaRef, Vec<Arc<dyn PartitionStream>>) {
        use datafusion::arrow::array::Int64Array;
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("text", DataType::Utf8View, false),
            Field::new("label", DataType::Utf8View, true),
        ]));
        let mut id = 0i64;
        let partitions = (0..3)
            .map(|_| {
                let batches = (0..4)
                    .map(|_| {
                        let ids: Vec<i64> = (id..id + 1000).collect();
                        id += 1000;
                        let texts: Vec<String> = ids
                            .iter()
                            .map(|i| format!("a longer text, row {i}"))
                            .collect();
                        RecordBatch::try_new(
                            Arc::clone(&schema),
                            vec![
                                Arc::new(Int64Array::from(ids.clone())),
                                Arc::new(StringViewArray::from_iter_values(texts)),
                                Arc::new(StringViewArray::from_iter(ids.iter().map(|&i| label(i)))),
                            ],
                        )
                        .unwrap()
                    })
                    .collect();
                Arc::new(Batches(Arc::clone(&schema), batches)) as Arc<dyn PartitionStream>
            })
            .collect();
        (schema, partitions)
    }

    /// The ids written by the shuffle of [`partitions`] with `seed` into the buckets of `levels`,
    /// under a memory pool of `pool` bytes (`None`: unbounded), with at most `max_codes` codes
    /// per text column; checks that each row's texts are its own.
    async fn shuffled_ids(
        seed: u64,
        levels: Levels,
        pool: Option<usize>,
        max_codes: usize,
    ) -> Vec<i64> {
        use datafusion::arrow::datatypes::Int64Type;
        use datafusion::execution::memory_pool::FairSpillPool;
        use datafusion::execution::runtime_env::RuntimeEnvBuilder;
        use datafusion::prelude::{SessionConfig, SessionContext};
        let mut runtime = RuntimeEnvBuilder::new();
        if let Some(bytes) = pool {
            runtime = runtime.with_memory_pool(Arc::new(FairSpillPool::new(bytes)));
        }
        let ctx =
            SessionContext::new_with_config_rt(SessionConfig::new(), runtime.build_arc().unwrap());
        let (schema, partitions) = partitions();
        let shuffled = shuffled_in_buckets(schema, partitions, seed, levels, 1500, max_codes);
        let mut stream = shuffled.execute(ctx.task_ctx());
        let mut ids = Vec::new();
        while let Some(batch) = stream.next().await {
            let batch = batch.unwrap();
            assert!(batch.num_rows() <= BATCH_ROWS);
            assert_eq!(batch.schema(), shuffled.schema().clone());
            let texts = batch.column(1).as_string_view();
            let labels = batch.column(2).as_string_view();
            for (row, id) in batch
                .column(0)
                .as_primitive::<Int64Type>()
                .values()
                .iter()
                .enumerate()
            {
                assert_eq!(texts.value(row), format!("a longer text, row {id}"));
                let written = labels.is_valid(row).then(|| labels.value(row).to_string());
                assert_eq!(written, label(*id));
                ids.push(*id);
            }
        }
        ids
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn spilling_does_not_change_the_order_and_keeps_every_row() {
        for (bits, fine) in [(0, 0), (0, 2), (3, 3), (3, 6)] {
            let levels = Levels { bits, fine };
            let free = shuffled_ids(5, levels, None, MAX_CODES).await;
            // 64 KiB: every few batches the kept rows are spilled to the bucket files
            let spilled = shuffled_ids(5, levels, Some(64 << 10), MAX_CODES).await;
            assert_eq!(free, spilled, "{levels:?}");
            // nothing coded; and the 4,000 texts of a partition outgrowing 2,500 codes in its
            // second group (1,500 rows a group, 1,000 a batch), after the first was kept (and,
            // under 64 KiB, spilled) coded
            for (pool, max_codes) in [(None, 0), (None, 2500), (Some(64 << 10), 2500)] {
                let other = shuffled_ids(5, levels, pool, max_codes).await;
                assert_eq!(free, other, "{levels:?} {pool:?} {max_codes}");
            }
            let mut sorted = free.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, (0..12_000).collect::<Vec<i64>>(), "{levels:?}");
            // not the input order, and another seed gives another order
            assert!(free != sorted, "{levels:?}");
            assert!(
                free != shuffled_ids(6, levels, None, MAX_CODES).await,
                "{levels:?}"
            );
            // each row's position is independent of its input position: the rank correlation
            // of 12,000 positions is within 5 standard deviations (1/√(n−1)) of 0
            let n = free.len() as f64;
            let mean = (n - 1.0) / 2.0;
            let (mut sxy, mut sxx) = (0.0, 0.0);
            for (position, &id) in free.iter().enumerate() {
                sxy += (position as f64 - mean) * (id as f64 - mean);
                sxx += (position as f64 - mean).powi(2);
            }
            let correlation = sxy / sxx;
            assert!(
                correlation.abs() < 5.0 / (n - 1.0).sqrt(),
                "{levels:?}: {correlation}"
            );
        }
    }
}
