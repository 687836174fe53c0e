//! [`ClassLog`]: `(class, value)` entries appended as rows come and bucketed by class when
//! read — the storage under the per-class histograms and distinct-value sets.
//!
//! Entries are appended to fixed-size chunks: a growing `Vec` would copy everything it holds
//! at every doubling into freshly allocated memory, and fresh pages (faulted in and zeroed by
//! the kernel) are the largest single cost of these aggregates on millions of rows. Reading
//! buckets the entries with a counting sort over the dense class indices into one contiguous
//! buffer, which the caller compacts in place (sorting and merging each class) and may put
//! back as the log's new contents. Large logs are bucketed in two passes (to 256 buckets of
//! neighbouring classes, then by class within each bucket, in cache): one pass writes each
//! entry to a random cache line of a buffer far larger than the caches, and took 9.7 % of the
//! cycles of all functions together on 10M rows; two passes take 6.6 % (1,024 buckets in the
//! first pass: 11 %, too many write streams; 128: 8.4 %).

/// Entries a log may hold before it compacts itself for the first time (8M entries, 96 MB).
/// Compacting only pays for values that repeat within a class; for near-unique values (person
/// ids, fine-grained numbers) it sorts everything for nothing, so the first compaction is late:
/// with a smaller threshold, a 5M-row partition of 10M patients compacted its person ids and
/// incomes twice, and all anonymity functions together ran 17 % slower.
pub const MIN_COMPACTION: usize = 1 << 23;

/// The length at which a log compacted from `before` to `after` entries compacts again: at
/// twice its compacted length, or four times when the compaction kept more than half of the
/// entries (near-unique values, which the next compaction will not reduce either), so that such
/// a log sorts each entry about 1.3 times in all instead of twice.
pub fn next_compaction(before: usize, after: usize) -> usize {
    if after.saturating_mul(2) > before {
        after.saturating_mul(4)
    } else {
        after.saturating_mul(2)
    }
}

/// Logs from this many entries, over at least [`TWO_PASS_CLASSES`] classes, are bucketed in
/// two passes (see [`ClassLog::scatter_two_pass`]); below, the bucketed values fit in cache
/// and one pass is faster.
const TWO_PASS_ENTRIES: usize = 1 << 20;
const TWO_PASS_CLASSES: usize = 1 << 14;
/// Buckets of the first pass (a power of two).
const BUCKETS: usize = 1 << 8;

/// Entries of the first chunk; each next chunk is twice as large, up to [`CHUNK`] (small
/// inputs stay small: memory pools can be tight).
const FIRST_CHUNK: usize = 1 << 8;
/// Entries of a full-size chunk.
const CHUNK: usize = 1 << 16;

/// `(class, value)` entries (see module docs).
#[derive(Debug, Default)]
pub struct ClassLog {
    /// classes and values of the entries, chunk by chunk
    chunks: Vec<(Vec<u32>, Vec<u64>)>,
    len: usize,
    /// the log is one chunk already grouped by class (put back after a compaction, nothing
    /// appended since)
    grouped: bool,
    /// reused destination of the counting sort
    spare: Vec<u64>,
}

impl ClassLog {
    pub fn len(&self) -> usize {
        self.len
    }

    /// The chunk to append to, with room for at least one entry.
    fn tail(&mut self) -> &mut (Vec<u32>, Vec<u64>) {
        let full = self
            .chunks
            .last()
            .is_none_or(|(groups, _)| groups.len() == groups.capacity());
        if full {
            let size = self.chunks.last().map_or(FIRST_CHUNK, |(g, _)| {
                (2 * g.capacity()).clamp(FIRST_CHUNK, CHUNK)
            });
            self.chunks
                .push((Vec::with_capacity(size), Vec::with_capacity(size)));
        }
        self.grouped = false;
        let last = self.chunks.len() - 1;
        &mut self.chunks[last]
    }

    #[inline]
    pub fn push(&mut self, group: usize, value: u64) {
        let (groups, values) = self.tail();
        groups.push(group as u32);
        values.push(value);
        self.len += 1;
    }

    /// Appends one entry per row: `groups[i]` with `values[i]`.
    pub fn extend(&mut self, groups: &[usize], values: &[u64]) {
        let (mut groups, mut values) = (groups, &values[..groups.len().min(values.len())]);
        while !values.is_empty() {
            let (chunk_groups, chunk_values) = self.tail();
            let room = chunk_groups.capacity() - chunk_groups.len();
            let n = room.min(values.len());
            chunk_groups.extend(groups[..n].iter().map(|&g| g as u32));
            chunk_values.extend_from_slice(&values[..n]);
            self.len += n;
            (groups, values) = (&groups[n..], &values[n..]);
        }
    }

    /// Empties the log into its values bucketed by class, for classes `0..num_groups`: class
    /// g's values are `values[offsets[g]..offsets[g + 1]]`, in append order.
    pub fn take_grouped(&mut self, num_groups: usize) -> (Vec<usize>, Vec<u64>) {
        let mut offsets = vec![0usize; num_groups + 1];
        for (groups, _) in &self.chunks {
            for &g in groups {
                offsets[g as usize + 1] += 1;
            }
        }
        for g in 0..num_groups {
            offsets[g + 1] += offsets[g];
        }
        let chunks = std::mem::take(&mut self.chunks);
        let values = if self.grouped && chunks.len() == 1 {
            chunks
                .into_iter()
                .next()
                .map(|(_, v)| v)
                .unwrap_or_default()
        } else if self.len >= TWO_PASS_ENTRIES && num_groups >= TWO_PASS_CLASSES {
            self.scatter_two_pass(chunks, &offsets)
        } else {
            let mut grouped = std::mem::take(&mut self.spare);
            if grouped.capacity() < self.len {
                // growing would copy the old contents first: start afresh
                grouped = Vec::new();
            }
            grouped.clear();
            grouped.resize(self.len, 0);
            let mut next = offsets.clone();
            for (groups, values) in &chunks {
                for (&g, &value) in groups.iter().zip(values) {
                    let slot = &mut next[g as usize];
                    grouped[*slot] = value;
                    *slot += 1;
                }
            }
            // the largest chunk's buffer serves the next counting sort
            self.spare = chunks
                .into_iter()
                .map(|(_, v)| v)
                .max_by_key(|v| v.capacity())
                .unwrap_or_default();
            grouped
        };
        self.len = 0;
        self.grouped = false;
        (offsets, values)
    }

    /// The counting sort of [`Self::take_grouped`] in two stable passes, for logs too large
    /// for one: scattering millions of entries straight to their classes writes each to a
    /// random cache line of a buffer far larger than the caches. The first pass scatters to at
    /// most [`BUCKETS`] buckets of neighbouring classes (a few hundred sequential write
    /// streams), the second orders each bucket — tens of thousands of entries, in cache — by
    /// class, in place. Costs 4 bytes per entry more than one pass while it runs (each entry's
    /// class between the passes); each chunk is freed once read.
    fn scatter_two_pass(
        &mut self,
        chunks: Vec<(Vec<u32>, Vec<u64>)>,
        offsets: &[usize],
    ) -> Vec<u64> {
        let num_groups = offsets.len() - 1;
        let class_bits = usize::BITS - (num_groups - 1).leading_zeros();
        let shift = class_bits.saturating_sub(BUCKETS.trailing_zeros());
        let buckets = ((num_groups - 1) >> shift) + 1;
        let bucket_start = |b: usize| offsets[(b << shift).min(num_groups)];
        let mut next: Vec<usize> = (0..buckets).map(bucket_start).collect();
        let mut classes = vec![0u32; self.len];
        let mut values = std::mem::take(&mut self.spare);
        if values.capacity() < self.len {
            values = Vec::new();
        }
        values.clear();
        values.resize(self.len, 0);
        for (groups, chunk_values) in chunks {
            for (&g, &value) in groups.iter().zip(&chunk_values) {
                let slot = &mut next[g as usize >> shift];
                classes[*slot] = g;
                values[*slot] = value;
                *slot += 1;
            }
        }
        let mut scratch = Vec::new();
        let mut cursor = Vec::new();
        for b in 0..buckets {
            let (first, last) = (b << shift, ((b + 1) << shift).min(num_groups));
            let (start, end) = (offsets[first], offsets[last]);
            if end - start <= 1 {
                continue;
            }
            cursor.clear();
            cursor.extend(offsets[first..last].iter().map(|&o| o - start));
            scratch.clear();
            scratch.resize(end - start, 0);
            for (&g, &value) in classes[start..end].iter().zip(&values[start..end]) {
                let slot = &mut cursor[g as usize - first];
                scratch[*slot] = value;
                *slot += 1;
            }
            values[start..end].copy_from_slice(&scratch);
        }
        values
    }

    /// Refills the (empty) log with values grouped by class: class g gets
    /// `values[offsets[g] - offsets[0]..offsets[g + 1] - offsets[0]]`.
    pub fn put_grouped(&mut self, offsets: &[usize], values: Vec<u64>) {
        let base = offsets.first().copied().unwrap_or(0);
        let mut groups = Vec::with_capacity(values.len());
        for (g, w) in offsets.windows(2).enumerate() {
            groups.extend(std::iter::repeat_n(g as u32, w[1] - w[0]));
        }
        debug_assert_eq!(groups.len(), values.len());
        debug_assert!(offsets.last().is_none_or(|&end| end - base == values.len()));
        self.len = values.len();
        self.chunks = vec![(groups, values)];
        self.grouped = true;
    }

    /// Rewrites every value in place (the classes stay as they are).
    pub fn map_values(&mut self, f: impl Fn(u64) -> u64) {
        for (_, values) in &mut self.chunks {
            for value in values.iter_mut() {
                *value = f(*value);
            }
        }
    }

    pub fn size(&self) -> usize {
        self.chunks
            .iter()
            .map(|(g, v)| g.capacity() * size_of::<u32>() + v.capacity() * size_of::<u64>())
            .sum::<usize>()
            + self.chunks.capacity() * size_of::<(Vec<u32>, Vec<u64>)>()
            + self.spare.capacity() * size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_unique_logs_compact_less_often() {
        // 100 entries compacted to 40 (repeating values): again at 2 × 40
        assert_eq!(next_compaction(100, 40), 80);
        // exactly half kept still counts as repeating
        assert_eq!(next_compaction(100, 50), 100);
        // 100 → 90 (near-unique): again at 4 × 90
        assert_eq!(next_compaction(100, 90), 360);
        assert_eq!(next_compaction(0, 0), 0);
    }

    #[test]
    fn two_pass_buckets_like_one_pass() {
        // enough entries and classes for the two-pass sort; classes from a simple LCG, some
        // classes empty (only even classes below 2,000 are used), values = append position
        let (entries, classes) = (TWO_PASS_ENTRIES + 12_345, 3 * TWO_PASS_CLASSES + 5);
        let mut state = 12345u64;
        let mut class_of = |_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let c = (state >> 33) as usize % classes;
            if c < 2000 { c & !1 } else { c }
        };
        let groups: Vec<usize> = (0..entries).map(&mut class_of).collect();
        let values: Vec<u64> = (0..entries as u64).collect();
        let mut log = ClassLog::default();
        log.extend(&groups, &values);
        let (offsets, grouped) = log.take_grouped(classes);
        // reference: each class's positions, in order
        let mut want: Vec<Vec<u64>> = vec![Vec::new(); classes];
        for (i, &g) in groups.iter().enumerate() {
            want[g].push(i as u64);
        }
        assert_eq!(offsets.len(), classes + 1);
        for (g, w) in want.iter().enumerate() {
            assert_eq!(&grouped[offsets[g]..offsets[g + 1]], &w[..], "class {g}");
        }
        // and again after reuse of the buffers
        log.extend(&groups[..TWO_PASS_ENTRIES], &values[..TWO_PASS_ENTRIES]);
        let (offsets, grouped) = log.take_grouped(classes);
        assert_eq!(offsets[classes], TWO_PASS_ENTRIES);
        let g = groups[7];
        let first: Vec<u64> = (0..TWO_PASS_ENTRIES as u64)
            .filter(|&i| groups[i as usize] == g)
            .collect();
        assert_eq!(&grouped[offsets[g]..offsets[g + 1]], &first[..]);
    }

    #[test]
    fn buckets_by_class_in_append_order() {
        // more entries than a chunk: class g gets the values v with v % 3 == g, in order
        let mut log = ClassLog::default();
        let n = CHUNK as u64 * 2 + 5;
        let groups: Vec<usize> = (0..n).map(|v| (v % 3) as usize).collect();
        let values: Vec<u64> = (0..n).collect();
        log.extend(&groups[..10], &values[..10]);
        for i in 10..20 {
            log.push(groups[i], values[i]);
        }
        log.extend(&groups[20..], &values[20..]);
        assert_eq!(log.len(), n as usize);
        let (offsets, grouped) = log.take_grouped(3);
        assert_eq!(log.len(), 0);
        for g in 0..3 {
            let class = &grouped[offsets[g]..offsets[g + 1]];
            let want: Vec<u64> = (0..n).filter(|v| v % 3 == g as u64).collect();
            assert_eq!(class, &want[..], "class {g}");
        }
        // put back the last two classes only, renumbered, then append to class 0
        log.put_grouped(&offsets[1..], grouped[offsets[1]..].to_vec());
        log.push(0, 7);
        let (offsets, grouped) = log.take_grouped(2);
        let class0 = &grouped[offsets[0]..offsets[1]];
        assert_eq!(class0.last(), Some(&7));
        assert_eq!(class0.len(), (n as usize - 2) / 3 + 1 + 1);
        assert_eq!(offsets[2] - offsets[1], (n as usize) / 3);
    }
}
