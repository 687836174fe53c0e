//! `alpha_anonymity(s)`: the largest share of one sensitive value in the class.

use std::sync::{Arc, LazyLock};

use datafusion::logical_expr::{AggregateUDF, Documentation};

use super::class_distribution::{ClassDistributionFunction, Kind};
use super::common::doc;

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "α of (α,k)-anonymity (Wong et al. 2006): the largest share max_v p_E(v) of one value \
         of the sensitive attribute in the equivalence class; the class is (α,k)-anonymous iff \
         this is at most α and it has at least k rows. NULLs are counted as copies of the most \
         frequent value (the worst case, which raises the share); an all-NULL class gives 1. \
         NULL only for an empty input. The table's α is the maximum over the classes.",
        "alpha_anonymity(sensitive)",
    )
    .with_argument("sensitive", "The sensitive attribute; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, alpha_anonymity(disease) AS alpha FROM patients GROUP BY zip;\n```",
    )
    .build()
});

/// The `alpha_anonymity` aggregate function.
pub fn alpha_anonymity_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        Arc::new(AggregateUDF::new_from_impl(ClassDistributionFunction::new(
            "alpha_anonymity",
            Kind::MaxShare,
            None,
            &DOCUMENTATION,
        )))
    });
    Arc::clone(&INSTANCE)
}
