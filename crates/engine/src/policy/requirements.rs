//! The privacy requirements of a policy: what a published table must satisfy.
//!
//! These types are shared by the policy file (`[privacy]`), the search (which evaluates them
//! on lattice nodes), the table provider (which finds the failing classes in SQL) and the
//! publisher (which verifies them on the written output).
//!
//! ## One requirement, one place
//! Every requirement on a sensitive attribute is a [`Bound`] on a per-class [`Measure`]. A
//! measure knows, here and nowhere else: its key in reports, its SQL function
//! ([`Measure::call`], used by the provider and the verification), how a class's value compares
//! with the bound ([`Bound::is_met_by`] in Rust, [`Bound::passes`] in SQL, both through
//! [`Bound::threshold`]), and whether it is monotone for the search's pruning
//! ([`Measure::failure_inherited_by_parts`], [`Measure::closed_under_union`]). The search's
//! own evaluation of a measure on a class histogram is one `match` over [`Measure`]
//! (`search::evaluate::class_measures`). Adding a requirement is: a variant here, its policy
//! key in [`SensitiveRequirement::bounds`], and its arm in that `match`; the compiler finds
//! every other place.

use std::collections::BTreeMap;

use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, lit};
use serde::{Deserialize, Serialize, Serializer};

use crate::functions::{
    alpha_anonymity_udaf, beta_likeness_udaf, delta_disclosure_udaf, enhanced_beta_likeness_udaf,
    entropy_l_diversity_udaf, k_anonymity_udaf, l_diversity_udaf, recursive_cl_diversity_udaf,
    t_closeness_ordered_udaf, t_closeness_udaf, tuple_diversity_udaf,
};

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

/// A β-likeness requirement on one sensitive attribute (Cao & Karras 2012).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BetaLikeness {
    /// The largest relative gain (p_E − p_T)/p_T allowed (> 0).
    pub beta: f64,
    /// Enhanced β-likeness: the gain of each value is also capped by −ln p_T(v).
    #[serde(default)]
    pub enhanced: bool,
}

/// The requirements on one sensitive attribute.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct SensitiveRequirement {
    /// The sensitive column.
    pub attribute: String,
    /// Its l-diversity requirement, if any.
    pub l: Option<LDiversity>,
    /// Its t-closeness requirement, if any.
    pub t: Option<TCloseness>,
    /// α of (α,k)-anonymity: no value may make up more than this share of a class.
    pub alpha: Option<f64>,
    /// Its β-likeness requirement, if any.
    pub beta: Option<BetaLikeness>,
    /// δ of δ-disclosure privacy: every class is below it.
    pub delta: Option<f64>,
    /// Tuple diversity (Loukides & Shao 2008) of an ordered attribute: every class's range
    /// is at least this share of the table's range.
    pub tuple_diversity: Option<f64>,
    /// k over distinct persons, when this column is the person id (`k_persons`).
    pub persons: Option<u64>,
}

impl SensitiveRequirement {
    /// The attribute without requirements.
    pub fn unconstrained(attribute: impl Into<String>) -> Self {
        Self {
            attribute: attribute.into(),
            ..Self::default()
        }
    }

    /// Every bound this attribute's classes must meet, in a fixed order (l, t, α, β, δ,
    /// tuple diversity, persons).
    pub fn bounds(&self) -> Vec<Bound> {
        let mut bounds = Vec::new();
        if let Some(l) = self.l {
            let measure = match l.kind {
                LDiversityKind::Distinct => Measure::DistinctL,
                LDiversityKind::Entropy => Measure::EntropyL,
                // a missing c is reported by `validate`
                LDiversityKind::Recursive => Measure::RecursiveL {
                    c: l.c.unwrap_or(f64::NAN),
                },
            };
            bounds.push(Bound::new(measure, l.l));
        }
        if let Some(t) = self.t {
            let measure = match t.kind {
                TClosenessKind::Equal => Measure::EqualT,
                TClosenessKind::Ordered => Measure::OrderedT,
            };
            bounds.push(Bound::new(measure, t.t));
        }
        if let Some(alpha) = self.alpha {
            bounds.push(Bound::new(Measure::Alpha, alpha));
        }
        if let Some(beta) = self.beta {
            let measure = if beta.enhanced {
                Measure::EnhancedBeta
            } else {
                Measure::Beta
            };
            bounds.push(Bound::new(measure, beta.beta));
        }
        if let Some(delta) = self.delta {
            bounds.push(Bound::new(Measure::Delta, delta));
        }
        if let Some(spread) = self.tuple_diversity {
            bounds.push(Bound::new(Measure::TupleDiversity, spread));
        }
        if let Some(persons) = self.persons {
            bounds.push(Bound::new(Measure::Persons, persons as f64));
        }
        bounds
    }

    /// This attribute's requirements, each one it does not set taken from `defaults`.
    pub fn or(self, defaults: &SensitiveRequirement) -> Self {
        Self {
            l: self.l.or(defaults.l),
            t: self.t.or(defaults.t),
            alpha: self.alpha.or(defaults.alpha),
            beta: self.beta.or(defaults.beta),
            delta: self.delta.or(defaults.delta),
            tuple_diversity: self.tuple_diversity.or(defaults.tuple_diversity),
            persons: self.persons.or(defaults.persons),
            attribute: self.attribute,
        }
    }

    /// The policy keys of the requirements set (`l_diversity`, `alpha`, …).
    pub fn policy_keys(&self) -> Vec<&'static str> {
        self.bounds()
            .iter()
            .map(|b| b.measure.policy_key())
            .collect()
    }

    /// Whether the attribute has any requirement (else only its presence matters).
    pub fn is_constrained(&self) -> bool {
        !self.bounds().is_empty()
    }

    /// Checks every bound's range; the message names the attribute and the policy key.
    pub fn validate(&self) -> Result<(), String> {
        self.bounds()
            .iter()
            .try_for_each(|b| b.validate(&self.attribute))
    }
}

/// A per-class figure of one sensitive attribute that a requirement bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Measure {
    /// Distinct l: distinct non-NULL values (`l_diversity`).
    DistinctL,
    /// Entropy l: exp(H) (`entropy_l_diversity`).
    EntropyL,
    /// Recursive (c,l)-diversity (`recursive_cl_diversity`).
    RecursiveL { c: f64 },
    /// t with equal ground distance (`t_closeness`).
    EqualT,
    /// t with ordered ground distance (`t_closeness_ordered`).
    OrderedT,
    /// α of (α,k)-anonymity (`alpha_anonymity`).
    Alpha,
    /// Basic β-likeness (`beta_likeness`).
    Beta,
    /// Enhanced β-likeness (`enhanced_beta_likeness`).
    EnhancedBeta,
    /// δ-disclosure (`delta_disclosure`).
    Delta,
    /// Tuple diversity: the class's range over the table's (`tuple_diversity`).
    TupleDiversity,
    /// Distinct persons, of the person-id column (`k_anonymity(person_id)`).
    Persons,
}

/// How a class's value must compare with the bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// value ≥ bound (l, tuple diversity, persons).
    AtLeast,
    /// value ≤ bound (t, α, β).
    AtMost,
    /// value < bound (δ: Brickell & Shmatikov's definition is strict).
    Below,
}

impl Measure {
    /// The key of the measure in reports (one per attribute: an attribute has at most one l,
    /// one t and one β requirement).
    pub fn key(self) -> &'static str {
        match self {
            Measure::DistinctL | Measure::EntropyL | Measure::RecursiveL { .. } => "l",
            Measure::EqualT | Measure::OrderedT => "t",
            Measure::Alpha => "alpha",
            Measure::Beta | Measure::EnhancedBeta => "beta",
            Measure::Delta => "delta",
            Measure::TupleDiversity => "tuple_diversity",
            Measure::Persons => "persons",
        }
    }

    /// The policy key the bound comes from, for messages.
    pub fn policy_key(self) -> &'static str {
        match self {
            Measure::DistinctL | Measure::EntropyL | Measure::RecursiveL { .. } => "l_diversity",
            Measure::EqualT | Measure::OrderedT => "t_closeness",
            Measure::Alpha => "alpha",
            Measure::Beta | Measure::EnhancedBeta => "beta_likeness",
            Measure::Delta => "delta_disclosure",
            Measure::TupleDiversity => "tuple_diversity",
            Measure::Persons => "k_persons",
        }
    }

    /// How a class's value must compare with the bound.
    pub fn direction(self) -> Direction {
        match self {
            Measure::DistinctL
            | Measure::EntropyL
            | Measure::RecursiveL { .. }
            | Measure::TupleDiversity
            | Measure::Persons => Direction::AtLeast,
            Measure::Delta => Direction::Below,
            _ => Direction::AtMost,
        }
    }

    /// The crate's SQL aggregate computing the measure of each class of `GROUP BY` the
    /// quasi-identifiers, on the attribute `value`.
    pub fn call(self, value: Expr) -> Expr {
        match self {
            Measure::DistinctL => l_diversity_udaf().call(vec![value]),
            Measure::EntropyL => entropy_l_diversity_udaf().call(vec![value]),
            Measure::RecursiveL { c } => recursive_cl_diversity_udaf().call(vec![value, lit(c)]),
            Measure::EqualT => t_closeness_udaf().call(vec![value]),
            Measure::OrderedT => t_closeness_ordered_udaf().call(vec![value]),
            Measure::Alpha => alpha_anonymity_udaf().call(vec![value]),
            Measure::Beta => beta_likeness_udaf().call(vec![value]),
            Measure::EnhancedBeta => enhanced_beta_likeness_udaf().call(vec![value]),
            Measure::Delta => delta_disclosure_udaf().call(vec![value]),
            Measure::TupleDiversity => tuple_diversity_udaf().call(vec![value]),
            Measure::Persons => k_anonymity_udaf().call(vec![value]),
        }
    }

    /// Whether the measure compares the class with the whole table's distribution (t, β, δ):
    /// suppressing some classes changes the others' values. Tuple diversity compares with
    /// the table's range, but the search takes the input's range, before suppression:
    /// suppression can only narrow the published range, which raises every class's value
    /// (what the verification measures on the written rows), so judging against the input's
    /// never overstates it.
    pub fn depends_on_table(self) -> bool {
        matches!(
            self,
            Measure::EqualT
                | Measure::OrderedT
                | Measure::Beta
                | Measure::EnhancedBeta
                | Measure::Delta
        )
    }

    /// Whether the measure compares values by their order (the attribute must be ordered).
    pub fn needs_ordered_attribute(self) -> bool {
        matches!(self, Measure::OrderedT | Measure::TupleDiversity)
    }

    /// For a message refusing an attribute that is not ordered: what the measure is, and
    /// what to use instead (empty when nothing).
    pub fn ordered_name_and_hint(self) -> (&'static str, &'static str) {
        match self {
            Measure::TupleDiversity => ("tuple_diversity", ""),
            _ => ("ordered t-closeness", " (use kind = \"equal\")"),
        }
    }

    /// Whether a class that fails has only failing parts, so that suppression counts are
    /// monotone over the lattice: fewer distinct values than l in a union means fewer in
    /// every part, and a part's range lies inside the union's (tuple diversity, against the
    /// input's fixed range). Not so for the others: a failing class can hold a passing part.
    pub fn failure_inherited_by_parts(self) -> bool {
        matches!(
            self,
            Measure::DistinctL | Measure::Persons | Measure::TupleDiversity
        )
    }

    /// Whether a union of passing classes passes (the search prunes with it when nothing may
    /// be suppressed). Distinct values only grow; entropy is concave; recursive (c,l) is
    /// closed under union (Machanavajjhala et al. 2007); EMD, the largest share α and the
    /// gains of β are convex in the class distribution, and δ's band
    /// e^−δ < p_E/p_T < e^δ is convex. The worst-case NULL rule of entropy and recursive l
    /// (NULLs join the most frequent value) is not covered by those proofs, so with NULLs
    /// they are not used; α's NULL rule is (the largest count of a union is at most the sum
    /// of the parts' largest counts). A union's range covers each part's (tuple diversity).
    pub fn closed_under_union(self, attribute_has_nulls: bool) -> bool {
        match self {
            Measure::EntropyL | Measure::RecursiveL { .. } => !attribute_has_nulls,
            _ => true,
        }
    }
}

/// A bound on a per-class measure: the requirement every published class must meet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound {
    /// What is measured.
    pub measure: Measure,
    /// The bound from the policy.
    pub limit: f64,
}

impl Bound {
    /// A bound of `limit` on `measure`.
    pub fn new(measure: Measure, limit: f64) -> Self {
        Self { measure, limit }
    }

    /// The limit a measured value is compared with: the policy's, widened by
    /// [`RELATIVE_TOLERANCE`] to absorb floating-point rounding, and narrowed by it for the
    /// strict bound of δ, so that rounding never lets a class pass.
    pub fn threshold(&self) -> f64 {
        match self.measure.direction() {
            Direction::AtLeast => self.limit * (1.0 - RELATIVE_TOLERANCE),
            Direction::AtMost => self.limit * (1.0 + RELATIVE_TOLERANCE),
            Direction::Below => self.limit * (1.0 - RELATIVE_TOLERANCE),
        }
    }

    /// Whether a class whose measure is `measured` meets the bound (NaN never does).
    pub fn is_met_by(&self, measured: f64) -> bool {
        let threshold = self.threshold();
        match self.measure.direction() {
            Direction::AtLeast => measured >= threshold,
            Direction::AtMost => measured <= threshold,
            Direction::Below => measured < threshold,
        }
    }

    /// The SQL condition of [`Self::is_met_by`] on the column holding the measure; NULL (no
    /// value) is false: never assume privacy.
    pub fn passes(&self, measured: Expr) -> Expr {
        let measured =
            datafusion::prelude::cast(measured, datafusion::arrow::datatypes::DataType::Float64);
        let threshold = lit(self.threshold());
        let condition = match self.measure.direction() {
            Direction::AtLeast => measured.gt_eq(threshold),
            Direction::AtMost => measured.lt_eq(threshold),
            Direction::Below => measured.lt(threshold),
        };
        condition.is_true()
    }

    /// The value a class without one counts as (never the case for a class of rows): the
    /// worst possible.
    pub fn unmet_value(&self) -> f64 {
        match self.measure.direction() {
            Direction::AtLeast => 0.0,
            Direction::AtMost | Direction::Below => f64::INFINITY,
        }
    }

    /// The worse of two class values: the smaller for l, the larger for the others.
    pub fn worse(&self, a: f64, b: f64) -> f64 {
        match self.measure.direction() {
            Direction::AtLeast => a.min(b),
            Direction::AtMost | Direction::Below => a.max(b),
        }
    }

    /// Checks the limit's range; the message names `attribute` and the policy key.
    pub fn validate(&self, attribute: &str) -> Result<(), String> {
        let key = self.measure.policy_key();
        let limit = self.limit;
        let problem = match self.measure {
            Measure::DistinctL | Measure::RecursiveL { .. }
                if limit.is_finite() && limit >= 1.0 && limit.fract() != 0.0 =>
            {
                Some(format!("l must be a whole number, got {limit}"))
            }
            Measure::DistinctL | Measure::EntropyL | Measure::RecursiveL { .. }
                if !(limit.is_finite() && limit >= 1.0) =>
            {
                Some(format!("l must be at least 1, got {limit}"))
            }
            Measure::RecursiveL { c } if c.is_nan() => Some("kind = \"recursive\" needs c".into()),
            Measure::RecursiveL { c } if !(c.is_finite() && c > 0.0) => {
                Some(format!("c must be positive, got {c}"))
            }
            Measure::EqualT | Measure::OrderedT if !(0.0..=1.0).contains(&limit) => {
                Some(format!("t is a distance between 0 and 1, got {limit}"))
            }
            Measure::Alpha if !(limit > 0.0 && limit <= 1.0) => Some(format!(
                "alpha is a share of a class in (0, 1], got {limit}"
            )),
            Measure::Beta | Measure::EnhancedBeta if !(limit.is_finite() && limit > 0.0) => {
                Some(format!("beta must be a positive number, got {limit}"))
            }
            Measure::Delta if !(limit.is_finite() && limit > 0.0) => {
                Some(format!("delta must be a positive number, got {limit}"))
            }
            Measure::TupleDiversity if !(limit > 0.0 && limit <= 1.0) => Some(format!(
                "tuple_diversity is a share of the attribute's range in (0, 1], got {limit}"
            )),
            Measure::Persons if limit < 1.0 => {
                Some(format!("k_persons must be at least 1, got {limit}"))
            }
            _ => None,
        };
        match problem {
            Some(problem) => Err(format!("{key} of '{attribute}': {problem}")),
            None => Ok(()),
        }
    }
}

/// The worst value of each bounded measure of one sensitive attribute over the kept classes
/// of a release, by [`Measure::key`]: `{"attribute": "disease", "l": 3, "t": 0.21}`. A value
/// is `null` when no class is kept; +∞ (enhanced β or δ of a class no bound can meet) is
/// written as the string `"inf"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SensitiveAchieved {
    /// The sensitive column.
    pub attribute: String,
    /// The worst value per measure key.
    #[serde(flatten, serialize_with = "serialize_worst")]
    pub worst: BTreeMap<&'static str, Option<f64>>,
}

impl SensitiveAchieved {
    /// The worst values of `bounds` (aligned with `worst`) for `attribute`.
    pub fn new(attribute: &str, bounds: &[Bound], worst: &[Option<f64>]) -> Self {
        Self {
            attribute: attribute.to_string(),
            worst: bounds
                .iter()
                .zip(worst)
                .map(|(b, w)| (b.measure.key(), *w))
                .collect(),
        }
    }

    /// The worst value under `key` (`l`, `t`, `alpha`, `beta`, `delta`).
    pub fn get(&self, key: &str) -> Option<f64> {
        self.worst.get(key).copied().flatten()
    }

    /// The worst l.
    pub fn l(&self) -> Option<f64> {
        self.get("l")
    }

    /// The worst t.
    pub fn t(&self) -> Option<f64> {
        self.get("t")
    }
}

fn serialize_worst<S: Serializer>(
    worst: &BTreeMap<&'static str, Option<f64>>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = serializer.serialize_map(Some(worst.len()))?;
    for (key, value) in worst {
        match value {
            Some(v) if v.is_infinite() => map.serialize_entry(key, "inf")?,
            _ => map.serialize_entry(key, value)?,
        }
    }
    map.end()
}

/// Thresholds on what the published output gives away, measured after writing and before
/// publishing (post-analytics, seed 000 §3): a release that breaks one is not published.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct RiskThresholds {
    /// The highest prosecutor risk 1/|E| of any published record.
    pub max_prosecutor_risk: Option<f64>,
    /// The highest average prosecutor risk (#classes / rows).
    pub max_average_risk: Option<f64>,
    /// The highest marketer risk (the expected share of records re-identified; with the
    /// output as its own population, #classes / rows).
    pub max_marketer_risk: Option<f64>,
    /// The highest journalist risk against `[population]`: max over published classes of
    /// 1/max(F_E, 1).
    pub max_journalist_risk: Option<f64>,
    /// Per published attribute, the highest normalized leakage ΔS/S0 = H(a)/log2 n.
    pub max_leakage: BTreeMap<String, f64>,
    /// The largest share of the published rows any one column not a quasi-identifier may make
    /// unique together with the quasi-identifiers (see [`ColumnUniqueness`]); above
    /// [`UNIQUE_SHARE_WARNING`] a column is only warned about.
    pub max_unique_share: Option<f64>,
}

/// The share of the published rows a column not a quasi-identifier makes unique with the
/// quasi-identifiers above which publishing warns, naming the column
/// ([`RiskThresholds::warnings`]); `[privacy] max_unique_share` refuses instead.
pub const UNIQUE_SHARE_WARNING: f64 = 0.05;

impl RiskThresholds {
    /// Whether any threshold is set.
    pub fn any(&self) -> bool {
        self.max_prosecutor_risk.is_some()
            || self.max_average_risk.is_some()
            || self.max_marketer_risk.is_some()
            || self.max_journalist_risk.is_some()
            || !self.max_leakage.is_empty()
            || self.max_unique_share.is_some()
    }

    /// Checks the ranges: each a share in [0, 1].
    pub fn validate(&self) -> Result<(), String> {
        let named = [
            ("max_prosecutor_risk", self.max_prosecutor_risk),
            ("max_average_risk", self.max_average_risk),
            ("max_marketer_risk", self.max_marketer_risk),
            ("max_journalist_risk", self.max_journalist_risk),
            ("max_unique_share", self.max_unique_share),
        ];
        let leakage = self
            .max_leakage
            .iter()
            .map(|(attribute, &v)| (attribute.as_str(), Some(v)));
        for (name, value) in named.into_iter().chain(leakage) {
            if let Some(v) = value
                && !(0.0..=1.0).contains(&v)
            {
                return Err(format!("{name} is a share between 0 and 1, got {v}"));
            }
        }
        Ok(())
    }

    /// The thresholds `figures` break, each naming the threshold and by how much.
    pub fn broken_by(&self, figures: &PostAnalytics) -> Vec<String> {
        let mut broken = Vec::new();
        let check =
            |broken: &mut Vec<String>, name: &str, figure: &str, value: f64, limit: Option<f64>| {
                if let Some(limit) = limit
                    && value > limit * (1.0 + RELATIVE_TOLERANCE)
                {
                    broken.push(format!(
                        "{figure} {value:.4} is above {name} = {limit} (by {:.4})",
                        value - limit
                    ));
                }
            };
        check(
            &mut broken,
            "max_prosecutor_risk",
            "the prosecutor risk",
            figures.prosecutor_max,
            self.max_prosecutor_risk,
        );
        check(
            &mut broken,
            "max_average_risk",
            "the average prosecutor risk",
            figures.prosecutor_average,
            self.max_average_risk,
        );
        check(
            &mut broken,
            "max_marketer_risk",
            "the marketer risk",
            figures.marketer,
            self.max_marketer_risk,
        );
        if let Some(journalist) = figures.journalist {
            check(
                &mut broken,
                "max_journalist_risk",
                "the journalist risk",
                journalist,
                self.max_journalist_risk,
            );
        }
        for (attribute, &limit) in &self.max_leakage {
            match figures.leakage.iter().find(|l| &l.attribute == attribute) {
                Some(l) => check(
                    &mut broken,
                    &format!("max_leakage of '{attribute}'"),
                    &format!("the leakage of '{attribute}'"),
                    l.leakage,
                    Some(limit),
                ),
                None => broken.push(format!(
                    "max_leakage names '{attribute}', which is not a published attribute"
                )),
            }
        }
        broken.extend(self.unique_share_broken_by(&figures.uniqueness));
        broken
    }

    /// The columns of `uniqueness` above `max_unique_share`, each named with its share: the
    /// part of [`RiskThresholds::broken_by`] every method checks (cloaking and perturbation
    /// too, their label or microaggregated columns in the quasi-identifiers' place).
    pub fn unique_share_broken_by(&self, uniqueness: &[ColumnUniqueness]) -> Vec<String> {
        let Some(limit) = self.max_unique_share else {
            return Vec::new();
        };
        uniqueness
            .iter()
            .filter(|column| column.unique_share > limit * (1.0 + RELATIVE_TOLERANCE))
            .map(|column| format!("{}, above max_unique_share = {limit}", column.describe()))
            .collect()
    }

    /// The warnings `figures` call for (none breaks a threshold): see
    /// [`unique_share_warnings`].
    pub fn warnings(&self, figures: &PostAnalytics) -> Vec<String> {
        unique_share_warnings(&figures.uniqueness)
    }
}

/// The refusal of a written output that breaks `broken` (the thresholds it breaks, each
/// named): nothing is published.
pub fn thresholds_broken(broken: &[String]) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(format!(
        "the written output breaks the policy's thresholds, so it was not published: {}",
        broken.join("; ")
    ))
}

/// A warning for each column of `uniqueness` that makes more than [`UNIQUE_SHARE_WARNING`]
/// of the published rows unique with the quasi-identifiers, named with its share (never a
/// value).
pub fn unique_share_warnings(uniqueness: &[ColumnUniqueness]) -> Vec<String> {
    uniqueness
        .iter()
        .filter(|column| column.unique_share > UNIQUE_SHARE_WARNING)
        .map(|column| {
            format!(
                "{}: whoever knows a person's '{}' and quasi-identifiers finds their row \
                     (above {}%: generalize it or the quasi-identifiers further, make it a \
                     quasi-identifier or drop it; [privacy] max_unique_share refuses such a \
                     release)",
                column.describe(),
                column.attribute,
                UNIQUE_SHARE_WARNING * 100.0
            )
        })
        .collect()
}

/// What the published output gives away, measured on the written rows (post-analytics).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PostAnalytics {
    /// The highest prosecutor risk of a published record: 1/k.
    pub prosecutor_max: f64,
    /// The average prosecutor risk: #classes / rows.
    pub prosecutor_average: f64,
    /// The marketer risk with the output as its own population (equal to the average).
    pub marketer: f64,
    /// With `[population]`: the journalist risk, max over published classes of 1/max(F_E, 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub journalist: Option<f64>,
    /// With `[population]`: the marketer risk against it, (1/n) Σ_E |E|/max(F_E, 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub population_marketer: Option<f64>,
    /// Normalized leakage ΔS/S0 of each published attribute except the sensitive ones,
    /// highest first (ties by name).
    pub leakage: Vec<AttributeLeakage>,
    /// Each published column that is not a quasi-identifier (sensitive or not; the person id
    /// left out) with the quasi-identifiers: the rows it makes unique and the leakage,
    /// highest unique share first (then highest leakage, then by name).
    pub uniqueness: Vec<ColumnUniqueness>,
}

/// What one published column that is not a quasi-identifier gives away together with the
/// quasi-identifiers: an attacker who knows a person's quasi-identifiers and this column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnUniqueness {
    /// The column.
    pub attribute: String,
    /// Published rows whose (quasi-identifier labels, value of the column) no other published
    /// row shares (NULL equal to NULL).
    pub unique_rows: u64,
    /// `unique_rows` over the published rows (0 without rows).
    pub unique_share: f64,
    /// ΔS/S0 = H(quasi-identifiers, column)/log2 n over the published rows (1 for one row,
    /// 0 without rows).
    pub leakage_with_quasi_identifiers: f64,
    /// The published rows.
    #[serde(skip)]
    pub rows: u64,
}

impl ColumnUniqueness {
    /// `'cost' makes 50.00% of the published rows unique (4 of 8) with the
    /// quasi-identifiers`.
    fn describe(&self) -> String {
        format!(
            "'{}' makes {:.2}% of the published rows unique ({} of {}) with the \
             quasi-identifiers",
            self.attribute,
            100.0 * self.unique_share,
            crate::text::group_digits(self.unique_rows),
            crate::text::group_digits(self.rows)
        )
    }
}

/// The leakage of one published attribute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AttributeLeakage {
    /// The column.
    pub attribute: String,
    /// ΔS/S0 = H(a)/log2 n over the published rows (1 for a one-row output).
    pub leakage: f64,
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

/// δ-presence bounds (Nergiz, Atzori, Clifton, SIGMOD 2007): the probability `|E| / F_E` that
/// a population person matching class E is in the published table.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeltaPresence {
    /// δ_min ∈ [0, 1] (default 0).
    #[serde(default)]
    pub min: f64,
    /// δ_max ∈ [δ_min, 1].
    pub max: f64,
}

/// Requirements against a population table, judged per published class E from its size
/// |E| and F_E, the population rows whose quasi-identifiers its labels cover
/// ([`crate::search::population`], docs/definitions.md "k-map", "δ-presence").
///
/// Rules that never overstate privacy: F_E is counted as found, so a population that does
/// not contain the sample (F_E < |E|) only makes k-map harder and δ above 1 (failing); a
/// class no population row matches has F_E = 0, k-map 0 and δ = +∞ (failing). δ is bounded
/// for the published classes only: a population class without published rows (δ = 0) has
/// nobody to suppress, as in ARX; rows suppressed into the all-`*` class are not a class.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PopulationRequirement {
    /// Every class matches at least this many population rows (Sweeney 2001).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k_map: Option<u64>,
    /// δ-presence bounds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_presence: Option<DeltaPresence>,
}

/// δ of a class of `size` rows matching `covered` population rows: `size / covered`, +∞
/// when nothing covers it.
pub fn presence(size: u64, covered: u64) -> f64 {
    if covered == 0 {
        f64::INFINITY
    } else {
        size as f64 / covered as f64
    }
}

impl PopulationRequirement {
    /// Whether a class of `size` rows covering `covered` population rows meets every bound
    /// (δ with [`RELATIVE_TOLERANCE`] for rounding, as the other bounds).
    pub fn passes(&self, size: u64, covered: u64) -> bool {
        if !self.monotone_passes(covered) {
            return false;
        }
        match self.delta_presence {
            Some(DeltaPresence { min, max }) => {
                let delta = presence(size, covered);
                delta >= min * (1.0 - RELATIVE_TOLERANCE)
                    && delta <= max * (1.0 + RELATIVE_TOLERANCE)
            }
            None => true,
        }
    }

    /// The part of [`Self::passes`] that every part of a failing class fails too (k-map: a
    /// part covers no more population rows than its class), which the search prunes on.
    pub fn monotone_passes(&self, covered: u64) -> bool {
        self.k_map.is_none_or(|k| covered >= k)
    }

    /// Whether a class of `size` rows covering *at least* `covered_at_least` population rows
    /// may pass: k-map and δ_max judged on a lower bound of F_E hold for the class itself,
    /// δ_min needs F_E exactly. Local recoding judges its cuts and merges with this, then
    /// every class with [`Self::passes`] once its F_E is known.
    pub fn may_pass(&self, size: u64, covered_at_least: u64) -> bool {
        self.monotone_passes(covered_at_least)
            && self.delta_presence.is_none_or(|delta| {
                presence(size, covered_at_least) <= delta.max * (1.0 + RELATIVE_TOLERANCE)
            })
    }

    /// [`Self::passes`] as SQL, on a class's rows and the population rows it covers (integer
    /// columns; NULL covered rows fail, as 0 does).
    pub fn passes_expr(&self, size: Expr, covered: Expr) -> Expr {
        use datafusion::arrow::datatypes::DataType;
        use datafusion::prelude::{cast, nullif};
        let mut condition = lit(true);
        if let Some(k) = self.k_map {
            condition = condition.and(covered.clone().gt_eq(lit(k as i64)));
        }
        if let Some(DeltaPresence { min, max }) = self.delta_presence {
            // δ = size / F_E; F_E = 0 makes it NULL, which fails like +∞
            let covered = nullif(cast(covered, DataType::Float64), lit(0.0));
            let delta = cast(size, DataType::Float64) / covered;
            condition = condition
                .and(delta.clone().gt_eq(lit(min * (1.0 - RELATIVE_TOLERANCE))))
                .and(delta.lt_eq(lit(max * (1.0 + RELATIVE_TOLERANCE))));
        }
        condition.is_true()
    }

    /// Whether failing is inherited by every part of a class (k-map: a part covers no more
    /// population rows), so that the search may prune on it.
    pub fn failure_inherited_by_parts(&self) -> bool {
        self.delta_presence.is_none()
    }

    /// The policy keys set, as `[privacy]` names them.
    pub fn policy_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.k_map.is_some() {
            keys.push("k_map");
        }
        if self.delta_presence.is_some() {
            keys.push("delta_presence");
        }
        keys
    }

    /// Ranges: k_map ≥ 1, 0 ≤ δ_min ≤ δ_max ≤ 1.
    pub fn validate(&self) -> Result<(), String> {
        if self.k_map == Some(0) {
            return Err("privacy.k_map must be at least 1".into());
        }
        if let Some(DeltaPresence { min, max }) = self.delta_presence
            && !(min.is_finite() && max.is_finite() && 0.0 <= min && min <= max && max <= 1.0)
        {
            return Err(format!(
                "privacy.delta_presence needs 0 <= min <= max <= 1, got min = {min}, max = {max}"
            ));
        }
        Ok(())
    }
}

/// What a release achieves against its population: over its published classes, the smallest
/// F_E (k-map) and the range of δ = |E| / F_E.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PopulationAchieved {
    /// Rows of the population table.
    pub population_rows: u64,
    /// min F_E over published classes.
    pub k_map: Option<u64>,
    /// min and max δ over published classes (+∞ written as "inf").
    #[serde(serialize_with = "serialize_range")]
    pub delta_presence: Option<(f64, f64)>,
    /// Σ over published classes of |E| / max(F_E, 1): the marketer risk's numerator.
    #[serde(skip)]
    pub expected_matches: f64,
}

fn serialize_range<S: Serializer>(range: &Option<(f64, f64)>, s: S) -> Result<S::Ok, S::Error> {
    let finite = |v: f64| {
        if v.is_finite() {
            serde_json::json!(v)
        } else {
            serde_json::json!("inf")
        }
    };
    match range {
        Some((min, max)) => {
            serde_json::json!({ "min": finite(*min), "max": finite(*max) }).serialize(s)
        }
        None => s.serialize_none(),
    }
}

impl PopulationAchieved {
    /// Folds a published class into the figures.
    pub fn add_class(&mut self, size: u64, covered: u64) {
        self.k_map = Some(self.k_map.map_or(covered, |k| k.min(covered)));
        self.expected_matches += size as f64 / covered.max(1) as f64;
        let delta = presence(size, covered);
        self.delta_presence = Some(match self.delta_presence {
            Some((lo, hi)) => (lo.min(delta), hi.max(delta)),
            None => (delta, delta),
        });
    }

    /// The journalist risk: 1/max(k-map, 1) (0 without a published class).
    pub fn journalist_risk(&self) -> f64 {
        self.k_map.map_or(0.0, |k| 1.0 / k.max(1) as f64)
    }

    /// The marketer risk against the population over `rows` published rows.
    pub fn marketer_risk(&self, rows: u64) -> f64 {
        if rows == 0 {
            0.0
        } else {
            self.expected_matches / rows as f64
        }
    }
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
    /// k-map and δ-presence against the policy's `[population]` table, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub population: Option<PopulationRequirement>,
    /// What happens to the rows of failing classes: it decides what the published table
    /// looks like, hence whether a release meets the rest (drop: the distribution t, β and δ
    /// compare with; mask: the all-`*` class the masked rows join). Reported as the policy's
    /// `suppression`, not here.
    #[serde(skip)]
    pub suppression: SuppressionMode,
}

impl PrivacyRequirements {
    /// The sensitive attributes with a requirement, in order.
    pub fn constrained_attributes(&self) -> Vec<String> {
        self.sensitive
            .iter()
            .filter(|s| s.is_constrained())
            .map(|s| s.attribute.clone())
            .collect()
    }

    /// Whether some requirement compares classes with the whole table's distribution.
    pub fn depends_on_table(&self) -> bool {
        self.sensitive
            .iter()
            .any(|s| s.bounds().iter().any(|b| b.measure.depends_on_table()))
    }

    /// Whether any class can fail: k > 1, a requirement on a sensitive attribute or on the
    /// population.
    pub fn can_fail(&self) -> bool {
        self.k > 1 || self.sensitive.iter().any(|s| s.is_constrained()) || self.population.is_some()
    }

    /// The most rows of `n` that may be suppressed: ⌊max_suppression · n⌋, computed so that
    /// a rate like 0.02 of 30,162 rows allows 603 rows, not 602 through rounding.
    pub fn max_suppressed_rows(&self, n: u64) -> u64 {
        let exact = self.max_suppression * n as f64;
        // a tiny tolerance absorbs binary rounding of products like 0.07 · 100
        (exact + 1e-9).floor().max(0.0) as u64
    }

    /// Refuses a transformation that suppresses `suppressed` of `input_rows` rows when that is
    /// above [`Self::max_suppressed_rows`], or every row; `outcome` says what was then not
    /// done (`nothing written`, `nothing served`). The one rule of publishing and of the
    /// generalized tables served to Python.
    pub fn check_suppression(&self, suppressed: u64, input_rows: u64, outcome: &str) -> Result<()> {
        let allowed = self.max_suppressed_rows(input_rows);
        if suppressed > allowed {
            return Err(DataFusionError::Plan(format!(
                "this transformation suppresses {suppressed} of {input_rows} rows, above the \
                 policy's limit of {allowed} (max_suppression = {}); {outcome}",
                self.max_suppression
            )));
        }
        if input_rows > 0 && suppressed == input_rows {
            return Err(DataFusionError::Plan(format!(
                "this transformation suppresses all {input_rows} rows; {outcome}"
            )));
        }
        Ok(())
    }
}

/// Relative tolerance for comparing a measured l or t with the policy's bound: only
/// floating-point rounding is absorbed (`exp(ln 3)` evaluates to 3.0000000000000004, an EMD of
/// exactly 0.2 may come out as 0.20000000000000004). Search, suppression and verification all
/// compare through the methods below so they agree on every class.
pub const RELATIVE_TOLERANCE: f64 = 1e-12;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{BooleanArray, Int64Array};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::record_batch::RecordBatch;
    use datafusion::prelude::{SessionContext, col};

    use super::*;

    /// The population rule's SQL form, its monotone part and its lower-bound form agree with
    /// `passes`, checked on every class of 0–7 rows covering 0–15 population rows (a NULL
    /// F_E, as a class no population row matches, fails like 0). By hand: k-map 3 and
    /// δ ∈ [0.2, 0.5] pass (2 rows, 4 covered: δ 0.5) and (1, 5: δ 0.2), fail (1, 6: δ
    /// 0.167), (3, 5: δ 0.6) and (1, 2: F_E under 3).
    #[tokio::test]
    async fn population_rule_agrees_in_rust_in_sql_and_on_lower_bounds() {
        let sizes: Vec<i64> = (0..8).flat_map(|s| std::iter::repeat_n(s, 17)).collect();
        let covered: Vec<Option<i64>> = (0..8)
            .flat_map(|_| (0..16).map(Some).chain([None]))
            .collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("size", DataType::Int64, false),
            Field::new("covered", DataType::Int64, true),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(Int64Array::from(sizes.clone())),
                Arc::new(Int64Array::from(covered.clone())),
            ],
        )
        .unwrap();
        let ctx = SessionContext::new();
        let delta = Some(DeltaPresence { min: 0.2, max: 0.5 });
        let hand = PopulationRequirement {
            k_map: Some(3),
            delta_presence: delta,
        };
        assert!(hand.passes(2, 4) && hand.passes(1, 5));
        assert!(!hand.passes(1, 6) && !hand.passes(3, 5) && !hand.passes(1, 2));
        for k_map in [None, Some(1), Some(3)] {
            for delta_presence in [None, delta, Some(DeltaPresence { min: 0.0, max: 1.0 })] {
                let requirement = PopulationRequirement {
                    k_map,
                    delta_presence,
                };
                let df = ctx.read_batch(batch.clone()).unwrap().select(vec![
                    requirement
                        .passes_expr(col("size"), col("covered"))
                        .alias("passes"),
                ]);
                let result = df.unwrap().collect().await.unwrap();
                let passes: Vec<bool> = result
                    .iter()
                    .flat_map(|b| {
                        let column = b.column(0).as_any().downcast_ref::<BooleanArray>();
                        column
                            .unwrap()
                            .iter()
                            .map(|v| v.unwrap())
                            .collect::<Vec<_>>()
                    })
                    .collect();
                for (i, (&size, &covered)) in sizes.iter().zip(&covered).enumerate() {
                    let (size, covered) = (size as u64, covered.unwrap_or(0) as u64);
                    let expected = requirement.passes(size, covered);
                    assert_eq!(
                        passes[i], expected,
                        "{requirement:?}, {size} rows, {covered}"
                    );
                    if expected {
                        assert!(requirement.monotone_passes(covered));
                        assert!(requirement.may_pass(size, covered));
                    }
                    // judged on a lower bound of F_E, a pass is sound: k-map and δ_max hold
                    // for the true F_E (δ_min is left to `passes`)
                    let upper = PopulationRequirement {
                        k_map,
                        delta_presence: delta_presence.map(|d| DeltaPresence { min: 0.0, ..d }),
                    };
                    for lower in 0..=covered {
                        if requirement.may_pass(size, lower) {
                            assert!(upper.passes(size, covered), "{size}, {lower} of {covered}");
                        }
                    }
                }
            }
        }
    }

    /// Post-analytics of a hand example: 10 written rows in 3 classes of 2, 3 and 5 rows give
    /// a prosecutor risk 1/2 (the class of 2), an average prosecutor risk and a marketer risk
    /// of 3 classes / 10 rows = 0.3; `sex` has leakage 0.25.
    fn ten_rows_three_classes() -> PostAnalytics {
        PostAnalytics {
            prosecutor_max: 1.0 / 2.0,
            prosecutor_average: 3.0 / 10.0,
            marketer: 3.0 / 10.0,
            journalist: None,
            population_marketer: None,
            leakage: vec![AttributeLeakage {
                attribute: "sex".into(),
                leakage: 0.25,
            }],
            uniqueness: vec![],
        }
    }

    /// Each threshold is compared as figure ≤ bound (a figure at its bound passes), names
    /// itself and the gap; a journalist bound is ignored without a population figure; a
    /// leakage bound on an attribute that is not published is reported as such.
    #[test]
    fn broken_by_names_each_threshold_and_the_gap() {
        let figures = ten_rows_three_classes();
        // every figure exactly at its bound: nothing is broken
        let at = RiskThresholds {
            max_prosecutor_risk: Some(0.5),
            max_average_risk: Some(0.3),
            max_marketer_risk: Some(0.3),
            max_journalist_risk: Some(0.01),
            max_leakage: BTreeMap::from([("sex".to_string(), 0.25)]),
            max_unique_share: Some(0.0),
        };
        assert!(at.any());
        assert_eq!(at.broken_by(&figures), Vec::<String>::new());
        // by hand: 0.3 − 0.25 = 0.05 (average), 0.3 − 0.2 = 0.1 (marketer), 0.5 − 0.4 = 0.1
        // (prosecutor), 0.25 − 0.2 = 0.05 (leakage of sex)
        let below = RiskThresholds {
            max_prosecutor_risk: Some(0.4),
            max_average_risk: Some(0.25),
            max_marketer_risk: Some(0.2),
            max_journalist_risk: None,
            max_leakage: BTreeMap::from([("sex".to_string(), 0.2), ("zip".to_string(), 0.5)]),
            max_unique_share: None,
        };
        assert_eq!(
            below.broken_by(&figures),
            vec![
                "the prosecutor risk 0.5000 is above max_prosecutor_risk = 0.4 (by 0.1000)",
                "the average prosecutor risk 0.3000 is above max_average_risk = 0.25 (by 0.0500)",
                "the marketer risk 0.3000 is above max_marketer_risk = 0.2 (by 0.1000)",
                "the leakage of 'sex' 0.2500 is above max_leakage of 'sex' = 0.2 (by 0.0500)",
                "max_leakage names 'zip', which is not a published attribute",
            ]
        );
        // only the average bound set: only it is reported
        let average_only = RiskThresholds {
            max_average_risk: Some(0.29),
            ..RiskThresholds::default()
        };
        assert_eq!(
            average_only.broken_by(&figures),
            vec!["the average prosecutor risk 0.3000 is above max_average_risk = 0.29 (by 0.0100)"]
        );
        // with a population: the journalist risk 1/2 (smallest F_E 2) against 0.25
        let with_population = PostAnalytics {
            journalist: Some(0.5),
            ..figures
        };
        let journalist = RiskThresholds {
            max_journalist_risk: Some(0.25),
            ..RiskThresholds::default()
        };
        assert_eq!(
            journalist.broken_by(&with_population),
            vec!["the journalist risk 0.5000 is above max_journalist_risk = 0.25 (by 0.2500)"]
        );
        assert!(!RiskThresholds::default().any());
    }

    /// Only rounding is absorbed: a figure a relative 10⁻¹³ above its bound passes, one a
    /// relative 10⁻⁹ above fails.
    #[test]
    fn broken_by_absorbs_rounding_only() {
        let bound = 0.3;
        let thresholds = RiskThresholds {
            max_marketer_risk: Some(bound),
            ..RiskThresholds::default()
        };
        let with_marketer = |marketer: f64| PostAnalytics {
            marketer,
            ..ten_rows_three_classes()
        };
        assert!(
            thresholds
                .broken_by(&with_marketer(bound * (1.0 + 1e-13)))
                .is_empty()
        );
        assert_eq!(
            thresholds
                .broken_by(&with_marketer(bound * (1.0 + 1e-9)))
                .len(),
            1
        );
    }

    /// The uniqueness of each non-QI column: warned about above 5 % of the rows, refused above
    /// `max_unique_share`, each naming the column and its share, never a value. By hand:
    /// 'cost' makes 4 of 8 rows unique (50 %), 'ward' 0 of 8, 'note' 1 of 20 (exactly 5 %:
    /// not above, no warning).
    #[test]
    fn uniqueness_warns_above_five_percent_and_refuses_above_the_threshold() {
        let column = |attribute: &str, unique_rows: u64, rows: u64| ColumnUniqueness {
            attribute: attribute.into(),
            unique_rows,
            unique_share: unique_rows as f64 / rows as f64,
            leakage_with_quasi_identifiers: 0.5,
            rows,
        };
        let figures = PostAnalytics {
            uniqueness: vec![
                column("cost", 4, 8),
                column("note", 1, 20),
                column("ward", 0, 8),
            ],
            ..ten_rows_three_classes()
        };
        let warned = RiskThresholds::default().warnings(&figures);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(
            warned[0].starts_with(
                "'cost' makes 50.00% of the published rows unique (4 of 8) with the \
                 quasi-identifiers: whoever knows a person's 'cost'"
            ),
            "{}",
            warned[0]
        );
        assert!(RiskThresholds::default().broken_by(&figures).is_empty());
        let refusing = RiskThresholds {
            max_unique_share: Some(0.3),
            ..RiskThresholds::default()
        };
        assert!(refusing.any());
        assert_eq!(
            refusing.broken_by(&figures),
            vec![
                "'cost' makes 50.00% of the published rows unique (4 of 8) with the \
                 quasi-identifiers, above max_unique_share = 0.3"
            ]
        );
        // at the bound passes
        let at = RiskThresholds {
            max_unique_share: Some(0.5),
            ..RiskThresholds::default()
        };
        assert!(at.broken_by(&figures).is_empty());
        for bad in [-0.1, 1.5] {
            let out_of_range = RiskThresholds {
                max_unique_share: Some(bad),
                ..RiskThresholds::default()
            };
            assert_eq!(
                out_of_range.validate(),
                Err(format!(
                    "max_unique_share is a share between 0 and 1, got {bad}"
                ))
            );
        }
    }
}
