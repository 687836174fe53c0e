//! [`KeyCounts`]: the written rows of a local release counted by their class key.
//!
//! A local release's lookup gives every row a class key besides its labels
//! ([`CLASS_KEY_FIELD`](crate::local_recode::CLASS_KEY_FIELD)): one integer
//! that determines the labels. Counting the written rows by it costs one table slot a row,
//! where [`ClassCounter`] codes every label column of every row first; the labels are looked
//! up once per key, after the partitions' counts are added up ([`KeyCounts::classes`]),
//! and then grouped by their bytes as the counter groups them, so two keys with the same
//! labels are one class, as a reader of the output sees them.

use datafusion::error::{DataFusionError, Result};
use hashbrown::HashMap;

use super::classes::ClassCounter;
use crate::direct_table::{PREFETCH_DISTANCE, prefetch};
use crate::local_recode::LocalRecodeFunction;

/// Rows per class key: see the module documentation.
#[derive(Debug, Clone)]
pub(crate) struct KeyCounts {
    /// `key << 32 | count`, [`EMPTY`] when empty (a count never reaches `u32::MAX`: it
    /// moves to `overflow` first); linear probing, at most half full
    slots: Vec<u64>,
    len: usize,
    /// 64 − log2(slots): the hash's top bits pick the slot
    shift: u32,
    /// the part of a key's count that outgrew its slot's 32 bits
    overflow: HashMap<u32, u64>,
}

const EMPTY: u64 = u64::MAX;
const COUNT_BITS: u32 = 32;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

impl Default for KeyCounts {
    fn default() -> Self {
        Self::with_slots(1 << 10)
    }
}

impl KeyCounts {
    fn with_slots(slots: usize) -> Self {
        Self {
            slots: vec![EMPTY; slots],
            len: 0,
            shift: 64 - slots.trailing_zeros(),
            overflow: HashMap::new(),
        }
    }

    #[inline]
    fn slot(&self, key: u32) -> usize {
        // Fibonacci hashing: the multiplication spreads the low bits into the top ones
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// Counts one row for each of `keys`.
    pub(crate) fn count(&mut self, keys: &[u32]) {
        for (i, &key) in keys.iter().enumerate() {
            // the slots are spread over the table: fetch a few rows ahead
            if let Some(&ahead) = keys.get(i + PREFETCH_DISTANCE) {
                let slot = self.slot(ahead);
                prefetch(&self.slots[slot]);
            }
            self.add(key, 1);
        }
    }

    /// Adds `rows` rows to `key`'s count.
    #[inline]
    fn add(&mut self, key: u32, rows: u64) {
        let tag = (key as u64) << COUNT_BITS;
        let mask = self.slots.len() - 1;
        let mut i = self.slot(key);
        loop {
            let entry = self.slots[i];
            if entry == EMPTY || entry & !COUNT_MASK == tag {
                let counted = if entry == EMPTY {
                    self.len += 1;
                    0
                } else {
                    entry & COUNT_MASK
                };
                let total = counted + rows;
                let kept = if total >= COUNT_MASK {
                    *self.overflow.entry(key).or_default() += total;
                    0
                } else {
                    total
                };
                self.slots[i] = tag | kept;
                if self.len * 2 > self.slots.len() {
                    self.grow();
                }
                return;
            }
            i = (i + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let doubled = vec![EMPTY; self.slots.len() * 2];
        let old = std::mem::replace(&mut self.slots, doubled);
        self.shift -= 1;
        let mask = self.slots.len() - 1;
        for entry in old.into_iter().filter(|&e| e != EMPTY) {
            let mut i = self.slot((entry >> COUNT_BITS) as u32);
            while self.slots[i] != EMPTY {
                i = (i + 1) & mask;
            }
            self.slots[i] = entry;
        }
    }

    /// Every key counted, with its rows.
    fn entries(&self) -> impl Iterator<Item = (u32, u64)> + '_ {
        self.slots.iter().filter(|&&e| e != EMPTY).map(|&entry| {
            let key = (entry >> COUNT_BITS) as u32;
            let overflow = self.overflow.get(&key).copied().unwrap_or(0);
            (key, (entry & COUNT_MASK) + overflow)
        })
    }

    /// Adds `other`'s counts to these.
    pub(crate) fn merge(&mut self, other: &KeyCounts) {
        for (key, rows) in other.entries() {
            self.add(key, rows);
        }
    }

    /// Bytes held.
    pub(crate) fn memory_size(&self) -> usize {
        self.slots.capacity() * size_of::<u64>() + self.overflow.capacity() * 16
    }

    /// The classes of the rows counted, grouped by the labels `labels` gives their keys (in
    /// key order, so the same counts give the same classes).
    pub(crate) fn classes(&self, labels: &dyn KeyLabels) -> Result<ClassCounter> {
        let width = labels.width();
        let mut entries: Vec<(u32, u64)> = self.entries().collect();
        entries.sort_unstable_by_key(|&(key, _)| key);
        let mut classes = ClassCounter::new(width);
        // per column, the counter's code of each of the release's label codes, once known
        let mut counter_codes: Vec<Vec<u32>> = (0..width)
            .map(|q| vec![u32::MAX; labels.label_count(q)])
            .collect();
        let mut codes = vec![0u32; width];
        for (key, rows) in entries {
            let missing = || {
                DataFusionError::Internal(format!(
                    "class key {key} of a written row has no labels in the release"
                ))
            };
            if !labels.key_codes(key, &mut codes) {
                return Err(missing());
            }
            for (q, code) in codes.iter_mut().enumerate() {
                let known = counter_codes[q]
                    .get_mut(*code as usize)
                    .ok_or_else(missing)?;
                if *known == u32::MAX {
                    let label = labels.label(q, *code).ok_or_else(missing)?;
                    *known = classes.intern_label(q, label);
                }
                *code = *known;
            }
            let class = classes.intern_codes(&codes);
            classes.add_rows(class, rows);
        }
        Ok(classes)
    }
}

/// What a class key means: per label column, the code of its label, and each code's label.
pub(crate) trait KeyLabels {
    /// The label columns.
    fn width(&self) -> usize;
    /// How many label codes column `column` has.
    fn label_count(&self, column: usize) -> usize;
    /// The label codes of key `key`, one per column, into `codes`; false for a key never
    /// given.
    fn key_codes(&self, key: u32, codes: &mut [u32]) -> bool;
    /// The label of code `code` of column `column` (`Some(None)` for NULL).
    fn label(&self, column: usize, code: u32) -> Option<Option<&[u8]>>;
}

impl KeyLabels for LocalRecodeFunction {
    fn width(&self) -> usize {
        self.raw_types().len()
    }
    fn label_count(&self, column: usize) -> usize {
        LocalRecodeFunction::label_count(self, column)
    }
    fn key_codes(&self, key: u32, codes: &mut [u32]) -> bool {
        self.key_label_codes(key, codes)
    }
    fn label(&self, column: usize, code: u32) -> Option<Option<&[u8]>> {
        LocalRecodeFunction::label(self, column, code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts against a hash map, through growth, a merge and a count past 32 bits.
    #[test]
    fn key_counts_match_a_hash_map() {
        let mut rng = crate::rng::SplitMix64(0x2545_F491_4F6C_DD1D);
        let mut next = move || rng.next_u64();
        let mut reference: HashMap<u32, u64> = HashMap::new();
        let mut counts = KeyCounts::default();
        let mut other = KeyCounts::default();
        for round in 0..20 {
            // few distinct keys, then many, and the largest key allowed
            let keys: Vec<u32> = (0..5000)
                .map(|_| match round % 3 {
                    0 => (next() % 50) as u32,
                    1 => (next() % 100_000) as u32,
                    _ => u32::MAX - (next() % 3) as u32,
                })
                .collect();
            for &key in &keys {
                *reference.entry(key).or_default() += 1;
            }
            if round % 2 == 0 {
                counts.count(&keys);
            } else {
                other.count(&keys);
            }
        }
        // one key past what a slot's 32 bits hold
        let big = (1u64 << 33) + 5;
        other.add(7, big);
        *reference.entry(7).or_default() += big;
        counts.merge(&other);
        let got: HashMap<u32, u64> = counts.entries().collect();
        assert_eq!(got, reference);
        assert_eq!(counts.entries().count(), reference.len(), "each key once");
    }

    /// Keys given by a table: key → one label code per column.
    struct Table {
        codes: Vec<Vec<u32>>,
        labels: Vec<Vec<Option<&'static [u8]>>>,
    }

    impl KeyLabels for Table {
        fn width(&self) -> usize {
            self.labels.len()
        }
        fn label_count(&self, column: usize) -> usize {
            self.labels[column].len()
        }
        fn key_codes(&self, key: u32, codes: &mut [u32]) -> bool {
            match self.codes.get(key as usize) {
                Some(c) => {
                    codes.copy_from_slice(c);
                    true
                }
                None => false,
            }
        }
        fn label(&self, column: usize, code: u32) -> Option<Option<&[u8]>> {
            self.labels[column].get(code as usize).copied()
        }
    }

    /// Keys with the same labels are one class; the sizes add up; a key without labels is an
    /// error naming it.
    #[test]
    fn keys_become_classes_by_their_labels() {
        let mut counts = KeyCounts::default();
        // keys 1 and 3 both mean ("a", NULL) (code 1 of column 1 is a second NULL); key 2
        // means ("b", "x"); key 0 is never counted
        let table = Table {
            codes: vec![vec![1, 0], vec![0, 1], vec![1, 0], vec![0, 2]],
            labels: vec![
                vec![Some(b"a".as_slice()), Some(b"b".as_slice())],
                vec![Some(b"x".as_slice()), None, None],
            ],
        };
        counts.count(&[1, 2, 3, 3, 1, 2, 2]);
        let classes = counts.classes(&table).unwrap();
        let mut sizes: Vec<(Vec<Option<Vec<u8>>>, u64)> = (0..classes.classes() as u32)
            .map(|c| {
                (
                    classes.labels(c).map(|l| l.map(<[u8]>::to_vec)).collect(),
                    classes.size(c),
                )
            })
            .collect();
        sizes.sort();
        assert_eq!(
            sizes,
            vec![
                (vec![Some(b"a".to_vec()), None], 4),
                (vec![Some(b"b".to_vec()), Some(b"x".to_vec())], 3),
            ]
        );
        counts.count(&[9]);
        let error = counts.classes(&table).unwrap_err().to_string();
        assert!(error.contains("class key 9"), "{error}");
    }
}
