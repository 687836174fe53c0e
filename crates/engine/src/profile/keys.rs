//! Dense ids for the distinct keys (one or more columns) of query results: the equivalence
//! classes of a frequency set, the values of a sensitive attribute.
//!
//! Keys are encoded with Arrow's row format (so any column types, NULLs and dictionaries
//! work, and equal values get equal bytes) and kept in one byte arena: no allocation per row.

use std::hash::BuildHasher;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::row::{RowConverter, Rows, SortField};
use datafusion::error::{DataFusionError, Result};
use hashbrown::{DefaultHashBuilder, HashTable};

/// Assigns ids 0, 1, 2, … to distinct keys in order of first appearance.
pub(crate) struct KeyInterner {
    converter: RowConverter,
    types: Vec<DataType>,
    hasher: DefaultHashBuilder,
    table: HashTable<u32>,
    /// key bytes of every id, concatenated
    arena: Vec<u8>,
    /// `offsets[id]..offsets[id + 1]` is the key of `id` in `arena`
    offsets: Vec<usize>,
}

impl KeyInterner {
    /// An interner for keys of columns of these types.
    pub fn new(types: &[DataType]) -> Result<Self> {
        let fields = types.iter().cloned().map(SortField::new).collect();
        Ok(Self {
            converter: RowConverter::new(fields)?,
            types: types.to_vec(),
            hasher: DefaultHashBuilder::default(),
            table: HashTable::new(),
            arena: Vec::new(),
            offsets: vec![0],
        })
    }

    /// Number of distinct keys seen.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The column types of the keys.
    pub fn types(&self) -> &[DataType] {
        &self.types
    }

    fn key(&self, id: u32) -> &[u8] {
        let id = id as usize;
        &self.arena[self.offsets[id]..self.offsets[id + 1]]
    }

    fn rows(&self, columns: &[ArrayRef]) -> Result<Rows> {
        Ok(self.converter.convert_columns(columns)?)
    }

    /// The id of each row of `columns` (one array per key column), adding new keys.
    pub fn intern(&mut self, columns: &[ArrayRef], ids: &mut Vec<u32>) -> Result<()> {
        let rows = self.rows(columns)?;
        ids.reserve(rows.num_rows());
        for row in rows.iter() {
            let bytes = row.as_ref();
            let hash = self.hasher.hash_one(bytes);
            let (arena, offsets) = (&self.arena, &self.offsets);
            let found = self.table.find(hash, |&id| {
                let id = id as usize;
                &arena[offsets[id]..offsets[id + 1]] == bytes
            });
            let id = match found {
                Some(&id) => id,
                None => {
                    let id = u32::try_from(self.len()).map_err(|_| {
                        DataFusionError::Execution("more than 2^32 distinct keys".into())
                    })?;
                    self.arena.extend_from_slice(bytes);
                    self.offsets.push(self.arena.len());
                    let (hasher, arena, offsets) = (&self.hasher, &self.arena, &self.offsets);
                    self.table.insert_unique(hash, id, |&id| {
                        let id = id as usize;
                        hasher.hash_one(&arena[offsets[id]..offsets[id + 1]])
                    });
                    id
                }
            };
            ids.push(id);
        }
        Ok(())
    }

    /// The id of each row of `columns`, or `None` for keys never interned. Columns of other
    /// types than the interner's are cast first (an error names the key column's position).
    pub fn lookup(&self, columns: &[ArrayRef]) -> Result<Vec<Option<u32>>> {
        let cast_columns = columns
            .iter()
            .zip(&self.types)
            .map(|(column, data_type)| {
                if column.data_type() == data_type {
                    Ok(column.clone())
                } else {
                    cast(column, data_type).map_err(DataFusionError::from)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let rows = self.rows(&cast_columns)?;
        Ok(rows
            .iter()
            .map(|row| {
                let bytes = row.as_ref();
                let hash = self.hasher.hash_one(bytes);
                self.table.find(hash, |&id| self.key(id) == bytes).copied()
            })
            .collect())
    }

    /// The keys of `ids`, as one array per key column.
    pub fn arrays(&self, ids: &[u32]) -> Result<Vec<ArrayRef>> {
        let parser = self.converter.parser();
        let rows = ids.iter().map(|&id| parser.parse(self.key(id)));
        Ok(self.converter.convert_rows(rows)?)
    }

    /// Every key in id order, as one array per key column.
    pub fn all_arrays(&self) -> Result<Vec<ArrayRef>> {
        let ids: Vec<u32> = (0..self.len() as u32).collect();
        self.arrays(&ids)
    }

    /// Bytes held, about (for a memory pool).
    pub fn memory_size(&self) -> usize {
        self.arena.capacity()
            + self.offsets.capacity() * size_of::<usize>()
            + self.table.capacity() * (size_of::<u32>() + 1)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{AsArray, Int32Array, StringArray};
    use datafusion::arrow::datatypes::Int32Type;

    use super::*;

    #[test]
    fn ids_in_order_of_appearance_with_nulls() {
        let mut interner = KeyInterner::new(&[DataType::Utf8, DataType::Int32]).unwrap();
        let a: ArrayRef = Arc::new(StringArray::from(vec![
            Some("x"),
            Some("y"),
            Some("x"),
            None,
            None,
        ]));
        let b: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(1),
            Some(1),
            Some(1),
            Some(2),
            Some(2),
        ]));
        let mut ids = Vec::new();
        interner.intern(&[a, b], &mut ids).unwrap();
        assert_eq!(ids, vec![0, 1, 0, 2, 2]);
        assert_eq!(interner.len(), 3);
        let keys = interner.arrays(&[2, 0]).unwrap();
        assert!(keys[0].is_null(0));
        assert_eq!(keys[0].as_string::<i32>().value(1), "x");
        assert_eq!(keys[1].as_primitive::<Int32Type>().value(0), 2);
        // lookup casts: Int64 keys against the Int32 column
        let a: ArrayRef = Arc::new(StringArray::from(vec![Some("y"), Some("z")]));
        let b: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(vec![1, 1]));
        assert_eq!(interner.lookup(&[a, b]).unwrap(), vec![Some(1), None]);
    }
}
