//! The policy's settings of set-based (hierarchy-free) local recoding: which quasi-identifiers
//! are published as sets of values or intervals (`generalization = "set"`, or no hierarchy),
//! how long a set label may grow (`[privacy] max_set_values`, `set_fallback`), and each
//! quasi-identifier's `weight` in the Loss. The labels themselves are made by
//! `search::local::sets`.

use serde::Deserialize;

/// `generalization` of a quasi-identifier: how local recoding publishes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Generalization {
    /// Through its hierarchy's nodes (and value-free intervals on ordered columns).
    #[default]
    Hierarchy,
    /// As the set of the class's values (`{a, b}`), or an interval on a numeric column; the
    /// hierarchy, if any, serves the full-domain search only.
    Set,
}

/// The most values a set label holds unless `[privacy] max_set_values` says otherwise.
pub const DEFAULT_MAX_SET_VALUES: usize = 64;

/// How long set labels may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetLabels {
    /// A class's set holds at most this many values.
    pub max_values: usize,
    /// `set_fallback = "*"`: a longer set is published as `*` (and costs 1); otherwise such
    /// a set is an error and nothing is written.
    pub fallback_to_top: bool,
}

impl Default for SetLabels {
    fn default() -> Self {
        Self {
            max_values: DEFAULT_MAX_SET_VALUES,
            fallback_to_top: false,
        }
    }
}

impl SetLabels {
    /// The settings of `[privacy] max_set_values` and `set_fallback`; an error message for a
    /// cap below 2 or a fallback other than `*`.
    pub fn from_policy(
        max_values: Option<usize>,
        fallback: Option<&str>,
    ) -> std::result::Result<Self, String> {
        let max_values = max_values.unwrap_or(DEFAULT_MAX_SET_VALUES);
        if max_values < 2 {
            return Err(format!(
                "privacy.max_set_values must be at least 2 (a set of one value is the value \
                 itself), got {max_values}"
            ));
        }
        let fallback_to_top = match fallback {
            None => false,
            Some("*") => true,
            Some(other) => {
                return Err(format!(
                    "privacy.set_fallback must be \"*\" (a longer set is published as *), got \
                     \"{other}\""
                ));
            }
        };
        Ok(Self {
            max_values,
            fallback_to_top,
        })
    }
}

/// An error message for a `weight` that is not a finite number above 0.
pub fn check_weight(column: &str, weight: f64) -> std::result::Result<(), String> {
    if weight.is_finite() && weight > 0.0 {
        Ok(())
    } else {
        Err(format!(
            "quasi-identifier '{column}': weight must be a number above 0, got {weight}"
        ))
    }
}
