//! Pieces shared by the hierarchy kinds and the recoding functions: input type classes,
//! label formatting, and the "label each distinct code once, gather rows with `take`" kernel.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, StringViewArray, StringViewBuilder, UInt32Array,
    new_null_array,
};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, UInt32Type};
use datafusion::error::{DataFusionError, Result};

/// The label of the top level of every hierarchy (full suppression).
pub const TOP_LABEL: &str = "*";

/// The value type of a (possibly nested) dictionary type.
pub fn value_type(data_type: &DataType) -> &DataType {
    match data_type {
        DataType::Dictionary(_, value) => value_type(value),
        other => other,
    }
}

/// Utf8, LargeUtf8, Utf8View (or a dictionary of them).
pub fn is_string(data_type: &DataType) -> bool {
    matches!(
        value_type(data_type),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Signed or unsigned integers (or a dictionary of them).
pub fn is_integer(data_type: &DataType) -> bool {
    value_type(data_type).is_integer()
}

/// Integers, floats and decimals (or a dictionary of them).
pub fn is_number(data_type: &DataType) -> bool {
    value_type(data_type).is_numeric()
}

/// Date32, Date64 and timestamps of any unit and time zone (or a dictionary of them).
pub fn is_temporal(data_type: &DataType) -> bool {
    matches!(
        value_type(data_type),
        DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
    )
}

/// The type of every recoded column. Labels are short (`1234*`, `[20, 30)`, `*`), so as
/// Utf8View they are stored inline in the 16-byte views: grouping, joining and comparing
/// recoded columns compares two integers per value instead of calling `memcmp` on bytes
/// (measured: the largest single cost of counting the classes of recoded Utf8 columns).
pub const LABEL_TYPE: DataType = DataType::Utf8View;

/// The longest string a Utf8View view holds inline.
pub const INLINE_MAX: usize = 12;

/// The key of a Utf8View value of at most 12 bytes: its view (length and bytes) with the
/// unused bytes cleared, so equal strings have equal keys whoever wrote the view. `None` for
/// longer strings, whose views point into a buffer. Lets short strings be hashed and compared
/// as one integer instead of through `memcmp`.
#[inline]
pub fn inline_view_key(view: u128) -> Option<u128> {
    let len = (view as u32) as usize;
    match len {
        INLINE_MAX => Some(view),
        len if len < INLINE_MAX => Some(view & ((1u128 << (32 + 8 * len)) - 1)),
        _ => None,
    }
}

/// [`inline_view_key`] of a string's bytes (`None` beyond 12 bytes).
pub fn inline_bytes_key(bytes: &[u8]) -> Option<u128> {
    if bytes.len() > INLINE_MAX {
        return None;
    }
    let mut view = [0u8; 16];
    view[..4].copy_from_slice(&(bytes.len() as u32).to_le_bytes());
    view[4..4 + bytes.len()].copy_from_slice(bytes);
    Some(u128::from_le_bytes(view))
}

/// The values as labels of level 0 (themselves, as text): [`LABEL_TYPE`] through Arrow's
/// standard cast (the text of `CAST(x AS VARCHAR)`).
pub fn to_labels(values: &ArrayRef) -> Result<ArrayRef> {
    if values.data_type() == &LABEL_TYPE {
        return Ok(Arc::clone(values));
    }
    Ok(cast(values, &LABEL_TYPE)?)
}

/// The values as Utf8, through Arrow's standard cast (the text of `CAST(x AS VARCHAR)`).
pub fn to_utf8(values: &ArrayRef) -> Result<ArrayRef> {
    if values.data_type() == &DataType::Utf8 {
        return Ok(Arc::clone(values));
    }
    Ok(cast(values, &DataType::Utf8)?)
}

/// One label for every non-null row; null rows (logical nulls, so dictionary values count)
/// stay null.
pub fn constant_label(values: &ArrayRef, label: &str) -> Result<ArrayRef> {
    let len = values.len();
    let nulls = values.logical_nulls();
    if nulls.as_ref().is_some_and(|n| n.null_count() == len) {
        return Ok(new_null_array(&LABEL_TYPE, len));
    }
    let labels = StringViewArray::from(vec![label]);
    let indices = UInt32Array::new(vec![0u32; len].into(), nulls);
    Ok(take(&labels, &indices, None)?)
}

/// For a dictionary array: applies `f` to its (few) values once and gathers the result by the
/// keys, so every kind works on dictionary input at the cost of its dictionary. `None` for any
/// other array.
pub fn through_dictionary(
    values: &ArrayRef,
    f: impl FnOnce(&ArrayRef) -> Result<ArrayRef>,
) -> Result<Option<ArrayRef>> {
    let Some(dictionary) = values.as_any_dictionary_opt() else {
        return Ok(None);
    };
    let mapped = f(dictionary.values())?;
    Ok(Some(take(mapped.as_ref(), dictionary.keys(), None)?))
}

/// Rows of integer codes turned into labels: each distinct code is labelled once (`label`),
/// each row is gathered from the labels with `take`. The codes of null rows are ignored.
/// Small code ranges use a direct slot table, others a hash map; no allocation per row.
pub fn label_codes(
    codes: &[i64],
    nulls: Option<&NullBuffer>,
    label: impl FnMut(i64) -> String,
) -> Result<ArrayRef> {
    gather_labels(&label_codes_dictionary(codes, nulls, label)?)
}

/// Each row's label (Utf8View) gathered from a dictionary of labels; NULL stays NULL.
pub fn gather_labels(labelled: &DictionaryArray<UInt32Type>) -> Result<ArrayRef> {
    if labelled.values().is_empty() {
        return Ok(new_null_array(&LABEL_TYPE, labelled.len()));
    }
    Ok(take(labelled.values(), labelled.keys(), None)?)
}

/// [`label_codes`] before the gather: each row's label id (UInt32 keys, NULL where the row is
/// null) and the labels, each once (Utf8View values), in order of first appearance.
pub fn label_codes_dictionary(
    codes: &[i64],
    nulls: Option<&NullBuffer>,
    mut label: impl FnMut(i64) -> String,
) -> Result<DictionaryArray<UInt32Type>> {
    let len = codes.len();
    let valid = |i: usize| nulls.is_none_or(|n| n.is_valid(i));
    let (mut min, mut max) = (i64::MAX, i64::MIN);
    match nulls {
        None => {
            for &c in codes {
                min = min.min(c);
                max = max.max(c);
            }
        }
        Some(_) => {
            for (i, &c) in codes.iter().enumerate() {
                if valid(i) {
                    min = min.min(c);
                    max = max.max(c);
                }
            }
        }
    }
    if min > max {
        let keys = UInt32Array::new_null(len);
        let labels = new_null_array(&LABEL_TYPE, 0);
        return Ok(DictionaryArray::try_new(keys, labels)?);
    }
    let mut labels = StringViewBuilder::new();
    let mut next = 0u32;
    let span = (max as i128 - min as i128) as u128;
    let ids: Vec<u32> = if span < (2 * len as u128) + 1024 {
        let mut slots = vec![u32::MAX; span as usize + 1];
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if !valid(i) {
                    return 0;
                }
                let slot = &mut slots[(c - min) as usize];
                if *slot == u32::MAX {
                    *slot = next;
                    next += 1;
                    labels.append_value(label(c));
                }
                *slot
            })
            .collect()
    } else {
        let mut seen = hashbrown::HashMap::<i64, u32>::new();
        codes
            .iter()
            .enumerate()
            .map(|(i, &c)| {
                if !valid(i) {
                    return 0;
                }
                *seen.entry(c).or_insert_with(|| {
                    labels.append_value(label(c));
                    next += 1;
                    next - 1
                })
            })
            .collect()
    };
    let labels: ArrayRef = Arc::new(labels.finish());
    let keys = UInt32Array::new(ids.into(), nulls.cloned());
    Ok(DictionaryArray::try_new(keys, labels)?)
}

/// A number as it appears in a label: integral values without a fraction (`20`, not `20.0`),
/// others in the shortest form after rounding to 15 significant digits, so that the floating
/// point noise of `3 * 0.1` shows as `0.3`. Infinities are `inf` / `-inf`.
pub fn format_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == x.trunc() && x.abs() < 9.0e15 {
        return format!("{}", x as i64);
    }
    let rounded: f64 = format!("{x:.14e}").parse().unwrap_or(x);
    if rounded == rounded.trunc() && rounded.abs() < 9.0e15 {
        return format!("{}", rounded as i64);
    }
    format!("{rounded}")
}

/// The error for a level outside `0..height`.
pub fn check_level(hierarchy: &str, level: usize, height: usize) -> Result<()> {
    if level >= height {
        return Err(DataFusionError::Plan(format!(
            "level {level} > top level {} of hierarchy '{hierarchy}' (height {height}: levels 0 to {})",
            height.saturating_sub(1),
            height.saturating_sub(1)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int32Array;

    fn strings(a: &ArrayRef) -> Vec<Option<String>> {
        a.as_string_view()
            .iter()
            .map(|v| v.map(str::to_string))
            .collect()
    }

    #[test]
    fn numbers_print_without_noise() {
        assert_eq!(format_number(20.0), "20");
        assert_eq!(format_number(-5.0), "-5");
        assert_eq!(format_number(0.1 * 3.0), "0.3");
        assert_eq!(format_number(2.5), "2.5");
        assert_eq!(format_number(f64::INFINITY), "inf");
        assert_eq!(format_number(1e20), "100000000000000000000");
    }

    #[test]
    fn codes_are_labelled_once_and_nulls_kept() {
        let nulls = NullBuffer::from(vec![true, true, false, true]);
        let mut calls = 0;
        let out = label_codes(&[3, 5, 999_999_999, 3], Some(&nulls), |c| {
            calls += 1;
            format!("c{c}")
        })
        .unwrap();
        assert_eq!(calls, 2);
        assert_eq!(
            strings(&out),
            vec![
                Some("c3".into()),
                Some("c5".into()),
                None,
                Some("c3".into())
            ]
        );
        // a wide range takes the hash path
        let out = label_codes(&[i64::MIN, i64::MAX, i64::MIN], None, |c| c.to_string()).unwrap();
        assert_eq!(
            strings(&out)[2].as_deref(),
            Some(i64::MIN.to_string().as_str())
        );
    }

    #[test]
    fn constant_label_keeps_nulls() {
        let a: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None]));
        assert_eq!(
            strings(&constant_label(&a, "*").unwrap()),
            vec![Some("*".into()), None]
        );
    }

    #[test]
    fn level_error_names_the_hierarchy() {
        let e = check_level("age", 7, 5).unwrap_err().to_string();
        assert!(
            e.contains("level 7 > top level 4 of hierarchy 'age' (height 5"),
            "{e}"
        );
        assert!(check_level("age", 4, 5).is_ok());
    }
}
