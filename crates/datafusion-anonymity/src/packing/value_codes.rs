//! Values → dense `u32` codes, per column, vectorized: the one place both the local-recoding
//! lookup (a fixed domain: a value outside it is an error) and the bucketization's encoder (a
//! growing domain: a new value gets the next code) map values.
//!
//! Integers, dates, times, timestamps, durations and booleans are keyed by their Int64 value,
//! floats by their Float64 bits, strings and binaries by their bytes — those of at most 12
//! bytes by their inline view (length and bytes in one `u128`: no pointer to follow, no
//! `memcmp`) — and anything else by Arrow's row format. NULL has a code of its own. No
//! allocation per row except for a new long value. A growing domain's integers within a small
//! range and its text of at most 6 bytes are found first through the indexes of
//! [`super::growing`], which hash nothing.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::{SortOptions, cast};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::error::Result;
use hashbrown::HashMap;
use hashbrown::hash_map::Entry;

use super::direct_table::{DirectTable, PREFETCH_DISTANCE};
use super::growing::{DenseInts, ShortTexts};

/// The key maps of one column, by the kind of its type.
#[derive(Debug)]
enum Keys {
    Int(HashMap<i64, u32>),
    Float(HashMap<u64, u32>),
    Bytes {
        inline: HashMap<u128, u32>,
        long: HashMap<Box<[u8]>, u32>,
    },
    Rows(RowConverter, HashMap<Box<[u8]>, u32>),
}

/// One column's values and their codes.
#[derive(Debug)]
pub struct ValueCodes {
    keys: Keys,
    null: Option<u32>,
    len: u32,
    /// a fixed domain of text values of at most [`SHORT`] bytes: their codes by
    /// [`short_key`] in one-word slots (a quarter of the map's bucket size, so a domain of
    /// thousands of values stays in the first-level cache while rows are looked up)
    short: Option<DirectTable>,
    /// codes of long values by their view, valid within one array (see [`LongViews`])
    long_views: LongViews,
    /// a fixed domain of integers within a small range: their codes by `value − min`
    /// (`u32::MAX` for a value outside the domain), no hashing per row
    dense_ints: Option<(i64, Vec<u32>)>,
    /// a growing domain's integers, indexed while they span a small range
    growing_ints: DenseInts,
    /// a growing domain's text values, indexed while all are short
    growing_texts: ShortTexts,
}

/// The widest range of a fixed integer domain looked up in [`ValueCodes::dense_ints`].
const DENSE_INT_RANGE: i64 = 1 << 16;

/// Slots of the per-array memo of a text lookup (see [`ValueCodes::lookup`]).
const VIEW_MEMO_BITS: u32 = 8;

/// A direct-mapped cache of long values' codes by their view, for one array at a time. A
/// long view names its bytes by buffer and offset, which mean the same bytes only within the
/// array it comes from; Parquet's dictionary pages decode into views of one dictionary
/// buffer, so a value repeated in an array has one view, found here without hashing or
/// comparing its bytes. Entries of earlier arrays are told apart by a generation.
#[derive(Debug, Default)]
struct LongViews {
    entries: Vec<LongView>,
    generation: u32,
}

#[derive(Debug, Clone, Copy, Default)]
struct LongView {
    view: u128,
    generation: u32,
    code: u32,
}

/// Slots of [`LongViews`]: room for a batch's worth of distinct values (a batch of 8,192
/// rows of a column of 2,000 names holds about 1,700), in 96 KiB.
const LONG_VIEW_BITS: u32 = 12;

impl LongViews {
    /// Starts a new array: every entry of the last one is forgotten.
    fn next_array(&mut self) {
        if self.entries.is_empty() || self.generation == u32::MAX {
            self.entries = vec![LongView::default(); 1 << LONG_VIEW_BITS];
            self.generation = 0;
        }
        // generation 0 marks unused entries
        self.generation += 1;
    }

    #[inline]
    fn slot(view: u128) -> usize {
        view_slot(view, LONG_VIEW_BITS)
    }

    #[inline]
    fn get(&self, view: u128) -> Option<u32> {
        let entry = self.entries[Self::slot(view)];
        (entry.generation == self.generation && entry.view == view).then_some(entry.code)
    }

    #[inline]
    fn insert(&mut self, view: u128, code: u32) {
        let generation = self.generation;
        self.entries[Self::slot(view)] = LongView {
            view,
            generation,
            code,
        };
    }
}

/// The slot of `view` in a direct-mapped table of 2^`bits` slots: its two halves folded,
/// then Fibonacci hashing.
#[inline]
fn view_slot(view: u128, bits: u32) -> usize {
    let folded = (view as u64) ^ ((view >> 64) as u64);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
}

/// Longest value of a domain looked up in [`ValueCodes::short`].
const SHORT: u32 = 6;

/// The length and bytes of a value of at most [`SHORT`] bytes, from its view (bytes past the
/// length ignored), in 51 bits.
#[inline]
fn short_key(view: u128) -> u64 {
    let len = view as u32;
    let bytes = (view >> 32) as u64 & ((1u64 << (8 * len)) - 1);
    bytes | (len as u64) << 48
}

fn int_like(t: &DataType) -> bool {
    t.is_integer()
        || matches!(
            t,
            DataType::Boolean
                | DataType::Date32
                | DataType::Date64
                | DataType::Time32(_)
                | DataType::Time64(_)
                | DataType::Timestamp(_, _)
                | DataType::Duration(_)
        )
}

fn bytes_like(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
    )
}

/// Longest value kept whole in an Arrow view.
const INLINE: u32 = 12;

/// The view of a value of at most [`INLINE`] bytes with every byte past its length zeroed:
/// equal values, equal keys.
#[inline]
fn inline_key(view: u128) -> u128 {
    let bits = 32 + 8 * (view as u32) as usize;
    if bits >= 128 {
        view
    } else {
        view & ((1u128 << bits) - 1)
    }
}

/// A string or binary value: its inline key (at most 12 bytes) or its bytes; or NULL.
enum BytesKey<'a> {
    Inline(u128),
    Long(&'a [u8]),
    Null,
}

/// Calls `f(row, key)` for each row of a string or binary array, in order.
fn for_each_bytes(
    values: &ArrayRef,
    mut f: impl FnMut(usize, BytesKey<'_>) -> Result<()>,
) -> Result<()> {
    let values = cast(values, &DataType::BinaryView)?;
    let values = values.as_binary_view();
    let views = values.views();
    for i in 0..values.len() {
        if values.is_null(i) {
            f(i, BytesKey::Null)?;
            continue;
        }
        let view = views[i];
        if (view as u32) <= INLINE {
            f(i, BytesKey::Inline(inline_key(view)))?;
        } else {
            f(i, BytesKey::Long(values.value(i)))?;
        }
    }
    Ok(())
}

/// The code of NULL, assigning `next` (and noting `row` as a first occurrence) when new.
#[inline]
fn intern_null(null: &mut Option<u32>, next: &mut u32, row: usize, first: &mut Vec<u32>) -> u32 {
    *null.get_or_insert_with(|| {
        let code = *next;
        *next += 1;
        first.push(row as u32);
        code
    })
}

/// The code of `key` in `map`, assigning `next` (and noting `row` as a first occurrence)
/// when it is new.
#[inline]
fn intern_key<K: std::hash::Hash + Eq>(
    map: &mut HashMap<K, u32>,
    key: K,
    next: &mut u32,
    row: usize,
    first: &mut Vec<u32>,
) -> u32 {
    match map.entry(key) {
        Entry::Occupied(e) => *e.get(),
        Entry::Vacant(e) => {
            let code = *next;
            e.insert(code);
            *next += 1;
            first.push(row as u32);
            code
        }
    }
}

impl ValueCodes {
    /// Values coded so far (NULL included).
    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// No values yet, for columns of type `data_type`.
    pub fn new(data_type: &DataType) -> Result<Self> {
        let keys = if int_like(data_type) {
            Keys::Int(HashMap::new())
        } else if data_type.is_floating() {
            Keys::Float(HashMap::new())
        } else if bytes_like(data_type) {
            Keys::Bytes {
                inline: HashMap::new(),
                long: HashMap::new(),
            }
        } else {
            Keys::Rows(
                RowConverter::new(vec![SortField::new_with_options(
                    data_type.clone(),
                    SortOptions::default(),
                )])?,
                HashMap::new(),
            )
        };
        Ok(Self {
            keys,
            null: None,
            len: 0,
            short: None,
            long_views: LongViews::default(),
            dense_ints: None,
            growing_ints: DenseInts::default(),
            growing_texts: ShortTexts::default(),
        })
    }

    /// The [`ValueCodes::short`] table of a text domain whose values all have at most
    /// [`SHORT`] bytes.
    fn short_table(&self) -> Option<DirectTable> {
        let Keys::Bytes { inline, long } = &self.keys else {
            return None;
        };
        if !long.is_empty() || inline.keys().any(|&key| key as u32 > SHORT) {
            return None;
        }
        let mut table = DirectTable::new(inline.len(), 51, self.len)?;
        for (&key, &code) in inline {
            table.insert(short_key(key), code);
        }
        Some(table)
    }

    /// The [`ValueCodes::dense_ints`] table of an integer domain within
    /// [`DENSE_INT_RANGE`].
    fn dense_int_table(&self) -> Option<(i64, Vec<u32>)> {
        let Keys::Int(map) = &self.keys else {
            return None;
        };
        let min = *map.keys().min()?;
        let max = *map.keys().max()?;
        if max.checked_sub(min)? >= DENSE_INT_RANGE {
            return None;
        }
        let mut table = vec![u32::MAX; (max - min + 1) as usize];
        for (&value, &code) in map {
            table[(value - min) as usize] = code;
        }
        Some((min, table))
    }

    /// The codes of `values` (code = position) for columns of type `data_type`.
    pub fn of_domain(values: &ArrayRef, data_type: &DataType) -> Result<Self> {
        let values = if values.data_type() == data_type {
            Arc::clone(values)
        } else {
            cast(values, data_type)?
        };
        let mut codes = Self::new(data_type)?;
        let (mut out, mut first) = (Vec::new(), Vec::new());
        codes.intern(&values, &mut out, &mut first)?;
        // codes are positions only if the domain lists each value once
        if first.len() != values.len() {
            return Err(datafusion::error::DataFusionError::Internal(format!(
                "a domain of {} values lists {} distinct ones",
                values.len(),
                first.len()
            )));
        }
        codes.short = codes.short_table();
        codes.dense_ints = codes.dense_int_table();
        Ok(codes)
    }

    /// Appends the code of every value of `column` to `out`, giving a new value the next code;
    /// the rows of `column` where a value was seen first are appended to `first`.
    pub fn intern(
        &mut self,
        column: &ArrayRef,
        out: &mut Vec<u32>,
        first: &mut Vec<u32>,
    ) -> Result<()> {
        let start = out.len();
        out.resize(start + column.len(), u32::MAX);
        let slots = &mut out[start..];
        let next = &mut self.len;
        let null = &mut self.null;
        // rows in order, NULL included, so that codes follow first sight
        match &mut self.keys {
            Keys::Int(map) => {
                let ints = cast(column, &DataType::Int64)?;
                let ints = ints.as_primitive::<Int64Type>();
                let dense = &mut self.growing_ints;
                // runs of one value (sorted columns) skip the hash table
                let mut last: Option<(i64, u32)> = None;
                for (i, slot) in slots.iter_mut().enumerate() {
                    *slot = if ints.is_valid(i) {
                        let value = ints.value(i);
                        match (dense.get(value), last) {
                            (Some(code), _) => code,
                            (None, Some((v, code))) if v == value => code,
                            _ => {
                                let code = intern_key(map, value, next, i, first);
                                dense.insert(value, code);
                                last = Some((value, code));
                                code
                            }
                        }
                    } else {
                        intern_null(null, next, i, first)
                    };
                }
            }
            Keys::Float(map) => {
                let floats = cast(column, &DataType::Float64)?;
                let floats = floats.as_primitive::<Float64Type>();
                for (i, slot) in slots.iter_mut().enumerate() {
                    *slot = if floats.is_valid(i) {
                        intern_key(map, floats.value(i).to_bits(), next, i, first)
                    } else {
                        intern_null(null, next, i, first)
                    };
                }
            }
            Keys::Bytes { inline, long } => {
                let long_views = &mut self.long_views;
                long_views.next_array();
                let texts = &mut self.growing_texts;
                let mut last: Option<(u128, u32)> = None;
                let values = cast(column, &DataType::BinaryView)?;
                let values = values.as_binary_view();
                let views = values.views();
                for (i, slot) in slots.iter_mut().enumerate() {
                    if values.is_null(i) {
                        *slot = intern_null(null, next, i, first);
                        continue;
                    }
                    // the short-text index first: most rows of a short domain end here
                    let view = views[i];
                    if let Some(&ahead) = views.get(i + PREFETCH_DISTANCE) {
                        texts.prefetch(ahead);
                    }
                    if let Some(code) = texts.get(view) {
                        *slot = code;
                        continue;
                    }
                    *slot = if (view as u32) <= INLINE {
                        let key = inline_key(view);
                        match last {
                            Some((k, code)) if k == key => code,
                            _ => {
                                let code = intern_key(inline, key, next, i, first);
                                texts.insert(key, code, inline);
                                last = Some((key, code));
                                code
                            }
                        }
                    } else {
                        match long_views.get(view) {
                            Some(code) => code,
                            None => {
                                let bytes = values.value(i);
                                let code = match long.get(bytes) {
                                    Some(&code) => code,
                                    None => intern_key(long, Box::from(bytes), next, i, first),
                                };
                                long_views.insert(view, code);
                                // a long value turns the short-text index off
                                texts.insert(view, code, inline);
                                code
                            }
                        }
                    };
                }
            }
            Keys::Rows(converter, map) => {
                let rows = converter.convert_columns(std::slice::from_ref(column))?;
                for (i, row) in rows.iter().enumerate() {
                    slots[i] = if column.is_null(i) {
                        intern_null(null, next, i, first)
                    } else {
                        match map.get(row.as_ref()) {
                            Some(&code) => code,
                            None => intern_key(map, Box::from(row.as_ref()), next, i, first),
                        }
                    };
                }
            }
        }
        Ok(())
    }

    /// The code of every value of `column` into `out` (cleared first); a value never seen is
    /// an error made by `missing`.
    pub fn lookup(
        &self,
        column: &ArrayRef,
        out: &mut Vec<u32>,
        missing: impl Fn() -> datafusion::error::DataFusionError,
    ) -> Result<()> {
        out.clear();
        out.resize(column.len(), u32::MAX);
        match (&self.keys, &self.short, &self.dense_ints) {
            (Keys::Bytes { .. }, Some(short), _) => {
                let values = cast(column, &DataType::BinaryView)?;
                let values = values.as_binary_view();
                let views = values.views();
                for (i, (slot, &view)) in out.iter_mut().zip(views).enumerate() {
                    // a large domain's table is out of cache: fetch a few rows ahead
                    if let Some(&ahead) = views.get(i + PREFETCH_DISTANCE)
                        && ahead as u32 <= SHORT
                    {
                        short.prefetch(short_key(ahead));
                    }
                    // a NULL's view is arbitrary: its code is set below
                    let found = (view as u32 <= SHORT)
                        .then(|| short.get(short_key(view)))
                        .flatten();
                    *slot = match found {
                        Some(code) => code,
                        None if values.is_null(i) => u32::MAX,
                        None => return Err(missing()),
                    };
                }
            }
            (Keys::Int(_), _, Some((min, table))) => {
                let ints = cast(column, &DataType::Int64)?;
                let ints = ints.as_primitive::<Int64Type>();
                for (i, (slot, &value)) in out.iter_mut().zip(ints.values()).enumerate() {
                    if ints.is_valid(i) {
                        let code = value
                            .checked_sub(*min)
                            .and_then(|at| table.get(usize::try_from(at).ok()?))
                            .copied()
                            .unwrap_or(u32::MAX);
                        if code == u32::MAX {
                            return Err(missing());
                        }
                        *slot = code;
                    }
                }
            }
            (Keys::Bytes { inline, long }, None, _) => {
                // a memo of the array's views: a value repeated in the array (Parquet's
                // dictionary pages decode into one view per value) is found by its view,
                // without hashing or comparing bytes; a view names the same bytes everywhere
                // in one array, and an inline view is the value itself
                let values = cast(column, &DataType::BinaryView)?;
                let values = values.as_binary_view();
                let mut memo = [(0u128, u32::MAX); 1 << VIEW_MEMO_BITS];
                for (i, (slot, &view)) in out.iter_mut().zip(values.views()).enumerate() {
                    if values.is_null(i) {
                        continue;
                    }
                    let at = view_slot(view, VIEW_MEMO_BITS);
                    let (seen, code) = memo[at];
                    if code != u32::MAX && seen == view {
                        *slot = code;
                        continue;
                    }
                    let code = if (view as u32) <= INLINE {
                        inline.get(&inline_key(view))
                    } else {
                        long.get(values.value(i))
                    };
                    let code = *code.ok_or_else(&missing)?;
                    memo[at] = (view, code);
                    *slot = code;
                }
            }
            _ => self.lookup_by_keys(column, out, &missing)?,
        }
        if column.null_count() > 0 {
            let null = self.null.ok_or_else(&missing)?;
            for (i, slot) in out.iter_mut().enumerate() {
                if column.is_null(i) {
                    *slot = null;
                }
            }
        }
        Ok(())
    }

    /// [`ValueCodes::lookup`] by the key maps, NULLs left for the caller.
    fn lookup_by_keys(
        &self,
        column: &ArrayRef,
        out: &mut [u32],
        missing: &impl Fn() -> datafusion::error::DataFusionError,
    ) -> Result<()> {
        match &self.keys {
            Keys::Int(map) => {
                let ints = cast(column, &DataType::Int64)?;
                let ints = ints.as_primitive::<Int64Type>();
                for (i, slot) in out.iter_mut().enumerate() {
                    if ints.is_valid(i) {
                        *slot = *map.get(&ints.value(i)).ok_or_else(&missing)?;
                    }
                }
            }
            Keys::Float(map) => {
                let floats = cast(column, &DataType::Float64)?;
                let floats = floats.as_primitive::<Float64Type>();
                for (i, slot) in out.iter_mut().enumerate() {
                    if floats.is_valid(i) {
                        *slot = *map.get(&floats.value(i).to_bits()).ok_or_else(&missing)?;
                    }
                }
            }
            Keys::Bytes { inline, long } => {
                for_each_bytes(column, |i, key| {
                    out[i] = match key {
                        BytesKey::Inline(key) => *inline.get(&key).ok_or_else(&missing)?,
                        BytesKey::Long(bytes) => *long.get(bytes).ok_or_else(&missing)?,
                        // NULL is resolved below, with the other types
                        BytesKey::Null => u32::MAX,
                    };
                    Ok(())
                })?;
            }
            Keys::Rows(converter, map) => {
                let rows = converter.convert_columns(std::slice::from_ref(column))?;
                for (i, row) in rows.iter().enumerate() {
                    if column.is_valid(i) {
                        out[i] = *map.get(row.as_ref()).ok_or_else(&missing)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::StringViewArray;
    use datafusion::error::DataFusionError;

    use super::*;

    fn text(values: &[Option<&str>]) -> ArrayRef {
        Arc::new(StringViewArray::from(values.to_vec()))
    }

    fn codes_of(domain: &[Option<&str>], column: &[Option<&str>]) -> Result<Vec<u32>> {
        let codes = ValueCodes::of_domain(&text(domain), &DataType::Utf8View)?;
        let mut out = Vec::new();
        codes.lookup(&text(column), &mut out, || {
            DataFusionError::Execution("missing".to_string())
        })?;
        Ok(out)
    }

    /// Codes are domain positions, by the one-word table when every value has at most 6
    /// bytes and by the maps otherwise: the same answers either way, and a value outside the
    /// domain (shorter, longer, or differing only in length) is an error.
    #[test]
    fn short_domains_look_up_like_the_maps() {
        let short: Vec<Option<&str>> = vec![Some(""), Some("a"), Some("ab"), None, Some("123456")];
        let column = [Some("123456"), None, Some(""), Some("ab"), Some("a")];
        // position in the domain: 123456 → 4, NULL → 3, "" → 0, ab → 2, a → 1
        let expected = vec![4, 3, 0, 2, 1];
        let table = ValueCodes::of_domain(&text(&short), &DataType::Utf8View).unwrap();
        assert!(table.short.is_some());
        assert_eq!(codes_of(&short, &column).unwrap(), expected);
        // one value of 7 bytes: the maps
        let mut long = short.clone();
        long.push(Some("1234567"));
        let maps = ValueCodes::of_domain(&text(&long), &DataType::Utf8View).unwrap();
        assert!(maps.short.is_none());
        assert_eq!(codes_of(&long, &column).unwrap(), expected);
        for outside in ["b", "a\0", "1234567", "12345678901234"] {
            let error = codes_of(&short, &[Some("a"), Some(outside)]).unwrap_err();
            assert!(error.to_string().contains("missing"), "{outside}: {error}");
        }
        // NULL outside a domain without it
        let error = codes_of(&[Some("a")], &[None]).unwrap_err();
        assert!(error.to_string().contains("missing"));
    }

    /// A fixed domain looked up row by row: by the per-array memo of views (text), by the
    /// dense table (integers within a small range) or by the map (a wide range) — each code
    /// the value's position in the domain, as a brute-force search finds it, and a value
    /// outside the domain an error.
    #[test]
    fn fixed_domains_look_up_as_positions() {
        use crate::rng::SplitMix64;
        let mut rng = SplitMix64(17);
        // text: inline and long values, NULL in the domain; the same views over many rows
        let domain: Vec<Option<String>> = (0..40)
            .map(|i| match i {
                7 => None,
                i if i % 3 == 0 => Some(format!("a value of more than twelve bytes #{i}")),
                i => Some(format!("v{i}")),
            })
            .collect();
        let domain_refs: Vec<Option<&str>> = domain.iter().map(|v| v.as_deref()).collect();
        let rows: Vec<Option<&str>> = (0..3_000)
            .map(|_| domain_refs[(rng.next_u64() % 40) as usize])
            .collect();
        let expected: Vec<u32> = rows
            .iter()
            .map(|v| domain_refs.iter().position(|d| d == v).unwrap() as u32)
            .collect();
        let table = ValueCodes::of_domain(&text(&domain_refs), &DataType::Utf8View).unwrap();
        assert!(table.short.is_none());
        assert_eq!(codes_of(&domain_refs, &rows).unwrap(), expected);
        // integers: a small range (dense) and a wide one (map), with a value outside each
        for (values, dense) in [
            (vec![Some(-3i64), Some(90), None, Some(17), Some(0)], true),
            (vec![Some(-3i64), Some(1 << 40), None, Some(17)], false),
        ] {
            let domain: ArrayRef =
                Arc::new(datafusion::arrow::array::Int64Array::from(values.clone()));
            let codes = ValueCodes::of_domain(&domain, &DataType::Int64).unwrap();
            assert_eq!(codes.dense_ints.is_some(), dense);
            let rows: Vec<Option<i64>> = (0..500)
                .map(|_| values[(rng.next_u64() % values.len() as u64) as usize])
                .collect();
            let expected: Vec<u32> = rows
                .iter()
                .map(|v| values.iter().position(|d| d == v).unwrap() as u32)
                .collect();
            let column: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(rows));
            let mut out = Vec::new();
            let missing = || DataFusionError::Execution("missing".to_string());
            codes.lookup(&column, &mut out, missing).unwrap();
            assert_eq!(out, expected, "dense: {dense}");
            for outside in [1i64, -4, 91, i64::MIN, i64::MAX] {
                let column: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![
                    Some(17),
                    Some(outside),
                ]));
                let error = codes.lookup(&column, &mut out, missing).unwrap_err();
                assert!(error.to_string().contains("missing"), "{outside}");
            }
        }
        for outside in ["v1 ", "a value of more than twelve bytes #4", "v"] {
            let error = codes_of(&domain_refs, &[Some("v1"), Some(outside)]).unwrap_err();
            assert!(error.to_string().contains("missing"), "{outside}: {error}");
        }
    }

    /// Long values are cached by their view within an array only: two arrays whose views
    /// coincide (same length, prefix, buffer and offset) but whose bytes differ get different
    /// codes, and codes follow first sight as a brute-force map gives them.
    #[test]
    fn long_values_get_codes_by_their_bytes_across_arrays() {
        // one buffer per array, each value at offset 0 of it in the first row: equal views
        let first = text(&[
            Some("same prefix, first array"),
            Some("same prefix, first array"),
            Some("another long value here"),
            None,
            Some("same prefix, first array"),
        ]);
        let second = text(&[
            Some("same prefix, other array"),
            Some("another long value here"),
            Some("same prefix, other array"),
        ]);
        let views = |a: &ArrayRef| a.as_string_view().views()[0];
        assert_eq!(
            views(&first),
            views(&second),
            "the test needs equal first views"
        );
        let mut codes = ValueCodes::new(&DataType::Utf8View).unwrap();
        let (mut out, mut seen) = (Vec::new(), Vec::new());
        codes.intern(&first, &mut out, &mut seen).unwrap();
        codes.intern(&second, &mut out, &mut seen).unwrap();
        // the reference: codes by first sight of each value (NULL a value of its own)
        let mut reference: Vec<Option<&str>> = Vec::new();
        let expected: Vec<u32> = [&first, &second]
            .iter()
            .flat_map(|a| {
                let a = a.as_string_view();
                (0..a.len())
                    .map(|i| a.is_valid(i).then(|| a.value(i)))
                    .collect::<Vec<_>>()
            })
            .map(|value| match reference.iter().position(|v| *v == value) {
                Some(code) => code as u32,
                None => {
                    reference.push(value);
                    reference.len() as u32 - 1
                }
            })
            .collect();
        assert_eq!(out, expected);
        assert_eq!(expected, vec![0, 0, 1, 2, 0, 3, 1, 3]);
    }
}
