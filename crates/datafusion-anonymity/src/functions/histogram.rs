//! Per-class value histograms: the shared engine of every function that looks at the
//! distribution of one attribute inside a class (l-diversity in its three forms, t-closeness
//! state, and persons when read off a shared histogram).
//!
//! Values of any Arrow type are interned once into dense codes with DataFusion's own
//! vectorized [`GroupValues`] (the structure its hash aggregation uses for group keys). Each
//! row then appends a `(class, code)` entry to one log shared by all classes: no lookup, no
//! allocation per class, a sequential write. The log is *compacted* — bucketed by class with a
//! counting sort over the dense class indices, each class's codes sorted and their counts
//! summed (or, for a class with many entries for the domain, counted in a dense array) — when
//! the result or state is read, and whenever it has doubled since its last compaction
//! (quadrupled after a compaction that found the values near-unique; never below
//! [`MIN_COMPACTION`] entries), which bounds memory to a small multiple of the distinct
//! `(class, value)` pairs. With hundreds of thousands of classes, per-class structures
//! (inline slots, small maps) cost a cache miss per row and a hash map of pairs a random probe
//! into a table as large as the data; the log's passes stream through memory instead, and
//! measured faster for 2,000 incomes or millions of persons (BENCHMARKS.md). A domain of at
//! most 32 codes is the exception: plain per-class counters (`SmallCounts`, a class's counts
//! in one or two cache lines fetched a few rows ahead, no log to bucket and sort) measured
//! faster than the log for a 16-value disease code (`l_diversity` 0.90×, BENCHMARKS.md); the
//! counts move to the log if the domain grows past them ([`super::small_counts`]).
//!
//! Intermediate state (for multi-phase aggregation and for the whole-table window) is two list
//! columns per class: the distinct values (`List<T>`, a NULL item standing for the NULL
//! count) and their counts (`List<UInt64>`); see [`super::histogram_output`], which also reads
//! the measures off a class's counts.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, StructArray, UInt64Array,
};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::{SortOptions, sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Field, Schema, UInt64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_plan::aggregates::group_values::{GroupValues, new_group_values};
use datafusion::physical_plan::aggregates::order::GroupOrdering;

use super::class_log::{ClassLog, MIN_COMPACTION, next_compaction};
use super::histogram_output::list_pair;
pub use super::histogram_output::{
    GroupedHistograms, HistogramOutput, class_measure, histogram_lists, histogram_state_fields,
    histogram_struct_type,
};
use super::small_counts::SmallCounts;
use crate::packing::direct_table::{PREFETCH_DISTANCE, prefetch};

/// A log entry: the code in the high half, a count below 2^32 in the low half (so that
/// sorting entries sorts by code).
#[inline]
fn log_entry(code: u32, count: u32) -> u64 {
    (u64::from(code) << 32) | u64::from(count)
}

#[inline]
fn entry_code(entry: u64) -> u32 {
    (entry >> 32) as u32
}

#[inline]
fn entry_count(entry: u64) -> u64 {
    entry & u64::from(u32::MAX)
}

/// Appends the log entries of `count` rows of `code`: counts of 2^32 or more (merged states
/// only) take several entries.
#[inline]
fn push_entries(entries: &mut Vec<u64>, code: u32, mut count: u64) {
    while count > u64::from(u32::MAX) {
        entries.push(log_entry(code, u32::MAX));
        count -= u64::from(u32::MAX);
    }
    entries.push(log_entry(code, count as u32));
}

/// Per-class histograms over value codes (see module docs): `(class, code, count)` entries
/// appended as rows come, compacted when read and whenever the log has grown enough since its
/// last compaction (see [`next_compaction`]), so memory stays within a small multiple of the
/// distinct `(class, code)` pairs — or, while the domain is small, in per-class counters
/// ([`SmallCounts`]).
#[derive(Debug)]
struct Histograms {
    /// the counts while the domain is small; `None` once they moved to the log for good
    small: Option<Box<SmallCounts>>,
    log: ClassLog,
    /// compact when the log reaches this length
    limit: usize,
    /// [`MIN_COMPACTION`], smaller in tests
    min_compaction: usize,
    /// NULL count per class (kept out of the log); its length is the number of classes
    nulls: Vec<u64>,
    /// scratch counters by code for compacting large classes
    dense: Vec<u64>,
    /// scratch for the entries of one batch
    batch: Vec<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        Self {
            small: Some(Box::default()),
            log: ClassLog::default(),
            limit: 0,
            min_compaction: MIN_COMPACTION,
            nulls: Vec::new(),
            dense: Vec::new(),
            batch: Vec::new(),
        }
    }
}

impl Histograms {
    fn len(&self) -> usize {
        self.nulls.len()
    }

    fn resize(&mut self, groups: usize) {
        if self.nulls.len() < groups {
            self.nulls.resize(groups, 0);
        }
    }

    /// Makes room in the small counters for every class and `domain` codes, `more` counts to
    /// come, or moves the counts to the log when they would no longer fit there.
    fn fit(&mut self, domain: usize, more: u64) {
        let groups = self.nulls.len();
        match &mut self.small {
            Some(small) if small.fits(groups, domain, more) => small.widen(groups, domain),
            Some(_) => self.move_to_log(),
            None => {}
        }
    }

    /// Moves the small counters' counts into the (empty) log, grouped by class.
    fn move_to_log(&mut self) {
        let Some(small) = self.small.take() else {
            return;
        };
        // nothing goes to the log while the small counters are in use
        debug_assert_eq!(self.log.len(), 0);
        self.restore_all(small.runs(self.nulls.len()));
    }

    #[inline]
    fn add(&mut self, group: usize, code: u32, mut count: u64) {
        if self.small.is_some() {
            self.fit(code as usize + 1, count);
            if let Some(small) = &mut self.small {
                // `fit` checked that the total, hence this counter, stays below 2^32
                small.counts[group * small.stride + code as usize] += count as u32;
                small.total += count;
                return;
            }
        }
        while count > u64::from(u32::MAX) {
            self.log.push(group, log_entry(code, u32::MAX));
            count -= u64::from(u32::MAX);
        }
        self.log.push(group, log_entry(code, count as u32));
    }

    /// One row of count 1 for each `(groups[i], codes[i])`, codes below `domain`.
    fn add_rows(&mut self, groups: &[usize], codes: &[usize], domain: usize) {
        if self.small.is_some() {
            self.fit(domain, groups.len() as u64);
        }
        if let Some(small) = &mut self.small {
            let (stride, counts) = (small.stride, &mut small.counts[..]);
            for (r, (&group, &code)) in groups.iter().zip(codes).enumerate() {
                // a class's counters are a random line of a table larger than the caches:
                // fetch ahead, so that the misses of consecutive rows overlap
                if let Some(&ahead) = groups.get(r + PREFETCH_DISTANCE) {
                    prefetch(&counts[ahead * stride]);
                }
                counts[group * stride + code] += 1;
            }
            small.total += groups.len() as u64;
            return;
        }
        self.batch.clear();
        self.batch
            .extend(codes.iter().map(|&c| log_entry(c as u32, 1)));
        self.log.extend(groups, &self.batch);
    }

    /// Compacts the log if it has grown enough; `domain` bounds the codes.
    fn maybe_compact(&mut self, domain: usize) {
        if self.small.is_none() && self.log.len() >= self.limit.max(self.min_compaction) {
            let before = self.log.len();
            let runs = self.take_runs(domain);
            self.restore_all(runs);
            self.limit = next_compaction(before, self.log.len());
        }
    }

    /// Empties the log into per-class runs of distinct codes with their summed counts, for
    /// every class (codes below `domain`). A class's entries are sorted by code, or, for a
    /// class with many entries for the domain (few large classes of a small domain), counted
    /// in a dense array, so that compaction stays linear there.
    fn take_runs(&mut self, domain: usize) -> GroupedHistograms {
        let num_groups = self.nulls.len();
        if let Some(small) = &mut self.small {
            let runs = small.runs(num_groups);
            **small = SmallCounts::default();
            return runs;
        }
        let (mut offsets, mut entries) = self.log.take_grouped(num_groups);
        // each class's distinct codes and summed counts, the counts written over the entries
        // already read (a class never has more runs than entries)
        let mut codes = Vec::with_capacity(entries.len());
        let (mut read, mut write) = (0, 0);
        for g in 0..num_groups {
            let end = offsets[g + 1];
            let class = &mut entries[read..end];
            if class.len() >= 64 && class.len() >= domain / 4 {
                if self.dense.len() < domain {
                    self.dense.resize(domain, 0);
                }
                for &entry in class.iter() {
                    self.dense[entry_code(entry) as usize] += entry_count(entry);
                }
                for (code, count) in self.dense[..domain].iter_mut().enumerate() {
                    if *count > 0 {
                        codes.push(code as u32);
                        entries[write] = *count;
                        write += 1;
                        *count = 0;
                    }
                }
            } else {
                class.sort_unstable();
                let mut previous = None;
                for i in read..end {
                    let (code, count) = (entry_code(entries[i]), entry_count(entries[i]));
                    if previous == Some(code) {
                        entries[write - 1] += count;
                    } else {
                        codes.push(code);
                        entries[write] = count;
                        write += 1;
                        previous = Some(code);
                    }
                }
            }
            offsets[g + 1] = write;
            read = end;
        }
        entries.truncate(write);
        GroupedHistograms {
            offsets,
            codes,
            counts: entries,
            nulls: Vec::new(),
        }
    }

    /// Renames every code `c` of the log to `renamed[c]`.
    fn rename_codes(&mut self, renamed: &[u32]) {
        if self.small.is_some() {
            // room for every code of the domain (the dictionary may hold codes no counted
            // row had: NULLs, rows filtered out)
            self.fit(renamed.len(), 0);
        }
        if let Some(small) = &mut self.small {
            let stride = small.stride;
            let mut class = vec![0u32; stride];
            for counts in small.counts.chunks_exact_mut(stride) {
                class.fill(0);
                for (code, &count) in counts.iter().enumerate().take(renamed.len()) {
                    class[renamed[code] as usize] = count;
                }
                counts.copy_from_slice(&class);
            }
            return;
        }
        self.log.map_values(|entry| {
            log_entry(
                renamed[entry_code(entry) as usize],
                entry_count(entry) as u32,
            )
        });
    }

    /// Puts compacted runs back into the (empty) log, for the classes from `first` on,
    /// renumbered from 0.
    fn restore(&mut self, runs: &GroupedHistograms, first: usize) {
        let mut offsets = Vec::with_capacity(runs.offsets.len() - first);
        let mut entries = Vec::with_capacity(runs.codes.len() - runs.offsets[first]);
        offsets.push(0);
        for w in runs.offsets[first..].windows(2) {
            for i in w[0]..w[1] {
                push_entries(&mut entries, runs.codes[i], runs.counts[i]);
            }
            offsets.push(entries.len());
        }
        self.limit = 2 * entries.len();
        self.log.put_grouped(&offsets, entries);
    }

    /// [`Self::restore`] of all classes, reusing the runs' count buffer for the entries.
    fn restore_all(&mut self, runs: GroupedHistograms) {
        if runs.counts.iter().any(|&c| c > u64::from(u32::MAX)) {
            // a count needing several entries: the general path
            self.restore(&runs, 0);
            return;
        }
        let GroupedHistograms {
            offsets,
            codes,
            mut counts,
            ..
        } = runs;
        for (entry, &code) in counts.iter_mut().zip(&codes) {
            *entry = log_entry(code, *entry as u32);
        }
        self.limit = 2 * counts.len();
        self.log.put_grouped(&offsets, counts);
    }

    /// Takes the selected classes out, grouped in class order; the others are renumbered
    /// from 0, as `EmitTo::First` requires. `domain` bounds the codes.
    fn drain(&mut self, emit_to: EmitTo, domain: usize) -> GroupedHistograms {
        if matches!(emit_to, EmitTo::First(_)) {
            // the classes that stay are put back into the log
            self.move_to_log();
        }
        let mut runs = self.take_runs(domain);
        runs.nulls = emit_to.take_needed(&mut self.nulls);
        if let EmitTo::First(n) = emit_to {
            self.restore(&runs, n);
            runs.offsets.truncate(n + 1);
            runs.codes.truncate(runs.offsets[n]);
            runs.counts.truncate(runs.offsets[n]);
        } else {
            // release the memory too: DataFusion expects `size` to drop once the state is out
            *self = Self {
                min_compaction: self.min_compaction,
                ..Self::default()
            };
        }
        runs
    }

    fn size(&self) -> usize {
        self.small
            .as_ref()
            .map_or(0, |s| s.counts.capacity() * size_of::<u32>())
            + self.log.size()
            + (self.dense.capacity() + self.nulls.capacity() + self.batch.capacity())
                * size_of::<u64>()
    }
}

/// Dense value codes plus per-class counts for one attribute (see module docs).
pub struct ClassHistograms {
    value_type: DataType,
    output: HistogramOutput,
    dictionary: Box<dyn GroupValues>,
    /// Scratch buffer for the codes of one batch (reused: no per-batch allocation).
    codes: Vec<usize>,
    histograms: Histograms,
}

impl std::fmt::Debug for ClassHistograms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClassHistograms")
            .field("value_type", &self.value_type)
            .field("output", &self.output)
            .field("classes", &self.histograms.len())
            .finish()
    }
}

impl ClassHistograms {
    pub fn try_new(value_type: &DataType, output: HistogramOutput) -> Result<Self> {
        Ok(Self {
            value_type: value_type.clone(),
            output,
            dictionary: new_dictionary(value_type)?,
            codes: Vec::new(),
            histograms: Histograms::default(),
        })
    }

    /// Declares classes up to `total_num_groups` (all empty until values arrive).
    pub fn ensure_groups(&mut self, total_num_groups: usize) -> Result<()> {
        if total_num_groups > u32::MAX as usize {
            return Err(DataFusionError::Execution(format!(
                "too many equivalence classes ({total_num_groups}) for one partition"
            )));
        }
        self.histograms.resize(total_num_groups);
        Ok(())
    }

    /// Adds one row per entry of `values` (counts of 1).
    pub fn update(
        &mut self,
        values: &ArrayRef,
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.ensure_groups(total_num_groups)?;
        self.dictionary
            .intern(std::slice::from_ref(values), &mut self.codes)?;
        let nulls = values.logical_nulls();
        let histograms = &mut self.histograms;
        match (nulls.as_ref(), opt_filter) {
            (None, None) => histograms.add_rows(group_indices, &self.codes, self.dictionary.len()),
            _ => {
                for (row, (&group, &code)) in group_indices.iter().zip(&self.codes).enumerate() {
                    if let Some(filter) = opt_filter
                        && !(filter.is_valid(row) && filter.value(row))
                    {
                        continue;
                    }
                    if nulls.as_ref().is_some_and(|n| n.is_null(row)) {
                        histograms.nulls[group] += 1;
                    } else {
                        histograms.add(group, code as u32, 1);
                    }
                }
            }
        }
        histograms.maybe_compact(self.dictionary.len());
        Ok(())
    }

    /// Merges intermediate state (`values`, `counts` lists; one list pair per row).
    pub fn merge(
        &mut self,
        values: &ArrayRef,
        counts: &ArrayRef,
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.ensure_groups(total_num_groups)?;
        let values = values.as_list::<i32>();
        let counts = counts.as_list::<i32>();
        let offsets = values.value_offsets();
        let (start, end) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
        let items = values.values().slice(start, end - start);
        let item_counts = counts.values().as_primitive::<UInt64Type>();
        let count_offsets = counts.value_offsets();
        self.dictionary
            .intern(std::slice::from_ref(&items), &mut self.codes)?;
        let item_nulls = items.logical_nulls();
        let count_start = count_offsets[0] as usize;
        if items.len() == group_indices.len()
            && item_nulls.is_none()
            && count_start == 0
            && offsets.windows(2).all(|w| w[1] - w[0] == 1)
        {
            // one item per row, as `convert_to_state` makes when partial aggregation is
            // skipped (the common case for many small classes): no offset walking
            let item_counts = &item_counts.values()[..items.len()];
            for ((&group, &code), &count) in group_indices.iter().zip(&self.codes).zip(item_counts)
            {
                if count > 0 {
                    self.histograms.add(group, code as u32, count);
                }
            }
            self.histograms.maybe_compact(self.dictionary.len());
            return Ok(());
        }
        for (row, &group) in group_indices.iter().enumerate() {
            let (lo, hi) = (offsets[row] as usize, offsets[row + 1] as usize);
            let count_lo = count_offsets[row] as usize;
            for (i, item) in (lo..hi).enumerate() {
                let count = item_counts.value(count_lo + i);
                if count == 0 {
                    continue;
                }
                let local = item - start;
                if item_nulls.as_ref().is_some_and(|n| n.is_null(local)) {
                    self.histograms.nulls[group] += count;
                } else {
                    self.histograms.add(group, self.codes[local] as u32, count);
                }
            }
        }
        self.histograms.maybe_compact(self.dictionary.len());
        Ok(())
    }

    /// State of each input row taken as its own class (skipped partial aggregation).
    /// Zero-copy for the values: each row becomes a one-item list over the input array; rows
    /// filtered out get a count of 0, which `merge` ignores.
    pub fn convert_to_state(
        values: &ArrayRef,
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let rows = values.len();
        let offsets = OffsetBuffer::<i32>::from_lengths(std::iter::repeat_n(1, rows));
        let counts: UInt64Array = match opt_filter {
            None => UInt64Array::from_value(1, rows),
            Some(filter) => (0..rows)
                .map(|r| Some(u64::from(filter.is_valid(r) && filter.value(r))))
                .collect(),
        };
        list_pair(Arc::clone(values), counts, offsets)
    }

    /// Drains the classes selected by `emit_to` (grouped, in class order); the remaining
    /// classes are renumbered from 0, as `EmitTo::First` requires.
    pub fn drain(&mut self, emit_to: EmitTo) -> GroupedHistograms {
        self.histograms.drain(emit_to, self.dictionary.len())
    }

    /// The interned values, in code order, leaving the dictionary intact unless everything
    /// is being emitted.
    fn dictionary_values(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let emitted = self.dictionary.emit(EmitTo::All)?;
        let values = emitted.into_iter().next().ok_or_else(|| {
            DataFusionError::Internal("value dictionary emitted no column".into())
        })?;
        if matches!(emit_to, EmitTo::First(_)) {
            // restore the codes for the classes that stay
            self.dictionary
                .intern(std::slice::from_ref(&values), &mut self.codes)?;
        } else {
            self.dictionary = new_dictionary(&self.value_type)?;
        }
        Ok(values)
    }

    /// Drains the selected classes as the `(values, counts)` list pair.
    pub fn state_arrays(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let grouped = self.drain(emit_to);
        let dictionary = self.dictionary_values(emit_to)?;
        histogram_lists(&grouped, &dictionary)
    }

    /// Drains every class as the `(values, counts)` list pair with each class's values in
    /// ascending order (the order `t_closeness_ordered` walks them in; NULL, when present,
    /// last): the codes are renamed to the ranks of their values before the classes are
    /// compacted, which sorts each class by code anyway. `None` (nothing drained) for a
    /// value type Arrow cannot sort.
    fn sorted_state_arrays(&mut self) -> Result<Option<Vec<ArrayRef>>> {
        let values = self.dictionary_values(EmitTo::All)?;
        let sort = SortOptions {
            descending: false,
            nulls_first: true,
        };
        let Ok(order) = sort_to_indices(values.as_ref(), Some(sort), None) else {
            // put the codes back as they were
            self.dictionary
                .intern(std::slice::from_ref(&values), &mut self.codes)?;
            return Ok(None);
        };
        let mut rank = vec![0u32; order.len()];
        for (r, &code) in order.values().iter().enumerate() {
            rank[code as usize] = r as u32;
        }
        self.histograms.rename_codes(&rank);
        let grouped = self.histograms.drain(EmitTo::All, rank.len());
        let sorted = take(values.as_ref(), &order, None)?;
        histogram_lists(&grouped, &sorted).map(Some)
    }

    /// The final value per class, according to [`HistogramOutput`].
    pub fn evaluate_output(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        if self.output == HistogramOutput::Histogram {
            let fields = match histogram_struct_type(&self.value_type) {
                DataType::Struct(fields) => fields,
                _ => unreachable!("histogram_struct_type returns a struct"),
            };
            let sorted = match emit_to {
                EmitTo::All => self.sorted_state_arrays()?,
                EmitTo::First(_) => None,
            };
            let arrays = match sorted {
                Some(arrays) => arrays,
                None => self.state_arrays(emit_to)?,
            };
            return Ok(Arc::new(StructArray::try_new(fields, arrays, None)?));
        }
        let grouped = self.drain(emit_to);
        if matches!(emit_to, EmitTo::All) {
            self.dictionary = new_dictionary(&self.value_type)?;
        }
        let mut scratch = Vec::new();
        let values = (0..grouped.num_groups()).map(|g| {
            class_measure(
                self.output,
                grouped.class_counts(g),
                grouped.nulls[g],
                &mut scratch,
            )
        });
        Ok(if self.output.is_integer() {
            Arc::new(values.map(|v| v.map(|v| v as i64)).collect::<Int64Array>())
        } else {
            Arc::new(values.collect::<Float64Array>())
        })
    }

    pub fn size(&self) -> usize {
        self.dictionary.size() + self.histograms.size() + self.codes.capacity() * size_of::<usize>()
    }
}

/// A fresh value dictionary for `value_type`.
pub fn new_dictionary(value_type: &DataType) -> Result<Box<dyn GroupValues>> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "value",
        value_type.clone(),
        true,
    )]));
    new_group_values(schema, &GroupOrdering::None)
}

/// A [`GroupsAccumulator`] over one [`ClassHistograms`] (argument 0; further arguments, such
/// as the constant `c` of recursive diversity, are ignored).
#[derive(Debug)]
pub struct HistogramGroupsAccumulator {
    inner: ClassHistograms,
}

impl HistogramGroupsAccumulator {
    pub fn try_new(value_type: &DataType, output: HistogramOutput) -> Result<Self> {
        Ok(Self {
            inner: ClassHistograms::try_new(value_type, output)?,
        })
    }
}

impl GroupsAccumulator for HistogramGroupsAccumulator {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .update(&values[0], group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.inner.evaluate_output(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state_arrays(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.inner
            .merge(&values[0], &values[1], group_indices, total_num_groups)
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        ClassHistograms::convert_to_state(&values[0], opt_filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// Class g's (code, count) pairs of a drained histogram, sorted by code.
    fn class_map(grouped: &GroupedHistograms, g: usize) -> BTreeMap<u32, u64> {
        let mut map = BTreeMap::new();
        for i in grouped.offsets[g]..grouped.offsets[g + 1] {
            // a code appears once per class
            assert!(map.insert(grouped.codes[i], grouped.counts[i]).is_none());
        }
        map
    }

    /// Pseudo-random adds into `classes` classes over `codes` codes, compacted along the way,
    /// drained in two parts, against a plain map.
    fn check_against_map(classes: usize, codes: u32, min_compaction: usize) {
        let mut histograms = Histograms {
            min_compaction,
            ..Histograms::default()
        };
        let mut expected: Vec<BTreeMap<u32, u64>> = vec![BTreeMap::new(); classes];
        histograms.resize(classes);
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let group = (x >> 33) as usize % classes;
            let code = ((x >> 20) % u64::from(codes)) as u32;
            let count = 1 + (x >> 50) % 3;
            histograms.add(group, code, count);
            *expected[group].entry(code).or_default() += count;
            histograms.maybe_compact(codes as usize);
        }
        // the first classes, then the rest (renumbered from 0)
        let split = classes / 2;
        let first = histograms.drain(EmitTo::First(split), codes as usize);
        assert_eq!(first.num_groups(), split);
        for (g, want) in expected.iter().enumerate().take(split) {
            assert_eq!(&class_map(&first, g), want, "class {g}");
        }
        let rest = histograms.drain(EmitTo::All, codes as usize);
        assert_eq!(rest.num_groups(), classes - split);
        for g in 0..classes - split {
            assert_eq!(
                &class_map(&rest, g),
                &expected[split + g],
                "class {}",
                split + g
            );
        }
    }

    #[test]
    fn many_small_classes_agree_with_a_map() {
        // classes of a few entries per compaction: sorted
        check_against_map(50, 300, 200);
    }

    #[test]
    fn few_large_classes_agree_with_a_map() {
        // thousands of entries per class for 40 codes: counted densely
        check_against_map(3, 40, 5000);
    }

    #[test]
    fn small_domains_agree_with_a_map() {
        // 20 codes: counted in the small counters, then the first half drained (the rest
        // moves to the log)
        check_against_map(50, 20, 200);
        // 32 codes, the most the small counters take
        check_against_map(7, 32, 1 << 20);
    }

    #[test]
    fn a_domain_outgrowing_the_small_counters_moves_to_the_log() {
        // 40 classes; codes 0..6 for 3,000 rows, then 0..45 (past 32: the log) for 3,000
        // more, counted by add_rows; against a plain map
        let mut histograms = Histograms::default();
        let mut expected: Vec<BTreeMap<u32, u64>> = vec![BTreeMap::new(); 40];
        let mut x: u64 = 7;
        for (batch, domain) in [6usize, 6, 6, 45, 45, 45].into_iter().enumerate() {
            let (mut groups, mut codes) = (Vec::new(), Vec::new());
            for _ in 0..1000 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let group = (x >> 33) as usize % 40;
                let code = (x >> 45) as usize % domain;
                groups.push(group);
                codes.push(code);
                *expected[group].entry(code as u32).or_default() += 1;
            }
            histograms.resize(40);
            histograms.add_rows(&groups, &codes, domain);
            assert_eq!(histograms.small.is_some(), batch < 3, "batch {batch}");
        }
        let grouped = histograms.drain(EmitTo::All, 45);
        for (g, want) in expected.iter().enumerate() {
            assert_eq!(&class_map(&grouped, g), want, "class {g}");
        }
    }

    #[test]
    fn small_counters_hand_counts_past_32_bits_to_the_log() {
        // two classes, code 3: 5 rows, then 2^40 merged, then 2 rows; code 1 once
        let mut histograms = Histograms::default();
        histograms.resize(2);
        histograms.add_rows(&[0, 1, 0, 0, 0, 0], &[3, 1, 3, 3, 3, 3], 4);
        assert!(histograms.small.is_some());
        histograms.add(0, 3, 1 << 40);
        assert!(histograms.small.is_none());
        histograms.add_rows(&[0, 0], &[3, 3], 4);
        let grouped = histograms.drain(EmitTo::All, 4);
        assert_eq!(class_map(&grouped, 0), BTreeMap::from([(3, (1 << 40) + 7)]));
        assert_eq!(class_map(&grouped, 1), BTreeMap::from([(1, 1)]));
    }

    #[test]
    fn histogram_output_lists_each_class_in_value_order() {
        // 23 values and NULL: the small counters; 53: the log
        for values in [23, 53] {
            histogram_output_in_value_order(values);
        }
    }

    fn histogram_output_in_value_order(distinct: u64) {
        // Int64 values arriving in no order, in 3 classes over 5 batches, with NULLs and a
        // compaction along the way; expected: each class's distinct values ascending with
        // their counts, then its NULL count
        let mut acc =
            ClassHistograms::try_new(&DataType::Int64, HistogramOutput::Histogram).unwrap();
        acc.histograms.min_compaction = 8;
        let mut expected: Vec<BTreeMap<i64, u64>> = vec![BTreeMap::new(); 3];
        let mut nulls = [0u64; 3];
        let mut x: u64 = 99;
        for _ in 0..5 {
            let mut values = Vec::new();
            let mut groups = Vec::new();
            for _ in 0..40 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let group = (x >> 33) as usize % 3;
                let value = ((x >> 40) % distinct) as i64 * 7 - 50;
                let value = (value % 11 != 0).then_some(value);
                match value {
                    Some(v) => *expected[group].entry(v).or_default() += 1,
                    None => nulls[group] += 1,
                }
                values.push(value);
                groups.push(group);
            }
            let array: ArrayRef = Arc::new(Int64Array::from(values));
            acc.update(&array, &groups, None, 3).unwrap();
        }
        let output = acc.evaluate_output(EmitTo::All).unwrap();
        let output = output.as_struct();
        let (values, counts) = (
            output.column(0).as_list::<i32>(),
            output.column(1).as_list::<i32>(),
        );
        for g in 0..3 {
            let class_values = values.value(g);
            let class_values =
                class_values.as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            let class_counts = counts.value(g);
            let class_counts = class_counts.as_primitive::<UInt64Type>();
            let mut want: Vec<(Option<i64>, u64)> =
                expected[g].iter().map(|(&v, &c)| (Some(v), c)).collect();
            if nulls[g] > 0 {
                want.push((None, nulls[g]));
            }
            let got: Vec<(Option<i64>, u64)> = (0..class_values.len())
                .map(|i| {
                    let v = class_values.is_valid(i).then(|| class_values.value(i));
                    (v, class_counts.value(i))
                })
                .collect();
            assert_eq!(got, want, "class {g}");
        }
    }

    #[test]
    fn counts_beyond_32_bits() {
        // code 100 twice with 3 * 2^32 + 5 in all, code 7 with 2^40, four codes once
        let mut histograms = Histograms::default();
        histograms.resize(1);
        for code in 40..44 {
            histograms.add(0, code, 1);
        }
        histograms.add(0, 100, (1 << 33) + 2);
        histograms.add(0, 100, (1 << 32) + 3);
        histograms.add(0, 7, 1 << 40);
        let grouped = histograms.drain(EmitTo::All, 101);
        let map = class_map(&grouped, 0);
        assert_eq!(map[&100], 3 * (1u64 << 32) + 5);
        assert_eq!(map[&7], 1 << 40);
        assert_eq!(map.len(), 6);
    }
}
