//! Reading a policy: the parsed TOML checked and turned into a [`Policy`], the hierarchies it
//! names loaded (errors name the policy file, the attribute and, for hierarchy files, the
//! file and line).

use std::path::Path;
use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};

use super::bucketization::{self, Method};
use super::file::{HierarchySpec, PolicyFile, Role, TableFormatSpec};
use super::{
    PendingHierarchy, PersonColumn, PersonPublished, Policy, PolicyColumn, PopulationRequirement,
    PrivacyRequirements, RiskThresholds, SensitiveRequirement, SuppressionMode, policy_error,
};
use crate::generalize::{DateHierarchy, Hierarchy, IntervalHierarchy, IntervalLevel};
use crate::storage::{self, Location, StoreOptions};

/// `[input] format`, `version` and `timestamp`: how the input is read.
fn input_read(source: &str, input: &super::file::InputSpec) -> Result<crate::tables::InputRead> {
    use crate::tables::TableVersion;
    let version = match (input.version, &input.timestamp) {
        (Some(_), Some(_)) => {
            return Err(policy_error(
                source,
                "[input] version and timestamp exclude each other; give one",
            ));
        }
        (Some(v), None) if v < 0 => {
            return Err(policy_error(
                source,
                format!("[input] version is a Delta table version (0 or more), got {v}"),
            ));
        }
        (Some(v), None) => TableVersion::Version(v),
        (None, Some(t)) => TableVersion::Timestamp(t.clone()),
        (None, None) => TableVersion::Latest,
    };
    Ok(crate::tables::InputRead {
        delta: input.format == Some(TableFormatSpec::Delta),
        version,
    })
}

impl Policy {
    pub(super) fn from_parsed(
        source: &str,
        directory: &Location,
        file: PolicyFile,
    ) -> Result<Self> {
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
        if privacy.local_labels != Default::default() {
            generalization_only.push("local_labels");
        }
        if privacy.max_set_values.is_some() {
            generalization_only.push("max_set_values");
        }
        if privacy.set_fallback.is_some() {
            generalization_only.push("set_fallback");
        }
        generalization_only.extend(privacy.default_requirement().policy_keys());
        let cloaking = super::cloaking::check(&file).map_err(&err)?;
        if cloaking.is_some() {
            // a share of events
            generalization_only.retain(|key| *key != "max_suppression");
            if let Some(key) = generalization_only.first() {
                return Err(err(format!(
                    "privacy.{key} applies to method = \"generalization\", not to cloaking"
                )));
            }
        }
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
        let perturbing = privacy.method == Method::Perturbation;
        let perturbation = super::perturbation::check(
            perturbing,
            privacy.k,
            file.perturbation.as_ref(),
            &file.attributes,
        )
        .map_err(err)?;
        // the schemes that publish quasi-identifiers without generalizing them
        let other_scheme = bucketization.is_some() || perturbing;
        let mut columns = Vec::new();
        let mut sensitive = Vec::new();
        let defaults = privacy.default_requirement();
        for (column, spec) in &file.attributes {
            if spec.role != Role::QuasiIdentifier
                && (spec.generalization.is_some() || spec.weight.is_some())
            {
                return Err(err(format!(
                    "attribute '{column}' is {}: generalization and weight apply to \
                     quasi-identifiers only",
                    spec.role.name()
                )));
            }
            if let Some(weight) = spec.weight {
                super::set_labels::check_weight(column, weight).map_err(&err)?;
            }
            let mut generalization = spec.generalization.unwrap_or_default();
            let hierarchy = match (spec.role, &spec.hierarchy) {
                (Role::QuasiIdentifier, Some(h)) => {
                    Some(load_hierarchy(column, h, &resolve, &storage_options)?)
                }
                (Role::QuasiIdentifier, None) if other_scheme || cloaking.is_some() => None,
                // no hierarchy: published as sets of values (or intervals), `*` in the
                // full-domain search
                (Role::QuasiIdentifier, None) => {
                    generalization = super::Generalization::Set;
                    Some(PendingHierarchy::Ready(Arc::new(Hierarchy::set(column))))
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
            if other_scheme && own.is_constrained() {
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
                generalization,
                weight: spec.weight.unwrap_or(1.0),
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
        let person = person_column(privacy, &columns, bucketization.is_some()).map_err(&err)?;
        // before the person's own requirement joins them
        let sensitive_protects = sensitive.iter().any(SensitiveRequirement::is_constrained);
        if perturbing && person.is_some() {
            return Err(err(
                "privacy.person applies to method = \"generalization\" (and the bucketizations), \
                 not to perturbation: microaggregation groups count records"
                    .into(),
            ));
        }
        if let Some(person) = &person {
            let requirement = SensitiveRequirement {
                persons: Some(person.k_persons),
                ..SensitiveRequirement::unconstrained(person.name.clone())
            };
            requirement.validate().map_err(&err)?;
            sensitive.push(requirement);
        }
        let population_requirement = (privacy.k_map.is_some() || privacy.delta_presence.is_some())
            .then_some(PopulationRequirement {
                k_map: privacy.k_map,
                delta_presence: privacy.delta_presence,
            });
        if let Some(requirement) = &population_requirement {
            requirement.validate().map_err(&err)?;
            if other_scheme {
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
        if privacy.method == Method::Generalization {
            let k_persons = person.as_ref().map_or(0, |p| p.k_persons);
            let k_rows = person.as_ref().map_or(privacy.k, |p| p.k_rows);
            // a prosecutor risk below 1 is a class of at least two rows
            let protects = k_rows.max(k_persons) >= 2
                || sensitive_protects
                || population_requirement.is_some()
                || thresholds.max_prosecutor_risk.is_some_and(|r| r < 1.0);
            if !protects {
                return Err(err(
                    "privacy.k = 1 protects nobody: every row could be published as it is; give \
                     k = 2 or more (or another requirement: l_diversity, t_closeness, k_map, …)"
                        .into(),
                ));
            }
        }
        if thresholds.max_journalist_risk.is_some() && file.population.is_none() {
            return Err(err(
                "privacy.max_journalist_risk needs [population] path = \"…\", the population the \
                 journalist risk is measured against"
                    .into(),
            ));
        }
        // max_unique_share applies to perturbation too (its microaggregated values and strata
        // in the quasi-identifiers' place); the risks and leakage are of generalized classes
        let generalization_thresholds = RiskThresholds {
            max_unique_share: thresholds.max_unique_share.filter(|_| !perturbing),
            ..thresholds.clone()
        };
        if other_scheme && generalization_thresholds.any() {
            return Err(err(format!(
                "the post-analytics thresholds (max_prosecutor_risk, max_average_risk, \
                 max_marketer_risk, max_journalist_risk, max_leakage{}) apply to method = \
                 \"generalization\", not to {}",
                if perturbing { "" } else { ", max_unique_share" },
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
        let synthetic = super::synthetic::check(
            file.synthetic.as_ref(),
            privacy.method,
            privacy.suppression == SuppressionMode::Mask,
            person.is_some(),
            file.population.is_some(),
            columns.iter().filter(|c| c.role == Role::Sensitive).count(),
        )
        .map_err(&err)?;
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
            output: file
                .output
                .as_ref()
                .and_then(|o| o.path.as_ref())
                .map(|p| resolve(p))
                .transpose()?,
            population: file
                .population
                .as_ref()
                .map(|p| resolve(&p.path))
                .transpose()?,
            storage: storage_options,
            bad_values: file.input.bad_values.unwrap_or_default(),
            input_read: input_read(source, &file.input)?,
            input_version: None,
            output_delta: file
                .output
                .as_ref()
                .is_some_and(|o| o.format == Some(TableFormatSpec::Delta)),
            partition_by: partition_columns(file.output.as_ref(), &columns).map_err(err)?,
            hash: String::new(),
            columns,
            requirements: PrivacyRequirements {
                suppression: privacy.suppression,
                k: person.as_ref().map_or(privacy.k, |p| p.k_rows),
                max_suppression: privacy.max_suppression,
                sensitive,
                population: population_requirement,
            },
            local_labels: privacy.local_labels,
            set_labels: super::SetLabels::from_policy(
                privacy.max_set_values,
                privacy.set_fallback.as_deref(),
            )
            .map_err(&err)?,
            transformation: file.transformation,
            schema: None,
            population_table: None,
            bucketization,
            perturbation,
            marginal: privacy.marginal.clone(),
            thresholds,
            person,
            cloaking,
            synthetic,
        })
    }
}

/// The person column of `[privacy]`: `person` (k counts persons, `k_rows` rows) or the older
/// `person_id` with `k_persons` (k counts rows); checked against the columns' roles.
fn person_column(
    privacy: &super::file::PrivacySpec,
    columns: &[PolicyColumn],
    bucketization: bool,
) -> std::result::Result<Option<PersonColumn>, String> {
    let (name, k_persons, k_rows, key) = match (&privacy.person, &privacy.person_id) {
        (Some(_), Some(_)) => {
            return Err(
                "privacy.person and privacy.person_id name the person column twice: \
                 keep privacy.person (k then counts persons)"
                    .into(),
            );
        }
        (Some(person), None) => {
            if privacy.k_persons.is_some() {
                return Err(
                    "privacy.k_persons goes with privacy.person_id; with privacy.person, \
                     k counts persons and k_rows counts rows"
                        .into(),
                );
            }
            // k persons hold at least k rows, so rows-k is never below k
            let k_rows = privacy.k_rows.unwrap_or(privacy.k).max(privacy.k);
            (person, privacy.k, k_rows, "person")
        }
        (None, Some(person)) => match privacy.k_persons {
            Some(k_persons) => (person, k_persons, privacy.k, "person_id"),
            None => return Err("privacy.person_id is set without privacy.k_persons".into()),
        },
        (None, None) => {
            if privacy.k_persons.is_some() {
                return Err(
                    "privacy.k_persons needs privacy.person_id, the column identifying the person \
                     of each row (or use privacy.person, and k counts persons)"
                        .into(),
                );
            }
            if privacy.k_rows.is_some() {
                return Err(
                    "privacy.k_rows goes with privacy.person, the column identifying the \
                     person of each row; without it k counts rows"
                        .into(),
                );
            }
            if privacy.pseudonym {
                return Err(
                    "privacy.pseudonym goes with privacy.person, the column it replaces".into(),
                );
            }
            return Ok(None);
        }
    };
    if bucketization {
        return Err(format!(
            "privacy.{key} applies to method = \"generalization\", not to {}",
            privacy.method.name()
        ));
    }
    let published = match columns.iter().find(|c| &c.name == name) {
        None => {
            return Err(format!(
                "privacy.{key} names '{name}', which is not an attribute of the policy"
            ));
        }
        Some(c) => match (c.role, privacy.pseudonym) {
            (Role::Identifier, false) => PersonPublished::Dropped,
            (Role::Identifier, true) => PersonPublished::Pseudonym,
            (Role::Insensitive, false) => PersonPublished::AsIs,
            (Role::Insensitive, true) => {
                return Err(format!(
                    "privacy.pseudonym replaces the person column '{name}', but it is insensitive \
                     (published as it is): make it role = \"identifier\""
                ));
            }
            (role, _) => {
                return Err(format!(
                    "privacy.{key} '{name}' is {}: the person column is an identifier (read to \
                     count persons, then dropped or pseudonymized) or insensitive (published as \
                     it is)",
                    role.name()
                ));
            }
        },
    };
    Ok(Some(PersonColumn {
        name: name.clone(),
        k_persons,
        k_rows,
        k_counts_persons: privacy.person.is_some(),
        published,
    }))
}

/// `[output] partition_by`, checked: each column once, each an `insensitive` attribute. Its
/// values name the Delta table's partitions in the log and in the files' paths, so only a
/// column published as it is may partition: the log then holds nothing the rows do not.
fn partition_columns(
    output: Option<&super::file::OutputSpec>,
    columns: &[PolicyColumn],
) -> std::result::Result<Vec<String>, String> {
    let Some(output) = output else {
        return Ok(Vec::new());
    };
    let mut seen = std::collections::HashSet::new();
    for name in &output.partition_by {
        if !seen.insert(name) {
            return Err(format!("output.partition_by names '{name}' twice"));
        }
        match columns.iter().find(|c| &c.name == name) {
            None => {
                return Err(format!(
                    "output.partition_by names '{name}', which is not an attribute of the policy"
                ));
            }
            Some(c) if c.role != Role::Insensitive => {
                return Err(format!(
                    "output.partition_by names '{name}', which is {}: a partition column is \
                     insensitive (published as it is, e.g. the period of a series), since its \
                     values name the table's partitions",
                    c.role.name()
                ));
            }
            Some(_) => {}
        }
    }
    Ok(output.partition_by.clone())
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
pub(super) fn line_of(text: &str, offset: usize) -> usize {
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

#[cfg(test)]
mod tests {
    use super::super::Policy;
    use crate::perturb::release::{Pram, Transformation};

    fn read(privacy: &str, attributes: &str) -> Result<Policy, String> {
        let population = if privacy.contains("k_map") {
            "[population]\npath = \"pop.csv\"\n"
        } else {
            ""
        };
        let text = format!(
            "[input]\npath = \"t.csv\"\n{population}[privacy]\n{privacy}\n[attributes]\n\
             {attributes}"
        );
        Policy::from_toml("test.toml", std::path::Path::new("."), &text).map_err(|e| e.to_string())
    }

    const GENERALIZED: &str = "pid = { role = \"identifier\" }\n\
        zip = { role = \"quasi_identifier\", hierarchy = { kind = \"mask\", length = 5 } }\n\
        disease = { role = \"sensitive\" }\n";

    /// k = 1 publishes every row as it may be: refused when the policy is read, naming the
    /// key, unless another requirement protects the release (then k = 1 only says that no
    /// class size is asked for).
    #[test]
    fn k_of_one_is_refused_unless_another_requirement_protects() {
        for privacy in [
            "k = 1",
            "k = 1\nmax_suppression = 0.1",
            "k = 1\nperson = \"pid\"",
            "k = 1\nperson_id = \"pid\"\nk_persons = 1",
            "k = 1\nmax_average_risk = 0.5",
        ] {
            let error = read(privacy, GENERALIZED).expect_err(privacy);
            assert!(
                error.contains("privacy.k = 1 protects nobody"),
                "{privacy}: {error}"
            );
        }
        for privacy in [
            "k = 2",
            "k = 1\nl_diversity = { kind = \"distinct\", l = 2 }",
            "k = 1\nk_map = 3",
            "k = 1\nperson = \"pid\"\nk_rows = 2",
            "k = 1\nperson_id = \"pid\"\nk_persons = 2",
            "k = 1\nmax_prosecutor_risk = 0.5",
        ] {
            read(privacy, GENERALIZED).unwrap_or_else(|e| panic!("{privacy}: {e}"));
        }
    }

    const NUMBERS: &str = "income = { role = \"quasi_identifier\", perturbation = { kind = \
        \"microaggregation\" } }\n";
    const NOISE: &str = "income = { role = \"quasi_identifier\", perturbation = { kind = \"noise\", level = 0.1 } }\n";

    /// Microaggregation in groups of one publishes every value: k = 1 refused; noise alone is
    /// not protected by k, so its k is not a requirement (and not reported as met).
    #[test]
    fn microaggregation_refuses_k_of_one() {
        let without_population = |privacy: &str, attributes: &str| {
            let text = format!(
                "[input]\npath = \"t.csv\"\n[privacy]\nmethod = \"perturbation\"\n{privacy}\n\
                 [attributes]\n{attributes}"
            );
            Policy::from_toml("test.toml", std::path::Path::new("."), &text)
                .map_err(|e| e.to_string())
        };
        let error = without_population("k = 1", NUMBERS).unwrap_err();
        assert!(error.contains("privacy.k = 1 protects nobody"), "{error}");
        without_population("k = 2", NUMBERS).unwrap();
        without_population("k = 1", NOISE).unwrap();
    }

    /// PRAM is invariant unless the policy says otherwise (sdcMicro's default).
    #[test]
    fn pram_is_invariant_by_default() {
        let invariant = |spec: &str| {
            let attributes = format!(
                "c = {{ role = \"quasi_identifier\", perturbation = {{ kind = \"pram\", {spec} }} }}\n"
            );
            let text = format!(
                "[input]\npath = \"t.csv\"\n[privacy]\nmethod = \"perturbation\"\nk = 2\n\
                 [attributes]\n{attributes}"
            );
            let policy = Policy::from_toml("test.toml", std::path::Path::new("."), &text).unwrap();
            match &policy.perturbation().unwrap().attributes[0].1 {
                Transformation::Pram(Pram::Retention { invariant, .. }) => *invariant,
                other => panic!("{other:?}"),
            }
        };
        assert!(invariant("retention = 0.8"));
        assert!(!invariant("retention = 0.8, invariant = false"));
    }

    fn cloaking(extra: &str, method: &str) -> Result<Policy, String> {
        let text = format!(
            "[input]\npath = \"t.csv\"\n[privacy]\nmethod = \"{method}\"\nk = 2\n{extra}\n\
             person = \"d\"\nlatitude = \"lat\"\nlongitude = \"lon\"\ntime = \"ts\"\n\
             max_cell_side = 3000\nwindow = \"15m\"\n[attributes]\nd = {{ role = \"identifier\" }}\n\
             lat = {{ role = \"quasi_identifier\" }}\nlon = {{ role = \"quasi_identifier\" }}\n\
             ts = {{ role = \"quasi_identifier\" }}\n"
        );
        Policy::from_toml("test.toml", std::path::Path::new("."), &text).map_err(|e| e.to_string())
    }

    #[test]
    fn max_unicity_is_checked_when_read() {
        let policy = cloaking("max_unicity = { points = 2, share = 0.5 }", "cloaking").unwrap();
        let limit = policy.cloaking().unwrap().max_unicity.unwrap();
        assert_eq!((limit.points, limit.share), (2, 0.5));
        for (extra, says) in [
            ("max_unicity = { points = 0, share = 0.5 }", "1 to 5, got 0"),
            ("max_unicity = { points = 6, share = 0.5 }", "1 to 5, got 6"),
            (
                "max_unicity = { points = 2, share = 1.5 }",
                "between 0 and 1, got 1.5",
            ),
        ] {
            let error = cloaking(extra, "cloaking").unwrap_err();
            assert!(error.contains(says), "{extra}: {error}");
        }
    }
}
