//! What a class's value histogram gives: the measures read off it ([`HistogramOutput`],
//! [`class_measure`], with the NULL rules of each) and its intermediate form, a
//! `(values, counts)` pair of list columns ([`histogram_lists`]). The counting itself is in
//! [`super::histogram`].

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, ListArray, UInt32Array, UInt64Array};
use datafusion::arrow::buffer::{OffsetBuffer, ScalarBuffer};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::error::Result;
use datafusion::logical_expr::utils::format_state_name;

use super::formulas;

/// What a [`ClassHistograms`](super::histogram::ClassHistograms) accumulator returns from `evaluate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HistogramOutput {
    /// Int64: distinct non-null values; a class of NULLs only counts 1 (persons).
    DistinctPersons,
    /// Float64: 1 / distinct persons (NULL for an empty class).
    PersonRisk,
    /// Int64: distinct non-null values; an all-NULL class counts 1.
    DistinctValues,
    /// Float64: exp(entropy), NULLs merged into the most frequent value.
    EntropyL,
    /// Int64: recursive (c, l)-diversity, NULLs merged into the most frequent value.
    RecursiveL { c: f64 },
    /// Float64: α, the largest share of one value, NULLs merged into the most frequent value.
    MaxShare,
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
            Self::MaxShare => "alpha",
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
            "alpha" => Self::MaxShare,
            _ => return None,
        })
    }
}

/// The two intermediate state fields of a histogram over values of `value_type`, named after
/// the aggregate `base` (plain `values`/`counts` when `base` is empty).
pub fn histogram_state_fields(base: &str, value_type: &DataType) -> Vec<FieldRef> {
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
pub fn histogram_struct_type(value_type: &DataType) -> DataType {
    DataType::Struct(Fields::from(histogram_state_fields("", value_type)))
}

/// Histograms grouped by class, drained from the accumulator in class order.
pub struct GroupedHistograms {
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

/// The value of `output` for one class whose non-null values have `counts` and which has
/// `nulls` NULLs; `None` where the class has no value (risk of an empty class, histograms).
pub fn class_measure(
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
    // a NULL person id may be any person of the class: NULLs add no person, except that a
    // class of NULL ids only is one person
    let persons = counts.len().max(usize::from(nulls > 0));
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
            // a floating-point sum depends on its order: the counts sorted, the value is the
            // same whichever order the class's values come in (a function's own histogram
            // and one shared with others order them differently)
            scratch.sort_unstable();
            Some(formulas::entropy_l(scratch))
        }
        HistogramOutput::RecursiveL { c } => {
            worst_case(scratch);
            Some(formulas::recursive_l(scratch, c) as f64)
        }
        HistogramOutput::MaxShare => {
            (!counts.is_empty() || nulls > 0).then(|| formulas::alpha(counts, nulls))
        }
        HistogramOutput::Histogram => None,
    }
}

/// Builds the `(values, counts)` list pair of the drained classes; NULL counts become a NULL
/// item.
pub fn histogram_lists(
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
pub(super) fn list_pair(
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
