//! Per-equivalence-class aggregate functions, one file each, plus their shared pieces.
//!
//! | function | file |
//! |---|---|
//! | `k_anonymity([person_id])` | [`k_anonymity`] |
//! | `l_diversity(s)` | [`l_diversity`] |
//! | `entropy_l_diversity(s)` | [`entropy_l_diversity`] |
//! | `recursive_cl_diversity(s, c)` | [`recursive_cl_diversity`] |
//! | `t_closeness(s)` | [`t_closeness`] |
//! | `t_closeness_ordered(s)` | [`t_closeness_ordered`] |
//! | `ncp(a, ...)` | [`ncp`] |
//! | `entropy_leakage()` | [`entropy_leakage`] |
//! | `reidentification_risk([person_id])` | [`reidentification_risk`] |
//! | `alpha_anonymity(s)` | [`alpha_anonymity`] |
//! | `beta_likeness(s)` | [`beta_likeness`] |
//! | `enhanced_beta_likeness(s)` | [`enhanced_beta_likeness`] |
//! | `delta_disclosure(s)` | [`delta_disclosure`] |
//! | `tuple_diversity(s)` | [`tuple_diversity`] |
//!
//! and the scalar location functions over the quadtree of [`quadtree`]:
//!
//! | function | file |
//! |---|---|
//! | `quadkey(lat, lon, level)` | [`quadkey`] |
//! | `quadkey_bounds(quadkey)` | [`quadkey_bounds`] |
use std::sync::Arc;

use datafusion::logical_expr::{AggregateUDF, ScalarUDF};

pub mod alpha_anonymity;
pub mod beta_likeness;
pub mod class_distribution;
pub(crate) mod class_log;
pub mod common;
pub mod delta_disclosure;
pub(crate) mod distinct;
pub mod enhanced_beta_likeness;
pub mod entropy_l_diversity;
pub mod entropy_leakage;
pub mod finalize;
pub mod formulas;
pub mod histogram;
pub mod histogram_output;
pub mod k_anonymity;
pub mod l_diversity;
pub mod ncp;
pub(crate) mod ncp_state;
pub mod quadkey;
pub mod quadkey_bounds;
pub mod quadtree;
pub mod recursive_cl_diversity;
pub mod reidentification_risk;
pub(crate) mod sa_histogram;
mod small_counts;
pub mod t_closeness;
pub mod t_closeness_ordered;
pub mod table_histograms;
pub mod tuple_diversity;
pub mod whole_table;

pub use alpha_anonymity::alpha_anonymity_udaf;
pub use beta_likeness::beta_likeness_udaf;
pub use delta_disclosure::delta_disclosure_udaf;
pub use enhanced_beta_likeness::enhanced_beta_likeness_udaf;
pub use entropy_l_diversity::entropy_l_diversity_udaf;
pub use entropy_leakage::entropy_leakage_udaf;
pub use k_anonymity::k_anonymity_udaf;
pub use l_diversity::l_diversity_udaf;
pub use ncp::ncp_udaf;
pub use recursive_cl_diversity::recursive_cl_diversity_udaf;
pub use reidentification_risk::reidentification_risk_udaf;
pub use t_closeness::t_closeness_udaf;
pub use t_closeness_ordered::t_closeness_ordered_udaf;
pub use tuple_diversity::tuple_diversity_udaf;

/// The user-facing aggregate functions.
pub fn user_functions() -> Vec<Arc<AggregateUDF>> {
    vec![
        k_anonymity_udaf(),
        l_diversity_udaf(),
        entropy_l_diversity_udaf(),
        recursive_cl_diversity_udaf(),
        t_closeness_udaf(),
        t_closeness_ordered_udaf(),
        ncp_udaf(),
        entropy_leakage_udaf(),
        reidentification_risk_udaf(),
        alpha_anonymity_udaf(),
        beta_likeness_udaf(),
        enhanced_beta_likeness_udaf(),
        delta_disclosure_udaf(),
        tuple_diversity_udaf(),
    ]
}

/// Every aggregate function of this crate: the user-facing ones and the internal ones that
/// the rewrite and simplifications produce (registered so that plans naming them can be
/// serialized and read back).
pub fn all_aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    let mut all = user_functions();
    all.push(reidentification_risk::row_risk_udaf());
    all.push(sa_histogram::sa_histogram_udaf());
    all.push(ncp_state::ncp_state_udaf());
    all
}

/// The scalar location functions (`quadkey`, `quadkey_bounds`).
pub fn location_functions() -> Vec<Arc<ScalarUDF>> {
    vec![quadkey::quadkey_udf(), quadkey_bounds::quadkey_bounds_udf()]
}
