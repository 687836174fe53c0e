//! [`FrequencySet`]: the counts of each distinct raw combination of (quasi-identifiers…,
//! sensitive attributes…), integer-encoded once so that every lattice node can be evaluated in
//! memory.
//!
//! Built with one DataFusion query (`SELECT qi…, sa…, count(*) FROM t GROUP BY qi…, sa…`,
//! through the DataFrame API so any column name works), or from in-memory codes
//! ([`FrequencySet::from_codes`]).
//!
//! ## Encoding
//! - **Quasi-identifiers.** The distinct values of a QI get dense *leaf codes*. Per hierarchy
//!   level, [`Hierarchy::generalize_column`] recodes the distinct values once and the Utf8
//!   labels are interned into dense *level codes*: two leaves share a level code exactly when
//!   they are published as the same text, so the classes of a node are the groups of the
//!   published table. Each level code carries its Loss cost from [`Hierarchy::coverage`]
//!   (docs/definitions.md "Loss": `(leaves(u) − 1)/(|D| − 1)`, a leaf 0, `*` 1).
//! - **NULL quasi-identifiers.** `generalize` keeps NULL as NULL at every level, the top
//!   included, so NULL rows form a class value of their own at every level (distinct from
//!   every label, `*` included). A NULL cell is published unchanged and costs 0 Loss at every
//!   level.
//! - **Sensitive attributes.** Dense codes in ascending value order, with NULL (if present)
//!   first, as `t_closeness_ordered` orders it; the ordered ground distance can then use code
//!   order. Ordered t-closeness is only accepted for numeric, decimal and temporal attributes,
//!   like the SQL function. NULL sensitive values are kept as a code of their own; the
//!   evaluation applies the SQL functions' rules to it (distinct l: NULLs add nothing, an
//!   all-NULL class counts 1; entropy and recursive l: NULLs are added to the most frequent
//!   value; t-closeness: NULL is a category of its own, in the class and in the table).
//!
//! The rows are then grouped by their QI leaf codes into *leaf classes*, each with its size and
//! one histogram per sensitive attribute: the finest state from which every node is rolled up.

use std::sync::{Arc, OnceLock};

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::count::count_all;
use datafusion::prelude::{SessionContext, ident};

use super::codes::{ranked, stream_codes, value_ranks};
pub use super::domain::{QiCodes, QiDomain};
use super::domain::{qi_domain_from_codes, qi_domain_from_hierarchy};
use super::group::{ClassHistograms, Column, Grouper, HistogramMerger};
use super::persons::LeafPersons;
use super::population::PopulationCounts;
use crate::functions::common::{is_ordered, ordered_as_f64};
use crate::generalize::{Hierarchy, HierarchyKind};
use crate::policy::{LocalLabels, SetLabels};
use crate::progress::ScanProgress;

/// One sensitive attribute of a [`FrequencySet`].
#[derive(Debug, Clone)]
pub struct SensitiveDomain {
    name: String,
    cardinality: usize,
    null_code: Option<u32>,
    ordered: bool,
    /// the table's count of each code (before any suppression)
    table_counts: Vec<u64>,
    /// an ordered attribute's value of each code as a number (dates and times by their
    /// integer representation), NaN for NULL and NaN, which a range ignores; empty when the
    /// attribute is not ordered
    numbers: Vec<f64>,
}

impl SensitiveDomain {
    /// The column name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of distinct values (NULL included).
    pub fn cardinality(&self) -> usize {
        self.cardinality
    }

    /// The code of NULL, if the attribute has NULLs (always 0).
    pub fn null_code(&self) -> Option<u32> {
        self.null_code
    }

    /// Whether codes follow the values' order and the type has a distance (numeric, decimal,
    /// temporal), as ordered t-closeness needs.
    pub fn is_ordered(&self) -> bool {
        self.ordered
    }

    /// The table's count of each code.
    pub fn table_counts(&self) -> &[u64] {
        &self.table_counts
    }

    /// An ordered attribute's value of each code as a number, NaN for NULL and NaN (empty
    /// when the attribute is not ordered). Codes follow the values' order, so the numbers
    /// ascend over the codes that have one.
    pub fn numbers(&self) -> &[f64] {
        &self.numbers
    }
}

/// A sensitive attribute for [`FrequencySet::from_codes`]: values are `u32`s compared as
/// numbers; `ordered` allows ordered t-closeness on it.
#[derive(Debug, Clone)]
pub struct SensitiveCodes {
    pub name: String,
    pub ordered: bool,
}

/// A row of [`FrequencySet::from_codes`]: one leaf per QI, one value (`None` = NULL) per
/// sensitive attribute, and how many rows have them. Equal rows are merged.
#[derive(Debug, Clone, PartialEq)]
pub struct FrequencyRow {
    pub qi: Vec<u32>,
    pub sensitive: Vec<Option<u32>>,
    pub count: u64,
}

/// The counts of each distinct raw combination of quasi-identifiers and sensitive attributes,
/// integer-encoded (see the module documentation).
#[derive(Debug, Clone)]
pub struct FrequencySet {
    qis: Vec<QiDomain>,
    sensitive: Vec<SensitiveDomain>,
    rows: u64,
    /// distinct (QI, sensitive) combinations read
    combinations: usize,
    /// leaf classes: per QI, the leaf code of each class
    leaf_codes: Vec<Vec<u32>>,
    sizes: Vec<u64>,
    /// per sensitive attribute, the histograms of the leaf classes
    histograms: Vec<ClassHistograms>,
    /// the population table's counts, for k-map and δ-presence
    population: Option<Arc<PopulationCounts>>,
    /// per leaf class, the population rows with exactly its quasi-identifiers
    leaf_population: Vec<u64>,
    /// per sensitive attribute, its values split as persons (built when first asked for)
    leaf_persons: Vec<OnceLock<LeafPersons>>,
}

impl FrequencySet {
    /// Builds the frequency set of `table` (registered on `ctx`) with one aggregate query.
    /// `qis` pairs each quasi-identifier column with its hierarchy; `sensitive` lists the
    /// sensitive columns (those with l or t requirements; more are allowed).
    ///
    /// Errors (one line, naming the column; never a data value): a missing column, a column
    /// listed twice, a hierarchy that does not fit the column's type, a tree hierarchy that
    /// lacks some of the column's values (with their count).
    pub async fn build(
        ctx: &SessionContext,
        table: &str,
        qis: &[(String, Arc<Hierarchy>)],
        sensitive: &[String],
    ) -> Result<Self> {
        Self::build_with_progress(ctx, table, qis, sensitive, None).await
    }

    /// [`Self::build`], counting the rows scanned into `progress` as the scan goes.
    pub async fn build_with_progress(
        ctx: &SessionContext,
        table: &str,
        qis: &[(String, Arc<Hierarchy>)],
        sensitive: &[String],
        progress: Option<Arc<ScanProgress>>,
    ) -> Result<Self> {
        if qis.is_empty() {
            return Err(DataFusionError::Plan(
                "the search needs at least one quasi-identifier".to_string(),
            ));
        }
        let df = ctx.table(table).await?;
        let names: Vec<&str> = qis
            .iter()
            .map(|(n, _)| n.as_str())
            .chain(sensitive.iter().map(String::as_str))
            .collect();
        for (i, name) in names.iter().enumerate() {
            if names[..i].contains(name) {
                return Err(DataFusionError::Plan(format!(
                    "column '{name}' is listed twice among the quasi-identifiers and \
                     sensitive attributes"
                )));
            }
            let field = df.schema().field_with_unqualified_name(name).map_err(|_| {
                DataFusionError::Plan(format!("table '{table}' has no column '{name}'"))
            })?;
            if let Some((_, hierarchy)) = qis.get(i) {
                hierarchy.check_column(name, field.data_type())?;
            }
        }
        let columns: Vec<_> = names.iter().map(|n| ident(*n)).collect();
        let projected = df.clone().select(columns.clone())?;
        let streamed = match super::packed::counted(ctx, projected, progress.clone()).await? {
            Some(streamed) => streamed,
            None => {
                let counted = "__anon_frequency";
                let df = df.aggregate(columns, vec![count_all().alias(counted)])?;
                stream_codes(ctx, df, names.len(), progress).await?
            }
        };
        let combinations = streamed.counts.len();
        let mut columns = streamed.columns.into_iter();

        let mut domains = Vec::with_capacity(qis.len());
        let mut leaf_codes = Vec::with_capacity(qis.len());
        for ((name, hierarchy), (codes, distinct)) in qis.iter().zip(columns.by_ref()) {
            let (codes, distinct) = in_value_order(codes, distinct)?;
            hierarchy.validate_values(name, &distinct)?;
            domains.push(qi_domain_from_hierarchy(name, hierarchy, &distinct)?);
            leaf_codes.push(codes);
        }
        let mut sensitive_domains = Vec::with_capacity(sensitive.len());
        let mut sensitive_codes = Vec::with_capacity(sensitive.len());
        for (name, (codes, distinct)) in sensitive.iter().zip(columns) {
            let (codes, domain) = sensitive_domain(name, codes, &distinct)?;
            sensitive_codes.push(codes);
            sensitive_domains.push(domain);
        }
        let mut counts = streamed.counts;
        // the aggregation emits groups in an order that depends on its partitions' timing;
        // the leaf classes (so the local algorithms' tie-breaks) must not
        // (the packed count gives them in that order already: nothing to move)
        if let Some(order) = canonical_order(&leaf_codes, &domains) {
            for codes in leaf_codes.iter_mut().chain(sensitive_codes.iter_mut()) {
                *codes = order.iter().map(|&r| codes[r as usize]).collect();
            }
            counts = order.iter().map(|&r| counts[r as usize]).collect();
        }
        Self::assemble(
            domains,
            sensitive_domains,
            leaf_codes,
            sensitive_codes,
            counts,
            combinations,
        )
    }

    /// A frequency set from in-memory codes (for tests and callers that encode data
    /// themselves); see [`QiCodes`], [`SensitiveCodes`], [`FrequencyRow`].
    pub fn from_codes(
        qis: Vec<QiCodes>,
        sensitive: Vec<SensitiveCodes>,
        rows: &[FrequencyRow],
    ) -> Result<Self> {
        if qis.is_empty() {
            return Err(DataFusionError::Plan(
                "the search needs at least one quasi-identifier".to_string(),
            ));
        }
        let mut domains = Vec::with_capacity(qis.len());
        for qi in &qis {
            let leaves = qi.levels.first().map_or(0, Vec::len);
            if leaves == 0 || qi.levels.iter().any(|l| l.len() != leaves) {
                return Err(DataFusionError::Plan(format!(
                    "quasi-identifier '{}': every level must map the same, non-empty set of \
                     leaves",
                    qi.name
                )));
            }
            domains.push(qi_domain_from_codes(qi));
        }
        for row in rows {
            if row.qi.len() != qis.len() || row.sensitive.len() != sensitive.len() {
                return Err(DataFusionError::Plan(
                    "a frequency row has the wrong number of values".to_string(),
                ));
            }
            if let Some(j) = (0..qis.len()).find(|&j| row.qi[j] as usize >= domains[j].leaves()) {
                return Err(DataFusionError::Plan(format!(
                    "a frequency row has a leaf of '{}' beyond its hierarchy",
                    qis[j].name
                )));
            }
        }
        let leaf_codes: Vec<Vec<u32>> = (0..qis.len())
            .map(|j| rows.iter().map(|r| r.qi[j]).collect())
            .collect();
        let mut sensitive_domains = Vec::with_capacity(sensitive.len());
        let mut sensitive_codes = Vec::with_capacity(sensitive.len());
        for (s, spec) in sensitive.iter().enumerate() {
            let has_null = rows.iter().any(|r| r.sensitive[s].is_none());
            let mut values: Vec<u32> = rows.iter().filter_map(|r| r.sensitive[s]).collect();
            values.sort_unstable();
            values.dedup();
            let offset = u32::from(has_null);
            let codes = rows
                .iter()
                .map(|r| match r.sensitive[s] {
                    None => 0,
                    Some(v) => offset + values.binary_search(&v).unwrap_or(0) as u32,
                })
                .collect();
            sensitive_codes.push(codes);
            // an ordered code set's values are their own numbers
            let numbers = if spec.ordered {
                let null = has_null.then_some(f64::NAN);
                null.into_iter()
                    .chain(values.iter().map(|&v| f64::from(v)))
                    .collect()
            } else {
                Vec::new()
            };
            sensitive_domains.push(SensitiveDomain {
                name: spec.name.clone(),
                cardinality: values.len() + offset as usize,
                null_code: has_null.then_some(0),
                ordered: spec.ordered,
                table_counts: Vec::new(),
                numbers,
            });
        }
        let counts = rows.iter().map(|r| r.count).collect();
        Self::assemble(
            domains,
            sensitive_domains,
            leaf_codes,
            sensitive_codes,
            counts,
            rows.len(),
        )
    }

    /// Groups the rows into leaf classes; fills the table counts and mean costs.
    fn assemble(
        mut qis: Vec<QiDomain>,
        mut sensitive: Vec<SensitiveDomain>,
        row_leaf_codes: Vec<Vec<u32>>,
        row_sensitive_codes: Vec<Vec<u32>>,
        counts: Vec<u64>,
        combinations: usize,
    ) -> Result<Self> {
        let rows = counts.len();
        let views: Vec<&[u32]> = row_leaf_codes.iter().map(Vec::as_slice).collect();
        let (classes, class_of, leaf_codes, sizes) =
            if crate::sort::code_order(&views, rows) == crate::sort::CodeOrder::Strict {
                // every row a leaf class of its own, already numbered in order
                drop(views);
                let class_of = if sensitive.is_empty() {
                    Vec::new()
                } else {
                    (0..rows as u32).collect()
                };
                (rows, class_of, row_leaf_codes, counts.clone())
            } else {
                let columns: Vec<Column<'_>> = row_leaf_codes
                    .iter()
                    .zip(&qis)
                    .map(|(codes, qi)| Column {
                        codes,
                        map: None,
                        cardinality: qi.leaves(),
                    })
                    .collect();
                let (mut class_of, mut representative) = (Vec::new(), Vec::new());
                let classes =
                    Grouper::default().group(rows, &columns, &mut class_of, &mut representative);
                let leaf_codes: Vec<Vec<u32>> = row_leaf_codes
                    .iter()
                    .map(|codes| representative.iter().map(|&r| codes[r as usize]).collect())
                    .collect();
                let mut sizes = vec![0u64; classes];
                for (&c, &n) in class_of.iter().zip(&counts) {
                    sizes[c as usize] += n;
                }
                (classes, class_of, leaf_codes, sizes)
            };
        let total: u64 = counts.iter().sum();
        let mut merger = HistogramMerger::default();
        let mut histograms = Vec::with_capacity(sensitive.len());
        for (domain, codes) in sensitive.iter_mut().zip(&row_sensitive_codes) {
            let mut table_counts = vec![0u64; domain.cardinality];
            for (&code, &n) in codes.iter().zip(&counts) {
                table_counts[code as usize] += n;
            }
            domain.table_counts = table_counts;
            histograms.push(ClassHistograms::build(
                &mut merger,
                classes,
                &class_of,
                codes,
                &counts,
                domain.cardinality,
            ));
        }
        // each QI's mean cost per level on a thread of its own (a pass over the leaf classes
        // per level)
        crate::parallel::map_scoped(
            "costing the frequency set's levels",
            qis.iter_mut().zip(&leaf_codes),
            |(qi, codes)| {
                qi.mean_cost = (0..qi.height())
                    .map(|level| {
                        if total == 0 {
                            return 0.0;
                        }
                        let (map, cost) = (&qi.leaf_to_code[level], &qi.cost[level]);
                        let sum: f64 = codes
                            .iter()
                            .zip(&sizes)
                            .map(|(&leaf, &n)| n as f64 * cost[map[leaf as usize] as usize])
                            .sum();
                        sum / total as f64
                    })
                    .collect();
            },
        )?;
        let leaf_persons = sensitive.iter().map(|_| OnceLock::new()).collect();
        Ok(Self {
            qis,
            sensitive,
            rows: total,
            combinations,
            leaf_codes,
            sizes,
            histograms,
            population: None,
            leaf_population: Vec::new(),
            leaf_persons,
        })
    }

    /// How local releases label the classes' values of the ordered quasi-identifiers (the
    /// policy's `[privacy] local_labels`; value-free unless set).
    pub fn set_local_labels(&mut self, labels: LocalLabels) {
        for qi in &mut self.qis {
            qi.local_labels = labels;
        }
    }

    /// Which quasi-identifiers local releases publish as sets of values or intervals
    /// (the policy's `generalization = "set"`, one flag per QI); a QI without a hierarchy
    /// ([`HierarchyKind::Set`]) always is. Also how long set labels may grow.
    pub fn set_generalization(&mut self, set_based: &[bool], labels: SetLabels) {
        for (qi, &set) in self.qis.iter_mut().zip(set_based) {
            let flat = qi
                .hierarchy
                .as_ref()
                .is_some_and(|h| matches!(h.kind(), HierarchyKind::Set));
            qi.set_based = set || flat;
            qi.set_labels = labels;
        }
    }

    /// Weighs the QIs' Loss (the policy's `weight`, one per QI, each above 0): every cost of
    /// QI q is scaled by `w_q · d / Σ w`, so that the Loss averaged over the n × d cells is
    /// the weighted mean `Σ_q w_q · L_q / Σ_q w_q` (equal weights: the plain Loss; a
    /// suppressed row still costs d). Errors for a weight that is not above 0.
    pub fn set_weights(&mut self, weights: &[f64]) -> Result<()> {
        if weights.len() != self.qis.len() {
            return Err(DataFusionError::Internal(
                "one weight per quasi-identifier".to_string(),
            ));
        }
        if let Some((qi, w)) = self
            .qis
            .iter()
            .zip(weights)
            .find(|(_, w)| !(w.is_finite() && **w > 0.0))
        {
            return Err(DataFusionError::Plan(format!(
                "quasi-identifier '{}': weight must be a number above 0, got {w}",
                qi.name
            )));
        }
        let total: f64 = weights.iter().sum();
        let d = weights.len() as f64;
        for (qi, &w) in self.qis.iter_mut().zip(weights) {
            let factor = w * d / total;
            let change = factor / qi.weight_factor;
            for cost in qi.cost.iter_mut().flatten() {
                *cost *= change;
            }
            for mean in &mut qi.mean_cost {
                *mean *= change;
            }
            qi.weight_factor = factor;
        }
        Ok(())
    }

    /// Attaches the population counts that k-map and δ-presence are judged with.
    pub fn set_population(&mut self, population: PopulationCounts) {
        self.leaf_population =
            population.per_leaf_class(self.qis(), self.leaf_codes(), self.leaf_classes());
        self.population = Some(Arc::new(population));
    }

    /// Per leaf class, the population rows with exactly its quasi-identifiers (empty without
    /// a population; [`PopulationCounts::per_leaf_class`]).
    pub(crate) fn leaf_population(&self) -> &[u64] {
        &self.leaf_population
    }

    /// The population counts, if attached ([`FrequencySet::set_population`]).
    pub fn population(&self) -> Option<&PopulationCounts> {
        self.population.as_deref()
    }

    /// The quasi-identifiers, in the order given.
    pub fn qis(&self) -> &[QiDomain] {
        &self.qis
    }

    /// The sensitive attributes, in the order given.
    pub fn sensitive(&self) -> &[SensitiveDomain] {
        &self.sensitive
    }

    /// Position of the sensitive attribute `name`.
    pub fn sensitive_index(&self, name: &str) -> Option<usize> {
        self.sensitive.iter().position(|s| s.name == name)
    }

    /// The QI names.
    pub fn qi_names(&self) -> Vec<String> {
        self.qis.iter().map(|q| q.name.clone()).collect()
    }

    /// Levels per QI.
    pub fn heights(&self) -> Vec<usize> {
        self.qis.iter().map(QiDomain::height).collect()
    }

    /// Rows of the table (n).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Distinct (QI…, sensitive…) combinations read from the table.
    pub fn combinations(&self) -> usize {
        self.combinations
    }

    /// Distinct raw QI combinations (the classes of a table without any generalization of
    /// the raw values).
    pub fn leaf_classes(&self) -> usize {
        self.sizes.len()
    }

    /// Loss of the node `levels` when no row is suppressed: the mean over QIs of their mean
    /// cell cost, a lower bound of the node's Loss with suppression.
    pub fn loss_without_suppression(&self, levels: &[usize]) -> f64 {
        let d = self.qis.len() as f64;
        self.qis
            .iter()
            .zip(levels)
            .map(|(q, &l)| q.mean_cost[l])
            .sum::<f64>()
            / d
    }

    pub(crate) fn leaf_codes(&self) -> &[Vec<u32>] {
        &self.leaf_codes
    }

    pub(crate) fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    pub(crate) fn histograms(&self, sensitive: usize) -> &ClassHistograms {
        &self.histograms[sensitive]
    }

    /// The values of sensitive attribute `sensitive` as persons of the leaf classes
    /// (single-leaf and multi-leaf persons, [`LeafPersons`]), built on first use.
    pub(crate) fn leaf_persons(&self, sensitive: usize) -> &LeafPersons {
        self.leaf_persons[sensitive].get_or_init(|| {
            let domain = &self.sensitive[sensitive];
            LeafPersons::new(
                &self.histograms[sensitive],
                domain.null_code,
                domain.cardinality,
            )
        })
    }

    /// Whether every hierarchy is nested (see [`QiDomain::is_nested`]).
    pub fn is_nested(&self) -> bool {
        self.qis.iter().all(QiDomain::is_nested)
    }
}

/// The rows in ascending order of their QI leaf codes (value ranks), ties in row order;
/// `None` when they are in that order already.
fn canonical_order(leaf_codes: &[Vec<u32>], domains: &[QiDomain]) -> Option<Vec<u32>> {
    let rows = leaf_codes.first().map_or(0, Vec::len);
    let columns: Vec<&[u32]> = leaf_codes.iter().map(Vec::as_slice).collect();
    if crate::sort::code_order(&columns, rows) != crate::sort::CodeOrder::Unsorted {
        return None;
    }
    let cardinalities: Vec<usize> = domains.iter().map(QiDomain::leaves).collect();
    Some(crate::sort::order_by_codes(&columns, &cardinalities, rows))
}

/// First-appearance `codes` and their `distinct` values renumbered in ascending value order
/// (NULL first): the same data give the same codes however the rows arrive.
fn in_value_order(mut codes: Vec<u32>, distinct: ArrayRef) -> Result<(Vec<u32>, ArrayRef)> {
    let (rank, distinct) = ranked(distinct)?;
    for code in &mut codes {
        *code = rank[*code as usize];
    }
    Ok((codes, distinct))
}

/// Codes (ascending value order, NULL first) of a sensitive column, from its first-appearance
/// `codes` and `distinct` values.
fn sensitive_domain(
    name: &str,
    codes: Vec<u32>,
    distinct: &ArrayRef,
) -> Result<(Vec<u32>, SensitiveDomain)> {
    let ordered = is_ordered(distinct.data_type());
    // types without an order keep the order of first appearance (t ordered refuses them)
    let rank: Vec<u32> = match value_ranks(distinct) {
        Some(rank) => rank,
        None if !ordered => {
            // NULL first, the others in order of first appearance
            let null = (0..distinct.len()).find(|&i| distinct.is_null(i));
            (0..distinct.len())
                .map(|i| match null {
                    Some(n) if i == n => 0,
                    Some(n) if i < n => i as u32 + 1,
                    _ => i as u32,
                })
                .collect()
        }
        None => {
            return Err(DataFusionError::Plan(format!(
                "sensitive attribute '{name}': its type has no order"
            )));
        }
    };
    let codes = codes.into_iter().map(|c| rank[c as usize]).collect();
    let null_code = (distinct.null_count() > 0).then_some(0);
    let mut numbers = Vec::new();
    if ordered {
        numbers = vec![f64::NAN; distinct.len()];
        for (i, number) in ordered_as_f64(distinct)?.into_iter().enumerate() {
            numbers[rank[i] as usize] = number.unwrap_or(f64::NAN);
        }
    }
    Ok((
        codes,
        SensitiveDomain {
            name: name.to_string(),
            cardinality: distinct.len(),
            null_code,
            ordered,
            table_counts: Vec::new(),
            numbers,
        },
    ))
}
