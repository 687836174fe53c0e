//! `add_noise(x, sd, seed [, key])`: x plus a normal draw of standard deviation `sd`, as a
//! scalar SQL function (the policy's `noise` transformation works on whole tables, with σ
//! measured from the data; this is its per-row building block).
//!
//! Each row's draw is a function of the seed and the row's key (or, without a key, of its
//! value), never of the row's position: the same query gives the same numbers whatever the
//! partitioning, and the function is a pure function of its arguments. The price, without a
//! key: equal values get equal noise, so a value unique in the input stays unique in the
//! output (documented; give a key column, e.g. the row id, for independent draws).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, DocSection, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};

use crate::rng::SplitMix64;

/// The documentation section of the perturbation functions.
pub const PERTURBATION_SECTION: DocSection = DocSection {
    include: true,
    label: "Perturbation Functions",
    description: Some("Perturb numeric values (noise)"),
};

const SYNTAX: &str = "add_noise(x, sd, seed [, key])";

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    crate::functions::common::doc(
        "Adds to each value a draw of N(0, sd²), returning Float64. The draw is a function of \
         `seed` and of `key` (any column; without it, of the value itself), never of the row's \
         position: the same query gives the same numbers however the table is partitioned. \
         Without a key, equal values get equal noise (a value unique in the input stays unique \
         in the output); with a key (e.g. a row id) every row gets its own draw. For noise \
         relative to the column's spread, multiply by its standard deviation: \
         `add_noise(x, 0.1 * (SELECT stddev(x) FROM t), 42)`. NULL stays NULL, NaN stays NaN; \
         sd = 0 returns x unchanged (as Float64); a negative or NULL sd is an error. The \
         policy transformation `noise` (docs/guide/perturbation.md) does the same for whole \
         tables with σ measured from the data.",
        SYNTAX,
    )
    .with_doc_section(PERTURBATION_SECTION)
    .with_argument("x", "Numeric column (integers, floats, decimals).")
    .with_argument(
        "sd",
        "Constant non-negative number: the noise's standard deviation.",
    )
    .with_argument(
        "seed",
        "Constant integer: the same seed gives the same noise.",
    )
    .with_argument(
        "key",
        "Optional column (integer or string) keying each row's draw; rows with equal keys get \
         equal noise.",
    )
    .with_sql_example(
        "```sql\n> SELECT add_noise(income, 1000, 42, patient_id) AS income FROM patients;\n\
         > SELECT add_noise(10, 0, 1);  -- 10.0\n```",
    )
    .build()
});

/// The perturbation functions, for registration and the reference.
pub fn perturbation_functions() -> Vec<Arc<ScalarUDF>> {
    vec![add_noise_udf()]
}

/// The `add_noise` function.
pub fn add_noise_udf() -> Arc<ScalarUDF> {
    static INSTANCE: LazyLock<Arc<ScalarUDF>> =
        LazyLock::new(|| Arc::new(ScalarUDF::new_from_impl(AddNoise::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AddNoise {
    signature: Signature,
}

impl Default for AddNoise {
    fn default() -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn plan_error(message: impl Into<String>) -> DataFusionError {
    DataFusionError::Plan(format!("add_noise: {}; usage: {SYNTAX}", message.into()))
}

impl ScalarUDFImpl for AddNoise {
    fn name(&self) -> &str {
        "add_noise"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if !(3..=4).contains(&arg_types.len()) {
            return Err(plan_error(format!(
                "takes 3 or 4 arguments, got {}",
                arg_types.len()
            )));
        }
        let numeric = |t: &DataType| t.is_numeric() || *t == DataType::Null;
        if !numeric(&arg_types[0]) {
            return Err(plan_error(format!(
                "x must be numeric, got {}",
                arg_types[0]
            )));
        }
        if !numeric(&arg_types[1]) {
            return Err(plan_error(format!(
                "sd must be a number, got {}",
                arg_types[1]
            )));
        }
        if !(arg_types[2].is_integer()) {
            return Err(plan_error(format!(
                "seed must be an integer, got {}",
                arg_types[2]
            )));
        }
        let mut types = vec![DataType::Float64, DataType::Float64, DataType::Int64];
        if let Some(key) = arg_types.get(3) {
            types.push(if key.is_integer() {
                DataType::Int64
            } else {
                DataType::Utf8
            });
        }
        Ok(types)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let constant = |i: usize, what: &str| -> Result<ScalarValue> {
            match &args.args[i] {
                ColumnarValue::Scalar(value) => Ok(value.clone()),
                ColumnarValue::Array(_) => Err(plan_error(format!("{what} must be a constant"))),
            }
        };
        let sd = match constant(1, "sd")? {
            ScalarValue::Float64(Some(sd)) if sd >= 0.0 && sd.is_finite() => sd,
            _ => return Err(plan_error("sd must be a finite number at least 0")),
        };
        let seed = match constant(2, "seed")? {
            ScalarValue::Int64(Some(seed)) => seed as u64,
            _ => return Err(plan_error("seed must be a non-NULL integer")),
        };
        let rows = args.number_rows;
        let x = args.args[0].to_array(rows)?;
        let key = args.args.get(3).map(|k| k.to_array(rows)).transpose()?;
        let noisy = add_noise(&x, sd, seed, key.as_ref())?;
        Ok(
            if matches!(args.args[0], ColumnarValue::Scalar(_)) && key.is_none() {
                ColumnarValue::Scalar(ScalarValue::try_from_array(&noisy, 0)?)
            } else {
                ColumnarValue::Array(noisy)
            },
        )
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

/// FNV-1a of `bytes`: a stable 64-bit hash of a string key.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A standard normal draw keyed by `seed` and `key` (Box–Muller on two draws of a generator
/// seeded by both).
pub fn keyed_normal(seed: u64, key: u64) -> f64 {
    let mut rng = SplitMix64(seed ^ key.rotate_left(17) ^ 0x5851_f42d_4c95_7f2d);
    rng.next_u64();
    let u = 1.0 - rng.unit();
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// `x` (any numeric array) plus keyed noise of SD `sd`.
pub fn add_noise(x: &ArrayRef, sd: f64, seed: u64, key: Option<&ArrayRef>) -> Result<ArrayRef> {
    let x = cast(x, &DataType::Float64)?;
    let x = x.as_primitive::<Float64Type>();
    let keys: Vec<u64> = match key {
        None => x.values().iter().map(|v| v.to_bits()).collect(),
        Some(key) if key.data_type().is_integer() => {
            let key = cast(key, &DataType::Int64)?;
            key.as_primitive::<Int64Type>()
                .iter()
                .map(|k| k.map_or(u64::MAX, |k| k as u64))
                .collect()
        }
        Some(key) => {
            let key = cast(key, &DataType::Utf8)?;
            let key = key.as_string::<i32>();
            key.iter()
                .map(|k| k.map_or(u64::MAX, |k| fnv1a(k.as_bytes())))
                .collect()
        }
    };
    let noisy: Float64Array = x
        .iter()
        .zip(keys)
        .map(|(v, k)| {
            v.map(|v| {
                if sd == 0.0 {
                    v
                } else {
                    v + sd * keyed_normal(seed, k)
                }
            })
        })
        .collect();
    Ok(Arc::new(noisy))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;

    /// 10^6 draws keyed by 0..10^6 with sd = 2: the noise's sample mean within 5 standard
    /// errors (2/√n = 0.002) of 0 and its sample variance within 5 standard errors
    /// (4·√(2/(n−1)) ≈ 0.0057) of 4.
    #[test]
    fn keyed_noise_has_the_target_mean_and_variance() {
        let n = 1_000_000;
        let x: ArrayRef = Arc::new(Float64Array::from(vec![0.0; n]));
        let key: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n as i64));
        let noisy = add_noise(&x, 2.0, 42, Some(&key)).unwrap();
        let e = noisy.as_primitive::<Float64Type>().values();
        let mean = e.iter().sum::<f64>() / n as f64;
        let var = e.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!(mean.abs() < 5.0 * 2.0 / (n as f64).sqrt(), "{mean}");
        assert!(
            (var - 4.0).abs() < 5.0 * 4.0 * (2.0 / (n - 1) as f64).sqrt(),
            "{var}"
        );
    }
}
