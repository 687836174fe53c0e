//! How a local release labels the values of a class on an ordered quasi-identifier (numbers and
//! dates whose hierarchy is an interval, date or value tree): [`LocalLabels`], the policy's
//! `[privacy] local_labels`.
//!
//! ## Value-free labels (the default)
//! The label of a class holding several values `min ≤ … ≤ max` is built from the attribute's
//! **grid**, never from a member's value: the grid is the lowest level of the QI's hierarchy
//! whose cells are coarser than the column's own resolution ([`Grid`]):
//!
//! | hierarchy | grid | skipped |
//! |---|---|---|
//! | interval | its lowest bucket level (`[30, 35)`, `< 18`, `>= 90`) | on integer columns, widths below 2 (one value a bucket) |
//! | date | its lowest unit (week, month, quarter, year, decade) | `day` on Date32 and Date64 columns (the value itself) |
//! | value tree over numbers | its lowest level whose nodes are runs of consecutive numeric leaves, one of them of two leaves or more | levels that interleave or are all single leaves |
//!
//! A class whose values lie in one grid cell publishes that cell's hierarchy node (`[30, 35)`,
//! `1980-03`), as a full-domain release would. A class spanning several cells publishes the
//! **open interval** `(a, b)` (a < x < b) of the cells from `min`'s to `max`'s:
//! - `b` is the first value after `max`'s cell: its upper bound (the first integer at or above
//!   it on an integer column, the next tree leaf for a tree, the first day of the next period
//!   for dates);
//! - `a` is the last value before `min`'s cell on the discrete domains (integers: one below the
//!   first integer of the cell; Date32 and Date64: the day before the period; trees: the
//!   previous leaf), and the cell's lower bound on continuous ones (floats, decimals,
//!   timestamps) — or, when `min` is that bound itself, the lower bound of the cell before.
//!
//! So `a < min` and `b > max` always: **no end of a label is ever a member's value**, and the
//! label depends only on the grid cells of `min` and `max` (for a continuous `a`: on the cell
//! of `min` among the cells closed on the right), not on where in their cells the members
//! lie. A returning person's value is narrowed, across releases, to a grid cell at
//! most — the grid (the hierarchy's lowest level) is the privacy dial. An end beyond the
//! domain (below a tree's first leaf, a bottom-coded `< b` cell) is `-inf` / `inf`. Examples:
//! ages 31 and 42 with 5-year buckets publish `(29, 45)` (30 … 44); birth dates 1980-03-14 and
//! 1980-07-02 with a month grid publish `(1980-02-29, 1980-08-01)` (March … July).
//!
//! Timestamps are cut at the periods' starts in UTC, also with a time zone (whose hierarchy
//! labels name the zone's local days): the ends are then UTC instants, printed in the zone,
//! and still outside the class.
//!
//! A class with a **single value** still publishes it (`37`): at least k rows share it, and a
//! grid would only hide what every member has in common. NULL alone publishes NULL, NULL with
//! values `*`; a QI without a grid (no such level below its top) publishes `*` for a class of
//! several values, and so does a class holding a non-finite float.
//!
//! The Loss of an open interval counts the domain values strictly inside it (the search
//! minimizes what is published). Labels of distinct classes may overlap (a cell can hold the
//! end of two classes); k, l and t are counted over the published label tuples.
//!
//! ## Exact labels
//! `local_labels = "exact"` publishes `[min, max]`, both ends members' raw values (the release
//! model before value-free labels; each end is some member's exact value).
//!
//! KACA and IAB publish hierarchy nodes only, under either rule: their labels are already the
//! hierarchy's (a single raw value only for a class holding one value).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::error::{DataFusionError, Result};

use crate::functions::common::{decode_dictionary, ordered_as_f64};
use crate::generalize::{DateUnit, Hierarchy, HierarchyKind, IntervalHierarchy, IntervalLevel};

pub use crate::policy::LocalLabels;

/// The cells value-free labels are made of: one level of a QI's hierarchy, in the number space
/// of [`ordered_as_f64`] (numbers by value, dates and timestamps by their integer
/// representation).
#[derive(Debug, Clone)]
pub struct Grid {
    level: usize,
    kind: GridKind,
}

#[derive(Debug, Clone)]
enum GridKind {
    /// an interval hierarchy's bucket level; `integers`: an integer column
    Interval {
        hierarchy: IntervalHierarchy,
        integers: bool,
    },
    /// a date unit; `per_day`: units of the column's representation per day; `whole_days`:
    /// Date32 or Date64 (a day is the column's resolution)
    Date {
        unit: DateUnit,
        per_day: f64,
        whole_days: bool,
    },
    /// a tree's numeric leaves, ascending, and per leaf the first and last leaf of its node
    Tree {
        points: Vec<f64>,
        first: Vec<u32>,
        last: Vec<u32>,
    },
}

impl Grid {
    /// The grid of a QI with `hierarchy` over a column of `data_type`: its lowest level
    /// coarser than the column's resolution (see the module documentation); `None` when no
    /// level below the top qualifies.
    pub fn new(hierarchy: &Hierarchy, data_type: &DataType) -> Option<Self> {
        let data_type = decode_dictionary(data_type);
        let top = hierarchy.top_level();
        match hierarchy.kind() {
            HierarchyKind::Interval(interval) => {
                let integers = data_type.is_integer();
                let level = (1..top).find(|&l| {
                    !integers
                        || match interval.levels().get(l - 1) {
                            Some(IntervalLevel::Width { width, .. }) => *width >= 2.0,
                            Some(IntervalLevel::Breaks(_)) => true,
                            None => false,
                        }
                })?;
                Some(Self {
                    level,
                    kind: GridKind::Interval {
                        hierarchy: interval.clone(),
                        integers,
                    },
                })
            }
            HierarchyKind::Date(date) => {
                const DAY_SECONDS: f64 = 86_400.0;
                let (per_day, whole_days) = match &data_type {
                    DataType::Date32 => (1.0, true),
                    DataType::Date64 => (DAY_SECONDS * 1e3, true),
                    DataType::Timestamp(TimeUnit::Second, _) => (DAY_SECONDS, false),
                    DataType::Timestamp(TimeUnit::Millisecond, _) => (DAY_SECONDS * 1e3, false),
                    DataType::Timestamp(TimeUnit::Microsecond, _) => (DAY_SECONDS * 1e6, false),
                    DataType::Timestamp(TimeUnit::Nanosecond, _) => (DAY_SECONDS * 1e9, false),
                    _ => return None,
                };
                let level = (1..top).find(|&l| {
                    date.units()
                        .get(l - 1)
                        .is_some_and(|&u| !(whole_days && u == DateUnit::Day))
                })?;
                Some(Self {
                    level,
                    kind: GridKind::Date {
                        unit: date.units()[level - 1],
                        per_day,
                        whole_days,
                    },
                })
            }
            HierarchyKind::Tree(tree) => {
                let labels = tree.labels(0)?;
                let mut leaves: Vec<(f64, usize)> = labels
                    .iter()
                    .enumerate()
                    .filter_map(|(leaf, s)| Some((s?.trim().parse::<f64>().ok()?, leaf)))
                    .filter(|(v, _)| v.is_finite())
                    .collect();
                leaves.sort_by(|a, b| a.0.total_cmp(&b.0));
                if leaves.windows(2).any(|w| w[0].0 == w[1].0) {
                    // two leaves of one number: no order of cells
                    return None;
                }
                (1..top).find_map(|level| {
                    let ids = tree.label_ids(level)?;
                    let (first, last) = runs(leaves.iter().map(|&(_, leaf)| ids[leaf]))?;
                    Some(Self {
                        level,
                        kind: GridKind::Tree {
                            points: leaves.iter().map(|&(v, _)| v).collect(),
                            first,
                            last,
                        },
                    })
                })
            }
            HierarchyKind::Mask(_) | HierarchyKind::Set => None,
        }
    }

    /// The hierarchy level whose nodes are the grid's cells.
    pub fn level(&self) -> usize {
        self.level
    }

    /// The lower end `a` of an open interval whose smallest member is `min` (finite): below
    /// every value of `min`'s cell on a discrete domain, below `min` on a continuous one, and
    /// never a value of the class.
    pub fn below(&self, min: f64) -> f64 {
        match &self.kind {
            GridKind::Interval {
                hierarchy,
                integers,
            } => {
                let (lo, _) = hierarchy.bucket_bounds(self.level, min);
                if *integers {
                    if lo.is_finite() { lo.ceil() - 1.0 } else { lo }
                } else if lo < min {
                    lo
                } else {
                    // min is its cell's lower bound: the cell before's
                    hierarchy.bucket_bounds(self.level, lo.next_down()).0
                }
            }
            GridKind::Date {
                unit,
                per_day,
                whole_days,
            } => {
                let (start, _) = unit.period((min / per_day).floor() as i64);
                if *whole_days {
                    (start - 1) as f64 * per_day
                } else if (start as f64 * per_day) < min {
                    start as f64 * per_day
                } else {
                    unit.period(start - 1).0 as f64 * per_day
                }
            }
            GridKind::Tree {
                points,
                first,
                last: _,
            } => match points.binary_search_by(|p| p.total_cmp(&min)) {
                Ok(i) if first[i] > 0 => points[first[i] as usize - 1],
                _ => f64::NEG_INFINITY,
            },
        }
    }

    /// The upper end `b` of an open interval whose largest member is `max` (finite): the first
    /// value after `max`'s cell, never a value of the class.
    pub fn above(&self, max: f64) -> f64 {
        match &self.kind {
            GridKind::Interval {
                hierarchy,
                integers,
            } => {
                let (_, hi) = hierarchy.bucket_bounds(self.level, max);
                if *integers && hi.is_finite() {
                    hi.ceil()
                } else {
                    hi
                }
            }
            GridKind::Date { unit, per_day, .. } => {
                unit.period((max / per_day).floor() as i64).1 as f64 * per_day
            }
            GridKind::Tree {
                points,
                first: _,
                last,
            } => match points.binary_search_by(|p| p.total_cmp(&max)) {
                Ok(i) => points
                    .get(last[i] as usize + 1)
                    .copied()
                    .unwrap_or(f64::INFINITY),
                _ => f64::INFINITY,
            },
        }
    }
}

/// Per item, the first and last index of its run of equal `ids`; `None` when an id comes back
/// after another (its node is not a run) or no run holds two items.
fn runs(ids: impl Iterator<Item = u32>) -> Option<(Vec<u32>, Vec<u32>)> {
    let ids: Vec<u32> = ids.collect();
    let mut first = vec![0u32; ids.len()];
    let mut last = vec![0u32; ids.len()];
    let mut seen = std::collections::HashSet::new();
    let mut start = 0;
    let mut wide = false;
    for i in 1..=ids.len() {
        if i == ids.len() || ids[i] != ids[start] {
            if !seen.insert(ids[start]) {
                return None;
            }
            wide |= i - start >= 2;
            first[start..i].fill(start as u32);
            last[start..i].fill(i as u32 - 1);
            start = i;
        }
    }
    (wide && !ids.is_empty()).then_some((first, last))
}

/// `(a, b)`: the label of an open interval, its ends as [`end_labels`] prints them.
pub fn open_interval_label(a: &str, b: &str) -> String {
    format!("({a}, {b})")
}

/// The text of each end (numbers in the space of [`ordered_as_f64`]) as a value of a column of
/// `data_type` prints (Arrow's `CAST(x AS VARCHAR)`, like a raw value's label); infinite ends
/// are `-inf` and `inf`.
pub fn end_labels(ends: &[f64], data_type: &DataType) -> Result<Vec<String>> {
    let finite: Vec<f64> = ends
        .iter()
        .map(|&e| if e.is_finite() { e } else { 0.0 })
        .collect();
    let text = cast(&typed_values(&finite, data_type)?, &DataType::Utf8)?;
    let text: &StringArray = text.as_string::<i32>();
    ends.iter()
        .enumerate()
        .map(|(i, &e)| {
            if e == f64::INFINITY {
                Ok("inf".to_string())
            } else if e == f64::NEG_INFINITY {
                Ok("-inf".to_string())
            } else if text.is_valid(i) {
                Ok(text.value(i).to_string())
            } else {
                Err(DataFusionError::Internal(format!(
                    "an interval end does not fit the column type {data_type}"
                )))
            }
        })
        .collect()
}

/// Finite numbers (the space of [`ordered_as_f64`]) as values of a column of `data_type`.
pub fn typed_values(values: &[f64], data_type: &DataType) -> Result<ArrayRef> {
    let numbers: ArrayRef = Arc::new(Float64Array::from(values.to_vec()));
    let target = decode_dictionary(data_type);
    Ok(match &target {
        DataType::Date32 => cast(&cast(&numbers, &DataType::Int32)?, &target)?,
        t if t.is_temporal() => cast(&cast(&numbers, &DataType::Int64)?, &target)?,
        _ => cast(&numbers, &target)?,
    })
}

/// The ends of an interval label as numbers in the space of [`ordered_as_f64`], read as values
/// of a column of `data_type` (`-inf` and `inf` as infinities); `None` for an end that is not
/// such a value.
pub fn end_values(ends: &[&str], data_type: &DataType) -> Result<Vec<Option<f64>>> {
    let target = decode_dictionary(data_type);
    let text: ArrayRef = Arc::new(StringArray::from(ends.to_vec()));
    // an end that does not convert is NULL, not an error
    let options = datafusion::arrow::compute::CastOptions {
        safe: true,
        ..Default::default()
    };
    let typed = datafusion::arrow::compute::cast_with_options(&text, &target, &options)?;
    let numbers = ordered_as_f64(&typed)?;
    // a set-based numeric QI's midpoint ends (`30.5` on an integer column) read as numbers
    let numeric = target.is_numeric();
    Ok(ends
        .iter()
        .zip(numbers)
        .map(|(&end, number)| match end.trim() {
            "inf" => Some(f64::INFINITY),
            "-inf" => Some(f64::NEG_INFINITY),
            text if number.is_none() && numeric => {
                text.parse::<f64>().ok().filter(|x| x.is_finite())
            }
            _ => number,
        })
        .collect())
}

#[cfg(test)]
mod tests;
