//! `mask(col, level)`: replaces the last `level` characters of each value by `*`.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use super::{
    LABEL_TYPE, check_arity, check_constant_type, doc, executed, label_field, level_arg, planned,
    recode_first,
};
use crate::generalize::mask::{accepts, mask_values};

const SYNTAX: &str = "mask(col, level)";

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Masks the last `level` characters of each value: each of them becomes one `*`, so the \
         value keeps its length (`mask('12345', 2)` is `123**`). Characters are Unicode \
         characters, not bytes. A level at or above a value's length masks all of it \
         (`mask('123', 5)` is `***`); level 0 returns the value unchanged. Integers are masked \
         in their decimal form. Returns Utf8View; NULL stays NULL. A registered mask hierarchy \
         (`generalize(col, 'name', level)`) recodes the same way below its top level, and maps \
         every value to one string of stars at its top level.",
        SYNTAX,
    )
    .with_argument(
        "col",
        "String (Utf8, LargeUtf8, Utf8View, dictionary) or integer column.",
    )
    .with_argument(
        "level",
        "Constant non-negative integer: characters to mask.",
    )
    .with_sql_example(
        "```sql\n> SELECT mask(zip, 2) AS zip, count(*) FROM patients GROUP BY 1;\n\
         > SELECT mask('47677', 2);  -- 476**\n```",
    )
    .build()
});

/// The `mask` function.
pub fn mask_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(MaskFunction::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MaskFunction {
    signature: Signature,
}

impl Default for MaskFunction {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for MaskFunction {
    fn name(&self) -> &str {
        "mask"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        check_arity("mask", SYNTAX, arg_types, 2)?;
        check_constant_type(
            "mask",
            "col",
            &arg_types[0],
            accepts,
            "a string or integer column",
        )?;
        check_constant_type(
            "mask",
            "level",
            &arg_types[1],
            DataType::is_integer,
            "a constant integer",
        )?;
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(LABEL_TYPE)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        level_arg("mask", "level", planned(args.scalar_arguments, 1))?;
        Ok(label_field(self.name(), args.arg_fields))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let level = level_arg("mask", "level", executed(&args, 1))?;
        recode_first(&args, |values| mask_values(values, level))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
