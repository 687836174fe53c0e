//! An internal aggregate: the histogram of a column over a domain known in advance (its
//! distinct values), as a list of counts in domain order. The profile asks for it per class
//! (`GROUP BY` the quasi-identifiers) for each sensitive attribute with few values: one pass
//! over the rows (value → code by a small hash map, then `counts[class · m + code] += 1`)
//! instead of one filtered count per value.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, ListArray, UInt64Array};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Int64Type, UInt64Type};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, Signature, Volatility,
};
use hashbrown::HashMap;

use crate::functions::common::{SingleClass, decode_dictionary, selected};

/// A histogram aggregate over `domain`: `histogram(s)` returns `List<UInt64>` with the
/// count of each domain value (NULL included when the domain has it), in domain order.
pub fn histogram_udaf(domain: ArrayRef) -> AggregateUDF {
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);
    AggregateUDF::new_from_impl(DomainHistogram {
        id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        domain,
        signature: Signature::any(1, Volatility::Immutable),
    })
}

/// The domain of a [`histogram_udaf`] function (for sending it to another process), or
/// `None` for any other aggregate.
pub fn histogram_domain(udaf: &AggregateUDF) -> Option<&ArrayRef> {
    udaf.inner()
        .downcast_ref::<DomainHistogram>()
        .map(|h| &h.domain)
}

/// See [`histogram_udaf`].
#[derive(Debug)]
struct DomainHistogram {
    /// Tells instances apart (the domain array has no equality of its own).
    id: u64,
    domain: ArrayRef,
    signature: Signature,
}

impl PartialEq for DomainHistogram {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for DomainHistogram {}

impl Hash for DomainHistogram {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.id.hash(state);
    }
}

fn list_type() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::UInt64, true)))
}

impl AggregateUDFImpl for DomainHistogram {
    fn name(&self) -> &str {
        "__anon_domain_histogram"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(list_type())
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args
            .expr_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        Ok(Box::new(SingleClass::try_new(
            Counts::try_new(&self.domain)?,
            &types,
        )?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "counts"),
            list_type(),
            true,
        ))])
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        _args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Counts::try_new(&self.domain)?))
    }
}

/// Maps values to their position in the domain.
#[derive(Debug)]
enum Coder {
    /// Strings (any string type), by value.
    Strings(HashMap<Box<str>, u32>),
    /// Integers that fit i64, by value.
    Integers(HashMap<i64, u32>),
    /// Anything else, by Arrow's row encoding.
    Rows(RowConverter, HashMap<Box<[u8]>, u32>),
}

fn is_string(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

fn is_small_integer(data_type: &DataType) -> bool {
    data_type.is_signed_integer()
        || matches!(
            data_type,
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32
        )
}

/// Calls `f(row, Some(text))` for each row of a string array (`None` for NULL).
fn for_each_string(values: &ArrayRef, mut f: impl FnMut(usize, Option<&str>)) {
    match values.data_type() {
        DataType::Utf8View => {
            let a = values.as_string_view();
            (0..a.len()).for_each(|i| f(i, a.is_valid(i).then(|| a.value(i))));
        }
        DataType::LargeUtf8 => {
            let a = values.as_string::<i64>();
            (0..a.len()).for_each(|i| f(i, a.is_valid(i).then(|| a.value(i))));
        }
        _ => {
            let a = values.as_string::<i32>();
            (0..a.len()).for_each(|i| f(i, a.is_valid(i).then(|| a.value(i))));
        }
    }
}

/// Per-class value counts.
#[derive(Debug)]
struct Counts {
    domain: ArrayRef,
    coder: Coder,
    /// The code of NULL, if the domain has it.
    null_code: Option<u32>,
    /// Values of the domain (m).
    m: usize,
    /// `counts[class * m + code]`
    counts: Vec<u64>,
    /// Scratch: the codes of a batch.
    codes: Vec<u32>,
}

impl Counts {
    fn try_new(domain: &ArrayRef) -> Result<Self> {
        let domain = decoded(domain)?;
        let m = domain.len();
        let null_code = (0..m).find(|&i| domain.is_null(i)).map(|i| i as u32);
        let data_type = domain.data_type().clone();
        let coder = if is_string(&data_type) {
            let mut map = HashMap::with_capacity(m);
            for_each_string(&domain, |i, v| {
                if let Some(v) = v {
                    map.insert(v.into(), i as u32);
                }
            });
            Coder::Strings(map)
        } else if is_small_integer(&data_type) {
            let integers = cast(&domain, &DataType::Int64)?;
            let integers = integers.as_primitive::<Int64Type>();
            let mut map = HashMap::with_capacity(m);
            for i in 0..m {
                if integers.is_valid(i) {
                    map.insert(integers.value(i), i as u32);
                }
            }
            Coder::Integers(map)
        } else {
            let converter = RowConverter::new(vec![SortField::new(data_type)])?;
            let rows = converter.convert_columns(std::slice::from_ref(&domain))?;
            let mut map = HashMap::with_capacity(m);
            for i in 0..m {
                if domain.is_valid(i) {
                    map.insert(rows.row(i).as_ref().into(), i as u32);
                }
            }
            Coder::Rows(converter, map)
        };
        Ok(Self {
            domain,
            coder,
            null_code,
            m,
            counts: Vec::new(),
            codes: Vec::new(),
        })
    }

    /// The domain code of each row of `values` into `self.codes`.
    fn encode(&mut self, values: &ArrayRef) -> Result<()> {
        let values = decoded(values)?;
        self.codes.clear();
        self.codes.resize(values.len(), u32::MAX);
        let null_code = self.null_code.unwrap_or(u32::MAX);
        let codes = &mut self.codes;
        match &self.coder {
            Coder::Strings(map) => for_each_string(&values, |i, v| {
                codes[i] = match v {
                    Some(v) => map.get(v).copied().unwrap_or(u32::MAX),
                    None => null_code,
                }
            }),
            Coder::Integers(map) => {
                let integers = cast(&values, &DataType::Int64)?;
                let integers = integers.as_primitive::<Int64Type>();
                for (i, code) in codes.iter_mut().enumerate() {
                    *code = if integers.is_valid(i) {
                        map.get(&integers.value(i)).copied().unwrap_or(u32::MAX)
                    } else {
                        null_code
                    };
                }
            }
            Coder::Rows(converter, map) => {
                let rows = converter.convert_columns(std::slice::from_ref(&values))?;
                for (i, code) in codes.iter_mut().enumerate() {
                    *code = if values.is_valid(i) {
                        map.get(rows.row(i).as_ref()).copied().unwrap_or(u32::MAX)
                    } else {
                        null_code
                    };
                }
            }
        }
        Ok(())
    }

    fn resize(&mut self, total_groups: usize) {
        self.counts.resize(total_groups * self.m, 0);
    }

    /// The first groups of `emit_to` as a list array, removed from the state.
    fn emit(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let groups = self.counts.len() / self.m.max(1);
        let n = match emit_to {
            EmitTo::All => groups,
            EmitTo::First(n) => n.min(groups),
        };
        let rest = self.counts.split_off(n * self.m);
        let values = std::mem::replace(&mut self.counts, rest);
        let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(self.m, n));
        Ok(Arc::new(ListArray::try_new(
            Arc::new(Field::new("item", DataType::UInt64, true)),
            offsets,
            Arc::new(UInt64Array::from(values)),
            None,
        )?))
    }
}

/// Dictionary arrays as their values (the domain is about values).
fn decoded(values: &ArrayRef) -> Result<ArrayRef> {
    match values.data_type() {
        DataType::Dictionary(_, _) => Ok(cast(values, &decode_dictionary(values.data_type()))?),
        _ => Ok(Arc::clone(values)),
    }
}

fn outside_domain() -> DataFusionError {
    DataFusionError::Internal("a value outside the histogram's domain".into())
}

impl GroupsAccumulator for Counts {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_groups: usize,
    ) -> Result<()> {
        self.resize(total_groups);
        let Some(values) = values.first() else {
            return Ok(());
        };
        self.encode(values)?;
        let m = self.m;
        for (row, (&group, &code)) in group_indices.iter().zip(&self.codes).enumerate() {
            if opt_filter.is_some() && !selected(opt_filter, row) {
                continue;
            }
            if code == u32::MAX {
                return Err(outside_domain());
            }
            self.counts[group * m + code as usize] += 1;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.emit(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.emit(emit_to)?])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_groups: usize,
    ) -> Result<()> {
        self.resize(total_groups);
        let Some(lists) = values.first() else {
            return Ok(());
        };
        let lists = lists.as_list::<i32>();
        let counts = lists.values().as_primitive::<UInt64Type>();
        let offsets = lists.value_offsets();
        let m = self.m;
        for (row, &group) in group_indices.iter().enumerate() {
            if lists.is_null(row) {
                continue;
            }
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if end - start != m {
                return Err(outside_domain());
            }
            let target = &mut self.counts[group * m..(group + 1) * m];
            for (t, &c) in target.iter_mut().zip(&counts.values()[start..end]) {
                *t += c;
            }
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        // one row per input row: a one-hot histogram
        let mut scratch = Counts::try_new(&self.domain)?;
        let Some(values) = values.first() else {
            return Ok(vec![scratch.emit(EmitTo::All)?]);
        };
        let rows = values.len();
        let indices: Vec<usize> = (0..rows).collect();
        scratch.update_batch(std::slice::from_ref(values), &indices, opt_filter, rows)?;
        Ok(vec![scratch.emit(EmitTo::All)?])
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.counts.capacity() * 8 + self.codes.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Int32Array, StringArray, StringViewArray};

    use super::*;

    fn lists(array: &ArrayRef) -> Vec<Vec<u64>> {
        let lists = array.as_list::<i32>();
        (0..lists.len())
            .map(|i| {
                lists
                    .value(i)
                    .as_primitive::<UInt64Type>()
                    .values()
                    .to_vec()
            })
            .collect()
    }

    #[test]
    fn counts_per_group_with_nulls_and_merge() {
        let domain: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None, Some("b")]));
        let mut acc = Counts::try_new(&domain).unwrap();
        // Utf8View input against a Utf8 domain
        let values: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some("b"),
            Some("a"),
            None,
            Some("b"),
        ]));
        acc.update_batch(std::slice::from_ref(&values), &[0, 1, 1, 0], None, 2)
            .unwrap();
        let state = acc.state(EmitTo::All).unwrap();
        assert_eq!(lists(&state[0]), vec![vec![0, 0, 2], vec![1, 1, 0]]);
        // merging the state twice doubles it; one-hot states of the raw rows add up the same
        let mut merged = Counts::try_new(&domain).unwrap();
        merged.merge_batch(&state, &[0, 1], 2).unwrap();
        let one_hot = merged.convert_to_state(&[values], None).unwrap();
        assert_eq!(lists(&one_hot[0])[0], vec![0, 0, 1]);
        merged.merge_batch(&one_hot, &[0, 1, 1, 0], 2).unwrap();
        assert_eq!(
            lists(&merged.evaluate(EmitTo::All).unwrap()),
            vec![vec![0, 0, 4], vec![2, 2, 0]]
        );
    }

    #[test]
    fn integers_and_emit_first() {
        let domain: ArrayRef = Arc::new(Int32Array::from(vec![7, 3]));
        let mut acc = Counts::try_new(&domain).unwrap();
        let values: ArrayRef = Arc::new(Int32Array::from(vec![3, 3, 7]));
        acc.update_batch(&[values], &[0, 1, 2], None, 3).unwrap();
        assert_eq!(
            lists(&acc.evaluate(EmitTo::First(1)).unwrap()),
            vec![vec![0, 1]]
        );
        assert_eq!(
            lists(&acc.evaluate(EmitTo::All).unwrap()),
            vec![vec![0, 1], vec![1, 0]]
        );
        // a value outside the domain is a bug, reported as such
        let other: ArrayRef = Arc::new(Int32Array::from(vec![5]));
        assert!(acc.update_batch(&[other], &[0], None, 1).is_err());
    }
}
