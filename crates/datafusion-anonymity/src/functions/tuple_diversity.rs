//! `tuple_diversity(s)`: the class's range of an ordered sensitive attribute over the whole
//! table's range (Loukides & Shao 2008). A narrow range lets an attacker estimate a numeric
//! value even when the class holds many distinct values.
//!
//! It is `ncp` of one ordered attribute (the same class state, the same finalizer): the range
//! is taken over the non-NULL, non-NaN values, a class with at most one such value spreads 0,
//! and so does every class of a table with a single value.

use std::sync::{Arc, LazyLock};

use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::common::doc;
use super::whole_table::{WholeTableFunction, WholeTableKind};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Tuple diversity (Loukides & Shao 2008): (max_E - min_E) / (max_T - min_T) of an \
         ordered sensitive attribute, the class's range over the whole table's range (T after \
         WHERE). NULLs and NaN are ignored; 0 when the class has no value or a single one, or \
         when the table has a single value. The attribute must be numeric, decimal or \
         temporal: another type is an error naming the function and the type. NULL only for \
         an empty input. A table meets a tuple diversity bound when every class is at or \
         above it.",
        "tuple_diversity(sensitive)",
    )
    .with_argument(
        "sensitive",
        "The sensitive attribute: numeric, decimal, date or time.",
    )
    .with_sql_example(
        "```sql\n> SELECT zip, tuple_diversity(income) AS td FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `tuple_diversity` aggregate function.
pub fn tuple_diversity_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        WholeTableFunction::new(
            "tuple_diversity",
            WholeTableKind::TupleDiversity,
            &DOCUMENTATION,
        )
        .into_udaf()
    });
    Arc::clone(&INSTANCE)
}
