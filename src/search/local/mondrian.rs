//! Strict multidimensional Mondrian (LeFevre, DeWitt, Ramakrishnan, ICDE 2006), top-down on
//! the frequency set, with hierarchy-aware cuts.
//!
//! Start with one region holding every leaf class. Take a region; try its quasi-identifiers
//! in decreasing order of the Loss of the region's current cell (its *normalized range*: an
//! interval's share of the domain, a node's share of the hierarchy's leaves), and cut on the
//! first that has an **allowable** cut: one whose every part meets the whole policy (k rows,
//! and each sensitive attribute's l and t, t against the whole table). Parts go back on the
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
//! **Strictness.** Regions never overlap in raw values, and a published region admits no
//! allowable threshold on an ordered QI and no allowable two-group split of its node's
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
//! and never touches the rows. Once [`SHARE_AT`] regions exist they are shared between the
//! machine's threads (a region's cuts depend on that region alone).

use datafusion::error::Result;

use super::{Cell, Judge, LocalRelease, QiAxis, Tally, axes, covering_cell};
use crate::policy::PrivacyRequirements;
use crate::search::FrequencySet;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MondrianOptions {
    pub dimension: Dimension,
    pub threshold: Threshold,
}

impl MondrianOptions {
    /// The paper's choices: widest range, median threshold.
    pub fn paper() -> Self {
        Self {
            dimension: Dimension::Range,
            threshold: Threshold::Median,
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
    let axes = axes(freq)?;
    let mut judge = Judge::new(freq, requirements)?;
    let all: Vec<u32> = (0..freq.leaf_classes() as u32).collect();
    let mut root = judge.tally();
    for &m in &all {
        judge.add_leaf_class(&mut root, m as usize);
    }
    if !judge.passes(&root) {
        return Ok(LocalRelease::covering(freq, &axes, &[]));
    }
    let new_cutter = |judge| Cutter {
        freq,
        axes: &axes,
        judge,
        options,
        nested: freq.qis().iter().map(|q| q.is_nested()).collect(),
        prefix: Vec::new(),
        suffix: Vec::new(),
    };
    let mut cutter = new_cutter(judge);
    // cut on one thread until there are regions enough to share, then each thread finishes
    // its share (every region's cuts depend on that region alone, so the classes are the
    // same however the work is split)
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut stack = vec![all];
    let mut classes = Vec::new();
    while let Some(region) = stack.pop() {
        match cutter.cut(&region) {
            Some(parts) => stack.extend(parts),
            None => classes.push(region),
        }
        if threads > 1 && stack.len() >= SHARE_AT {
            break;
        }
    }
    if !stack.is_empty() {
        // largest first, each to the thread with the fewest leaf classes so far
        stack.sort_by_key(|r| std::cmp::Reverse(r.len()));
        let mut shares: Vec<(usize, Vec<Vec<u32>>)> = vec![(0, Vec::new()); threads];
        for region in stack {
            let lightest = (0..threads).min_by_key(|&t| shares[t].0).unwrap_or(0);
            shares[lightest].0 += region.len();
            shares[lightest].1.push(region);
        }
        let results: Vec<Result<Vec<Vec<u32>>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = shares
                .into_iter()
                .map(|(_, mut stack)| {
                    let new_cutter = &new_cutter;
                    scope.spawn(move || -> Result<Vec<Vec<u32>>> {
                        let mut cutter = new_cutter(Judge::new(freq, requirements)?);
                        let mut done = Vec::new();
                        while let Some(region) = stack.pop() {
                            match cutter.cut(&region) {
                                Some(parts) => stack.extend(parts),
                                None => done.push(region),
                            }
                        }
                        Ok(done)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(datafusion::error::DataFusionError::Internal(
                            "a Mondrian thread panicked".to_string(),
                        ))
                    })
                })
                .collect()
        });
        for done in results {
            classes.extend(done?);
        }
    }
    // a deterministic class order: by the smallest leaf class of each
    classes.sort_unstable_by_key(|members| members.iter().copied().min());
    let budget = cutter.judge.budget();
    if budget > 0 {
        cutter.trim_outliers(&mut classes, budget);
    }
    Ok(LocalRelease::covering(freq, &axes, &classes))
}

/// Regions cut on one thread before the rest is shared between threads.
pub const SHARE_AT: usize = 8;

/// Classes with more leaf classes than this are not searched for an outlier to suppress
/// (each candidate costs a pass over the class).
pub const TRIM_CANDIDATES: usize = 64;

/// `pairs` of (key < `keys`, member) in ascending key order, members in their order within
/// a key: a counting sort when the keys are few next to the pairs (ranks of ages, children of
/// a node), a comparison sort otherwise.
fn sort_by_key(pairs: &mut Vec<(u32, u32)>, keys: usize) {
    if keys > 4 * pairs.len() {
        pairs.sort_by_key(|p| p.0);
        return;
    }
    let mut start = vec![0u32; keys + 1];
    for &(k, _) in pairs.iter() {
        start[k as usize + 1] += 1;
    }
    for i in 1..start.len() {
        start[i] += start[i - 1];
    }
    let mut sorted = vec![(0u32, 0u32); pairs.len()];
    for &(k, m) in pairs.iter() {
        let slot = &mut start[k as usize];
        sorted[*slot as usize] = (k, m);
        *slot += 1;
    }
    *pairs = sorted;
}

struct Cutter<'a> {
    freq: &'a FrequencySet,
    axes: &'a [QiAxis],
    judge: Judge<'a>,
    options: MondrianOptions,
    /// per QI: whether its hierarchy is nested (cells can then be folded leaf by leaf)
    nested: Vec<bool>,
    /// scratch: the cost of the covering cells of each prefix / suffix of a sorted region
    prefix: Vec<f64>,
    suffix: Vec<f64>,
}

impl Cutter<'_> {
    /// The parts of the region's allowable cut on its widest QI that has one.
    fn cut(&mut self, region: &[u32]) -> Option<Vec<Vec<u32>>> {
        let qis = self.freq.qis();
        let leaf_codes = self.freq.leaf_codes();
        let mut order: Vec<(f64, usize, Cell)> = (0..qis.len())
            .map(|q| {
                let cell = covering_cell(&qis[q], &self.axes[q], &leaf_codes[q], region);
                (self.axes[q].cost(&qis[q], cell), q, cell)
            })
            .collect();
        // widest first; ties by QI order
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut best: Option<(f64, Vec<Vec<u32>>)> = None;
        for (_, q, cell) in order {
            let parts = if self.axes[q].is_ordered() {
                self.ordered_cut(q, region)
            } else {
                self.hierarchical_cut(q, cell, region)
            };
            let Some(parts) = parts else { continue };
            if self.options.dimension == Dimension::Range {
                return Some(parts);
            }
            // the Loss after the cut (the region's own Loss is the same for every QI)
            let after: f64 = parts.iter().map(|p| self.region_cost(p)).sum();
            if best.as_ref().is_none_or(|(b, _)| after < *b) {
                best = Some((after, parts));
            }
        }
        best.map(|(_, parts)| parts)
    }

    /// Suppresses outliers within `budget` rows where that lowers the Loss: per class, the leaf
    /// class whose removal lowers the class's total cell cost by more than its own rows cost
    /// when suppressed (d per row), the rest still meeting the policy; best gains first, one
    /// per class per round, until no gain or no budget is left.
    fn trim_outliers(&mut self, classes: &mut [Vec<u32>], mut budget: u64) {
        let d = self.freq.qis().len() as f64;
        let sizes = self.freq.sizes();
        loop {
            // (gain, class, position of the leaf class in it)
            let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
            for (c, members) in classes.iter().enumerate() {
                if members.len() < 2 || members.len() > TRIM_CANDIDATES {
                    continue;
                }
                let before = self.region_cost(members);
                let mut best: Option<(f64, usize)> = None;
                let mut rest = Vec::with_capacity(members.len() - 1);
                for i in 0..members.len() {
                    let rows = sizes[members[i] as usize];
                    if rows > budget {
                        continue;
                    }
                    rest.clear();
                    rest.extend(
                        members
                            .iter()
                            .enumerate()
                            .filter(|&(j, _)| j != i)
                            .map(|(_, &m)| m),
                    );
                    let gain = before - self.region_cost(&rest) - rows as f64 * d;
                    if gain <= 1e-9 || best.is_some_and(|(b, _)| b >= gain) {
                        continue;
                    }
                    let mut tally = self.judge.tally();
                    for &m in &rest {
                        self.judge.add_leaf_class(&mut tally, m as usize);
                    }
                    if self.judge.passes(&tally) {
                        best = Some((gain, i));
                    }
                }
                if let Some((gain, i)) = best {
                    candidates.push((gain, c, i));
                }
            }
            candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut trimmed = false;
            for (_, c, i) in candidates {
                let rows = sizes[classes[c][i] as usize];
                if rows <= budget {
                    budget -= rows;
                    classes[c].remove(i);
                    trimmed = true;
                }
            }
            if !trimmed {
                return;
            }
        }
    }

    /// The cost (Σ over QIs of the Loss of the covering cells) of every prefix of `members`
    /// (entry i: the first i + 1 members) into `self.prefix`, or `self.suffix` when `suffix`.
    /// Ordered QIs keep a rank range; hierarchical ones climb from one representative leaf,
    /// which finds the lowest common node when the hierarchy is nested (else the prefix is
    /// recomputed). A QI's cost is recomputed only when its cell changes.
    fn fold_cells(&mut self, members: impl Iterator<Item = u32> + Clone, suffix: bool) {
        let qis = self.freq.qis();
        let leaf_codes = self.freq.leaf_codes();
        let d = qis.len();
        let mut out = std::mem::take(if suffix {
            &mut self.suffix
        } else {
            &mut self.prefix
        });
        out.clear();
        // per QI: (lo rank, hi rank) or (representative leaf, level); level = height is `*`
        let mut state: Vec<(u32, u32)> = vec![(u32::MAX, 0); d];
        let mut cells: Vec<Option<Cell>> = vec![None; d];
        let mut costs = vec![0.0; d];
        let all_nested = self.nested.iter().all(|&n| n);
        let mut seen: Vec<u32> = Vec::new();
        for (i, m) in members.enumerate() {
            if !all_nested {
                seen.push(m);
            }
            for q in 0..d {
                let (qi, axis) = (&qis[q], &self.axes[q]);
                let leaf = leaf_codes[q][m as usize];
                let cell = if axis.is_ordered() {
                    let r = axis.rank_of_leaf()[leaf as usize];
                    let (lo, hi) = &mut state[q];
                    (*lo, *hi) = if i == 0 {
                        (r, r)
                    } else {
                        ((*lo).min(r), (*hi).max(r))
                    };
                    axis.interval_cell(qi, *lo, *hi)
                } else if self.nested[q] {
                    let (rep, level) = &mut state[q];
                    if i == 0 {
                        (*rep, *level) = (leaf, 0);
                    }
                    let height = qi.height() as u32;
                    while *level < height
                        && qi.leaf_map(*level as usize)[leaf as usize]
                            != qi.leaf_map(*level as usize)[*rep as usize]
                    {
                        *level += 1;
                    }
                    if *level == height {
                        Cell::Top
                    } else {
                        Cell::Node {
                            level: *level,
                            code: qi.leaf_map(*level as usize)[*rep as usize],
                        }
                    }
                } else {
                    covering_cell(qi, axis, &leaf_codes[q], &seen)
                };
                if cells[q] != Some(cell) {
                    cells[q] = Some(cell);
                    costs[q] = axis.cost(qi, cell);
                }
            }
            out.push(costs.iter().sum());
        }
        if suffix {
            self.suffix = out;
        } else {
            self.prefix = out;
        }
    }

    /// Σ over the region's rows and QIs of the cost of its tightest cells.
    fn region_cost(&self, region: &[u32]) -> f64 {
        let qis = self.freq.qis();
        let leaf_codes = self.freq.leaf_codes();
        let rows: u64 = region.iter().map(|&m| self.freq.sizes()[m as usize]).sum();
        let cost: f64 = (0..qis.len())
            .map(|q| {
                let cell = covering_cell(&qis[q], &self.axes[q], &leaf_codes[q], region);
                self.axes[q].cost(&qis[q], cell)
            })
            .sum();
        rows as f64 * cost
    }

    /// The allowable threshold closest to the median of QI `q`'s values in the region.
    fn ordered_cut(&mut self, q: usize, region: &[u32]) -> Option<Vec<Vec<u32>>> {
        let codes = &self.freq.leaf_codes()[q];
        let rank = self.axes[q].rank_of_leaf();
        let mut sorted: Vec<(u32, u32)> = region
            .iter()
            .map(|&m| (rank[codes[m as usize] as usize], m))
            .collect();
        sort_by_key(&mut sorted, rank.len());
        if sorted.first()?.0 == sorted.last()?.0 {
            return None;
        }
        let sizes = self.freq.sizes();
        let total_rows: u64 = region.iter().map(|&m| sizes[m as usize]).sum();
        let k = self.judge.k();
        let with_sensitive = self.judge.has_sensitive();
        let (mut total, mut left, mut right) =
            (self.judge.tally(), self.judge.tally(), Tally::default());
        if with_sensitive {
            for &(_, m) in &sorted {
                self.judge.add_leaf_class(&mut total, m as usize);
            }
        }
        let by_loss = self.options.threshold == Threshold::Loss;
        if by_loss {
            self.fold_cells(sorted.iter().map(|&(_, m)| m), false);
            self.fold_cells(sorted.iter().rev().map(|&(_, m)| m), true);
        }
        // (the parts' cost, distance of the left part's rows from half, end of the left part)
        let mut best: Option<(f64, u64, usize)> = None;
        let mut i = 0;
        while i < sorted.len() {
            let value = sorted[i].0;
            while i < sorted.len() && sorted[i].0 == value {
                let m = sorted[i].1 as usize;
                if with_sensitive {
                    self.judge.add_leaf_class(&mut left, m);
                } else {
                    left.rows += sizes[m];
                }
                i += 1;
            }
            if i == sorted.len() {
                break;
            }
            let right_rows = total_rows - left.rows;
            if left.rows < k || right_rows < k {
                continue;
            }
            let distance = (2 * left.rows).abs_diff(total_rows);
            let cost = if by_loss {
                // prefix i − 1 covers sorted[..i]; suffix j covers the last j + 1 members
                let j = sorted.len() - i - 1;
                left.rows as f64 * self.prefix[i - 1] + right_rows as f64 * self.suffix[j]
            } else {
                0.0
            };
            if best.is_some_and(|(c, b, _)| (c, b) <= (cost, distance)) {
                continue;
            }
            let allowable = if with_sensitive {
                right.clone_from(&total);
                right.subtract(&left);
                self.judge.passes(&left) && self.judge.passes(&right)
            } else {
                true
            };
            if allowable {
                best = Some((cost, distance, i));
            }
        }
        let (_, _, end) = best?;
        let left_part = sorted[..end].iter().map(|&(_, m)| m).collect();
        let right_part = sorted[end..].iter().map(|&(_, m)| m).collect();
        Some(vec![left_part, right_part])
    }

    /// Splits the region's lowest common node of QI `q` into its children (see the module
    /// documentation).
    fn hierarchical_cut(&mut self, q: usize, cell: Cell, region: &[u32]) -> Option<Vec<Vec<u32>>> {
        let qi = &self.freq.qis()[q];
        let child_level = match cell {
            Cell::Node { level: 0, .. } | Cell::Interval { .. } => return None,
            Cell::Node { level, .. } => level as usize - 1,
            // NULL mixed with values: split at the top level, where NULL has its own code
            Cell::Top => qi.height().checked_sub(1)?,
        };
        let map = qi.leaf_map(child_level);
        let codes = &self.freq.leaf_codes()[q];
        let mut by_child: Vec<(u32, u32)> = region
            .iter()
            .map(|&m| (map[codes[m as usize] as usize], m))
            .collect();
        sort_by_key(&mut by_child, qi.cardinality(child_level));
        let mut children: Vec<(Vec<u32>, Tally)> = Vec::new();
        for chunk in by_child.chunk_by(|a, b| a.0 == b.0) {
            let members: Vec<u32> = chunk.iter().map(|&(_, m)| m).collect();
            let mut tally = self.judge.tally();
            for &m in &members {
                self.judge.add_leaf_class(&mut tally, m as usize);
            }
            children.push((members, tally));
        }
        if children.len() < 2 {
            return None;
        }
        if let Some(parts) = self.pooled_parts(&children) {
            return Some(parts);
        }
        if children.len() <= EXHAUSTIVE_CHILDREN {
            return self.best_two_groups(&children);
        }
        None
    }

    /// Children meeting the policy alone as parts, the others pooled; `None` unless that
    /// gives at least two parts.
    fn pooled_parts(&mut self, children: &[(Vec<u32>, Tally)]) -> Option<Vec<Vec<u32>>> {
        let mut parts: Vec<(Vec<u32>, Tally)> = Vec::new();
        let mut pool: (Vec<u32>, Tally) = (Vec::new(), self.judge.tally());
        for (members, tally) in children {
            if self.judge.passes(tally) {
                parts.push((members.clone(), tally.clone()));
            } else {
                pool.0.extend_from_slice(members);
                pool.1.add(tally);
            }
        }
        // largest first, so the pool joins the smallest parts
        parts.sort_by(|a, b| b.1.rows.cmp(&a.1.rows).then(a.0.cmp(&b.0)));
        while !pool.0.is_empty() && !self.judge.passes(&pool.1) {
            let (members, tally) = parts.pop()?;
            pool.0.extend(members);
            pool.1.add(&tally);
        }
        if !pool.0.is_empty() {
            parts.push(pool);
        }
        (parts.len() >= 2).then(|| parts.into_iter().map(|(m, _)| m).collect())
    }

    /// The most balanced split of the children into two groups that both meet the policy.
    fn best_two_groups(&mut self, children: &[(Vec<u32>, Tally)]) -> Option<Vec<Vec<u32>>> {
        let c = children.len();
        let mut total = self.judge.tally();
        for (_, t) in children {
            total.add(t);
        }
        let (mut left, mut right) = (self.judge.tally(), self.judge.tally());
        let mut best: Option<(u64, u32)> = None;
        // the last child always goes right: each split is tried once
        for mask in 1u32..(1 << (c - 1)) {
            left.clear();
            for (i, (_, t)) in children.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    left.add(t);
                }
            }
            let distance = (2 * left.rows).abs_diff(total.rows);
            if best.is_some_and(|(b, _)| b <= distance) {
                continue;
            }
            right.clone_from(&total);
            right.subtract(&left);
            if self.judge.passes(&left) && self.judge.passes(&right) {
                best = Some((distance, mask));
            }
        }
        let (_, mask) = best?;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (i, (members, _)) in children.iter().enumerate() {
            if mask & (1 << i) != 0 {
                a.extend_from_slice(members);
            } else {
                b.extend_from_slice(members);
            }
        }
        Some(vec![a, b])
    }
}
