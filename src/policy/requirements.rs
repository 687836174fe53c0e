//! The privacy requirements of a policy: what a published table must satisfy.
//!
//! These types are shared by the policy file (`[privacy]`), the search (which evaluates them
//! on lattice nodes) and the publisher (which verifies them on the written output).

use serde::{Deserialize, Serialize};

/// The flavour of l-diversity a sensitive attribute must meet (Machanavajjhala et al. 2007).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LDiversityKind {
    /// At least `l` distinct sensitive values per class.
    Distinct,
    /// `exp(H_E) >= l` per class (natural logarithm, as `entropy_l_diversity`).
    Entropy,
    /// Recursive (c,l): with counts sorted r1 ≥ r2 ≥ …, `r1 < c·(r_l + … + r_m)` per class.
    Recursive,
}

impl LDiversityKind {
    /// `distinct`, `entropy` or `recursive`.
    pub fn name(self) -> &'static str {
        match self {
            LDiversityKind::Distinct => "distinct",
            LDiversityKind::Entropy => "entropy",
            LDiversityKind::Recursive => "recursive",
        }
    }
}

/// An l-diversity requirement on one sensitive attribute.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LDiversity {
    /// distinct (default), entropy or recursive.
    #[serde(default = "default_l_kind")]
    pub kind: LDiversityKind,
    /// The l every class must reach (≥ 1; entropy l may be fractional).
    pub l: f64,
    /// The c of recursive (c,l)-diversity (> 0); required for `recursive`, ignored otherwise.
    #[serde(default)]
    pub c: Option<f64>,
}

fn default_l_kind() -> LDiversityKind {
    LDiversityKind::Distinct
}

/// The ground distance of t-closeness (Li, Li, Venkatasubramanian 2007).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TClosenessKind {
    /// Equal distance (categorical): ½ Σ |p_E(v) − p_T(v)|, as `t_closeness`.
    Equal,
    /// Ordered distance over the sorted distinct values, as `t_closeness_ordered`.
    Ordered,
}

impl TClosenessKind {
    /// `equal` or `ordered`.
    pub fn name(self) -> &'static str {
        match self {
            TClosenessKind::Equal => "equal",
            TClosenessKind::Ordered => "ordered",
        }
    }
}

/// A t-closeness requirement on one sensitive attribute: every class's distance to the whole
/// table's distribution (of the input, before suppression) is at most `t`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TCloseness {
    /// equal (default) or ordered.
    #[serde(default = "default_t_kind")]
    pub kind: TClosenessKind,
    /// The largest distance allowed, in [0, 1].
    pub t: f64,
}

fn default_t_kind() -> TClosenessKind {
    TClosenessKind::Equal
}

/// The requirements on one sensitive attribute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SensitiveRequirement {
    /// The sensitive column.
    pub attribute: String,
    /// Its l-diversity requirement, if any.
    pub l: Option<LDiversity>,
    /// Its t-closeness requirement, if any.
    pub t: Option<TCloseness>,
}

/// What happens to the rows of classes that fail the requirements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SuppressionMode {
    /// The rows are left out of the output (the default).
    #[default]
    Drop,
    /// The rows are kept with every quasi-identifier replaced by `*`.
    Mask,
}

/// Everything a published table must satisfy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrivacyRequirements {
    /// Every class (after suppression) has at least `k` rows (k ≥ 1).
    pub k: u64,
    /// The largest share of input rows that may be suppressed, in [0, 1].
    pub max_suppression: f64,
    /// Per sensitive attribute, its l and t requirements (attributes without any are listed
    /// too, with `None`s).
    pub sensitive: Vec<SensitiveRequirement>,
}

impl PrivacyRequirements {
    /// The most rows of `n` that may be suppressed: ⌊max_suppression · n⌋, computed so that
    /// a rate like 0.02 of 30,162 rows allows 603 rows, not 602 through rounding.
    pub fn max_suppressed_rows(&self, n: u64) -> u64 {
        let exact = self.max_suppression * n as f64;
        // a tiny tolerance absorbs binary rounding of products like 0.07 · 100
        (exact + 1e-9).floor().max(0.0) as u64
    }
}

/// Relative tolerance for comparing a measured l or t with the policy's bound: only
/// floating-point rounding is absorbed (`exp(ln 3)` evaluates to 3.0000000000000004, an EMD of
/// exactly 0.2 may come out as 0.20000000000000004). Search, suppression and verification all
/// compare through the methods below so they agree on every class.
pub const RELATIVE_TOLERANCE: f64 = 1e-12;

impl LDiversity {
    /// The smallest measured l that meets the requirement.
    pub fn threshold(&self) -> f64 {
        self.l * (1.0 - RELATIVE_TOLERANCE)
    }

    /// Whether a class whose l-diversity of this kind is `measured` meets the requirement.
    pub fn is_met_by(&self, measured: f64) -> bool {
        measured >= self.threshold()
    }
}

impl TCloseness {
    /// The largest measured distance that meets the requirement.
    pub fn threshold(&self) -> f64 {
        self.t * (1.0 + RELATIVE_TOLERANCE)
    }

    /// Whether a class at distance `measured` meets the requirement.
    pub fn is_met_by(&self, measured: f64) -> bool {
        measured <= self.threshold()
    }
}
