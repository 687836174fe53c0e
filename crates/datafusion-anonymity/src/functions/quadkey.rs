//! `quadkey(lat, lon, level)`: the quadkey of the quadtree cell holding a position
//! ([`super::quadtree`]).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use super::quadtree::{Cell, MAX_LEVEL, finest_cell};

/// The documentation section of the location functions.
pub const LOCATION_SECTION: DocSection = DocSection {
    include: true,
    label: "Location Functions",
    description: Some("Quadtree cells over WGS84 latitude/longitude, for location releases"),
};

const SYNTAX: &str = "quadkey(lat, lon, level)";

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    Documentation::builder(
        LOCATION_SECTION,
        "The quadkey of the level-`level` quadtree cell holding the position (`lat`, `lon`), \
         in degrees of WGS84. Level 0 is the whole globe (longitude [-180, 180] by latitude \
         [-90, 90], quadkey `''`); each level halves both sides of a cell, and adds one digit, \
         as Bing's tile system numbers tiles: 0 north-west, 1 north-east, 2 south-west, \
         3 south-east. Unlike Bing's Web Mercator tiles, cells are boxes in degrees \
         (equirectangular), so the poles are covered. A cell holds longitudes `[min, max)` and \
         latitudes `(min, max]`; longitude 180 and latitude -90 fall in the last column and \
         row. A cell's key is a prefix of the keys of every cell inside it, so \
         `substr(quadkey(lat, lon, 20), 1, 12)` is the level-12 key. Returns Utf8. A NULL \
         argument gives NULL. A latitude outside [-90, 90], a longitude outside [-180, 180] \
         (or NaN) or a level outside [0, 30] is an error, which names the argument, never \
         the value. Worked values: [`crates/datafusion-anonymity/tests/slt/location.slt`](../crates/datafusion-anonymity/tests/slt/location.slt).",
        SYNTAX,
    )
    .with_argument(
        "lat",
        "Latitude in degrees (any numeric type, cast to Float64).",
    )
    .with_argument(
        "lon",
        "Longitude in degrees (any numeric type, cast to Float64).",
    )
    .with_argument("level", "Integer from 0 to 30: the number of digits.")
    .with_sql_example(
        "```sql\n> SELECT quadkey(48.8584, 2.2945, 4);  -- 1022\n\
         > SELECT quadkey(lat, lon, 14) AS cell, k_anonymity(device_id) AS k\n  \
         FROM pings GROUP BY 1 ORDER BY k LIMIT 5;\n```",
    )
    .with_related_udf("quadkey_bounds")
    .build()
});

/// The `quadkey` function.
pub fn quadkey_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(QuadkeyFunction::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct QuadkeyFunction {
    signature: Signature,
}

impl Default for QuadkeyFunction {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn plan_error(message: String) -> DataFusionError {
    DataFusionError::Plan(format!("quadkey: {message}"))
}

impl ScalarUDFImpl for QuadkeyFunction {
    fn name(&self) -> &str {
        "quadkey"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 3 {
            return Err(plan_error(format!(
                "takes 3 arguments: {SYNTAX}, got {}",
                arg_types.len()
            )));
        }
        for (name, data_type) in ["lat", "lon"].iter().zip(arg_types) {
            if !(data_type.is_numeric() || data_type == &DataType::Null) {
                return Err(plan_error(format!(
                    "{name} must be a number of degrees, got {data_type}"
                )));
            }
        }
        if !(arg_types[2].is_integer() || arg_types[2] == DataType::Null) {
            return Err(plan_error(format!(
                "level must be an integer, got {}",
                arg_types[2]
            )));
        }
        Ok(vec![DataType::Float64, DataType::Float64, DataType::Int64])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        let [lat, lon, level] = args.args.as_slice() else {
            return Err(plan_error(format!("takes 3 arguments: {SYNTAX}")));
        };
        let (lat, lon, level) = (
            lat.to_array(rows)?,
            lon.to_array(rows)?,
            level.to_array(rows)?,
        );
        let (lat, lon, level) = (
            lat.as_primitive::<Float64Type>(),
            lon.as_primitive::<Float64Type>(),
            level.as_primitive::<Int64Type>(),
        );
        let mut out = StringBuilder::with_capacity(rows, rows * 12);
        let mut key = String::with_capacity(MAX_LEVEL as usize);
        for row in 0..rows {
            if lat.is_null(row) || lon.is_null(row) || level.is_null(row) {
                out.append_null();
                continue;
            }
            let wanted = level.value(row);
            if !(0..=MAX_LEVEL as i64).contains(&wanted) {
                return Err(DataFusionError::Execution(format!(
                    "quadkey: level must be between 0 and {MAX_LEVEL}"
                )));
            }
            let (x, y) = finest_cell(lat.value(row), lon.value(row)).map_err(|e| {
                DataFusionError::Execution(format!("quadkey: {} (lat, lon)", e.describe()))
            })?;
            let shift = (MAX_LEVEL as i64 - wanted) as u32;
            let cell = Cell {
                level: wanted as u8,
                x: x >> shift,
                y: y >> shift,
            };
            key.clear();
            cell.write_quadkey(&mut key);
            out.append_value(&key);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
