//! Pieces shared by the aggregate functions: argument types, documentation, and the
//! single-class [`Accumulator`] used when a query has no `GROUP BY`.

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{ArrayRef, new_empty_array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Accumulator, DocSection, Documentation, EmitTo, GroupsAccumulator};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::Literal;

/// The documentation section of every function of this crate.
pub const DOC_SECTION: DocSection = DocSection {
    include: true,
    label: "Anonymity Functions",
    description: Some("Per-equivalence-class privacy measures over GROUP BY <quasi-identifiers>"),
};

/// Starts the documentation of a function of this crate.
pub fn doc(description: &str, syntax: &str) -> datafusion::logical_expr::DocumentationBuilder {
    Documentation::builder(DOC_SECTION, description, syntax)
}

/// Dictionary-encoded inputs are decoded to their value type: classes and histograms are about
/// values, not about how Parquet happened to encode them.
pub fn decode_dictionary(data_type: &DataType) -> DataType {
    match data_type {
        DataType::Dictionary(_, value) => decode_dictionary(value),
        other => other.clone(),
    }
}

/// Types with a meaningful order and distance: numbers, decimals, dates and times.
pub fn is_ordered(data_type: &DataType) -> bool {
    data_type.is_numeric()
        || matches!(
            data_type,
            DataType::Date32
                | DataType::Date64
                | DataType::Timestamp(_, _)
                | DataType::Time32(_)
                | DataType::Time64(_)
                | DataType::Duration(_)
        )
}

/// Whether row `row` passes an aggregate's `FILTER` (a NULL filter value does not).
pub fn selected(filter: Option<&datafusion::arrow::array::BooleanArray>, row: usize) -> bool {
    use datafusion::arrow::array::Array;
    filter.is_none_or(|f| f.is_valid(row) && f.value(row))
}

/// The value of a constant numeric argument (such as `c` of recursive diversity).
pub fn constant_f64(function: &str, name: &str, expr: &Arc<dyn PhysicalExpr>) -> Result<f64> {
    let literal = expr.as_ref().downcast_ref::<Literal>().ok_or_else(|| {
        DataFusionError::Plan(format!("{function}: {name} must be a constant number"))
    })?;
    let value = match literal.value() {
        ScalarValue::Float64(Some(v)) => *v,
        other if !other.is_null() => other
            .cast_to(&DataType::Float64)
            .ok()
            .and_then(|v| match v {
                ScalarValue::Float64(Some(v)) => Some(v),
                _ => None,
            })
            .ok_or_else(|| {
                DataFusionError::Plan(format!("{function}: {name} must be a constant number"))
            })?,
        _ => {
            return Err(DataFusionError::Plan(format!(
                "{function}: {name} must be a constant number, not NULL"
            )));
        }
    };
    Ok(value)
}

/// A [`GroupsAccumulator`] used as an [`Accumulator`] with a single class (queries without
/// `GROUP BY`, window use). Reading state or the result does not consume it.
#[derive(Debug)]
pub struct SingleClass<G: GroupsAccumulator + std::fmt::Debug> {
    // `Accumulator` must be `Sync`, value dictionaries are only `Send`; never contended
    inner: Mutex<G>,
}

impl<G: GroupsAccumulator + std::fmt::Debug> SingleClass<G> {
    /// Wraps `inner`, declaring its one class even before any row arrives (so that an empty
    /// input has a defined result).
    pub fn try_new(mut inner: G, input_types: &[DataType]) -> Result<Self> {
        let empty: Vec<ArrayRef> = input_types.iter().map(new_empty_array).collect();
        inner.update_batch(&empty, &[], None, 1)?;
        Ok(Self {
            inner: Mutex::new(inner),
        })
    }

    fn inner(&mut self) -> &mut G {
        // a poisoned lock still holds a consistent accumulator: every call leaves it whole
        self.inner.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    fn snapshot(&mut self) -> Result<Vec<ArrayRef>> {
        let inner = self.inner();
        let state = inner.state(EmitTo::All)?;
        inner.merge_batch(&state, &[0], 1)?;
        Ok(state)
    }
}

impl<G: GroupsAccumulator + std::fmt::Debug> Accumulator for SingleClass<G> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let rows = values.first().map_or(0, |v| v.len());
        self.inner().update_batch(values, &vec![0; rows], None, 1)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let state = self.snapshot()?;
        let inner = self.inner();
        let result = inner.evaluate(EmitTo::All)?;
        inner.merge_batch(&state, &[0], 1)?;
        ScalarValue::try_from_array(&result, 0)
    }

    fn size(&self) -> usize {
        let inner = self.inner.lock().map_or(0, |inner| inner.size());
        size_of_val(self) + inner
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.snapshot()?
            .iter()
            .map(|array| ScalarValue::try_from_array(array, 0))
            .collect()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let rows = states.first().map_or(0, |s| s.len());
        self.inner().merge_batch(states, &vec![0; rows], 1)
    }
}

/// Classes below this many are finalized on the calling thread.
const PARALLEL_CLASSES: usize = 1 << 15;

/// `work(range)` over `0..len` split into contiguous ranges, one per core but none shorter
/// than `min_per_thread` (a short input stays on the calling thread); the results in range
/// order. The whole-table finalizers run in a window over all classes, a single partition,
/// once the aggregation before it has finished: the other cores are otherwise idle.
pub fn map_ranges<T, F>(len: usize, min_per_thread: usize, work: F) -> Vec<T>
where
    T: Send,
    F: Fn(std::ops::Range<usize>) -> T + Sync,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(len / min_per_thread.max(1))
        .max(1);
    if threads == 1 {
        return vec![work(0..len)];
    }
    let chunk = len.div_ceil(threads);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| scope.spawn(move || work(t * chunk..((t + 1) * chunk).min(len))))
            .collect();
        handles
            .into_iter()
            // a panic in a worker is a bug: re-raise it on this thread
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e))
            })
            .collect()
    })
}

/// `value(class, scratch)` for every class of `0..num_classes`, in order, the classes split
/// over the cores ([`map_ranges`]). Each thread has its own `scratch`.
pub fn map_classes<S, F>(num_classes: usize, value: F) -> Vec<Option<f64>>
where
    S: Default,
    F: Fn(usize, &mut S) -> Option<f64> + Sync,
{
    let parts = map_ranges(num_classes, PARALLEL_CLASSES, |range| {
        let mut scratch = S::default();
        range.map(|c| value(c, &mut scratch)).collect::<Vec<_>>()
    });
    let mut values = Vec::with_capacity(num_classes);
    for part in parts {
        values.extend(part);
    }
    values
}

/// Values of an ordered column as f64 (numbers and decimals by value, dates and timestamps by
/// their integer representation); `None` for NULL and NaN.
pub fn ordered_as_f64(values: &datafusion::arrow::array::ArrayRef) -> Result<Vec<Option<f64>>> {
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::compute::cast;
    use datafusion::arrow::datatypes::{DataType, Float64Type};
    let value_type = crate::functions::common::decode_dictionary(values.data_type());
    let as_float = if value_type.is_numeric() {
        cast(values, &DataType::Float64)?
    } else {
        let integers = cast(values, &DataType::Int64)
            .or_else(|_| cast(&cast(values, &DataType::Int32)?, &DataType::Int64))?;
        cast(&integers, &DataType::Float64)?
    };
    Ok(as_float
        .as_primitive::<Float64Type>()
        .iter()
        .map(|v| v.filter(|v| !v.is_nan()))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_classes_keeps_the_order_across_threads() {
        // enough classes for several threads on a multi-core machine; class c gives c / 2
        let n = 5 * PARALLEL_CLASSES + 7;
        let values = map_classes(n, |c, seen: &mut usize| {
            *seen += 1;
            Some(c as f64 / 2.0)
        });
        assert_eq!(values.len(), n);
        assert!(
            values
                .iter()
                .enumerate()
                .all(|(c, v)| *v == Some(c as f64 / 2.0))
        );
    }

    #[test]
    fn map_ranges_covers_the_input_once_in_order() {
        // below the minimum: one range on the calling thread; above: consecutive ranges that
        // tile 0..len (on a one-core machine, one range too)
        assert_eq!(map_ranges(5, 10, |r| r), vec![0..5]);
        for len in [0, 1, 10, 1_001] {
            let ranges = map_ranges(len, 10, |r| r);
            assert!(ranges.iter().all(|r| len < 20 || r.len() >= 10));
            let flat: Vec<usize> = ranges.into_iter().flatten().collect();
            assert_eq!(flat, (0..len).collect::<Vec<_>>());
        }
    }
}
