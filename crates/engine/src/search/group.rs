//! The two in-memory kernels of the search: grouping rows by code columns (the classes of a
//! node) and merging per-row histograms into per-class histograms.
//!
//! Both work on plain `u32` code columns, reuse their buffers between calls, and allocate
//! nothing per row.

use hashbrown::{HashMap, HashTable};

/// Slot of an empty dense cell.
const EMPTY: u32 = u32::MAX;

/// The largest dense table (cells of 4 bytes) the grouper will allocate.
const DENSE_CAP: u128 = 1 << 24;

/// One input column of [`Grouper::group`]: the codes of the rows, optionally mapped through
/// `map` (`map[code]`), and the number of distinct (mapped) codes.
#[derive(Clone, Copy)]
pub(crate) struct Column<'a> {
    pub codes: &'a [u32],
    pub map: Option<&'a [u32]>,
    pub cardinality: usize,
}

impl Column<'_> {
    #[inline]
    fn code(&self, row: usize) -> u32 {
        let c = self.codes[row];
        match self.map {
            Some(m) => m[c as usize],
            None => c,
        }
    }
}

/// Assigns dense class ids (in order of first appearance) to rows with equal code tuples.
///
/// The key of a row is its code tuple in mixed radix. When the product of the cardinalities
/// is small the key indexes a dense table directly; when it fits 64 bits it is hashed as a
/// `u64`; otherwise rows are hashed by their codes and compared column by column.
#[derive(Default)]
pub(crate) struct Grouper {
    dense: Vec<u32>,
    packed: HashMap<u64, u32>,
    table: HashTable<u32>,
    keys: Vec<u64>,
}

impl Grouper {
    /// Groups `rows` rows by `columns`. Fills `class_of` (class id of each row) and
    /// `representative` (the first row of each class); returns the number of classes.
    pub fn group(
        &mut self,
        rows: usize,
        columns: &[Column<'_>],
        class_of: &mut Vec<u32>,
        representative: &mut Vec<u32>,
    ) -> usize {
        class_of.clear();
        representative.clear();
        if rows == 0 {
            return 0;
        }
        let mut product: u128 = 1;
        for c in columns {
            product = product.saturating_mul(c.cardinality.max(1) as u128);
        }
        let dense_limit = (4 * rows as u128).clamp(1 << 12, DENSE_CAP);
        if product <= u64::MAX as u128 {
            self.mixed_radix_keys(rows, columns);
            // rows already in key order (the frequency set's canonical order): classes are
            // the runs of equal keys, numbered in order, as first appearance numbers them
            if self.keys.is_sorted() {
                return self.group_runs(class_of, representative);
            }
            if product <= dense_limit {
                self.group_dense(product as usize, class_of, representative)
            } else {
                self.group_packed(class_of, representative)
            }
        } else {
            self.group_hashed(rows, columns, class_of, representative)
        }
    }

    /// `keys[r] = Σ_j code_j(r) · stride_j`, one column at a time (vectorizable loops).
    fn mixed_radix_keys(&mut self, rows: usize, columns: &[Column<'_>]) {
        self.keys.clear();
        self.keys.resize(rows, 0);
        let mut stride = 1u64;
        for c in columns.iter().rev() {
            match c.map {
                Some(map) => {
                    for (k, &code) in self.keys.iter_mut().zip(c.codes) {
                        *k += map[code as usize] as u64 * stride;
                    }
                }
                None => {
                    for (k, &code) in self.keys.iter_mut().zip(c.codes) {
                        *k += code as u64 * stride;
                    }
                }
            }
            stride = stride.wrapping_mul(c.cardinality.max(1) as u64);
        }
    }

    fn group_dense(
        &mut self,
        cells: usize,
        class_of: &mut Vec<u32>,
        representative: &mut Vec<u32>,
    ) -> usize {
        if self.dense.len() < cells {
            self.dense.resize(cells, EMPTY);
        }
        let dense = &mut self.dense;
        class_of.extend(self.keys.iter().enumerate().map(|(row, &key)| {
            let slot = &mut dense[key as usize];
            if *slot == EMPTY {
                *slot = representative.len() as u32;
                representative.push(row as u32);
            }
            *slot
        }));
        // reset only the cells used, so the next call starts clean without an O(cells) fill
        for &row in representative.iter() {
            dense[self.keys[row as usize] as usize] = EMPTY;
        }
        representative.len()
    }

    fn group_runs(&self, class_of: &mut Vec<u32>, representative: &mut Vec<u32>) -> usize {
        let mut class = 0u32;
        class_of.reserve(self.keys.len());
        for (row, &key) in self.keys.iter().enumerate() {
            if row > 0 && key != self.keys[row - 1] {
                class += 1;
            }
            if class as usize == representative.len() {
                representative.push(row as u32);
            }
            class_of.push(class);
        }
        representative.len()
    }

    fn group_packed(&mut self, class_of: &mut Vec<u32>, representative: &mut Vec<u32>) -> usize {
        self.packed.clear();
        let packed = &mut self.packed;
        class_of.extend(self.keys.iter().enumerate().map(|(row, &key)| {
            *packed.entry(key).or_insert_with(|| {
                representative.push(row as u32);
                (representative.len() - 1) as u32
            })
        }));
        representative.len()
    }

    fn group_hashed(
        &mut self,
        rows: usize,
        columns: &[Column<'_>],
        class_of: &mut Vec<u32>,
        representative: &mut Vec<u32>,
    ) -> usize {
        use std::hash::{BuildHasher, Hasher};
        self.table.clear();
        let state = hashbrown::DefaultHashBuilder::default();
        let hash_row = |row: usize| {
            let mut h = state.build_hasher();
            for c in columns {
                h.write_u32(c.code(row));
            }
            h.finish()
        };
        for row in 0..rows {
            let hash = hash_row(row);
            let reps = &*representative;
            let eq = |&class: &u32| {
                let rep = reps[class as usize] as usize;
                columns.iter().all(|c| c.code(rep) == c.code(row))
            };
            let class = match self.table.find(hash, eq) {
                Some(&class) => class,
                None => {
                    let class = representative.len() as u32;
                    representative.push(row as u32);
                    let reps = &*representative;
                    self.table
                        .insert_unique(hash, class, |&c| hash_row(reps[c as usize] as usize));
                    class
                }
            };
            class_of.push(class);
        }
        representative.len()
    }
}

/// Per-class histograms of one sensitive attribute in compressed-row form: class `c`'s
/// entries are `codes[offsets[c]..offsets[c + 1]]` with their `counts`, codes ascending.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Histograms {
    pub offsets: Vec<u32>,
    pub codes: Vec<u32>,
    pub counts: Vec<u64>,
}

impl Histograms {
    /// Class `c`'s `(codes, counts)`.
    #[inline]
    pub fn class(&self, c: usize) -> (&[u32], &[u64]) {
        let range = self.offsets[c] as usize..self.offsets[c + 1] as usize;
        (&self.codes[range.clone()], &self.counts[range])
    }
}

/// Sensitive domains up to this many values keep per-class histograms as dense rows of
/// counts: rolling them up is a plain vectorizable sum, no sorting or merging.
pub(crate) const DENSE_DOMAIN: usize = 16;

/// Per-class histograms of one sensitive attribute: dense rows for small domains, compressed
/// rows otherwise.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClassHistograms {
    /// `counts[c * cardinality + code]`
    Dense {
        cardinality: usize,
        counts: Vec<u64>,
    },
    Sparse(Histograms),
}

impl ClassHistograms {
    /// Histograms of `classes` classes from entries `(class_of_entry[e], codes[e], counts[e])`.
    pub fn build(
        merger: &mut HistogramMerger,
        classes: usize,
        class_of_entry: &[u32],
        codes: &[u32],
        counts: &[u64],
        cardinality: usize,
    ) -> Self {
        if cardinality <= DENSE_DOMAIN {
            let mut dense = vec![0u64; classes * cardinality];
            for ((&c, &code), &n) in class_of_entry.iter().zip(codes).zip(counts) {
                dense[c as usize * cardinality + code as usize] += n;
            }
            ClassHistograms::Dense {
                cardinality,
                counts: dense,
            }
        } else {
            ClassHistograms::Sparse(merger.merge(
                classes,
                class_of_entry,
                codes,
                counts,
                cardinality,
            ))
        }
    }

    /// The histograms of the classes `class_of[c]` that the classes `c` roll up into.
    pub fn roll_up(
        &self,
        merger: &mut HistogramMerger,
        classes: usize,
        class_of: &[u32],
        entry_class: &mut Vec<u32>,
        cardinality: usize,
    ) -> Self {
        match self {
            ClassHistograms::Dense {
                cardinality,
                counts,
            } => {
                let k = *cardinality;
                let mut out = vec![0u64; classes * k];
                for (row, &t) in counts.chunks_exact(k.max(1)).zip(class_of) {
                    let target = &mut out[t as usize * k..(t as usize + 1) * k];
                    for (o, &n) in target.iter_mut().zip(row) {
                        *o += n;
                    }
                }
                ClassHistograms::Dense {
                    cardinality: k,
                    counts: out,
                }
            }
            ClassHistograms::Sparse(h) => {
                entry_class.clear();
                for (c, w) in h.offsets.windows(2).enumerate() {
                    entry_class.extend(std::iter::repeat_n(class_of[c], (w[1] - w[0]) as usize));
                }
                ClassHistograms::Sparse(merger.merge(
                    classes,
                    entry_class,
                    &h.codes,
                    &h.counts,
                    cardinality,
                ))
            }
        }
    }

    /// The number of classes.
    pub fn classes(&self) -> usize {
        match self {
            ClassHistograms::Dense {
                cardinality,
                counts,
            } => counts.len() / (*cardinality).max(1),
            ClassHistograms::Sparse(h) => h.offsets.len().saturating_sub(1),
        }
    }

    /// Class `c`'s `(codes, counts)` with codes ascending and counts > 0; dense rows are
    /// compacted into the buffers.
    #[inline]
    pub fn class<'s>(
        &'s self,
        c: usize,
        codes: &'s mut Vec<u32>,
        counts: &'s mut Vec<u64>,
    ) -> (&'s [u32], &'s [u64]) {
        match self {
            ClassHistograms::Dense {
                cardinality,
                counts: dense,
            } => {
                codes.clear();
                counts.clear();
                let row = &dense[c * cardinality..(c + 1) * cardinality];
                for (code, &n) in row.iter().enumerate() {
                    if n > 0 {
                        codes.push(code as u32);
                        counts.push(n);
                    }
                }
                (codes, counts)
            }
            ClassHistograms::Sparse(h) => h.class(c),
        }
    }
}

/// Merges entries `(class_of_entry[e], codes[e], counts[e])` into per-class histograms with
/// codes ascending, reusing its buffers between calls.
#[derive(Default)]
pub(crate) struct HistogramMerger {
    /// entries bucketed by class
    order: Vec<u32>,
    start: Vec<u32>,
    /// per code: accumulated count (0 = untouched)
    scratch: Vec<u64>,
    touched: Vec<u32>,
}

impl HistogramMerger {
    /// `cardinality` bounds the codes.
    pub fn merge(
        &mut self,
        classes: usize,
        class_of_entry: &[u32],
        codes: &[u32],
        counts: &[u64],
        cardinality: usize,
    ) -> Histograms {
        // counting sort of the entries by class
        self.start.clear();
        self.start.resize(classes + 1, 0);
        for &c in class_of_entry {
            self.start[c as usize + 1] += 1;
        }
        for c in 0..classes {
            self.start[c + 1] += self.start[c];
        }
        self.order.clear();
        self.order.resize(class_of_entry.len(), 0);
        {
            let mut next = self.start.clone();
            for (e, &c) in class_of_entry.iter().enumerate() {
                let slot = &mut next[c as usize];
                self.order[*slot as usize] = e as u32;
                *slot += 1;
            }
        }
        if self.scratch.len() < cardinality {
            self.scratch.resize(cardinality, 0);
        }
        let mut out = Histograms {
            offsets: Vec::with_capacity(classes + 1),
            codes: Vec::with_capacity(class_of_entry.len()),
            counts: Vec::with_capacity(class_of_entry.len()),
        };
        out.offsets.push(0);
        // scanning all codes in order beats sorting the touched ones when the domain is small
        let scan_all = cardinality <= 64;
        for c in 0..classes {
            let members = &self.order[self.start[c] as usize..self.start[c + 1] as usize];
            if let [e] = members {
                out.codes.push(codes[*e as usize]);
                out.counts.push(counts[*e as usize]);
            } else {
                self.touched.clear();
                for &e in members {
                    let code = codes[e as usize];
                    let slot = &mut self.scratch[code as usize];
                    if *slot == 0 {
                        self.touched.push(code);
                    }
                    *slot += counts[e as usize];
                }
                if scan_all {
                    for code in 0..cardinality {
                        let count = std::mem::take(&mut self.scratch[code]);
                        if count > 0 {
                            out.codes.push(code as u32);
                            out.counts.push(count);
                        }
                    }
                } else {
                    self.touched.sort_unstable();
                    for &code in &self.touched {
                        out.codes.push(code);
                        out.counts
                            .push(std::mem::take(&mut self.scratch[code as usize]));
                    }
                }
            }
            out.offsets.push(out.codes.len() as u32);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grouping of rows by tuples, checked against a BTreeMap, for each strategy.
    #[test]
    fn grouper_strategies_agree() {
        let a: Vec<u32> = (0..500u32).map(|i| (i * 7) % 5).collect();
        let b: Vec<u32> = (0..500u32).map(|i| (i * 13) % 11).collect();
        let map: Vec<u32> = (0..11u32).map(|c| c / 3).collect();
        // cardinalities: small (dense), ~2^40 (packed), ~2^70 (hashed)
        for card in [11usize, 1 << 35, 1 << 60] {
            let columns = [
                Column {
                    codes: &a,
                    map: None,
                    cardinality: card.clamp(5, 1 << 35),
                },
                Column {
                    codes: &b,
                    map: Some(&map),
                    cardinality: card,
                },
            ];
            let mut g = Grouper::default();
            let (mut class_of, mut reps) = (Vec::new(), Vec::new());
            // twice, to check that buffers are reset between calls
            for _ in 0..2 {
                let n = g.group(a.len(), &columns, &mut class_of, &mut reps);
                let mut expected = std::collections::BTreeMap::new();
                for r in 0..a.len() {
                    let next = expected.len();
                    expected.entry((a[r], map[b[r] as usize])).or_insert(next);
                }
                assert_eq!(n, expected.len());
                for r in 0..a.len() {
                    let rep = reps[class_of[r] as usize] as usize;
                    assert_eq!((a[rep], map[b[rep] as usize]), (a[r], map[b[r] as usize]));
                    assert_eq!(class_of[r] as usize, expected[&(a[r], map[b[r] as usize])]);
                }
            }
        }
    }

    /// Rows in key order (as the frequency set's canonical order gives them) are grouped by
    /// runs: the same classes, numbered by first appearance, as a BTreeMap gives.
    #[test]
    fn rows_in_key_order_are_grouped_by_runs() {
        let mut rows: Vec<(u32, u32)> = (0..500u32).map(|i| ((i * 7) % 5, (i * 13) % 11)).collect();
        rows.sort_unstable();
        let (a, b): (Vec<u32>, Vec<u32>) = rows.into_iter().unzip();
        let columns = [
            Column {
                codes: &a,
                map: None,
                cardinality: 5,
            },
            Column {
                codes: &b,
                map: None,
                cardinality: 11,
            },
        ];
        let (mut class_of, mut reps) = (Vec::new(), Vec::new());
        let n = Grouper::default().group(a.len(), &columns, &mut class_of, &mut reps);
        let mut expected = std::collections::BTreeMap::new();
        let mut first = Vec::new();
        for r in 0..a.len() {
            let next = expected.len();
            expected.entry((a[r], b[r])).or_insert_with(|| {
                first.push(r as u32);
                next
            });
        }
        assert_eq!(n, expected.len());
        assert_eq!(reps, first);
        for r in 0..a.len() {
            assert_eq!(class_of[r] as usize, expected[&(a[r], b[r])]);
        }
    }

    #[test]
    fn dense_and_sparse_agree() {
        // entries of 3 classes over a domain of 5 (dense) or 40 (sparse) codes, rolled up
        // into 2 classes (0, 1 → 0; 2 → 1)
        let classes = [0u32, 1, 0, 2, 2, 1];
        let codes = [4u32, 0, 4, 1, 3, 2];
        let counts = [1u64, 2, 3, 4, 5, 6];
        let mut merger = HistogramMerger::default();
        let (mut entry, mut b1, mut b2) = (Vec::new(), Vec::new(), Vec::new());
        for card in [5usize, 40] {
            let h = ClassHistograms::build(&mut merger, 3, &classes, &codes, &counts, card);
            assert_eq!(
                card <= DENSE_DOMAIN,
                matches!(h, ClassHistograms::Dense { .. })
            );
            assert_eq!(h.class(0, &mut b1, &mut b2), (&[4u32][..], &[4u64][..]));
            assert_eq!(
                h.class(1, &mut b1, &mut b2),
                (&[0u32, 2][..], &[2u64, 6][..])
            );
            let up = h.roll_up(&mut merger, 2, &[0, 0, 1], &mut entry, card);
            assert_eq!(
                up.class(0, &mut b1, &mut b2),
                (&[0u32, 2, 4][..], &[2u64, 6, 4][..])
            );
            assert_eq!(
                up.class(1, &mut b1, &mut b2),
                (&[1u32, 3][..], &[4u64, 5][..])
            );
        }
    }

    #[test]
    fn merger_sums_and_sorts() {
        // class 0: code 3 ×2 + 1, code 1 ×4; class 1: code 0 ×5 (single entry)
        let classes = [0u32, 1, 0, 0];
        let codes = [3u32, 0, 1, 3];
        let counts = [2u64, 5, 4, 1];
        for card in [4usize, 100] {
            let h = HistogramMerger::default().merge(2, &classes, &codes, &counts, card);
            assert_eq!(h.class(0), (&[1u32, 3][..], &[4u64, 3][..]));
            assert_eq!(h.class(1), (&[0u32][..], &[5u64][..]));
        }
    }
}
