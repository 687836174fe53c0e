//! `t_closeness(s)`: equal-distance Earth Mover's Distance between the class's and the table's
//! distributions of the sensitive attribute.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, Float64Array};
use datafusion::error::Result;
use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::common::doc;
use super::formulas;
use super::table_histograms::TableHistograms;
use super::whole_table::{WholeTableFunction, WholeTableKind};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "t-closeness with equal ground distance (Li, Li, Venkatasubramanian 2007): the Earth \
         Mover's Distance 1/2 * sum_v |p_E(v) - p_T(v)| between the distribution of the \
         sensitive attribute in the equivalence class and in the whole table (all rows that \
         reach the aggregation, i.e. after WHERE). Computed in the same scan. NULL is a \
         category of its own, in the class and in the table. NULL only for an empty input. \
         The table's t is the maximum over the classes.",
        "t_closeness(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, age, t_closeness(disease) AS t FROM patients GROUP BY zip, age;\n```",
    )
    .build()
});

/// The `t_closeness` aggregate function.
pub fn t_closeness_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new("t_closeness", WholeTableKind::TCloseness, &DOCUMENTATION)
            .into_udaf()
    });
    Arc::clone(&INSTANCE)
}

/// Finalizes every class from the table's histograms (see [`super::finalize`]).
pub fn finalize(table: &TableHistograms) -> Result<ArrayRef> {
    let result: Float64Array = table
        .map_class_pairs(|pairs, class_rows| {
            formulas::equal_emd(pairs, class_rows, table.table_rows)
        })
        .into();
    Ok(Arc::new(result))
}
