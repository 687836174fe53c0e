//! Policies: which columns are identifiers, quasi-identifiers (with their hierarchies),
//! sensitive or insensitive, the privacy requirements a published table must meet, and
//! optionally a fixed transformation (a level per quasi-identifier).
//!
//! A policy is read from TOML in two steps, so that every mistake is reported before any
//! data is written:
//! 1. [`Policy::from_file`] parses the file and loads the hierarchies it names (errors name
//!    the policy file, the attribute and, for hierarchy files, the file and line);
//! 2. [`Policy::register`] registers the input on a session and checks the policy against
//!    the data: every column has a role, every attribute exists, hierarchies fit the column
//!    types, value trees cover every value (counted, never quoted), levels exist.
//!
//! ```toml
//! [input]
//! path = "adult.parquet"
//!
//! [privacy]
//! k = 5
//! max_suppression = 0.02
//!
//! [attributes]
//! age = { role = "quasi_identifier", hierarchy = { kind = "interval", widths = [5, 10, 20] } }
//! sex = { role = "quasi_identifier", hierarchy = { kind = "tree", file = "sex.csv" } }
//! salary-class = { role = "sensitive", l_diversity = { l = 2 } }
//! ```

mod bind;
pub mod bucketization;
pub mod cloaking;
pub mod file;
mod local_labels;
mod parse;
mod persons;
pub mod perturbation;
mod set_labels;
mod source;
pub mod synthetic;
pub use local_labels::LocalLabels;
use parse::line_of;
pub use persons::RepeatedIdentifier;
pub use set_labels::{DEFAULT_MAX_SET_VALUES, Generalization, SetLabels};
pub use source::{PolicySource, TEXT_SOURCE};
pub mod requirements;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};

use crate::failure::prefixed;
use crate::generalize::Hierarchy;
use crate::storage::{self, Location, StoreOptions};
use crate::tables::{BadValues, ColumnType, CsvOptions};
pub use crate::text::quote_ident;

pub use crate::perturb::release::Transformation;
pub use bucketization::{Bucketization, Method};
pub use file::{HierarchySpec, PolicyFile, Role};
pub use perturbation::Perturbation;
pub use requirements::{
    AttributeLeakage, BetaLikeness, Bound, DeltaPresence, Direction, LDiversity, LDiversityKind,
    Measure, PopulationAchieved, PopulationRequirement, PostAnalytics, PrivacyRequirements,
    RELATIVE_TOLERANCE, RiskThresholds, SensitiveAchieved, SensitiveRequirement, SuppressionMode,
    TCloseness, TClosenessKind,
};
pub use requirements::{
    ColumnUniqueness, UNIQUE_SHARE_WARNING, thresholds_broken, unique_share_warnings,
};

/// A hierarchy as far as it is known before the data are seen.
#[derive(Debug, Clone)]
enum PendingHierarchy {
    Ready(Arc<Hierarchy>),
    /// A mask without `length`: the longest value of the data decides.
    MaskFromData,
}

/// One column of the policy.
#[derive(Debug, Clone)]
pub struct PolicyColumn {
    /// The column's name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// The type the policy gives the column (`type = "..."`), if any.
    pub data_type: Option<ColumnType>,
    hierarchy: Option<PendingHierarchy>,
    /// A quasi-identifier's `generalization` (sets when it has no hierarchy).
    pub generalization: Generalization,
    /// A quasi-identifier's `weight` in the Loss (1 unless set).
    pub weight: f64,
}

impl PolicyColumn {
    /// The hierarchy of a quasi-identifier (after [`Policy::register`] for masks sized from
    /// the data).
    pub fn hierarchy(&self) -> Option<&Arc<Hierarchy>> {
        match &self.hierarchy {
            Some(PendingHierarchy::Ready(h)) => Some(h),
            _ => None,
        }
    }
}

/// A parsed policy; see the module documentation.
#[derive(Debug, Clone)]
pub struct Policy {
    source: String,
    directory: Location,
    name: String,
    input: Location,
    output: Option<Location>,
    population: Option<Location>,
    storage: StoreOptions,
    bad_values: BadValues,
    /// `[input] format`, `version`, `timestamp`
    input_read: crate::tables::InputRead,
    /// The Delta version read, once registered (Delta inputs only).
    input_version: Option<i64>,
    /// `[output] format = "delta"`
    output_delta: bool,
    /// `[output] partition_by`: the Delta table's partition columns.
    partition_by: Vec<String>,
    /// The BLAKE3 hash of the policy file's text (hex).
    hash: String,
    columns: Vec<PolicyColumn>,
    requirements: PrivacyRequirements,
    local_labels: LocalLabels,
    set_labels: SetLabels,
    transformation: Option<BTreeMap<String, usize>>,
    schema: Option<SchemaRef>,
    /// `<name>_population` once registered (population requirements only)
    population_table: Option<String>,
    bucketization: Option<Bucketization>,
    perturbation: Option<Perturbation>,
    marginal: Option<Vec<String>>,
    thresholds: RiskThresholds,
    person: Option<PersonColumn>,
    cloaking: Option<cloaking::Cloaking>,
    synthetic: Option<synthetic::Synthetic>,
}

/// The column identifying the person of each row (`[privacy] person`, or `person_id` with
/// `k_persons`), and what a release publishes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PersonColumn {
    /// The column.
    pub name: String,
    /// Every class holds rows of at least this many distinct persons.
    pub k_persons: u64,
    /// Every class holds at least this many rows (with `person`: `k_rows`, never below k).
    pub k_rows: u64,
    /// Whether the policy's `k` counts persons (`person`) rather than rows (`person_id`).
    pub k_counts_persons: bool,
    /// What is published in the column's place.
    pub published: PersonPublished,
}

/// What a release publishes of the person column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PersonPublished {
    /// Nothing (an identifier): read to count persons, left out of the output.
    Dropped,
    /// A per-release keyed pseudonym ([`crate::pseudonym`]) under the column's name.
    Pseudonym,
    /// The column as it is (insensitive: the user's own pseudonym).
    AsIs,
}

fn policy_error(source: &str, message: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Plan(format!("policy {source}: {message}"))
}

/// How a policy's release is made: each has its own section of the policy and its own
/// pipeline in the jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseMethod {
    /// Recoding to the hierarchies' levels (full-domain or local), with suppression.
    Generalization,
    /// (c,k)-anonymity or (p,k)-angelization: two tables, GT and ST.
    Bucketization,
    /// Microaggregation, noise, swapping, PRAM.
    Perturbation,
    /// Location cloaking of events.
    Cloaking,
}

impl Policy {
    /// Reads and checks a policy file, loading the hierarchy files it names (relative to the
    /// policy's directory).
    /// The file may be a URL (`s3://bucket/policy.toml`), read with the environment's
    /// credentials; its relative paths are then relative to its prefix.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let location = Location::parse(&path.as_ref().to_string_lossy())?;
        let text = storage::read_text_blocking(&location, &StoreOptions::default())
            // the storage's error says "cannot read <location>: <why>" already
            .map_err(|e| prefixed("policy: ", e))?;
        Self::from_toml_at(&location.to_string(), &location.parent(), &text)
    }

    /// A policy from TOML text; `source` names it in errors and `directory` anchors its
    /// relative paths.
    pub fn from_toml(source: &str, directory: &Path, text: &str) -> Result<Self> {
        Self::from_toml_at(source, &Location::Local(directory.to_path_buf()), text)
    }

    /// A policy from a table of values given as JSON text (Python's dict): the keys and values
    /// of the TOML file, checked the same way. `source` names it in errors, which have no line
    /// to give; `directory` anchors its relative paths. Its hash is that of its TOML text.
    pub fn from_json(source: &str, directory: &Path, json: &str) -> Result<Self> {
        let value: toml::Value = serde_json::from_str(json).map_err(|e| {
            policy_error(
                source,
                format!(
                    "not a table of TOML values (strings, numbers, booleans, lists, tables): {e}"
                ),
            )
        })?;
        let text = toml::to_string(&value).map_err(|e| policy_error(source, e))?;
        let file: PolicyFile = value
            .try_into()
            .map_err(|e: toml::de::Error| policy_error(source, e.message()))?;
        let directory = Location::Local(directory.to_path_buf());
        let mut policy = Self::from_parsed(source, &directory, file)?;
        policy.hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        Ok(policy)
    }

    fn from_toml_at(source: &str, directory: &Location, text: &str) -> Result<Self> {
        let file: PolicyFile = toml::from_str(text).map_err(|e| {
            // toml's message spans several lines (with a snippet of the policy, never data)
            let message = e.message().to_string();
            match e.span().map(|span| line_of(text, span.start)) {
                Some(line) => policy_error(source, format!("line {line}: {message}")),
                None => policy_error(source, message),
            }
        })?;
        let mut policy = Self::from_parsed(source, directory, file)?;
        policy.hash = blake3::hash(text.as_bytes()).to_hex().to_string();
        Ok(policy)
    }

    /// The policy file, as named in errors.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The directory relative paths are resolved against.
    pub fn directory(&self) -> &Location {
        &self.directory
    }

    /// The table's name in SQL (the generalized table is `<name>_anon`).
    pub fn table_name(&self) -> &str {
        &self.name
    }

    /// The input: a path or a URL.
    pub fn input(&self) -> &Location {
        &self.input
    }

    /// Reads the data from `location` instead of `[input] path` (before
    /// [`Policy::register`]).
    pub fn set_input(&mut self, location: Location) {
        self.input = location;
    }

    /// How a CSV input is read: the attributes' `type`s and `[input] bad_values`.
    pub fn csv_options(&self) -> CsvOptions {
        CsvOptions {
            types: self
                .columns
                .iter()
                .filter_map(|c| Some((c.name.clone(), c.data_type?)))
                .collect(),
            bad_values: self.bad_values,
        }
    }

    /// Reads values of a CSV input that do not convert to their attribute's `type` as
    /// `bad_values` says, instead of `[input] bad_values` (before [`Policy::register`]).
    pub fn set_bad_values(&mut self, bad_values: BadValues) {
        self.bad_values = bad_values;
    }

    /// How the input is read: `[input] format`, `version`, `timestamp`.
    pub fn input_read(&self) -> &crate::tables::InputRead {
        &self.input_read
    }

    /// The version of a Delta input read by [`Policy::register`] (`None` for other formats).
    pub fn input_version(&self) -> Option<i64> {
        self.input_version
    }

    /// Whether `[output] format = "delta"`.
    pub fn output_is_delta(&self) -> bool {
        self.output_delta
    }

    /// `[output] partition_by`: the columns partitioning the Delta table the release goes
    /// into (empty: none); each an insensitive column, published as it is.
    pub fn partition_by(&self) -> &[String] {
        &self.partition_by
    }

    /// The BLAKE3 hash (hex) of the policy file's text: which policy made a release.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The default output (`[output] path`), if any.
    pub fn output(&self) -> Option<&Location> {
        self.output.as_ref()
    }

    /// The population table (`[population] path`), if any.
    pub fn population(&self) -> Option<&Location> {
        self.population.as_ref()
    }

    /// The population's table name in SQL once registered (`<name>_population`), when the
    /// policy has k-map or δ-presence requirements.
    pub fn population_table(&self) -> Option<&str> {
        self.population_table.as_deref()
    }

    /// How local recoding labels the ordered quasi-identifiers (`[privacy] local_labels`).
    pub fn local_labels(&self) -> LocalLabels {
        self.local_labels
    }

    /// How long set labels may grow (`[privacy] max_set_values`, `set_fallback`).
    pub fn set_labels(&self) -> SetLabels {
        self.set_labels
    }

    /// Per quasi-identifier (in [`Policy::quasi_identifiers`] order): whether local
    /// recoding publishes it as sets or intervals (`generalization = "set"` or no hierarchy).
    pub fn set_generalized(&self) -> Vec<bool> {
        self.generalized_columns()
            .map(|c| c.generalization == Generalization::Set)
            .collect()
    }

    /// Per quasi-identifier (in [`Policy::quasi_identifiers`] order): its `weight`.
    pub fn weights(&self) -> Vec<f64> {
        self.generalized_columns().map(|c| c.weight).collect()
    }

    /// The quasi-identifiers with a hierarchy, in column order.
    fn generalized_columns(&self) -> impl Iterator<Item = &PolicyColumn> {
        self.columns.iter().filter(|c| c.hierarchy().is_some())
    }

    /// The object-store settings of `[storage]` (endpoint, region, …; never credentials).
    pub fn storage(&self) -> &StoreOptions {
        &self.storage
    }

    /// Every column with a role: in the data's column order after [`Policy::register`].
    pub fn columns(&self) -> &[PolicyColumn] {
        &self.columns
    }

    /// The quasi-identifiers and their hierarchies, in column order.
    pub fn quasi_identifiers(&self) -> Vec<(String, Arc<Hierarchy>)> {
        self.columns
            .iter()
            .filter_map(|c| c.hierarchy().map(|h| (c.name.clone(), Arc::clone(h))))
            .collect()
    }

    /// `[synthetic]`, when given.
    pub fn synthetic(&self) -> Option<&synthetic::Synthetic> {
        self.synthetic.as_ref()
    }

    /// The release method the policy names (`[privacy] method`; generalization by default).
    pub fn release_method(&self) -> ReleaseMethod {
        if self.cloaking.is_some() {
            ReleaseMethod::Cloaking
        } else if self.perturbation.is_some() {
            ReleaseMethod::Perturbation
        } else if self.bucketization.is_some() {
            ReleaseMethod::Bucketization
        } else {
            ReleaseMethod::Generalization
        }
    }

    /// The perturbation, when `[privacy] method = "perturbation"`.
    pub fn perturbation(&self) -> Option<&Perturbation> {
        self.perturbation.as_ref()
    }

    /// The bucketization, when `[privacy] method` names one.
    pub fn bucketization(&self) -> Option<&Bucketization> {
        self.bucketization.as_ref()
    }

    /// The quasi-identifiers a bucketization publishes in GT: `[privacy] marginal`, else every
    /// quasi-identifier, in column order (after [`Policy::register`]).
    pub fn published_quasi_identifiers(&self) -> Vec<String> {
        self.columns
            .iter()
            .filter(|c| c.role == Role::QuasiIdentifier)
            .filter(|c| self.marginal.as_ref().is_none_or(|m| m.contains(&c.name)))
            .map(|c| c.name.clone())
            .collect()
    }

    /// The sensitive attributes, in column order (after [`Policy::register`]).
    pub fn sensitive_attributes(&self) -> Vec<String> {
        self.columns
            .iter()
            .filter(|c| c.role == Role::Sensitive)
            .map(|c| c.name.clone())
            .collect()
    }

    /// The person id column (`privacy.person` or `privacy.person_id`), when the policy
    /// counts persons.
    pub fn person_id(&self) -> Option<&str> {
        self.person.as_ref().map(|p| p.name.as_str())
    }

    /// The person column and what is published of it, when the policy counts persons.
    pub fn person(&self) -> Option<&PersonColumn> {
        self.person.as_ref()
    }

    /// The cloaking, when `[privacy] method = "cloaking"`.
    pub fn cloaking(&self) -> Option<&cloaking::Cloaking> {
        self.cloaking.as_ref()
    }

    /// The post-analytics thresholds of `[privacy]`.
    pub fn thresholds(&self) -> &RiskThresholds {
        &self.thresholds
    }

    /// The privacy requirements.
    pub fn requirements(&self) -> &PrivacyRequirements {
        &self.requirements
    }

    /// Whether suppressed rows are dropped or masked.
    pub fn suppression(&self) -> SuppressionMode {
        self.requirements.suppression
    }

    /// The fixed transformation, if the policy has one: a level per quasi-identifier, in
    /// [`Policy::quasi_identifiers`] order, by [`Policy::levels_by_name`]. That order is the
    /// data's column order only after [`Policy::register`].
    pub fn transformation(&self) -> Option<Vec<usize>> {
        let levels = self.transformation.as_ref()?;
        Some(self.levels_by_name(|name| levels.get(name).copied()))
    }

    /// A level per quasi-identifier, in [`Policy::quasi_identifiers`] order, from `level_of`
    /// (a level by column name): one a transformation does not name stays at 0, published as
    /// it is. The one rule of `[transformation]` and of the levels given in its place
    /// (`anon apply --levels`, Python's `levels=`); the verification then holds the release
    /// to every requirement, so a level left at 0 never passes what it should not.
    pub fn levels_by_name(&self, level_of: impl Fn(&str) -> Option<usize>) -> Vec<usize> {
        self.columns
            .iter()
            .filter(|c| c.role == Role::QuasiIdentifier)
            .map(|c| level_of(&c.name).unwrap_or(0))
            .collect()
    }

    /// The input's schema, once registered.
    pub fn schema(&self) -> Option<&SchemaRef> {
        self.schema.as_ref()
    }
}
