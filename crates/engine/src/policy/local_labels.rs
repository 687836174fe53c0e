//! `[privacy] local_labels`: how local recoding labels ordered quasi-identifiers. A setting
//! of the policy; the labels themselves are made by `search::local::labels`.

use std::fmt;
use std::str::FromStr;

use datafusion::error::{DataFusionError, Result};
use serde::{Deserialize, Serialize};

/// How a class's values of an ordered quasi-identifier are labelled (see
/// `search::local::labels`); the policy's `[privacy] local_labels`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LocalLabels {
    /// Grid cells: a hierarchy node, or an open interval `(a, b)` whose ends are no member's
    /// value.
    #[default]
    ValueFree,
    /// `[min, max]`: the class's smallest and largest raw values.
    Exact,
}

impl LocalLabels {
    /// `value_free` or `exact`, as in the policy.
    pub fn name(self) -> &'static str {
        match self {
            LocalLabels::ValueFree => "value_free",
            LocalLabels::Exact => "exact",
        }
    }
}

impl fmt::Display for LocalLabels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LocalLabels {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "value_free" => Ok(LocalLabels::ValueFree),
            "exact" => Ok(LocalLabels::Exact),
            other => Err(DataFusionError::Plan(format!(
                "unknown local_labels '{other}': expected value_free or exact"
            ))),
        }
    }
}
