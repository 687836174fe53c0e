//! `ncp(a1, ..., ad)`: Normalized Certainty Penalty of the class over the given attributes.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use datafusion::arrow::compute::filter;
use datafusion::arrow::compute::kernels::boolean::is_null;
use datafusion::arrow::compute::kernels::boolean::not;
use datafusion::arrow::datatypes::{DataType, Float64Type, UInt64Type};
use datafusion::error::Result;
use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::common::doc;
use super::histogram::new_dictionary;
use super::whole_table::{WholeTableFunction, WholeTableKind};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Normalized Certainty Penalty (Xu et al. 2006) of the equivalence class: the mean over \
         the attributes of the class's spread of raw values. Numeric, decimal and temporal \
         attributes: (max_E - min_E) / (max_T - min_T), 0 when the table's range is empty. \
         Other attributes (strings, booleans): 0 if the class has at most one distinct value, \
         else distinct_E / distinct_T. T is the whole table (after WHERE); NULLs and NaN are \
         ignored. NULL only for an empty input.",
        "ncp(attribute[, attribute, ...])",
    )
    .with_argument(
        "attribute",
        "Raw (not generalized) quasi-identifier columns; any scalar type.",
    )
    .with_sql_example(
        "```sql\n> SELECT substr(zip, 1, 3) AS zip3, ncp(zip, age) AS loss FROM patients \
         GROUP BY substr(zip, 1, 3);\n```",
    )
    .build()
});

/// The `ncp` aggregate function.
pub fn ncp_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new("ncp", WholeTableKind::Ncp, &DOCUMENTATION).into_udaf()
    });
    Arc::clone(&INSTANCE)
}

/// Per class and attribute, the class's spread in [0, 1].
fn attribute_spreads(
    states: &datafusion::arrow::array::StructArray,
    column: usize,
    is_range: bool,
) -> Result<Vec<f64>> {
    let classes = states.len();
    if is_range {
        let mins = states.column(column).as_primitive::<Float64Type>();
        let maxs = states.column(column + 1).as_primitive::<Float64Type>();
        let table_min = mins.values().iter().copied().fold(f64::INFINITY, f64::min);
        let table_max = maxs
            .values()
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let width = table_max - table_min;
        return Ok((0..classes)
            .map(|c| super::formulas::range_share(mins.value(c), maxs.value(c), width))
            .collect());
    }
    let values = states.column(column).as_list::<i32>();
    let counts = states.column(column + 1).as_list::<i32>();
    // distinct non-null values of the table: the union of the classes' value sets
    let items = values.values();
    let non_null = not(&is_null(items.as_ref())?)?;
    let present = filter(items.as_ref(), &non_null)?;
    let mut dictionary = new_dictionary(present.data_type())?;
    let mut codes = Vec::new();
    dictionary.intern(std::slice::from_ref(&present), &mut codes)?;
    let table_distinct = dictionary.len() as f64;
    let item_counts = counts.values().as_primitive::<UInt64Type>();
    Ok((0..classes)
        .map(|c| {
            let (lo, hi) = (
                values.value_offsets()[c] as usize,
                values.value_offsets()[c + 1] as usize,
            );
            let count_lo = counts.value_offsets()[c] as usize;
            let distinct = (lo..hi)
                .enumerate()
                .filter(|&(i, item)| items.is_valid(item) && item_counts.value(count_lo + i) > 0)
                .count();
            if distinct <= 1 {
                0.0
            } else {
                distinct as f64 / table_distinct
            }
        })
        .collect())
}

/// Finalizes every class (see [`super::whole_table`]).
pub fn finalize(states: &ArrayRef) -> Result<ArrayRef> {
    let states = states.as_struct();
    let columns = states.num_columns();
    let rows = states.column(columns - 1).as_primitive::<UInt64Type>();
    let mut sum = vec![0.0; states.len()];
    let mut attributes = 0;
    let mut column = 0;
    while column < columns - 1 {
        let is_range = states.column(column).data_type() == &DataType::Float64;
        for (total, spread) in sum
            .iter_mut()
            .zip(attribute_spreads(states, column, is_range)?)
        {
            *total += spread;
        }
        attributes += 1;
        column += 2;
    }
    let result: Float64Array = sum
        .iter()
        .zip(rows.values())
        .map(|(&total, &r)| (r > 0).then(|| total / attributes as f64))
        .collect();
    Ok(Arc::new(result))
}
