//! The hierarchy builders, over a column's frequency set (distinct non-null values and their
//! row counts). Each gives the labels of every level for every distinct value: level 0 is the
//! value as `CAST(x AS VARCHAR)` prints it (what a value tree matches a column's values by),
//! the last level is `*`.
//!
//! | kind | column | levels |
//! |---|---|---|
//! | `interval` | numeric | fixed widths (each a multiple of the previous), labels `[20, 30)` as `kind = "interval"` prints them |
//! | `quantile` | numeric | for each target size t (increasing), intervals holding at least t rows each, cut between distinct values; each level's cuts are cuts of the level below |
//! | `prefix` | text or integer | keep the first n characters (each n shorter than the one below): `021**` when every value has the same length (ZIP codes), else `J45*` (ICD-10 codes of mixed length) |
//! | `date` | date or timestamp | calendar units (`day`, `week`, `month`, `quarter`, `year`, `decade`) as `kind = "date"` labels them |
//! | `category` | any | for each target size t (increasing), the groups of the level below with fewer than t rows merged, rarest first, until each holds t rows |
//!
//! Quantile and category levels that reach a single class are left out (the top `*` is that
//! class). A target the whole column does not reach leaves classes smaller than it; the
//! summary shows them. NaN (a float) has its own interval `NaN` and takes no part in the cuts.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, StringArray, StringBuilder, UInt32Array,
};
use datafusion::arrow::compute::{cast, sort_to_indices, take};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, UInt32Type};
use datafusion::error::{DataFusionError, Result};

use super::spec::{BuilderSpec, interval_of};
use crate::generalize::common::{is_integer, is_temporal, value_type};
use crate::generalize::{DateHierarchy, IntervalHierarchy, TOP_LABEL, format_number};
use crate::parallel::map_scoped;
use crate::sort::radix_sort;

/// A hierarchy's levels over a frequency set.
#[derive(Debug, Clone)]
pub struct Levels {
    /// The distinct non-null values, ascending (the column's type, dictionaries decoded).
    pub values: ArrayRef,
    /// Rows of each value.
    pub counts: Vec<u64>,
    /// Per level (0 = the value as text … the top `*`), the label of each value: level 0 is
    /// Utf8, the others Utf8, Utf8View, or a dictionary of them with UInt32 keys (each label
    /// once, so that checking and writing the file handle each label once).
    pub labels: Vec<ArrayRef>,
    /// What each level is, for the summary (`value`, `width 10`, `≥ 100 rows`, `month`, `*`).
    pub meanings: Vec<String>,
}

/// The levels `spec` builds over the frequency set (`values`, distinct and non-null, with
/// their row `counts`) of `column` of `table` (both named in errors).
pub fn build(
    spec: &BuilderSpec,
    column: &str,
    table: &str,
    values: &ArrayRef,
    counts: &[u64],
) -> Result<Levels> {
    spec.check()?;
    if !spec.accepts(values.data_type()) {
        return Err(DataFusionError::Plan(format!(
            "column '{column}' of {table} is {}: kind {} needs {}",
            value_type(values.data_type()),
            spec.kind(),
            spec.needs()
        )));
    }
    let (values, counts) = sorted(values, counts)?;
    // level 0, the values as text (the numeric kinds make it alongside their levels)
    let numeric = matches!(
        spec,
        BuilderSpec::Interval { .. } | BuilderSpec::Quantile { .. }
    );
    let mut labels = if numeric {
        Vec::new()
    } else {
        vec![cast(&values, &DataType::Utf8)?]
    };
    let mut meanings = vec!["value".to_string()];
    match spec {
        BuilderSpec::Interval { widths, origin } => {
            let interval = interval_of(widths, *origin)?;
            labels = numeric_levels(&values, &interval, widths.len())?;
            meanings.extend(
                widths
                    .iter()
                    .map(|w| format!("width {}", format_number(*w))),
            );
        }
        BuilderSpec::Quantile { min_sizes } => {
            let numbers = cast(&values, &DataType::Float64)?;
            let numbers = numbers.as_primitive::<Float64Type>().values();
            let breaks = quantile_breaks(numbers, &counts, min_sizes);
            let kept = breaks.len();
            let interval = IntervalHierarchy::breaks(breaks)?;
            labels = numeric_levels(&values, &interval, kept)?;
            meanings.extend(
                min_sizes
                    .iter()
                    .take(kept)
                    .map(|size| format!(">= {size} rows")),
            );
        }
        BuilderSpec::Prefix { keep } => {
            let text = labels[0].as_string::<i32>().clone();
            let (keep, uniform) = prefix_lengths(&text, keep.as_deref(), column, table)?;
            for n in keep {
                labels.push(Arc::new(prefix_labels(&text, n, uniform)));
                meanings.push(format!("first {n} characters"));
            }
        }
        BuilderSpec::Date { units } => {
            let date = DateHierarchy::new(units.clone())?;
            for (level, unit) in units.iter().enumerate() {
                labels.push(date.generalize(&values, level + 1)?);
                meanings.push(unit.name().to_string());
            }
        }
        BuilderSpec::Category { min_sizes } => {
            let text = labels[0].as_string::<i32>().clone();
            for (size, level) in category_levels(&text, &counts, min_sizes) {
                labels.push(Arc::new(level));
                meanings.push(format!(">= {size} rows"));
            }
        }
    }
    let top = DictionaryArray::new(
        UInt32Array::from(vec![0; values.len()]),
        Arc::new(StringArray::from(vec![TOP_LABEL])),
    );
    labels.push(Arc::new(top));
    meanings.push(TOP_LABEL.to_string());
    Ok(Levels {
        values,
        counts,
        labels,
        meanings,
    })
}

/// The leaves (the values as text) and the first `levels` bucket levels of `interval` over
/// `values`, each on a thread of its own.
fn numeric_levels(
    values: &ArrayRef,
    interval: &IntervalHierarchy,
    levels: usize,
) -> Result<Vec<ArrayRef>> {
    map_scoped("building the levels of a hierarchy", 0..=levels, |level| {
        if level == 0 {
            Ok(cast(values, &DataType::Utf8)?)
        } else {
            let labels: ArrayRef = Arc::new(interval.generalize_to_dictionary(values, level)?);
            Ok(labels)
        }
    })?
    .into_iter()
    .collect()
}

/// The values (dictionaries decoded) and their counts, in ascending order of value.
fn sorted(values: &ArrayRef, counts: &[u64]) -> Result<(ArrayRef, Vec<u64>)> {
    let plain = match values.data_type() {
        DataType::Dictionary(_, value) => cast(values, value)?,
        _ => Arc::clone(values),
    };
    let order = match integer_order(&plain)? {
        Some(order) => order,
        None => sort_to_indices(&plain, None, None)?,
    };
    let counts = order.values().iter().map(|&i| counts[i as usize]).collect();
    Ok((take(&plain, &order, None)?, counts))
}

/// The ascending order of the values of an integer or temporal column without NULLs whose
/// values span fewer than 2^32 integers: a radix sort of `(value − min, index)` words, as
/// many 8-bit passes as the span needs (3 for ids up to 16M). `None` for other columns.
fn integer_order(values: &ArrayRef) -> Result<Option<UInt32Array>> {
    let data_type = values.data_type();
    if !(is_integer(data_type) || is_temporal(data_type))
        || values.null_count() > 0
        || values.len() > u32::MAX as usize
    {
        return Ok(None);
    }
    // a u64 beyond i64 does not cast (NULL, or an error for a type without the cast)
    let Ok(wide) = cast(values, &DataType::Int64) else {
        return Ok(None);
    };
    if wide.null_count() > 0 {
        return Ok(None);
    }
    let wide = wide.as_primitive::<Int64Type>().values();
    let (Some(&min), Some(&max)) = (wide.iter().min(), wide.iter().max()) else {
        return Ok(None);
    };
    let span = (max as i128 - min as i128) as u128;
    if span >= 1 << 32 {
        return Ok(None);
    }
    let bits = u64::BITS - (span as u64).leading_zeros();
    let mut words: Vec<u64> = wide
        .iter()
        .enumerate()
        .map(|(i, &v)| ((v.wrapping_sub(min) as u64) << 32) | i as u64)
        .collect();
    radix_sort(&mut words, 32, bits);
    Ok(Some(UInt32Array::from_iter_values(
        words.into_iter().map(|w| w as u32),
    )))
}

/// Merges consecutive `units` (start, rows) into bins of at least `target` rows; a last bin
/// short of it joins the one before.
fn merge_consecutive(units: &[(usize, u64)], target: u64) -> Vec<(usize, u64)> {
    let mut bins: Vec<(usize, u64)> = Vec::new();
    let mut current: Option<(usize, u64)> = None;
    for &(start, rows) in units {
        current = match current {
            Some(bin) if bin.1 >= target => {
                bins.push(bin);
                Some((start, rows))
            }
            Some((s, r)) => Some((s, r + rows)),
            None => Some((start, rows)),
        };
    }
    if let Some(bin) = current {
        match bins.last_mut() {
            Some(last) if bin.1 < target => last.1 += bin.1,
            _ => bins.push(bin),
        }
    }
    bins
}

/// The breakpoints of each quantile level over ascending `numbers` (NaN last, excluded): a
/// level's bins start at distinct values, and hold at least its size (but for a column
/// smaller than it); levels end before the first with a single bin.
fn quantile_breaks(numbers: &[f64], counts: &[u64], min_sizes: &[u64]) -> Vec<Vec<f64>> {
    let mut units: Vec<(usize, u64)> = numbers
        .iter()
        .zip(counts)
        .enumerate()
        .filter(|(_, (x, _))| !x.is_nan())
        .map(|(i, (_, &rows))| (i, rows))
        .collect();
    let mut levels = Vec::new();
    for &size in min_sizes {
        units = merge_consecutive(&units, size);
        if units.len() < 2 {
            break;
        }
        levels.push(
            units[1..]
                .iter()
                .map(|&(start, _)| numbers[start])
                .collect(),
        );
    }
    levels
}

/// The prefix lengths (given, or every length below the longest value's, longest first) and
/// whether every value has the same length (then labels keep it, `021**`).
fn prefix_lengths(
    text: &StringArray,
    keep: Option<&[usize]>,
    column: &str,
    table: &str,
) -> Result<(Vec<usize>, bool)> {
    let lengths: Vec<usize> = text.iter().flatten().map(|s| s.chars().count()).collect();
    let longest = lengths.iter().copied().max().unwrap_or(0);
    let uniform = lengths.windows(2).all(|w| w[0] == w[1]);
    let keep = match keep {
        Some(keep) => {
            if let Some(&first) = keep.first()
                && first >= longest
            {
                return Err(DataFusionError::Plan(format!(
                    "keep {first}: the values of column '{column}' of {table} have at most \
                     {longest} characters; keep fewer"
                )));
            }
            keep.to_vec()
        }
        None => (1..longest).rev().collect(),
    };
    Ok((keep, uniform))
}

/// The first `n` characters of each value, then `*` for each character dropped (`uniform`)
/// or one `*` (values of mixed lengths: a code and its longer refinements share the label).
fn prefix_labels(text: &StringArray, n: usize, uniform: bool) -> StringArray {
    let mut out = StringBuilder::with_capacity(text.len(), text.value_data().len() + text.len());
    let mut label = String::new();
    for value in text.iter() {
        let Some(value) = value else {
            out.append_null();
            continue;
        };
        label.clear();
        let kept = value
            .char_indices()
            .nth(n)
            .map_or(value.len(), |(at, _)| at);
        label.push_str(&value[..kept]);
        if uniform {
            let dropped = value[kept..].chars().count();
            label.extend(std::iter::repeat_n('*', dropped));
        } else {
            label.push('*');
        }
        out.append_value(&label);
    }
    out.finish()
}

/// A group of a category level: its leaves (indices of the distinct values) and rows.
struct Group {
    label: String,
    rows: u64,
    leaves: Vec<usize>,
}

/// Members shown in a merged group's label before `… +N`.
const SHOWN_MEMBERS: usize = 3;

/// The label of a merged group: `{a, b, c, … +4}`, its first leaves in text order.
fn group_label(text: &StringArray, leaves: &[usize]) -> String {
    let mut members: Vec<&str> = leaves.iter().map(|&i| text.value(i)).collect();
    members.sort_unstable();
    let shown = members[..members.len().min(SHOWN_MEMBERS)].join(", ");
    match members.len().saturating_sub(SHOWN_MEMBERS) {
        0 => format!("{{{shown}}}"),
        more => format!("{{{shown}, … +{more}}}"),
    }
}

/// The category levels over the leaves `text` with their row `counts`: for each size, the
/// groups of the level below with fewer rows merged, rarest first (ties by label), until each
/// merged group reaches the size; a remainder short of it joins the last merged group, else
/// the smallest group that needed no merging. Stops before a level with a single group.
fn category_levels(
    text: &StringArray,
    counts: &[u64],
    min_sizes: &[u64],
) -> Vec<(u64, DictionaryArray<UInt32Type>)> {
    let mut groups: Vec<Group> = (0..text.len())
        .map(|i| Group {
            label: text.value(i).to_string(),
            rows: counts[i],
            leaves: vec![i],
        })
        .collect();
    let mut levels = Vec::new();
    for &size in min_sizes {
        groups.sort_by(|a, b| a.rows.cmp(&b.rows).then_with(|| a.label.cmp(&b.label)));
        let rare = groups.partition_point(|g| g.rows < size);
        let common = groups.split_off(rare);
        let mut merged: Vec<Group> = Vec::new();
        let mut bin: Option<Group> = None;
        for group in groups {
            let mut current = bin.take().unwrap_or(Group {
                label: String::new(),
                rows: 0,
                leaves: Vec::new(),
            });
            current.rows += group.rows;
            current.leaves.extend(group.leaves);
            if current.rows >= size {
                merged.push(current);
            } else {
                bin = Some(current);
            }
        }
        let mut next = common;
        if let Some(rest) = bin {
            let into = match merged.last_mut() {
                Some(last) => Some(last),
                // the smallest common group (they are in ascending order)
                None => next.first_mut(),
            };
            match into {
                Some(group) => {
                    group.rows += rest.rows;
                    group.leaves.extend(rest.leaves);
                    group.label = group_label(text, &group.leaves);
                }
                None => merged.push(rest),
            }
        }
        for group in merged.iter_mut() {
            group.label = match group.leaves.as_slice() {
                [one] => text.value(*one).to_string(),
                leaves => group_label(text, leaves),
            };
        }
        next.extend(merged);
        groups = next;
        if groups.len() < 2 {
            break;
        }
        let mut label_of: Vec<u32> = vec![0; text.len()];
        for (g, group) in groups.iter().enumerate() {
            for &leaf in &group.leaves {
                label_of[leaf] = g as u32;
            }
        }
        let labels = StringArray::from_iter_values(groups.iter().map(|g| g.label.as_str()));
        levels.push((
            size,
            DictionaryArray::new(UInt32Array::from(label_of), Arc::new(labels)),
        ));
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generalize::DateUnit;
    use datafusion::arrow::array::{Date32Array, Int32Array, Int64Array, UInt64Array};

    /// A level's labels, whatever their encoding.
    fn strings(a: &ArrayRef) -> Vec<String> {
        let text = cast(a, &DataType::Utf8).unwrap();
        text.as_string::<i32>()
            .iter()
            .map(|s| s.unwrap_or("NULL").to_string())
            .collect()
    }

    fn dictionary_strings(a: &DictionaryArray<UInt32Type>) -> Vec<String> {
        let a: ArrayRef = Arc::new(a.clone());
        strings(&a)
    }

    #[test]
    fn consecutive_bins_reach_the_target() {
        // rows 1, 2, 3, 4 with target 3: [1+2] = 3, [3] = 3, [4] = 4
        assert_eq!(
            merge_consecutive(&[(0, 1), (1, 2), (2, 3), (3, 4)], 3),
            vec![(0, 3), (2, 3), (3, 4)]
        );
        // a short remainder joins the bin before: 5, then 1 → [5 + 1]
        assert_eq!(merge_consecutive(&[(0, 5), (1, 1)], 3), vec![(0, 6)]);
        // nothing reaches the target: one bin
        assert_eq!(merge_consecutive(&[(0, 1), (1, 1)], 3), vec![(0, 2)]);
    }

    #[test]
    fn prefixes_by_hand() {
        let zips = StringArray::from(vec!["02134", "02139"]);
        assert_eq!(prefix_labels(&zips, 3, true).value(1), "021**");
        let codes = StringArray::from(vec!["J45", "J45.909", "J4"]);
        let labels = prefix_labels(&codes, 3, false);
        assert_eq!(
            labels.iter().flatten().collect::<Vec<_>>(),
            vec!["J45*", "J45*", "J4*"]
        );
        // a multi-byte character counts once
        let text = StringArray::from(vec!["äbc"]);
        assert_eq!(prefix_labels(&text, 1, true).value(0), "ä**");
    }

    #[test]
    fn categories_merge_rare_values_first() {
        // counts a 50, b 1, c 2, d 3, e 40 with target 5: ascending b 1, c 2, d 3, e 40,
        // a 50; b + c = 3 < 5, + d = 6 ≥ 5 closes {b, c, d}; e and a stay
        let text = StringArray::from(vec!["a", "b", "c", "d", "e"]);
        let levels = category_levels(&text, &[50, 1, 2, 3, 40], &[5, 60]);
        let level1 = dictionary_strings(&levels[0].1);
        assert_eq!(
            level1,
            vec!["a", "{b, c, d}", "{b, c, d}", "{b, c, d}", "e"]
        );
        // target 60: {b, c, d} 6 and e 40 are rare: 46 < 60; the remainder joins the
        // smallest common group, a (50): one group of all, so the level is left out
        assert_eq!(levels.len(), 1);
        // a remainder that joins a common group: a 50, b 1 with target 5
        let text = StringArray::from(vec!["a", "b", "c"]);
        let levels = category_levels(&text, &[50, 1, 9], &[5]);
        let level1 = dictionary_strings(&levels[0].1);
        assert_eq!(level1, vec!["a", "{b, c}", "{b, c}"]);
    }

    #[test]
    fn interval_on_text_names_column_and_table() {
        let values: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
        let spec = BuilderSpec::Interval {
            widths: vec![10.0],
            origin: 0.0,
        };
        let e = build(&spec, "name", "people.csv", &values, &[1])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column 'name' of people.csv is Utf8: kind interval needs a numeric column"),
            "{e}"
        );
    }

    #[test]
    fn every_kind_ends_in_the_top() {
        let ages: ArrayRef = Arc::new(Int64Array::from(vec![34, 21, 27]));
        let spec = BuilderSpec::Interval {
            widths: vec![10.0, 20.0],
            origin: 0.0,
        };
        let levels = build(&spec, "age", "t", &ages, &[1, 1, 1]).unwrap();
        // sorted 21, 27, 34: width 10 → [20, 30), [20, 30), [30, 40); width 20 → [20, 40)
        assert_eq!(strings(&levels.labels[0]), vec!["21", "27", "34"]);
        assert_eq!(
            strings(&levels.labels[1]),
            vec!["[20, 30)", "[20, 30)", "[30, 40)"]
        );
        assert_eq!(strings(&levels.labels[2]), vec!["[20, 40)"; 3]);
        assert_eq!(strings(&levels.labels[3]), vec!["*"; 3]);
        // 2024-03-15 is day 19797 after 1970-01-01
        let days: ArrayRef = Arc::new(Date32Array::from(vec![19797]));
        let spec = BuilderSpec::Date {
            units: vec![DateUnit::Month, DateUnit::Year],
        };
        let levels = build(&spec, "d", "t", &days, &[1]).unwrap();
        let by_level: Vec<String> = levels.labels.iter().map(|l| strings(l).remove(0)).collect();
        assert_eq!(by_level, vec!["2024-03-15", "2024-03", "2024", "*"]);
    }

    #[test]
    fn integer_values_sort_as_the_comparison_sort_does() {
        let narrow: ArrayRef = Arc::new(Int32Array::from(vec![7, -2, 3, 1000, -50]));
        let wide: ArrayRef = Arc::new(Int64Array::from(vec![5, -3, 1 << 40, 0, -(1 << 40)]));
        let dates: ArrayRef = Arc::new(Date32Array::from(vec![19797, 0, -5]));
        let beyond_i64: ArrayRef = Arc::new(UInt64Array::from(vec![u64::MAX, 1, 3]));
        // the radix sort for a span under 2^32, the comparison sort beyond
        assert!(integer_order(&narrow).unwrap().is_some());
        assert!(integer_order(&dates).unwrap().is_some());
        assert!(integer_order(&wide).unwrap().is_none());
        assert!(integer_order(&beyond_i64).unwrap().is_none());
        for values in [narrow, wide, dates, beyond_i64] {
            let counts: Vec<u64> = (0..values.len() as u64).map(|i| 10 * i + 1).collect();
            let (got, got_counts) = sorted(&values, &counts).unwrap();
            // the reference: Arrow's comparison sort
            let order = sort_to_indices(&values, None, None).unwrap();
            assert_eq!(&got, &take(&values, &order, None).unwrap());
            let want_counts: Vec<u64> =
                order.values().iter().map(|&i| counts[i as usize]).collect();
            assert_eq!(got_counts, want_counts);
        }
    }
}
