//! `enhanced_beta_likeness(s)`: enhanced β-likeness of the class against the whole table.

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
        "Enhanced β-likeness (Cao & Karras 2012): a class meets β when every value of the \
         sensitive attribute has (p_E(v) - p_T(v)) / p_T(v) <= min(β, -ln p_T(v)). Returns \
         the smallest β the class meets: its basic β-likeness when no value's gain exceeds \
         the -ln p_T(v) cap, and +infinity when one does (no β is then met). NULL is a \
         category of its own. NULL only for an empty input. The table's value is the maximum \
         over the classes.",
        "enhanced_beta_likeness(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, enhanced_beta_likeness(disease) AS beta FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `enhanced_beta_likeness` aggregate function.
pub fn enhanced_beta_likeness_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new(
            "enhanced_beta_likeness",
            WholeTableKind::EnhancedBetaLikeness,
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
            formulas::enhanced_beta_likeness(pairs, class_rows, table.table_rows)
        })
        .into();
    Ok(Arc::new(result))
}
