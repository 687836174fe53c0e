//! [`SmallCounts`]: per-class counters of a small value domain, the form a class histogram
//! takes while its attribute has few values (see [`super::histogram`]).

use super::histogram_output::GroupedHistograms;

/// Codes of a domain counted per class in [`SmallCounts`] at most (a disease or diagnosis
/// code, a sex, a small category; with a NULL, which takes a code of the dictionary too).
pub(super) const SMALL_DOMAIN: usize = 32;

/// Counter bytes [`SmallCounts`] may always take; beyond, at most [`SMALL_BYTES_PER_ROW`]
/// per row counted (what the log would take, with the copy made when it is read).
const SMALL_BYTES: usize = 64 << 20;
const SMALL_BYTES_PER_ROW: usize = 24;

/// Per-class counters of a small domain: class g's count of code c is
/// `counts[g * stride + c]`, a class's counters in one or two cache lines. A row is one
/// increment there — where the log appends an entry, then buckets and sorts it when read —,
/// and reading is a scan of the counters in class order. For a 16-value disease code in
/// 523K classes of 10M rows this is a random increment per row instead of 24 bytes of log
/// written and read twice. Used while the domain has at most [`SMALL_DOMAIN`] codes, the
/// counts fit 32 bits and the counters are no larger than the log would be (see
/// [`SMALL_BYTES`]); then they move to the log, for good.
#[derive(Debug, Default)]
pub(super) struct SmallCounts {
    /// counters per class: a power of two above the codes seen (0 before the first class)
    pub(super) stride: usize,
    pub(super) counts: Vec<u32>,
    /// rows (or merged counts) added: no counter exceeds it
    pub(super) total: u64,
}

impl SmallCounts {
    /// Whether counters for `groups` classes over `domain` codes, `more` rows to come, stay
    /// within this structure's limits.
    pub(super) fn fits(&self, groups: usize, domain: usize, more: u64) -> bool {
        let stride = domain.next_power_of_two().max(self.stride).max(4);
        let rows = self.total.saturating_add(more);
        domain <= SMALL_DOMAIN
            && rows <= u64::from(u32::MAX)
            && groups.saturating_mul(stride * size_of::<u32>())
                <= SMALL_BYTES.max((rows as usize).saturating_mul(SMALL_BYTES_PER_ROW))
    }

    /// Room for `groups` classes over `domain` codes (the caller checked [`Self::fits`]).
    pub(super) fn widen(&mut self, groups: usize, domain: usize) {
        let stride = domain.next_power_of_two().max(self.stride).max(4);
        if stride != self.stride && !self.counts.is_empty() {
            let mut wider = vec![0u32; groups * stride];
            for (old, new) in self
                .counts
                .chunks_exact(self.stride)
                .zip(wider.chunks_exact_mut(stride))
            {
                new[..old.len()].copy_from_slice(old);
            }
            self.counts = wider;
        }
        self.stride = stride;
        if self.counts.len() < groups * stride {
            self.counts.resize(groups * stride, 0);
        }
    }

    /// Every class's codes present and their counts, codes ascending (what compacting the
    /// log gives).
    pub(super) fn runs(&self, groups: usize) -> GroupedHistograms {
        let mut offsets = Vec::with_capacity(groups + 1);
        let mut codes = Vec::new();
        let mut counts = Vec::new();
        offsets.push(0);
        if self.stride > 0 {
            for class in self.counts.chunks_exact(self.stride).take(groups) {
                for (code, &count) in class.iter().enumerate() {
                    if count > 0 {
                        codes.push(code as u32);
                        counts.push(u64::from(count));
                    }
                }
                offsets.push(codes.len());
            }
        }
        // classes declared but never given a counter row (none: `widen` covers them)
        offsets.resize(groups + 1, codes.len());
        GroupedHistograms {
            offsets,
            codes,
            counts,
            nulls: Vec::new(),
        }
    }
}
