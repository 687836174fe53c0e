//! Multidimensional Mondrian (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), top-down on the
//! frequency set, with hierarchy-aware cuts: strict greedy partitioning, then, by default, a
//! refinement of every small region ([`Refinement`], below).
//!
//! Start with one region holding every leaf class. Take a region; try its quasi-identifiers
//! in decreasing order of the Loss of the region's current cell (its *normalized range*: an
//! interval's share of the domain, a node's share of the hierarchy's leaves), and cut on the
//! first that has an **allowable** cut: one whose every part meets the whole policy (k rows,
//! k persons with a person id, and each sensitive attribute's l and t, t against the whole
//! table). Parts go back on the
//! stack; a region with no allowable cut on any QI becomes a published class, labelled with
//! its tightest cells ([`LocalRelease::covering`]).
//!
//! - **Ordered QIs** (intervals of raw values): the cut is a threshold between two distinct
//!   values of the region. Among the allowable thresholds, by default ([`Threshold::Loss`])
//!   the one after which the two parts' cells cost least (all QIs' cells, each part weighted
//!   by its rows; ties to the one closest to the median); with [`MondrianOptions::paper`] the
//!   one closest to the median of the region's rows (the median itself when allowable).
//!   Choosing the QI itself by cost ([`Dimension::Loss`]) instead of by range is available;
//!   it measured worse on Adult (BENCHMARKS.md).
//! - **Hierarchical QIs** (strings, masks): the region's lowest common node is split into
//!   its children present. Children that meet the policy alone become parts; the others are
//!   pooled into one part (labelled by the node itself, the lowest node covering them); a pool
//!   that fails joins the smallest part until it passes. When that leaves fewer than two
//!   parts and the node has at most [`EXHAUSTIVE_CHILDREN`] children, every split of the
//!   children into two groups is tried and the most balanced allowable one taken.
//!
//! **Refinement** ([`refine`]; [`MondrianOptions::default`], off with
//! [`MondrianOptions::greedy`]). A region of at most [`Refinement::zone_rows`] rows (200) is a
//! *zone*, partitioned to the end by one thread:
//! - *rollout cuts* ([`pilot`]): a region of at most [`Refinement::pilot_rows`] rows (50) is
//!   cut, in turn, on each of its [`Refinement::pilot_width`] (3) widest QIs that have an
//!   allowable cut, each part then partitioned to the end by the greedy rule above; the QI
//!   whose completed partition costs least is cut (ties to the widest). The greedy cut is the
//!   first tried, so a region never ends up costlier than the greedy rule leaves it;
//! - *relocation* ([`relocate`]) of the zone's classes: a leaf class (a raw combination with
//!   all its rows) moves from its class to another of the zone when that lowers the two
//!   classes' Σ rows × cell cost (by more than 1e-9), its class keeping k rows, and both
//!   classes meeting the whole policy afterwards (judged like any cut's parts; a refused best
//!   move is not replaced by the next best). Each round gives every class its best move, in
//!   class order, until a round moves nothing (at most [`Refinement::rounds`], 20);
//! - *cutting again*: classes that admit an allowable cut after the moves are cut (rollout
//!   cuts included) and the zone relocated again, up to [`Refinement::recuts`] (5) times.
//!
//! Every step lowers or keeps the Loss of the classes' cells, so with nothing suppressed and
//! [`Dimension::Range`] the refined release never costs more than the greedy one. The refinement needs every QI's
//! cells folded leaf by leaf: with a set-based QI or a hierarchy that is not nested it is
//! skipped. A zone depends on its own records only, so the classes do not depend on the
//! threads.
//!
//! **Strictness** (of the greedy partitioning; after relocation a class may hold a value
//! inside another class's range, as labels may overlap anyway, and the refined classes may
//! admit a cut after the last pass). Regions never overlap in raw values, and a published
//! region admits no allowable threshold on an ordered QI and no allowable two-group split of its node's
//! children on a hierarchical QI (with at most [`EXHAUSTIVE_CHILDREN`] children; above that a
//! split the greedy pooling misses may remain). A split into more groups implies a two-group
//! one, because the union of groups that meet k, l (any kind) and t meets them too.
//!
//! **Suppression** (only with `max_suppression` > 0): after partitioning, *outliers* are
//! suppressed where that lowers the Loss. For each class (of at most [`TRIM_CANDIDATES`] leaf
//! classes), the leaf class whose removal shrinks the class's cells the most is a candidate
//! when the class's total cell cost falls by more than the candidate's own cells cost once
//! suppressed (d per row, as the Loss counts a suppressed row) and the rest of the class still
//! meets the policy. Candidates are taken best gain first, one per class per round, while the
//! suppression budget lasts; rounds repeat until none gains. With `max_suppression = 0` every
//! row is published. If the whole table fails the policy there is no release (an error).
//!
//! **Ties and determinism.** QIs of equal width are tried in policy order; classes are
//! numbered by their smallest leaf class, and the frequency set is in value order, so the same
//! data give the same release however the work is scheduled.
//!
//! Cost: each level of the recursion sorts the leaf classes of the regions it cuts (a counting
//! sort when the keys are few), so the whole run is O(|F| log² |F| · d) on |F| leaf classes,
//! and never touches the rows. The machine's threads share the regions as they go, through a
//! [`WorkPool`] (a region's cuts depend on that region alone, so the split of the work does
//! not change the classes); each finished class's cells are computed by the thread that
//! found it. Progress (rows of the classes found) is reported every 200 ms.
//!
//! **k over persons** (a person id, [`crate::search::persons`]) costs about what k over rows
//! does: a threshold sweep moves each record's counts from the right part to the left (no
//! histogram per threshold) and keeps the distinct multi-leaf persons of both parts with two
//! counters per person; a split of a node's children reads every two-group split's persons off
//! the set of children each multi-leaf person is in. Per cut, O(records + their
//! (leaf class, multi-leaf person) pairs), whatever the number of persons.

use datafusion::error::Result;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

mod folds;
mod hierarchical;
mod layout;
mod ordered;
mod pilot;
mod refine;
mod relocate;
mod sets;
mod trim;

use folds::Climb;
use layout::Layout;
pub use refine::Refinement;
use sets::SetScratch;

use super::pool::WorkPool;
use super::sets::{null_leaf, set_cell_of_leaves};
use super::{Cell, Judge, LocalRelease, QiAxis, SUPPRESSED, Tally, axes, lowest_common_node};
use crate::policy::PrivacyRequirements;
use crate::search::FrequencySet;
use crate::search::persons::PersonCount;

/// Up to this many children, a hierarchical cut the greedy pooling misses is searched for
/// among all two-group splits (2^(c−1) of them).
pub const EXHAUSTIVE_CHILDREN: usize = 12;

/// How a region's quasi-identifier to cut on is chosen among those with an allowable cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dimension {
    /// The widest normalized range (LeFevre et al.): the QI whose current cell costs most.
    #[default]
    Range,
    /// The cut that lowers the region's Loss the most (every QI's cells are recomputed on
    /// the parts, since a cut on one QI also tightens the others).
    Loss,
}

/// Where an ordered quasi-identifier is cut among its allowable thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Threshold {
    /// The threshold closest to the median of the region's rows (LeFevre et al.).
    Median,
    /// The threshold after which the two parts' cells cost least (all QIs' cells, each part
    /// weighted by its rows); ties go to the one closest to the median.
    #[default]
    Loss,
}

/// Mondrian's choices; the default is what measured best on Adult (BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MondrianOptions {
    pub dimension: Dimension,
    pub threshold: Threshold,
    /// The refinement of small regions ([`refine`]); `None`: plain top-down partitioning.
    pub refine: Option<Refinement>,
}

impl Default for MondrianOptions {
    fn default() -> Self {
        Self {
            dimension: Dimension::Range,
            threshold: Threshold::Loss,
            refine: Some(Refinement::default()),
        }
    }
}

impl MondrianOptions {
    /// The paper's choices: widest range, median threshold, no refinement.
    pub fn paper() -> Self {
        Self {
            dimension: Dimension::Range,
            threshold: Threshold::Median,
            refine: None,
        }
    }

    /// The default cuts without the refinement of small regions.
    pub fn greedy() -> Self {
        Self {
            refine: None,
            ..Self::default()
        }
    }
}

/// Runs strict Mondrian with the default [`MondrianOptions`]; see the module documentation.
pub fn mondrian(freq: &FrequencySet, requirements: &PrivacyRequirements) -> Result<LocalRelease> {
    mondrian_with(freq, requirements, MondrianOptions::default())
}

/// Runs strict Mondrian; see the module documentation. The whole table failing the policy
/// gives a release with every leaf class suppressed (which [`super::anonymize`] refuses).
pub fn mondrian_with(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: MondrianOptions,
) -> Result<LocalRelease> {
    partition(freq, requirements, options, true, &mut |_, _| {})
}

/// [`mondrian`] (without the refinement of small regions unless `refine`), telling `progress`
/// (rows placed in finished classes, rows of the table) every 200 ms while it partitions.
pub fn mondrian_with_progress(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    refine: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LocalRelease> {
    let options = MondrianOptions {
        refine: refine.then(Refinement::default),
        ..MondrianOptions::default()
    };
    partition(freq, requirements, options, true, progress)
}

/// [`mondrian_with`] with an ordered cut's prefix and suffix cells always folded record by
/// record ([`Cutter::fold_cells`]): the reference [`Cutter::fold_runs`] is tested against.
#[cfg(test)]
pub(crate) fn mondrian_folding_each_record(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: MondrianOptions,
) -> Result<LocalRelease> {
    partition(freq, requirements, options, false, &mut |_, _| {})
}

/// The classes `classes` (lists of leaf classes, each meeting the policy) after
/// [`Cutter::refine_classes`], as a release: what the refinement does to a zone's classes.
#[cfg(test)]
pub(crate) fn refine_given_classes(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    refine: Refinement,
    classes: &[Vec<usize>],
) -> Result<LocalRelease> {
    let options = MondrianOptions {
        refine: Some(refine),
        ..MondrianOptions::default()
    };
    let setup = Setup::new(freq, options, true)?;
    let layout = setup.layout;
    let all = layout.points(freq, &setup.axes)?;
    let mut records = Vec::with_capacity(all.len());
    let mut ranges = Vec::with_capacity(classes.len());
    for class in classes {
        let start = layout.len(&records);
        for &m in class {
            records.extend_from_slice(&all[layout.span(&(m..m + 1))]);
        }
        ranges.push(start..start + class.len());
    }
    let mut cutter = setup.cutter(Judge::new(freq, requirements)?);
    let cells = cutter.refine_classes(refine, &mut records, &mut ranges);
    let mut class_of = vec![SUPPRESSED; freq.leaf_classes()];
    for (c, range) in ranges.iter().enumerate() {
        for i in range.clone() {
            class_of[layout.member(&records, i) as usize] = c as u32;
        }
    }
    Ok(LocalRelease {
        class_of,
        cells,
        width: layout.d,
    })
}

/// [`mondrian_with`]; `fold_by_runs`: fold an ordered cut's cells run by run where every QI
/// allows it; `progress` is told the rows of the classes found so far.
fn partition(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: MondrianOptions,
    fold_by_runs: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LocalRelease> {
    let setup = Setup::new(freq, options, fold_by_runs)?;
    let mut judge = Judge::new(freq, requirements)?;
    let mut root = judge.tally();
    for m in 0..freq.leaf_classes() {
        judge.add_leaf_class(&mut root, m);
    }
    if !judge.passes(&root) {
        return Ok(LocalRelease::covering(freq, &setup.axes, &[]));
    }
    let layout = setup.layout;
    let mut points = layout.points(freq, &setup.axes)?;
    let found_rows = &setup.found_rows;
    let mut cutter = setup.cutter(judge);
    // the threads share the regions as they go (every region's cuts depend on that region
    // alone, so the classes are the same however the work is split)
    let threads = crate::parallel::threads();
    let pool = WorkPool::new(threads, vec![(0, points.as_mut_slice())]);
    let work = || {
        crate::parallel::map_scoped("a Mondrian thread", 0..threads, |_| {
            let _guard = pool.guard();
            let mut cutter = setup.cutter(Judge::new(freq, requirements)?);
            Ok::<_, datafusion::error::DataFusionError>(cutter.work(&pool))
        })
    };
    let finished =
        crate::parallel::reporting("Mondrian", work, found_rows, freq.rows(), progress)??
            .into_iter()
            .collect::<Result<Vec<_>>>()?;
    crate::interrupt::check()?;
    // a deterministic class order: by the smallest leaf class of each (distinct, as the
    // classes are disjoint), radix sorted with its class's position among the threads'
    let mut numbered: Vec<u64> = Vec::with_capacity(finished.iter().map(|f| f.classes.len()).sum());
    for done in &finished {
        let at = numbered.len() as u64;
        numbered.extend(
            done.classes
                .iter()
                .enumerate()
                .map(|(i, &(smallest, _))| u64::from(smallest) << 32 | (at + i as u64)),
        );
    }
    crate::sort::radix_sort(
        &mut numbered,
        32,
        u32::BITS - (freq.leaf_classes() as u32).leading_zeros(),
    );
    // every class's records and cells, at its position in `numbered`
    let found: Vec<(Range<usize>, &[Cell])> = finished
        .iter()
        .flat_map(|done| {
            let records = done.classes.iter().map(|(_, records)| records.clone());
            records.zip(done.cells.chunks_exact(layout.d.max(1)))
        })
        .collect();
    // each class's first `kept[c]` records are published; outliers trimmed go after them
    let d = layout.d;
    let mut regions: Vec<Range<usize>> = Vec::with_capacity(numbered.len());
    let mut cells = Vec::with_capacity(numbered.len() * d);
    for &word in &numbered {
        let (records, class_cells) = &found[(word & u64::from(u32::MAX)) as usize];
        regions.push(records.clone());
        cells.extend_from_slice(class_cells);
    }
    drop(found);
    drop(finished);
    let mut kept: Vec<usize> = regions.iter().map(Range::len).collect();
    let budget = cutter.judge.budget();
    if budget > 0 {
        cutter.trim_outliers(&mut points, &regions, &mut kept, &mut cells, budget);
    }
    let mut class_of = vec![SUPPRESSED; freq.leaf_classes()];
    for (c, (region, &kept)) in regions.iter().zip(&kept).enumerate() {
        let records = &points[layout.span(region)][..kept * layout.width];
        for i in 0..kept {
            class_of[layout.member(records, i) as usize] = c as u32;
        }
    }
    Ok(LocalRelease {
        class_of,
        cells,
        width: d,
    })
}

/// What every thread's [`Cutter`] shares: the QIs' axes, which hierarchies are nested, the
/// record layout, and the rows of the classes found so far.
struct Setup<'a> {
    freq: &'a FrequencySet,
    options: MondrianOptions,
    axes: Vec<QiAxis>,
    nested: Vec<bool>,
    null_leaves: Vec<Option<u32>>,
    layout: Layout,
    /// every QI ordered or nested: an ordered cut's cells are folded run by run
    runs_fold: bool,
    /// the refinement, when every QI allows it
    refine: Option<Refinement>,
    found_rows: AtomicU64,
}

impl<'a> Setup<'a> {
    /// `fold_by_runs`: fold an ordered cut's cells run by run where every QI allows it.
    fn new(freq: &'a FrequencySet, options: MondrianOptions, fold_by_runs: bool) -> Result<Self> {
        let axes = axes(freq)?;
        let nested: Vec<bool> = freq.qis().iter().map(|q| q.is_nested()).collect();
        // every QI's cells folded record by record ([`folds::Fold`])
        let foldable = axes
            .iter()
            .zip(&nested)
            .all(|(axis, &nested)| axis.is_ordered() || (nested && !axis.is_set()));
        Ok(Self {
            freq,
            options,
            null_leaves: freq.qis().iter().map(null_leaf).collect(),
            layout: Layout::new(freq.qis().len()),
            runs_fold: fold_by_runs && foldable,
            refine: options.refine.filter(|_| foldable),
            found_rows: AtomicU64::new(0),
            axes,
            nested,
        })
    }

    fn cutter<'s>(&'s self, judge: Judge<'s>) -> Cutter<'s> {
        Cutter {
            freq: self.freq,
            found_rows: &self.found_rows,
            axes: &self.axes,
            judge,
            options: self.options,
            nested: &self.nested,
            layout: self.layout,
            prefix: Vec::new(),
            suffix: Vec::new(),
            keys: Vec::new(),
            scratch: Vec::new(),
            cells: Vec::new(),
            runs_fold: self.runs_fold,
            left_persons: Vec::new(),
            right_persons: Vec::new(),
            sets: SetScratch::new(self.freq, &self.axes, &self.null_leaves),
            trial: Vec::new(),
            kept_trial: Vec::new(),
            refine: self.refine,
        }
    }
}

/// A region's first record and its records, handed to a thread.
type RegionSlice<'a> = (usize, &'a mut [u32]);

/// The classes one thread finished: per class, its smallest leaf class and its records, and
/// its cells at `cells[i * d..(i + 1) * d]`.
#[derive(Default)]
struct FinishedClasses {
    classes: Vec<(u32, Range<usize>)>,
    cells: Vec<Cell>,
}

/// Classes with more leaf classes than this are not searched for an outlier to suppress
/// (each candidate costs a pass over the class).
pub const TRIM_CANDIDATES: usize = 64;

/// The ranges of consecutive parts of `lengths` records from `start`.
fn parts(start: usize, lengths: &[usize]) -> impl Iterator<Item = Range<usize>> + '_ {
    lengths.iter().scan(start, |at, &len| {
        let part = *at..*at + len;
        *at += len;
        Some(part)
    })
}

struct Cutter<'a> {
    freq: &'a FrequencySet,
    /// rows of the classes found so far, by every thread (for progress reports)
    found_rows: &'a AtomicU64,
    axes: &'a [QiAxis],
    judge: Judge<'a>,
    options: MondrianOptions,
    /// per QI: whether its hierarchy is nested (cells can then be folded leaf by leaf)
    nested: &'a [bool],
    layout: Layout,
    /// scratch: the cost of the covering cells of each prefix / suffix of a sorted region
    prefix: Vec<f64>,
    suffix: Vec<f64>,
    /// scratch: sort keys and records
    keys: Vec<u32>,
    scratch: Vec<u32>,
    /// the cells of the region [`Self::cut`] was last given
    cells: Vec<Cell>,
    /// every QI ordered or nested: an ordered cut's prefix and suffix cells are folded run
    /// by run ([`Self::fold_runs`])
    runs_fold: bool,
    /// scratch: per criterion, the persons of the two parts of a threshold
    left_persons: Vec<PersonCount>,
    right_persons: Vec<PersonCount>,
    /// scratch of the set-based categorical QIs ([`sets`])
    sets: SetScratch<'a>,
    /// scratch: a copy of the region a rollout cuts ([`pilot`])
    trial: Vec<u32>,
    kept_trial: Vec<u32>,
    /// the refinement of small regions, when every QI allows it ([`refine`])
    refine: Option<Refinement>,
}

impl Cutter<'_> {
    /// Cuts regions taken from `pool` and their parts until none has an allowable cut, handing
    /// parts back to the pool while another thread waits for one; the classes found, with
    /// their cells (computed while their records are in cache).
    fn work<'r>(&mut self, pool: &WorkPool<RegionSlice<'r>>) -> FinishedClasses {
        let layout = self.layout;
        let mut done = FinishedClasses::default();
        let mut stack: Vec<RegionSlice<'r>> = Vec::new();
        while let Some((offset, records)) = stack.pop().or_else(|| pool.take()) {
            if crate::interrupt::requested() {
                // the classes found so far are dropped: [`partition`] returns the interruption
                pool.stop();
                break;
            }
            let len = layout.len(records);
            if let Some(refine) = self.refine
                && layout.rows(records) <= refine.zone_rows
            {
                self.finish_zone(refine, offset, records, &mut done);
                continue;
            }
            match self.cut(records) {
                Some(lengths) => {
                    let mut rest = records;
                    let mut at = offset;
                    let mut parts = Vec::with_capacity(lengths.len());
                    for &part in &lengths {
                        let (head, tail) = rest.split_at_mut(part * layout.width);
                        parts.push((at, head));
                        at += part;
                        rest = tail;
                    }
                    if pool.is_hungry() && parts.len() > 1 {
                        let kept = parts.remove(0);
                        pool.give(parts);
                        stack.push(kept);
                    } else {
                        stack.extend(parts);
                    }
                }
                None => {
                    let smallest = (0..len)
                        .map(|i| layout.member(records, i))
                        .min()
                        .unwrap_or(u32::MAX);
                    done.classes.push((smallest, offset..offset + len));
                    done.cells.extend_from_slice(&self.cells);
                    self.found_rows
                        .fetch_add(layout.rows(records), Ordering::Relaxed);
                }
            }
        }
        done
    }

    /// The region's cut: the records reordered so that the parts are consecutive, and the
    /// parts' lengths; `None` when the region is a class (its cells in `self.cells`).
    fn cut(&mut self, records: &mut [u32]) -> Option<Vec<usize>> {
        let order = self.widest_first(records)?;
        match self.refine {
            Some(refine) if self.layout.rows(records) <= refine.pilot_rows => {
                self.pilot_cut(&order, records, refine.pilot_width)
            }
            _ => self.greedy_cut(order, records),
        }
    }

    /// The region's cells into `self.cells`, and its QIs widest first (ties by QI order);
    /// `None` when the region is too small for any cut.
    fn widest_first(&mut self, records: &[u32]) -> Option<Vec<(f64, usize, Cell)>> {
        let mut cells = std::mem::take(&mut self.cells);
        cells.clear();
        self.region_cells(records, &mut cells);
        self.cells = cells;
        // both parts of any cut need k rows
        if self.layout.rows(records) < 2 * self.judge.k() {
            return None;
        }
        let qis = self.freq.qis();
        let mut order: Vec<(f64, usize, Cell)> = self
            .cells
            .iter()
            .enumerate()
            .map(|(q, &cell)| (self.axes[q].cost(&qis[q], cell), q, cell))
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        Some(order)
    }

    /// The allowable cut of the region's widest QI that has one ([`Dimension::Range`]), or
    /// the one that lowers its Loss most ([`Dimension::Loss`]).
    fn greedy_cut(
        &mut self,
        order: Vec<(f64, usize, Cell)>,
        records: &mut [u32],
    ) -> Option<Vec<usize>> {
        // (the Loss after the cut, its QI, its lengths); each try reorders the records, so
        // the best is cut again unless it was the last tried
        let mut best: Option<(f64, usize, Cell, Vec<usize>)> = None;
        let mut last = None;
        for (_, q, cell) in order {
            // a try that finds no cut may still have reordered the records
            last = Some(q);
            let Some(lengths) = self.cut_on(q, cell, records) else {
                continue;
            };
            if self.options.dimension == Dimension::Range {
                return Some(lengths);
            }
            // the Loss after the cut (the region's own Loss is the same for every QI)
            let after: f64 = parts(0, &lengths)
                .map(|p| self.records_cost(&records[self.layout.span(&p)], None))
                .sum();
            if best.as_ref().is_none_or(|(b, ..)| after < *b) {
                best = Some((after, q, cell, lengths));
            }
        }
        let (_, q, cell, lengths) = best?;
        if last == Some(q) {
            Some(lengths)
        } else {
            self.cut_on(q, cell, records)
        }
    }

    /// The allowable cut of QI `q` (current cell `cell`), if any.
    fn cut_on(&mut self, q: usize, cell: Cell, records: &mut [u32]) -> Option<Vec<usize>> {
        if self.axes[q].is_set() {
            self.set_cut(q, records)
        } else if self.axes[q].is_ordered() {
            self.ordered_cut(q, records)
        } else {
            self.hierarchical_cut(q, cell, records)
        }
    }

    /// Appends the tightest cell of every QI over `records` to `cells`: the lowest common
    /// node of hierarchical QIs, the `[min, max]` interval of ordered ones.
    fn region_cells(&self, records: &[u32], cells: &mut Vec<Cell>) {
        self.region_cells_without(records, None, cells);
    }

    /// [`Self::region_cells`] of `records` without record `skip`.
    fn region_cells_without(&self, records: &[u32], skip: Option<usize>, cells: &mut Vec<Cell>) {
        let layout = self.layout;
        let n = layout.len(records);
        for (q, (qi, axis)) in self.freq.qis().iter().zip(self.axes).enumerate() {
            let mut keys = (0..n)
                .filter(|&i| Some(i) != skip)
                .map(|i| layout.key(records, i, q));
            cells.push(if axis.is_set() {
                let mut leaves: Vec<u32> = keys.collect();
                leaves.sort_unstable();
                leaves.dedup();
                if leaves.is_empty() {
                    Cell::Top
                } else {
                    set_cell_of_leaves(qi, axis, &leaves)
                }
            } else if axis.is_ordered() {
                let (lo, hi) = keys.fold((u32::MAX, 0), |(lo, hi), r| (lo.min(r), hi.max(r)));
                axis.interval_cell(qi, lo, hi)
            } else if self.nested[q] {
                match keys.next() {
                    Some(first) => {
                        let mut climb = Climb::start(qi, first);
                        keys.for_each(|leaf| climb.add(leaf));
                        climb.cell()
                    }
                    None => Cell::Top,
                }
            } else {
                lowest_common_node(qi, keys)
            });
        }
    }

    /// Sorts `records` by `key_of` (keys below `keys`), stably: a counting sort when the keys
    /// are few next to the records (ranks of ages, children of a node), a comparison sort
    /// otherwise.
    fn sort_records(&mut self, records: &mut [u32], keys: usize, key_of: impl Fn(&[u32]) -> u32) {
        let width = self.layout.width;
        let n = self.layout.len(records);
        self.keys.clear();
        self.keys.extend(records.chunks_exact(width).map(&key_of));
        self.scratch.clear();
        self.scratch.resize(records.len(), 0);
        if keys > 4 * n {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by_key(|&i| self.keys[i as usize]);
            for (to, &from) in order.iter().enumerate() {
                let from = from as usize;
                self.scratch[to * width..(to + 1) * width]
                    .copy_from_slice(&records[from * width..(from + 1) * width]);
            }
        } else {
            let mut start = vec![0u32; keys + 1];
            for &k in &self.keys {
                start[k as usize + 1] += 1;
            }
            for i in 1..start.len() {
                start[i] += start[i - 1];
            }
            for (from, &k) in self.keys.iter().enumerate() {
                let to = start[k as usize] as usize;
                start[k as usize] += 1;
                self.scratch[to * width..(to + 1) * width]
                    .copy_from_slice(&records[from * width..(from + 1) * width]);
            }
        }
        records.copy_from_slice(&self.scratch);
    }

    /// Adds record `i` to `tally`: its rows, and with sensitive or population requirements
    /// its histograms.
    fn add_record(&mut self, tally: &mut Tally, records: &[u32], i: usize, full: bool) {
        if full {
            let m = self.layout.member(records, i) as usize;
            self.judge.add_leaf_class(tally, m);
        } else {
            tally.rows += self.layout.size(records, i);
        }
    }

    /// Σ over the region's rows and QIs of the cost of its tightest cells; with `skip`, of the
    /// region without that record.
    fn records_cost(&self, records: &[u32], skip: Option<usize>) -> f64 {
        let mut cells = Vec::with_capacity(self.layout.d);
        self.region_cells_without(records, skip, &mut cells);
        let skipped = skip.map_or(0, |i| self.layout.size(records, i));
        (self.layout.rows(records) - skipped) as f64 * self.cells_cost(&cells)
    }

    /// Σ over QIs of the cost of one class's `cells`.
    fn cells_cost(&self, cells: &[Cell]) -> f64 {
        let qis = self.freq.qis();
        cells
            .iter()
            .enumerate()
            .map(|(q, &cell)| self.axes[q].cost(&qis[q], cell))
            .sum()
    }
}
