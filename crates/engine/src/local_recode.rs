//! The recoding step of a local release: each row's raw quasi-identifiers are looked up in the
//! release, and the row gets its class's labels.
//!
//! It is a scalar function (`__anon_local_recode(qi_0, …, qi_{d−1})`, returning a struct of
//! the d labels, a `suppressed` flag and a class key) rather than a join, so rows keep their
//! input order and partitioning: the same input and release give the same output, byte for
//! byte. Its sibling `__anon_local_class_key` returns the flag and the key alone, for
//! publishing, which makes the labels from the key as it writes
//! ([`LocalRecodeFunction::labels_of_keys`]).
//!
//! Per batch, vectorized: each column's values become the frequency set's leaf codes through
//! a small map per column (the column's distinct values: integers and dates by value,
//! floats by bits, strings by bytes, other types in Arrow's row format), the codes of a row
//! are packed into one mixed-radix integer, which an index built once per table maps to the
//! row's labels: a [`DirectTable`] whose word holds the class's per-QI label codes and its
//! suppressed flag when key and word fit 64 bits (one random read a row), else the class
//! (in a `DirectTable` or a hash map) and then the class's record of label codes. Each label
//! column is then one `take` from the QI's distinct labels, a small array. A text column's
//! values are looked up through a memo of the batch's views, a small integer range through a
//! dense table. No allocation per row. A row whose values or combination
//! are not in the release (the input changed since it was computed) fails the query:
//! publishing it would be publishing something nobody checked.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, StringViewArray, StructArray, UInt32Array,
};
use datafusion::arrow::buffer::{BooleanBuffer, ScalarBuffer};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use hashbrown::HashMap;

use crate::direct_table::{DirectTable, PREFETCH_DISTANCE, prefetch};
use crate::search::release::LocalRecoding;
use crate::value_codes::ValueCodes;
use datafusion_anonymity::generalize::udf::LABEL_TYPE;

/// The struct field holding whether the row's combination is suppressed.
pub const SUPPRESSED_FIELD: &str = "suppressed";

/// The struct field holding the row's class key: a number that determines the row's labels
/// and suppressed flag (equal keys, equal labels), which
/// [`LocalRecodeFunction::key_label_codes`] and [`LocalRecodeFunction::label`] turn back into
/// the labels. Publishing counts and shuffles the rows by it, one integer a row instead of the
/// label bytes.
pub const CLASS_KEY_FIELD: &str = "class_key";

/// The struct field holding the label of the `i`-th quasi-identifier.
pub fn label_field_name(i: usize) -> String {
    format!("label_{i}")
}

const NOT_IN_RELEASE: &str = "a row's quasi-identifier values are not in the local release \
    (the input changed since the release was computed?); nothing is published";

/// One column's lookup: its leaf values' codes (code = leaf position).
#[derive(Debug)]
struct ColumnLookup(ValueCodes);

impl ColumnLookup {
    /// The lookup of `leaf_values` (leaf code = position), for columns of type `data_type`.
    fn new(leaf_values: &ArrayRef, data_type: &DataType) -> Result<Self> {
        Ok(Self(ValueCodes::of_domain(leaf_values, data_type)?))
    }

    /// The leaf code of every value of `column` into `out`.
    fn codes(&self, column: &ArrayRef, out: &mut Vec<u32>) -> Result<()> {
        self.0.lookup(column, out, || {
            DataFusionError::Execution(NOT_IN_RELEASE.to_string())
        })
    }
}

/// Packed leaf codes of a combination → its class.
#[derive(Debug)]
enum CombinationIndex {
    /// Mixed radix over the columns' leaf counts → the class's label codes themselves,
    /// packed with its suppressed flag (see [`LabelWord`]), when key and word fit 64 bits:
    /// a row then costs one lookup, not a second one in the classes' label records.
    Labels {
        radix: Vec<u64>,
        table: DirectTable,
        word: LabelWord,
    },
    /// Mixed radix over the columns' leaf counts, when the key and the class fit 64 bits
    /// together (the common case), in a [`DirectTable`].
    Direct { radix: Vec<u64>, table: DirectTable },
    /// Mixed radix over the columns' leaf counts, when their product fits 64 bits (the
    /// common case: half the index of 128-bit keys, fewer cache misses).
    Packed64 {
        radix: Vec<u64>,
        classes: HashMap<u64, u32>,
    },
    /// The same in 128 bits.
    Packed {
        radix: Vec<u128>,
        classes: HashMap<u128, u32>,
    },
    /// The codes themselves otherwise.
    Tuples(HashMap<Box<[u32]>, u32>),
}

/// A class's label codes in one word: QI q's code at `shifts[q]` (its `bits[q]` bits), the
/// suppressed flag in bit 0.
#[derive(Debug)]
struct LabelWord {
    shifts: Vec<u32>,
    bits: Vec<u32>,
}

impl LabelWord {
    /// The layout for QIs of `labels[q]` distinct labels; `None` over 32 bits.
    fn new(labels: &[ArrayRef]) -> Option<Self> {
        let bits: Vec<u32> = labels
            .iter()
            .map(|l| u32::BITS - (l.len().max(1) as u32 - 1).leading_zeros())
            .collect();
        let mut shifts = Vec::with_capacity(bits.len());
        let mut at = 1;
        for &b in &bits {
            shifts.push(at);
            at += b;
        }
        (at <= 32).then_some(Self { shifts, bits })
    }

    fn pack(&self, codes: &[u32], suppressed: bool) -> u32 {
        codes
            .iter()
            .zip(&self.shifts)
            .fold(u32::from(suppressed), |word, (&code, &shift)| {
                word | code << shift
            })
    }

    /// The shift and mask of QI q's code in a word.
    fn field(&self, q: usize) -> (u32, u32) {
        (self.shifts[q], ((1u64 << self.bits[q]) - 1) as u32)
    }
}

/// Every row's labels as the combination index gives them; either vector is the rows' class
/// keys ([`CLASS_KEY_FIELD`]).
enum RowLabels<'a> {
    /// label words, in the index's layout ([`CombinationIndex::Labels`])
    Words(Vec<u32>, &'a LabelWord),
    /// classes (the other indexes)
    Classes(Vec<u32>),
}

/// The value (class or label word) of every row, from each column's leaf codes, looked up in
/// `table`.
fn direct_lookup(
    table: &DirectTable,
    codes: &[Vec<u32>],
    radix: &[u64],
    rows: usize,
    values: &mut Vec<u32>,
) -> Result<()> {
    let keys = packed_keys(codes, radix, rows);
    for (i, &key) in keys.iter().enumerate() {
        if let Some(&ahead) = keys.get(i + PREFETCH_DISTANCE) {
            table.prefetch(ahead);
        }
        values.push(
            table
                .get(key)
                .ok_or_else(|| DataFusionError::Execution(NOT_IN_RELEASE.to_string()))?,
        );
    }
    Ok(())
}

/// A mixed-radix key (u64 or u128) of leaf codes.
trait PackedKey:
    Copy + Default + Eq + std::hash::Hash + std::ops::AddAssign + std::ops::Mul<Output = Self>
{
    fn of(code: u32) -> Self;
}

impl PackedKey for u64 {
    fn of(code: u32) -> Self {
        code as u64
    }
}

impl PackedKey for u128 {
    fn of(code: u32) -> Self {
        code as u128
    }
}

/// Each combination's packed key → its class.
fn packed_index<K: PackedKey>(
    leaf_codes: &[Vec<u32>],
    class_of: &[u32],
    radix: &[K],
) -> HashMap<K, u32> {
    let mut classes = HashMap::with_capacity(class_of.len());
    for (key, &class) in packed_keys(leaf_codes, radix, class_of.len())
        .into_iter()
        .zip(class_of)
    {
        classes.insert(key, class);
    }
    classes
}

/// The mixed-radix key of each of `rows` rows of per-column `codes`.
fn packed_keys<K: PackedKey>(codes: &[Vec<u32>], radix: &[K], rows: usize) -> Vec<K> {
    let mut keys = vec![K::default(); rows];
    for (c, &r) in codes.iter().zip(radix) {
        for (key, &code) in keys.iter_mut().zip(c) {
            *key += K::of(code) * r;
        }
    }
    keys
}

/// The class of every row, from each column's leaf codes.
fn packed_classes<K: PackedKey>(
    codes: &[Vec<u32>],
    radix: &[K],
    map: &HashMap<K, u32>,
    rows: usize,
    classes: &mut Vec<u32>,
) -> Result<()> {
    for key in &packed_keys(codes, radix, rows) {
        classes.push(
            *map.get(key)
                .ok_or_else(|| DataFusionError::Execution(NOT_IN_RELEASE.to_string()))?,
        );
    }
    Ok(())
}

/// Per QI, the distinct labels of `class_labels` (one label per class, Utf8View), and per
/// class, per QI, the code of its label among them (`label_codes[class * d + q]`).
fn distinct_labels(class_labels: &[ArrayRef]) -> Result<(Vec<ArrayRef>, Vec<u32>)> {
    let d = class_labels.len();
    let classes = class_labels.first().map_or(0, |l| l.len());
    // each QI's labels coded on a thread of its own
    let coded = crate::parallel::map_scoped(
        "coding a local release's labels",
        class_labels,
        |labels| -> Result<(ArrayRef, Vec<u32>)> {
            let views = labels.as_string_view_opt().ok_or_else(|| {
                DataFusionError::Internal("local labels are not Utf8View".to_string())
            })?;
            let mut code_of: HashMap<Option<&str>, u32> = HashMap::new();
            let mut first: Vec<u32> = Vec::new();
            let codes = views
                .iter()
                .enumerate()
                .map(|(class, label)| {
                    let next = code_of.len() as u32;
                    *code_of.entry(label).or_insert_with(|| {
                        first.push(class as u32);
                        next
                    })
                })
                .collect();
            Ok((
                take(labels.as_ref(), &UInt32Array::from(first), None)?,
                codes,
            ))
        },
    )?;
    let mut label_codes = vec![0u32; classes * d];
    let mut distinct = Vec::with_capacity(d);
    for (q, coded) in coded.into_iter().enumerate() {
        let (labels, codes) = coded?;
        for (class, code) in codes.into_iter().enumerate() {
            label_codes[class * d + q] = code;
        }
        distinct.push(labels);
    }
    Ok((distinct, label_codes))
}

/// The lookup of one local release, for rows whose quasi-identifiers have `raw_types`.
#[derive(Debug)]
pub struct LocalRecodeFunction {
    signature: Signature,
    raw_types: Vec<DataType>,
    /// the tables, shared with the sibling of the other output ([`Self::class_keys`])
    tables: Arc<Tables>,
    output: Output,
    return_type: DataType,
    /// identity of the release, for equality
    release: Arc<LocalRecoding>,
}

/// What the function returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Output {
    /// the labels, the suppressed flag and the class key
    Labels,
    /// the suppressed flag and the class key only (the labels are made from the key later:
    /// [`LocalRecodeFunction::labels_of_keys`])
    ClassKeys,
}

/// The lookup's tables, built once per release.
#[derive(Debug)]
struct Tables {
    columns: Vec<ColumnLookup>,
    index: CombinationIndex,
    /// per QI, its distinct labels (`*` among them)
    labels: Vec<ArrayRef>,
    /// per class (then the suppressed one), per QI: the code of its label in `labels`
    label_codes: Vec<u32>,
    /// the class of suppressed combinations
    suppressed_class: u32,
}

/// The struct a lookup of `d` QIs returns.
fn return_type(d: usize, output: Output) -> DataType {
    let mut fields: Vec<Field> = match output {
        Output::Labels => (0..d)
            .map(|i| Field::new(label_field_name(i), LABEL_TYPE, true))
            .collect(),
        Output::ClassKeys => Vec::new(),
    };
    fields.push(Field::new(SUPPRESSED_FIELD, DataType::Boolean, false));
    fields.push(Field::new(CLASS_KEY_FIELD, DataType::UInt32, false));
    DataType::Struct(Fields::from(fields))
}

impl LocalRecodeFunction {
    /// The lookup of `release` for quasi-identifier columns of types `raw_types`.
    pub fn try_new(release: Arc<LocalRecoding>, raw_types: &[DataType]) -> Result<Self> {
        Self::try_new_indexed(release, raw_types, true)
    }

    /// [`Self::try_new`] whose combination table holds classes, not their labels (what
    /// releases whose label codes do not fit one word get), for tests of that index.
    #[cfg(test)]
    pub(crate) fn try_new_by_class(
        release: Arc<LocalRecoding>,
        raw_types: &[DataType],
    ) -> Result<Self> {
        Self::try_new_indexed(release, raw_types, false)
    }

    /// Whether rows find their labels in the combination table itself.
    #[cfg(test)]
    pub(crate) fn indexes_labels(&self) -> bool {
        matches!(self.tables.index, CombinationIndex::Labels { .. })
    }

    fn try_new_indexed(
        release: Arc<LocalRecoding>,
        raw_types: &[DataType],
        labels_in_index: bool,
    ) -> Result<Self> {
        let leaf_values = release.leaf_values();
        if raw_types.len() != leaf_values.len() {
            return Err(DataFusionError::Internal(format!(
                "{} key types for {} quasi-identifiers",
                raw_types.len(),
                leaf_values.len()
            )));
        }
        let columns = leaf_values
            .iter()
            .zip(raw_types)
            .map(|(values, t)| ColumnLookup::new(values, t))
            .collect::<Result<Vec<_>>>()?;
        let leaf_codes = release.leaf_codes();
        let class_of = release.class_of();
        let mut radix = Vec::with_capacity(columns.len());
        let mut span: Option<u128> = Some(1);
        for values in leaf_values {
            radix.push(span.unwrap_or(0));
            span = span.and_then(|s| s.checked_mul(values.len().max(1) as u128));
        }
        let key_bits = span.map_or(u32::MAX, |s| u128::BITS - (s - 1).leading_zeros());
        let (labels, label_codes) = distinct_labels(release.class_labels())?;
        let d = leaf_values.len();
        let suppressed_class = release.classes();
        let word = LabelWord::new(&labels).filter(|_| labels_in_index);
        let with_labels = word
            .as_ref()
            .and_then(|_| DirectTable::new(class_of.len(), key_bits, u32::MAX));
        // the class table only when the labels' one is not built (each holds millions of slots)
        let direct = || DirectTable::new(class_of.len(), key_bits, release.classes() as u32);
        let index = if let (Some(mut table), Some(word)) = (with_labels, word) {
            let radix: Vec<u64> = radix.iter().map(|&r| r as u64).collect();
            // per class (then the suppressed one), its word
            let words: Vec<u32> = label_codes
                .chunks_exact(d.max(1))
                .enumerate()
                .map(|(class, codes)| word.pack(codes, class == suppressed_class))
                .collect();
            for (key, &class) in packed_keys(leaf_codes, &radix, class_of.len())
                .into_iter()
                .zip(class_of)
            {
                table.insert(key, words[class as usize]);
            }
            CombinationIndex::Labels { radix, table, word }
        } else if let Some(mut table) = direct() {
            let radix: Vec<u64> = radix.iter().map(|&r| r as u64).collect();
            for (key, &class) in packed_keys(leaf_codes, &radix, class_of.len())
                .into_iter()
                .zip(class_of)
            {
                table.insert(key, class);
            }
            CombinationIndex::Direct { radix, table }
        } else if span.is_some_and(|s| s <= u64::MAX as u128) {
            let radix: Vec<u64> = radix.iter().map(|&r| r as u64).collect();
            let classes = packed_index(leaf_codes, class_of, &radix);
            CombinationIndex::Packed64 { radix, classes }
        } else if span.is_some() {
            let classes = packed_index(leaf_codes, class_of, &radix);
            CombinationIndex::Packed { radix, classes }
        } else {
            let mut classes = HashMap::with_capacity(class_of.len());
            for (combination, &class) in class_of.iter().enumerate() {
                let key: Box<[u32]> = leaf_codes.iter().map(|c| c[combination]).collect();
                classes.insert(key, class);
            }
            CombinationIndex::Tuples(classes)
        };
        if release.classes() >= u32::MAX as usize {
            return Err(DataFusionError::Plan(format!(
                "a local release of {} classes is more than publishing can number",
                release.classes()
            )));
        }
        let tables = Tables {
            columns,
            index,
            labels,
            label_codes,
            suppressed_class: release.classes() as u32,
        };
        Ok(Self {
            signature: Signature::exact(raw_types.to_vec(), Volatility::Immutable),
            raw_types: raw_types.to_vec(),
            return_type: return_type(leaf_values.len(), Output::Labels),
            tables: Arc::new(tables),
            output: Output::Labels,
            release,
        })
    }

    /// The same lookup returning only each row's suppressed flag and class key (sharing this
    /// one's tables): for publishing, which counts and shuffles the rows by their key and
    /// makes their labels from it as they are written ([`Self::labels_of_keys`]).
    pub fn class_keys(&self) -> Self {
        Self {
            signature: self.signature.clone(),
            raw_types: self.raw_types.clone(),
            tables: Arc::clone(&self.tables),
            output: Output::ClassKeys,
            return_type: return_type(self.raw_types.len(), Output::ClassKeys),
            release: Arc::clone(&self.release),
        }
    }

    /// Whether the function returns only the suppressed flag and class key
    /// ([`Self::class_keys`]).
    pub fn returns_class_keys(&self) -> bool {
        self.output == Output::ClassKeys
    }

    /// The label columns (one per QI) of rows of class keys `keys`, as [`CLASS_KEY_FIELD`]
    /// gives them: the labels the labelling function gives those rows.
    pub fn labels_of_keys(&self, keys: &[u32]) -> Result<Vec<ArrayRef>> {
        let t = &*self.tables;
        let classes = t.suppressed_class as usize;
        let rows = match &t.index {
            CombinationIndex::Labels { word, .. } => RowLabels::Words(keys.to_vec(), word),
            _ if keys.iter().all(|&k| k as usize <= classes) => RowLabels::Classes(keys.to_vec()),
            _ => {
                return Err(DataFusionError::Internal(
                    "a class key beyond the release's classes".to_string(),
                ));
            }
        };
        (0..t.labels.len())
            .map(|q| self.gathered_labels(&rows, q, keys.len()))
            .collect()
    }

    /// The release the function looks rows up in.
    pub fn release(&self) -> &Arc<LocalRecoding> {
        &self.release
    }

    /// The quasi-identifier column types the function takes.
    pub fn raw_types(&self) -> &[DataType] {
        &self.raw_types
    }

    /// How many distinct labels QI `q` has (its label codes are below this).
    pub fn label_count(&self, q: usize) -> usize {
        self.tables.labels.get(q).map_or(0, |l| l.len())
    }

    /// The label codes (one per QI) of the rows of class key `key`, as [`CLASS_KEY_FIELD`]
    /// gives it, into `codes`; false for a key this function never gives.
    pub fn key_label_codes(&self, key: u32, codes: &mut [u32]) -> bool {
        let d = self.tables.labels.len();
        match &self.tables.index {
            CombinationIndex::Labels { word, .. } => {
                for (q, code) in codes.iter_mut().enumerate().take(d) {
                    let (shift, mask) = word.field(q);
                    *code = (key >> shift) & mask;
                }
            }
            _ => match self
                .tables
                .label_codes
                .get(key as usize * d..(key as usize + 1) * d)
            {
                Some(record) => codes[..d].copy_from_slice(record),
                None => return false,
            },
        }
        codes.len() == d
    }

    /// The label of code `code` of QI `q` (`Some(None)` for NULL; `None` for no such code).
    pub fn label(&self, q: usize, code: u32) -> Option<Option<&[u8]>> {
        let labels = self.tables.labels.get(q)?.as_string_view_opt()?;
        let code = code as usize;
        (code < labels.len()).then(|| labels.is_valid(code).then(|| labels.value(code).as_bytes()))
    }

    /// Every row's labels as the index gives them: its label word, or its class.
    fn row_labels(&self, columns: &[ArrayRef], rows: usize) -> Result<RowLabels<'_>> {
        let mut codes = vec![Vec::new(); columns.len()];
        for ((lookup, column), out) in self.tables.columns.iter().zip(columns).zip(&mut codes) {
            lookup.codes(column, out)?;
        }
        if let CombinationIndex::Labels { radix, table, word } = &self.tables.index {
            let mut words = Vec::with_capacity(rows);
            direct_lookup(table, &codes, radix, rows, &mut words)?;
            return Ok(RowLabels::Words(words, word));
        }
        Ok(RowLabels::Classes(self.classes(&codes, rows)?))
    }

    /// Each row's label code of QI `q`, in order, to `each`.
    fn for_each_label_code(&self, rows: &RowLabels, q: usize, mut each: impl FnMut(u32)) {
        match rows {
            RowLabels::Words(words, word) => {
                let (shift, mask) = word.field(q);
                words.iter().for_each(|&w| each((w >> shift) & mask))
            }
            RowLabels::Classes(classes) => {
                let d = self.tables.labels.len();
                for (i, &class) in classes.iter().enumerate() {
                    // the records are spread over the class table: fetch a few rows ahead
                    if let Some(record) = classes
                        .get(i + PREFETCH_DISTANCE)
                        .and_then(|&ahead| self.tables.label_codes.get(ahead as usize * d))
                    {
                        prefetch(record);
                    }
                    each(self.tables.label_codes[class as usize * d + q]);
                }
            }
        }
    }

    /// Whether each row is suppressed.
    fn suppressed(&self, rows: &RowLabels) -> BooleanArray {
        match rows {
            RowLabels::Words(words, _) => BooleanArray::new(
                BooleanBuffer::collect_bool(words.len(), |i| words[i] & 1 == 1),
                None,
            ),
            RowLabels::Classes(classes) => BooleanArray::new(
                BooleanBuffer::collect_bool(classes.len(), |i| {
                    classes[i] == self.tables.suppressed_class
                }),
                None,
            ),
        }
    }

    /// The labels of QI `q` of every row: each row's view is its label's view among the QI's
    /// distinct labels (a gather of 16-byte views, no bytes copied).
    fn gathered_labels(&self, rows: &RowLabels, q: usize, len: usize) -> Result<ArrayRef> {
        let labels = &self.tables.labels[q];
        let distinct = labels.as_string_view_opt().ok_or_else(|| {
            DataFusionError::Internal("local labels are not Utf8View".to_string())
        })?;
        if distinct.null_count() > 0 {
            // a QI whose class holds only NULLs: rare, taken the general way
            let mut codes = Vec::with_capacity(len);
            self.for_each_label_code(rows, q, |code| codes.push(code));
            return Ok(take(labels.as_ref(), &UInt32Array::from(codes), None)?);
        }
        let source = distinct.views();
        let views: Vec<u128> = match rows {
            RowLabels::Words(words, word) => {
                let (shift, mask) = word.field(q);
                words
                    .iter()
                    .map(|&w| source[((w >> shift) & mask) as usize])
                    .collect()
            }
            RowLabels::Classes(_) => {
                let mut views = Vec::with_capacity(len);
                self.for_each_label_code(rows, q, |code| views.push(source[code as usize]));
                views
            }
        };
        // SAFETY: every view is one of `distinct`'s valid views, with `distinct`'s buffers,
        // so it points at the same valid UTF-8 bytes
        Ok(Arc::new(unsafe {
            StringViewArray::new_unchecked(
                ScalarBuffer::from(views),
                distinct.data_buffers().to_vec(),
                None,
            )
        }))
    }

    /// The label codes (per QI) and suppressed flag of every row of `columns`.
    #[cfg(test)]
    pub(crate) fn labelled(
        &self,
        columns: &[ArrayRef],
        rows: usize,
    ) -> Result<(Vec<Vec<u32>>, BooleanArray)> {
        let labels = self.row_labels(columns, rows)?;
        let codes = (0..self.tables.labels.len())
            .map(|q| {
                let mut codes = Vec::with_capacity(rows);
                self.for_each_label_code(&labels, q, |code| codes.push(code));
                codes
            })
            .collect();
        Ok((codes, self.suppressed(&labels)))
    }

    /// The class of every row, from each QI's leaf codes `codes`.
    fn classes(&self, codes: &[Vec<u32>], rows: usize) -> Result<Vec<u32>> {
        let missing = || DataFusionError::Execution(NOT_IN_RELEASE.to_string());
        let mut classes = Vec::with_capacity(rows);
        match &self.tables.index {
            CombinationIndex::Labels { .. } => {
                return Err(DataFusionError::Internal(
                    "a release indexed by labels has no class index".to_string(),
                ));
            }
            CombinationIndex::Direct { radix, table } => {
                direct_lookup(table, codes, radix, rows, &mut classes)?
            }
            CombinationIndex::Packed64 {
                radix,
                classes: map,
            } => packed_classes(codes, radix, map, rows, &mut classes)?,
            CombinationIndex::Packed {
                radix,
                classes: map,
            } => packed_classes(codes, radix, map, rows, &mut classes)?,
            CombinationIndex::Tuples(map) => {
                let mut key = vec![0u32; codes.len()];
                for row in 0..rows {
                    for (k, c) in key.iter_mut().zip(codes) {
                        *k = c[row];
                    }
                    classes.push(*map.get(key.as_slice()).ok_or_else(missing)?);
                }
            }
        }
        Ok(classes)
    }
}

impl PartialEq for LocalRecodeFunction {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.release, &other.release)
            && self.raw_types == other.raw_types
            && self.output == other.output
    }
}

impl Eq for LocalRecodeFunction {}

impl Hash for LocalRecodeFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.release).hash(state);
        self.raw_types.hash(state);
        self.output.hash(state);
    }
}

impl ScalarUDFImpl for LocalRecodeFunction {
    fn name(&self) -> &str {
        match self.output {
            Output::Labels => "__anon_local_recode",
            Output::ClassKeys => "__anon_local_class_key",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let columns = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<Vec<ArrayRef>>>()?;
        Ok(ColumnarValue::Array(Arc::new(
            self.recoded(&columns, rows)?,
        )))
    }
}

impl LocalRecodeFunction {
    /// What the function returns for `rows` rows of quasi-identifier columns `columns`.
    pub fn recoded(&self, columns: &[ArrayRef], rows: usize) -> Result<StructArray> {
        let labels = self.row_labels(columns, rows)?;
        let mut children: Vec<ArrayRef> = Vec::with_capacity(self.tables.labels.len() + 2);
        if self.output == Output::Labels {
            for q in 0..self.tables.labels.len() {
                children.push(self.gathered_labels(&labels, q, rows)?);
            }
        }
        children.push(Arc::new(self.suppressed(&labels)));
        let (RowLabels::Words(keys, _) | RowLabels::Classes(keys)) = labels;
        children.push(Arc::new(UInt32Array::from(keys)));
        let DataType::Struct(fields) = &self.return_type else {
            return Err(DataFusionError::Internal("not a struct".to_string()));
        };
        Ok(StructArray::try_new(fields.clone(), children, None)?)
    }
}
