//! The profile's figures: for each, its stable key, its label and its one-line description.
//! The text and HTML reports, the `anonymity_profile` table function and the release report
//! of `anon apply` and `anon anonymize` take them from here and from nowhere else, so a figure
//! is named the same everywhere.
//!
//! A figure's key is its column in the table function (`<s>_<key>` for the figures of a
//! sensitive attribute s). A key ending in `*` names a family of columns, the `*` standing
//! for what varies (a class-size range, a threshold, m values ruled out, rows or classes).
//! A figure the table function leaves out is keyed by its JSON key. A `{}` in a label or a
//! description is filled by [`Figure::label_with`] and [`Figure::description_with`].

use std::fmt::{Display, Write};

/// One figure of the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figure {
    /// The stable key (see the module documentation).
    pub key: &'static str,
    /// How the reports name it.
    pub label: &'static str,
    /// What it is, in one line.
    pub description: &'static str,
}

impl Figure {
    /// The column of a family (`classes_size_*`) for what varies (`1`: `classes_size_1`).
    pub fn column(&self, varying: impl Display) -> String {
        format!("{}{varying}", self.key.trim_end_matches('*'))
    }

    /// The label with its `{}` filled in order.
    pub fn label_with(&self, parameters: &[&dyn Display]) -> String {
        fill(self.label, parameters)
    }

    /// The description with its `{}` filled in order.
    pub fn description_with(&self, parameters: &[&dyn Display]) -> String {
        fill(self.description, parameters)
    }
}

/// `template` with each `{}` replaced by the next parameter; a `{}` left without one stays,
/// visibly, rather than failing a report.
fn fill(template: &str, parameters: &[&dyn Display]) -> String {
    let mut out = String::with_capacity(template.len() + 8 * parameters.len());
    let mut parameters = parameters.iter();
    let mut rest = template;
    while let Some((before, after)) = rest.split_once("{}") {
        out.push_str(before);
        match parameters.next() {
            Some(p) => {
                let _ = write!(out, "{p}");
            }
            None => out.push_str("{}"),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Defines one constant per figure and, for the tests, the list of them all: one row per
/// figure, so a figure cannot be left out of the list.
macro_rules! figures {
    ($($name:ident: $key:literal, $label:literal, $description:literal;)*) => {
        $(
            pub const $name: Figure = Figure {
                key: $key,
                label: $label,
                description: $description,
            };
        )*
        /// Every figure, in report order.
        #[cfg(test)]
        pub(crate) const ALL: &[Figure] = &[$($name),*];
    };
}

figures! {
    // the table
    INPUT: "input", "input", "the profiled table (path or table name)";
    ROWS: "rows", "rows", "rows of the input (n)";
    // anonymity
    K: "k", "k (rows)",
        "rows of the smallest class: every row shares its QI values with k-1 others";
    K_PERSONS: "k_persons", "k (persons)",
        "distinct persons of the smallest class (rows overstate k when persons repeat)";
    CLASSES: "classes", "equivalence classes",
        "distinct combinations of the quasi-identifier values";
    SAMPLE_UNIQUES: "sample_uniques", "sample uniques", "rows alone in their class";
    CLASSES_SIZE: "classes_size_*", "classes of size {}", "classes of each size";
    ROWS_SIZE: "rows_size_*", "rows in classes of size {}", "rows in classes of each size";
    // a sensitive attribute's diversity and closeness
    L_DISTINCT: "l_distinct", "l (distinct)", "fewest distinct sensitive values in a class";
    L_ENTROPY: "l_entropy", "l (entropy)",
        "smallest exp(entropy) of a class's sensitive values";
    L_RECURSIVE: "l_recursive", "l (recursive, c = {})",
        "smallest recursive (c,l)-diversity: the top value is not too frequent";
    T_EQUAL: "t_equal", "t (equal distance)",
        "largest distance of a class's distribution from the table's";
    T_ORDERED: "t_ordered", "t (ordered distance)",
        "the same, with values far apart counting more";
    ALPHA: "alpha", "alpha",
        "largest share of one sensitive value in a class ((alpha,k)-anonymity)";
    BETA: "beta", "beta (basic)",
        "largest relative gain in a value's frequency inside a class (beta-likeness)";
    BETA_ENHANCED: "beta_enhanced", "beta (enhanced)",
        "smallest beta meeting enhanced beta-likeness";
    DELTA: "delta", "delta", "largest |ln(p_class/p_table)| over values in a class";
    DELTA_CLASSES_MISSING_VALUES: "delta_classes_missing_values", "classes lacking a value",
        "classes lacking some value of the table: delta over all values is infinite for them";
    TUPLE_DIVERSITY: "tuple_diversity", "tuple diversity",
        "narrowest range of values in a class, as a share of the table's range";
    // a sensitive attribute's attacks: `*` is `rows` or `classes` (and m first)
    HOMOGENEOUS: "homogeneous_*", "homogeneous rows",
        "rows in classes of one sensitive value, NULLs as copies of it: the class gives it \
         away (homogeneity attack)";
    BACKGROUND: "background_*", "rows certain, {} {} ruled out",
        "rows in classes of at most {} values: known to one who rules out {} {} (background \
         knowledge)";
    // re-identification risk
    PROSECUTOR_RISK_MAX: "prosecutor_risk_max", "prosecutor risk, max",
        "1/k: the risk of the most exposed record, attacker knows it is in the data";
    PROSECUTOR_RISK_AVERAGE: "prosecutor_risk_average", "prosecutor risk, average",
        "mean over records of 1/(class size)";
    MARKETER_RISK: "marketer_risk", "marketer risk",
        "expected share of records re-identified when all are matched at once";
    RISK_OVER: "rows_risk_over_*", "records with risk > {}",
        "records above a common acceptance threshold";
    POPULATION_ROWS: "population_rows", "population",
        "rows of the population the risk is computed against";
    K_MAP: "k_map", "k-map", "population rows matching the least common class of the sample";
    JOURNALIST_RISK: "journalist_risk", "journalist risk",
        "1/(smallest matching population count): attacker does not know who is sampled";
    POPULATION_MARKETER_RISK: "population_marketer_risk", "marketer risk (population)",
        "expected share of sample records re-identified against the population";
    CLASSES_NOT_COVERED: "classes_not_covered", "classes not covered",
        "classes with fewer population rows than sample rows";
    JOURNALIST_RISK_OVER: "rows_journalist_risk_over_*", "records with journalist risk > {}",
        "records above a common acceptance threshold against the population";
    // leakage
    LEAKAGE: "leakage", "leakage ranking", "normalized entropy leakage ΔS/S0, highest first";
    LEAKAGE_QUASI_IDENTIFIERS: "leakage_quasi_identifiers", "all quasi-identifiers together",
        "leakage of the classes";
    // utility
    SUPPRESSED_ROWS: "suppressed_rows", "suppressed rows", "rows whose quasi-identifiers are all *";
    NCP: "ncp", "NCP",
        "normalized certainty penalty: mean spread of the original values in a class";
    LOSS: "loss_metric", "loss",
        "mean cost per cell: 0 unchanged, 1 fully generalized (hierarchies where given)";
    DISCERNIBILITY: "discernibility", "discernibility",
        "sum of squared class sizes (suppressed rows cost n each)";
    AECS: "aecs", "AECS", "average class size relative to k (1 is ideal)";
    CLASSIFICATION_METRIC: "classification_metric", "classification metric",
        "share of rows not in their class's majority sensitive value";
    MODIFICATION_RATE: "modification_rate", "modification rate",
        "share of quasi-identifier cells changed";
    WHD_UNIFORM: "whd_uniform", "WHD (uniform weights)",
        "weighted hierarchical distance: levels climbed, each level alike";
    WHD_BETA1: "whd_beta1", "WHD (beta = 1 weights)",
        "the same, climbing near the leaves costing less";
    MONOTONE_ENTROPY_LOSS: "monotone_entropy_loss", "monotone entropy loss",
        "bits of uncertainty added per cell (Gionis & Tassa)";
    MUTUAL_INFORMATION_LOSS: "mutual_information_loss", "mutual-information loss",
        "bits lost per cell about the original value";
    PRIVATE_MUTUAL_INFORMATION: "private_mutual_information_utility",
        "private mutual information",
        "bits per cell the QIs still tell about the sensitive attribute";
    QUERY_MEAN_RELATIVE_ERROR: "query_mean_relative_error", "query error (mean)",
        "mean relative error of {} random COUNT(*) range queries (seed {})";
    QUERY_MEDIAN_RELATIVE_ERROR: "query_median_relative_error", "query error (median)",
        "median of the same";
    // relink by position
    RELINKED: "relinked", "rows re-linked by position",
        "rows whose kept columns equal the other release's row at the same position: joined \
         row by row, the two releases give each such person the finer generalization of each \
         quasi-identifier";
    RELINK_CHANCE: "expected_by_chance", "expected by chance",
        "the same count if the two releases' rows were in unrelated orders";
    // the fingerprint-correlation attack
    LINKED_ATTRIBUTES: "linked_attributes", "linked attributes",
        "assumed determined by the linking value, not refuted";
    PARTIALLY_PINNED: "partially_pinned", "records partially pinned",
        "some attribute besides the linking one has one possible value";
    FULLY_PINNED: "fully_pinned", "records fully pinned",
        "every attribute besides the linking one has one possible value";
    PINNED_ON: "pinned_per_attribute", "pinned on {}", "records";
}

/// The figure of a column of the table function, once the `<s>_` of a sensitive attribute's
/// columns is taken off: the figure keyed by the name, else the family it belongs to.
#[cfg(test)]
pub(crate) fn of_column(column: &str) -> Option<&'static Figure> {
    ALL.iter().find(|f| f.key == column).or_else(|| {
        ALL.iter().find(|f| {
            f.key
                .strip_suffix('*')
                .is_some_and(|stem| column.len() > stem.len() && column.starts_with(stem))
        })
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn keys_are_unique_and_families_end_in_a_star() {
        let mut seen = HashSet::new();
        for f in ALL {
            assert!(seen.insert(f.key), "key {} twice", f.key);
            assert!(!f.key.trim_end_matches('*').contains('*'), "{}", f.key);
            assert!(
                !f.label.is_empty() && !f.description.is_empty(),
                "{}",
                f.key
            );
        }
    }

    #[test]
    fn fills_parameters_in_order() {
        assert_eq!(L_RECURSIVE.label_with(&[&2.0]), "l (recursive, c = 2)");
        assert_eq!(
            BACKGROUND.label_with(&[&1, &"value"]),
            "rows certain, 1 value ruled out"
        );
        // a missing parameter shows, it does not fail
        assert_eq!(RISK_OVER.label_with(&[]), "records with risk > {}");
        assert_eq!(CLASSES_SIZE.column("3_4"), "classes_size_3_4");
    }

    #[test]
    fn columns_resolve_to_their_figure() {
        assert_eq!(of_column("k"), Some(&K));
        assert_eq!(of_column("k_persons"), Some(&K_PERSONS));
        assert_eq!(of_column("rows_size_10_plus"), Some(&ROWS_SIZE));
        assert_eq!(of_column("background_2_classes"), Some(&BACKGROUND));
        assert_eq!(of_column("rows_size_"), None);
        assert_eq!(of_column("nothing"), None);
    }
}
