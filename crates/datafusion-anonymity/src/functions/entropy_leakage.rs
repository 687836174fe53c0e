//! `entropy_leakage()`: the class's share of Longpre's normalized information leakage.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{ArrayRef, AsArray, Float64Array};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::Result;
use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::common::doc;
use super::formulas;
use super::whole_table::{WholeTableFunction, WholeTableKind};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "The equivalence class's share of the normalized average information loss \
         (Longpre et al., as used by the IAB approach): (|E|/n) * (log2 n - log2 |E|) / log2 n \
         with n the rows of the whole table (after WHERE). Summed over the classes of \
         GROUP BY a, it is the normalized leakage dS/S0 of an attacker who learns a. A one-row \
         table gives 1 (its one person is identified); NULL only for an empty input.",
        "entropy_leakage()",
    )
    .with_sql_example(
        "```sql\n> SELECT sum(leak) FROM (SELECT entropy_leakage() AS leak FROM patients GROUP BY sex);\n```",
    )
    .build()
});

/// The `entropy_leakage` aggregate function.
pub fn entropy_leakage_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new(
            "entropy_leakage",
            WholeTableKind::EntropyLeakage,
            &DOCUMENTATION,
        )
        .into_udaf()
    });
    Arc::clone(&INSTANCE)
}

/// Finalizes every class from the classes' row counts.
pub fn finalize(states: &ArrayRef) -> Result<ArrayRef> {
    let rows = states.as_primitive::<Int64Type>();
    let table_rows: u64 = rows.values().iter().map(|&r| r as u64).sum();
    let result: Float64Array = rows
        .values()
        .iter()
        .map(|&r| formulas::entropy_leakage(r as u64, table_rows))
        .collect();
    Ok(Arc::new(result))
}
