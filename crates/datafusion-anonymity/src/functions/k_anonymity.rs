//! `k_anonymity([person_id])`: the size of the equivalence class, in rows or in persons.

use std::sync::{Arc, LazyLock};

use datafusion::functions_aggregate::count::count_udaf;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{AggregateUDF, Documentation, Expr, lit};

use super::class_distribution::{ClassDistributionFunction, Kind};
use super::common::doc;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Size of the equivalence class (Sweeney 2002). Without argument: the rows of the \
         class (computed as count(*)). With a person identifier: the distinct persons of the \
         class, for 1:M microdata where one person has several rows (rows would overstate k). \
         A row whose person identifier is NULL may belong to any person of the class, so it \
         adds no person (the worst case); a class whose identifiers are all NULL is one \
         person. The table's k is the minimum over the classes. Empty input (possible only \
         without GROUP BY, over zero rows): 0.",
        "k_anonymity([person_id])",
    )
    .with_argument(
        "person_id",
        "Optional column identifying the person a row belongs to; any type.",
    )
    .with_sql_example(
        "```sql\n> SELECT zip, age, k_anonymity() AS k, k_anonymity(patient_id) AS persons\n  \
         FROM patients GROUP BY zip, age;\n> SELECT min(k) FROM (SELECT k_anonymity() AS k \
         FROM patients GROUP BY zip, age, sex);\n```",
    )
    .build()
});

/// `k_anonymity()` is `count(*)` under another name: DataFusion's count accumulator is the
/// fastest way to count rows.
fn count_rows(filter: Option<Box<Expr>>) -> Expr {
    Expr::AggregateFunction(AggregateFunction::new_udf(
        count_udaf(),
        vec![lit(1i64)],
        false,
        filter,
        vec![],
        None,
    ))
}

/// The `k_anonymity` aggregate function.
pub fn k_anonymity_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        Arc::new(AggregateUDF::new_from_impl(ClassDistributionFunction::new(
            "k_anonymity",
            Kind::Persons,
            Some(count_rows),
            &DOCUMENTATION,
        )))
    });
    Arc::clone(&INSTANCE)
}
