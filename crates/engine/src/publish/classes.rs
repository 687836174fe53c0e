//! [`ClassCounter`]: exact grouping of rows by their recoded quasi-identifiers, for
//! publishing.
//!
//! Publishing groups every row twice (once to find the classes to suppress, once to measure
//! what is written), always on the same few short labels. DataFusion's general `GROUP BY`
//! compares each row's strings with the stored group's (`memcmp` per column per row); here
//! each column's labels get dense codes first — a short label is inline in its 16-byte
//! Utf8View view, so the view itself (its unused bytes cleared) is the key of a small map —
//! and the class is then found from the row's codes: by a direct index over the codes while
//! the label counts allow one; else, while the codes and class ids fit one 64-bit word, in a
//! [`DirectTable`] keyed by the packed codes (one slot per row, fetched a few rows ahead);
//! else by hashing the few integers.
//!
//! Grouping is exact: two rows share a class exactly when every column holds the same bytes
//! or both hold NULL (NULL is a value of its own, as in `GROUP BY`). Nothing is hashed
//! without its equality checked.

use std::borrow::Cow;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringViewArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use hashbrown::HashTable;

use crate::direct_table::{DirectTable, PREFETCH_DISTANCE};
use crate::label_codes::LabelCodes;

/// Rows grouped into classes by the exact values of some label columns, with a row count
/// per class; see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct ClassCounter {
    columns: Vec<LabelCodes>,
    /// class ids, hashed by their codes
    table: HashTable<u32>,
    /// the codes of class `c` at `codes[c * n .. (c + 1) * n]`
    codes: Vec<u32>,
    sizes: Vec<u64>,
    /// per column, the codes of the batch being classified
    scratch: Vec<Vec<u32>>,
    /// direct index by the codes in mixed radix, while the label counts allow one
    dense: Option<DenseIndex>,
    /// the codes outgrew [`DENSE_SLOTS`]: classes are found in `packed` from then on
    dense_given_up: bool,
    /// classes by their packed codes, once the direct index is given up
    packed: Option<PackedIndex>,
    /// the codes or classes outgrew 64 bits: classes are found by hashing from then on
    packed_given_up: bool,
    /// the packed keys of the batch being classified
    packed_keys: Vec<u64>,
    /// the direct-index keys of the batch being classified
    keys: Vec<u32>,
    /// the classes of the batch being counted
    batch_classes: Vec<u32>,
}

/// At most 2^22 slots (16 MiB) of direct index per counter.
const DENSE_SLOTS: u64 = 1 << 22;
const EMPTY: u32 = u32::MAX;

/// Classes indexed directly by their codes combined in mixed radix: one load per row, and
/// independent loads, so the processor overlaps their cache misses (a hash probe followed by a
/// check of the class's codes is two dependent misses per row).
#[derive(Debug, Clone)]
struct DenseIndex {
    /// per column, the number of codes the index has room for
    capacity: Vec<u32>,
    /// per column, the multiplier of its code in a key (mixed radix)
    strides: Vec<u32>,
    slots: Vec<u32>,
}

impl DenseIndex {
    fn key(&self, codes: &[u32]) -> usize {
        codes
            .iter()
            .zip(&self.strides)
            .map(|(&code, &stride)| code as usize * stride as usize)
            .sum()
    }

    fn fits(&self, codes: &[u32]) -> bool {
        codes
            .iter()
            .zip(&self.capacity)
            .all(|(&code, &cap)| code < cap)
    }
}

/// Classes by their codes packed into one word, each column in the bits of its room: for
/// label counts whose product is too large for a [`DenseIndex`].
#[derive(Debug, Clone)]
struct PackedIndex {
    /// per column, the bits of its codes (room for 2^bits codes)
    bits: Vec<u32>,
    /// per column, the position of its bits in a key
    shifts: Vec<u32>,
    table: DirectTable,
}

impl PackedIndex {
    fn key(&self, codes: &[u32]) -> u64 {
        codes
            .iter()
            .zip(&self.shifts)
            .map(|(&code, &shift)| (code as u64) << shift)
            .sum()
    }

    fn fits(&self, codes: &[u32]) -> bool {
        codes
            .iter()
            .zip(&self.bits)
            .all(|(&code, &bits)| (code as u64) < 1 << bits)
    }
}

/// Bits for codes below `n`.
fn bits_for(n: u64) -> u32 {
    u64::BITS - n.saturating_sub(1).leading_zeros()
}

fn mix(hash: u64, code: u32) -> u64 {
    (hash ^ u64::from(code)).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

fn finish(hash: u64) -> u64 {
    let hash = hash ^ (hash >> 32);
    let hash = hash.wrapping_mul(0xd6e8_feb8_6659_fd93);
    hash ^ (hash >> 29)
}

/// Whether two rows of codes are equal; a plain loop, as slice equality calls `memcmp` (a
/// function call per probe for a handful of integers: measured at a quarter of the cycles).
#[inline]
fn same_codes(a: &[u32], b: &[u32]) -> bool {
    a.iter().zip(b).fold(true, |same, (x, y)| same & (x == y))
}

fn hash_codes(codes: &[u32]) -> u64 {
    finish(codes.iter().fold(0x243f_6a88_85a3_08d3, |h, &c| mix(h, c)))
}

/// A label column as Utf8View (the recoded columns already are; others are cast).
fn as_views(column: &ArrayRef) -> Result<Cow<'_, StringViewArray>> {
    match column.data_type() {
        DataType::Utf8View => Ok(Cow::Borrowed(column.as_string_view())),
        _ => {
            let cast = cast(column, &DataType::Utf8View).map_err(|e| {
                DataFusionError::Internal(format!(
                    "a class key of type {} cannot be compared as text: {e}",
                    column.data_type()
                ))
            })?;
            Ok(Cow::Owned(cast.as_string_view().clone()))
        }
    }
}

/// The classes of several counters coded alike ([`ClassCounter::joint_codes`]).
#[derive(Debug)]
pub(crate) struct JointCodes {
    /// per column, the label of each code (NULL for NULL)
    pub dictionaries: Vec<StringViewArray>,
    /// the codes of class `c` at `codes[c * width .. (c + 1) * width]`
    pub codes: Vec<u32>,
    /// the same codes packed one class to a word, when they fit 32 bits
    pub packed: Option<PackedCodes>,
}

impl JointCodes {
    /// Bytes held, about (for the memory pool).
    pub(crate) fn memory_size(&self) -> usize {
        self.dictionaries
            .iter()
            .map(|d| d.get_array_memory_size())
            .sum::<usize>()
            + self.codes.capacity() * size_of::<u32>()
            + self
                .packed
                .as_ref()
                .map_or(0, |p| p.words.capacity() * size_of::<u32>())
    }
}

/// Every class's codes in one `u32`: column `q`'s code is `word >> shifts[q] & masks[q]`. A
/// table of a quarter the size or less, which a lookup in random order then finds in the
/// processor's second-level cache more often.
#[derive(Debug)]
pub(crate) struct PackedCodes {
    pub words: Vec<u32>,
    pub shifts: Vec<u32>,
    pub masks: Vec<u32>,
}

impl PackedCodes {
    /// `codes` (`width` a class) packed, if every column's codes below `counts[q]` fit.
    fn new(codes: &[u32], counts: &[usize]) -> Option<Self> {
        let bits: Vec<u32> = counts.iter().map(|&n| bits_for(n as u64)).collect();
        if bits.iter().sum::<u32>() > u32::BITS {
            return None;
        }
        let shifts: Vec<u32> = bits
            .iter()
            .scan(0, |at, &b| {
                let shift = *at;
                *at += b;
                Some(shift)
            })
            .collect();
        let masks: Vec<u32> = bits.iter().map(|&b| ((1u64 << b) - 1) as u32).collect();
        let width = counts.len().max(1);
        let words = codes
            .chunks_exact(width)
            .map(|class| class.iter().zip(&shifts).fold(0, |w, (&c, &s)| w | c << s))
            .collect();
        Some(Self {
            words,
            shifts,
            masks,
        })
    }
}

impl ClassCounter {
    /// A counter of classes over `columns` label columns.
    pub(crate) fn new(columns: usize) -> Self {
        Self {
            columns: vec![LabelCodes::default(); columns],
            table: HashTable::new(),
            codes: Vec::new(),
            sizes: Vec::new(),
            scratch: vec![Vec::new(); columns],
            dense: None,
            dense_given_up: false,
            packed: None,
            packed_given_up: false,
            packed_keys: Vec::new(),
            keys: Vec::new(),
            batch_classes: Vec::new(),
        }
    }

    /// Sets up (or rebuilds, when a column has outgrown its room) the direct index, if the
    /// product of the columns' code counts fits [`DENSE_SLOTS`]. A column's room is its code
    /// count when first built and doubles when outgrown, so labels arriving one batch at a
    /// time cost a few rebuilds, while the index stays as small as the data allow (a smaller
    /// index is more often in cache).
    fn ensure_dense(&mut self) {
        if self.dense_given_up {
            return;
        }
        let counts: Vec<u32> = self.columns.iter().map(|c| c.len().max(1) as u32).collect();
        let capacity: Vec<u32> = match &self.dense {
            Some(dense) if counts.iter().zip(&dense.capacity).all(|(n, cap)| n <= cap) => return,
            Some(dense) => counts
                .iter()
                .zip(&dense.capacity)
                .map(|(&n, &cap)| {
                    if n <= cap {
                        cap
                    } else {
                        n.max(cap.saturating_mul(2))
                    }
                })
                .collect(),
            None => counts,
        };
        let slots = capacity
            .iter()
            .try_fold(1u64, |product, &cap| product.checked_mul(u64::from(cap)));
        let Some(slots) = slots.filter(|&s| s <= DENSE_SLOTS) else {
            self.dense = None;
            self.dense_given_up = true;
            return;
        };
        let strides = capacity
            .iter()
            .scan(1u32, |stride, &cap| {
                let this = *stride;
                *stride = stride.saturating_mul(cap);
                Some(this)
            })
            .collect();
        let mut dense = DenseIndex {
            capacity,
            strides,
            slots: vec![EMPTY; slots as usize],
        };
        let n = self.width();
        for class in 0..self.sizes.len() {
            let key = dense.key(&self.codes[class * n..(class + 1) * n]);
            dense.slots[key] = class as u32;
        }
        self.dense = Some(dense);
    }

    /// Sets up (or rebuilds) the packed index once the direct index is given up, when the
    /// codes and class ids fit 64 bits: each column with room for twice its codes, the table
    /// for twice the classes (so a rebuild, when a batch outgrows it, comes at doublings).
    fn ensure_packed(&mut self) {
        if self.packed_given_up || !self.dense_given_up {
            return;
        }
        let classes = self.sizes.len();
        if let Some(packed) = &self.packed {
            let fits = self
                .columns
                .iter()
                .zip(&packed.bits)
                .all(|(c, &bits)| (c.len() as u64) <= 1 << bits);
            if fits {
                return;
            }
        }
        let bits: Vec<u32> = self
            .columns
            .iter()
            .map(|c| bits_for(2 * c.len().max(8) as u64))
            .collect();
        let key_bits: u32 = bits.iter().sum();
        let room = 2 * classes.max(1 << 12);
        let Some(table) = u32::try_from(room)
            .ok()
            .and_then(|max_class| DirectTable::new(room, key_bits, max_class))
        else {
            self.packed = None;
            self.packed_given_up = true;
            return;
        };
        let shifts = bits
            .iter()
            .scan(0u32, |shift, &b| {
                let this = *shift;
                *shift += b;
                Some(this)
            })
            .collect();
        let mut packed = PackedIndex {
            bits,
            shifts,
            table,
        };
        let n = self.width();
        for class in 0..classes {
            let key = packed.key(&self.codes[class * n..(class + 1) * n]);
            packed.table.insert(key, class as u32);
        }
        self.packed = Some(packed);
    }

    /// A new class with these codes, in the hash table and the direct index.
    fn new_class(&mut self, row: &[u32], hash: u64) -> u32 {
        let n = self.width();
        let class = self.sizes.len() as u32;
        self.codes.extend_from_slice(row);
        self.sizes.push(0);
        let codes = &self.codes;
        self.table
            .insert_unique(hash, class, |&c| hash_codes(&codes[c as usize * n..][..n]));
        match &mut self.dense {
            Some(dense) if dense.fits(row) => {
                let key = dense.key(row);
                dense.slots[key] = class;
            }
            // a label new since the index was built: rebuilt at the next batch
            Some(_) => self.dense = None,
            None => {}
        }
        match &mut self.packed {
            Some(packed) if packed.fits(row) && packed.table.has_room_for(class) => {
                let key = packed.key(row);
                packed.table.insert(key, class);
            }
            // full, or a code past its room: rebuilt larger at the next batch
            Some(_) => self.packed = None,
            None => {}
        }
        class
    }

    /// Bytes held, about (for the memory pool).
    pub(crate) fn memory_size(&self) -> usize {
        let columns: usize = self.columns.iter().map(LabelCodes::memory_size).sum();
        columns
            + self.table.capacity() * (size_of::<u32>() + 1)
            + self.codes.capacity() * size_of::<u32>()
            + self.sizes.capacity() * size_of::<u64>()
            + self.scratch.iter().map(|s| s.capacity() * 4).sum::<usize>()
            + (self.keys.capacity() + self.batch_classes.capacity()) * size_of::<u32>()
            + self.dense.as_ref().map_or(0, |d| d.slots.capacity() * 4)
            + self.packed.as_ref().map_or(0, |p| p.table.memory_size())
            + self.packed_keys.capacity() * size_of::<u64>()
    }

    /// Number of label columns.
    pub(crate) fn width(&self) -> usize {
        self.columns.len()
    }

    /// Number of classes seen (some may have size 0: see [`ClassCounter::classify`]).
    pub(crate) fn classes(&self) -> usize {
        self.sizes.len()
    }

    /// The rows counted in class `class`.
    pub(crate) fn size(&self, class: u32) -> u64 {
        self.sizes[class as usize]
    }

    /// Adds `rows` to class `class`'s count.
    pub(crate) fn add_rows(&mut self, class: u32, rows: u64) {
        self.sizes[class as usize] += rows;
    }

    /// The rows holding each label of column `column` (indexed by label code; a code no
    /// class holds any more counts 0): a `GROUP BY` of that column alone, from the classes.
    pub(crate) fn label_sizes(&self, column: usize) -> Vec<u64> {
        let n = self.width();
        let mut sizes = vec![0u64; self.columns[column].len()];
        for (codes, &size) in self.codes.chunks_exact(n.max(1)).zip(&self.sizes) {
            sizes[codes[column] as usize] += size;
        }
        sizes
    }

    /// The labels of class `class`, one per column (`None` for NULL).
    pub(crate) fn labels(&self, class: u32) -> impl Iterator<Item = Option<&[u8]>> + '_ {
        let n = self.width();
        self.codes[class as usize * n..(class as usize + 1) * n]
            .iter()
            .zip(&self.columns)
            .map(|(&code, column)| column.label(code))
    }

    /// The classes of `counters` (all of `width` columns), one counter's after another, coded
    /// alike: per column, every label once (code `i` at row `i` of its dictionary), and per
    /// class its codes, `width` at a time.
    pub(crate) fn joint_codes(counters: &[&ClassCounter], width: usize) -> JointCodes {
        let mut columns = vec![LabelCodes::default(); width];
        let classes = counters.iter().map(|c| c.classes()).sum::<usize>();
        let mut codes = Vec::with_capacity(classes * width);
        for counter in counters {
            // each column's few labels matched once, then each class by its codes alone
            let remaps: Vec<Vec<u32>> = columns
                .iter_mut()
                .zip(&counter.columns)
                .map(|(joint, own)| {
                    (0..own.len() as u32)
                        .map(|code| joint.intern(own.label(code)))
                        .collect()
                })
                .collect();
            for class in counter.codes.chunks_exact(width.max(1)) {
                codes.extend(
                    class
                        .iter()
                        .zip(&remaps)
                        .map(|(&c, remap)| remap[c as usize]),
                );
            }
        }
        let counts: Vec<usize> = columns.iter().map(LabelCodes::len).collect();
        JointCodes {
            dictionaries: columns.iter().map(LabelCodes::dictionary).collect(),
            packed: (width > 0)
                .then(|| PackedCodes::new(&codes, &counts))
                .flatten(),
            codes,
        }
    }

    /// The class of each of `rows` rows of `columns` (one array per label column) into
    /// `classes`, new classes interned with size 0; nothing is counted.
    pub(crate) fn classify(
        &mut self,
        columns: &[ArrayRef],
        rows: usize,
        classes: &mut Vec<u32>,
    ) -> Result<()> {
        let n = self.width();
        if columns.len() != n {
            return Err(DataFusionError::Internal(format!(
                "{} class key columns given, {n} expected",
                columns.len()
            )));
        }
        for ((column, codes), array) in self.columns.iter_mut().zip(&mut self.scratch).zip(columns)
        {
            let views = as_views(array)?;
            column.encode(views.as_ref(), codes);
        }
        classes.clear();
        classes.reserve(rows);
        self.ensure_dense();
        let mut row = vec![0u32; n];
        if let Some(dense) = &self.dense {
            let mut keys = std::mem::take(&mut self.keys);
            keys.clear();
            keys.resize(rows, 0);
            for (codes, &stride) in self.scratch.iter().zip(&dense.strides) {
                for (key, &code) in keys.iter_mut().zip(codes) {
                    *key += code * stride;
                }
            }
            for (r, &key) in keys.iter().enumerate() {
                let slot = self.dense.as_ref().map_or(EMPTY, |d| d.slots[key as usize]);
                let class = if slot != EMPTY {
                    slot
                } else {
                    // new in the index, but maybe not new (the index may have been dropped)
                    self.hashed_class(r, &mut row)
                };
                classes.push(class);
            }
            self.keys = keys;
            return Ok(());
        }
        self.ensure_packed();
        if let Some(packed) = &self.packed {
            // every code of the batch is below its column's count, so within its bits
            let mut keys = std::mem::take(&mut self.packed_keys);
            keys.clear();
            keys.resize(rows, 0);
            for (codes, &shift) in self.scratch.iter().zip(&packed.shifts) {
                for (key, &code) in keys.iter_mut().zip(codes) {
                    *key += (code as u64) << shift;
                }
            }
            for (r, &key) in keys.iter().enumerate() {
                if let (Some(packed), Some(&ahead)) =
                    (&self.packed, keys.get(r + PREFETCH_DISTANCE))
                {
                    packed.table.prefetch(ahead);
                }
                let class = match self.packed.as_ref().and_then(|p| p.table.get(key)) {
                    Some(class) => class,
                    // new in the index, but maybe not new (the index may have been dropped)
                    None => self.hashed_class(r, &mut row),
                };
                classes.push(class);
            }
            self.packed_keys = keys;
            return Ok(());
        }
        for r in 0..rows {
            classes.push(self.hashed_class(r, &mut row));
        }
        Ok(())
    }

    /// The class of row `r` of the batch's codes (copied into `row`), found by hashing,
    /// interned if new.
    fn hashed_class(&mut self, r: usize, row: &mut [u32]) -> u32 {
        for (value, codes) in row.iter_mut().zip(&self.scratch) {
            *value = codes[r];
        }
        self.find_or_new(row)
    }

    /// The class with these codes, found by hashing, interned with size 0 if new.
    fn find_or_new(&mut self, row: &[u32]) -> u32 {
        let n = self.width();
        let hash = hash_codes(row);
        let codes = &self.codes;
        match self
            .table
            .find(hash, |&c| same_codes(&codes[c as usize * n..][..n], row))
        {
            Some(&class) => class,
            None => self.new_class(row, hash),
        }
    }

    /// Counts `rows` rows of `columns` into their classes.
    pub(crate) fn count(&mut self, columns: &[ArrayRef], rows: usize) -> Result<()> {
        let mut classes = std::mem::take(&mut self.batch_classes);
        self.classify(columns, rows, &mut classes)?;
        for &class in &classes {
            self.sizes[class as usize] += 1;
        }
        self.batch_classes = classes;
        Ok(())
    }

    /// The class with these labels (one per column), interned with size 0 if new.
    pub(crate) fn intern(&mut self, labels: &[Option<&[u8]>]) -> u32 {
        let row: Vec<u32> = self
            .columns
            .iter_mut()
            .zip(labels)
            .map(|(column, label)| column.intern(*label))
            .collect();
        self.find_or_new(&row)
    }

    /// The code of `label` (`None` for NULL) in column `column`, given one if new.
    pub(crate) fn intern_label(&mut self, column: usize, label: Option<&[u8]>) -> u32 {
        self.columns[column].intern(label)
    }

    /// The class with these label codes (one per column, as [`Self::intern_label`] gives
    /// them), interned with size 0 if new.
    pub(crate) fn intern_codes(&mut self, codes: &[u32]) -> u32 {
        self.find_or_new(codes)
    }

    /// The class of this counter with the labels of `other`'s class `class`, if any.
    pub(crate) fn find(&self, other: &ClassCounter, class: u32) -> Option<u32> {
        let n = self.width();
        let row = self
            .columns
            .iter()
            .zip(other.labels(class))
            .map(|(column, label)| column.get(label))
            .collect::<Option<Vec<u32>>>()?;
        self.table
            .find(hash_codes(&row), |&c| {
                same_codes(&self.codes[c as usize * n..][..n], &row)
            })
            .copied()
    }

    /// Adds `other`'s classes and sizes to this counter's (the two may have coded their
    /// labels differently: they are matched by label).
    pub(crate) fn merge(&mut self, other: &ClassCounter) {
        // each column's few labels matched once, then each class by its codes alone
        let remaps: Vec<Vec<u32>> = self
            .columns
            .iter_mut()
            .zip(&other.columns)
            .map(|(mine, theirs)| {
                (0..theirs.len() as u32)
                    .map(|code| mine.intern(theirs.label(code)))
                    .collect()
            })
            .collect();
        let n = self.width();
        let mut row = vec![0u32; n];
        for (class, &size) in other.sizes.iter().enumerate() {
            let codes = &other.codes[class * n..(class + 1) * n];
            for ((mine, &code), remap) in row.iter_mut().zip(codes).zip(&remaps) {
                *mine = remap[code as usize];
            }
            let mine = self.find_or_new(&row);
            self.sizes[mine as usize] += size;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::generalize::common::inline_bytes_key;
    use std::collections::HashMap as StdHashMap;
    use std::sync::Arc;

    use datafusion::arrow::array::{DictionaryArray, StringArray};
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;
    use crate::rng::SplitMix64;

    fn views(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringViewArray::from(values.to_vec()))
    }

    /// Brute force: the classes as label tuples with their counts.
    fn reference(rows: &[Vec<Option<String>>]) -> StdHashMap<Vec<Option<String>>, u64> {
        let mut counts = StdHashMap::new();
        for row in rows {
            *counts.entry(row.clone()).or_insert(0) += 1;
        }
        counts
    }

    fn as_map(counter: &ClassCounter) -> StdHashMap<Vec<Option<String>>, u64> {
        (0..counter.classes() as u32)
            .filter(|&c| counter.size(c) > 0)
            .map(|c| {
                let labels = counter
                    .labels(c)
                    .map(|l| l.map(|b| String::from_utf8(b.to_vec()).unwrap()))
                    .collect();
                (labels, counter.size(c))
            })
            .collect()
    }

    /// Counts random batches drawn from `pool(batch)` with two counters (merged at the end)
    /// and checks them against the brute-force grouping.
    fn check_against_brute_force(
        seed: u64,
        pool: impl Fn(usize) -> Vec<Option<String>>,
    ) -> ClassCounter {
        check_columns_against_brute_force(seed, 3, pool)
    }

    /// [`check_against_brute_force`] with `width` label columns.
    fn check_columns_against_brute_force(
        seed: u64,
        width: usize,
        pool: impl Fn(usize) -> Vec<Option<String>>,
    ) -> ClassCounter {
        let mut rng = SplitMix64(seed);
        let mut rows = Vec::new();
        let mut counter = ClassCounter::new(width);
        let mut other = ClassCounter::new(width);
        for batch in 0..6 {
            let pool = pool(batch);
            let len = 1 + rng.below(3000) as usize;
            let cols: Vec<Vec<Option<&str>>> = (0..width)
                .map(|_| {
                    (0..len)
                        .map(|_| pool[rng.below(pool.len() as u64) as usize].as_deref())
                        .collect()
                })
                .collect();
            for r in 0..len {
                rows.push(cols.iter().map(|c| c[r].map(String::from)).collect());
            }
            let arrays: Vec<ArrayRef> = cols.iter().map(|c| views(c)).collect();
            if batch % 2 == 0 {
                counter.count(&arrays, len).unwrap();
            } else {
                other.count(&arrays, len).unwrap();
            }
        }
        counter.merge(&other);
        assert_eq!(as_map(&counter), reference(&rows));
        counter
    }

    /// Short and long labels (inline and not), NULLs, labels that differ only after the
    /// 4-byte prefix or only in length.
    fn tricky_labels() -> Vec<Option<String>> {
        [
            None,
            Some(""),
            Some("*"),
            Some("1234*"),
            Some("1234**"),
            Some("[20, 30)"),
            Some("exactly12byt"),
            Some("exactly12byz"),
            Some("thirteen-byte"),
            Some("thirteen-byte-and-more"),
            Some("thirteen-bytf"),
        ]
        .into_iter()
        .map(|l| l.map(String::from))
        .collect()
    }

    #[test]
    fn few_labels_match_a_brute_force_grouping() {
        // 11 labels per column: the direct index
        let counter = check_against_brute_force(7, |_| tricky_labels());
        assert!(counter.dense.is_some());
    }

    #[test]
    fn many_labels_match_a_brute_force_grouping() {
        // 3 × 1000 labels need 30 bits: the packed index from the start
        let counter = check_against_brute_force(8, |_| {
            let mut pool = tricky_labels();
            pool.extend((0..1000).map(|i| Some(format!("{i:05}"))));
            pool
        });
        assert!(counter.dense_given_up && !counter.packed_given_up);
    }

    #[test]
    fn labels_past_64_bits_match_a_brute_force_grouping() {
        // 8 × 300 labels need 80 bits: hashed from the start
        let counter = check_columns_against_brute_force(10, 8, |_| {
            let mut pool = tricky_labels();
            pool.extend((0..300).map(|i| Some(format!("{i:05}"))));
            pool
        });
        assert!(counter.packed_given_up);
    }

    #[test]
    fn growing_labels_match_a_brute_force_grouping() {
        // the direct index is rebuilt as labels arrive, then given up for the packed one
        let counter = check_against_brute_force(9, |batch| {
            let mut pool = tricky_labels();
            pool.extend((0..[2, 30, 90, 400, 3000, 10][batch]).map(|i| Some(format!("v{i}"))));
            pool
        });
        assert!(counter.dense_given_up && !counter.packed_given_up);
    }

    #[test]
    fn padding_after_an_inline_label_is_ignored() {
        // "ab" written with garbage after its two bytes (which Arrow's checked constructor
        // refuses, but unchecked writers can produce): the same class as a clean "ab"
        let clean = inline_bytes_key(b"ab").unwrap();
        let dirty = clean | (0xffu128 << 64);
        // SAFETY: both views are inline (length 2), so no buffer is referenced
        let array =
            unsafe { StringViewArray::new_unchecked(vec![clean, dirty].into(), vec![], None) };
        let mut counter = ClassCounter::new(1);
        counter.count(&[Arc::new(array) as ArrayRef], 2).unwrap();
        assert_eq!(counter.classes(), 1);
        assert_eq!(counter.size(0), 2);
    }

    #[test]
    fn other_text_types_group_like_views() {
        let utf8: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("a")]));
        let dictionary: ArrayRef = Arc::new(
            vec![Some("a"), None, Some("b")]
                .into_iter()
                .collect::<DictionaryArray<Int32Type>>(),
        );
        let mut counter = ClassCounter::new(1);
        counter.count(&[utf8], 3).unwrap();
        counter.count(&[dictionary], 3).unwrap();
        let counts = as_map(&counter);
        assert_eq!(counts[&vec![Some("a".to_string())]], 3);
        assert_eq!(counts[&vec![None]], 2);
        assert_eq!(counts[&vec![Some("b".to_string())]], 1);
    }

    #[test]
    fn find_matches_by_label_across_counters() {
        let mut a = ClassCounter::new(2);
        let mut b = ClassCounter::new(2);
        a.intern(&[Some(b"x"), None]);
        let in_a = a.intern(&[Some(b"y"), Some(b"long label of many bytes")]);
        // b codes the same labels in another order
        let in_b = b.intern(&[Some(b"y"), Some(b"long label of many bytes")]);
        let absent = b.intern(&[Some(b"y"), None]);
        assert_eq!(a.find(&b, in_b), Some(in_a));
        assert_eq!(a.find(&b, absent), None);
    }

    #[test]
    fn no_columns_is_one_class() {
        let mut counter = ClassCounter::new(0);
        counter.count(&[], 4).unwrap();
        counter.count(&[], 3).unwrap();
        assert_eq!(counter.classes(), 1);
        assert_eq!(counter.size(0), 7);
    }

    #[test]
    fn joint_codes_give_every_class_of_every_counter_its_labels() {
        // two counters that met the same labels in other orders (so coded them differently),
        // NULL among them, and a third with no classes
        let mut rng = SplitMix64(23);
        let pool = [
            Some("a"),
            Some("b"),
            None,
            Some("a much longer label than twelve"),
        ];
        let mut counters = vec![
            ClassCounter::new(2),
            ClassCounter::new(2),
            ClassCounter::new(2),
        ];
        for counter in &mut counters[..2] {
            let mut column = || -> ArrayRef {
                let values: Vec<Option<&str>> =
                    (0..50).map(|_| pool[rng.below(4) as usize]).collect();
                views(&values)
            };
            let columns = [column(), column()];
            counter.count(&columns, 50).unwrap();
        }
        let refs: Vec<&ClassCounter> = counters.iter().collect();
        let joint = ClassCounter::joint_codes(&refs, 2);
        let label = |column: usize, code: u32| {
            let dictionary = &joint.dictionaries[column];
            dictionary
                .is_valid(code as usize)
                .then(|| dictionary.value(code as usize).as_bytes().to_vec())
        };
        let mut row = 0;
        for counter in &counters {
            for class in 0..counter.classes() as u32 {
                let own: Vec<Option<Vec<u8>>> = counter
                    .labels(class)
                    .map(|l| l.map(<[u8]>::to_vec))
                    .collect();
                let codes = &joint.codes[row * 2..][..2];
                let joint_labels: Vec<Option<Vec<u8>>> =
                    (0..2).map(|q| label(q, codes[q])).collect();
                assert_eq!(joint_labels, own, "class {class}");
                row += 1;
            }
        }
        assert_eq!(joint.codes.len(), row * 2);
        assert!(row > 8, "both counters have several classes");
        // every label once per column
        assert_eq!(joint.dictionaries[0].len(), 4);
        // 4 labels a column: 2 bits each, packed; each word holds the class's codes
        let packed = joint.packed.as_ref().expect("4 bits fit a word");
        assert_eq!(packed.shifts, [0, 2]);
        for (class, &word) in packed.words.iter().enumerate() {
            for q in 0..2 {
                let code = word >> packed.shifts[q] & packed.masks[q];
                assert_eq!(
                    code,
                    joint.codes[class * 2 + q],
                    "class {class}, column {q}"
                );
            }
        }
    }

    #[test]
    fn codes_pack_into_a_word_only_when_they_fit() {
        // 5 columns of 128 labels: 35 bits
        assert!(PackedCodes::new(&[127; 5], &[128; 5]).is_none());
        // of 64: 30 bits, the largest codes intact
        let packed = PackedCodes::new(&[63, 0, 63, 1, 62], &[64; 5]).unwrap();
        assert_eq!(packed.shifts, [0, 6, 12, 18, 24]);
        let unpacked: Vec<u32> = (0..5)
            .map(|q| packed.words[0] >> packed.shifts[q] & packed.masks[q])
            .collect();
        assert_eq!(unpacked, [63, 0, 63, 1, 62]);
        // one label: 0 bits, code 0
        let packed = PackedCodes::new(&[0, 5], &[1, 6]).unwrap();
        assert_eq!(packed.masks, [0, 7]);
        assert_eq!(packed.words, [5]);
    }
}
