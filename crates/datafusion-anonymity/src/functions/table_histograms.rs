//! [`TableHistograms`]: the histograms of the sensitive attribute in every class, their values
//! interned to dense codes over the whole table, from which the whole-table functions reading
//! a histogram (t-closeness, β-likeness, δ-disclosure) finalize every class
//! ([`super::finalize`]).

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::buffer::ScalarBuffer;
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::EmitTo;
use datafusion::physical_plan::aggregates::group_values::GroupValues;

use super::common::{map_classes, map_ranges};
use super::histogram::new_dictionary;

/// Histograms of every class, with values interned to dense codes over the whole table.
pub struct TableHistograms {
    /// per class: `entries[offsets[c]..offsets[c + 1]]`
    pub offsets: Vec<usize>,
    pub codes: Vec<u32>,
    /// the states' own count buffer (not copied)
    pub counts: ScalarBuffer<u64>,
    /// the table's count of each code
    pub table_counts: Vec<u64>,
    pub table_rows: u64,
    /// the distinct values, in code order (a NULL value is a code of its own)
    pub values: ArrayRef,
}

/// Items interned per call: the interner writes `usize` codes, kept as `u32` (half the memory
/// for the millions of items of near-unique attributes; the list's `i32` offsets bound the
/// items, hence the codes, below 2^31).
const INTERN_CHUNK: usize = 1 << 16;

/// Items below this many per core are interned on the calling thread.
const PARALLEL_ITEMS: usize = 1 << 18;

/// Every item's code in one dictionary of the table's values, codes in order of first
/// appearance. The window runs on one partition, so the items are split over the cores: each
/// part is interned into a dictionary of its own, then the parts' distinct values, part by
/// part, into the table's, which gives each value the code a single pass would (a part's new
/// values come in its own order of first appearance), and the parts' codes are renumbered.
fn intern_table(items: &ArrayRef) -> Result<(Box<dyn GroupValues>, Vec<u32>)> {
    let parts = map_ranges(items.len(), PARALLEL_ITEMS, |range| {
        let part = items.slice(range.start, range.len());
        let mut dictionary = new_dictionary(part.data_type())?;
        let mut codes = Vec::with_capacity(part.len());
        let mut chunk_codes = Vec::with_capacity(INTERN_CHUNK.min(part.len()));
        for chunk_start in (0..part.len()).step_by(INTERN_CHUNK) {
            let chunk = part.slice(chunk_start, INTERN_CHUNK.min(part.len() - chunk_start));
            dictionary.intern(std::slice::from_ref(&chunk), &mut chunk_codes)?;
            codes.extend(chunk_codes.iter().map(|&c| c as u32));
        }
        Ok::<_, DataFusionError>((dictionary, codes))
    });
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Ok((new_dictionary(items.data_type())?, Vec::new()));
    };
    // the first part's codes are the table's already
    let (mut table, mut codes) = first?;
    codes.reserve(items.len() - codes.len());
    let mut renumber = Vec::new();
    for part in parts {
        let (mut dictionary, part_codes) = part?;
        let distinct = dictionary.emit(EmitTo::All)?;
        table.intern(&distinct, &mut renumber)?;
        codes.extend(part_codes.iter().map(|&c| renumber[c as usize] as u32));
    }
    Ok((table, codes))
}

impl TableHistograms {
    /// Reads the `{values, counts}` struct column of `__anon_sa_histogram`.
    pub fn try_new(states: &ArrayRef) -> Result<Self> {
        let states = states.as_struct();
        let values = states.column(0).as_list::<i32>();
        let counts = states.column(1).as_list::<i32>();
        let offsets: Vec<usize> = values.value_offsets().iter().map(|&o| o as usize).collect();
        let (start, end) = (offsets[0], offsets[offsets.len() - 1]);
        let items = values.values().slice(start, end - start);
        let (mut dictionary, codes) = intern_table(&items)?;
        let count_offset = counts.value_offsets()[0] as usize;
        let counts = counts
            .values()
            .as_primitive::<UInt64Type>()
            .values()
            .slice(count_offset, items.len());
        let mut table_counts = vec![0u64; dictionary.len()];
        for (&code, &count) in codes.iter().zip(counts.iter()) {
            table_counts[code as usize] += count;
        }
        let table_rows = table_counts.iter().sum();
        let values = dictionary.emit(EmitTo::All)?.swap_remove(0);
        Ok(Self {
            offsets: offsets.iter().map(|o| o - start).collect(),
            codes,
            counts,
            table_counts,
            table_rows,
            values,
        })
    }

    pub fn num_classes(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn class_range(&self, class: usize) -> std::ops::Range<usize> {
        self.offsets[class]..self.offsets[class + 1]
    }

    /// `value(pairs, class_rows)` of every class, with `pairs` the class's
    /// `(table_count, class_count)` per value present; NULL for an empty class.
    pub fn map_class_pairs(
        &self,
        value: impl Fn(&[(u64, u64)], u64) -> f64 + Sync,
    ) -> Vec<Option<f64>> {
        map_classes(self.num_classes(), |class, pairs: &mut Vec<(u64, u64)>| {
            pairs.clear();
            let range = self.class_range(class);
            pairs.extend(
                self.codes[range.clone()]
                    .iter()
                    .zip(&self.counts[range])
                    .map(|(&code, &count)| (self.table_counts[code as usize], count)),
            );
            let class_rows: u64 = pairs.iter().map(|&(_, c)| c).sum();
            (class_rows > 0).then(|| value(pairs, class_rows))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::Int64Array;

    use super::*;

    #[test]
    fn interning_in_parts_gives_the_codes_of_one_pass() {
        // enough items for several parts on a multi-core machine; later parts bring values
        // of their own and values seen before, and a NULL
        let n = 3 * PARALLEL_ITEMS + 17;
        let items: ArrayRef = Arc::new(Int64Array::from_iter((0..n).map(|i| {
            (i % 1_000 != 7)
                .then(|| ((i as i64 * 7_919) % 5_003) * (1 + i as i64 / PARALLEL_ITEMS as i64))
        })));
        // the reference: one dictionary, one pass
        let mut one = new_dictionary(items.data_type()).unwrap();
        let mut expected = Vec::new();
        one.intern(std::slice::from_ref(&items), &mut expected)
            .unwrap();
        let (mut table, codes) = intern_table(&items).unwrap();
        assert_eq!(codes.len(), n);
        assert!(codes.iter().zip(&expected).all(|(&c, &e)| c as usize == e));
        assert_eq!(
            table.emit(EmitTo::All).unwrap()[0].as_ref(),
            one.emit(EmitTo::All).unwrap()[0].as_ref()
        );
    }
}
