//! The shuffle's first pass, the scatter: every partition's rows grouped by fine bucket, their
//! text columns coded, kept within the partition's share of the budget and spilled beyond it
//! (see the module documentation of `publish/shuffle`).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, RecordBatchOptions, UInt16Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::ipc::CompressionType;
use datafusion::arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryReservation};
use datafusion::execution::spill_file::{SpillFile, SpillWriter};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use futures::StreamExt;

use crate::label_codes::LabelCodes;
use crate::publish::scatter::{scattered, scattered_column};

use super::{Levels, OrderKeys, SHUFFLE_MEMORY, Settings};

/// A batch kept in memory, its rows grouped by fine bucket (stably: each fine bucket's rows
/// in their input order); `starts[f]..starts[f + 1]` are fine bucket f's rows.
pub(super) struct Kept {
    pub(super) batch: RecordBatch,
    pub(super) starts: Vec<u32>,
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
pub(super) struct PartitionRows {
    pub(super) kept: Vec<Kept>,
    /// per generation (see above), per bucket, the spill file of the rows spilled so far, and
    /// its writer until finished
    pub(super) spilled: Vec<HashMap<u16, Spill>>,
    pub(super) kept_bytes: usize,
    pub(super) budget: usize,
    /// the memory of `kept` and `codes` (held until the gather has written every row)
    pub(super) reservation: MemoryReservation,
    /// per column, the codes of a text column (`None` for other columns)
    pub(super) codes: Vec<Option<LabelCodes>>,
    /// per column, whether it is coded now; the schema of the kept batches
    pub(super) coded: Vec<bool>,
    pub(super) coded_schema: SchemaRef,
    pub(super) max_codes: usize,
    /// the rows' schema
    pub(super) schema: SchemaRef,
}

/// `schema` with the columns `coded` marks as codes (`UInt16`, no NULLs: NULL has a code).
pub(super) fn coded_schema(schema: &SchemaRef, coded: &[bool]) -> SchemaRef {
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

pub(super) struct Spill {
    pub(super) file: Arc<dyn SpillFile>,
    pub(super) writer: Option<StreamWriter<Box<dyn SpillWriter>>>,
    /// per batch written, in order: its fine buckets' row ranges, relative to the bucket's
    /// first fine bucket (as [`Kept::starts`])
    pub(super) starts: Vec<Vec<u32>>,
}

/// The scatter's result.
pub(super) struct Scattered {
    pub(super) schema: SchemaRef,
    pub(super) seed: u64,
    pub(super) levels: Levels,
    pub(super) partitions: Vec<PartitionRows>,
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
pub(super) fn compacted(batch: &RecordBatch) -> Result<RecordBatch> {
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
pub(super) async fn scatter(
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
pub(super) fn grouped_by_bucket(
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
pub(super) fn bucket_positions(buckets: &[u16], count: usize) -> (Vec<u32>, Vec<u32>) {
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
