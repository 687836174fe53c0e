//! The cells of a region's prefixes and suffixes, for an ordered cut's cost: folded record by
//! record ([`Climb`] for nested hierarchies, rank ranges for ordered QIs), or run by run.

use super::Cutter;
use crate::search::QiDomain;
use crate::search::local::{Cell, QiAxis, lowest_common_node};

/// The lowest common node of the leaves added so far, in a nested hierarchy: it climbs from
/// the first leaf while a new leaf's code at the current level differs (one load per leaf,
/// where [`lowest_common_node`] passes over the leaves once per level it tries).
#[derive(Clone, Copy)]
pub(super) struct Climb<'a> {
    qi: &'a QiDomain,
    /// the first leaf added
    leaf: u32,
    /// the current level; the height is `*`
    level: u32,
    /// the current level's leaf map (empty at `*`) and the first leaf's code in it
    map: &'a [u32],
    code: u32,
}

impl<'a> Climb<'a> {
    pub(super) fn start(qi: &'a QiDomain, leaf: u32) -> Self {
        let map = qi.leaf_map(0);
        Self {
            qi,
            leaf,
            level: 0,
            map,
            code: map[leaf as usize],
        }
    }

    #[inline]
    pub(super) fn add(&mut self, leaf: u32) {
        while !self.map.is_empty() && self.map[leaf as usize] != self.code {
            self.level += 1;
            if self.level as usize == self.qi.height() {
                self.map = &[];
            } else {
                self.map = self.qi.leaf_map(self.level as usize);
                self.code = self.map[self.leaf as usize];
            }
        }
    }

    /// Moves the climb up to `level` (at least its own).
    fn raise(&mut self, level: u32) {
        self.level = level;
        if level as usize >= self.qi.height() {
            self.map = &[];
        } else {
            self.map = self.qi.leaf_map(level as usize);
            self.code = self.map[self.leaf as usize];
        }
    }

    /// The lowest common node of this climb's leaves and `other`'s: in a nested hierarchy,
    /// the lowest level at or above both nodes where their representative leaves meet.
    fn join(&mut self, other: &Climb<'a>) {
        if other.level > self.level {
            self.raise(other.level);
        }
        self.add(other.leaf);
    }

    pub(super) fn cell(&self) -> Cell {
        if self.map.is_empty() {
            Cell::Top
        } else {
            Cell::Node {
                level: self.level,
                code: self.code,
            }
        }
    }
}

/// The cell of one QI over records folded one by one, or joined run by run: a rank range
/// for an ordered QI, a climb for a nested hierarchy.
#[derive(Clone, Copy)]
pub(super) enum Fold<'a> {
    Ranks(u32, u32),
    Climb(Climb<'a>),
}

impl<'a> Fold<'a> {
    pub(super) fn start(qi: &'a QiDomain, axis: &QiAxis, key: u32) -> Self {
        if axis.is_ordered() {
            Fold::Ranks(key, key)
        } else {
            Fold::Climb(Climb::start(qi, key))
        }
    }

    #[inline]
    pub(super) fn add(&mut self, key: u32) {
        match self {
            Fold::Ranks(lo, hi) => (*lo, *hi) = ((*lo).min(key), (*hi).max(key)),
            Fold::Climb(climb) => climb.add(key),
        }
    }

    pub(super) fn join(&mut self, other: &Fold<'a>) {
        match (self, other) {
            (Fold::Ranks(lo, hi), Fold::Ranks(a, b)) => (*lo, *hi) = ((*lo).min(*a), (*hi).max(*b)),
            (Fold::Climb(climb), Fold::Climb(other)) => climb.join(other),
            // the folds of one QI are all of one kind
            _ => {}
        }
    }

    pub(super) fn cell(&self, qi: &QiDomain, axis: &QiAxis) -> Cell {
        match self {
            Fold::Ranks(lo, hi) => axis.interval_cell(qi, *lo, *hi),
            Fold::Climb(climb) => climb.cell(),
        }
    }
}

impl Cutter<'_> {
    /// [`Self::fold_cells`] both ways in one pass, when every QI is ordered or nested: each
    /// run of equal keys of `q` is folded once into a cell per QI, and the prefixes and
    /// suffixes that end a run are joins of whole runs (the same cells, so the same costs).
    pub(super) fn fold_runs(&mut self, records: &[u32], q: usize) {
        let (qis, axes) = (self.freq.qis(), self.axes);
        let layout = self.layout;
        let d = layout.d;
        let n = layout.len(records);
        // per run, its first record and (at `folds[r * d..]`) its cells
        let mut starts: Vec<usize> = Vec::new();
        let mut folds: Vec<Fold> = Vec::new();
        let mut i = 0;
        while i < n {
            let key = layout.key(records, i, q);
            starts.push(i);
            let run = folds.len();
            folds.extend(
                qis.iter()
                    .zip(axes)
                    .enumerate()
                    .map(|(p, (qi, axis))| Fold::start(qi, axis, layout.key(records, i, p))),
            );
            i += 1;
            while i < n && layout.key(records, i, q) == key {
                for (p, fold) in folds[run..].iter_mut().enumerate() {
                    fold.add(layout.key(records, i, p));
                }
                i += 1;
            }
        }
        let cost = |acc: &[Fold]| -> f64 {
            acc.iter()
                .zip(qis.iter().zip(axes))
                .map(|(fold, (qi, axis))| axis.cost(qi, fold.cell(qi, axis)))
                .sum()
        };
        let runs = starts.len();
        let mut acc: Vec<Fold> = Vec::with_capacity(d);
        let mut prefix = std::mem::take(&mut self.prefix);
        prefix.clear();
        prefix.resize(n, f64::NAN);
        for r in 0..runs {
            let run = &folds[r * d..(r + 1) * d];
            if r == 0 {
                acc.extend_from_slice(run);
            } else {
                acc.iter_mut().zip(run).for_each(|(a, b)| a.join(b));
            }
            // prefix entry i covers the first i + 1 records
            prefix[starts.get(r + 1).copied().unwrap_or(n) - 1] = cost(&acc);
        }
        let mut suffix = std::mem::take(&mut self.suffix);
        suffix.clear();
        suffix.resize(n, f64::NAN);
        acc.clear();
        for r in (0..runs).rev() {
            let run = &folds[r * d..(r + 1) * d];
            if r == runs - 1 {
                acc.extend_from_slice(run);
            } else {
                acc.iter_mut().zip(run).for_each(|(a, b)| a.join(b));
            }
            // suffix entry j covers the last j + 1 records
            suffix[n - 1 - starts[r]] = cost(&acc);
        }
        self.prefix = prefix;
        self.suffix = suffix;
    }

    /// The cost (Σ over QIs of the Loss of the covering cells) of the prefixes of `records`
    /// (sorted by QI `q`) that end a run of equal keys of `q` (entry i: the first i + 1
    /// records) into `self.prefix`, or of the suffixes that start one (entry j: the last
    /// j + 1) into `self.suffix`; the other entries are not meaningful, since a cut falls
    /// between runs only. Ordered QIs keep a rank range; hierarchical ones climb from one
    /// representative leaf, which finds the lowest common node when the hierarchy is nested
    /// (else the cell is recomputed). Cells and costs are computed at run ends only: a large
    /// region has few runs (distinct ages) next to its records.
    pub(super) fn fold_cells(&mut self, records: &[u32], q: usize, suffix: bool) {
        let qis = self.freq.qis();
        let layout = self.layout;
        let d = layout.d;
        let n = layout.len(records);
        let mut out = std::mem::take(if suffix {
            &mut self.suffix
        } else {
            &mut self.prefix
        });
        out.clear();
        out.resize(n, f64::NAN);
        // per ordered QI: (lo rank, hi rank); per nested hierarchical one, its climb
        let mut ranks: Vec<(u32, u32)> = vec![(u32::MAX, 0); d];
        let mut climbs: Vec<Option<Climb>> = vec![None; d];
        self.sets.start_fold();
        let all_nested = self.nested.iter().all(|&n| n);
        let mut seen: Vec<usize> = Vec::new();
        for (step, entry) in out.iter_mut().enumerate() {
            let i = if suffix { n - 1 - step } else { step };
            if !all_nested {
                seen.push(i);
            }
            for (p, (qi, axis)) in qis.iter().zip(self.axes).enumerate() {
                let key = layout.key(records, i, p);
                if axis.is_set() {
                    self.sets.fold(p, key);
                } else if axis.is_ordered() {
                    let (a, b) = &mut ranks[p];
                    (*a, *b) = if step == 0 {
                        (key, key)
                    } else {
                        ((*a).min(key), (*b).max(key))
                    };
                } else if self.nested[p] {
                    match &mut climbs[p] {
                        Some(climb) => climb.add(key),
                        None => climbs[p] = Some(Climb::start(qi, key)),
                    }
                }
            }
            // the end of a run of equal keys of `q`, in the direction of the fold
            let next = if suffix {
                i.checked_sub(1)
            } else {
                Some(i + 1)
            };
            let run_ends = next
                .filter(|&j| j < n)
                .is_none_or(|j| layout.key(records, j, q) != layout.key(records, i, q));
            if !run_ends {
                continue;
            }
            let mut cost = 0.0;
            for (p, (qi, axis)) in qis.iter().zip(self.axes).enumerate() {
                let cell = if axis.is_set() {
                    self.sets.folded_cell(p, qi, axis)
                } else if axis.is_ordered() {
                    axis.interval_cell(qi, ranks[p].0, ranks[p].1)
                } else if let Some(climb) = &climbs[p] {
                    climb.cell()
                } else {
                    lowest_common_node(qi, seen.iter().map(|&j| layout.key(records, j, p)))
                };
                cost += axis.cost(qi, cell);
            }
            *entry = cost;
        }
        if suffix {
            self.suffix = out;
        } else {
            self.prefix = out;
        }
    }
}
