//! Group sizes of 64-bit words in bounded memory: sorted runs spilled to disk and merged.
//!
//! The uniqueness check (`publish/uniqueness.rs`) gives every written row one word per
//! measured column (its class and its value's code); the repeated-identifier check
//! (`policy/persons.rs`) one word per row, its identifier. Both need the size of each group
//! of equal words. While the words fit the memory pool they are counted in memory; when the
//! pool refuses more, the words so far are radix sorted, their runs of equal words written to
//! a spill file of the session's disk manager as (word, count) pairs in ascending order, and
//! the memory is freed. At the end the runs are merged (a k-way merge by word) and equal
//! words' counts added: the same group sizes as counting all words at once, exactly, in the
//! memory of one chunk of words and a read buffer per run.
//!
//! The uniqueness check's word is `class << 32 | code`: codes are `u32`, and classes and codes
//! are only ever added, so the words of every run sort the same way whatever the codes and
//! classes given after it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::{BufReader, BufWriter, Read, Write};
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::disk_manager::DiskManager;
use datafusion::execution::spill_file::SpillFile;

/// Bytes of the read buffer of each run while merging.
const RUN_READ_BUFFER: usize = 64 * 1024;

/// Bytes of one spilled group: the word and its count.
const PAIR_BYTES: usize = 12;

/// One column's spilled runs.
#[derive(Default)]
pub struct SpilledRuns {
    runs: Vec<Arc<dyn SpillFile>>,
}

impl SpilledRuns {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Spills the words of `classes` and `codes` (row by row) as one sorted run of (word,
    /// count) pairs; `class_bits` covers every class so far.
    pub fn spill(
        &mut self,
        classes: &[u32],
        codes: &[u32],
        class_bits: u32,
        disk: &Arc<DiskManager>,
    ) -> Result<()> {
        let words: Vec<u64> = classes
            .iter()
            .zip(codes)
            .map(|(&class, &code)| (u64::from(class) << 32) | u64::from(code))
            .collect();
        self.spill_words(words, 32 + class_bits, disk)
    }

    /// Spills `words` (each below 2^`bits`) as one sorted run of (word, count) pairs.
    pub fn spill_words(
        &mut self,
        mut words: Vec<u64>,
        bits: u32,
        disk: &Arc<DiskManager>,
    ) -> Result<()> {
        crate::sort::radix_sort_on_all_cores(&mut words, 0, bits);
        let file = disk.create_tmp_file("anon word runs")?;
        let mut writer = BufWriter::new(file.open_writer()?);
        let io = |e: std::io::Error| DataFusionError::Execution(format!("word runs spill: {e}"));
        for group in words.chunk_by(|a, b| a == b) {
            let mut pair = [0u8; PAIR_BYTES];
            pair[..8].copy_from_slice(&group[0].to_le_bytes());
            pair[8..].copy_from_slice(&(group.len() as u32).to_le_bytes());
            writer.write_all(&pair).map_err(io)?;
        }
        let mut inner = writer.into_inner().map_err(|e| io(e.into_error()))?;
        inner.finish()?;
        self.runs.push(file);
        Ok(())
    }

    /// The sizes of the groups of equal words over every run, in ascending word order, each
    /// passed to `group`.
    pub fn merge(&self, mut group: impl FnMut(usize)) -> Result<()> {
        let mut readers = self
            .runs
            .iter()
            .map(|run| {
                let path = run.path().ok_or_else(|| {
                    DataFusionError::Execution("word runs spill: not a local file".to_string())
                })?;
                let file = std::fs::File::open(path).map_err(|e| {
                    DataFusionError::Execution(format!("word runs spill: cannot read: {e}"))
                })?;
                Ok(BufReader::with_capacity(RUN_READ_BUFFER, file))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut heap = BinaryHeap::with_capacity(readers.len());
        for (run, reader) in readers.iter_mut().enumerate() {
            if let Some((word, count)) = next_pair(reader)? {
                heap.push(Reverse((word, run, count)));
            }
        }
        let mut current: Option<(u64, usize)> = None;
        while let Some(Reverse((word, run, count))) = heap.pop() {
            match &mut current {
                Some((w, size)) if *w == word => *size += count as usize,
                _ => {
                    if let Some((_, size)) = current {
                        group(size);
                    }
                    current = Some((word, count as usize));
                }
            }
            if let Some((word, count)) = next_pair(&mut readers[run])? {
                heap.push(Reverse((word, run, count)));
            }
        }
        if let Some((_, size)) = current {
            group(size);
        }
        Ok(())
    }
}

/// The next (word, count) of a run, `None` at its end.
fn next_pair(reader: &mut impl Read) -> Result<Option<(u64, u32)>> {
    let mut pair = [0u8; PAIR_BYTES];
    match reader.read_exact(&mut pair) {
        Ok(()) => {
            let mut word = [0u8; 8];
            word.copy_from_slice(&pair[..8]);
            let mut count = [0u8; 4];
            count.copy_from_slice(&pair[8..]);
            Ok(Some((u64::from_le_bytes(word), u32::from_le_bytes(count))))
        }
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(DataFusionError::Execution(format!(
            "word runs spill: cannot read: {e}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::disk_manager::DiskManagerBuilder;

    /// Runs spilled in several chunks merge to the group sizes of a hash map's count of all
    /// the (class, code) pairs at once: 20,000 rows of 50 classes and 300 codes in chunks of
    /// 1,000, 7,000 and the rest (the same pair in several runs, pairs alone).
    #[test]
    fn merged_runs_give_the_group_sizes_of_a_brute_force_count() {
        let mut state = 11u64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % n) as u32
        };
        let rows: Vec<(u32, u32)> = (0..20_000).map(|_| (next(50), next(300))).collect();
        let mut reference = std::collections::HashMap::<(u32, u32), usize>::new();
        for &pair in &rows {
            *reference.entry(pair).or_default() += 1;
        }
        let mut expected: Vec<usize> = reference.values().copied().collect();
        expected.sort_unstable();

        let disk = Arc::new(DiskManagerBuilder::default().build().unwrap());
        let mut runs = SpilledRuns::default();
        for chunk in [&rows[..1_000], &rows[1_000..8_000], &rows[8_000..]] {
            let classes: Vec<u32> = chunk.iter().map(|p| p.0).collect();
            let codes: Vec<u32> = chunk.iter().map(|p| p.1).collect();
            runs.spill(&classes, &codes, 6, &disk).unwrap();
        }
        let mut sizes = Vec::new();
        runs.merge(|size| sizes.push(size)).unwrap();
        assert_eq!(sizes.iter().sum::<usize>(), 20_000);
        sizes.sort_unstable();
        assert_eq!(sizes, expected);
    }
}
