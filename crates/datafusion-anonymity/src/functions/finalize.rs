//! Finalizing a whole-table function ([`super::whole_table`]): every class's value from all
//! classes' states, by the finalizer of each function's file.
//!
//! The dispatch is here, above the function files, rather than on
//! [`WholeTableKind`](super::whole_table::WholeTableKind): each function's file names its kind
//! from `whole_table.rs`, so `whole_table.rs` must not name the function files back.

use datafusion::arrow::array::ArrayRef;
use datafusion::error::{DataFusionError, Result};

use super::table_histograms::TableHistograms;
use super::whole_table::WholeTableKind;
use super::{
    beta_likeness, delta_disclosure, enhanced_beta_likeness, entropy_leakage, ncp, t_closeness,
    t_closeness_ordered,
};

/// Finalizes every class of `kind` from all classes' states (one row per class, in any order).
pub fn finalize(kind: WholeTableKind, states: &ArrayRef) -> Result<ArrayRef> {
    match kind {
        // tuple diversity is `ncp` of one ordered attribute: the same finalizer
        WholeTableKind::Ncp | WholeTableKind::TupleDiversity => ncp::finalize(states),
        WholeTableKind::EntropyLeakage => entropy_leakage::finalize(states),
        _ => finalize_histograms(kind, &TableHistograms::try_new(states)?),
    }
}

/// Finalizes every class of a function reading the histogram
/// ([`WholeTableKind::reads_histogram`]) from the table's histograms, which several such
/// functions of one attribute share (the costly part is interning the table's values, done
/// once in [`TableHistograms`]).
pub fn finalize_histograms(kind: WholeTableKind, table: &TableHistograms) -> Result<ArrayRef> {
    match kind {
        WholeTableKind::TCloseness => t_closeness::finalize(table),
        WholeTableKind::TClosenessOrdered => t_closeness_ordered::finalize(table),
        WholeTableKind::BetaLikeness => beta_likeness::finalize(table),
        WholeTableKind::EnhancedBetaLikeness => enhanced_beta_likeness::finalize(table),
        WholeTableKind::DeltaDisclosure => delta_disclosure::finalize(table),
        WholeTableKind::Ncp | WholeTableKind::EntropyLeakage | WholeTableKind::TupleDiversity => {
            Err(DataFusionError::Internal(format!(
                "{} does not read a histogram",
                kind.finalizer_name()
            )))
        }
    }
}
