//! Evaluating a lattice node in memory: roll the frequency set (or the classes of an already
//! evaluated finer node) up to the node's levels, then judge each class.
//!
//! ## Rolling up
//! A node's classes are the groups of its per-QI level codes. They are computed from a
//! *source*: the leaf classes of the [`FrequencySet`], or the classes of a cached node `m ≤ n`
//! when every hierarchy maps `m`'s levels functionally to `n`'s (nested hierarchies) — the
//! source with the fewest classes wins. Grouping uses a dense table when the product of the
//! level cardinalities is small, a hash map on a packed `u64` key otherwise (see
//! `group.rs`); per-class sensitive histograms are merged from the source's (a person id's
//! classes keep their persons split as in [`super::persons`]: a sum of single-leaf persons
//! and the merged multi-leaf ones). Nothing is allocated per row and the data is never
//! scanned again.
//!
//! ## Judging
//! A class *fails* when it has fewer than `k` rows or misses an l or t requirement of any
//! sensitive attribute; failing classes are suppressed. The node **satisfies** the
//! requirements iff the suppressed rows are at most
//! [`PrivacyRequirements::max_suppressed_rows`]`(n)` **and at least one row is kept**: an
//! empty release is not a solution (so a k larger than the table has no solution even with
//! 100% suppression allowed).
//!
//! Per sensitive attribute, with the SQL functions' NULL rules: distinct l counts non-NULL
//! values (an all-NULL class counts 1); entropy and recursive (c,l) add the NULLs to the most
//! frequent value; t-closeness treats NULL as a category, with `p_T` the distribution of the
//! whole input table (before suppression). Entropy l passes when `exp(H) ≥ l` and t when
//! `EMD ≤ t`, both with a relative tolerance of 1e-12 that only absorbs floating-point
//! rounding (a class of two equally frequent values has entropy l exactly 2).
//!
//! ## Metrics (all over the n input rows; suppressed rows count as fully generalized)
//! - **Loss** (docs/definitions.md): mean over rows × QIs of the hierarchy cost of each cell,
//!   1 for each QI of a suppressed row.
//! - **Discernibility**: Σ_E |E|² over kept classes + n · suppressed rows.
//! - **Precision** (height-based, Sweeney's Prec loss): mean over rows × QIs of
//!   `level / top level`, 1 for each QI of a suppressed row.
//! - **Classes**: the number of kept classes (more is better).

use std::borrow::Cow;
use std::rc::Rc;

use hashbrown::HashMap;

use datafusion::error::{DataFusionError, Result};

use super::frequency::FrequencySet;
use super::group::{ClassHistograms, Column, Grouper, HistogramMerger};
use super::lattice::Lattice;
use super::persons::{ClassPersons, PersonCount};
use super::publication::{Reference, settle_dropped, settle_masked, star_codes};
use crate::functions::formulas;
pub use crate::policy::SensitiveAchieved;
use crate::policy::{Bound, Measure, PopulationRequirement, PrivacyRequirements, SuppressionMode};

/// At most this many classes (over all cached nodes) are kept as roll-up sources: about
/// 50 MB with 8 QIs and a small sensitive domain.
const CACHE_CLASSES: usize = 1 << 20;

/// At most this many nodes are kept as roll-up sources (bounds the scan for a source).
const CACHE_NODES: usize = 2048;

/// The evaluation of one lattice node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeEvaluation {
    /// The level of each QI.
    pub levels: Vec<usize>,
    /// Whether the node meets every requirement (see the module documentation).
    pub satisfies: bool,
    /// Rows of the input table (n).
    pub rows: u64,
    /// Rows of the classes that fail a requirement.
    pub suppressed_rows: u64,
    /// The most rows the requirements allow to suppress.
    pub max_suppressed_rows: u64,
    /// Equivalence classes kept (after suppression).
    pub classes: u64,
    /// Equivalence classes before suppression (distinct generalized QI tuples).
    pub classes_before_suppression: u64,
    /// The k achieved: the smallest kept class; `None` when every row is suppressed.
    pub min_class_size: Option<u64>,
    /// Per sensitive attribute with a requirement, the worst value of each bounded measure
    /// over kept classes.
    pub sensitive: Vec<SensitiveAchieved>,
    /// Loss (hierarchy NCP, docs/definitions.md), suppressed rows costing 1 per QI.
    pub loss: f64,
    /// Discernibility: Σ |E|² over kept classes + n · suppressed rows.
    pub discernibility: f64,
    /// Height-based precision loss: mean of level/top over rows × QIs, suppressed rows 1.
    pub precision: f64,
}

/// One sensitive attribute's requirement, prepared for evaluation.
#[derive(Debug)]
pub(crate) struct SensitiveCriterion {
    /// index in the frequency set's sensitive attributes
    pub index: usize,
    pub name: String,
    /// the attribute's bounds, in [`SensitiveRequirement::bounds`] order
    pub bounds: Vec<Bound>,
    /// every bound is k over persons: the attribute is a person id, whose classes the local
    /// algorithms count through [`super::persons`] rather than a histogram per class
    pub persons_only: bool,
    null_code: Option<u32>,
    cardinality: usize,
    /// the input's distribution, which t, β and δ compare with before anything is dropped
    pub table: Reference,
    /// with a tuple diversity bound: each code's number and the input's range
    spread: Option<SpreadDomain>,
}

/// What tuple diversity needs of an ordered attribute: each code's value as a number (NaN
/// for NULL and NaN, which are ignored) and the range of the input's values, before anything
/// is suppressed. Suppression only narrows the published range, raising every class's
/// value, so judging against the input's range never overstates it (docs/definitions.md).
#[derive(Debug)]
struct SpreadDomain {
    numbers: Vec<f64>,
    /// max_T − min_T over the input's values (0 for fewer than two values)
    range: f64,
}

impl SpreadDomain {
    fn new(numbers: &[f64], table_counts: &[u64]) -> Self {
        let (lo, hi) = numbers
            .iter()
            .zip(table_counts)
            .filter(|&(v, &n)| n > 0 && !v.is_nan())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (&v, _)| {
                (lo.min(v), hi.max(v))
            });
        Self {
            numbers: numbers.to_vec(),
            range: if hi > lo { hi - lo } else { 0.0 },
        }
    }

    /// (max_E − min_E)/(max_T − min_T) of a class holding `codes`: 0 for a class of at most
    /// one value and for a table of one value.
    fn tuple_diversity(&self, codes: &[u32]) -> f64 {
        let (lo, hi) = codes
            .iter()
            .map(|&c| self.numbers[c as usize])
            .filter(|v| !v.is_nan())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        formulas::range_share(lo, hi, self.range)
    }
}

impl SensitiveCriterion {
    /// The attribute's worst values (aligned with `bounds`) as reported.
    pub fn achieved(&self, worst: &[Option<f64>]) -> SensitiveAchieved {
        SensitiveAchieved::new(&self.name, &self.bounds, worst)
    }

    /// Distinct values of the attribute (its codes are `0..cardinality`).
    pub fn cardinality(&self) -> usize {
        self.cardinality
    }
}

/// The requirements, validated against a frequency set.
#[derive(Debug)]
pub(crate) struct Criteria {
    pub k: u64,
    /// the most rows that may be suppressed
    pub budget: u64,
    pub rows: u64,
    pub sensitive: Vec<SensitiveCriterion>,
    /// k-map and δ-presence (the frequency set then carries the population's counts)
    pub population: Option<PopulationRequirement>,
    /// drop or mask: what the published table looks like ([`super::publication`])
    pub suppression: SuppressionMode,
}

impl Criteria {
    /// Validates `requirements` (ranges, attributes present, ordered types) for `freq`.
    pub fn new(freq: &FrequencySet, requirements: &PrivacyRequirements) -> Result<Self> {
        let plan = |m: String| Err(DataFusionError::Plan(m));
        if requirements.k == 0 {
            return plan("k must be at least 1".to_string());
        }
        let rate = requirements.max_suppression;
        if !(rate.is_finite() && (0.0..=1.0).contains(&rate)) {
            return plan("max_suppression must be between 0 and 1".to_string());
        }
        let mut sensitive = Vec::new();
        for (i, req) in requirements.sensitive.iter().enumerate() {
            let bounds = req.bounds();
            if bounds.is_empty() {
                continue;
            }
            let name = &req.attribute;
            if requirements.sensitive[..i]
                .iter()
                .any(|r| &r.attribute == name)
            {
                return plan(format!("sensitive attribute '{name}' is listed twice"));
            }
            let Some(index) = freq.sensitive_index(name) else {
                return plan(format!(
                    "sensitive attribute '{name}' is not in the frequency set"
                ));
            };
            req.validate().map_err(DataFusionError::Plan)?;
            let domain = &freq.sensitive()[index];
            if let Some(bound) = bounds.iter().find(|b| b.measure.needs_ordered_attribute())
                && !domain.is_ordered()
            {
                let (what, hint) = bound.measure.ordered_name_and_hint();
                return plan(format!(
                    "'{name}': {what} needs an ordered attribute (numeric, decimal, date or \
                     time){hint}"
                ));
            }
            let ordered = bounds.iter().any(|b| b.measure == Measure::OrderedT);
            let spread = bounds
                .iter()
                .any(|b| b.measure == Measure::TupleDiversity)
                .then(|| SpreadDomain::new(domain.numbers(), domain.table_counts()));
            sensitive.push(SensitiveCriterion {
                index,
                name: name.clone(),
                persons_only: bounds.iter().all(|b| b.measure == Measure::Persons),
                bounds,
                null_code: domain.null_code(),
                cardinality: domain.cardinality(),
                table: Reference::new(domain.table_counts().to_vec(), ordered),
                spread,
            });
        }
        if let Some(population) = &requirements.population {
            population.validate().map_err(DataFusionError::Plan)?;
            if freq.population().is_none() {
                return plan(format!(
                    "{} need a population table ([population] path in the policy)",
                    population.policy_keys().join(" and ")
                ));
            }
        }
        Ok(Self {
            k: requirements.k,
            budget: requirements.max_suppressed_rows(freq.rows()),
            rows: freq.rows(),
            sensitive,
            population: requirements.population,
            suppression: requirements.suppression,
        })
    }

    /// Whether dropping failing classes changes what the kept ones are judged against:
    /// drop mode with t, β or δ ([`settle_dropped`]).
    pub fn settles_dropped(&self) -> bool {
        self.suppression == SuppressionMode::Drop
            && self
                .sensitive
                .iter()
                .any(|s| s.bounds.iter().any(|b| b.measure.depends_on_table()))
    }

    /// The input's distribution of each criterion: what t, β and δ compare with before
    /// anything is dropped.
    pub fn table_references(&self) -> Vec<Reference> {
        self.sensitive.iter().map(|s| s.table.clone()).collect()
    }

    /// Whether "satisfies" is monotone over the lattice (a node satisfying ⇒ all its
    /// generalizations satisfy; failing ⇒ all its specializations fail), given nested
    /// hierarchies. A class of a generalization is a union of classes of the finer node.
    ///
    /// - Nothing may be suppressed: monotone when every bound is closed under union
    ///   ([`crate::policy::Measure::closed_under_union`]); sizes add, so k always is.
    /// - Suppression allowed: the suppressed-row count is monotone only when failing is
    ///   inherited by every part of a class, i.e. for k and distinct l
    ///   ([`crate::policy::Measure::failure_inherited_by_parts`]). Otherwise only the
    ///   *monotone part* of the requirements ([`NodeStats::monotone_satisfies`]) can be used
    ///   for pruning.
    ///
    /// k-map is monotone both ways (F_E only grows with generalization). δ-presence is not:
    /// a generalized class may take in population rows that matched no class before, so its
    /// δ can drop below δ_min, and a part's δ can be anything.
    pub fn monotone(&self) -> bool {
        let population = self.population.is_none_or(|p| match p.delta_presence {
            None => true,
            Some(delta) => self.budget == 0 && delta.min == 0.0,
        });
        if !population {
            return false;
        }
        if self.budget == 0 {
            self.sensitive.iter().all(|s| {
                s.bounds
                    .iter()
                    .all(|b| b.measure.closed_under_union(s.null_code.is_some()))
            })
        } else {
            self.sensitive.iter().all(|s| {
                s.bounds
                    .iter()
                    .all(|b| b.measure.failure_inherited_by_parts())
            })
        }
    }

    /// A measure table to fill: per criterion, per bound.
    pub fn no_worst_values(&self) -> Vec<Vec<f64>> {
        self.sensitive
            .iter()
            .map(|s| vec![0.0; s.bounds.len()])
            .collect()
    }

    /// An empty worst-value table: per criterion, per bound.
    pub fn no_worst(&self) -> Vec<Vec<Option<f64>>> {
        self.sensitive
            .iter()
            .map(|s| vec![None; s.bounds.len()])
            .collect()
    }

    /// Folds one passing class's `values` (per criterion, per bound) into `worst`.
    pub fn fold_worst(&self, worst: &mut [Vec<Option<f64>>], values: &[Vec<f64>]) {
        for ((criterion, worst), values) in self.sensitive.iter().zip(worst).zip(values) {
            for ((bound, w), &v) in criterion.bounds.iter().zip(worst.iter_mut()).zip(values) {
                *w = Some(w.map_or(v, |w| bound.worse(w, v)));
            }
        }
    }

    /// The public per-attribute worst values.
    pub fn achieved(&self, worst: &[Vec<Option<f64>>]) -> Vec<SensitiveAchieved> {
        self.sensitive
            .iter()
            .zip(worst)
            .map(|(s, w)| s.achieved(w))
            .collect()
    }
}

/// The classes of a node (or the leaf classes), as a roll-up source.
#[derive(Debug)]
pub(crate) struct State<'a> {
    /// the node's index; `None` for the leaf classes
    node: Option<usize>,
    levels: Vec<usize>,
    /// per QI, the level code of each class
    codes: Cow<'a, [Vec<u32>]>,
    sizes: Cow<'a, [u64]>,
    /// per criterion (aligned with `Criteria::sensitive`)
    histograms: Vec<SharedHistograms<'a>>,
}

/// Histograms borrowed from the frequency set or shared between nodes with the same classes;
/// for a person criterion ([`SensitiveCriterion::persons_only`]), the classes' persons.
#[derive(Debug, Clone)]
enum SharedHistograms<'a> {
    Borrowed(&'a ClassHistograms),
    Shared(Rc<ClassHistograms>),
    Persons(Rc<ClassPersons>),
}

impl State<'_> {
    fn classes(&self) -> usize {
        self.sizes.len()
    }
}

impl SharedHistograms<'_> {
    /// The per-class histograms; `None` for a person criterion's persons.
    fn histograms(&self) -> Option<&ClassHistograms> {
        match self {
            SharedHistograms::Borrowed(h) => Some(h),
            SharedHistograms::Shared(h) => Some(h.as_ref()),
            SharedHistograms::Persons(_) => None,
        }
    }
}

/// The figures of a node the search needs (no strings).
#[derive(Debug, Clone)]
pub(crate) struct NodeStats {
    pub satisfies: bool,
    /// Whether the node satisfies the monotone part of the requirements: k and distinct l,
    /// with the same suppression limit. Implied by `satisfies`; monotone over the lattice
    /// for nested hierarchies even with suppression (see [`Criteria::monotone`]).
    pub monotone_satisfies: bool,
    pub classes: u64,
    pub kept_classes: u64,
    pub suppressed_rows: u64,
    pub min_kept_size: Option<u64>,
    /// per criterion, per bound: the worst value over kept classes
    pub worst: Vec<Vec<Option<f64>>>,
    pub loss: f64,
    pub discernibility: f64,
    pub precision: f64,
}

/// Recently evaluated nodes' classes, least recently used evicted first.
#[derive(Default)]
struct Cache<'a> {
    /// node → (classes, last use)
    entries: HashMap<usize, (Rc<State<'a>>, u64)>,
    clock: u64,
    classes: usize,
}

impl<'a> Cache<'a> {
    /// The classes of `node`, marked as used.
    fn get(&mut self, node: usize) -> Option<Rc<State<'a>>> {
        self.clock += 1;
        let clock = self.clock;
        self.entries.get_mut(&node).map(|(s, used)| {
            *used = clock;
            Rc::clone(s)
        })
    }

    /// The classes of `node`, without marking them.
    fn peek(&self, node: usize) -> Option<&Rc<State<'a>>> {
        self.entries.get(&node).map(|(s, _)| s)
    }

    fn states(&self) -> impl Iterator<Item = &Rc<State<'a>>> {
        self.entries.values().map(|(s, _)| s)
    }

    fn insert(&mut self, node: usize, state: Rc<State<'a>>) {
        let size = state.classes();
        while !self.entries.is_empty()
            && (self.classes + size > CACHE_CLASSES || self.entries.len() >= CACHE_NODES)
        {
            let oldest = self
                .entries
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(&n, _)| n);
            if let Some((s, _)) = oldest.and_then(|n| self.entries.remove(&n)) {
                self.classes -= s.classes();
            }
        }
        self.clock += 1;
        self.classes += size;
        self.entries.insert(node, (state, self.clock));
    }
}

/// Evaluates nodes by rolling up, keeping recent nodes' classes as sources.
pub(crate) struct Evaluator<'a> {
    pub freq: &'a FrequencySet,
    pub criteria: Criteria,
    pub lattice: Lattice,
    /// the frequency set's leaf classes, borrowed
    leaf: Rc<State<'a>>,
    cache: Cache<'a>,
    grouper: Grouper,
    merger: HistogramMerger,
    class_of: Vec<u32>,
    representative: Vec<u32>,
    entry_class: Vec<u32>,
    class_codes: Vec<u32>,
    class_counts: Vec<u64>,
    /// F_E of each class of the node being judged (population requirements)
    covered: Vec<u64>,
    /// whether each class of the node being judged is published
    kept: Vec<bool>,
    /// mask mode: per QI, per level, per code, whether it publishes `*`
    star_codes: Option<Vec<Vec<Vec<bool>>>>,
    scratch: Scratch,
    /// nodes rolled up so far
    pub evaluated: usize,
}

impl<'a> Evaluator<'a> {
    pub fn new(freq: &'a FrequencySet, requirements: &PrivacyRequirements) -> Result<Self> {
        let criteria = Criteria::new(freq, requirements)?;
        let lattice = Lattice::new(&freq.heights())?;
        let star_codes = match criteria.suppression {
            SuppressionMode::Mask => Some(
                freq.qis()
                    .iter()
                    .map(star_codes)
                    .collect::<Result<Vec<_>>>()?,
            ),
            SuppressionMode::Drop => None,
        };
        let leaf = State {
            node: None,
            levels: Vec::new(),
            codes: Cow::Borrowed(freq.leaf_codes()),
            sizes: Cow::Borrowed(freq.sizes()),
            histograms: criteria
                .sensitive
                .iter()
                .map(|s| {
                    if s.persons_only {
                        let persons = freq.leaf_persons(s.index);
                        SharedHistograms::Persons(Rc::new(ClassPersons::leaves(persons)))
                    } else {
                        SharedHistograms::Borrowed(freq.histograms(s.index))
                    }
                })
                .collect(),
        };
        Ok(Self {
            freq,
            criteria,
            lattice,
            leaf: Rc::new(leaf),
            cache: Cache::default(),
            grouper: Grouper::default(),
            merger: HistogramMerger::default(),
            class_of: Vec::new(),
            representative: Vec::new(),
            entry_class: Vec::new(),
            class_codes: Vec::new(),
            class_counts: Vec::new(),
            covered: Vec::new(),
            kept: Vec::new(),
            star_codes,
            scratch: Scratch::default(),
            evaluated: 0,
        })
    }

    /// Evaluates node `node` (a lattice index).
    pub fn evaluate(&mut self, node: usize) -> NodeStats {
        let state = self.state(node);
        self.judge(&state, None)
    }

    /// The failing classes of `node`: per QI, the level code of each failing class (in the
    /// node's level code spaces, see [`QiDomain::leaf_map`](super::QiDomain)), and each
    /// failing class's size. Judged exactly as [`Evaluator::evaluate`] judges.
    pub fn failing_classes(&mut self, node: usize) -> (Vec<Vec<u32>>, Vec<u64>) {
        let state = self.state(node);
        let mut failing = Vec::new();
        self.judge(&state, Some(&mut failing));
        let codes = state
            .codes
            .iter()
            .map(|codes| failing.iter().map(|&c| codes[c as usize]).collect())
            .collect();
        let sizes = failing.iter().map(|&c| state.sizes[c as usize]).collect();
        (codes, sizes)
    }

    /// Makes sure the classes of `node` are cached (as a roll-up source for its
    /// generalizations).
    pub fn prepare(&mut self, node: usize) {
        self.state(node);
    }

    /// The classes of `node`, from the cache or rolled up from the best source: a cached
    /// immediate specialization with the fewest classes, else any cached specialization with
    /// the fewest classes, else the leaf classes.
    fn state(&mut self, node: usize) -> Rc<State<'a>> {
        if let Some(state) = self.cache.get(node) {
            return state;
        }
        let levels = self.lattice.levels(node);
        let qis = self.freq.qis();
        let fits = |s: &State<'_>| {
            (0..qis.len()).all(|j| {
                s.levels[j] <= levels[j] && qis[j].between(s.levels[j], levels[j]).is_some()
            })
        };
        let mut source: Option<Rc<State<'a>>> = None;
        for p in self.lattice.predecessors(node) {
            if let Some(s) = self.cache.peek(p)
                && fits(s)
                && source.as_ref().is_none_or(|b| s.classes() < b.classes())
            {
                source = Some(Rc::clone(s));
            }
        }
        if source.is_none() {
            source = self
                .cache
                .states()
                .filter(|s| fits(s))
                .min_by_key(|s| (s.classes(), s.node))
                .cloned();
        }
        let source = source.unwrap_or_else(|| Rc::clone(&self.leaf));
        let state = Rc::new(self.rollup(&source, node, levels));
        self.evaluated += 1;
        self.cache.insert(node, Rc::clone(&state));
        state
    }

    /// Groups `source`'s classes by their codes at `levels`.
    fn rollup(&mut self, source: &State<'a>, node: usize, levels: Vec<usize>) -> State<'a> {
        let qis = self.freq.qis();
        let columns: Vec<Column<'_>> = qis
            .iter()
            .enumerate()
            .map(|(j, qi)| {
                let map = match source.node {
                    None => Some(qi.leaf_map(levels[j])),
                    Some(_) if source.levels[j] == levels[j] => None,
                    // the caller picked a source whose maps exist
                    Some(_) => qi.between(source.levels[j], levels[j]),
                };
                Column {
                    codes: &source.codes[j],
                    map,
                    cardinality: qi.cardinality(levels[j]),
                }
            })
            .collect();
        let classes = self.grouper.group(
            source.classes(),
            &columns,
            &mut self.class_of,
            &mut self.representative,
        );
        let codes = columns
            .iter()
            .map(|c| {
                self.representative
                    .iter()
                    .map(|&r| {
                        let code = c.codes[r as usize];
                        c.map.map_or(code, |m| m[code as usize])
                    })
                    .collect()
            })
            .collect();
        let mut sizes = vec![0u64; classes];
        for (&c, &n) in self.class_of.iter().zip(source.sizes.iter()) {
            sizes[c as usize] += n;
        }
        let histograms = if classes == source.classes() {
            // every source class is a class of its own, in the same order (ids follow
            // first appearance): the histograms carry over unchanged
            source.histograms.clone()
        } else {
            let mut out = Vec::with_capacity(source.histograms.len());
            for (h, criterion) in source.histograms.iter().zip(&self.criteria.sensitive) {
                let (merger, entries) = (&mut self.merger, &mut self.entry_class);
                let histograms = match h {
                    SharedHistograms::Borrowed(h) => h,
                    SharedHistograms::Shared(h) => h.as_ref(),
                    SharedHistograms::Persons(persons) => {
                        let multi = self.freq.leaf_persons(criterion.index).multi_persons();
                        out.push(SharedHistograms::Persons(Rc::new(persons.roll_up(
                            merger,
                            classes,
                            &self.class_of,
                            entries,
                            multi,
                        ))));
                        continue;
                    }
                };
                out.push(SharedHistograms::Shared(Rc::new(histograms.roll_up(
                    merger,
                    classes,
                    &self.class_of,
                    entries,
                    criterion.cardinality,
                ))));
            }
            out
        };
        State {
            node: Some(node),
            levels,
            codes: Cow::Owned(codes),
            sizes: Cow::Owned(sizes),
            histograms,
        }
    }

    /// Judges every class of `state` and computes the metrics; `failing`, if given, receives
    /// the index of every failing class. Classes are judged against the input's distribution,
    /// then as the published table shows them ([`super::publication`]: the drop mode's
    /// settled distribution, the mask mode's all-`*` class).
    fn judge(&mut self, state: &State<'_>, mut failing: Option<&mut Vec<u32>>) -> NodeStats {
        let criteria = &self.criteria;
        let qis = self.freq.qis();
        let d = qis.len();
        let n = criteria.rows;
        let mut worst = criteria.no_worst();
        let mut values: Vec<Vec<f64>> = criteria
            .sensitive
            .iter()
            .map(|s| vec![0.0; s.bounds.len()])
            .collect();
        let costs: Vec<&[f64]> = (0..d).map(|j| qis[j].costs(state.levels[j])).collect();
        let (mut suppressed, mut kept_classes, mut min_kept) = (0u64, 0u64, None::<u64>);
        let mut monotone_suppressed = 0u64;
        let mut squares: u128 = 0;
        // Σ over suppressed rows and QIs of (1 − the cell's cost)
        let mut extra_loss = 0.0;
        let population = criteria.population.zip(self.freq.population());
        if let Some((_, counts)) = population {
            let cardinalities: Vec<usize> = (0..d)
                .map(|j| qis[j].cardinality(state.levels[j]))
                .collect();
            counts.count_node(
                &state.levels,
                &state.codes,
                &cardinalities,
                &mut self.covered,
            );
        }
        let mut kept = std::mem::take(&mut self.kept);
        kept.clear();
        for (c, &size) in state.sizes.iter().enumerate() {
            // `monotone_pass`: k, k-map and distinct l only (see `Criteria::monotone`)
            let mut monotone_pass = size >= criteria.k;
            let mut pass = monotone_pass;
            if let Some((requirement, _)) = population {
                let covered = self.covered[c];
                monotone_pass &= requirement.monotone_passes(covered);
                pass = monotone_pass && requirement.passes(size, covered);
            }
            if monotone_pass {
                for (s, criterion) in criteria.sensitive.iter().enumerate() {
                    let histograms = match &state.histograms[s] {
                        SharedHistograms::Borrowed(h) => *h,
                        SharedHistograms::Shared(h) => h.as_ref(),
                        SharedHistograms::Persons(persons) => {
                            let passes =
                                person_measures(criterion, persons.count(c), &mut values[s]);
                            pass &= passes.all;
                            monotone_pass &= passes.inherited;
                            if !monotone_pass {
                                break;
                            }
                            continue;
                        }
                    };
                    let (codes, counts) =
                        histograms.class(c, &mut self.class_codes, &mut self.class_counts);
                    let passes = class_measures(
                        criterion,
                        codes,
                        counts,
                        size,
                        &criterion.table,
                        &mut self.scratch,
                        &mut values[s],
                    );
                    pass &= passes.all;
                    monotone_pass &= passes.inherited;
                    if !monotone_pass {
                        break;
                    }
                }
            }
            if !monotone_pass {
                monotone_suppressed += size;
            }
            if pass {
                criteria.fold_worst(&mut worst, &values);
            }
            kept.push(pass);
        }
        // what the suppressed rows do to the published table
        if let Some(published) = self.settle(state, &mut kept) {
            // the kept classes' worst values against the published distribution
            worst = self.criteria.no_worst();
            for c in (0..kept.len()).filter(|&c| kept[c]) {
                self.sensitive_passes(state, c, &published, &mut values);
                self.criteria.fold_worst(&mut worst, &values);
            }
        }
        let criteria = &self.criteria;
        for (c, &size) in state.sizes.iter().enumerate() {
            if kept[c] {
                kept_classes += 1;
                min_kept = Some(min_kept.map_or(size, |m| m.min(size)));
                squares += size as u128 * size as u128;
            } else {
                if let Some(failing) = failing.as_deref_mut() {
                    failing.push(c as u32);
                }
                suppressed += size;
                let kept_cost: f64 = (0..d).map(|j| costs[j][state.codes[j][c] as usize]).sum();
                extra_loss += size as f64 * (d as f64 - kept_cost);
            }
        }
        self.kept = kept;
        let (nd, top_share) = (
            n as f64 * d as f64,
            self.precision_without_suppression(&state.levels),
        );
        let (loss, precision) = if n == 0 {
            (0.0, 0.0)
        } else {
            (
                self.freq.loss_without_suppression(&state.levels) + extra_loss / nd,
                top_share + suppressed as f64 * d as f64 * (1.0 - top_share) / nd,
            )
        };
        NodeStats {
            satisfies: suppressed <= criteria.budget && suppressed < n,
            monotone_satisfies: monotone_suppressed <= criteria.budget && monotone_suppressed < n,
            classes: state.classes() as u64,
            kept_classes,
            suppressed_rows: suppressed,
            min_kept_size: min_kept,
            worst,
            loss,
            discernibility: (squares + n as u128 * suppressed as u128) as f64,
            precision,
        }
    }

    /// Applies [`super::publication`]'s rules to the first judgment `kept` of `state`'s
    /// classes. Returns the published distributions when dropping changed them (drop mode
    /// with t, β or δ and some class dropped), so that the kept classes' figures are taken
    /// against them.
    fn settle(&mut self, state: &State<'_>, kept: &mut [bool]) -> Option<Vec<Reference>> {
        if kept.iter().all(|&k| k) {
            return None;
        }
        match self.criteria.suppression {
            SuppressionMode::Drop if self.criteria.settles_dropped() => {
                let mut references = self.criteria.table_references();
                let mut values = self.criteria.no_worst_values();
                let (criteria, codes, counts) = (
                    &self.criteria,
                    &mut self.class_codes,
                    &mut self.class_counts,
                );
                let remove = |c: usize, references: &mut [Reference]| {
                    for (s, reference) in references.iter_mut().enumerate() {
                        if let Some(h) = state.histograms[s].histograms() {
                            let (codes, counts) = h.class(c, codes, counts);
                            reference.remove(codes, counts);
                        }
                    }
                };
                let mut buffers = (Vec::new(), Vec::new(), Scratch::default());
                let passes = |c: usize, references: &[Reference]| {
                    sensitive_passes(criteria, state, c, references, &mut buffers, &mut values)
                };
                settle_dropped(kept, &mut references, remove, passes);
                Some(references)
            }
            SuppressionMode::Drop => None,
            SuppressionMode::Mask => {
                let all_star = self.all_star_classes(state);
                if !all_star.is_empty() {
                    let union = |members: &[usize]| self.union_passes(state, members);
                    settle_masked(kept, &all_star, union);
                }
                None
            }
        }
    }

    /// The classes of `state` whose every label is `*` (mask mode).
    fn all_star_classes(&self, state: &State<'_>) -> Vec<usize> {
        let Some(stars) = &self.star_codes else {
            return Vec::new();
        };
        let star: Vec<&[bool]> = stars
            .iter()
            .zip(&state.levels)
            .map(|(levels, &l)| levels[l].as_slice())
            .collect();
        if star.iter().any(|codes| !codes.contains(&true)) {
            return Vec::new();
        }
        (0..state.classes())
            .filter(|&c| {
                star.iter()
                    .zip(state.codes.iter())
                    .all(|(star, codes)| star[codes[c] as usize])
            })
            .collect()
    }

    /// Whether the union of `members` (classes of `state`, among them an all-`*` class)
    /// meets the requirements against the input's distribution (mask mode keeps every row).
    /// Persons and distinct l are not judged: the union holds a passing class, so it has at
    /// least its persons and values.
    fn union_passes(&mut self, state: &State<'_>, members: &[usize]) -> bool {
        let criteria = &self.criteria;
        let size: u64 = members.iter().map(|&c| state.sizes[c]).sum();
        if size < criteria.k {
            return false;
        }
        if let Some(requirement) = &criteria.population {
            // the union's labels are the all-`*` class's: its population count
            let covered = members
                .iter()
                .map(|&c| self.covered.get(c).copied().unwrap_or(0))
                .max()
                .unwrap_or(0);
            if !requirement.passes(size, covered) {
                return false;
            }
        }
        let mut values = criteria.no_worst_values();
        for (s, criterion) in criteria.sensitive.iter().enumerate() {
            let Some(histograms) = state.histograms[s].histograms() else {
                continue;
            };
            let mut dense = vec![0u64; criterion.cardinality];
            for &c in members {
                let (codes, counts) =
                    histograms.class(c, &mut self.class_codes, &mut self.class_counts);
                for (&code, &n) in codes.iter().zip(counts) {
                    dense[code as usize] += n;
                }
            }
            let (codes, counts): (Vec<u32>, Vec<u64>) = dense
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(code, &n)| (code as u32, n))
                .unzip();
            let passes = class_measures(
                criterion,
                &codes,
                &counts,
                size,
                &criterion.table,
                &mut self.scratch,
                &mut values[s],
            );
            if !passes.all {
                return false;
            }
        }
        true
    }

    /// [`sensitive_passes`] with the evaluator's buffers.
    fn sensitive_passes(
        &mut self,
        state: &State<'_>,
        c: usize,
        references: &[Reference],
        values: &mut [Vec<f64>],
    ) -> bool {
        let mut buffers = (
            std::mem::take(&mut self.class_codes),
            std::mem::take(&mut self.class_counts),
            std::mem::take(&mut self.scratch),
        );
        let passes = sensitive_passes(&self.criteria, state, c, references, &mut buffers, values);
        (self.class_codes, self.class_counts, self.scratch) = buffers;
        passes
    }

    /// Mean over QIs of level/top: the precision loss when nothing is suppressed.
    pub fn precision_without_suppression(&self, levels: &[usize]) -> f64 {
        precision_without_suppression(&self.freq.heights(), levels)
    }

    /// The public evaluation of `node`.
    pub fn describe(&mut self, node: usize) -> NodeEvaluation {
        let stats = self.evaluate(node);
        self.to_evaluation(node, &stats)
    }

    /// Turns `stats` of `node` into the public evaluation.
    pub fn to_evaluation(&self, node: usize, stats: &NodeStats) -> NodeEvaluation {
        NodeEvaluation {
            levels: self.lattice.levels(node),
            satisfies: stats.satisfies,
            rows: self.criteria.rows,
            suppressed_rows: stats.suppressed_rows,
            max_suppressed_rows: self.criteria.budget,
            classes: stats.kept_classes,
            classes_before_suppression: stats.classes,
            min_class_size: stats.min_kept_size,
            sensitive: self.criteria.achieved(&stats.worst),
            loss: stats.loss,
            discernibility: stats.discernibility,
            precision: stats.precision,
        }
    }
}

/// Whether class `c` of `state` meets every sensitive bound against `references` (one per
/// criterion), its measures left in `values`; k and the population requirements, which do
/// not depend on the table's distribution, are not judged again.
fn sensitive_passes(
    criteria: &Criteria,
    state: &State<'_>,
    c: usize,
    references: &[Reference],
    (codes, counts, scratch): &mut (Vec<u32>, Vec<u64>, Scratch),
    values: &mut [Vec<f64>],
) -> bool {
    let mut pass = true;
    for (s, criterion) in criteria.sensitive.iter().enumerate() {
        pass &= match &state.histograms[s] {
            SharedHistograms::Persons(persons) => {
                person_measures(criterion, persons.count(c), &mut values[s]).all
            }
            h => {
                let Some(histograms) = h.histograms() else {
                    continue;
                };
                let (codes, counts) = histograms.class(c, codes, counts);
                let size = state.sizes[c];
                class_measures(
                    criterion,
                    codes,
                    counts,
                    size,
                    &references[s],
                    scratch,
                    &mut values[s],
                )
                .all
            }
        };
    }
    pass
}

/// Mean over QIs of level/top (0 for a QI whose only level is its top).
pub(crate) fn precision_without_suppression(heights: &[usize], levels: &[usize]) -> f64 {
    let d = heights.len() as f64;
    heights
        .iter()
        .zip(levels)
        .map(|(&h, &l)| {
            if h <= 1 {
                0.0
            } else {
                l as f64 / (h - 1) as f64
            }
        })
        .sum::<f64>()
        / d
}

/// Whether one class meets an attribute's bounds.
pub(crate) struct ClassPasses {
    /// every bound
    pub all: bool,
    /// the bounds whose failure every part of the class inherits (distinct l): the monotone
    /// part of the requirements (see [`Criteria::monotone`])
    pub inherited: bool,
}

/// Scratch space of [`class_measures`], reused across classes.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    counts: Vec<u64>,
    pairs: Vec<(u64, u64)>,
    positions: Vec<(usize, u64)>,
}

/// The measures of one class for one sensitive attribute: `codes` (ascending, so a NULL,
/// whose code is the smallest, can only come first) with `counts`, of a class of `size` rows
/// published in a table whose distribution is `reference` ([`super::publication`]). Writes each bound's value into `values` (aligned with
/// `criterion.bounds`), with the SQL functions' NULL rules: distinct l counts non-NULL values
/// (an all-NULL class counts 1); entropy l, recursive l and α count the NULLs as copies of the
/// most frequent value; t, β and δ treat NULL as a category of its own.
#[inline]
pub(crate) fn class_measures(
    criterion: &SensitiveCriterion,
    codes: &[u32],
    counts: &[u64],
    size: u64,
    reference: &Reference,
    scratch: &mut Scratch,
    values: &mut [f64],
) -> ClassPasses {
    let table_rows = reference.rows();
    let has_nulls = criterion.null_code.is_some() && codes.first() == criterion.null_code.as_ref();
    let nulls = if has_nulls { counts[0] } else { 0 };
    let non_null = &counts[usize::from(has_nulls)..];
    let mut passes = ClassPasses {
        all: true,
        inherited: true,
    };
    let mut pairs_ready = false;
    for (bound, value) in criterion.bounds.iter().zip(values.iter_mut()) {
        let mut table_pairs = |scratch: &mut Scratch| {
            if !pairs_ready {
                scratch.pairs.clear();
                scratch.pairs.extend(
                    codes
                        .iter()
                        .zip(counts)
                        .map(|(&c, &n)| (reference.count(c), n)),
                );
                pairs_ready = true;
            }
        };
        *value = match bound.measure {
            Measure::DistinctL => {
                if non_null.is_empty() && nulls > 0 {
                    1.0
                } else {
                    non_null.len() as f64
                }
            }
            Measure::EntropyL | Measure::RecursiveL { .. } => {
                // NULLs join the most frequent value: the least diverse completion
                scratch.counts.clear();
                scratch.counts.extend_from_slice(non_null);
                if nulls > 0 {
                    match scratch.counts.iter_mut().max() {
                        Some(max) => *max += nulls,
                        None => scratch.counts.push(nulls),
                    }
                }
                match bound.measure {
                    Measure::RecursiveL { c } => {
                        formulas::recursive_l(&mut scratch.counts, c) as f64
                    }
                    _ => formulas::entropy_l(&scratch.counts),
                }
            }
            Measure::Alpha => formulas::alpha(non_null, nulls),
            // a NULL person id may be any person of the class (`k_anonymity(person_id)`)
            Measure::Persons => PersonCount {
                known: non_null.len() as u64,
                nulls: nulls > 0,
            }
            .persons() as f64,
            Measure::EqualT => {
                table_pairs(scratch);
                formulas::equal_emd(&scratch.pairs, size, table_rows)
            }
            Measure::Beta => {
                table_pairs(scratch);
                formulas::beta_likeness(&scratch.pairs, size, table_rows)
            }
            Measure::EnhancedBeta => {
                table_pairs(scratch);
                formulas::enhanced_beta_likeness(&scratch.pairs, size, table_rows)
            }
            Measure::Delta => {
                table_pairs(scratch);
                formulas::delta_disclosure(&scratch.pairs, size, table_rows, reference.values())
            }
            Measure::OrderedT => match reference.ordered() {
                Some((domain, positions)) => {
                    scratch.positions.clear();
                    scratch.positions.extend(
                        codes
                            .iter()
                            .zip(counts)
                            .map(|(&c, &n)| (positions[c as usize] as usize, n)),
                    );
                    formulas::ordered_emd(domain, &scratch.positions, size)
                }
                None => 0.0,
            },
            Measure::TupleDiversity => criterion
                .spread
                .as_ref()
                .map_or(0.0, |spread| spread.tuple_diversity(codes)),
        };
        // the provider's and the verification's comparison, so that all judge alike
        let met = bound.is_met_by(*value);
        passes.all &= met;
        if bound.measure.failure_inherited_by_parts() {
            passes.inherited &= met;
        }
    }
    passes
}

/// The measures of one class for a criterion whose bounds are all k over persons
/// ([`SensitiveCriterion::persons_only`]), from its person count: what [`class_measures`]
/// gives on the class's histogram of person ids.
pub(crate) fn person_measures(
    criterion: &SensitiveCriterion,
    count: PersonCount,
    values: &mut [f64],
) -> ClassPasses {
    let mut passes = ClassPasses {
        all: true,
        inherited: true,
    };
    let persons = count.persons() as f64;
    for (bound, value) in criterion.bounds.iter().zip(values.iter_mut()) {
        debug_assert!(bound.measure == Measure::Persons);
        *value = persons;
        let met = bound.is_met_by(persons);
        passes.all &= met;
        if bound.measure.failure_inherited_by_parts() {
            passes.inherited &= met;
        }
    }
    passes
}
