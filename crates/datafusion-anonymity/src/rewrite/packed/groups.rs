//! [`PackedGroups`]: the class index of each row, from its `GROUP BY` values packed into one
//! 64-bit key.
//!
//! Each key column's values get dense codes in order of first sight ([`ValueCodes`]: integers
//! and dates by their value, text by its inline view, NULL a code of its own); a row's codes,
//! each in as many bits as its column's codes need, make one key. A key of at most
//! [`FLAT_BITS`] bits indexes a flat array of class numbers (no hashing); a longer one is
//! looked up in a [`DirectTable`] (one word per entry, slots prefetched a few rows ahead).
//! When a column's codes outgrow their bits or the table its class bits, the index is rebuilt
//! from the classes' codes. When the key and the class number no longer fit 64 bits together,
//! the classes so far are handed, in order, to DataFusion's own [`GroupValues`], which goes on
//! from there: the class numbers stay the same, so the accumulators never notice. With one
//! key column, until the first emit, a row's class is its value's code and no index is kept
//! ([`PackedGroups::intern_codes`]).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, UInt32Array};
use datafusion::arrow::compute::{concat, take};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::EmitTo;
use datafusion::physical_plan::aggregates::group_values::{GroupValues, new_group_values};
use datafusion::physical_plan::aggregates::order::GroupOrdering;

use crate::packing::direct_table::{DirectTable, PREFETCH_DISTANCE, prefetch};
use crate::packing::value_codes::ValueCodes;

/// Keys of at most this many bits index a flat array of class numbers (16 MiB at most).
pub const FLAT_BITS: u32 = 22;

/// Bits a column's codes start with (they widen as the column's values grow).
const START_BITS: u32 = 1;

/// Whether the kernel codes values of this type: integers (but `UInt64`, whose values do not
/// all fit the `i64` the codes are keyed by), booleans, dates, times, timestamps, durations,
/// text, and dictionaries of those. Floats are left to DataFusion (its grouping of NaN and
/// −0.0 is its own).
pub fn packable(data_type: &DataType) -> bool {
    match data_type {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::Boolean
        | DataType::Date32
        | DataType::Date64
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Timestamp(_, _)
        | DataType::Duration(_)
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View => true,
        DataType::Dictionary(_, value) => packable(value),
        _ => false,
    }
}

/// Bits that hold the codes `0..n`.
fn bits_for(n: usize) -> u32 {
    usize::BITS - n.saturating_sub(1).leading_zeros()
}

/// How classes are found.
enum Index {
    /// `slots[key]` is the class of `key`, `u32::MAX` for none
    Flat(Vec<u32>),
    Direct(DirectTable),
    /// DataFusion's grouping, after the keys stopped fitting 64 bits
    Hashed(Box<dyn GroupValues>),
}

/// Class numbers of rows by their packed key values (see module docs).
pub struct PackedGroups {
    schema: SchemaRef,
    columns: Vec<ValueCodes>,
    /// per column, its values in code order (the rows that brought new codes, per batch)
    values: Vec<Vec<ArrayRef>>,
    value_bytes: usize,
    /// per column, the bits of its code in a key
    widths: Vec<u32>,
    /// per column, each class's code
    class_codes: Vec<Vec<u32>>,
    classes: usize,
    index: Index,
    /// one key column whose classes are its value codes (see [`Self::intern_codes`]):
    /// no index kept while this holds
    codes_are_classes: bool,
    /// scratch: one column's codes, the rows of new values, the batch's keys
    codes: Vec<u32>,
    first: Vec<u32>,
    keys: Vec<u64>,
}

impl PackedGroups {
    /// No classes yet, for key columns of `schema` (all [`packable`]).
    pub fn try_new(schema: SchemaRef) -> Result<Self> {
        let columns = schema
            .fields()
            .iter()
            .map(|f| ValueCodes::new(decoded(f.data_type())))
            .collect::<Result<Vec<_>>>()?;
        let width = columns.len();
        let mut groups = Self {
            schema,
            columns,
            values: vec![Vec::new(); width],
            value_bytes: 0,
            widths: vec![START_BITS; width],
            class_codes: vec![Vec::new(); width],
            classes: 0,
            index: Index::Flat(Vec::new()),
            codes_are_classes: width == 1,
            codes: Vec::new(),
            first: Vec::new(),
            keys: Vec::new(),
        };
        groups.rebuild()?;
        Ok(groups)
    }

    pub fn len(&self) -> usize {
        self.classes
    }

    pub fn is_empty(&self) -> bool {
        self.classes == 0
    }

    /// Whether DataFusion's grouping took over (the keys outgrew 64 bits).
    pub fn is_hashed(&self) -> bool {
        matches!(self.index, Index::Hashed(_))
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        let index = match &self.index {
            Index::Flat(slots) => slots.capacity() * size_of::<u32>(),
            Index::Direct(table) => table.memory_size(),
            Index::Hashed(values) => values.size(),
        };
        index
            + self.value_bytes
            + self
                .class_codes
                .iter()
                .map(|c| c.capacity() * size_of::<u32>())
                .sum::<usize>()
            + self.keys.capacity() * size_of::<u64>()
    }

    /// The class of every row of `columns` (the key columns of one batch) into `classes`,
    /// new classes numbered on from [`Self::len`].
    pub fn intern(&mut self, columns: &[ArrayRef], classes: &mut Vec<usize>) -> Result<()> {
        classes.clear();
        if let Index::Hashed(values) = &mut self.index {
            values.intern(columns, classes)?;
            self.classes = values.len();
            return Ok(());
        }
        if self.codes_are_classes {
            return self.intern_codes(&columns[0], classes);
        }
        let rows = columns.first().map_or(0, |c| c.len());
        self.keys.clear();
        self.keys.resize(rows, 0);
        let mut widened = false;
        for (c, column) in columns.iter().enumerate() {
            self.codes.clear();
            self.first.clear();
            self.columns[c].intern(column, &mut self.codes, &mut self.first)?;
            if !self.first.is_empty() {
                let rows = UInt32Array::from(self.first.clone());
                let values = take(column.as_ref(), &rows, None)?;
                self.value_bytes += values.get_array_memory_size();
                self.values[c].push(values);
            }
            let needed = bits_for(self.columns[c].len());
            if needed > self.widths[c] {
                // as few bits as the codes need, so that more keys fit the flat array; a
                // column's values mostly all come in its first batches, when re-packing the
                // few classes so far costs little
                self.widths[c] = needed;
                widened = true;
            }
            let shift = self.shift(c);
            for (key, &code) in self.keys.iter_mut().zip(&self.codes) {
                *key |= u64::from(code) << shift;
            }
        }
        if widened {
            // the keys above used the new widths already
            self.rebuild()?;
            if let Index::Hashed(values) = &mut self.index {
                values.intern(columns, classes)?;
                self.classes = values.len();
                return Ok(());
            }
        }
        classes.reserve(rows);
        for r in 0..rows {
            let key = self.keys[r];
            let found = match &self.index {
                Index::Flat(slots) => {
                    // the array outgrows the caches (4 MiB for 20 bits): fetch ahead, so that
                    // the misses of consecutive rows overlap
                    if let Some(&ahead) = self.keys.get(r + PREFETCH_DISTANCE) {
                        prefetch(&slots[ahead as usize]);
                    }
                    Some(slots[key as usize]).filter(|&s| s != u32::MAX)
                }
                Index::Direct(table) => {
                    if let Some(&ahead) = self.keys.get(r + PREFETCH_DISTANCE) {
                        table.prefetch(ahead);
                    }
                    table.get(key)
                }
                Index::Hashed(_) => None,
            };
            if let Some(class) = found {
                classes.push(class as usize);
                continue;
            }
            let class = self.classes as u32;
            self.add_class(r);
            let placed = match &mut self.index {
                Index::Flat(slots) => {
                    slots[key as usize] = class;
                    true
                }
                Index::Direct(table) if table.has_room_for(class) => {
                    table.insert(key, class);
                    true
                }
                _ => false,
            };
            if !placed {
                // a larger table, with the new class in it
                self.rebuild()?;
                if let Index::Hashed(values) = &mut self.index {
                    // the rows from `r` on by DataFusion's grouping, which has row r's class
                    let rest: Vec<ArrayRef> =
                        columns.iter().map(|c| c.slice(r, rows - r)).collect();
                    let mut tail = Vec::new();
                    values.intern(&rest, &mut tail)?;
                    self.classes = values.len();
                    classes.extend(tail);
                    return Ok(());
                }
            }
            classes.push(class as usize);
        }
        Ok(())
    }

    /// [`Self::intern`] for one key column before any class was emitted: its values' codes
    /// are given in order of first sight, and so are the classes (a new value is a new key,
    /// hence a new class), so a row's class is its value's code and the classes' keys are the
    /// values in code order. A `GROUP BY` of one near-unique column (the persons of
    /// `count(DISTINCT person)`) then pays one lookup a row, not two (the value's code, then
    /// its key's class).
    fn intern_codes(&mut self, column: &ArrayRef, classes: &mut Vec<usize>) -> Result<()> {
        self.codes.clear();
        self.first.clear();
        self.columns[0].intern(column, &mut self.codes, &mut self.first)?;
        if !self.first.is_empty() {
            let rows = UInt32Array::from(self.first.clone());
            let values = take(column.as_ref(), &rows, None)?;
            self.value_bytes += values.get_array_memory_size();
            self.values[0].push(values);
        }
        // the width the codes would have in a packed key, for the index built at emit
        self.widths[0] = self.widths[0].max(bits_for(self.columns[0].len()));
        classes.extend(self.codes.iter().map(|&c| c as usize));
        self.classes = self.columns[0].len();
        Ok(())
    }

    /// Records a new class with the codes of row `r` of the current batch's keys.
    fn add_class(&mut self, r: usize) {
        let key = self.keys[r];
        for c in 0..self.columns.len() {
            let code = (key >> self.shift(c)) & ((1u64 << self.widths[c]) - 1);
            self.class_codes[c].push(code as u32);
        }
        self.classes += 1;
    }

    /// Bit position of column `c` in a key (the first column lowest).
    fn shift(&self, c: usize) -> u32 {
        self.widths[..c].iter().sum()
    }

    fn key_bits(&self) -> u32 {
        self.widths.iter().sum()
    }

    /// The packed key of class `g`.
    fn class_key(&self, g: usize) -> u64 {
        let mut key = 0;
        let mut shift = 0;
        for (c, codes) in self.class_codes.iter().enumerate() {
            key |= u64::from(codes[g]) << shift;
            shift += self.widths[c];
        }
        key
    }

    /// Rebuilds the index for the current widths and classes (with room for as many more),
    /// or hands the classes to DataFusion's grouping when keys and classes no longer fit.
    fn rebuild(&mut self) -> Result<()> {
        let key_bits = self.key_bits();
        let room = (2 * self.classes).max(1024);
        if key_bits <= FLAT_BITS {
            let mut slots = vec![u32::MAX; 1 << key_bits];
            for g in 0..self.classes {
                slots[self.class_key(g) as usize] = g as u32;
            }
            self.index = Index::Flat(slots);
            return Ok(());
        }
        if key_bits < 64
            && let Some(mut table) = DirectTable::new(room, key_bits, room as u32)
        {
            for g in 0..self.classes {
                table.insert(self.class_key(g), g as u32);
            }
            self.index = Index::Direct(table);
            return Ok(());
        }
        self.hand_over()
    }

    /// Moves the classes, in order, to DataFusion's grouping.
    fn hand_over(&mut self) -> Result<()> {
        let mut values = new_group_values(Arc::clone(&self.schema), &GroupOrdering::None)?;
        let keys = self.class_keys(self.classes)?;
        let mut numbers = Vec::new();
        values.intern(&keys, &mut numbers)?;
        if numbers.iter().enumerate().any(|(g, &n)| g != n) {
            return Err(DataFusionError::Internal(
                "packed grouping: classes renumbered when handed over".into(),
            ));
        }
        self.index = Index::Hashed(values);
        self.class_codes = vec![Vec::new(); self.columns.len()];
        self.values = vec![Vec::new(); self.columns.len()];
        self.value_bytes = 0;
        Ok(())
    }

    /// The key columns of the first `n` classes, in class order.
    fn class_keys(&self, n: usize) -> Result<Vec<ArrayRef>> {
        self.schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, field)| {
                let codes = UInt32Array::from(self.class_codes[c][..n].to_vec());
                let parts: Vec<&dyn datafusion::arrow::array::Array> =
                    self.values[c].iter().map(|v| v.as_ref()).collect();
                if parts.is_empty() {
                    return Ok(datafusion::arrow::array::new_empty_array(field.data_type()));
                }
                let values = concat(&parts)?;
                Ok(take(values.as_ref(), &codes, None)?)
            })
            .collect()
    }

    /// Takes every class's key columns out, in class order, and starts over with no class
    /// (the value codes are kept).
    pub fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        if let Index::Hashed(values) = &mut self.index {
            let keys = values.emit(EmitTo::All)?;
            self.classes = 0;
            return Ok(keys);
        }
        let keys = if self.codes_are_classes {
            // the values in code order are the classes' keys; the codes stay, the classes
            // start over, so from now on classes are found by the index
            self.codes_are_classes = false;
            let field = &self.schema.fields()[0];
            let parts: Vec<&dyn datafusion::arrow::array::Array> =
                self.values[0].iter().map(|v| v.as_ref()).collect();
            let values = if parts.is_empty() {
                datafusion::arrow::array::new_empty_array(field.data_type())
            } else {
                concat(&parts)?
            };
            vec![values]
        } else {
            self.class_keys(self.classes)?
        };
        for codes in &mut self.class_codes {
            codes.clear();
        }
        self.classes = 0;
        self.rebuild()?;
        Ok(keys)
    }
}

/// The type values of `data_type` are coded by: a dictionary's value type.
fn decoded(data_type: &DataType) -> &DataType {
    match data_type {
        DataType::Dictionary(_, value) => value,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{Field, Int64Type, Schema};

    /// Class numbers by a brute-force search: a value's position among the distinct values
    /// seen since the last emit, in order of first sight.
    fn reference(seen: &mut Vec<Option<i64>>, values: &[Option<i64>]) -> Vec<usize> {
        values
            .iter()
            .map(|v| match seen.iter().position(|s| s == v) {
                Some(class) => class,
                None => {
                    seen.push(*v);
                    seen.len() - 1
                }
            })
            .collect()
    }

    #[test]
    fn one_key_column_numbers_classes_by_first_sight_before_and_after_an_emit() {
        let schema = Arc::new(Schema::new(vec![Field::new("p", DataType::Int64, true)]));
        let mut groups = PackedGroups::try_new(schema).unwrap();
        // values 0..3000 scattered (wider than the start widths), NULL every 7th row,
        // over several batches; an emit after the third batch
        let batches: Vec<Vec<Option<i64>>> = (0..6)
            .map(|b| {
                (0..1000)
                    .map(|r| {
                        let i = b * 1000 + r;
                        (i % 7 != 3).then_some((i * 7919 % 3001) as i64 - 1500)
                    })
                    .collect()
            })
            .collect();
        let mut seen = Vec::new();
        let mut classes = Vec::new();
        for (b, values) in batches.iter().enumerate() {
            let array: ArrayRef = Arc::new(Int64Array::from(values.clone()));
            groups.intern(&[array], &mut classes).unwrap();
            assert_eq!(classes, reference(&mut seen, values), "batch {b}");
            assert_eq!(groups.len(), seen.len());
            if b == 2 {
                // the classes' keys are the distinct values in order of first sight
                let keys = groups.emit().unwrap();
                let keys = keys[0].as_primitive::<Int64Type>();
                let got: Vec<Option<i64>> = keys.iter().collect();
                assert_eq!(got, seen);
                assert!(groups.is_empty());
                seen.clear();
            }
        }
        let keys = groups.emit().unwrap();
        let got: Vec<Option<i64>> = keys[0].as_primitive::<Int64Type>().iter().collect();
        assert_eq!(got, seen);
    }

    #[test]
    fn several_key_columns_still_number_classes_by_first_sight() {
        // (text, int) pairs: the class of a row is its pair's first-sight position
        let schema = Arc::new(Schema::new(vec![
            Field::new("t", DataType::Utf8, true),
            Field::new("i", DataType::Int64, true),
        ]));
        let mut groups = PackedGroups::try_new(schema).unwrap();
        let rows: Vec<(Option<String>, Option<i64>)> = (0..2000)
            .map(|r: i64| {
                let t = (r % 5 != 0).then(|| format!("v{}", r * 31 % 13));
                (t, Some(r * 17 % 11))
            })
            .collect();
        let mut seen: Vec<(Option<String>, Option<i64>)> = Vec::new();
        let want: Vec<usize> = rows
            .iter()
            .map(|row| match seen.iter().position(|s| s == row) {
                Some(class) => class,
                None => {
                    seen.push(row.clone());
                    seen.len() - 1
                }
            })
            .collect();
        let text: ArrayRef = Arc::new(StringArray::from(
            rows.iter().map(|r| r.0.clone()).collect::<Vec<_>>(),
        ));
        let ints: ArrayRef = Arc::new(Int64Array::from(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
        ));
        let mut classes = Vec::new();
        groups.intern(&[text, ints], &mut classes).unwrap();
        assert_eq!(classes, want);
        let keys = groups.emit().unwrap();
        assert_eq!(keys[0].len(), seen.len());
        let got: Vec<(Option<String>, Option<i64>)> = (0..seen.len())
            .map(|g| {
                let t = keys[0].as_string::<i32>();
                (
                    t.is_valid(g).then(|| t.value(g).to_string()),
                    Some(keys[1].as_primitive::<Int64Type>().value(g)),
                )
            })
            .collect();
        assert_eq!(got, seen);
    }
}
