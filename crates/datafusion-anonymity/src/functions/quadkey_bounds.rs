//! `quadkey_bounds(quadkey)`: the box of the cell a quadkey names ([`super::quadtree`]).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Builder, StructArray};
use datafusion::arrow::buffer::NullBuffer;
use datafusion::arrow::datatypes::{DataType, Field, Fields};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

use super::quadkey::LOCATION_SECTION;
use super::quadtree::{Cell, MAX_LEVEL};

const SYNTAX: &str = "quadkey_bounds(quadkey)";

/// The struct's fields, in order.
pub const BOUNDS_FIELDS: [&str; 4] = ["min_lat", "min_lon", "max_lat", "max_lon"];

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        LOCATION_SECTION,
        "The box, in degrees, of the quadtree cell a quadkey names (see `quadkey`): a struct \
         `{min_lat, min_lon, max_lat, max_lon}` of Float64. The cell holds longitudes \
         `[min_lon, max_lon)` and latitudes `(min_lat, max_lat]` (the last column and row \
         their far edge too). The empty key is the globe. A NULL key gives NULL. A key that is \
         not at most 30 digits 0 to 3 is an error (the key is not printed).",
        SYNTAX,
    )
    .with_argument("quadkey", "A quadkey (Utf8, LargeUtf8 or Utf8View).")
    .with_sql_example(
        "```sql\n> SELECT quadkey_bounds('1022')['min_lat'];  -- 45.0\n\
         > SELECT b['min_lat'], b['max_lat'] FROM (SELECT quadkey_bounds(cell) AS b FROM release);\n```",
    )
    .with_related_udf("quadkey")
    .build()
});

/// The `quadkey_bounds` function.
pub fn quadkey_bounds_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(QuadkeyBoundsFunction::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct QuadkeyBoundsFunction {
    signature: Signature,
}

impl Default for QuadkeyBoundsFunction {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn fields() -> Fields {
    BOUNDS_FIELDS
        .iter()
        .map(|name| Field::new(*name, DataType::Float64, true))
        .collect()
}

impl ScalarUDFImpl for QuadkeyBoundsFunction {
    fn name(&self) -> &str {
        "quadkey_bounds"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null] => {
                Ok(vec![DataType::Utf8])
            }
            [other] => Err(DataFusionError::Plan(format!(
                "quadkey_bounds: quadkey must be a string, got {other}"
            ))),
            _ => Err(DataFusionError::Plan(format!(
                "quadkey_bounds takes 1 argument: {SYNTAX}, got {}",
                arg_types.len()
            ))),
        }
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Struct(fields()))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [key] = args.args.as_slice() else {
            return Err(DataFusionError::Plan(format!(
                "quadkey_bounds takes 1 argument: {SYNTAX}"
            )));
        };
        let keys = key.to_array(rows)?;
        let keys = keys.as_string::<i32>();
        let mut columns: [Float64Builder; 4] =
            std::array::from_fn(|_| Float64Builder::with_capacity(rows));
        for row in 0..rows {
            if keys.is_null(row) {
                columns.iter_mut().for_each(|c| c.append_null());
                continue;
            }
            let cell = Cell::from_quadkey(keys.value(row)).ok_or_else(|| {
                DataFusionError::Execution(format!(
                    "quadkey_bounds: a quadkey is at most {MAX_LEVEL} digits 0 to 3"
                ))
            })?;
            let b = cell.bounds();
            for (column, value) in columns
                .iter_mut()
                .zip([b.min_lat, b.min_lon, b.max_lat, b.max_lon])
            {
                column.append_value(value);
            }
        }
        let arrays: Vec<ArrayRef> = columns
            .iter_mut()
            .map(|c| Arc::new(c.finish()) as ArrayRef)
            .collect();
        let nulls = keys
            .nulls()
            .cloned()
            .map(|n| NullBuffer::new(n.into_inner()));
        Ok(ColumnarValue::Array(Arc::new(StructArray::try_new(
            fields(),
            arrays,
            nulls,
        )?)))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
