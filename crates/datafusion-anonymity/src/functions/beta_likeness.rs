//! `beta_likeness(s)`: basic β-likeness of the class against the whole table.

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
        "Basic β-likeness (Cao & Karras 2012): the largest relative gain \
         (p_E(v) - p_T(v)) / p_T(v) over the values of the sensitive attribute more frequent \
         in the equivalence class than in the whole table (all rows that reach the \
         aggregation); 0 when there is none. NULL is a category of its own, in the class and \
         in the table. NULL only for an empty input. The table's β is the maximum over the \
         classes.",
        "beta_likeness(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, beta_likeness(disease) AS beta FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `beta_likeness` aggregate function.
pub fn beta_likeness_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new(
            "beta_likeness",
            WholeTableKind::BetaLikeness,
            &DOCUMENTATION,
        )
        .into_udaf()
    });
    Arc::clone(&INSTANCE)
}

/// Finalizes every class from the table's histograms (see [`super::finalize`]).
pub fn finalize(table: &TableHistograms) -> Result<ArrayRef> {
    let result: Float64Array = table
        .map_class_pairs(|pairs, class_rows| {
            formulas::beta_likeness(pairs, class_rows, table.table_rows)
        })
        .into();
    Ok(Arc::new(result))
}
