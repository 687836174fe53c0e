//! IAB, sibling-scoped (placeholder; see the module documentation of [`super`]).

use datafusion::error::{DataFusionError, Result};

use super::{LocalOptions, LocalRelease};
use crate::policy::PrivacyRequirements;
use crate::search::FrequencySet;

/// Runs IAB.
pub fn iab(
    _freq: &FrequencySet,
    _requirements: &PrivacyRequirements,
    _options: LocalOptions,
) -> Result<LocalRelease> {
    Err(DataFusionError::NotImplemented("iab".into()))
}
