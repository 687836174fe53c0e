//! The TOML policy file, as written by a user (before hierarchies are loaded and checked
//! against the data). The format: docs/guide/policies.md.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use super::bucketization::{BucketizationKeys, Method};
use super::requirements::{
    BetaLikeness, LDiversity, RiskThresholds, SensitiveRequirement, SuppressionMode, TCloseness,
};
use crate::bucketize::Refinement;
use crate::perturb::{Aggregate, MicroAlgorithm};
use crate::tables::{BadValues, ColumnType};

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// The table name in SQL (default: the input's file stem).
    pub name: Option<String>,
    /// Where the data are.
    pub input: InputSpec,
    /// Where `anon anonymize` writes by default.
    pub output: Option<OutputSpec>,
    /// The population the input was sampled from, for k-map and δ-presence.
    pub population: Option<PopulationSpec>,
    /// What the published table must satisfy.
    pub privacy: PrivacySpec,
    /// The role of every column, by column name.
    pub attributes: BTreeMap<String, AttributeSpec>,
    /// An optional fixed transformation: a level per quasi-identifier.
    pub transformation: Option<BTreeMap<String, usize>>,
    /// Object-store settings that are not secret (endpoint, region, allow_http).
    pub storage: Option<crate::storage::StoreOptions>,
    /// `method = "perturbation"`: its settings ([`super::perturbation`]).
    pub perturbation: Option<PerturbationKeys>,
    /// `[synthetic]`: synthetic records for the written classes below a threshold
    /// ([`super::synthetic`]).
    pub synthetic: Option<super::synthetic::SyntheticKeys>,
}

/// `[input]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InputSpec {
    /// A Parquet file, a directory of Parquet files, a glob of Parquet files, a CSV file or a
    /// directory of CSV files; relative paths are relative to the policy file.
    pub path: PathBuf,
    /// CSV input: a value that does not convert to its attribute's `type` is an error
    /// (`"error"`, the default) or read as NULL, counted on stderr (`"null"`).
    pub bad_values: Option<BadValues>,
    /// `"delta"`: the path must be a Delta table (one is also detected by its `_delta_log/`).
    pub format: Option<TableFormatSpec>,
    /// A Delta table's version to read (time travel); default the latest.
    pub version: Option<i64>,
    /// A Delta table read as it was at this RFC 3339 time (`2026-11-27T10:00:00Z`).
    pub timestamp: Option<String>,
}

/// `[input] format` / `[output] format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableFormatSpec {
    /// Parquet files (the default output).
    Parquet,
    /// A Delta Lake table.
    Delta,
}

/// `[output]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// A `.parquet` file or a directory; relative to the policy file. Unset: `--out` names it.
    pub path: Option<PathBuf>,
    /// `"delta"`: publish as a Delta table (default `"parquet"`).
    pub format: Option<TableFormatSpec>,
    /// The Delta table's partition columns (insensitive columns, published as they are).
    #[serde(default)]
    pub partition_by: Vec<String>,
}

/// `[population]`: a table with (at least) the quasi-identifiers, raw, of the population
/// the input is a sample of.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PopulationSpec {
    /// Parquet or CSV, like `[input] path`; relative to the policy file.
    pub path: PathBuf,
}

/// `[privacy]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacySpec {
    /// Every class has at least k rows.
    pub k: u64,
    /// The largest share of rows that may be suppressed (0 by default).
    #[serde(default)]
    pub max_suppression: f64,
    /// `drop` (default) or `mask` suppressed rows.
    #[serde(default)]
    pub suppression: SuppressionMode,
    /// How local recoding labels a class's values of an ordered quasi-identifier:
    /// `value_free` (default) or `exact` (see [`crate::search::local::labels`]).
    #[serde(default)]
    pub local_labels: super::LocalLabels,
    /// Set-based local recoding: a class's set label holds at most this many values.
    pub max_set_values: Option<usize>,
    /// What a longer set is published as: `"*"`; unset, such a set is an error.
    pub set_fallback: Option<String>,
    /// l-diversity for every sensitive attribute that does not set its own.
    pub l_diversity: Option<LDiversity>,
    /// t-closeness for every sensitive attribute that does not set its own.
    pub t_closeness: Option<TCloseness>,
    /// α of (α,k)-anonymity for every sensitive attribute that does not set its own.
    pub alpha: Option<f64>,
    /// β-likeness for every sensitive attribute that does not set its own.
    pub beta_likeness: Option<BetaLikeness>,
    /// δ-disclosure for every sensitive attribute that does not set its own.
    pub delta_disclosure: Option<f64>,
    /// Tuple diversity for every sensitive attribute that does not set its own.
    pub tuple_diversity: Option<f64>,
    /// The publishing scheme (`generalization` by default; see
    /// [`super::bucketization`]).
    #[serde(default)]
    pub method: Method,
    /// (c,k)-anonymization: c.
    pub c: Option<usize>,
    /// (p,k)-angelization: p.
    pub p: Option<usize>,
    /// (c,k)-anonymization: λ.
    pub lambda: Option<usize>,
    /// (c,k)-anonymization: `strict` or `relax`.
    pub refinement: Option<Refinement>,
    /// (c,k)-anonymization: the attribute the external factor is added to.
    pub external_factor: Option<String>,
    /// (c,k)-anonymization: τ of the dependency analysis.
    pub dependency_threshold: Option<f64>,
    /// Bucketizations: the quasi-identifiers GT publishes (marginal publication).
    pub marginal: Option<Vec<String>>,
    /// The column identifying the person a row belongs to (1:M data, several rows per
    /// person): `k` then counts distinct persons, and rows-k is `k_rows`. The column may be
    /// an identifier (read to count persons, then dropped, or published as a per-release
    /// pseudonym with `pseudonym = true`) or insensitive (published as it is).
    pub person: Option<String>,
    /// With `person`: every class has at least this many rows too (default: none beyond
    /// what k persons imply, i.e. k rows).
    pub k_rows: Option<u64>,
    /// With `person` (or `person_id`) an identifier: publish a per-release keyed pseudonym of
    /// it in its place instead of dropping it.
    #[serde(default)]
    pub pseudonym: bool,
    /// The older form of `person`: k counts rows, and `k_persons` persons of `person_id`.
    pub k_persons: Option<u64>,
    /// The column identifying the person a row belongs to (for `k_persons`).
    pub person_id: Option<String>,
    /// k-map against `[population]`: every class matches at least this many population rows.
    pub k_map: Option<u64>,
    /// δ-presence against `[population]`: `{ min, max }` bounds on |E| / F_E.
    pub delta_presence: Option<crate::policy::DeltaPresence>,
    /// Post-analytics: the highest prosecutor risk allowed.
    pub max_prosecutor_risk: Option<f64>,
    /// Post-analytics: the highest average prosecutor risk allowed.
    pub max_average_risk: Option<f64>,
    /// Post-analytics: the highest marketer risk allowed.
    pub max_marketer_risk: Option<f64>,
    /// Post-analytics: the highest journalist risk against `[population]` allowed.
    pub max_journalist_risk: Option<f64>,
    /// Post-analytics: the highest leakage allowed, per attribute.
    #[serde(default)]
    pub max_leakage: std::collections::BTreeMap<String, f64>,
    /// Post-analytics: the largest share of the published rows one column not a
    /// quasi-identifier may make unique with the quasi-identifiers.
    pub max_unique_share: Option<f64>,
    /// Cloaking ([`super::cloaking`]): the latitude column.
    pub latitude: Option<String>,
    /// Cloaking: the longitude column.
    pub longitude: Option<String>,
    /// Cloaking: the time column.
    pub time: Option<String>,
    /// Cloaking: the largest acceptable cell side, metres.
    pub max_cell_side: Option<f64>,
    /// Cloaking: the finest quadtree level.
    pub max_level: Option<u8>,
    /// Cloaking: the base window (`"15m"`).
    pub window: Option<String>,
    /// Cloaking: the longest window, the base window doubled.
    pub max_window: Option<String>,
    /// Cloaking: `quadtree` (default) or `adaptive`.
    pub cells: Option<crate::cloaking::Variant>,
    /// Cloaking: `value_free` (default) or `exact` boundaries of adaptive labels.
    pub labels: Option<super::LocalLabels>,
    /// Cloaking: the largest share of subjects whose release trace is unique from `points`
    /// of its labels (`{ points = 2, share = 0.5 }`).
    pub max_unicity: Option<MaxUnicity>,
}

impl PrivacySpec {
    /// The post-analytics thresholds.
    pub fn thresholds(&self) -> RiskThresholds {
        RiskThresholds {
            max_prosecutor_risk: self.max_prosecutor_risk,
            max_average_risk: self.max_average_risk,
            max_marketer_risk: self.max_marketer_risk,
            max_journalist_risk: self.max_journalist_risk,
            max_leakage: self.max_leakage.clone(),
            max_unique_share: self.max_unique_share,
        }
    }

    /// The requirements `[privacy]` sets for every sensitive attribute that does not set its
    /// own (attribute name empty).
    pub fn default_requirement(&self) -> SensitiveRequirement {
        SensitiveRequirement {
            attribute: String::new(),
            l: self.l_diversity,
            t: self.t_closeness,
            alpha: self.alpha,
            beta: self.beta_likeness,
            delta: self.delta_disclosure,
            tuple_diversity: self.tuple_diversity,
            persons: None,
        }
    }

    /// The bucketization keys.
    pub fn bucketization_keys(&self) -> BucketizationKeys {
        BucketizationKeys {
            c: self.c,
            p: self.p,
            lambda: self.lambda,
            refinement: self.refinement,
            external_factor: self.external_factor.clone(),
            dependency_threshold: self.dependency_threshold,
            marginal: self.marginal.clone(),
        }
    }
}

/// The role of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A direct identifier (name, SSN): dropped from the output.
    Identifier,
    /// A quasi-identifier: generalized with its hierarchy.
    QuasiIdentifier,
    /// A sensitive attribute: kept, protected by l-diversity / t-closeness.
    Sensitive,
    /// Kept as it is.
    Insensitive,
}

impl Role {
    /// The name used in policy files.
    pub fn name(self) -> &'static str {
        match self {
            Role::Identifier => "identifier",
            Role::QuasiIdentifier => "quasi_identifier",
            Role::Sensitive => "sensitive",
            Role::Insensitive => "insensitive",
        }
    }
}

/// `[attributes.<column>]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttributeSpec {
    /// identifier, quasi_identifier, sensitive or insensitive.
    pub role: Role,
    /// The hierarchy of a quasi-identifier.
    pub hierarchy: Option<HierarchySpec>,
    /// How local recoding publishes a quasi-identifier: `hierarchy` (default) or `set`.
    pub generalization: Option<super::Generalization>,
    /// A quasi-identifier's weight in the Loss (default 1; above 0).
    pub weight: Option<f64>,
    /// This sensitive attribute's own l-diversity (overrides `[privacy]`).
    pub l_diversity: Option<LDiversity>,
    /// This sensitive attribute's own t-closeness (overrides `[privacy]`).
    pub t_closeness: Option<TCloseness>,
    /// This sensitive attribute's own α of (α,k)-anonymity (overrides `[privacy]`).
    pub alpha: Option<f64>,
    /// This sensitive attribute's own β-likeness (overrides `[privacy]`).
    pub beta_likeness: Option<BetaLikeness>,
    /// This sensitive attribute's own δ-disclosure (overrides `[privacy]`).
    pub delta_disclosure: Option<f64>,
    /// This sensitive attribute's own tuple diversity: the least share of its range every
    /// class must span (overrides `[privacy]`).
    pub tuple_diversity: Option<f64>,
    /// The column's type when the input is CSV (`int64`, `float64`, `utf8`, `date`,
    /// `timestamp` or `bool`), instead of the type inferred from its values; for Parquet input
    /// it must match the column's type.
    #[serde(rename = "type")]
    pub data_type: Option<ColumnType>,
    /// `method = "perturbation"`: how this attribute is perturbed.
    pub perturbation: Option<PerturbationSpec>,
}

impl AttributeSpec {
    /// The requirements this attribute sets itself, under `attribute`.
    pub fn own_requirement(&self, attribute: &str) -> SensitiveRequirement {
        SensitiveRequirement {
            attribute: attribute.to_string(),
            l: self.l_diversity,
            t: self.t_closeness,
            alpha: self.alpha,
            beta: self.beta_likeness,
            delta: self.delta_disclosure,
            tuple_diversity: self.tuple_diversity,
            persons: None,
        }
    }
}

/// A hierarchy, by kind.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum HierarchySpec {
    /// Masking trailing characters; `length` defaults to the longest value in the data.
    Mask {
        /// The longest value's length in characters (the hierarchy has length + 1 levels).
        length: Option<usize>,
    },
    /// Numeric buckets: `widths` (from `origin`, default 0) or explicit `breaks` per level.
    Interval {
        /// Bucket widths per level, finest first.
        widths: Option<Vec<f64>>,
        /// Where width buckets start (0 by default).
        origin: Option<f64>,
        /// Strictly increasing breakpoints per level, finest first.
        breaks: Option<Vec<Vec<f64>>>,
        /// Values below this are coded `< bottom`.
        bottom: Option<f64>,
        /// Values at or above this are coded `>= top`.
        top: Option<f64>,
    },
    /// Calendar units per level, finest first (`day`, `week`, `month`, `quarter`, `year`,
    /// `decade`).
    Date {
        /// The units.
        units: Vec<String>,
    },
    /// A value tree: an ARX hierarchy CSV `file` (relative to the policy), or inline `rows`
    /// (leaf first, `*` last).
    Tree {
        /// The CSV file.
        file: Option<PathBuf>,
        /// Inline rows.
        rows: Option<Vec<Vec<String>>>,
    },
}

/// `[privacy] max_unicity = { points = p, share = s }`: a cloaked release whose sampled
/// subjects are unique from p points of their label trace in a share above s is refused
/// (the release's unicity, measured as if every event kept its subject's pseudonym).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct MaxUnicity {
    /// Points of a trace the adversary knows, 1 to 5.
    pub points: usize,
    /// The largest share of subjects unique from them, in [0, 1].
    pub share: f64,
}

/// `[perturbation]`, as written (checked by [`super::perturbation`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerturbationKeys {
    pub algorithm: Option<MicroAlgorithm>,
    pub aggregate: Option<Aggregate>,
    pub strata: Option<Vec<String>>,
    pub block_rows: Option<usize>,
    pub disclosure_percent: Option<f64>,
}

/// `perturbation = { kind = … }` of an attribute, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum PerturbationSpec {
    Microaggregation,
    Noise {
        level: f64,
        bounds: Option<BoundsSpec>,
    },
    CorrelatedNoise {
        level: f64,
        bounds: Option<BoundsSpec>,
    },
    MultiplicativeNoise {
        level: f64,
        bounds: Option<BoundsSpec>,
    },
    RankSwap {
        p: f64,
    },
    Pram {
        retention: Option<f64>,
        /// Invariant PRAM by default, as sdcMicro's `pram`: plain PRAM drifts the
        /// frequencies towards the matrix's stationary distribution (a rare category of
        /// 3,954 records became 11,055 in a trial); `invariant = false` opts out.
        #[serde(default = "invariant_by_default")]
        invariant: bool,
        categories: Option<Vec<String>>,
        matrix: Option<Vec<Vec<f64>>>,
    },
    Permute,
}

fn invariant_by_default() -> bool {
    true
}

/// `bounds = "observed"` or `bounds = [min, max]` of a noisy attribute, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum BoundsSpec {
    Named(String),
    Range([f64; 2]),
}
