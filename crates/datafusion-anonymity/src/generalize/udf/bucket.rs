//! `bucket(col, width)`: the half-open interval `[lo, lo + width)` holding each number.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use super::{
    LABEL_TYPE, check_arity, check_constant_type, doc, executed, label_field, number_arg, planned,
    recode_first,
};
use crate::generalize::interval::{accepts, bucket_values};

const SYNTAX: &str = "bucket(col, width)";

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "The bucket of width `width` holding each number, as the label `[lo, hi)`: lo is the \
         largest multiple of `width` at or below the value and hi = lo + width, so \
         lo <= value < hi (`bucket(39, 10)` is `[30, 40)`, `bucket(-1, 10)` is `[-10, 0)`, \
         `bucket(0.25, 0.1)` is `[0.2, 0.3)`). Bounds are printed without a fraction when \
         integral, otherwise in their shortest decimal form, computed to the decimals of the \
         width (width 0.1: 0.3 is in `[0.3, 0.4)`). NaN gives \
         `NaN`, infinities `inf` / `-inf`. Labels are stable (they depend only on the value \
         and the width) and sort by the number after `[`. Returns Utf8View; NULL stays NULL. For \
         levels of growing widths, top/bottom coding (`>= 90`, `< 18`) or explicit breakpoints, \
         register an interval hierarchy and use `generalize`.",
        SYNTAX,
    )
    .with_argument("col", "Integer, float or decimal column.")
    .with_argument("width", "Constant positive number: the bucket width.")
    .with_sql_example(
        "```sql\n> SELECT bucket(age, 10) AS age, count(*) FROM patients GROUP BY 1;\n\
         > SELECT bucket(39, 10);  -- [30, 40)\n```",
    )
    .build()
});

/// The `bucket` function.
pub fn bucket_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(BucketFunction::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct BucketFunction {
    signature: Signature,
}

impl Default for BucketFunction {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn width(value: Option<&datafusion::common::ScalarValue>) -> Result<f64> {
    let width = number_arg("bucket", "width", value)?;
    if !(width.is_finite() && width > 0.0) {
        return Err(DataFusionError::Plan(format!(
            "bucket: width must be a positive number, got {width}"
        )));
    }
    Ok(width)
}

impl ScalarUDFImpl for BucketFunction {
    fn name(&self) -> &str {
        "bucket"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        check_arity("bucket", SYNTAX, arg_types, 2)?;
        check_constant_type("bucket", "col", &arg_types[0], accepts, "a numeric column")?;
        check_constant_type(
            "bucket",
            "width",
            &arg_types[1],
            DataType::is_numeric,
            "a constant number",
        )?;
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(LABEL_TYPE)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        width(planned(args.scalar_arguments, 1))?;
        Ok(label_field(self.name(), args.arg_fields))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let width = width(executed(&args, 1))?;
        recode_first(&args, |values| bucket_values(values, width))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
