//! `[privacy] method = "perturbation"`: numeric and categorical attributes perturbed rather
//! than generalized ([`crate::perturb`]). Each quasi-identifier names its transformation; the
//! microaggregated ones make the release k-anonymous on them by construction.
//!
//! ```toml
//! [privacy]
//! method = "perturbation"
//! k = 3                            # microaggregation groups have at least k records
//! max_suppression = 0.01           # records with a NULL or NaN in a numeric perturbed attribute
//!
//! [perturbation]                   # all optional
//! algorithm = "refined"            # or "mdav" (the reference), "projection"
//! aggregate = "mean"               # or "median"
//! strata = ["region"]              # quasi-identifiers microaggregated separately
//! block_rows = 5000                # larger strata are split k-d fashion into blocks
//! disclosure_percent = 10          # SDID's interval, ± percent
//!
//! [attributes.income]
//! role = "quasi_identifier"
//! perturbation = { kind = "microaggregation" }
//! # or { kind = "noise", level = 0.1 }            x + N(0, (level·σ)²)
//! #    { kind = "correlated_noise", level = 0.1 } ε ~ N(0, level·Σ) over all such attributes
//! #    { kind = "rank_swap", p = 5 }              window p % of the records
//! #    { kind = "pram", retention = 0.8 }   invariant PRAM unless invariant = false
//! #    { kind = "pram", categories = ["a", "b"], matrix = [[0.9, 0.1], [0.2, 0.8]] }
//! # sensitive attributes may take { kind = "permute" }: exchanged within their
//! # microaggregation group (seed 003 §2.2.2)
//! ```

use std::collections::BTreeMap;

use super::file::{AttributeSpec, BoundsSpec, PerturbationKeys, PerturbationSpec, Role};
use crate::perturb::pram::PramMatrix;
use crate::perturb::release::{NoiseBounds, Pram, Transformation};
use crate::perturb::swap::check_percentage;
use crate::perturb::{Aggregate, MicroOptions, partition::DEFAULT_BLOCK_ROWS};

impl BoundsSpec {
    fn check(&self, name: &str) -> std::result::Result<NoiseBounds, String> {
        match self {
            BoundsSpec::Named(named) if named == "observed" => Ok(NoiseBounds::Observed),
            BoundsSpec::Named(other) => Err(format!(
                "attribute '{name}': bounds is \"observed\" or [min, max], got \"{other}\""
            )),
            BoundsSpec::Range([low, high]) if low.is_finite() && high.is_finite() && low < high => {
                Ok(NoiseBounds::Range(*low, *high))
            }
            BoundsSpec::Range(_) => Err(format!(
                "attribute '{name}': bounds = [min, max] needs two finite numbers, min below max"
            )),
        }
    }
}

/// A checked perturbation policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Perturbation {
    /// Microaggregation's settings (k from `[privacy] k`).
    pub micro: MicroOptions,
    /// What a group publishes.
    pub aggregate: Aggregate,
    /// Quasi-identifiers whose values split the records into strata.
    pub strata: Vec<String>,
    /// SDID's interval, ± percent.
    pub disclosure_percent: f64,
    /// Each perturbed attribute, in the policy's (alphabetical) order.
    pub attributes: Vec<(String, Transformation)>,
    /// The noisy attributes' `bounds`, by name.
    pub bounds: BTreeMap<String, NoiseBounds>,
}

impl Perturbation {
    /// The attributes with `transformation`'s kind.
    pub fn with(&self, kind: fn(&Transformation) -> bool) -> Vec<&str> {
        self.attributes
            .iter()
            .filter(|(_, t)| kind(t))
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The microaggregated attributes.
    pub fn microaggregated(&self) -> Vec<&str> {
        self.with(|t| *t == Transformation::Microaggregation)
    }
}

/// Checks the perturbation keys of a policy with `method = "perturbation"` (`perturbing`),
/// or that none is set otherwise.
pub(super) fn check(
    perturbing: bool,
    k: u64,
    keys: Option<&PerturbationKeys>,
    attributes: &BTreeMap<String, AttributeSpec>,
) -> std::result::Result<Option<Perturbation>, String> {
    if !perturbing {
        if keys.is_some() {
            return Err("[perturbation] applies to method = \"perturbation\"".into());
        }
        if let Some((name, _)) = attributes.iter().find(|(_, a)| a.perturbation.is_some()) {
            return Err(format!(
                "attribute '{name}': perturbation applies to method = \"perturbation\""
            ));
        }
        return Ok(None);
    }
    let keys = keys.cloned().unwrap_or_default();
    let strata = keys.strata.clone().unwrap_or_default();
    for name in &strata {
        match attributes.get(name) {
            Some(a) if a.role == Role::QuasiIdentifier && a.perturbation.is_none() => {}
            Some(a) if a.role == Role::QuasiIdentifier => {
                return Err(format!(
                    "perturbation.strata names '{name}', which has its own perturbation: a \
                     stratum is published as it is"
                ));
            }
            _ => {
                return Err(format!(
                    "perturbation.strata names '{name}', which is not a quasi-identifier"
                ));
            }
        }
    }
    let mut checked = Vec::new();
    let mut bounds = BTreeMap::new();
    for (name, spec) in attributes {
        let Some(perturbation) = &spec.perturbation else {
            if spec.role == Role::QuasiIdentifier && !strata.contains(name) {
                return Err(format!(
                    "quasi-identifier '{name}' has no perturbation: give perturbation = {{ kind = \
                     \"microaggregation\" | \"noise\" | \"correlated_noise\" | \"rank_swap\" | \
                     \"pram\" }}, or list it in [perturbation] strata"
                ));
            }
            continue;
        };
        let transformation = transformation(name, perturbation)?;
        if let PerturbationSpec::Noise {
            bounds: Some(b), ..
        }
        | PerturbationSpec::CorrelatedNoise {
            bounds: Some(b), ..
        }
        | PerturbationSpec::MultiplicativeNoise {
            bounds: Some(b), ..
        } = perturbation
        {
            bounds.insert(name.clone(), b.check(name)?);
        }
        match (spec.role, &transformation) {
            (Role::Identifier, _) => {
                return Err(format!(
                    "attribute '{name}' is an identifier (never published): it takes no \
                     perturbation"
                ));
            }
            (Role::QuasiIdentifier | Role::Insensitive, Transformation::Permute) => {
                return Err(format!(
                    "attribute '{name}': permute exchanges a sensitive value within its group; \
                     make the attribute sensitive"
                ));
            }
            _ => {}
        }
        checked.push((name.clone(), transformation));
    }
    let micro = checked
        .iter()
        .any(|(_, t)| *t == Transformation::Microaggregation);
    if !micro && checked.iter().any(|(_, t)| *t == Transformation::Permute) {
        return Err(
            "permute exchanges values within microaggregation groups: microaggregate at least \
             one quasi-identifier"
                .into(),
        );
    }
    let levels: Vec<f64> = checked
        .iter()
        .filter_map(|(_, t)| match t {
            Transformation::CorrelatedNoise(level) => Some(*level),
            _ => None,
        })
        .collect();
    if levels.windows(2).any(|w| w[0] != w[1]) {
        return Err(
            "correlated_noise is one draw over all its attributes: give them the same level".into(),
        );
    }
    if checked.is_empty() {
        return Err(
            "method = \"perturbation\" needs at least one attribute with perturbation = { kind = … }"
                .into(),
        );
    }
    if micro && k < 2 {
        return Err(format!(
            "privacy.k = {k} protects nobody: microaggregation in groups of one publishes every \
             value as it is; give k = 2 or more"
        ));
    }
    let k = k as usize;
    let block_rows = keys.block_rows.unwrap_or(DEFAULT_BLOCK_ROWS);
    if block_rows < 4 * k {
        return Err(format!(
            "perturbation.block_rows must be at least 4k = {}, got {block_rows}",
            4 * k
        ));
    }
    let disclosure_percent = keys
        .disclosure_percent
        .unwrap_or(crate::perturb::measures::DEFAULT_DISCLOSURE_PERCENT);
    if !(disclosure_percent > 0.0 && disclosure_percent <= 100.0) {
        return Err(format!(
            "perturbation.disclosure_percent is a percentage in (0, 100], got {disclosure_percent}"
        ));
    }
    Ok(Some(Perturbation {
        micro: MicroOptions {
            k,
            algorithm: keys.algorithm.unwrap_or_default(),
            block_rows,
        },
        aggregate: keys.aggregate.unwrap_or_default(),
        strata,
        disclosure_percent,
        attributes: checked,
        bounds,
    }))
}

fn transformation(
    name: &str,
    spec: &PerturbationSpec,
) -> std::result::Result<Transformation, String> {
    let level = |level: f64| {
        if level >= 0.0 && level.is_finite() {
            Ok(level)
        } else {
            Err(format!(
                "attribute '{name}': the noise level is a multiple of the attribute's standard \
                 deviation, at least 0, got {level}"
            ))
        }
    };
    Ok(match spec {
        PerturbationSpec::Microaggregation => Transformation::Microaggregation,
        PerturbationSpec::Noise { level: l, .. } => Transformation::Noise(level(*l)?),
        PerturbationSpec::CorrelatedNoise { level: l, .. } => {
            Transformation::CorrelatedNoise(level(*l)?)
        }
        PerturbationSpec::MultiplicativeNoise { level: l, .. } => {
            Transformation::MultiplicativeNoise(level(*l)?)
        }
        PerturbationSpec::RankSwap { p } => {
            check_percentage(*p).map_err(|e| format!("attribute '{name}': {e}"))?;
            Transformation::RankSwap(*p)
        }
        PerturbationSpec::Pram {
            retention,
            invariant,
            categories,
            matrix,
        } => match (retention, categories, matrix) {
            (Some(alpha), None, None) => {
                PramMatrix::with_retention(2, *alpha)
                    .map_err(|e| format!("attribute '{name}': {e}"))?;
                Transformation::Pram(Pram::Retention {
                    alpha: *alpha,
                    invariant: *invariant,
                })
            }
            (None, Some(categories), Some(rows)) => {
                let matrix = PramMatrix::new(rows.clone())
                    .map_err(|e| format!("attribute '{name}': {e}"))?;
                if categories.len() != matrix.categories() {
                    return Err(format!(
                        "attribute '{name}': the PRAM matrix has {} rows for {} categories",
                        matrix.categories(),
                        categories.len()
                    ));
                }
                let mut sorted = categories.clone();
                sorted.sort();
                sorted.dedup();
                if sorted.len() != categories.len() {
                    return Err(format!(
                        "attribute '{name}': the PRAM categories list a category twice"
                    ));
                }
                Transformation::Pram(Pram::Matrix {
                    categories: categories.clone(),
                    matrix,
                    invariant: *invariant,
                })
            }
            _ => {
                return Err(format!(
                    "attribute '{name}': PRAM takes retention = α, or categories = [...] with \
                     matrix = [[...], ...] (one row per category)"
                ));
            }
        },
        PerturbationSpec::Permute => Transformation::Permute,
    })
}
