//! `[privacy] method`: which scheme publishes the data. `generalization` (the default) is
//! the k/l/t search and recoding of the rest of this module; the two bucketizations publish
//! a generalized table and a sensitive table linked by a bucket id
//! ([`crate::bucketize`]):
//!
//! ```toml
//! [privacy]
//! method = "ck-anonymization"    # or "pk-angelization" (the baseline, with p instead of c/λ)
//! k = 5                          # records per generalized and per fingerprint bucket
//! c = 1                          # every sensitive attribute ≥ c + 1 distinct values per bucket
//! lambda = 2                     # ≤ λ records per bucket share a linking value
//! refinement = "strict"          # or "relax"
//! external_factor = "physician"  # wins a tie for the maximum weight
//! marginal = ["age", "sex"]      # publish only these quasi-identifiers in GT (optional)
//! ```

use serde::Deserialize;

use crate::bucketize::{CkOptions, Refinement};

/// The publishing scheme named by `[privacy] method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Generalization (full-domain or local recoding) under k/l/t.
    #[default]
    Generalization,
    /// (c,k)-anonymization (seed 002).
    CkAnonymization,
    /// (p,k)-angelization, the baseline the seed improves on.
    PkAngelization,
    /// Microaggregation, noise, swapping and PRAM ([`super::perturbation`]).
    Perturbation,
    /// Location cloaking ([`super::cloaking`]).
    Cloaking,
}

impl Method {
    /// The name used in policy files and reports.
    pub fn name(self) -> &'static str {
        match self {
            Method::Generalization => "generalization",
            Method::CkAnonymization => "ck-anonymization",
            Method::PkAngelization => "pk-angelization",
            Method::Perturbation => "perturbation",
            Method::Cloaking => "cloaking",
        }
    }
}

/// The `[privacy]` keys of the bucketizations, as written.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct BucketizationKeys {
    /// Diversity of (c,k).
    pub c: Option<usize>,
    /// Sensitivity of (p,k).
    pub p: Option<usize>,
    /// λ of (c,k).
    pub lambda: Option<usize>,
    /// Strict or relaxed refinement.
    pub refinement: Option<Refinement>,
    /// The external factor χ.
    pub external_factor: Option<String>,
    /// τ of the dependency analysis.
    pub dependency_threshold: Option<f64>,
    /// The quasi-identifiers GT publishes.
    pub marginal: Option<Vec<String>>,
}

impl BucketizationKeys {
    /// The keys that are set, by name (for refusing them under another method).
    fn set(&self) -> Vec<&'static str> {
        let mut set = Vec::new();
        let mut note = |present: bool, name| {
            if present {
                set.push(name)
            }
        };
        note(self.c.is_some(), "c");
        note(self.p.is_some(), "p");
        note(self.lambda.is_some(), "lambda");
        note(self.refinement.is_some(), "refinement");
        note(self.external_factor.is_some(), "external_factor");
        note(self.dependency_threshold.is_some(), "dependency_threshold");
        note(self.marginal.is_some(), "marginal");
        set
    }
}

/// A checked bucketization of a policy.
#[derive(Debug, Clone)]
pub enum Bucketization {
    /// (c,k)-anonymization.
    Ck(CkOptions),
    /// (p,k)-angelization with p and k (and the dependency analysis that names the linking
    /// attribute the attack uses).
    Pk {
        /// The dependency analysis' parameters (c and λ unused).
        analysis: CkOptions,
        /// Distinct values of every sensitive attribute per bucket.
        p: usize,
        /// Records per bucket.
        k: usize,
    },
}

impl Bucketization {
    /// The method's name.
    pub fn method(&self) -> Method {
        match self {
            Bucketization::Ck(_) => Method::CkAnonymization,
            Bucketization::Pk { .. } => Method::PkAngelization,
        }
    }

    /// Records per bucket.
    pub fn k(&self) -> usize {
        match self {
            Bucketization::Ck(o) => o.k,
            Bucketization::Pk { k, .. } => *k,
        }
    }
}

/// Checks the keys against the method: `Ok(None)` for generalization (no key may be set),
/// else the bucketization. `k` is `[privacy] k`; `generalization_only` names the
/// generalization keys that are set.
pub(super) fn check(
    method: Method,
    keys: &BucketizationKeys,
    k: u64,
    generalization_only: &[&str],
) -> std::result::Result<Option<Bucketization>, String> {
    let set = keys.set();
    if matches!(method, Method::Generalization | Method::Cloaking) {
        return match set.first() {
            Some(key) => Err(format!(
                "privacy.{key} applies to method = \"ck-anonymization\" or \"pk-angelization\", \
                 not to {}",
                method.name()
            )),
            None => Ok(None),
        };
    }
    if method == Method::Perturbation {
        if let Some(key) = set.first() {
            return Err(format!(
                "privacy.{key} applies to method = \"ck-anonymization\" or \"pk-angelization\", \
                 not to perturbation"
            ));
        }
        // records with a NULL in a numeric perturbed attribute are suppressed, within the limit
        return match generalization_only
            .iter()
            .find(|key| **key != "max_suppression")
        {
            Some(key) => Err(format!(
                "privacy.{key} applies to method = \"generalization\", not to perturbation"
            )),
            None => Ok(None),
        };
    }
    if let Some(key) = generalization_only.first() {
        return Err(format!(
            "privacy.{key} applies to method = \"generalization\", not to {}",
            method.name()
        ));
    }
    let k = k as usize;
    let require = |value: Option<usize>, name: &str, at_least: usize| match value {
        Some(v) if v >= at_least => Ok(v),
        Some(v) => Err(format!(
            "privacy.{name} must be at least {at_least}, got {v}"
        )),
        None => Err(format!(
            "method = \"{}\" needs privacy.{name}",
            method.name()
        )),
    };
    if method == Method::PkAngelization {
        if let Some(key) = set.iter().find(|key| {
            !matches!(
                **key,
                "p" | "marginal" | "external_factor" | "dependency_threshold"
            )
        }) {
            return Err(format!(
                "privacy.{key} applies to method = \"ck-anonymization\", not to pk-angelization"
            ));
        }
        let analysis = CkOptions {
            c: 1,
            k,
            lambda: 1,
            refinement: Refinement::Strict,
            external_factor: keys.external_factor.clone(),
            dependency_threshold: keys.dependency_threshold.unwrap_or(0.5),
        };
        analysis.check().map_err(|e| e.message().to_string())?;
        return Ok(Some(Bucketization::Pk {
            analysis,
            p: require(keys.p, "p", 1)?,
            k,
        }));
    }
    if keys.p.is_some() {
        return Err("privacy.p applies to method = \"pk-angelization\"; (c,k) uses c".into());
    }
    let options = CkOptions {
        c: require(keys.c, "c", 1)?,
        k,
        lambda: require(keys.lambda, "lambda", 1)?,
        refinement: keys.refinement.unwrap_or_default(),
        external_factor: keys.external_factor.clone(),
        dependency_threshold: keys.dependency_threshold.unwrap_or(0.5),
    };
    options.check().map_err(|e| e.message().to_string())?;
    Ok(Some(Bucketization::Ck(options)))
}
