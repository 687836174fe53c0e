//! `__anon_histogram_measure(histogram, measure, c)`: reads a per-class measure (persons,
//! distinct values, entropy l, recursive l, person risk) off a class histogram. The rewrite
//! uses it when several functions of one query look at the same attribute, so the attribute is
//! interned and counted once instead of once per function.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, AsArray, Float64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use crate::functions::common::map_classes;
use crate::functions::histogram::{HistogramOutput, class_measure};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    crate::functions::common::doc(
        "Internal: a per-class measure read off a class histogram (inserted by the anonymity \
         rewrite rule; not meant to be called directly).",
        "__anon_histogram_measure(histogram, measure, c)",
    )
    .build()
});

/// The measure function.
pub fn histogram_measure_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(HistogramMeasure::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HistogramMeasure {
    signature: Signature,
}

impl Default for HistogramMeasure {
    fn default() -> Self {
        Self {
            signature: Signature::any(3, Volatility::Immutable),
        }
    }
}

/// The measure named by the constant arguments.
fn measure(name: Option<&ScalarValue>, c: Option<&ScalarValue>) -> Result<HistogramOutput> {
    let c = match c {
        Some(ScalarValue::Float64(Some(c))) => *c,
        _ => 0.0,
    };
    match name {
        Some(ScalarValue::Utf8(Some(name))) => HistogramOutput::from_name(name, c),
        _ => None,
    }
    .ok_or_else(|| DataFusionError::Plan("__anon_histogram_measure: unknown measure".to_string()))
}

impl ScalarUDFImpl for HistogramMeasure {
    fn name(&self) -> &str {
        "__anon_histogram_measure"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let output = measure(
            args.scalar_arguments.get(1).copied().flatten(),
            args.scalar_arguments.get(2).copied().flatten(),
        )?;
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Float64,
            // the measures with no value for an empty class (as the functions declare them)
            matches!(
                output,
                HistogramOutput::PersonRisk | HistogramOutput::MaxShare
            ),
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let constant = |i: usize| match &args.args[i] {
            ColumnarValue::Scalar(value) => Some(value.clone()),
            ColumnarValue::Array(_) => None,
        };
        let output = measure(constant(1).as_ref(), constant(2).as_ref())?;
        let states = args.args[0].to_array(args.number_rows)?;
        let states = states.as_struct();
        let values = states.column(0).as_list::<i32>();
        let counts = states.column(1).as_list::<i32>();
        let item_nulls = values.values().logical_nulls();
        let item_counts = counts.values().as_primitive::<UInt64Type>().values();
        let (value_offsets, count_offsets) = (values.value_offsets(), counts.value_offsets());
        // the rows of a whole class table arrive here as one batch, after the single-partition
        // window: its classes are measured on all cores (as the finalizers' are)
        let result: Float64Array = map_classes(
            states.len(),
            |class, (non_null, scratch): &mut (Vec<u64>, Vec<u64>)| {
                let (lo, hi) = (
                    value_offsets[class] as usize,
                    value_offsets[class + 1] as usize,
                );
                let count_lo = count_offsets[class] as usize;
                non_null.clear();
                let mut nulls = 0;
                for (i, item) in (lo..hi).enumerate() {
                    let count = item_counts[count_lo + i];
                    if item_nulls.as_ref().is_some_and(|n| n.is_null(item)) {
                        nulls += count;
                    } else if count > 0 {
                        non_null.push(count);
                    }
                }
                class_measure(output, non_null, nulls, scratch)
            },
        )
        .into();
        Ok(ColumnarValue::Array(Arc::new(result)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
