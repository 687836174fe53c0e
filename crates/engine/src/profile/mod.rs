//! `anon profile`: a risk and utility report of a table for a publisher to decide from.
//!
//! [`profile`] computes a [`Profile`] of a table registered on a `SessionContext`:
//! anonymity (k, l, t, α, β, δ, tuple diversity, the class-size distribution, the rows exposed
//! to the homogeneity and background-knowledge attacks), re-identification
//! risk (against the sample itself and, with a population table, k-map, journalist and marketer
//! risk), the leakage ranking of single attributes, and — given the table before anonymization —
//! utility (NCP, loss, discernibility, classification metric, WHD, entropy and
//! mutual-information losses, query accuracy). Definitions: `docs/definitions.md`; every
//! choice left open there is documented on the field and always takes the side that never
//! understates risk.
//!
//! The report is rendered as text ([`render_text`]), JSON (serde, stable keys documented in
//! docs/guide/profile.md, "JSON keys") or one self-contained HTML file ([`render_html`]), and
//! is available from SQL as the table function `anonymity_profile` ([`table_function`]).
//!
//! Cost (see BENCHMARKS.md): one `GROUP BY qi, s` aggregation per sensitive attribute (the
//! per-class figures are then computed from #classes × #values rows, not n), one
//! `GROUP BY a` per attribute of the leakage ranking, reading only that attribute's column.

mod anonymity;
mod attacks;
pub mod figures;
pub mod histogram;
mod keys;
pub(crate) mod leakage;
pub mod position;
pub mod render_html;
pub mod render_text;
mod risk;
pub mod table_function;
mod utility;

use crate::errors::{Opt, UsageError};
use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::generalize::Hierarchy;
use crate::progress::ScanProgress;

pub use attacks::{DEFAULT_BACKGROUND_VALUES, MAX_BACKGROUND_VALUES};
pub use position::Relink;
pub use table_function::{AnonymityProfileFunction, register_table_function};

/// Default `c` of recursive (c,l)-diversity.
pub const DEFAULT_RECURSIVE_C: f64 = 2.0;
/// Default number of random COUNT(*) range queries of the query-accuracy figure.
pub const DEFAULT_QUERIES: usize = 1000;
/// Default seed of the query workload.
pub const DEFAULT_SEED: u64 = 42;
/// Risk thresholds whose exceeding rows are counted.
pub const RISK_THRESHOLDS: [f64; 3] = [0.2, 0.1, 0.05];
/// Classes listed (with their values, only on request) as the riskiest.
pub const RISKY_CLASSES: usize = 20;

/// What to profile. Tables are names registered on the `SessionContext`.
#[derive(Debug, Clone)]
pub struct ProfileOptions {
    /// The table to profile (the published or candidate table).
    pub table: String,
    /// How the report names each table (e.g. its path), by registered name; a table without
    /// an entry is named by its registered name.
    pub labels: HashMap<String, String>,
    /// The quasi-identifiers (at least one).
    pub quasi_identifiers: Vec<String>,
    /// Sensitive attributes (may be empty); the first is the class label of the
    /// classification metric.
    pub sensitive: Vec<String>,
    /// A column identifying persons, for 1:M data (several rows per person).
    pub person_id: Option<String>,
    /// A population table with the same quasi-identifiers (k-map, journalist risk).
    pub population: Option<String>,
    /// The same table before anonymization (utility figures).
    pub original: Option<String>,
    /// The column matching rows of the input and the original.
    pub key: Option<String>,
    /// Match rows of the input and the original by position (without a key): refused unless
    /// the columns both keep unchanged agree row by row.
    pub by_position: bool,
    /// Another release of the same data: how many rows can be re-linked by position.
    pub relink: Option<String>,
    /// Generalization hierarchies by quasi-identifier (loss and weighted hierarchical
    /// distance).
    pub hierarchies: HashMap<String, Arc<Hierarchy>>,
    /// `c` of recursive (c,l)-diversity.
    pub recursive_c: f64,
    /// M of the background-knowledge attack: the figures are given for an adversary who can
    /// rule out m = 1..=M values of a sensitive attribute for her target (at most
    /// [`MAX_BACKGROUND_VALUES`]; 0 leaves only the homogeneity attack).
    pub background_values: usize,
    /// Number of random range queries for query accuracy.
    pub queries: usize,
    /// Seed of the query workload.
    pub seed: u64,
    /// Whether the report may show the quasi-identifier values of the riskiest classes.
    pub show_values: bool,
    /// The sensitive table of a bucketized release to attack (fingerprint correlation).
    pub fingerprint: Option<FingerprintOptions>,
    /// Counts the rows of the table its scans have read so far, for a progress report.
    pub progress: Option<Arc<ProfileProgress>>,
}

/// Rows of the profiled table read so far by [`profile`]'s scans, one counter per pass, in
/// the order they run (see [`crate::progress::watch`]); counts only, never values. The
/// leakage ranking's aggregations, which run alongside, and the later sections (population,
/// utility, relinking) are not counted.
#[derive(Debug, Default)]
pub struct ProfileProgress {
    /// The scans of the sensitive attributes' distinct values, one per attribute, run
    /// together: the rows of the furthest. Stays 0 without sensitive attributes.
    pub values: Arc<ScanProgress>,
    /// The class aggregation: every row, once.
    pub classes: Arc<ScanProgress>,
}

impl ProfileProgress {
    /// Every counter at 0.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
}

/// The fingerprint-correlation attack of the report: the sensitive table of a bucketized
/// release (registered under `sensitive_table`) and what the adversary knows.
#[derive(Debug, Clone)]
pub struct FingerprintOptions {
    /// The registered sensitive table (bucket id and sensitive attributes).
    pub sensitive_table: String,
    /// Its bucket id column.
    pub bucket_column: String,
    /// The linking attribute the adversary knows of her target.
    pub linking: String,
    /// The attributes she knows it determines (`None`: every other one).
    pub determined: Option<Vec<String>>,
}

/// The fingerprint-correlation attack on the release's sensitive table.
#[derive(Debug, Clone, Serialize)]
pub struct FingerprintAttack {
    /// The sensitive table attacked.
    pub sensitive_table: String,
    /// The attack's figures.
    #[serde(flatten)]
    pub report: crate::bucketize::AttackReport,
    /// Attributes assumed determined that the buckets contradicted (dropped).
    pub refuted: Vec<String>,
}

impl ProfileOptions {
    /// Options for `table` with these quasi-identifiers and defaults for everything else.
    pub fn new(table: impl Into<String>, quasi_identifiers: Vec<String>) -> Self {
        Self {
            table: table.into(),
            labels: HashMap::new(),
            quasi_identifiers,
            sensitive: Vec::new(),
            person_id: None,
            population: None,
            original: None,
            key: None,
            by_position: false,
            relink: None,
            hierarchies: HashMap::new(),
            recursive_c: DEFAULT_RECURSIVE_C,
            background_values: DEFAULT_BACKGROUND_VALUES,
            queries: DEFAULT_QUERIES,
            seed: DEFAULT_SEED,
            show_values: false,
            fingerprint: None,
            progress: None,
        }
    }
}

/// The report. Serialized as JSON with these field names (docs/guide/profile.md: "JSON keys").
#[derive(Debug, Clone, Serialize)]
pub struct Profile {
    /// The profiled table (path or table name).
    pub input: String,
    /// Rows of the input (n).
    pub rows: u64,
    /// The quasi-identifiers, as given.
    pub quasi_identifiers: Vec<String>,
    /// The sensitive attributes, as given.
    pub sensitive_attributes: Vec<String>,
    /// The person-id column, if given.
    pub person_id: Option<String>,
    /// Anonymity figures.
    pub anonymity: Anonymity,
    /// Re-identification risk.
    pub risk: Risk,
    /// The leakage ranking.
    pub leakage: LeakageRanking,
    /// Utility against the original table (`null` without one).
    pub utility: Option<Utility>,
    /// Rows re-linkable by position with another release (`null` without one).
    pub relink: Option<Relink>,
    /// The riskiest classes with their quasi-identifier values; `null` unless values were
    /// asked for (`--show-values`).
    pub risky_classes: Option<Vec<RiskyClass>>,
    /// The fingerprint-correlation attack on a bucketized release's sensitive table (`null`
    /// without one).
    pub fingerprint_attack: Option<FingerprintAttack>,
}

/// Anonymity of the table: the worst class for every figure.
#[derive(Debug, Clone, Serialize)]
pub struct Anonymity {
    /// Equivalence classes (groups of `GROUP BY` the quasi-identifiers; NULL is a value).
    pub classes: u64,
    /// k: rows of the smallest class.
    pub k: u64,
    /// k in persons: distinct persons of the smallest class (rows with a NULL person id count
    /// as any person of their class: they add none, and a class of NULL ids only is one
    /// person); `null` without a person id.
    pub k_persons: Option<u64>,
    /// Rows in classes of one row.
    pub sample_uniques: u64,
    /// Classes and rows by class size: 1, 2, 3–4, 5–9, 10+.
    pub class_sizes: Vec<SizeBucket>,
    /// Figures for each sensitive attribute, in the order given.
    pub sensitive: Vec<SensitiveFigures>,
}

/// Classes and rows of one class-size range.
#[derive(Debug, Clone, Serialize)]
pub struct SizeBucket {
    /// `1`, `2`, `3-4`, `5-9` or `10+`.
    pub size: String,
    /// Smallest class size of the range.
    pub min: u64,
    /// Largest class size of the range (`null`: no bound).
    pub max: Option<u64>,
    /// Classes of a size in the range.
    pub classes: u64,
    /// Rows in those classes.
    pub rows: u64,
}

/// Diversity and closeness of one sensitive attribute s: each the worst class's value.
///
/// NULLs of s: l, entropy l, recursive l, α and the homogeneity and background-knowledge
/// attacks treat them as copies of the class's most frequent value (the worst case, as the SQL
/// functions do); t, β and δ treat NULL as a category of its own (as `t_closeness`); tuple
/// diversity ignores them.
#[derive(Debug, Clone, Serialize)]
pub struct SensitiveFigures {
    /// The attribute.
    pub attribute: String,
    /// Whether s is ordered (numbers, decimals, dates, timestamps): ordered t and tuple
    /// diversity are computed.
    pub ordered: bool,
    /// Distinct values of s in the table (NULL counted as one).
    pub distinct_values: u64,
    /// Distinct l: fewest distinct non-null values in a class (all-NULL class: 1).
    pub l_distinct: u64,
    /// Entropy l: smallest exp(H_E) (natural log).
    pub l_entropy: f64,
    /// Recursive (c,l)-diversity: smallest l of a class for `recursive_c`.
    pub l_recursive: u64,
    /// The c of `l_recursive`.
    pub recursive_c: f64,
    /// t-closeness with equal ground distance: largest EMD of a class.
    pub t_equal: f64,
    /// t-closeness with ordered ground distance (`null` unless ordered).
    pub t_ordered: Option<f64>,
    /// α of (α,k)-anonymity: largest share of one value in a class.
    pub alpha: f64,
    /// Basic β-likeness: largest (p_E(v) − p_T(v))/p_T(v) over values more frequent in a
    /// class than in the table (0 if none). p_T(v) > 0 always: the table holds every class.
    pub beta: f64,
    /// Enhanced β-likeness: the smallest β for which every class satisfies
    /// (p_E − p_T)/p_T ≤ min(β, −ln p_T). `null` when no β does, because some class exceeds
    /// the −ln p_T(v) cap (see `beta_enhanced_classes_over_cap`).
    pub beta_enhanced: Option<f64>,
    /// Classes with a value whose (p_E − p_T)/p_T exceeds −ln p_T(v).
    pub beta_enhanced_classes_over_cap: u64,
    /// δ-disclosure: largest |ln(p_E(v)/p_T(v))| over the values present in the class (as
    /// docs/definitions.md).
    pub delta: f64,
    /// Classes lacking some value of the table: for them Brickell & Shmatikov's δ, taken over
    /// every value of the table, is infinite.
    pub delta_classes_missing_values: u64,
    /// Tuple diversity: smallest (max_E − min_E)/(max_T − min_T) of s in a class (0 when the
    /// table has a single value or a class only NULLs); `null` unless ordered.
    pub tuple_diversity: Option<f64>,
    /// The homogeneity attack: the classes whose rows all have one value of s, and their rows.
    /// An adversary who knows only her target's quasi-identifiers, hence its class, learns
    /// its value (seed 004 §3.2, "Homogeneity attack"; Machanavajjhala et al. 2007). A class
    /// whose only non-NULL value is v, with NULLs, counts (the NULLs may hide copies of v), and
    /// so does an all-NULL class: the classes whose own distinct l is 1.
    pub homogeneity: Homogeneity,
    /// The background-knowledge attack, for m = 1..=M values ruled out (M =
    /// `ProfileOptions::background_values`, in increasing m). See [`BackgroundKnowledge`].
    pub background_knowledge: Vec<BackgroundKnowledge>,
}

/// The classes (and their rows) exposed to the homogeneity attack.
#[derive(Debug, Clone, Serialize)]
pub struct Homogeneity {
    /// Classes with one distinct value of s (NULLs as copies of it; all-NULL included).
    pub classes: u64,
    /// Their rows: rows whose value of s follows from their class alone.
    pub rows: u64,
}

/// The background-knowledge attack (seed 004 §3.2, "Background knowledge attack"; instance-level
/// background knowledge, §3.1: Alice knows which values Bob does not have): an adversary knows
/// her target's class and can rule out `ruled_out` = m values of s for it.
///
/// A class with d distinct values of s (NULLs as copies of the most frequent value, an
/// all-NULL class d = 1: the class's l, the worst case) lets her learn the value of each of
/// its rows exactly when d ≤ m + 1: she rules out the d − 1 values the target does not have
/// and is left with one. So the rows whose value is certain are the rows of the classes with
/// d ≤ m + 1, which grow with m; m = 0 would be the homogeneity attack.
#[derive(Debug, Clone, Serialize)]
pub struct BackgroundKnowledge {
    /// m: the values of s the adversary rules out.
    pub ruled_out: u64,
    /// Classes with at most m + 1 distinct values of s.
    pub classes: u64,
    /// Their rows: rows whose value of s is certain to such an adversary.
    pub rows: u64,
}

/// Re-identification risk of a record: 1/|E| for a record of class E (1/persons of E with a
/// person id: the higher risk).
#[derive(Debug, Clone, Serialize)]
pub struct Risk {
    /// Prosecutor risk, highest: 1/k.
    pub prosecutor_max: f64,
    /// Prosecutor risk averaged over rows: classes/n (Σ_E |E|·risk_E / n with a person id).
    pub prosecutor_average: f64,
    /// Marketer risk with the sample as the population: the expected share of rows
    /// re-identified, equal to the average prosecutor risk.
    pub marketer: f64,
    /// Rows whose risk exceeds (strictly) 0.2, 0.1 and 0.05.
    pub thresholds: Vec<RiskThreshold>,
    /// Rows by risk range: (0.5, 1], (0.2, 0.5], (0.1, 0.2], (0.05, 0.1], [0, 0.05].
    pub distribution: Vec<RiskBucket>,
    /// Risk against a population table (`null` without one).
    pub population: Option<PopulationRisk>,
}

/// Rows whose risk exceeds a threshold.
#[derive(Debug, Clone, Serialize)]
pub struct RiskThreshold {
    /// The threshold.
    pub threshold: f64,
    /// Rows with a higher risk.
    pub rows: u64,
    /// Their share of all rows.
    pub share: f64,
}

/// Rows with a risk in (`min`, `max`] (`[0, max]` for the lowest range).
#[derive(Debug, Clone, Serialize)]
pub struct RiskBucket {
    /// Lower bound (exclusive, except 0).
    pub min: f64,
    /// Upper bound (inclusive).
    pub max: f64,
    /// Classes whose risk falls in the range.
    pub classes: u64,
    /// Their rows.
    pub rows: u64,
    /// Share of all rows.
    pub share: f64,
}

/// Risk against a population: F_E = rows of the population with class E's quasi-identifier
/// values (compared after casting the population's columns to the input's types).
#[derive(Debug, Clone, Serialize)]
pub struct PopulationRisk {
    /// The population table.
    pub population: String,
    /// Its rows.
    pub rows: u64,
    /// k-map: smallest F_E over the classes of the sample.
    pub k_map: u64,
    /// Journalist risk: largest 1/F_E (1 when F_E = 0).
    pub journalist: f64,
    /// Marketer risk: (1/n) Σ_E |E|/max(F_E, 1).
    pub marketer: f64,
    /// Classes with fewer population rows than sample rows (F_E < |E|: the population does
    /// not cover the sample); their risk is computed from F_E, never from |E|.
    pub classes_not_covered: u64,
    /// Rows whose journalist risk 1/max(F_E, 1) exceeds 0.2, 0.1 and 0.05.
    pub thresholds: Vec<RiskThreshold>,
}

/// Longpre's normalized leakage ΔS/S0 of single attributes.
#[derive(Debug, Clone, Serialize)]
pub struct LeakageRanking {
    /// Every column except the sensitive attributes (and the person id, a direct
    /// identifier), highest leakage first.
    pub attributes: Vec<Leakage>,
    /// Leakage of all quasi-identifiers together (the classes).
    pub quasi_identifiers: f64,
}

/// Leakage of one attribute.
#[derive(Debug, Clone, Serialize)]
pub struct Leakage {
    /// The column.
    pub attribute: String,
    /// Whether it is one of the given quasi-identifiers.
    pub quasi_identifier: bool,
    /// Its distinct values (NULL counted as one).
    pub distinct_values: u64,
    /// ΔS/S0 = H(a)/log2 n: the share of the information needed to single out a row that
    /// learning the attribute gives (1 for a one-row table).
    pub leakage: f64,
}

/// A class among the riskiest (smallest), with its quasi-identifier values as text.
#[derive(Debug, Clone, Serialize)]
pub struct RiskyClass {
    /// Rows of the class.
    pub rows: u64,
    /// The quasi-identifier values, in the order of `quasi_identifiers` (`null` for NULL).
    pub values: Vec<Option<String>>,
}

/// Utility of the input (anonymized) against the original, matched row for row.
///
/// A row is *suppressed* when all its quasi-identifiers are `*`. The value a generalized
/// cell stands for (R̄) is the set of original values of the rows with that generalized value
/// in that column (for a global recoding: the hierarchy node's leaves present in the data);
/// `*` and a NULL replacing a value stand for the whole domain.
#[derive(Debug, Clone, Serialize)]
pub struct Utility {
    /// The original table.
    pub original: String,
    /// `key <column>`, or `position` followed by the columns that were checked to agree row
    /// by row (or that none could be).
    pub matched_by: String,
    /// Suppressed rows.
    pub suppressed_rows: u64,
    /// NCP (Xu et al.): class NCP of the original values (`ncp()`), averaged over rows.
    pub ncp: f64,
    /// Loss: mean over rows and quasi-identifiers of the cell cost; for a quasi-identifier
    /// with a hierarchy the hierarchy NCP (leaves(u) − 1)/(|D| − 1), otherwise Iyengar's LM
    /// from the data ((M_g − 1)/(M − 1) categorical, (U_g − L_g)/(U − L) numeric, over the
    /// original values a generalized value stands for); `*` and suppressed rows cost 1.
    pub loss_metric: f64,
    /// Discernibility Σ_E |E|² + n·suppressed (classes of non-suppressed rows).
    pub discernibility: f64,
    /// AECS (n − suppressed)/(classes · k) over non-suppressed rows (`null` when all are
    /// suppressed).
    pub aecs: Option<f64>,
    /// Classification metric with the first sensitive attribute as the label (`null` without
    /// one).
    pub classification_metric: Option<f64>,
    /// Share of quasi-identifier cells whose text differs from the original's.
    pub modification_rate: f64,
    /// Weighted hierarchical distance, uniform weights, mean over the cells of
    /// quasi-identifiers with a hierarchy (`null` when none has one).
    pub whd_uniform: Option<f64>,
    /// The same with weights w_{j,j−1} = 1/(j−1) (β = 1).
    pub whd_beta1: Option<f64>,
    /// Monotone entropy loss Π_me (bits).
    pub monotone_entropy_loss: f64,
    /// Mutual-information loss Π_MI (bits).
    pub mutual_information_loss: f64,
    /// Private mutual-information utility U_PMI (bits) for the first sensitive attribute
    /// (`null` without one).
    pub private_mutual_information_utility: Option<f64>,
    /// Accuracy of random COUNT(*) range queries.
    pub query_accuracy: QueryAccuracy,
    /// The same figures per quasi-identifier.
    pub attributes: Vec<AttributeUtility>,
    /// When every quasi-identifier is numeric in both tables (a perturbed release): the
    /// perturbation figures of docs/definitions.md, "Utility and risk of a perturbed release".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub perturbation: Option<PerturbedFigures>,
}

/// The utility and risk figures of numeric values perturbed rather than generalized, each
/// row against its own original.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbedFigures {
    /// Rows measured: the matched rows without a NULL or NaN in a quasi-identifier on either
    /// side.
    pub rows: u64,
    pub utility: crate::perturb::measures::Utility,
    pub risk: crate::perturb::release::Risk,
}

/// Utility figures of one quasi-identifier (means over rows).
#[derive(Debug, Clone, Serialize)]
pub struct AttributeUtility {
    /// The quasi-identifier.
    pub attribute: String,
    /// The hierarchy used for loss and WHD (`null`: loss from the data, no WHD).
    pub hierarchy: Option<String>,
    /// Loss of the column (see `loss_metric`).
    pub loss: f64,
    /// Share of its cells changed.
    pub modification_rate: f64,
    /// WHD, uniform weights.
    pub whd_uniform: Option<f64>,
    /// WHD, β = 1 weights.
    pub whd_beta1: Option<f64>,
    /// Monotone entropy loss of the column.
    pub monotone_entropy_loss: f64,
    /// Mutual-information loss of the column.
    pub mutual_information_loss: f64,
    /// Private mutual-information utility of the column.
    pub private_mutual_information_utility: Option<f64>,
}

/// Query accuracy: random `COUNT(*) WHERE q1 IN r1 AND … AND qd IN rd` queries. Each query is
/// drawn around a random original row (so its true count is at least 1): for each
/// quasi-identifier a range of consecutive values of the original's sorted distinct values,
/// of a length uniform in 1..=⌈m/2⌉, containing that row's value. The anonymized table
/// answers assuming each generalized value spreads uniformly over the distinct original
/// values it stands for.
#[derive(Debug, Clone, Serialize)]
pub struct QueryAccuracy {
    /// Number of queries.
    pub queries: usize,
    /// Seed of the workload (the same seed, data and options give the same queries).
    pub seed: u64,
    /// Mean of |estimate − true count| / true count.
    pub mean_relative_error: f64,
    /// Median of the same.
    pub median_relative_error: f64,
}

/// Computes the profile of `options.table` on `ctx` (with the anonymity functions
/// registered, see [`crate::register`]).
pub async fn profile(ctx: &SessionContext, options: &ProfileOptions) -> Result<Profile> {
    let input = table(ctx, &options.table, "input").await?;
    let schema = input.schema().inner().clone();
    check_options(options, &schema)?;

    // the classes and the other attributes' leakage sums run concurrently: while Rust reads
    // the frequency set on one core, DataFusion aggregates the attributes on the others
    let (classes, other_sums) = futures::try_join!(
        anonymity::ClassData::compute(ctx, options),
        leakage::other_attribute_sums(ctx, options, &schema)
    )?;
    let rows = classes.rows();
    if rows == 0 {
        return Err(DataFusionError::Plan(format!(
            "table '{}' has no rows: there is nothing to profile",
            label(options)
        )));
    }
    let anonymity = classes.anonymity();
    let mut risk = risk::sample_risk(&classes);
    if let Some(population) = &options.population {
        risk.population = Some(risk::population_risk(ctx, options, population, &classes).await?);
    }
    let leakage = leakage::ranking(options, &schema, &classes, &other_sums)?;
    let utility = match &options.original {
        Some(original) => {
            let checked = match &options.key {
                Some(_) => None,
                None => Some(position::check_same_order(ctx, options, original).await?),
            };
            let mut utility = utility::utility(ctx, options, original, &classes).await?;
            if let Some(columns) = checked {
                utility.matched_by = if columns.is_empty() {
                    "position (unchecked: no column is kept unchanged)".to_string()
                } else {
                    format!("position (checked on {})", columns.join(", "))
                };
            }
            Some(utility)
        }
        None => None,
    };
    let relink = match &options.relink {
        Some(other) => Some(position::relink(ctx, options, other).await?),
        None => None,
    };
    let risky_classes = if options.show_values {
        Some(classes.risky_classes(RISKY_CLASSES)?)
    } else {
        None
    };
    let fingerprint_attack = match &options.fingerprint {
        Some(f) => {
            let (report, refuted) = crate::bucketize::attack::attack_table(
                ctx,
                &f.sensitive_table,
                &f.bucket_column,
                &f.linking,
                f.determined.as_deref(),
            )
            .await?;
            Some(FingerprintAttack {
                sensitive_table: options.label_of(&f.sensitive_table),
                report,
                refuted,
            })
        }
        None => None,
    };
    Ok(Profile {
        fingerprint_attack,
        input: label(options),
        rows,
        quasi_identifiers: options.quasi_identifiers.clone(),
        sensitive_attributes: options.sensitive.clone(),
        person_id: options.person_id.clone(),
        anonymity,
        risk,
        leakage,
        utility,
        relink,
        risky_classes,
    })
}

impl ProfileOptions {
    /// How the report names table `name`.
    pub fn label_of(&self, name: &str) -> String {
        self.labels
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_string())
    }
}

fn label(options: &ProfileOptions) -> String {
    options.label_of(&options.table)
}

/// The table `name` as a DataFrame; `role` (input, population, original) names it in errors.
pub(crate) async fn table(ctx: &SessionContext, name: &str, role: &str) -> Result<DataFrame> {
    ctx.table(name)
        .await
        .map_err(|_| DataFusionError::Plan(format!("the {role} table '{name}' is not registered")))
}

/// An error unless `column` is a column of `schema`; `what` says what the column is meant to
/// be, `table` names the table.
pub(crate) fn check_column(
    schema: &SchemaRef,
    column: &str,
    what: &str,
    table: &str,
) -> Result<()> {
    if schema.column_with_name(column).is_some() {
        return Ok(());
    }
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    Err(DataFusionError::Plan(format!(
        "{what} '{column}' is not a column of {table} (its columns: {})",
        names.join(", ")
    )))
}

fn check_options(options: &ProfileOptions, schema: &SchemaRef) -> Result<()> {
    let table = format!("'{}'", label(options));
    if options.quasi_identifiers.is_empty() {
        return Err(UsageError::new()
            .text("no quasi-identifier given: name at least one column with ")
            .opt(Opt::Qi)
            .into());
    }
    let mut seen = std::collections::HashSet::new();
    for qi in &options.quasi_identifiers {
        check_column(schema, qi, "quasi-identifier", &table)?;
        if !seen.insert(qi.as_str()) {
            return Err(DataFusionError::Plan(format!(
                "quasi-identifier '{qi}' is given twice"
            )));
        }
    }
    for s in &options.sensitive {
        check_column(schema, s, "sensitive attribute", &table)?;
        if options.quasi_identifiers.contains(s) {
            return Err(DataFusionError::Plan(format!(
                "'{s}' is given both as a quasi-identifier and as a sensitive attribute"
            )));
        }
    }
    if let Some(person) = &options.person_id {
        check_column(schema, person, "person id", &table)?;
    }
    if let Some(key) = &options.key {
        check_column(schema, key, "key", &table)?;
        if options.original.is_none() {
            return Err(DataFusionError::Plan(
                "a key matches rows of the original table: give the original too".into(),
            ));
        }
    }
    match (&options.original, &options.key, options.by_position) {
        (Some(_), Some(_), true) => {
            return Err(DataFusionError::Plan(
                "rows are matched either by a key or by position, not both".into(),
            ));
        }
        (Some(_), None, false) => {
            return Err(DataFusionError::Plan(
                "say how rows of the table and its original are matched: by a key column both \
                 keep (--key COLUMN), or by position (--by-position) when the table keeps the \
                 original's row order — a shuffled release does not"
                    .into(),
            ));
        }
        (None, _, true) => {
            return Err(UsageError::new()
                .opt(Opt::ByPosition)
                .text(" matches rows of the original table: give the original too")
                .into());
        }
        _ => {}
    }
    for name in options.hierarchies.keys() {
        if !options.quasi_identifiers.contains(name) {
            return Err(DataFusionError::Plan(format!(
                "a hierarchy is given for '{name}', which is not a quasi-identifier"
            )));
        }
    }
    if options.background_values > MAX_BACKGROUND_VALUES {
        return Err(UsageError::new()
            .text(format!(
                "the background-knowledge attack rules out at most {MAX_BACKGROUND_VALUES} \
                 values ("
            ))
            .opt(Opt::BackgroundValues)
            .text(format!("), got {}", options.background_values))
            .into());
    }
    if options.recursive_c.is_nan() || options.recursive_c <= 0.0 {
        return Err(DataFusionError::Plan(
            "the c of recursive (c,l)-diversity must be a positive number".into(),
        ));
    }
    Ok(())
}

pub(crate) use crate::functions::common::ordered_as_f64;
pub(crate) use anonymity::{size_buckets, size_buckets_of_ids};
pub(crate) use keys::KeyInterner;
