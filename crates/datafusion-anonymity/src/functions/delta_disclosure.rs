//! `delta_disclosure(s)`: δ-disclosure of the class against the whole table.

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
        "δ-disclosure (Brickell & Shmatikov 2008): max over the values v of the sensitive \
         attribute in the whole table of |ln(p_E(v) / p_T(v))|. A value of the table absent \
         from the class makes it +infinity (the textbook definition; `anon profile` also \
         reports the maximum over the values present). NULL is a category of its own. NULL \
         only for an empty input. A table is δ-disclosure-private when every class is below δ.",
        "delta_disclosure(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, delta_disclosure(disease) AS delta FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `delta_disclosure` aggregate function.
pub fn delta_disclosure_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new(
            "delta_disclosure",
            WholeTableKind::DeltaDisclosure,
            &DOCUMENTATION,
        )
        .into_udaf()
    });
    Arc::clone(&INSTANCE)
}

/// Finalizes every class from the table's histograms (see [`super::finalize`]).
pub fn finalize(table: &TableHistograms) -> Result<ArrayRef> {
    let values = table.table_counts.len();
    let result: Float64Array = table
        .map_class_pairs(|pairs, class_rows| {
            formulas::delta_disclosure(pairs, class_rows, table.table_rows, values)
        })
        .into();
    Ok(Arc::new(result))
}
