//! The scalar recoding functions, one per file, and the pieces they share.
//!
//! | function | file |
//! |---|---|
//! | `mask(col, level)` | [`mask`](mod@mask) |
//! | `bucket(col, width)` | [`bucket`](mod@bucket) |
//! | `generalize_date(col, unit)` | [`generalize_date`](mod@generalize_date) |
//! | `generalize(col, 'hierarchy', level)` | [`generalize`](mod@generalize) |
//!
//! All take the column first and constants after it, return Utf8View (nullable as the column),
//! keep NULL as NULL and work on whole arrays (a scalar first argument gives a scalar).
//! Constants are checked when the query is planned.

pub mod bucket;
pub mod generalize;
pub mod generalize_date;
pub mod mask;

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ColumnarValue, DocSection, Expr, ScalarFunctionArgs, lit};
use datafusion::prelude::SessionContext;

pub use bucket::bucket_udf;
pub use generalize::GeneralizeFunction;
pub use generalize_date::generalize_date_udf;
pub use mask::mask_udf;

use super::DateUnit;

/// The documentation section of the recoding functions.
pub const GENERALIZE_SECTION: DocSection = DocSection {
    include: true,
    label: "Generalization Functions",
    description: Some(
        "Recode quasi-identifiers to coarser values (masking, buckets, dates, hierarchies)",
    ),
};

/// Starts the documentation of a recoding function.
pub fn doc(description: &str, syntax: &str) -> datafusion::logical_expr::DocumentationBuilder {
    crate::functions::common::doc(description, syntax).with_doc_section(GENERALIZE_SECTION)
}

/// `mask(expr, level)` as an expression.
pub fn mask_expr(expr: Expr, level: usize) -> Expr {
    mask_udf().call(vec![expr, lit(level as i64)])
}

/// `bucket(expr, width)` as an expression.
pub fn bucket_expr(expr: Expr, width: f64) -> Expr {
    bucket_udf().call(vec![expr, lit(width)])
}

/// `generalize_date(expr, unit)` as an expression.
pub fn generalize_date_expr(expr: Expr, unit: DateUnit) -> Expr {
    generalize_date_udf().call(vec![expr, lit(unit.name())])
}

/// `generalize(expr, 'hierarchy', level)` as an expression, with the `generalize` function of
/// `ctx` (whose registry holds the hierarchy). Checks that the hierarchy exists and has the
/// level.
pub fn generalize_expr(
    ctx: &SessionContext,
    expr: Expr,
    hierarchy: &str,
    level: usize,
) -> Result<Expr> {
    let registry = super::hierarchy_registry(ctx).ok_or_else(|| {
        DataFusionError::Plan(
            "generalize is not registered on this session (call datafusion_anonymity::register)"
                .to_string(),
        )
    })?;
    registry.lookup(hierarchy)?.check_level(level)?;
    let udf = datafusion::execution::FunctionRegistry::udf(ctx, "generalize")?;
    Ok(udf.call(vec![expr, lit(hierarchy), lit(level as i64)]))
}

/// An error unless there are `n` arguments.
pub fn check_arity(function: &str, syntax: &str, arg_types: &[DataType], n: usize) -> Result<()> {
    if arg_types.len() != n {
        return Err(DataFusionError::Plan(format!(
            "{function} takes {n} arguments: {syntax}, got {}",
            arg_types.len()
        )));
    }
    Ok(())
}

/// The value of constant argument `i` at planning time.
pub fn planned<'a>(scalars: &[Option<&'a ScalarValue>], i: usize) -> Option<&'a ScalarValue> {
    scalars.get(i).copied().flatten()
}

/// The value of constant argument `i` at execution time.
pub fn executed(args: &ScalarFunctionArgs, i: usize) -> Option<&ScalarValue> {
    match args.args.get(i) {
        Some(ColumnarValue::Scalar(v)) => Some(v),
        _ => None,
    }
}

/// A constant non-negative integer argument (a level).
pub fn level_arg(function: &str, name: &str, value: Option<&ScalarValue>) -> Result<usize> {
    let error = |why: &str| DataFusionError::Plan(format!("{function}: {name} {why}"));
    let Some(value) = value else {
        return Err(error("must be a constant integer"));
    };
    if value.is_null() {
        return Err(error("must be a constant integer, not NULL"));
    }
    if !value.data_type().is_integer() {
        return Err(error(&format!(
            "must be a constant integer, not {}",
            value.data_type()
        )));
    }
    match value.cast_to(&DataType::Int64)? {
        ScalarValue::Int64(Some(v)) if v >= 0 => Ok(v as usize),
        ScalarValue::Int64(Some(v)) => Err(error(&format!("must not be negative, got {v}"))),
        _ => Err(error("must be a constant integer")),
    }
}

/// A constant string argument.
pub fn string_arg(function: &str, name: &str, value: Option<&ScalarValue>) -> Result<String> {
    match value {
        Some(ScalarValue::Utf8(Some(s)))
        | Some(ScalarValue::LargeUtf8(Some(s)))
        | Some(ScalarValue::Utf8View(Some(s))) => Ok(s.clone()),
        Some(ScalarValue::Dictionary(_, inner)) => string_arg(function, name, Some(inner)),
        _ => Err(DataFusionError::Plan(format!(
            "{function}: {name} must be a constant string"
        ))),
    }
}

/// A constant number argument.
pub fn number_arg(function: &str, name: &str, value: Option<&ScalarValue>) -> Result<f64> {
    let error = || DataFusionError::Plan(format!("{function}: {name} must be a constant number"));
    let value = value.filter(|v| !v.is_null()).ok_or_else(error)?;
    if !value.data_type().is_numeric() {
        return Err(error());
    }
    match value.cast_to(&DataType::Float64)? {
        ScalarValue::Float64(Some(v)) => Ok(v),
        _ => Err(error()),
    }
}

/// An argument type that can only be a constant of the given class.
pub fn check_constant_type(
    function: &str,
    name: &str,
    data_type: &DataType,
    ok: impl Fn(&DataType) -> bool,
    expected: &str,
) -> Result<()> {
    if ok(data_type) || data_type == &DataType::Null {
        return Ok(());
    }
    Err(DataFusionError::Plan(format!(
        "{function}: {name} must be {expected}, not {data_type}"
    )))
}

pub use super::common::LABEL_TYPE;

/// The result field: [`LABEL_TYPE`], nullable as the recoded column.
pub fn label_field(name: &str, arg_fields: &[FieldRef]) -> FieldRef {
    let nullable = arg_fields.first().is_none_or(|f| f.is_nullable());
    Arc::new(Field::new(name, LABEL_TYPE, nullable))
}

/// Applies `recode` to the first argument: to the array, or to a one-row array for a scalar
/// (giving a scalar); the labels are returned as [`LABEL_TYPE`].
pub fn recode_first(
    args: &ScalarFunctionArgs,
    recode: impl FnOnce(&ArrayRef) -> Result<ArrayRef>,
) -> Result<ColumnarValue> {
    let recode = |values: &ArrayRef| -> Result<ArrayRef> {
        Ok(datafusion::arrow::compute::cast(
            &recode(values)?,
            &LABEL_TYPE,
        )?)
    };
    match args.args.first() {
        Some(ColumnarValue::Array(values)) => Ok(ColumnarValue::Array(recode(values)?)),
        Some(ColumnarValue::Scalar(value)) => {
            let out = recode(&value.to_array_of_size(1)?)?;
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        }
        None => Err(DataFusionError::Plan("missing argument".to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_arguments() {
        assert_eq!(
            level_arg("f", "level", Some(&ScalarValue::Int32(Some(3)))).unwrap(),
            3
        );
        let e = level_arg("f", "level", Some(&ScalarValue::Int64(Some(-1))))
            .unwrap_err()
            .to_string();
        assert!(e.contains("f: level must not be negative, got -1"), "{e}");
        assert!(level_arg("f", "level", Some(&ScalarValue::Float64(Some(1.0)))).is_err());
        assert!(level_arg("f", "level", Some(&ScalarValue::Int64(None))).is_err());
        assert!(level_arg("f", "level", None).is_err());
        assert_eq!(
            string_arg("f", "unit", Some(&ScalarValue::Utf8View(Some("x".into())))).unwrap(),
            "x"
        );
        assert_eq!(
            number_arg("f", "w", Some(&ScalarValue::Int64(Some(5)))).unwrap(),
            5.0
        );
        assert!(number_arg("f", "w", Some(&ScalarValue::Utf8(Some("5".into())))).is_err());
    }
}
