//! `recursive_cl_diversity(s, c)`: the largest l for which the class is recursive (c, l)-diverse.

use std::sync::{Arc, LazyLock};

use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::class_distribution::{ClassDistributionFunction, Kind};
use super::common::doc;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Recursive (c, l)-diversity (Machanavajjhala et al. 2007): with the counts of the \
         sensitive values in the class sorted r1 >= r2 >= ... >= rm, the largest l in 2..m \
         with r1 < c * (r_l + ... + r_m); 1 if there is none. NULLs are added to r1 (the worst \
         case). c must be a positive constant: zero, a negative number, NULL or a column is \
         an error. Empty input (possible only without GROUP BY, over zero rows): 0.",
        "recursive_cl_diversity(sensitive, c)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_argument("c", "A positive constant.")
    .with_sql_example(
        "```sql\n> SELECT zip, recursive_cl_diversity(disease, 2) AS rl FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `recursive_cl_diversity` aggregate function.
pub fn recursive_cl_diversity_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        Arc::new(AggregateUDF::new_from_impl(ClassDistributionFunction::new(
            "recursive_cl_diversity",
            Kind::Recursive,
            None,
            &DOCUMENTATION,
        )))
    });
    Arc::clone(&INSTANCE)
}
