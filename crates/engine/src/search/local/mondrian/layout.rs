//! Mondrian's records: the leaf classes in one flat array of fixed-width records.

use std::ops::Range;

use datafusion::error::Result;

use crate::search::FrequencySet;
use crate::search::local::QiAxis;

/// The leaf classes as records in one flat array, permuted in place so that every region is
/// a contiguous run (as quicksort partitions): a cut reads its region's keys in order instead
/// of looking each leaf class up in d columns of |F| codes (a cache miss each, at millions of
/// leaf classes). A record is d keys (an ordered QI's value rank, a hierarchical QI's leaf
/// code), the leaf class, and its row count in two words.
#[derive(Debug, Clone, Copy)]
pub(super) struct Layout {
    pub(super) d: usize,
    pub(super) width: usize,
}

impl Layout {
    pub(super) fn new(d: usize) -> Self {
        Self { d, width: d + 3 }
    }

    /// Every leaf class's record, in leaf class order; the machine's threads each lay out a
    /// stretch.
    pub(super) fn points(&self, freq: &FrequencySet, axes: &[QiAxis]) -> Result<Vec<u32>> {
        let leaf_codes = freq.leaf_codes();
        let sizes = freq.sizes();
        let width = self.width;
        let mut points = vec![0u32; sizes.len() * width];
        let per_thread = sizes.len().div_ceil(crate::parallel::threads()).max(1);
        crate::parallel::map_scoped(
            "laying out Mondrian's records",
            points.chunks_mut(per_thread * width).enumerate(),
            |(stretch, records)| {
                let first = stretch * per_thread;
                for (i, record) in records.chunks_exact_mut(width).enumerate() {
                    let m = first + i;
                    for (q, axis) in axes.iter().enumerate() {
                        let leaf = leaf_codes[q][m];
                        record[q] = if axis.is_ordered() {
                            axis.rank_of_leaf()[leaf as usize]
                        } else {
                            leaf
                        };
                    }
                    let size = sizes[m];
                    record[self.d..].copy_from_slice(&[m as u32, size as u32, (size >> 32) as u32]);
                }
            },
        )?;
        Ok(points)
    }

    /// The words of the records of `region`.
    pub(super) fn span(&self, region: &Range<usize>) -> Range<usize> {
        region.start * self.width..region.end * self.width
    }

    pub(super) fn len(&self, records: &[u32]) -> usize {
        records.len() / self.width
    }

    pub(super) fn key(&self, records: &[u32], i: usize, q: usize) -> u32 {
        records[i * self.width + q]
    }

    pub(super) fn member(&self, records: &[u32], i: usize) -> u32 {
        records[i * self.width + self.d]
    }

    pub(super) fn size(&self, records: &[u32], i: usize) -> u64 {
        let at = i * self.width + self.d;
        records[at + 1] as u64 | (records[at + 2] as u64) << 32
    }

    pub(super) fn rows(&self, records: &[u32]) -> u64 {
        (0..self.len(records)).map(|i| self.size(records, i)).sum()
    }
}
