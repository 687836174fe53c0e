//! KACA (placeholder; see the module documentation of [`super`]).

use datafusion::error::{DataFusionError, Result};

use super::{LocalOptions, LocalRelease};
use crate::policy::PrivacyRequirements;
use crate::search::FrequencySet;

/// Runs KACA.
pub fn kaca(
    _freq: &FrequencySet,
    _requirements: &PrivacyRequirements,
    _options: LocalOptions,
) -> Result<LocalRelease> {
    Err(DataFusionError::NotImplemented("kaca".into()))
}
