//! `entropy_l_diversity(s)`: exp of the entropy of the sensitive attribute in the class.

use std::sync::{Arc, LazyLock};

use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::class_distribution::{ClassDistributionFunction, Kind};
use super::common::doc;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Entropy l-diversity (Machanavajjhala et al. 2007): exp(H) with \
         H = -sum p ln p over the values of the sensitive attribute in the equivalence class; \
         the class is entropy-l-diverse iff l <= exp(H). NULLs are added to the most frequent \
         value (the worst case, which lowers the entropy); an all-NULL class gives 1. Empty \
         input (possible only without GROUP BY, over zero rows): 0.",
        "entropy_l_diversity(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, entropy_l_diversity(disease) AS el FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `entropy_l_diversity` aggregate function.
pub fn entropy_l_diversity_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        Arc::new(AggregateUDF::new_from_impl(ClassDistributionFunction::new(
            "entropy_l_diversity",
            Kind::Entropy,
            None,
            &DOCUMENTATION,
        )))
    });
    Arc::clone(&INSTANCE)
}
