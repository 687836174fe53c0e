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

pub mod bucketization;
pub mod file;
pub mod requirements;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use crate::generalize::{DateHierarchy, Hierarchy, IntervalHierarchy, IntervalLevel};
use crate::release::Release;
use crate::storage::{self, Location, StoreOptions};
use crate::tables::{BadValues, ColumnType, CsvOptions, TableFormat};

pub use bucketization::{Bucketization, Method};
pub use file::{HierarchySpec, PolicyFile, Role};
pub use requirements::{
    AttributeLeakage, BetaLikeness, Bound, DeltaPresence, Direction, LDiversity, LDiversityKind,
    Measure, PopulationAchieved, PopulationRequirement, PostAnalytics, PrivacyRequirements,
    RELATIVE_TOLERANCE, RiskThresholds, SensitiveAchieved, SensitiveRequirement, SuppressionMode,
    TCloseness, TClosenessKind,
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
    columns: Vec<PolicyColumn>,
    requirements: PrivacyRequirements,
    suppression: SuppressionMode,
    transformation: Option<BTreeMap<String, usize>>,
    schema: Option<SchemaRef>,
    /// `<name>_population` once registered (population requirements only)
    population_table: Option<String>,
    bucketization: Option<Bucketization>,
    marginal: Option<Vec<String>>,
    thresholds: RiskThresholds,
}

fn policy_error(source: &str, message: impl std::fmt::Display) -> DataFusionError {
    DataFusionError::Plan(format!("policy {source}: {message}"))
}

impl Policy {
    /// Reads and checks a policy file, loading the hierarchy files it names (relative to the
    /// policy's directory).
    /// The file may be a URL (`s3://bucket/policy.toml`), read with the environment's
    /// credentials; its relative paths are then relative to its prefix.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let location = Location::parse(&path.as_ref().to_string_lossy())?;
        let text = storage::read_text_blocking(&location, &StoreOptions::default())
            .map_err(|e| DataFusionError::Plan(format!("cannot read policy {}", e.message())))?;
        Self::from_toml_at(&location.to_string(), &location.parent(), &text)
    }

    /// A policy from TOML text; `source` names it in errors and `directory` anchors its
    /// relative paths.
    pub fn from_toml(source: &str, directory: &Path, text: &str) -> Result<Self> {
        Self::from_toml_at(source, &Location::Local(directory.to_path_buf()), text)
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
        Self::from_parsed(source, directory, file)
    }

    fn from_parsed(source: &str, directory: &Location, file: PolicyFile) -> Result<Self> {
        let err = |message: String| policy_error(source, message);
        let storage_options = file.storage.clone().unwrap_or_default();
        let resolve = |p: &Path| directory.join(&p.to_string_lossy());
        let input = resolve(&file.input.path)?;
        let name = match &file.name {
            Some(name) if !name.trim().is_empty() => name.trim().to_string(),
            Some(_) => return Err(err("name must not be empty".into())),
            None => default_table_name(&input),
        };
        let privacy = &file.privacy;
        if privacy.k == 0 {
            return Err(err("privacy.k must be at least 1".into()));
        }
        if !(0.0..=1.0).contains(&privacy.max_suppression) {
            return Err(err(format!(
                "privacy.max_suppression is a share of rows between 0 and 1, got {}",
                privacy.max_suppression
            )));
        }
        let mut generalization_only = Vec::new();
        if privacy.max_suppression != 0.0 {
            generalization_only.push("max_suppression");
        }
        if privacy.suppression != SuppressionMode::default() {
            generalization_only.push("suppression");
        }
        generalization_only.extend(privacy.default_requirement().policy_keys());
        if file.transformation.is_some() && privacy.method != Method::Generalization {
            return Err(err(format!(
                "[transformation] applies to method = \"generalization\", not to {}",
                privacy.method.name()
            )));
        }
        let bucketization = bucketization::check(
            privacy.method,
            &privacy.bucketization_keys(),
            privacy.k,
            &generalization_only,
        )
        .map_err(err)?;
        let mut columns = Vec::new();
        let mut sensitive = Vec::new();
        let defaults = privacy.default_requirement();
        for (column, spec) in &file.attributes {
            let hierarchy = match (spec.role, &spec.hierarchy) {
                (Role::QuasiIdentifier, Some(h)) => {
                    Some(load_hierarchy(column, h, &resolve, &storage_options)?)
                }
                (Role::QuasiIdentifier, None) if bucketization.is_some() => None,
                (Role::QuasiIdentifier, None) => {
                    return Err(err(format!(
                        "quasi-identifier '{column}' needs a hierarchy \
                         (hierarchy = {{ kind = \"mask\" | \"interval\" | \"date\" | \"tree\", ... }})"
                    )));
                }
                (role, Some(_)) => {
                    return Err(err(format!(
                        "attribute '{column}' is {} but has a hierarchy; only quasi-identifiers are generalized",
                        role.name()
                    )));
                }
                (_, None) => None,
            };
            let own = spec.own_requirement(column);
            if spec.role != Role::Sensitive && own.is_constrained() {
                return Err(err(format!(
                    "attribute '{column}' is {}: {} apply to sensitive attributes only",
                    spec.role.name(),
                    own.policy_keys().join(", ")
                )));
            }
            if bucketization.is_some() && own.is_constrained() {
                return Err(err(format!(
                    "attribute '{column}': {} apply to method = \"generalization\", not to {}",
                    own.policy_keys().join(", "),
                    privacy.method.name()
                )));
            }
            if bucketization.is_some() && spec.role == Role::Insensitive {
                return Err(err(format!(
                    "attribute '{column}' is insensitive, but {} publishes only quasi-identifiers \
                     (in the generalized table) and sensitive attributes (in the sensitive table): \
                     make it an identifier (not published), a quasi-identifier or sensitive",
                    privacy.method.name()
                )));
            }
            if spec.role == Role::Sensitive {
                let requirement = own.or(&defaults);
                requirement.validate().map_err(&err)?;
                sensitive.push(requirement);
            }
            columns.push(PolicyColumn {
                name: column.clone(),
                role: spec.role,
                data_type: spec.data_type,
                hierarchy,
            });
        }
        if !columns.iter().any(|c| c.role == Role::QuasiIdentifier) {
            return Err(err(
                "no quasi-identifier: give at least one attribute role = \"quasi_identifier\" with a hierarchy"
                    .into(),
            ));
        }
        if bucketization.is_some() && sensitive.is_empty() {
            return Err(err(format!(
                "{} needs at least one sensitive attribute (role = \"sensitive\")",
                privacy.method.name()
            )));
        }
        if let Some(marginal) = &privacy.marginal {
            for name in marginal {
                if !columns
                    .iter()
                    .any(|c| &c.name == name && c.role == Role::QuasiIdentifier)
                {
                    return Err(err(format!(
                        "privacy.marginal names '{name}', which is not a quasi-identifier"
                    )));
                }
            }
            if marginal.is_empty() {
                return Err(err(
                    "privacy.marginal must name at least one quasi-identifier".into(),
                ));
            }
        }
        if sensitive.is_empty() && defaults.is_constrained() {
            return Err(err(format!(
                "privacy.{} need a sensitive attribute (role = \"sensitive\")",
                defaults.policy_keys().join(", privacy.")
            )));
        }
        match (privacy.k_persons, &privacy.person_id) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(err(
                    "privacy.k_persons needs privacy.person_id, the column identifying the person \
                     of each row"
                        .into(),
                ));
            }
            (None, Some(_)) => {
                return Err(err(
                    "privacy.person_id is set without privacy.k_persons".into()
                ));
            }
            (Some(k_persons), Some(person)) => {
                if bucketization.is_some() {
                    return Err(err(format!(
                        "privacy.k_persons applies to method = \"generalization\", not to {}",
                        privacy.method.name()
                    )));
                }
                match columns.iter().find(|c| &c.name == person) {
                    None => {
                        return Err(err(format!(
                            "privacy.person_id names '{person}', which is not an attribute of the policy"
                        )));
                    }
                    Some(c) if c.role != Role::Insensitive => {
                        return Err(err(format!(
                            "privacy.person_id '{person}' is {}: persons are counted on the \
                             published table, so the person id must be published as it is \
                             (role = \"insensitive\"; publish a pseudonym, never a real identifier)",
                            c.role.name()
                        )));
                    }
                    Some(_) => {}
                }
                let requirement = SensitiveRequirement {
                    persons: Some(k_persons),
                    ..SensitiveRequirement::unconstrained(person.clone())
                };
                requirement.validate().map_err(&err)?;
                sensitive.push(requirement);
            }
        }
        let population_requirement = (privacy.k_map.is_some() || privacy.delta_presence.is_some())
            .then_some(PopulationRequirement {
                k_map: privacy.k_map,
                delta_presence: privacy.delta_presence,
            });
        if let Some(requirement) = &population_requirement {
            requirement.validate().map_err(&err)?;
            if bucketization.is_some() {
                return Err(err(format!(
                    "privacy.{} apply to method = \"generalization\", not to {}",
                    requirement.policy_keys().join(", privacy."),
                    privacy.method.name()
                )));
            }
            if file.population.is_none() {
                return Err(err(format!(
                    "privacy.{} need [population] path = \"…\", the table the input was sampled from",
                    requirement.policy_keys().join(" and privacy.")
                )));
            }
        }
        let thresholds = privacy.thresholds();
        thresholds.validate().map_err(&err)?;
        if thresholds.max_journalist_risk.is_some() && file.population.is_none() {
            return Err(err(
                "privacy.max_journalist_risk needs [population] path = \"…\", the population the \
                 journalist risk is measured against"
                    .into(),
            ));
        }
        if bucketization.is_some() && thresholds.any() {
            return Err(err(format!(
                "the post-analytics thresholds (max_prosecutor_risk, max_average_risk, \
                 max_marketer_risk, max_journalist_risk, max_leakage) apply to method = \"generalization\", not to {}",
                privacy.method.name()
            )));
        }
        for attribute in thresholds.max_leakage.keys() {
            match columns.iter().find(|c| &c.name == attribute) {
                None => {
                    return Err(err(format!(
                        "max_leakage names '{attribute}', which is not an attribute of the policy"
                    )));
                }
                Some(c) if matches!(c.role, Role::Identifier | Role::Sensitive) => {
                    return Err(err(format!(
                        "max_leakage names '{attribute}', which is {}: leakage is measured on \
                         the published quasi-identifiers and insensitive attributes",
                        c.role.name()
                    )));
                }
                Some(_) => {}
            }
        }
        if let Some(levels) = &file.transformation {
            for (column, level) in levels {
                let Some(qi) = columns.iter().find(|c| &c.name == column) else {
                    return Err(err(format!(
                        "transformation names '{column}', which is not an attribute of the policy"
                    )));
                };
                if qi.role != Role::QuasiIdentifier {
                    return Err(err(format!(
                        "transformation names '{column}', which is {}, not a quasi-identifier",
                        qi.role.name()
                    )));
                }
                if let Some(h) = qi.hierarchy() {
                    h.check_level(*level)
                        .map_err(|e| err(e.message().to_string()))?;
                }
            }
        }
        Ok(Self {
            source: source.to_string(),
            directory: directory.clone(),
            name,
            input,
            output: file.output.as_ref().map(|o| resolve(&o.path)).transpose()?,
            population: file
                .population
                .as_ref()
                .map(|p| resolve(&p.path))
                .transpose()?,
            storage: storage_options,
            bad_values: file.input.bad_values.unwrap_or_default(),
            columns,
            requirements: PrivacyRequirements {
                k: privacy.k,
                max_suppression: privacy.max_suppression,
                sensitive,
                population: population_requirement,
            },
            suppression: privacy.suppression,
            transformation: file.transformation,
            schema: None,
            population_table: None,
            bucketization,
            marginal: privacy.marginal.clone(),
            thresholds,
        })
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

    /// The frequency set of the registered input for the search (every quasi-identifier,
    /// the constrained sensitive attributes), with the population's counts attached when the
    /// policy requires k-map or δ-presence. `progress` counts the input rows scanned.
    pub async fn frequency_set(
        &self,
        ctx: &SessionContext,
        progress: Option<Arc<crate::progress::ScanProgress>>,
    ) -> Result<crate::search::FrequencySet> {
        let mut freq = crate::search::FrequencySet::build_with_progress(
            ctx,
            self.table_name(),
            &self.quasi_identifiers(),
            &self.requirements.constrained_attributes(),
            progress,
        )
        .await
        .map_err(|e| self.locate_input_error(e))?;
        // attached whenever the policy has a population: local releases then count each
        // class's F_E, which the report's journalist and marketer risks need
        if let (Some(table), Some(location)) = (&self.population_table, &self.population) {
            let counts = crate::search::population::PopulationCounts::load(
                ctx,
                table,
                &location.to_string(),
                &freq,
            )
            .await?;
            freq.set_population(counts);
        }
        Ok(freq)
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
        self.suppression
    }

    /// The fixed transformation, if the policy has one: a level per quasi-identifier, in
    /// [`Policy::quasi_identifiers`] order (quasi-identifiers it does not name stay at 0).
    /// That order is the data's column order only after [`Policy::register`].
    pub fn transformation(&self) -> Option<Vec<usize>> {
        let levels = self.transformation.as_ref()?;
        Some(
            self.columns
                .iter()
                .filter(|c| c.role == Role::QuasiIdentifier)
                .map(|c| levels.get(&c.name).copied().unwrap_or(0))
                .collect(),
        )
    }

    /// The input's schema, once registered.
    pub fn schema(&self) -> Option<&SchemaRef> {
        self.schema.as_ref()
    }

    /// Registers the input as [`Policy::table_name`] on `ctx` (with the crate's functions,
    /// if not yet there), checks the policy against its schema and data, and registers each
    /// quasi-identifier's hierarchy under the column's name for `generalize(col, 'col',
    /// level)`. With a fixed transformation, also registers `<name>_anon`, the
    /// [`GeneralizedTable`](crate::provider::GeneralizedTable) serving the published data.
    pub async fn register(&mut self, ctx: &SessionContext) -> Result<()> {
        self.register_with(ctx, true).await?;
        if let Some(levels) = self.transformation() {
            // settled now when dropping classes changes what the kept ones are measured
            // against (drop with t, β or δ: scans of the input), so that SQL readers see what
            // `anon apply` would publish
            let table = self
                .generalized_table(ctx, Release::FullDomain(levels))
                .await?
                .settled(ctx)
                .await?;
            ctx.register_table(format!("{}_anon", self.name), Arc::new(table))?;
        }
        Ok(())
    }

    /// [`Policy::register`] without `<name>_anon` (the publishing commands build their own
    /// generalized table), optionally without the scan that checks every value of a value
    /// tree's column is a leaf — for callers that check it themselves in a scan they need
    /// anyway (the search's frequency set does). Masks sized from the data still scan. The
    /// population table of k-map and δ-presence is registered as `<name>_population`.
    pub async fn register_with(&mut self, ctx: &SessionContext, check_trees: bool) -> Result<()> {
        if crate::generalize::hierarchy_registry(ctx).is_none() {
            crate::register(ctx)?;
        }
        crate::storage::register_store(ctx, &self.input, &self.storage)?;
        if let Some(output) = &self.output {
            crate::storage::register_store(ctx, output, &self.storage)?;
        }
        crate::tables::register_location_with(
            ctx,
            &self.name,
            &self.input,
            &self.storage,
            &self.csv_options(),
        )
        .await?;
        let schema = ctx.table_provider(self.name.as_str()).await?.schema();
        self.bind_schema(&schema)?;
        if crate::tables::table_format(&self.input.datafusion_path())? != TableFormat::Csv {
            self.check_types(&schema)?;
        }
        self.check_data(ctx, check_trees).await?;
        for (column, hierarchy) in self.quasi_identifiers() {
            crate::generalize::register_hierarchy(ctx, &column, hierarchy)?;
        }
        if let Some(population) = &self.population {
            crate::storage::register_store(ctx, population, &self.storage)?;
            let table = format!("{}_population", self.name);
            crate::tables::register_location_with(
                ctx,
                &table,
                population,
                &self.storage,
                &self.csv_options(),
            )
            .await?;
            let columns = ctx.table_provider(table.as_str()).await?.schema();
            for (qi, _) in self.quasi_identifiers() {
                if columns.field_with_name(&qi).is_err() {
                    return Err(policy_error(
                        &self.source,
                        format!(
                            "quasi-identifier '{qi}' is not a column of the population {population}"
                        ),
                    ));
                }
            }
            self.population_table = Some(table);
        }
        self.schema = Some(schema);
        Ok(())
    }

    /// Orders the columns as the schema does and checks every column has a role, every
    /// attribute exists and every hierarchy fits its column's type.
    fn bind_schema(&mut self, schema: &SchemaRef) -> Result<()> {
        let err = |message: String| policy_error(&self.source, message);
        for column in &self.columns {
            if schema.field_with_name(&column.name).is_err() {
                return Err(err(format!(
                    "attribute '{}' is not a column of {} (its columns: {})",
                    column.name,
                    self.input,
                    column_list(schema)
                )));
            }
        }
        let without_role: Vec<&str> = schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|name| !self.columns.iter().any(|c| c.name == *name))
            .collect();
        if !without_role.is_empty() {
            return Err(err(format!(
                "column(s) {} of {} have no role; give each one under [attributes] \
                 (identifier, quasi_identifier, sensitive or insensitive)",
                quoted(&without_role),
                self.input
            )));
        }
        let mut ordered = Vec::with_capacity(self.columns.len());
        for field in schema.fields() {
            if let Some(i) = self.columns.iter().position(|c| c.name == *field.name()) {
                let column = self.columns.swap_remove(i);
                if let Some(h) = column.hierarchy() {
                    h.check_column(&column.name, field.data_type())
                        .map_err(|e| err(e.message().to_string()))?;
                }
                ordered.push(column);
            }
        }
        self.columns = ordered;
        let mut sensitive = std::mem::take(&mut self.requirements.sensitive);
        sensitive.sort_by_key(|s| schema.index_of(&s.attribute).unwrap_or(usize::MAX));
        self.requirements.sensitive = sensitive;
        for s in &self.requirements.sensitive {
            let data_type = schema.field_with_name(&s.attribute)?.data_type();
            if s.bounds()
                .iter()
                .any(|b| b.measure.needs_ordered_attribute())
                && !is_orderable(data_type)
            {
                return Err(err(format!(
                    "sensitive attribute '{}' has type {data_type}: ordered t-closeness needs a \
                     numeric, decimal or temporal column (use kind = \"equal\")",
                    s.attribute
                )));
            }
        }
        Ok(())
    }

    /// Input that is not CSV has its own types: an attribute's `type` must match its column's
    /// (Parquet is not converted), so that a policy written for one file does not silently
    /// mean something else for another.
    fn check_types(&self, schema: &SchemaRef) -> Result<()> {
        for column in &self.columns {
            let (Some(ty), Ok(field)) = (column.data_type, schema.field_with_name(&column.name))
            else {
                continue;
            };
            if !ty.matches(field.data_type()) {
                return Err(policy_error(
                    &self.source,
                    format!(
                        "attribute '{}' has type = \"{}\", but it is {} in {}: type converts \
                         CSV columns only (remove it, or give the column's own type)",
                        column.name,
                        ty.name(),
                        field.data_type(),
                        self.input
                    ),
                ));
            }
        }
        Ok(())
    }

    /// When a scan of the registered input failed on its data (`error`, an Arrow error) and the
    /// input is CSV, the error naming the file, the line and the column where the input no
    /// longer fits the table registered from it; otherwise `error` itself.
    pub fn locate_input_error(&self, error: DataFusionError) -> DataFusionError {
        let path = self.input.datafusion_path();
        if !matches!(error.find_root(), DataFusionError::ArrowError(..))
            || !matches!(crate::tables::table_format(&path), Ok(TableFormat::Csv))
        {
            return error;
        }
        let Some(schema) = &self.schema else {
            return error;
        };
        match crate::tables::check_csv(&path, Arc::clone(schema), &self.csv_options()) {
            Err(located) => located,
            Ok(()) => error,
        }
    }

    /// The scan [`Policy::register_with`] skips without `check_trees`: every value of a value
    /// tree's column must be a leaf, counted over the whole column. Recoding refuses a value
    /// missing from its tree by itself, but counts only the batch it met; `anon apply`
    /// registers without the check and runs it only after such a refusal, for the whole count.
    pub async fn check_tree_values(&mut self, ctx: &SessionContext) -> Result<()> {
        self.check_data(ctx, true).await
    }

    /// One scan of the quasi-identifiers: the longest value of masks sized from the data,
    /// and the distinct values of value trees (each must be a leaf).
    async fn check_data(&mut self, ctx: &SessionContext, check_trees: bool) -> Result<()> {
        let mut selects = Vec::new();
        let mut wanted = Vec::new();
        for (i, column) in self.columns.iter().enumerate() {
            let ident = quote_ident(&column.name);
            match &column.hierarchy {
                Some(PendingHierarchy::MaskFromData) => {
                    selects.push(format!("max(character_length(CAST({ident} AS VARCHAR)))"));
                    wanted.push(i);
                }
                Some(PendingHierarchy::Ready(h)) if check_trees && h.leaf_count().is_some() => {
                    selects.push(format!("array_agg(DISTINCT {ident})"));
                    wanted.push(i);
                }
                _ => {}
            }
        }
        if selects.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "SELECT {} FROM {}",
            selects.join(", "),
            quote_ident(&self.name)
        );
        let batches = ctx.sql(&sql).await?.collect().await?;
        let Some(batch) = batches.first() else {
            return Ok(());
        };
        for (slot, &i) in wanted.iter().enumerate() {
            let values = batch.column(slot);
            let column = &mut self.columns[i];
            match &column.hierarchy {
                Some(PendingHierarchy::MaskFromData) => {
                    let length = values
                        .as_primitive_opt::<datafusion::arrow::datatypes::Int32Type>()
                        .and_then(|a| a.is_valid(0).then(|| a.value(0)))
                        .unwrap_or(0)
                        .max(0) as usize;
                    let hierarchy = Hierarchy::mask(column.name.clone(), length);
                    column.hierarchy = Some(PendingHierarchy::Ready(Arc::new(hierarchy)));
                }
                Some(PendingHierarchy::Ready(h)) => {
                    let list = values.as_list::<i32>();
                    if list.is_valid(0) {
                        let distinct = list.value(0);
                        h.validate_values(&column.name, &distinct)
                            .map_err(|e| policy_error(&self.source, e.message()))?;
                    }
                }
                None => {}
            }
        }
        if let Some(levels) = &self.transformation {
            for column in &self.columns {
                if let (Some(level), Some(h)) = (levels.get(&column.name), column.hierarchy()) {
                    h.check_level(*level)
                        .map_err(|e| policy_error(&self.source, e.message()))?;
                }
            }
        }
        Ok(())
    }

    /// The [`GeneralizedTable`](crate::provider::GeneralizedTable) of the registered input
    /// under `release` (full-domain levels, one per quasi-identifier, or a local recoding),
    /// suppressing per the policy.
    pub async fn generalized_table(
        &self,
        ctx: &SessionContext,
        release: Release,
    ) -> Result<crate::provider::GeneralizedTable> {
        let inner = ctx.table_provider(self.name.as_str()).await?;
        let release_levels = release.levels().map(<[usize]>::to_vec);
        let mut generalization = self.generalization(release)?;
        // a local release's classes were judged against the population when it was built
        if let (Some(_), Some(levels)) = (&self.requirements.population, release_levels) {
            generalization.population = self.population_counts_plan(ctx, &levels).await?;
        }
        crate::provider::GeneralizedTable::try_new(&self.name, inner, generalization)
    }

    /// The population's rows per label tuple at `levels` (one per quasi-identifier),
    /// recoded with the registered hierarchies: columns
    /// [`population_key`](crate::provider::population_key)`(i)` and
    /// [`POPULATION_ROWS`](crate::provider::POPULATION_ROWS); `None` without `[population]`.
    /// The generalized table joins its classes with it (k-map, δ-presence) and publishing
    /// verifies the written classes with it.
    pub async fn population_counts_plan(
        &self,
        ctx: &SessionContext,
        levels: &[usize],
    ) -> Result<Option<datafusion::logical_expr::LogicalPlan>> {
        use crate::provider::{POPULATION_ROWS, population_key};
        let Some(table) = &self.population_table else {
            return Ok(None);
        };
        let qis = self.quasi_identifiers();
        let labels = qis
            .iter()
            .zip(levels)
            .enumerate()
            .map(|(i, ((qi, _), &level))| {
                Ok(crate::generalize::generalize_expr(
                    ctx,
                    datafusion::prelude::ident(qi),
                    qi,
                    level,
                )?
                .alias(population_key(i)))
            })
            .collect::<Result<Vec<_>>>()?;
        let keys = (0..qis.len())
            .map(|i| datafusion::prelude::ident(population_key(i)))
            .collect();
        let plan = ctx
            .table(table.as_str())
            .await?
            .select(labels)?
            .aggregate(
                keys,
                vec![datafusion::functions_aggregate::count::count_all().alias(POPULATION_ROWS)],
            )?
            .logical_plan()
            .clone();
        Ok(Some(plan))
    }

    /// What the generalized table does with each column under `release`.
    pub fn generalization(&self, release: Release) -> Result<crate::provider::Generalization> {
        use crate::provider::{ColumnTreatment, Generalization};
        let qis = self.quasi_identifiers();
        if let Some(levels) = release.levels() {
            if levels.len() != qis.len() {
                return Err(DataFusionError::Plan(format!(
                    "{} levels given for {} quasi-identifiers",
                    levels.len(),
                    qis.len()
                )));
            }
            for ((_, hierarchy), &level) in qis.iter().zip(levels) {
                hierarchy.check_level(level)?;
            }
        }
        let mut columns = Vec::with_capacity(self.columns.len());
        for column in &self.columns {
            let treatment = match column.role {
                Role::Identifier => ColumnTreatment::Drop,
                Role::QuasiIdentifier => {
                    let hierarchy = column.hierarchy().cloned().ok_or_else(|| {
                        DataFusionError::Plan(format!(
                            "the hierarchy of '{}' is sized from the data: register the policy first",
                            column.name
                        ))
                    })?;
                    ColumnTreatment::QuasiIdentifier(hierarchy)
                }
                Role::Sensitive | Role::Insensitive => ColumnTreatment::Keep,
            };
            columns.push((column.name.clone(), treatment));
        }
        Ok(Generalization {
            columns,
            release,
            requirements: self.requirements.clone(),
            suppression: self.suppression,
            population: None,
        })
    }
}

/// Builds a hierarchy from its policy description; errors name the attribute.
fn load_hierarchy(
    column: &str,
    spec: &HierarchySpec,
    resolve: &dyn Fn(&Path) -> Result<Location>,
    storage_options: &StoreOptions,
) -> Result<PendingHierarchy> {
    let in_attribute = |e: DataFusionError| {
        DataFusionError::Plan(format!("attribute '{column}': {}", e.message()))
    };
    let hierarchy = match spec {
        HierarchySpec::Mask { length: None } => return Ok(PendingHierarchy::MaskFromData),
        HierarchySpec::Mask {
            length: Some(length),
        } => Hierarchy::mask(column, *length),
        HierarchySpec::Interval {
            widths,
            origin,
            breaks,
            bottom,
            top,
        } => {
            let levels = match (widths, breaks) {
                (Some(widths), None) => widths
                    .iter()
                    .map(|&width| IntervalLevel::Width {
                        width,
                        origin: origin.unwrap_or(0.0),
                    })
                    .collect(),
                (None, Some(breaks)) if origin.is_none() => {
                    breaks.iter().cloned().map(IntervalLevel::Breaks).collect()
                }
                _ => {
                    return Err(in_attribute(DataFusionError::Plan(
                        "an interval hierarchy takes either widths (with an optional origin) or breaks"
                            .into(),
                    )));
                }
            };
            let interval = IntervalHierarchy::new(levels, *bottom, *top).map_err(in_attribute)?;
            Hierarchy::interval(column, interval)
        }
        HierarchySpec::Date { units } => {
            let date = DateHierarchy::from_names(units).map_err(in_attribute)?;
            Hierarchy::new(column, crate::generalize::HierarchyKind::Date(date))
        }
        HierarchySpec::Tree {
            file: Some(file),
            rows: None,
        } => {
            let location = resolve(file).map_err(in_attribute)?;
            let text = storage::read_text_blocking(&location, storage_options).map_err(|e| {
                in_attribute(DataFusionError::Plan(format!("hierarchy: {}", e.message())))
            })?;
            Hierarchy::tree_from_csv_str(column, &location.to_string(), &text)
                .map_err(in_attribute)?
        }
        HierarchySpec::Tree {
            file: None,
            rows: Some(rows),
        } => Hierarchy::tree_from_rows(column, rows).map_err(in_attribute)?,
        HierarchySpec::Tree { .. } => {
            return Err(in_attribute(DataFusionError::Plan(
                "a tree hierarchy takes either file (an ARX hierarchy CSV) or rows".into(),
            )));
        }
    };
    Ok(PendingHierarchy::Ready(Arc::new(hierarchy)))
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The table name a path suggests: its file stem (`adult.parquet` → `adult`), else `input`.
fn default_table_name(location: &Location) -> String {
    let name = location.file_name().unwrap_or_default();
    let stem = match name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem.to_string(),
        _ => name,
    };
    let cleaned: String = stem
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if cleaned.is_empty()
        || cleaned.contains('*')
        || cleaned.starts_with(|c: char| c.is_ascii_digit())
    {
        "input".to_string()
    } else {
        cleaned
    }
}

fn is_orderable(data_type: &DataType) -> bool {
    data_type.is_numeric()
        || data_type.is_temporal()
        || matches!(data_type, DataType::Dictionary(_, v) if is_orderable(v))
}

fn column_list(schema: &SchemaRef) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    names.join(", ")
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `name` as a SQL identifier (double-quoted, quotes doubled).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
