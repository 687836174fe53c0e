//! The shuffle's second pass, the gather: bucket by bucket, each fine bucket's rows permuted
//! and decoded (see the module documentation of `publish/shuffle`).

use datafusion::arrow::array::{RecordBatch, StringViewArray};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::error::{DataFusionError, Result};

use crate::label_codes::LabelCodes;
use crate::publish::scatter::permuted_decoding;
use crate::rng::SplitMix64;

use super::scatter_pass::Scattered;
use super::{BATCH_ROWS, fmix64};

/// The gather: the buckets in order, each permuted fine bucket by fine bucket, as batches.
pub(super) struct Gather {
    pub(super) scattered: Scattered,
    /// the next bucket to load
    pub(super) bucket: usize,
    /// the loaded bucket
    pub(super) loaded: usize,
    /// the loaded bucket's sources (kept batches and spilled ones read back), each with its
    /// fine buckets' row ranges (relative to the bucket's first fine bucket, as
    /// [`Kept::starts`]) and its partition
    pub(super) sources: Vec<(RecordBatch, Vec<u32>, usize)>,
    /// per partition, per column, the labels of its codes (see [`PartitionRows`])
    pub(super) dictionaries: Vec<Vec<Option<StringViewArray>>>,
    /// the next fine bucket of the loaded bucket
    pub(super) fine: usize,
    /// the current fine bucket's rows in their permuted order, and the next row to pass on
    pub(super) permuted: Option<RecordBatch>,
    pub(super) next: usize,
    /// the permutation: the listed row at each position (reused from fine bucket to fine
    /// bucket)
    pub(super) order: Vec<u32>,
}

impl Gather {
    pub(super) fn new(scattered: Scattered) -> Self {
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
