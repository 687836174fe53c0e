//! `l_diversity(s)`: distinct values of the sensitive attribute in the class.

use std::sync::{Arc, LazyLock};

use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::class_distribution::{ClassDistributionFunction, Kind};
use super::common::doc;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Distinct l-diversity (Machanavajjhala et al. 2007): the number of distinct values of \
         the sensitive attribute in the equivalence class. NULLs are assumed to equal a value \
         already present (the worst case), so they add nothing; a class whose attribute is \
         entirely NULL has l = 1. The table's l is the minimum over the classes. Empty input \
         (possible only without GROUP BY, over zero rows): 0.",
        "l_diversity(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, age, l_diversity(disease) AS l FROM patients GROUP BY zip, age;\n```",
    )
    .build()
});

/// The `l_diversity` aggregate function.
pub fn l_diversity_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        Arc::new(AggregateUDF::new_from_impl(ClassDistributionFunction::new(
            "l_diversity",
            Kind::Distinct,
            None,
            &DOCUMENTATION,
        )))
    });
    Arc::clone(&INSTANCE)
}
