//! Fast indexes in front of a growing domain's hash maps ([`super::value_codes::ValueCodes`]'s
//! `intern`), for the common quasi-identifier shapes: integers within a small range (ages,
//! years, codes) and short text (zip codes, sex, country codes). A row whose value is already
//! indexed gets its code with one array read ([`DenseInts`]) or one probe of a one-word table
//! ([`ShortTexts`]), without hashing into the map; a new value is coded by the map (the one
//! source of codes) and then added here. Either index gives up for good, leaving the map to
//! do the work, when the domain outgrows it, so results never depend on them.

use hashbrown::HashMap;

use super::direct_table::DirectTable;

/// The widest range of integers [`DenseInts`] indexes.
pub const DENSE_INT_RANGE: usize = 1 << 16;

/// Codes of integers by `value − min`, over a window of at most [`DENSE_INT_RANGE`] values
/// that widens (doubling, so a domain met in increasing or decreasing order costs few copies)
/// as values outside it come.
#[derive(Debug, Default)]
pub enum DenseInts {
    /// no value yet
    #[default]
    Empty,
    /// `codes[value − min]`, `u32::MAX` for a value not seen
    Window { min: i64, codes: Vec<u32> },
    /// the values span more than [`DENSE_INT_RANGE`]: the map alone
    Wide,
}

impl DenseInts {
    /// The code of `value`, if indexed.
    #[inline]
    pub fn get(&self, value: i64) -> Option<u32> {
        let Self::Window { min, codes } = self else {
            return None;
        };
        if value < *min {
            return None;
        }
        // exact: 0 ≤ value − min < 2^64
        let at = (value as u64).wrapping_sub(*min as u64);
        match codes.get(usize::try_from(at).ok()?) {
            Some(&code) if code != u32::MAX => Some(code),
            _ => None,
        }
    }

    /// Indexes `value` under `code`, widening the window or giving up (see type docs).
    pub fn insert(&mut self, value: i64, code: u32) {
        let (min, codes) = match self {
            Self::Wide => return,
            Self::Empty => {
                *self = Self::Window {
                    min: value,
                    codes: vec![code],
                };
                return;
            }
            Self::Window { min, codes } => (min, codes),
        };
        let lo = i128::from((*min).min(value));
        let hi = i128::from(*min) + codes.len() as i128 - 1;
        let hi = hi.max(i128::from(value));
        let span = hi - lo + 1;
        if span > DENSE_INT_RANGE as i128 {
            *self = Self::Wide;
            return;
        }
        if span > codes.len() as i128 {
            let len = span
                .max(2 * codes.len() as i128)
                .min(DENSE_INT_RANGE as i128);
            // the room to spare on the side the window grew
            let start = if i128::from(value) < i128::from(*min) {
                hi - len + 1
            } else {
                lo
            };
            // within i64, still covering lo..=hi (len ≥ span)
            let start = start
                .max(i128::from(i64::MIN))
                .min(i128::from(i64::MAX) - len + 1);
            let mut wider = vec![u32::MAX; len as usize];
            let offset = (i128::from(*min) - start) as usize;
            wider[offset..offset + codes.len()].copy_from_slice(codes);
            *codes = wider;
            *min = start as i64;
        }
        let at = (i128::from(value) - i128::from(*min)) as usize;
        codes[at] = code;
    }
}

/// Longest text [`ShortTexts`] indexes: its bytes, and its length in 3 bits, fit one key of
/// at most 51 bits.
pub const SHORT_TEXT: u32 = 6;

/// The key of an inline view's value of at most `longest` (≤ [`SHORT_TEXT`]) bytes: its bytes
/// (those past its length ignored), its length above them; `8 · longest + 3` bits.
#[inline]
pub fn short_text_key(view: u128, longest: u32) -> u64 {
    let len = view as u32;
    let bytes = (view >> 32) as u64 & ((1u64 << (8 * len)) - 1);
    bytes | u64::from(len) << (8 * longest)
}

/// Codes of text values of at most [`SHORT_TEXT`] bytes in a [`DirectTable`] keyed by
/// [`short_text_key`], its key only as wide as the longest value seen needs (so that more
/// codes fit the rest of the word); rebuilt from the map's inline values when a longer value
/// or more codes come.
#[derive(Debug, Default)]
pub enum ShortTexts {
    /// no value yet
    #[default]
    Empty,
    Table {
        table: DirectTable,
        /// the longest value indexed, in bytes
        longest: u32,
    },
    /// a value longer than [`SHORT_TEXT`] or more codes than the table's words hold: the
    /// map alone
    Off,
}

impl ShortTexts {
    /// The code of the (non-NULL) value of `view`, if indexed.
    #[inline]
    pub fn get(&self, view: u128) -> Option<u32> {
        match self {
            Self::Table { table, longest } if view as u32 <= *longest => {
                table.get(short_text_key(view, *longest))
            }
            _ => None,
        }
    }

    /// Asks the CPU to load the slot of `view`'s value (a hint).
    #[inline]
    pub fn prefetch(&self, view: u128) {
        if let Self::Table { table, longest } = self
            && view as u32 <= *longest
        {
            table.prefetch(short_text_key(view, *longest));
        }
    }

    /// Indexes the (non-NULL) value of `view`, just coded `code` by the map `inline` (an
    /// inline view's value → its code; `inline` already holds it when it is inline), or gives
    /// up (see type docs).
    pub fn insert(&mut self, view: u128, code: u32, inline: &HashMap<u128, u32>) {
        let len = view as u32;
        if len > SHORT_TEXT {
            *self = Self::Off;
            return;
        }
        match self {
            Self::Off => return,
            Self::Table { table, longest } if len <= *longest && table.has_room_for(code) => {
                table.insert(short_text_key(view, *longest), code);
                return;
            }
            _ => {}
        }
        let longest = match self {
            Self::Table { longest, .. } => (*longest).max(len),
            _ => len,
        };
        *self = Self::rebuilt(longest, code, inline);
    }

    /// A table of the map's values (all of at most `longest` bytes), with room for as many
    /// more and for codes past `code`.
    fn rebuilt(longest: u32, code: u32, inline: &HashMap<u128, u32>) -> Self {
        let key_bits = 8 * longest + 3;
        let max_code = ((1u64 << (64 - key_bits)) - 2).min(u64::from(u32::MAX) - 1) as u32;
        if code >= max_code {
            return Self::Off;
        }
        let Some(mut table) = DirectTable::new(2 * inline.len().max(32), key_bits, max_code) else {
            return Self::Off;
        };
        for (&view, &code) in inline {
            if view as u32 > longest {
                return Self::Off;
            }
            table.insert(short_text_key(view, longest), code);
        }
        Self::Table { table, longest }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The window against a map, over values met in random, increasing and decreasing order,
    /// at both ends of i64 and across a range too wide (then nothing is indexed).
    #[test]
    fn dense_ints_index_what_a_map_holds() {
        let mut rng = SplitMix64(7);
        let cases: Vec<Vec<i64>> = vec![
            (0..3_000)
                .map(|_| (rng.next_u64() % 101) as i64 - 50)
                .collect(),
            (0..60_000).collect(),
            (0..60_000).rev().collect(),
            (0..70_000).collect(),
            (0..20).map(|d| i64::MAX - 19 + d).collect(),
            (0..20).map(|d| i64::MIN + 19 - d).collect(),
            vec![i64::MAX, i64::MAX - 5, i64::MAX - 70_000, i64::MAX - 1],
            vec![i64::MIN + 3, i64::MIN, i64::MIN + 65_535, i64::MIN + 65_536],
            vec![5, -5, i64::MIN, 5, 6],
        ];
        for values in cases {
            let mut dense = DenseInts::default();
            let mut map: HashMap<i64, u32> = HashMap::new();
            for &v in &values {
                let next = map.len() as u32;
                let code = *map.entry(v).or_insert(next);
                dense.insert(v, code);
            }
            let (lo, hi) = (values.iter().min().unwrap(), values.iter().max().unwrap());
            let fits = (*hi as i128 - *lo as i128) < DENSE_INT_RANGE as i128;
            for &v in &values {
                let expected = fits.then(|| map[&v]);
                assert_eq!(dense.get(v), expected, "{v}");
            }
            // values never inserted are never found
            for probe in [
                lo.saturating_sub(1),
                hi.saturating_add(1),
                i64::MIN,
                i64::MAX,
            ] {
                if !map.contains_key(&probe) {
                    assert_eq!(dense.get(probe), None, "{probe}");
                }
            }
            assert_eq!(matches!(dense, DenseInts::Wide), !fits);
        }
    }

    /// Codes by first sight, as a brute-force list gives them, through `ValueCodes::intern`
    /// over several arrays: short text (the index on, rebuilt as longer values and more codes
    /// come), then values of 7 and 20 bytes (the index off), NULLs throughout; integers
    /// within a small range, then far outside it.
    #[test]
    fn growing_domains_code_values_by_first_sight() {
        use std::sync::Arc;

        use datafusion::arrow::array::{ArrayRef, Int64Array, StringViewArray};
        use datafusion::arrow::datatypes::DataType;

        use crate::packing::value_codes::ValueCodes;

        fn reference<T: PartialEq + Clone>(rows: &[Option<T>]) -> Vec<u32> {
            let mut seen: Vec<Option<T>> = Vec::new();
            rows.iter()
                .map(|v| match seen.iter().position(|s| s == v) {
                    Some(code) => code as u32,
                    None => {
                        seen.push(v.clone());
                        seen.len() as u32 - 1
                    }
                })
                .collect()
        }
        let mut rng = SplitMix64(11);
        // 10,001 distinct values of 0 to 6 bytes (hex, some with a suffix of "zz"): past the
        // 8,190 codes a table of 6-byte keys holds, which turns the index off
        let short: Vec<String> = std::iter::once(String::new())
            .chain((0..10_000u64).map(|i| {
                let hex = format!("{i:x}");
                if i % 3 == 0 { hex + "zz" } else { hex }
            }))
            .collect();
        let mut text_rows: Vec<Option<String>> = Vec::new();
        for batch in 0..10 {
            for _ in 0..3_000 {
                let r = rng.next_u64();
                text_rows.push(match (batch, r % 50) {
                    (_, 0) => None,
                    (8.., 1) => Some("seven!!".to_string()),
                    (9, 2) => Some(format!("a value of twenty {}", r % 10)),
                    // early batches meet few values (and short ones), later ones all
                    _ => {
                        let range = (400 << batch).min(short.len());
                        Some(short[(r % range as u64) as usize].clone())
                    }
                });
            }
        }
        let mut codes = ValueCodes::new(&DataType::Utf8View).unwrap();
        let (mut out, mut first) = (Vec::new(), Vec::new());
        for chunk in text_rows.chunks(3_000) {
            let array: ArrayRef = Arc::new(StringViewArray::from(
                chunk.iter().map(|v| v.as_deref()).collect::<Vec<_>>(),
            ));
            codes.intern(&array, &mut out, &mut first).unwrap();
        }
        assert_eq!(out, reference(&text_rows));
        // integers: −40..=60 (the window), then a value 2^40 away (the map alone), NULLs
        let int_rows: Vec<Option<i64>> = (0..6_000)
            .map(|i| match rng.next_u64() % 40 {
                0 => None,
                1 if i > 4_000 => Some(1 << 40),
                r => Some((r as i64 * 37 + i) % 101 - 40),
            })
            .collect();
        let mut codes = ValueCodes::new(&DataType::Int64).unwrap();
        out.clear();
        for chunk in int_rows.chunks(1_000) {
            let array: ArrayRef = Arc::new(Int64Array::from(chunk.to_vec()));
            codes.intern(&array, &mut out, &mut first).unwrap();
        }
        assert_eq!(out, reference(&int_rows));
    }

    /// The inline view of a value of at most 12 bytes (its length, then its bytes).
    fn view_of(value: &str) -> u128 {
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&(value.len() as u32).to_le_bytes());
        bytes[4..4 + value.len()].copy_from_slice(value.as_bytes());
        u128::from_le_bytes(bytes)
    }

    /// The short-text index against its map: widened as longer values come (every value
    /// still found), rebuilt as codes grow, off past 8,190 codes of 6-byte keys or at a value
    /// of 7 bytes; a value of another length but the same bytes is not found.
    #[test]
    fn short_texts_index_what_the_map_holds() {
        let mut map: HashMap<u128, u32> = HashMap::new();
        let mut index = ShortTexts::default();
        let mut add = |value: &str, index: &mut ShortTexts| {
            let view = view_of(value);
            let code = map.len() as u32;
            map.insert(view, code);
            index.insert(view, code, &map);
            code
        };
        let values: Vec<String> = (0..8_000).map(|i| format!("{i}")).collect();
        for v in &values {
            add(v, &mut index);
        }
        assert!(matches!(index, ShortTexts::Table { longest: 4, .. }));
        for (code, v) in values.iter().enumerate() {
            assert_eq!(index.get(view_of(v)), Some(code as u32), "{v}");
        }
        // "1" and "1\0" share their bytes, not their length
        assert_eq!(index.get(view_of("1\0")), None);
        assert_eq!(index.get(view_of("")), None);
        let code = add("123456", &mut index);
        assert!(matches!(index, ShortTexts::Table { longest: 6, .. }));
        assert_eq!(index.get(view_of("123456")), Some(code));
        assert_eq!(index.get(view_of("7999")), Some(7_999));
        // past 2^13 − 2 codes: off
        for i in 0..200 {
            add(&format!("x{i}"), &mut index);
        }
        assert!(matches!(index, ShortTexts::Off));
        assert_eq!(index.get(view_of("7999")), None);
        let mut index = ShortTexts::default();
        add("ab", &mut index);
        add("seven!!", &mut index);
        assert!(matches!(index, ShortTexts::Off));
    }
}
