//! `generalize_date(col, unit)`: each date or timestamp as the label of its calendar period.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use super::{
    LABEL_TYPE, check_arity, check_constant_type, doc, executed, label_field, planned,
    recode_first, string_arg,
};
use crate::generalize::common::is_string;
use crate::generalize::date::{DateUnit, accepts, truncate_dates};

const SYNTAX: &str = "generalize_date(col, unit)";

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "The calendar period holding each date or timestamp, as a label: 'day' `2024-03-15`, \
         'week' `2024-W11` (ISO 8601 week and week-numbering year: 2024-12-30 is `2025-W01`), \
         'month' `2024-03`, 'quarter' `2024-Q1`, 'year' `2024`, 'decade' `2020s`. The day of \
         a timestamp with a time zone is the day in that zone. Labels sort as the periods \
         they name. Returns Utf8View; NULL stays NULL.",
        SYNTAX,
    )
    .with_argument("col", "Date32, Date64 or Timestamp (any unit) column.")
    .with_argument(
        "unit",
        "Constant string: 'day', 'week', 'month', 'quarter', 'year' or 'decade' (any case).",
    )
    .with_sql_example(
        "```sql\n> SELECT generalize_date(admitted, 'month') AS month, count(*) FROM patients \
         GROUP BY 1;\n> SELECT generalize_date(DATE '2024-03-15', 'quarter');  -- 2024-Q1\n```",
    )
    .build()
});

/// The `generalize_date` function.
pub fn generalize_date_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(GeneralizeDateFunction::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct GeneralizeDateFunction {
    signature: Signature,
}

impl Default for GeneralizeDateFunction {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn unit(value: Option<&datafusion::common::ScalarValue>) -> Result<DateUnit> {
    DateUnit::from_name(&string_arg("generalize_date", "unit", value)?)
}

impl ScalarUDFImpl for GeneralizeDateFunction {
    fn name(&self) -> &str {
        "generalize_date"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        check_arity("generalize_date", SYNTAX, arg_types, 2)?;
        check_constant_type(
            "generalize_date",
            "col",
            &arg_types[0],
            accepts,
            "a Date32, Date64 or Timestamp column",
        )?;
        check_constant_type(
            "generalize_date",
            "unit",
            &arg_types[1],
            is_string,
            "a constant string",
        )?;
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(LABEL_TYPE)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        unit(planned(args.scalar_arguments, 1))?;
        Ok(label_field(self.name(), args.arg_fields))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let unit = unit(executed(&args, 1))?;
        recode_first(&args, |values| truncate_dates(values, unit))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
