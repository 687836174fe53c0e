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
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use futures::StreamExt;

use gather_pass::Gather;
use scatter_pass::scatter;

mod gather_pass;
mod scatter_pass;

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
    pub(crate) fn next(&mut self, rows: usize) -> datafusion::arrow::array::ArrayRef {
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

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, RecordBatch, StringViewArray};
    use datafusion::arrow::datatypes::UInt64Type;
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::error::Result;

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
