//! The recoding step of a local release: each row's raw quasi-identifiers are looked up in the
//! release's table of raw combinations, and the row gets that combination's labels.
//!
//! It is a scalar function (`__anon_local_recode(qi_0, …, qi_{d−1})`, returning a struct of
//! the d labels and a `suppressed` flag) rather than a join, so rows keep their input order
//! and partitioning: the same input and release give the same output, byte for byte. Each
//! batch's keys are encoded once with Arrow's row format (all types, NULL a value of its
//! own) and found in a hash index built once per table; no allocation per row. A row whose
//! combination is not in the release (the input changed since the release was computed) fails
//! the query: publishing it would be publishing something nobody checked.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, BooleanArray, StructArray, UInt32Array};
use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use hashbrown::HashMap;

use super::LABEL_TYPE;
use crate::release::LocalRecoding;

/// The struct field holding whether the row's combination is suppressed.
pub const SUPPRESSED_FIELD: &str = "suppressed";

/// The struct field holding the label of the `i`-th quasi-identifier.
pub fn label_field_name(i: usize) -> String {
    format!("label_{i}")
}

/// The lookup of one local release, for rows whose quasi-identifiers have `raw_types`.
#[derive(Debug)]
pub struct LocalRecodeFunction {
    signature: Signature,
    raw_types: Vec<DataType>,
    converter: RowConverter,
    /// row-format key → combination
    index: HashMap<Box<[u8]>, u32>,
    labels: Vec<ArrayRef>,
    suppressed: BooleanArray,
    return_type: DataType,
    /// identity of the release, for equality
    release: Arc<LocalRecoding>,
}

impl LocalRecodeFunction {
    /// The lookup of `release` for quasi-identifier columns of types `raw_types`.
    pub fn try_new(release: Arc<LocalRecoding>, raw_types: &[DataType]) -> Result<Self> {
        let table = release.lookup_columns(raw_types)?;
        let converter = RowConverter::new(
            raw_types
                .iter()
                .map(|t| SortField::new_with_options(t.clone(), SortOptions::default()))
                .collect(),
        )?;
        let rows = converter.convert_columns(&table.raw)?;
        let mut index = HashMap::with_capacity(rows.num_rows());
        for (i, row) in rows.iter().enumerate() {
            if index.insert(Box::from(row.as_ref()), i as u32).is_some() {
                return Err(DataFusionError::Internal(
                    "a raw combination appears twice in the local release".to_string(),
                ));
            }
        }
        let mut fields: Vec<Field> = (0..table.labels.len())
            .map(|i| Field::new(label_field_name(i), LABEL_TYPE, true))
            .collect();
        fields.push(Field::new(SUPPRESSED_FIELD, DataType::Boolean, false));
        Ok(Self {
            signature: Signature::exact(raw_types.to_vec(), Volatility::Immutable),
            raw_types: raw_types.to_vec(),
            converter,
            index,
            labels: table.labels,
            suppressed: table.suppressed,
            return_type: DataType::Struct(Fields::from(fields)),
            release,
        })
    }
}

impl PartialEq for LocalRecodeFunction {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.release, &other.release) && self.raw_types == other.raw_types
    }
}

impl Eq for LocalRecodeFunction {}

impl Hash for LocalRecodeFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.release).hash(state);
        self.raw_types.hash(state);
    }
}

impl ScalarUDFImpl for LocalRecodeFunction {
    fn name(&self) -> &str {
        "__anon_local_recode"
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
        let keys = self.converter.convert_columns(&columns)?;
        let mut combination = Vec::with_capacity(rows);
        for row in keys.iter() {
            match self.index.get(row.as_ref()) {
                Some(&c) => combination.push(c),
                None => {
                    return Err(DataFusionError::Execution(
                        "a row's quasi-identifier values are not in the local release (the \
                         input changed since the release was computed?); nothing is published"
                            .to_string(),
                    ));
                }
            }
        }
        let combination = UInt32Array::from(combination);
        let mut children: Vec<ArrayRef> = Vec::with_capacity(self.labels.len() + 1);
        for labels in &self.labels {
            children.push(take(labels.as_ref(), &combination, None)?);
        }
        children.push(take(&self.suppressed, &combination, None)?);
        let DataType::Struct(fields) = &self.return_type else {
            return Err(DataFusionError::Internal("not a struct".to_string()));
        };
        let array = StructArray::try_new(fields.clone(), children, None)?;
        Ok(ColumnarValue::Array(Arc::new(array)))
    }
}

/// The raw keys, labels and suppression flags of a local release, aligned by combination.
pub struct LookupColumns {
    pub raw: Vec<ArrayRef>,
    pub labels: Vec<ArrayRef>,
    pub suppressed: BooleanArray,
}

impl std::fmt::Debug for LookupColumns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupColumns")
            .field("combinations", &self.suppressed.len())
            .finish()
    }
}
