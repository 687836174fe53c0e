//! Masking hierarchies: level `i` replaces the last `i` characters by `*`
//! (`12345` → `1234*` → `123**` → `12***` → `1****` → `*****`).
//!
//! Characters are Unicode scalar values, not bytes; each masked character becomes one `*`, so a
//! masked value keeps its length. A value with at most `i` characters is masked entirely at
//! level `i` (`123` at level 4 is `***`).
//!
//! A [`MaskHierarchy`] has a maximum length L (given, or the longest value of the data) and
//! levels 0 ..= L (height L + 1). Its top level L is the single value of L stars for every
//! value, whatever its length (`*****` for 5-digit zips), so that the top level suppresses
//! completely even when values differ in length; the levels below keep each value's length.
//! The SQL function `mask(col, level)` has no maximum length: it is the same recoding without
//! that top-level rule.
//!
//! Input: Utf8, LargeUtf8, Utf8View, dictionaries of them, or integers (masked in their decimal
//! form). Output: Utf8View. NULL stays NULL.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, StringArrayType, StringViewArray, StringViewBuilder,
};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};

use super::common::{
    constant_label, inline_view_key, is_integer, is_string, through_dictionary, to_labels, to_utf8,
};

/// A masking hierarchy of maximum length `max_len` (height `max_len + 1`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MaskHierarchy {
    max_len: usize,
}

impl MaskHierarchy {
    /// A masking hierarchy for values of at most `max_len` characters.
    pub fn new(max_len: usize) -> Self {
        Self { max_len }
    }

    /// A masking hierarchy whose maximum length is the longest value (in characters) of
    /// `values` (strings or integers; nulls ignored).
    pub fn from_values(values: &ArrayRef) -> Result<Self> {
        if !accepts(values.data_type()) {
            return Err(DataFusionError::Plan(format!(
                "a mask hierarchy needs string or integer values, not {}",
                values.data_type()
            )));
        }
        let strings = to_utf8(values)?;
        let max_len = strings
            .as_string::<i32>()
            .iter()
            .flatten()
            .map(|s| s.chars().count())
            .max()
            .unwrap_or(0);
        Ok(Self { max_len })
    }

    /// The maximum length L (the top level).
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// Levels including level 0: L + 1.
    pub fn height(&self) -> usize {
        self.max_len + 1
    }

    /// Recodes `values` at `level` (checked by the caller).
    pub fn generalize(&self, values: &ArrayRef, level: usize) -> Result<ArrayRef> {
        if level == 0 {
            return to_labels(values);
        }
        if level >= self.max_len {
            return constant_label(values, &"*".repeat(self.max_len));
        }
        mask_values(values, level)
    }
}

/// Whether a mask hierarchy accepts a column of this type.
pub fn accepts(data_type: &DataType) -> bool {
    is_string(data_type) || is_integer(data_type) || data_type == &DataType::Null
}

/// Replaces the last `level` characters of each value by `*` (the SQL function `mask`).
/// Strings, dictionaries of strings, integers; output Utf8View; NULL stays NULL.
pub fn mask_values(values: &ArrayRef, level: usize) -> Result<ArrayRef> {
    if !accepts(values.data_type()) {
        return Err(DataFusionError::Plan(format!(
            "mask needs a string or integer column, not {}",
            values.data_type()
        )));
    }
    if level == 0 {
        return to_labels(values);
    }
    if let Some(out) = through_dictionary(values, |v| mask_values(v, level))? {
        return Ok(out);
    }
    match values.data_type() {
        DataType::Utf8 => Ok(mask_strings(values.as_string::<i32>(), level)),
        DataType::LargeUtf8 => Ok(mask_strings(values.as_string::<i64>(), level)),
        DataType::Utf8View => {
            let strings = values.as_string_view();
            Ok(mask_inline_ascii(strings, level).unwrap_or_else(|| mask_strings(strings, level)))
        }
        _ => mask_values(&to_utf8(values)?, level),
    }
}

const STARS: &str = "********************************";

/// The masks of a Utf8View array whose strings are all ASCII and inline (at most 12 bytes,
/// as zip codes and most codes are), computed on the views themselves: the last `level`
/// bytes of each become `*`, with no string built per row. `None` for any other array.
fn mask_inline_ascii(strings: &StringViewArray, level: usize) -> Option<ArrayRef> {
    const ASCII_HIGH_BITS: u128 = 0x8080_8080_8080_8080_8080_8080 << 32;
    const STAR_BYTES: u128 = u128::from_le_bytes([b'*'; 16]);
    let mut views = Vec::with_capacity(strings.len());
    for (row, &view) in strings.views().iter().enumerate() {
        if strings.is_null(row) {
            views.push(0);
            continue;
        }
        let view = inline_view_key(view)?;
        if view & ASCII_HIGH_BITS != 0 {
            return None;
        }
        let len = (view as u32) as usize;
        let kept = len.saturating_sub(level);
        if kept == len {
            views.push(view);
            continue;
        }
        // bytes kept..len of the string are bytes 4+kept..4+len of the view
        let tail = ((1u128 << (8 * (len - kept))) - 1) << (8 * (4 + kept));
        views.push((view & !tail) | (tail & STAR_BYTES));
    }
    // SAFETY: every view is inline (length ≤ 12, so no buffer is referenced), zero padded,
    // and holds ASCII bytes (the input's, or `*`), hence valid UTF-8; null rows' views are 0
    let masked =
        unsafe { StringViewArray::new_unchecked(views.into(), vec![], strings.nulls().cloned()) };
    Some(Arc::new(masked))
}

fn mask_strings<'a, S: StringArrayType<'a>>(strings: S, level: usize) -> ArrayRef {
    let mut out = StringViewBuilder::with_capacity(strings.len());
    // one buffer for every row's label (no allocation per row)
    let mut label = String::new();
    for value in strings.iter() {
        let Some(s) = value else {
            out.append_null();
            continue;
        };
        label.clear();
        // the byte where the masked tail starts, and how many characters it has
        let (mut cut, mut masked) = (s.len(), 0);
        for (i, _) in s.char_indices().rev().take(level) {
            cut = i;
            masked += 1;
        }
        label.push_str(&s[..cut]);
        while masked > 0 {
            let n = masked.min(STARS.len());
            label.push_str(&STARS[..n]);
            masked -= n;
        }
        out.append_value(&label);
    }
    Arc::new(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{DictionaryArray, Int64Array, StringArray, StringViewArray};
    use datafusion::arrow::datatypes::Int32Type;

    fn strings(a: &ArrayRef) -> Vec<Option<&str>> {
        assert_eq!(a.data_type(), &DataType::Utf8View);
        a.as_string_view().iter().collect()
    }

    #[test]
    fn masks_the_last_characters() {
        let zips: ArrayRef = Arc::new(StringArray::from(vec![Some("12345"), None, Some("123")]));
        let h = MaskHierarchy::from_values(&zips).unwrap();
        assert_eq!(h.height(), 6); // levels 0..=5
        // by hand: 12345 → 1234* → 123** → 12*** → 1**** → *****; 123 keeps its length
        // below the top: 123 → 12* → 1** → *** → ***; at the top (5) every value is *****
        let expected: [[Option<&str>; 3]; 6] = [
            [Some("12345"), None, Some("123")],
            [Some("1234*"), None, Some("12*")],
            [Some("123**"), None, Some("1**")],
            [Some("12***"), None, Some("***")],
            [Some("1****"), None, Some("***")],
            [Some("*****"), None, Some("*****")],
        ];
        for (level, want) in expected.iter().enumerate() {
            assert_eq!(strings(&h.generalize(&zips, level).unwrap()), want.to_vec());
        }
    }

    #[test]
    fn every_string_type_and_integers() {
        let want = vec![Some("4**"), Some("é**"), None];
        let view: ArrayRef = Arc::new(StringViewArray::from(vec![Some("479"), Some("éàü"), None]));
        assert_eq!(strings(&mask_values(&view, 2).unwrap()), want);
        let large = datafusion::arrow::compute::cast(&view, &DataType::LargeUtf8).unwrap();
        assert_eq!(strings(&mask_values(&large, 2).unwrap()), want);
        let dict: ArrayRef = Arc::new(
            vec![Some("479"), Some("éàü"), None]
                .into_iter()
                .collect::<DictionaryArray<Int32Type>>(),
        );
        assert_eq!(strings(&mask_values(&dict, 2).unwrap()), want);
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![Some(47905), None]));
        assert_eq!(
            strings(&mask_values(&ints, 2).unwrap()),
            vec![Some("479**"), None]
        );
        // a level beyond the length masks everything, each character once
        assert_eq!(
            strings(&mask_values(&ints, 40).unwrap()),
            vec![Some("*****"), None]
        );
        let long: ArrayRef = Arc::new(StringArray::from(vec!["a".repeat(40)]));
        assert_eq!(
            strings(&mask_values(&long, 39).unwrap()),
            vec![Some(format!("a{}", "*".repeat(39)).as_str())]
        );
    }

    #[test]
    fn inline_views_mask_like_strings() {
        // the view path (inline ASCII Utf8View) against the string path (Utf8), on random
        // strings of 0 to 12 bytes with NULLs, at levels below, at and beyond their lengths
        let mut rng = crate::rng::SplitMix64(5);
        let values: Vec<Option<String>> = (0..400)
            .map(|_| {
                (rng.below(8) > 0).then(|| {
                    let len = rng.below(13) as usize;
                    (0..len)
                        .map(|_| (b' ' + rng.below(95) as u8) as char)
                        .collect()
                })
            })
            .collect();
        let view: ArrayRef = Arc::new(StringViewArray::from(values.clone()));
        let utf8: ArrayRef = Arc::new(StringArray::from(values));
        for level in 0..15 {
            let fast = view.as_string_view();
            let got = mask_inline_ascii(fast, level).unwrap();
            assert_eq!(
                strings(&got),
                strings(&mask_values(&utf8, level).unwrap()),
                "level {level}"
            );
        }
        // a long or non-ASCII string leaves the whole array to the string path
        let long: ArrayRef = Arc::new(StringViewArray::from(vec!["12345", "1234567890123"]));
        assert!(mask_inline_ascii(long.as_string_view(), 2).is_none());
        let accents: ArrayRef = Arc::new(StringViewArray::from(vec!["12345", "éàü"]));
        assert!(mask_inline_ascii(accents.as_string_view(), 2).is_none());
    }

    #[test]
    fn rejects_dates() {
        let dates: ArrayRef = Arc::new(datafusion::arrow::array::Date32Array::from(vec![1]));
        assert!(mask_values(&dates, 1).is_err());
        assert!(MaskHierarchy::from_values(&dates).is_err());
    }
}
