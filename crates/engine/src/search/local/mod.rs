//! Local recoding: releases that generalize each *class* on its own instead of one level per
//! column. All three algorithms work on the [`FrequencySet`] (distinct raw QI combinations
//! with their counts and sensitive histograms), never on the rows:
//!
//! - [`mondrian`]: multidimensional top-down partitioning (LeFevre, DeWitt, Ramakrishnan,
//!   ICDE 2006), hierarchy-aware, its small regions refined by rollout cuts and by moving
//!   leaf classes between classes where that lowers the Loss;
//! - [`kaca`]: K-Anonymization by Clustering in Attribute hierarchies (Li, Wong, Fu, Pei;
//!   seed 004 §4.1), merging classes by the least weighted hierarchical distance;
//! - [`iab`]: the IAB search of seed 000 §3.3 with sibling-scoped (cell-level)
//!   generalization.
//!
//! ## The release model
//! A [`LocalRelease`] maps every *leaf class* of the frequency set (a distinct raw QI
//! combination) to one published class, or to [`SUPPRESSED`]. A class gives each QI one
//! [`Cell`]:
//! - a hierarchy node ([`Cell::Node`], a level code of the frequency set's domain): the
//!   label the hierarchy prints for it (`Higher education`, `123**`, `[30, 40)`, or the raw
//!   value at level 0);
//! - for *ordered* QIs (numbers and dates whose hierarchy is an interval, date or value tree;
//!   [`QiAxis::is_ordered`]), the class's range of raw values ranks ([`Cell::Interval`]),
//!   published by default **value-free** ([`labels`]): rounded outward to the cells of the
//!   QI's grid (its hierarchy's lowest level coarser than the column), as the grid's node when
//!   one cell holds the class, else as the open interval `(a, b)` whose ends lie outside the
//!   class, so that no end is a member's value; with `local_labels = "exact"` as
//!   `[lo, hi]`, the smallest and largest raw values. A class with a single value publishes
//!   the value itself;
//! - `*` ([`Cell::Top`]): the whole domain, e.g. a class mixing NULL with values.
//!
//! Every raw row is published in exactly one class whose cells cover its values. Two classes'
//! labels may overlap (a value can be itself in one class and inside an interval in another),
//! which is why k, l and t are counted over the *published label tuples*, exactly as for a
//! full-domain release ([`crate::search::release::Release`]).
//!
//! ## NULLs
//! A NULL quasi-identifier is a value of its own (as in `GROUP BY`): sorted first on ordered
//! QIs, its own code at every level of a hierarchy. A class holding only NULLs publishes NULL
//! (cost 0, as full-domain publishing does); a class mixing NULL with values publishes `*`
//! (cost 1), the only label covering both.
//!
//! ## Loss
//! The full-domain search's Loss (docs/definitions.md, ARX's Loss), per cell
//! `(values covered − 1) / (|D| − 1)`: a node covers its hierarchy's leaves; an interval covers
//! the domain's values inside what it publishes (`(a, b)` or `[lo, hi]`; a value tree's
//! leaves, as ARX counts them, else the column's distinct values);
//! `*` and suppressed cells cost 1. [`LocalEvaluation::loss`] averages over the n × d cells.

pub mod iab;
pub mod kaca;
pub mod labels;
pub mod mondrian;
mod pool;
pub mod population;
pub mod sets;

#[cfg(test)]
mod label_tests;
#[cfg(test)]
mod refine_tests;
#[cfg(test)]
mod sets_bench;
#[cfg(test)]
mod sets_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tuple_tests;

use std::fmt;
use std::str::FromStr;

use datafusion::arrow::array::Array;
use datafusion::arrow::compute::kernels::sort::SortOptions;
use datafusion::arrow::compute::sort_to_indices;
use datafusion::error::{DataFusionError, Result};

use super::domain::QiDomain;
use super::evaluate::{Criteria, Scratch, SensitiveAchieved, class_measures, person_measures};
use super::frequency::FrequencySet;
use super::persons::{LeafPersons, PersonCount, PersonScratch, PersonSet};
use super::population::PopulationCounts;
use super::publication::{Reference, settle_dropped, settle_masked, star_codes};
use crate::functions::common::{is_ordered, ordered_as_f64};
use crate::generalize::{HierarchyKind, IntervalDomain};
use crate::policy::{PopulationRequirement, PrivacyRequirements, SuppressionMode};
pub use labels::{Grid, LocalLabels};

/// The class of a suppressed leaf class in [`LocalRelease::class_of`].
pub const SUPPRESSED: u32 = u32::MAX;

/// Which local-recoding algorithm to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LocalAlgorithm {
    /// Strict top-down Mondrian ([`mondrian`]).
    Mondrian,
    /// KACA clustering ([`kaca`]).
    Kaca,
    /// IAB with sibling-scoped generalization ([`iab`]).
    Iab,
}

impl LocalAlgorithm {
    /// `mondrian`, `kaca` or `iab`.
    pub fn name(self) -> &'static str {
        match self {
            LocalAlgorithm::Mondrian => "mondrian",
            LocalAlgorithm::Kaca => "kaca",
            LocalAlgorithm::Iab => "iab",
        }
    }
}

impl fmt::Display for LocalAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for LocalAlgorithm {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "mondrian" => Ok(LocalAlgorithm::Mondrian),
            "kaca" => Ok(LocalAlgorithm::Kaca),
            "iab" => Ok(LocalAlgorithm::Iab),
            other => Err(DataFusionError::Plan(format!(
                "unknown local-recoding algorithm '{other}': expected mondrian, kaca or iab"
            ))),
        }
    }
}

/// What one class publishes for one quasi-identifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Cell {
    /// Level code `code` of the QI's domain at `level` (level 0: the raw value, or NULL).
    Node { level: u32, code: u32 },
    /// The raw values of ranks `lo ..= hi` of an ordered QI ([`QiAxis::rank_of_leaf`]),
    /// `lo < hi`, NULL not included, published as [`QiAxis::interval_bounds`] says.
    Interval { lo: u32, hi: u32 },
    /// The set of the class's raw values of a set-based categorical QI ([`sets`]): `count`
    /// (at least 2) distinct non-NULL values, published as `{a, b, …}`. Which values, the
    /// class's members say (the cell is a function of them, so it is not stored).
    Set { count: u32 },
    /// `*`.
    Top,
}

/// The values an interval cell publishes: `[lo, hi]`, or `(lo, hi)` when `open`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IntervalBounds {
    pub lo: f64,
    pub hi: f64,
    pub open: bool,
}

impl IntervalBounds {
    /// Whether the interval holds `x`.
    pub fn holds(&self, x: f64) -> bool {
        if self.open {
            self.lo < x && x < self.hi
        } else {
            self.lo <= x && x <= self.hi
        }
    }
}

/// One quasi-identifier as the local algorithms see it: its order (if ordered), its
/// hierarchy levels, and the Loss of any [`Cell`].
#[derive(Debug, Clone)]
pub struct QiAxis {
    ordered: bool,
    /// leaf → rank in ascending value order, NULL first (ordered QIs only)
    rank_of_leaf: Vec<u32>,
    leaf_of_rank: Vec<u32>,
    /// whether rank 0 is NULL
    null_first: bool,
    /// per rank: the value as a number (ordered QIs; NULL −∞)
    value_of_rank: Vec<f64>,
    /// what intervals cover (ordered QIs)
    domain: Option<IntervalDomain>,
    /// per rank, the domain values below and at most its value (ordered QIs; value-free
    /// labels: at most the lower end and below the upper end of an interval it starts or
    /// ends): an interval's cost from two loads instead of two binary searches
    domain_positions: Vec<(u64, u64)>,
    /// how intervals are labelled
    labels: LocalLabels,
    /// the grid of value-free labels ([`Grid`]), if the QI has one
    grid: Option<Grid>,
    /// value-free labels: per rank, the ends of an interval it starts or ends (`a`, `b`)
    ends_of_rank: Vec<(f64, f64)>,
    /// value-free labels: per rank, its node at the grid's level (`u32::MAX`: not finite)
    cell_of_rank: Vec<u32>,
    /// a set-based categorical QI: classes publish the set of their values ([`Cell::Set`])
    set: bool,
    /// a set-based numeric QI with value-free labels: an interval's ends are the midpoints
    /// between the class's extreme values and the next domain values outside it
    /// ([`sets::midpoint_ends`])
    midpoints: bool,
    /// set-based QIs: the distinct non-NULL values (|D|), and how long a set may grow
    set_domain: u64,
    set_labels: crate::policy::SetLabels,
    /// the QI's weight factor ([`QiDomain::weight_factor`])
    weight: f64,
}

impl QiAxis {
    /// The axis of `qi`. Ordered: numeric and temporal columns whose hierarchy is an
    /// interval, date or value tree (masks stay hierarchical: their nodes are prefixes).
    pub fn new(qi: &QiDomain) -> Result<Self> {
        let values = qi.leaf_values();
        let set_based = qi.is_set_based();
        let ordered = match (qi.hierarchy(), values) {
            // set-based: numbers are intervals, every other type sets
            (Some(_), Some(v)) if set_based => crate::generalize::common::is_number(v.data_type()),
            (Some(h), Some(v)) => {
                is_ordered(v.data_type())
                    && matches!(
                        h.kind(),
                        HierarchyKind::Interval(_)
                            | HierarchyKind::Date(_)
                            | HierarchyKind::Tree(_)
                    )
            }
            _ => false,
        };
        let leaves = qi.leaves();
        let labels = qi.local_labels();
        let nulls = values.map_or(0, |v| u64::from(v.null_count() > 0));
        let set_domain = leaves as u64 - nulls;
        if !ordered {
            return Ok(Self {
                set: set_based,
                midpoints: false,
                set_domain,
                set_labels: qi.set_labels(),
                weight: qi.weight_factor(),
                ordered,
                rank_of_leaf: Vec::new(),
                leaf_of_rank: Vec::new(),
                null_first: false,
                value_of_rank: Vec::new(),
                domain: None,
                domain_positions: Vec::new(),
                labels,
                grid: None,
                ends_of_rank: Vec::new(),
                cell_of_rank: Vec::new(),
            });
        }
        let values = values.ok_or_else(|| DataFusionError::Internal("no leaf values".into()))?;
        let options = SortOptions {
            descending: false,
            nulls_first: true,
        };
        let order = sort_to_indices(values.as_ref(), Some(options), None)?;
        let leaf_of_rank: Vec<u32> = order.values().to_vec();
        let mut rank_of_leaf = vec![0u32; leaves];
        for (r, &leaf) in leaf_of_rank.iter().enumerate() {
            rank_of_leaf[leaf as usize] = r as u32;
        }
        let null_first = values.null_count() > 0;
        let hierarchy = qi
            .hierarchy()
            .ok_or_else(|| DataFusionError::Internal("no hierarchy".into()))?;
        // set-based: the column's distinct values, whatever the hierarchy's leaves
        let domain = if set_based {
            crate::generalize::Hierarchy::set(qi.name()).interval_domain(values)?
        } else {
            hierarchy.interval_domain(values)?
        };
        let numbers = ordered_as_f64(values)?;
        let value_of_rank: Vec<f64> = leaf_of_rank
            .iter()
            .map(|&leaf| numbers[leaf as usize].unwrap_or(f64::NEG_INFINITY))
            .collect();
        let grid = match labels {
            LocalLabels::ValueFree if !set_based => {
                Grid::new(hierarchy, values.data_type()).filter(|grid| grid.level() < qi.height())
            }
            _ => None,
        };
        let midpoints = set_based && labels == LocalLabels::ValueFree;
        let (domain_positions, ends_of_rank, cell_of_rank) = match &grid {
            None if midpoints => {
                let ends = sets::midpoint_ends(&value_of_rank);
                let positions = ends
                    .iter()
                    .map(|&(a, b)| (domain.positions(a).1, domain.positions(b).0))
                    .collect();
                (positions, ends, Vec::new())
            }
            Some(grid) => {
                let map = qi.leaf_map(grid.level());
                let ends: Vec<(f64, f64)> = value_of_rank
                    .iter()
                    .map(|&v| {
                        if v.is_finite() {
                            (grid.below(v), grid.above(v))
                        } else {
                            (f64::NEG_INFINITY, f64::INFINITY)
                        }
                    })
                    .collect();
                // domain values inside (a, b): below(b) − at_most(a)
                let positions = ends
                    .iter()
                    .map(|&(a, b)| (domain.positions(a).1, domain.positions(b).0))
                    .collect();
                let cells = value_of_rank
                    .iter()
                    .zip(&leaf_of_rank)
                    .map(|(&v, &leaf)| {
                        if v.is_finite() {
                            map[leaf as usize]
                        } else {
                            u32::MAX
                        }
                    })
                    .collect();
                (positions, ends, cells)
            }
            None => (
                value_of_rank.iter().map(|&v| domain.positions(v)).collect(),
                Vec::new(),
                Vec::new(),
            ),
        };
        Ok(Self {
            ordered,
            rank_of_leaf,
            leaf_of_rank,
            null_first,
            value_of_rank,
            domain: Some(domain),
            domain_positions,
            labels,
            grid,
            ends_of_rank,
            cell_of_rank,
            set: false,
            midpoints,
            set_domain,
            set_labels: qi.set_labels(),
            weight: qi.weight_factor(),
        })
    }

    /// Whether classes publish sets of this QI's values ([`Cell::Set`]).
    pub fn is_set(&self) -> bool {
        self.set
    }

    /// Whether value-free intervals of this QI end at midpoints ([`sets::midpoint_ends`]).
    pub fn has_midpoint_ends(&self) -> bool {
        self.midpoints
    }

    /// The cell of a set-based categorical QI's class holding `count` distinct non-NULL
    /// values (`with_null`: and NULL), `leaf` one of them (or NULL's): the value itself for
    /// one value (NULL for NULL alone), `*` with NULL among values or beyond
    /// `max_set_values` with `set_fallback = "*"`, else the set.
    pub fn set_cell(&self, qi: &QiDomain, count: u32, with_null: bool, leaf: u32) -> Cell {
        if count + u32::from(with_null) <= 1 {
            return Cell::Node {
                level: 0,
                code: qi.leaf_map(0)[leaf as usize],
            };
        }
        if with_null
            || (count as usize > self.set_labels.max_values && self.set_labels.fallback_to_top)
        {
            return Cell::Top;
        }
        Cell::Set { count }
    }

    /// How long set labels of this QI may grow.
    pub fn set_labels(&self) -> crate::policy::SetLabels {
        self.set_labels
    }

    /// Whether classes publish intervals of this QI.
    pub fn is_ordered(&self) -> bool {
        self.ordered
    }

    /// Leaf → rank (ordered QIs).
    pub fn rank_of_leaf(&self) -> &[u32] {
        &self.rank_of_leaf
    }

    /// Rank → leaf (ordered QIs).
    pub fn leaf_of_rank(&self) -> &[u32] {
        &self.leaf_of_rank
    }

    /// Whether rank 0 is the NULL leaf.
    pub fn null_first(&self) -> bool {
        self.null_first
    }

    /// How this QI's intervals are labelled.
    pub fn labels(&self) -> LocalLabels {
        self.labels
    }

    /// The cell of an ordered QI's class with raw values of ranks `lo ..= hi` (see
    /// [`labels`]): the value itself when `lo == hi`; `*` with NULL among values; with
    /// value-free labels the grid's node when both ends lie in one, `*` without a grid or
    /// with a non-finite value; else an interval.
    pub fn interval_cell(&self, qi: &QiDomain, lo: u32, hi: u32) -> Cell {
        if lo == hi {
            let leaf = self.leaf_of_rank[lo as usize];
            return Cell::Node {
                level: 0,
                code: qi.leaf_map(0)[leaf as usize],
            };
        }
        if self.null_first && lo == 0 {
            return Cell::Top;
        }
        if self.labels == LocalLabels::Exact || self.midpoints {
            return Cell::Interval { lo, hi };
        }
        let Some(grid) = &self.grid else {
            return Cell::Top;
        };
        let (first, last) = (
            self.cell_of_rank[lo as usize],
            self.cell_of_rank[hi as usize],
        );
        if first == u32::MAX || last == u32::MAX {
            Cell::Top
        } else if first == last {
            Cell::Node {
                level: grid.level() as u32,
                code: first,
            }
        } else {
            Cell::Interval { lo, hi }
        }
    }

    /// What an interval of ranks `lo ..= hi` publishes, as numbers: `[min, max]` (exact
    /// labels) or the open `(a, b)` of value-free ones.
    pub fn interval_bounds(&self, lo: u32, hi: u32) -> IntervalBounds {
        match self.labels {
            LocalLabels::Exact => IntervalBounds {
                lo: self.value_of_rank[lo as usize],
                hi: self.value_of_rank[hi as usize],
                open: false,
            },
            // (-inf, inf) for ranks without ends (no grid: such a class publishes `*`)
            LocalLabels::ValueFree => IntervalBounds {
                lo: self
                    .ends_of_rank
                    .get(lo as usize)
                    .map_or(f64::NEG_INFINITY, |e| e.0),
                hi: self
                    .ends_of_rank
                    .get(hi as usize)
                    .map_or(f64::INFINITY, |e| e.1),
                open: true,
            },
        }
    }

    /// The Loss of one cell (docs/definitions.md; see the module documentation).
    /// Weighted ([`QiDomain::weight_factor`]): a node's cost is the domain's, already
    /// weighted.
    pub fn cost(&self, qi: &QiDomain, cell: Cell) -> f64 {
        match cell {
            Cell::Top => self.weight,
            Cell::Node { level, code } => qi.costs(level as usize)[code as usize],
            Cell::Interval { lo, hi } => {
                self.weight
                    * self.domain.as_ref().map_or(1.0, |d| {
                        let below = self.domain_positions[lo as usize].0;
                        let at_most = self.domain_positions[hi as usize].1;
                        d.loss_of_covered(at_most.saturating_sub(below))
                    })
            }
            Cell::Set { count } => {
                if self.set_domain <= 1 {
                    0.0
                } else {
                    self.weight * (count.saturating_sub(1) as f64 / (self.set_domain - 1) as f64)
                }
            }
        }
    }
}

/// The lowest node covering `leaves` (non-empty): the lowest level at which they share a code,
/// `*` if none does (NULL mixed with values).
pub fn lowest_common_node(qi: &QiDomain, leaves: impl Iterator<Item = u32> + Clone) -> Cell {
    for level in 0..qi.height() {
        let map = qi.leaf_map(level);
        let mut it = leaves.clone().map(|leaf| map[leaf as usize]);
        let Some(first) = it.next() else {
            return Cell::Top;
        };
        if it.all(|c| c == first) {
            return Cell::Node {
                level: level as u32,
                code: first,
            };
        }
    }
    Cell::Top
}

/// Per-sensitive-attribute histograms summed over some leaf classes, judged against the
/// requirements with the search's own rules (`evaluate::class_measures`). A person id (an
/// attribute bounded by k over persons only) is tallied as a [`PersonSet`] instead of a
/// histogram over every person ([`crate::search::persons`]).
#[derive(Debug)]
pub(crate) struct Judge<'a> {
    freq: &'a FrequencySet,
    pub criteria: Criteria,
    codes: Vec<u32>,
    counts: Vec<u64>,
    scratch: Scratch,
    /// per criterion, per bound: the last judged group's measures
    values: Vec<Vec<f64>>,
    /// per criterion: the leaf classes' persons, for a person criterion
    leaf_persons: Vec<Option<&'a LeafPersons>>,
    /// per criterion: per-person arrays, for a person criterion (empty otherwise)
    person_scratch: Vec<PersonScratch>,
    /// per criterion: the persons of the group being judged (person criteria)
    person_counts: Vec<PersonCount>,
}

/// Dense histograms of a group of leaf classes, one per criterion (the persons of a person
/// criterion), and its row count.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Tally {
    pub rows: u64,
    /// per criterion: its dense histogram (empty for a person criterion)
    pub histograms: Vec<Vec<u64>>,
    /// per criterion: the group's persons (empty for the other criteria)
    pub persons: Vec<PersonSet>,
    /// population rows with exactly the raw QIs of the leaf classes tallied: a lower bound
    /// of the class's F_E (population requirements only)
    pub population: u64,
}

impl Tally {
    /// Adds the group `other`, disjoint from this one.
    pub fn add(&mut self, other: &Tally) {
        self.rows += other.rows;
        self.population += other.population;
        for (a, b) in self.histograms.iter_mut().zip(&other.histograms) {
            for (x, y) in a.iter_mut().zip(b) {
                *x += *y;
            }
        }
        for (a, b) in self.persons.iter_mut().zip(&other.persons) {
            a.add(b);
        }
    }

    pub fn clear(&mut self) {
        self.rows = 0;
        self.population = 0;
        for h in &mut self.histograms {
            h.fill(0);
        }
        for p in &mut self.persons {
            p.clear();
        }
    }

    /// The tally without its multi-leaf persons, whose counts then come from elsewhere
    /// ([`Judge::passes_with`]).
    pub fn counts_only(&self) -> Tally {
        Tally {
            rows: self.rows,
            histograms: self.histograms.clone(),
            persons: self.persons.iter().map(PersonSet::counts_only).collect(),
            population: self.population,
        }
    }
}

impl<'a> Judge<'a> {
    pub fn new(freq: &'a FrequencySet, requirements: &PrivacyRequirements) -> Result<Self> {
        let criteria = Criteria::new(freq, requirements)?;
        let values = criteria
            .sensitive
            .iter()
            .map(|s| vec![0.0; s.bounds.len()])
            .collect();
        let leaf_persons: Vec<Option<&'a LeafPersons>> = criteria
            .sensitive
            .iter()
            .map(|s| s.persons_only.then(|| freq.leaf_persons(s.index)))
            .collect();
        let person_scratch = leaf_persons
            .iter()
            .map(|p| {
                p.map_or_else(PersonScratch::default, |p| {
                    PersonScratch::new(p.multi_persons())
                })
            })
            .collect();
        Ok(Self {
            freq,
            person_counts: vec![PersonCount::default(); criteria.sensitive.len()],
            criteria,
            codes: Vec::new(),
            counts: Vec::new(),
            scratch: Scratch::default(),
            values,
            leaf_persons,
            person_scratch,
        })
    }

    /// k.
    pub fn k(&self) -> u64 {
        self.criteria.k
    }

    /// The most rows that may be suppressed.
    pub fn budget(&self) -> u64 {
        self.criteria.budget
    }

    /// Whether any requirement beyond k exists (l, t, … or the population's), so that
    /// tallies are needed rather than row counts.
    pub fn has_sensitive(&self) -> bool {
        !self.criteria.sensitive.is_empty() || self.criteria.population.is_some()
    }

    /// An empty tally.
    pub fn tally(&self) -> Tally {
        Tally {
            rows: 0,
            population: 0,
            histograms: self
                .criteria
                .sensitive
                .iter()
                .map(|s| {
                    if s.persons_only {
                        Vec::new()
                    } else {
                        vec![0; s.cardinality()]
                    }
                })
                .collect(),
            persons: vec![PersonSet::default(); self.criteria.sensitive.len()],
        }
    }

    /// Adds leaf class `leaf_class` to `tally`.
    pub fn add_leaf_class(&mut self, tally: &mut Tally, leaf_class: usize) {
        self.add_leaf(tally, leaf_class, true);
    }

    /// Adds leaf class `leaf_class` to `tally` but for its multi-leaf persons, which a sweep
    /// counts instead (Mondrian's thresholds, [`Self::person_criteria`]).
    pub fn add_leaf_counts(&mut self, tally: &mut Tally, leaf_class: usize) {
        self.add_leaf(tally, leaf_class, false);
    }

    fn add_leaf(&mut self, tally: &mut Tally, leaf_class: usize, with_multi: bool) {
        tally.rows += self.freq.sizes()[leaf_class];
        if let Some(&n) = self.freq.leaf_population().get(leaf_class) {
            tally.population += n;
        }
        for (s, criterion) in self.criteria.sensitive.iter().enumerate() {
            if let Some(persons) = self.leaf_persons[s] {
                if with_multi {
                    persons.add(&mut tally.persons[s], leaf_class);
                } else {
                    persons.add_counts(&mut tally.persons[s], leaf_class);
                }
                continue;
            }
            let (codes, counts) = self.freq.histograms(criterion.index).class(
                leaf_class,
                &mut self.codes,
                &mut self.counts,
            );
            let h = &mut tally.histograms[s];
            for (&c, &n) in codes.iter().zip(counts) {
                h[c as usize] += n;
            }
        }
    }

    /// Takes leaf class `leaf_class`, added by [`Self::add_leaf_counts`], back out of
    /// `tally`.
    pub fn remove_leaf_counts(&mut self, tally: &mut Tally, leaf_class: usize) {
        tally.rows -= self.freq.sizes()[leaf_class];
        if let Some(&n) = self.freq.leaf_population().get(leaf_class) {
            tally.population -= n;
        }
        for (s, criterion) in self.criteria.sensitive.iter().enumerate() {
            if let Some(persons) = self.leaf_persons[s] {
                persons.remove_counts(&mut tally.persons[s], leaf_class);
                continue;
            }
            let (codes, counts) = self.freq.histograms(criterion.index).class(
                leaf_class,
                &mut self.codes,
                &mut self.counts,
            );
            let h = &mut tally.histograms[s];
            for (&c, &n) in codes.iter().zip(counts) {
                h[c as usize] -= n;
            }
        }
    }

    /// The tally of one leaf class.
    pub fn leaf_tally(&mut self, leaf_class: usize) -> Tally {
        let mut t = self.tally();
        self.add_leaf_class(&mut t, leaf_class);
        t
    }

    /// The leaf classes' persons of each person criterion, and its per-person arrays (for
    /// sweeps and splits).
    pub fn person_criteria(
        &mut self,
    ) -> impl Iterator<Item = (usize, &'a LeafPersons, &mut PersonScratch)> {
        self.leaf_persons
            .iter()
            .zip(&mut self.person_scratch)
            .enumerate()
            .filter_map(|(s, (persons, scratch))| persons.map(|p| (s, p, scratch)))
    }

    /// Whether a group with `tally` meets every requirement (k rows, each bound); its
    /// measures are left in `self.values` (no allocation: Mondrian asks for every cut).
    pub fn passes(&mut self, tally: &Tally) -> bool {
        for (s, scratch) in self.person_scratch.iter_mut().enumerate() {
            if self.leaf_persons[s].is_some() {
                self.person_counts[s] = scratch.count(&tally.persons[s]);
            }
        }
        self.judge(tally)
    }

    /// [`Self::passes`] of a tally whose persons are `persons` (per criterion; those of the
    /// other criteria are ignored) rather than its own [`PersonSet`]s.
    pub fn passes_with(&mut self, tally: &Tally, persons: &[PersonCount]) -> bool {
        self.person_counts.copy_from_slice(persons);
        self.judge(tally)
    }

    /// [`Self::passes`] with t, β and δ judged against `references` (one per criterion)
    /// rather than the input's distribution: a class of a table some rows are dropped from
    /// ([`crate::search::publication::settle_dropped`]); its measures then in `self.values`.
    pub fn passes_against(&mut self, tally: &Tally, references: &[Reference]) -> bool {
        for (s, scratch) in self.person_scratch.iter_mut().enumerate() {
            if self.leaf_persons[s].is_some() {
                self.person_counts[s] = scratch.count(&tally.persons[s]);
            }
        }
        self.judge_against(tally, Some(references))
    }

    /// Judges `tally`, person criteria by `self.person_counts`.
    fn judge(&mut self, tally: &Tally) -> bool {
        self.judge_against(tally, None)
    }

    /// [`Self::judge`] against `references`, or the input's distribution.
    fn judge_against(&mut self, tally: &Tally, references: Option<&[Reference]>) -> bool {
        if tally.rows < self.criteria.k || tally.rows == 0 {
            return false;
        }
        // the tally's population is a lower bound of F_E: k-map and δ_max judged on it hold
        // for the class; δ_min is judged once the cells are known
        // (`suppress_population_failures`)
        if let Some(population) = &self.criteria.population
            && !population.may_pass(tally.rows, tally.population)
        {
            return false;
        }
        let mut passes = true;
        for (s, criterion) in self.criteria.sensitive.iter().enumerate() {
            if criterion.persons_only {
                passes &=
                    person_measures(criterion, self.person_counts[s], &mut self.values[s]).all;
                continue;
            }
            self.codes.clear();
            self.counts.clear();
            for (code, &n) in tally.histograms[s].iter().enumerate() {
                if n > 0 {
                    self.codes.push(code as u32);
                    self.counts.push(n);
                }
            }
            passes &= class_measures(
                criterion,
                &self.codes,
                &self.counts,
                tally.rows,
                references.map_or(&criterion.table, |r| &r[s]),
                &mut self.scratch,
                &mut self.values[s],
            )
            .all;
        }
        passes
    }

    /// The last judged group's measures, per criterion and bound.
    pub fn measures(&self) -> &[Vec<f64>] {
        &self.values
    }
}

/// A local release: the published class of each leaf class of a frequency set, and each
/// class's cells (see the module documentation).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalRelease {
    /// Per leaf class of the frequency set: its class, or [`SUPPRESSED`].
    pub class_of: Vec<u32>,
    /// Per class, per QI (`cells[class * d + qi]`).
    pub cells: Vec<Cell>,
    /// The number of quasi-identifiers d.
    pub width: usize,
}

impl LocalRelease {
    /// The number of classes.
    pub fn classes(&self) -> usize {
        self.cells.len() / self.width.max(1)
    }

    /// Per class, its leaf classes in ascending order (suppressed ones in none).
    pub fn members(&self) -> Vec<Vec<u32>> {
        let mut groups: Vec<Vec<u32>> = vec![Vec::new(); self.classes()];
        for (leaf, &c) in self.class_of.iter().enumerate() {
            if c != SUPPRESSED {
                groups[c as usize].push(leaf as u32);
            }
        }
        groups
    }

    /// Class `c`'s cells.
    pub fn cells_of(&self, c: usize) -> &[Cell] {
        &self.cells[c * self.width..(c + 1) * self.width]
    }

    /// Builds a release from a partition of the leaf classes: `groups[g]` lists the leaf
    /// classes of group g, `cell_of(g, qi, members)` gives its cell; leaf classes in no
    /// group are suppressed.
    pub(crate) fn from_groups(
        leaf_classes: usize,
        width: usize,
        groups: &[Vec<u32>],
        mut cell_of: impl FnMut(usize, usize, &[u32]) -> Cell,
    ) -> Self {
        let mut class_of = vec![SUPPRESSED; leaf_classes];
        let mut cells = Vec::with_capacity(groups.len() * width);
        for (g, members) in groups.iter().enumerate() {
            for &m in members {
                class_of[m as usize] = g as u32;
            }
            for q in 0..width {
                cells.push(cell_of(g, q, members));
            }
        }
        Self {
            class_of,
            cells,
            width,
        }
    }

    /// The tightest cells of each group of leaf classes: the lowest common node of
    /// hierarchical QIs, the range of ranks of ordered ones (as [`QiAxis::interval_cell`]
    /// publishes it).
    pub fn covering(freq: &FrequencySet, axes: &[QiAxis], groups: &[Vec<u32>]) -> Self {
        let leaf_codes = freq.leaf_codes();
        let qis = freq.qis();
        Self::from_groups(freq.leaf_classes(), qis.len(), groups, |_, q, members| {
            covering_cell(&qis[q], &axes[q], &leaf_codes[q], members)
        })
    }
}

/// The tightest cell of QI `qi` covering the leaf classes `members` (non-empty).
pub fn covering_cell(qi: &QiDomain, axis: &QiAxis, leaf_codes: &[u32], members: &[u32]) -> Cell {
    if axis.is_set() {
        let mut leaves: Vec<u32> = members.iter().map(|&m| leaf_codes[m as usize]).collect();
        leaves.sort_unstable();
        leaves.dedup();
        return sets::set_cell_of_leaves(qi, axis, &leaves);
    }
    if axis.is_ordered() {
        let ranks = members
            .iter()
            .map(|&m| axis.rank_of_leaf[leaf_codes[m as usize] as usize]);
        let (lo, hi) = ranks.fold((u32::MAX, 0), |(lo, hi), r| (lo.min(r), hi.max(r)));
        axis.interval_cell(qi, lo, hi)
    } else {
        lowest_common_node(qi, members.iter().map(|&m| leaf_codes[m as usize]))
    }
}

/// The axes of every QI of `freq`.
pub fn axes(freq: &FrequencySet) -> Result<Vec<QiAxis>> {
    freq.qis().iter().map(QiAxis::new).collect()
}

/// What a local release achieves, judged over its published classes like a lattice node.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalEvaluation {
    /// Whether every class meets the requirements, the suppressed rows are within the
    /// budget, and some row is kept.
    pub satisfies: bool,
    /// Rows of the input (n).
    pub rows: u64,
    /// Rows of suppressed leaf classes, plus rows of classes that fail a requirement.
    pub suppressed_rows: u64,
    /// The most rows the policy allows to suppress.
    pub max_suppressed_rows: u64,
    /// Published classes that meet the requirements.
    pub classes: u64,
    /// The smallest kept class.
    pub min_class_size: Option<u64>,
    /// Per constrained sensitive attribute, the worst l and t over kept classes.
    pub sensitive: Vec<SensitiveAchieved>,
    /// Loss over the n × d cells, suppressed cells 1.
    pub loss: f64,
    /// Σ |E|² over kept classes + n · suppressed rows.
    pub discernibility: f64,
}

/// Judges every class of `release` as the published table shows it
/// ([`super::publication`]: with `suppression = "drop"`, t, β and δ against the rows kept;
/// with `"mask"`, the masked rows joining the all-`*` classes). Classes with equal labels
/// are *not* merged here; the published data are measured again on the written labels by
/// publishing.
pub fn evaluate(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    release: &LocalRelease,
) -> Result<LocalEvaluation> {
    Ok(judge_release(freq, requirements, release)?.0)
}

/// `release` with the classes that fail as published ([`evaluate`]) suppressed, and its
/// evaluation: what publishing writes, so that it finds no class to suppress.
pub fn settled(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    release: LocalRelease,
) -> Result<(LocalRelease, LocalEvaluation)> {
    let (evaluation, kept) = judge_release(freq, requirements, &release)?;
    if kept.iter().all(|&k| k) {
        return Ok((release, evaluation));
    }
    let mut groups: Vec<Vec<u32>> = vec![Vec::new(); release.classes()];
    for (leaf, &c) in release.class_of.iter().enumerate() {
        if c != SUPPRESSED && kept[c as usize] {
            groups[c as usize].push(leaf as u32);
        }
    }
    let kept_classes: Vec<usize> = (0..groups.len())
        .filter(|&c| !groups[c].is_empty())
        .collect();
    let settled = LocalRelease::from_groups(
        release.class_of.len(),
        release.width,
        &kept_classes
            .iter()
            .map(|&c| std::mem::take(&mut groups[c]))
            .collect::<Vec<_>>(),
        |g, q, _| release.cells_of(kept_classes[g])[q],
    );
    Ok((settled, evaluation))
}

/// The release that publishes every row as `*` for every quasi-identifier: one class of all
/// the leaf classes (what the search falls back to when nothing else satisfies).
pub fn all_star_release(freq: &FrequencySet) -> LocalRelease {
    let width = freq.qis().len();
    LocalRelease {
        class_of: vec![0; freq.leaf_classes()],
        cells: vec![Cell::Top; if freq.leaf_classes() > 0 { width } else { 0 }],
        width,
    }
}

/// [`evaluate`], with whether each class is published.
fn judge_release(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    release: &LocalRelease,
) -> Result<(LocalEvaluation, Vec<bool>)> {
    let axes = axes(freq)?;
    let mut judge = Judge::new(freq, requirements)?;
    let d = freq.qis().len();
    if release.width != d || release.class_of.len() != freq.leaf_classes() {
        return Err(DataFusionError::Internal(
            "the release does not fit the frequency set".to_string(),
        ));
    }
    let classes = release.classes();
    // the last tally: the leaf classes the release suppresses itself
    let mut tallies: Vec<Tally> = (0..=classes).map(|_| judge.tally()).collect();
    for (leaf, &c) in release.class_of.iter().enumerate() {
        let c = if c == SUPPRESSED { classes } else { c as usize };
        judge.add_leaf_class(&mut tallies[c], leaf);
    }
    let population = requirements.population.as_ref().zip(freq.population());
    let members = if population.is_some() {
        release.members()
    } else {
        Vec::new()
    };
    let meets_population = |c: usize, rows: u64| {
        population.is_none_or(|(requirement, counts)| {
            let covered =
                population::covered(counts, release.cells_of(c), &axes, freq, &members[c]);
            requirement.passes(rows, covered)
        })
    };
    // an empty class publishes nothing: kept, and left out of the figures
    let mut kept: Vec<bool> = tallies[..classes]
        .iter()
        .enumerate()
        .map(|(c, t)| t.rows == 0 || (judge.passes(t) && meets_population(c, t.rows)))
        .collect();
    kept.push(tallies[classes].rows == 0);
    let mut published: Option<Vec<Reference>> = None;
    match requirements.suppression {
        SuppressionMode::Drop if judge.criteria.settles_dropped() => {
            let mut references = judge.criteria.table_references();
            let remove = |c: usize, references: &mut [Reference]| {
                for (reference, histogram) in references.iter_mut().zip(&tallies[c].histograms) {
                    reference.remove_dense(histogram);
                }
            };
            let passes = |c: usize, references: &[Reference]| {
                tallies[c].rows == 0 || judge.passes_against(&tallies[c], references)
            };
            settle_dropped(&mut kept, &mut references, remove, passes);
            published = Some(references);
        }
        SuppressionMode::Drop => {}
        SuppressionMode::Mask => {
            let stars = freq
                .qis()
                .iter()
                .map(star_codes)
                .collect::<Result<Vec<_>>>()?;
            let all_star: Vec<usize> = (0..classes)
                .filter(|&c| {
                    release
                        .cells_of(c)
                        .iter()
                        .zip(&stars)
                        .all(|(cell, star)| match *cell {
                            Cell::Top => true,
                            Cell::Node { level, code } => star[level as usize][code as usize],
                            Cell::Interval { .. } | Cell::Set { .. } => false,
                        })
                })
                .collect();
            let union = |members: &[usize]| {
                let mut union = judge.tally();
                for &c in members {
                    union.add(&tallies[c]);
                }
                // the union's labels are the all-`*` classes'
                let star = members.iter().copied().find(|c| all_star.contains(c));
                judge.passes(&union) && star.is_none_or(|c| meets_population(c, union.rows))
            };
            settle_masked(&mut kept, &all_star, union);
        }
    }
    let n = freq.rows();
    let mut worst = judge.criteria.no_worst();
    let (mut kept_count, mut min_kept, mut squares, mut cost_sum) = (0u64, None::<u64>, 0u128, 0.0);
    let mut suppressed = 0u64;
    for (c, tally) in tallies.iter().enumerate() {
        if tally.rows == 0 {
            continue;
        }
        if !kept[c] {
            suppressed += tally.rows;
            continue;
        }
        let passes = match &published {
            Some(references) => judge.passes_against(tally, references),
            None => judge.passes(tally),
        };
        debug_assert!(passes, "a published class fails");
        kept_count += 1;
        min_kept = Some(min_kept.map_or(tally.rows, |m| m.min(tally.rows)));
        squares += tally.rows as u128 * tally.rows as u128;
        let cells = release.cells_of(c);
        let cost: f64 = (0..d).map(|q| axes[q].cost(&freq.qis()[q], cells[q])).sum();
        cost_sum += tally.rows as f64 * cost;
        judge.criteria.fold_worst(&mut worst, judge.measures());
    }
    let nd = n as f64 * d as f64;
    let loss = if n == 0 {
        0.0
    } else {
        (cost_sum + suppressed as f64 * d as f64) / nd
    };
    kept.truncate(classes);
    let evaluation = LocalEvaluation {
        satisfies: suppressed <= judge.budget() && suppressed < n,
        rows: n,
        suppressed_rows: suppressed,
        max_suppressed_rows: judge.budget(),
        classes: kept_count,
        min_class_size: min_kept,
        sensitive: judge.criteria.achieved(&worst),
        loss,
        discernibility: (squares + n as u128 * suppressed as u128) as f64,
    };
    Ok((evaluation, kept))
}

/// `release` with every class that fails k-map or δ-presence suppressed. The algorithms
/// build their classes from the sample alone (their cuts and merges do not see the
/// population); the classes are then judged here, with F_E counted over their cells
/// ([`PopulationCounts::covered`]), and a failing class costs its rows from the suppression
/// budget like any other.
fn suppress_population_failures(
    freq: &FrequencySet,
    requirement: &PopulationRequirement,
    population: &PopulationCounts,
    release: LocalRelease,
) -> Result<LocalRelease> {
    let axes = axes(freq)?;
    let groups = release.members();
    let mut kept_groups = Vec::with_capacity(groups.len());
    let mut kept_cells = Vec::with_capacity(release.cells.len());
    for (c, members) in groups.into_iter().enumerate() {
        let size: u64 = members.iter().map(|&m| freq.sizes()[m as usize]).sum();
        let cells = release.cells_of(c);
        if size > 0
            && requirement.passes(
                size,
                self::population::covered(population, cells, &axes, freq, &members),
            )
        {
            kept_groups.push(members);
            kept_cells.extend_from_slice(cells);
        }
    }
    Ok(LocalRelease::from_groups(
        release.class_of.len(),
        release.width,
        &kept_groups,
        |g, q, _| kept_cells[g * release.width + q],
    ))
}

/// Options of the local algorithms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LocalOptions {
    /// Seed of KACA's random choice of the next class to merge.
    pub seed: u64,
    /// The β of KACA's weighted hierarchical distance, `w(j, j−1) = 1/(j−1)^β`; `None`:
    /// uniform weights (seed 004 §3.1).
    pub whd_beta: Option<f64>,
    /// The most states IAB expands before returning its best satisfying table.
    pub iab_expansions: usize,
    /// KACA and IAB refuse frequency sets with more distinct QI combinations than this:
    /// KACA compares classes pairwise and IAB regroups every combination per table, so their
    /// time grows with its square (minutes at 100,000); Mondrian has no such limit.
    pub max_combinations: usize,
    /// Mondrian refines its small regions (rollout cuts, leaf classes moved where that lowers
    /// the Loss); `false`: plain top-down partitioning, strict classes, faster on millions of
    /// combinations (about 1 s of 10M rows' decision) at a higher Loss.
    pub refine: bool,
}

impl Default for LocalOptions {
    fn default() -> Self {
        Self {
            seed: 42,
            whd_beta: None,
            iab_expansions: 10_000,
            max_combinations: 100_000,
            refine: true,
        }
    }
}

/// Runs `algorithm` on `freq`; the release and its evaluation. Errors: invalid
/// requirements, no release satisfying them (one line, counts only), or a QI the algorithm
/// cannot serve.
pub fn anonymize(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    algorithm: LocalAlgorithm,
    options: LocalOptions,
) -> Result<(LocalRelease, LocalEvaluation)> {
    anonymize_with_progress(freq, requirements, algorithm, options, &mut |_, _| {})
}

/// [`anonymize`], telling `progress` how far it is as (done, total): Mondrian the rows placed
/// in finished classes of the table's rows, every 200 ms; KACA the leaf classes that no
/// longer fail of all of them; IAB the tables expanded of its cap.
pub fn anonymize_with_progress(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    algorithm: LocalAlgorithm,
    options: LocalOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(LocalRelease, LocalEvaluation)> {
    if algorithm != LocalAlgorithm::Mondrian && freq.leaf_classes() > options.max_combinations {
        return Err(DataFusionError::Plan(format!(
            "{algorithm} compares classes pairwise: {} distinct quasi-identifier combinations \
             are beyond its limit of {}; use mondrian",
            freq.leaf_classes(),
            options.max_combinations
        )));
    }
    let release = match algorithm {
        LocalAlgorithm::Mondrian => {
            mondrian::mondrian_with_progress(freq, requirements, options.refine, progress)?
        }
        LocalAlgorithm::Kaca => kaca::kaca_with_progress(freq, requirements, options, progress)?,
        LocalAlgorithm::Iab => iab::iab_with_progress(freq, requirements, options, progress)?,
    };
    let release = match (&requirements.population, freq.population()) {
        (Some(requirement), Some(population)) => {
            suppress_population_failures(freq, requirement, population, release)?
        }
        _ => release,
    };
    let (release, evaluation) = settled(freq, requirements, release)?;
    if evaluation.satisfies {
        return Ok((release, evaluation));
    }
    // every row as `*`, when that meets the policy: the release the optimal full-domain
    // search's top node is without NULLs
    let (star, star_evaluation) = settled(freq, requirements, all_star_release(freq))?;
    if star_evaluation.satisfies {
        return Ok((star, star_evaluation));
    }
    Err(DataFusionError::Execution(format!(
        "{algorithm} found no release meeting the privacy requirements (k = {}): {} of {} \
         rows would be suppressed, at most {} allowed",
        requirements.k, evaluation.suppressed_rows, evaluation.rows, evaluation.max_suppressed_rows
    )))
}
