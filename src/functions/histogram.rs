//! Per-class value histograms: the shared engine of every function that looks at the
//! distribution of one attribute inside a class (l-diversity in its three forms, persons,
//! t-closeness state).
//!
//! Values of any Arrow type are interned once into dense codes with DataFusion's own
//! vectorized [`GroupValues`] (the structure its hash aggregation uses for group keys). Each
//! class then keeps its first few distinct codes inline in one cache line ([`InlineSlots`],
//! indexed by class like DataFusion's own accumulators), and only a class with more distinct
//! values than that gets a hash map of its own for the rest. Most equivalence classes are
//! small, so an update is usually one cache line touched, no hashing, no allocation; emitting
//! classes in order is a sequential walk.
//!
//! Intermediate state (for multi-phase aggregation and for the whole-table window) is two list
//! columns per class: the distinct values (`List<T>`, a NULL item standing for the NULL
//! count) and their counts (`List<UInt64>`).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, ListArray, StructArray,
    UInt32Array, UInt64Array,
};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, UInt64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_plan::aggregates::group_values::{GroupValues, new_group_values};
use datafusion::physical_plan::aggregates::order::GroupOrdering;

use super::formulas;

/// What a [`ClassHistograms`] accumulator returns from `evaluate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum HistogramOutput {
    /// Int64: distinct non-null values, all NULLs counting as one more (persons).
    DistinctPersons,
    /// Float64: 1 / distinct persons (NULL for an empty class).
    PersonRisk,
    /// Int64: distinct non-null values; an all-NULL class counts 1.
    DistinctValues,
    /// Float64: exp(entropy), NULLs merged into the most frequent value.
    EntropyL,
    /// Int64: recursive (c, l)-diversity, NULLs merged into the most frequent value.
    RecursiveL { c: f64 },
    /// Struct {values: List<T>, counts: List<UInt64>}: the histogram itself, for the
    /// whole-table window functions.
    Histogram,
}

impl HistogramOutput {
    /// Whether the measure is a count (returned as Int64).
    pub fn is_integer(self) -> bool {
        matches!(
            self,
            Self::DistinctPersons | Self::DistinctValues | Self::RecursiveL { .. }
        )
    }

    /// A stable name, used by the shared-histogram rewrite.
    pub fn name(self) -> &'static str {
        match self {
            Self::DistinctPersons => "persons",
            Self::PersonRisk => "person_risk",
            Self::DistinctValues => "distinct",
            Self::EntropyL => "entropy",
            Self::RecursiveL { .. } => "recursive",
            Self::Histogram => "histogram",
        }
    }

    /// Inverse of [`Self::name`] (`c` is used by `recursive`).
    pub fn from_name(name: &str, c: f64) -> Option<Self> {
        Some(match name {
            "persons" => Self::DistinctPersons,
            "person_risk" => Self::PersonRisk,
            "distinct" => Self::DistinctValues,
            "entropy" => Self::EntropyL,
            "recursive" => Self::RecursiveL { c },
            _ => return None,
        })
    }
}

/// The two intermediate state fields of a histogram over values of `value_type`, named after
/// the aggregate `base` (plain `values`/`counts` when `base` is empty).
pub(crate) fn histogram_state_fields(base: &str, value_type: &DataType) -> Vec<FieldRef> {
    let name = |part: &str| {
        if base.is_empty() {
            part.to_string()
        } else {
            format_state_name(base, part)
        }
    };
    vec![
        Arc::new(Field::new(
            name("values"),
            DataType::new_list(value_type.clone(), true),
            true,
        )),
        Arc::new(Field::new(
            name("counts"),
            DataType::new_list(DataType::UInt64, true),
            true,
        )),
    ]
}

/// The struct type returned by [`HistogramOutput::Histogram`].
pub(crate) fn histogram_struct_type(value_type: &DataType) -> DataType {
    DataType::Struct(Fields::from(histogram_state_fields("", value_type)))
}

/// Histograms grouped by class, drained from the accumulator in class order.
pub(crate) struct GroupedHistograms {
    /// `offsets[g]..offsets[g + 1]` are class g's entries in `codes`/`counts`.
    pub offsets: Vec<usize>,
    pub codes: Vec<u32>,
    pub counts: Vec<u64>,
    /// NULL count of each class (kept out of `codes`).
    pub nulls: Vec<u64>,
}

impl GroupedHistograms {
    pub fn num_groups(&self) -> usize {
        self.nulls.len()
    }

    pub fn class_counts(&self, group: usize) -> &[u64] {
        &self.counts[self.offsets[group]..self.offsets[group + 1]]
    }
}

/// Marks a free inline slot.
const EMPTY: u32 = u32::MAX;
/// Marks an inline slot whose value moved to the overflow map (its count outgrew 32 bits).
const MOVED: u32 = u32::MAX - 1;
/// Distinct values kept inline per class.
const INLINE: usize = 4;

/// The first [`INLINE`] distinct values of a class and their counts: 32 bytes.
#[derive(Debug, Clone, Copy)]
struct InlineSlots {
    codes: [u32; INLINE],
    counts: [u32; INLINE],
}

impl Default for InlineSlots {
    fn default() -> Self {
        Self {
            codes: [EMPTY; INLINE],
            counts: [0; INLINE],
        }
    }
}

/// Codes below this get a dense counter array when their class overflows its inline slots:
/// big classes of a low-cardinality attribute (a disease code) then cost an index, not a hash.
const DENSE_CODES: u32 = 32;

/// An overflow log entry: the code in the high half, a count below 2^32 in the low half (so
/// that sorting entries sorts by code).
#[inline]
fn log_entry(code: u32, count: u32) -> u64 {
    (u64::from(code) << 32) | u64::from(count)
}

/// The overflow log compacts itself when it reaches at least this many entries (and twice its
/// size after the last compaction).
const MIN_COMPACTION: usize = 1 << 22;

/// Counts of the codes that fit neither inline nor dense (large domains: person ids, incomes),
/// for all classes together: `(class, code, count)` entries appended as they come, with no
/// lookup, and *compacted* — sorted by class (a counting sort over the dense class indices),
/// each class's entries sorted by code and equal codes summed — when read, and whenever the
/// log has doubled since its last compaction (memory stays within about twice the distinct
/// `(class, code)` pairs). Appending is a sequential write where a hash map of pairs would
/// cost a random probe into a table as large as the pairs.
#[derive(Debug)]
struct OverflowLog {
    groups: Vec<u32>,
    entries: Vec<u64>,
    /// entries up to here are compacted
    sorted: usize,
    /// compact when `entries` reaches this length
    limit: usize,
    /// [`MIN_COMPACTION`], smaller in tests
    min_compaction: usize,
}

impl Default for OverflowLog {
    fn default() -> Self {
        Self {
            groups: Vec::new(),
            entries: Vec::new(),
            sorted: 0,
            limit: 0,
            min_compaction: MIN_COMPACTION,
        }
    }
}

/// Compacted overflow counts: class g's codes and counts are `offsets[g]..offsets[g + 1]`.
#[derive(Debug, Default)]
struct OverflowRuns {
    offsets: Vec<usize>,
    codes: Vec<u32>,
    counts: Vec<u64>,
}

impl OverflowLog {
    #[inline]
    fn push(&mut self, group: usize, code: u32, mut count: u64) {
        // counts of 2^32 or more (merged states only) take several entries
        while count > u64::from(u32::MAX) {
            self.groups.push(group as u32);
            self.entries.push(log_entry(code, u32::MAX));
            count -= u64::from(u32::MAX);
        }
        self.groups.push(group as u32);
        self.entries.push(log_entry(code, count as u32));
    }

    fn maybe_compact(&mut self, num_groups: usize) {
        if self.entries.len() >= self.limit.max(self.min_compaction) {
            let runs = self.take_runs(num_groups);
            self.restore(&runs, 0);
        }
    }

    /// Empties the log into per-class runs of distinct codes, for classes `0..num_groups`.
    fn take_runs(&mut self, num_groups: usize) -> OverflowRuns {
        let mut offsets = vec![0usize; num_groups + 1];
        for &g in &self.groups {
            offsets[g as usize + 1] += 1;
        }
        for g in 0..num_groups {
            offsets[g + 1] += offsets[g];
        }
        let entries = std::mem::take(&mut self.entries);
        let grouped = if self.sorted == entries.len() {
            // already in class order, each code once
            entries
        } else {
            let mut next = offsets.clone();
            let mut grouped = vec![0u64; entries.len()];
            for (&g, &entry) in self.groups.iter().zip(&entries) {
                let slot = &mut next[g as usize];
                grouped[*slot] = entry;
                *slot += 1;
            }
            grouped
        };
        self.groups = Vec::new();
        self.sorted = 0;
        let mut runs = OverflowRuns {
            offsets: Vec::with_capacity(num_groups + 1),
            codes: Vec::with_capacity(grouped.len()),
            counts: Vec::with_capacity(grouped.len()),
        };
        runs.offsets.push(0);
        let mut grouped = grouped;
        for g in 0..num_groups {
            let class = &mut grouped[offsets[g]..offsets[g + 1]];
            class.sort_unstable();
            let mut previous = None;
            for &entry in class.iter() {
                let (code, count) = ((entry >> 32) as u32, entry & u64::from(u32::MAX));
                if previous == Some(code) {
                    if let Some(last) = runs.counts.last_mut() {
                        *last += count;
                    }
                } else {
                    runs.codes.push(code);
                    runs.counts.push(count);
                    previous = Some(code);
                }
            }
            runs.offsets.push(runs.codes.len());
        }
        runs
    }

    /// Puts compacted runs back into the (empty) log, for the classes from `first` on,
    /// renumbered from 0.
    fn restore(&mut self, runs: &OverflowRuns, first: usize) {
        for (g, w) in runs.offsets[first..].windows(2).enumerate() {
            for i in w[0]..w[1] {
                self.push(g, runs.codes[i], runs.counts[i]);
            }
        }
        self.sorted = self.entries.len();
        self.limit = 2 * self.entries.len();
    }

    fn size(&self) -> usize {
        self.groups.capacity() * size_of::<u32>() + self.entries.capacity() * size_of::<u64>()
    }
}

/// Per-class histograms over value codes (see module docs). A value code lives in exactly one
/// place: the class's inline slots, else its dense array (codes below [`DENSE_CODES`]), else
/// the overflow log shared by all classes (large domains such as person ids: one log for all
/// classes, no allocation per class).
#[derive(Debug, Default)]
struct Histograms {
    inline: Vec<InlineSlots>,
    /// counts by code for classes that outgrew their inline slots
    dense: Vec<Vec<u64>>,
    /// entries in all dense arrays, so that `size` stays O(1)
    dense_entries: usize,
    overflow: OverflowLog,
    nulls: Vec<u64>,
}

impl Histograms {
    fn len(&self) -> usize {
        self.nulls.len()
    }

    fn resize(&mut self, groups: usize) {
        if self.nulls.len() < groups {
            self.inline.resize(groups, InlineSlots::default());
            self.dense.resize_with(groups, Vec::new);
            self.nulls.resize(groups, 0);
        }
    }

    #[inline]
    fn add(&mut self, group: usize, code: u32, count: u64) {
        let slots = &mut self.inline[group];
        for i in 0..INLINE {
            if slots.codes[i] == code {
                match u32::try_from(u64::from(slots.counts[i]) + count) {
                    Ok(total) => slots.counts[i] = total,
                    Err(_) => {
                        let total = u64::from(slots.counts[i]) + count;
                        slots.codes[i] = MOVED;
                        slots.counts[i] = 0;
                        self.add_overflow(group, code, total);
                    }
                }
                return;
            }
            if slots.codes[i] == EMPTY {
                if let Ok(count) = u32::try_from(count) {
                    slots.codes[i] = code;
                    slots.counts[i] = count;
                    return;
                }
                break;
            }
        }
        self.add_overflow(group, code, count);
    }

    fn add_overflow(&mut self, group: usize, code: u32, count: u64) {
        if code < DENSE_CODES {
            let counts = &mut self.dense[group];
            let index = code as usize;
            if index >= counts.len() {
                self.dense_entries += index + 1 - counts.len();
                counts.resize(index + 1, 0);
            }
            counts[index] += count;
        } else {
            self.overflow.push(group, code, count);
        }
    }

    /// Takes the selected classes out, grouped in class order; the others are renumbered
    /// from 0, as `EmitTo::First` requires.
    fn drain(&mut self, emit_to: EmitTo) -> GroupedHistograms {
        let inline = emit_to.take_needed(&mut self.inline);
        let dense = emit_to.take_needed(&mut self.dense);
        let nulls = emit_to.take_needed(&mut self.nulls);
        self.dense_entries -= dense.iter().map(|d| d.len()).sum::<usize>();
        let num_groups = inline.len();
        // all classes' overflow, the emitted ones' taken, the others' put back
        let runs = self.overflow.take_runs(num_groups + self.nulls.len());
        if let EmitTo::First(n) = emit_to {
            self.overflow.restore(&runs, n);
        } else {
            self.overflow = OverflowLog {
                min_compaction: self.overflow.min_compaction,
                ..OverflowLog::default()
            };
        }
        let overflow_items = runs.offsets[num_groups];

        let mut offsets = Vec::with_capacity(num_groups + 1);
        let mut codes = Vec::with_capacity(num_groups * 2 + overflow_items);
        let mut counts = Vec::with_capacity(num_groups * 2 + overflow_items);
        offsets.push(0);
        for (g, (slots, extra)) in inline.iter().zip(&dense).enumerate() {
            for i in 0..INLINE {
                if slots.codes[i] < MOVED {
                    codes.push(slots.codes[i]);
                    counts.push(u64::from(slots.counts[i]));
                }
            }
            for (code, &count) in extra.iter().enumerate() {
                if count > 0 {
                    codes.push(code as u32);
                    counts.push(count);
                }
            }
            let run = runs.offsets[g]..runs.offsets[g + 1];
            codes.extend_from_slice(&runs.codes[run.clone()]);
            counts.extend_from_slice(&runs.counts[run]);
            offsets.push(codes.len());
        }
        GroupedHistograms {
            offsets,
            codes,
            counts,
            nulls,
        }
    }

    fn size(&self) -> usize {
        self.inline.capacity() * size_of::<InlineSlots>()
            + self.dense.capacity() * size_of::<usize>()
            + self.dense_entries * size_of::<u64>()
            + self.overflow.size()
            + self.nulls.capacity() * size_of::<u64>()
    }
}

/// Dense value codes plus per-class counts for one attribute (see module docs).
pub(crate) struct ClassHistograms {
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
            (None, None) => {
                for (&group, &code) in group_indices.iter().zip(&self.codes) {
                    histograms.add(group, code as u32, 1);
                }
            }
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
        histograms.overflow.maybe_compact(total_num_groups);
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
            self.histograms.overflow.maybe_compact(total_num_groups);
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
        self.histograms.overflow.maybe_compact(total_num_groups);
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
        self.histograms.drain(emit_to)
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

    /// The final value per class, according to [`HistogramOutput`].
    pub fn evaluate_output(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        if self.output == HistogramOutput::Histogram {
            let fields = match histogram_struct_type(&self.value_type) {
                DataType::Struct(fields) => fields,
                _ => unreachable!("histogram_struct_type returns a struct"),
            };
            let arrays = self.state_arrays(emit_to)?;
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

/// The value of `output` for one class whose non-null values have `counts` and which has
/// `nulls` NULLs; `None` where the class has no value (risk of an empty class, histograms).
pub(crate) fn class_measure(
    output: HistogramOutput,
    counts: &[u64],
    nulls: u64,
    scratch: &mut Vec<u64>,
) -> Option<f64> {
    // the class's counts with its NULLs merged into the most frequent value: the assignment
    // of the unknown values that gives the least diversity
    let worst_case = |scratch: &mut Vec<u64>| {
        scratch.clear();
        scratch.extend_from_slice(counts);
        if nulls > 0 {
            match scratch.iter_mut().max() {
                Some(max) => *max += nulls,
                None => scratch.push(nulls),
            }
        }
    };
    // all NULL person ids count as one person
    let persons = counts.len() + usize::from(nulls > 0);
    match output {
        HistogramOutput::DistinctPersons => Some(persons as f64),
        HistogramOutput::PersonRisk => (persons > 0).then(|| 1.0 / persons as f64),
        HistogramOutput::DistinctValues => Some(if counts.is_empty() && nulls > 0 {
            1.0
        } else {
            counts.len() as f64
        }),
        HistogramOutput::EntropyL => {
            worst_case(scratch);
            Some(formulas::entropy_l(scratch))
        }
        HistogramOutput::RecursiveL { c } => {
            worst_case(scratch);
            Some(formulas::recursive_l(scratch, c) as f64)
        }
        HistogramOutput::Histogram => None,
    }
}

/// Builds the `(values, counts)` list pair of the drained classes; NULL counts become a NULL
/// item.
pub(crate) fn histogram_lists(
    grouped: &GroupedHistograms,
    dictionary: &ArrayRef,
) -> Result<Vec<ArrayRef>> {
    let num_groups = grouped.num_groups();
    let extra = grouped.nulls.iter().filter(|&&n| n > 0).count();
    let mut indices: Vec<Option<u32>> = Vec::with_capacity(grouped.codes.len() + extra);
    let mut counts: Vec<u64> = Vec::with_capacity(grouped.codes.len() + extra);
    let mut lengths: Vec<usize> = Vec::with_capacity(num_groups);
    for g in 0..num_groups {
        let (lo, hi) = (grouped.offsets[g], grouped.offsets[g + 1]);
        indices.extend(grouped.codes[lo..hi].iter().map(|&c| Some(c)));
        counts.extend_from_slice(&grouped.counts[lo..hi]);
        let nulls = grouped.nulls[g];
        if nulls > 0 {
            indices.push(None);
            counts.push(nulls);
        }
        lengths.push(hi - lo + usize::from(nulls > 0));
    }
    let indices = UInt32Array::from(indices);
    let items = take(dictionary.as_ref(), &indices, None)?;
    let offsets = OffsetBuffer::<i32>::from_lengths(lengths);
    list_pair(
        items,
        UInt64Array::new(ScalarBuffer::from(counts), None),
        offsets,
    )
}

/// The `(values, counts)` list columns over `items` and their `counts`, sharing `offsets`.
fn list_pair(
    items: ArrayRef,
    counts: UInt64Array,
    offsets: OffsetBuffer<i32>,
) -> Result<Vec<ArrayRef>> {
    let value_field = Arc::new(Field::new_list_field(items.data_type().clone(), true));
    let count_field = Arc::new(Field::new_list_field(DataType::UInt64, true));
    Ok(vec![
        Arc::new(ListArray::try_new(
            value_field,
            offsets.clone(),
            items,
            None,
        )?),
        Arc::new(ListArray::try_new(
            count_field,
            offsets,
            Arc::new(counts),
            None,
        )?),
    ])
}

/// A fresh value dictionary for `value_type`.
pub(crate) fn new_dictionary(value_type: &DataType) -> Result<Box<dyn GroupValues>> {
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
pub(crate) struct HistogramGroupsAccumulator {
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

    #[test]
    fn inline_dense_and_overflow_agree_with_a_map() {
        // pseudo-random adds over 50 classes and 300 codes (inline, dense below 32 and the
        // overflow log, compacted every few hundred adds), against a plain map
        let mut histograms = Histograms::default();
        histograms.overflow.min_compaction = 200;
        let mut expected: Vec<BTreeMap<u32, u64>> = vec![BTreeMap::new(); 50];
        histograms.resize(50);
        let mut x: u64 = 12345;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let group = (x >> 33) as usize % 50;
            let code = ((x >> 20) % 300) as u32;
            let count = 1 + (x >> 50) % 3;
            histograms.add(group, code, count);
            *expected[group].entry(code).or_default() += count;
            histograms.overflow.maybe_compact(50);
        }
        // the first 20 classes, then the rest (renumbered from 0)
        let first = histograms.drain(EmitTo::First(20));
        assert_eq!(first.num_groups(), 20);
        for (g, want) in expected.iter().enumerate().take(20) {
            assert_eq!(&class_map(&first, g), want, "class {g}");
        }
        let rest = histograms.drain(EmitTo::All);
        assert_eq!(rest.num_groups(), 30);
        for g in 0..30 {
            assert_eq!(&class_map(&rest, g), &expected[20 + g], "class {}", 20 + g);
        }
    }

    #[test]
    fn counts_beyond_32_bits() {
        // 4 inline codes, then code 100 twice with 3 * 2^32 + 5 in all, code 7 dense
        let mut histograms = Histograms::default();
        histograms.resize(1);
        for code in 40..44 {
            histograms.add(0, code, 1);
        }
        histograms.add(0, 100, (1 << 33) + 2);
        histograms.add(0, 100, (1 << 32) + 3);
        histograms.add(0, 7, 1 << 40);
        let grouped = histograms.drain(EmitTo::All);
        let map = class_map(&grouped, 0);
        assert_eq!(map[&100], 3 * (1u64 << 32) + 5);
        assert_eq!(map[&7], 1 << 40);
        assert_eq!(map.len(), 6);
    }
}
