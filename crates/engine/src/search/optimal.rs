//! The exact optimal full-domain search: among all lattice nodes that satisfy the
//! requirements, the one with the smallest metric.
//!
//! ## Ties
//! Costs within 1e-12 (Loss, Precision; exact for Discernibility and Classes) are equal; ties
//! go to the lowest node height (sum of levels), then to the lexicographically smallest level
//! vector (QIs in the order given).
//!
//! ## Order and bounds
//! Loss and Precision have a data-free lower bound: their value when nothing is suppressed
//! (Loss: Σ_j mean cost of QI j at its level / d; Precision: mean of level/top). A suppressed
//! cell costs 1, at least as much as any cell, so the bound never exceeds the node's value,
//! and it *is* the value when no row is suppressed. Nodes are visited by increasing bound
//! (then height, then level vector); the search stops at the first node whose bound exceeds
//! the best value found. Discernibility and Classes have no such bound: every node is visited
//! (by height), unless pruned by monotonicity.
//!
//! ## Monotonicity (predictive tagging, as in OLA and Flash)
//! With nested hierarchies (each level a coarsening of the lower ones), "satisfies" is
//! monotone when `Criteria::monotone` (in `evaluate.rs`) holds: nothing may be suppressed, or the requirements
//! are only k and distinct l. Then:
//! - a failing node tags all its specializations as failing, and a *climb* follows a chain of
//!   successors (cheapest bound first) and binary-searches it for the highest failing node,
//!   whose whole down-set is then tagged failing;
//! - a satisfying node tags all its generalizations as satisfying. When nothing may be
//!   suppressed, every metric is monotone too (a generalization merges classes: Loss,
//!   Precision and Discernibility grow, Classes shrink) and a generalization is higher, so it
//!   never wins a tie: the whole up-set is dropped. With suppression their values are unknown
//!   and they are still evaluated (if their bound allows).
//!
//! Otherwise (entropy l, recursive l or t with suppression allowed) satisfying is not
//! monotone, but its *monotone part* is: k and distinct l with the same suppression limit
//! (rows of classes failing them can only grow when specializing). A node failing the
//! monotone part fails, and so does its down-set: failing-down tagging and the climb use that
//! part; satisfying nodes tag nothing. Non-nested hierarchies turn all tagging off; only the
//! bound prunes then.
//!
//! Nodes are evaluated by rolling up the classes of a cached finer node when one fits (see
//! [`super::evaluate`]).

use super::Metric;
use super::evaluate::{Evaluator, NodeStats, precision_without_suppression};

const UNKNOWN: u8 = 0;
/// fails the monotone predicate, hence so does its down-set
const FAIL: u8 = 1;
/// evaluated, fails the requirements but not their monotone part
const REJECTED: u8 = 5;
/// known to satisfy (implied by a satisfying specialization), value unknown
const PASS: u8 = 2;
/// evaluated, satisfies, already considered
const DONE: u8 = 3;
/// satisfies but cannot be optimal (a generalization of a satisfying node, no suppression)
const DOMINATED: u8 = 4;

/// The best node: its index, its value (the metric's cost) and figures.
pub(crate) struct Best {
    pub node: usize,
    pub cost: f64,
    pub stats: NodeStats,
}

struct Search<'e, 'a> {
    ev: &'e mut Evaluator<'a>,
    metric: Metric,
    tags: Vec<u8>,
    bound: Option<Vec<f64>>,
    heights: Vec<u32>,
    /// tagging: `None` (no monotonicity), `Some(true)` (satisfying is monotone), `Some(false)`
    /// (only the monotone part is)
    mode: Option<bool>,
    zero_budget: bool,
    best: Option<Best>,
    progress: &'e mut dyn FnMut(usize, usize),
}

/// Runs the optimal search; `None` when no node satisfies the requirements.
pub(crate) fn optimal(
    ev: &mut Evaluator<'_>,
    metric: Metric,
    progress: &mut dyn FnMut(usize, usize),
) -> Option<Best> {
    let lattice = ev.lattice.clone();
    let size = lattice.size();
    let heights: Vec<u32> = lattice.nodes().map(|i| lattice.height(i) as u32).collect();
    let qi_heights = lattice.heights().to_vec();
    let mut levels = vec![0; lattice.dimensions()];
    let bound: Option<Vec<f64>> = match metric {
        Metric::Loss => Some(
            lattice
                .nodes()
                .map(|i| {
                    lattice.levels_into(i, &mut levels);
                    ev.freq.loss_without_suppression(&levels)
                })
                .collect(),
        ),
        Metric::Precision => Some(
            lattice
                .nodes()
                .map(|i| {
                    lattice.levels_into(i, &mut levels);
                    precision_without_suppression(&qi_heights, &levels)
                })
                .collect(),
        ),
        Metric::Discernibility | Metric::Classes => None,
    };
    let mut order: Vec<u32> = (0..size as u32).collect();
    match &bound {
        Some(b) => order.sort_unstable_by(|&x, &y| {
            let (x, y) = (x as usize, y as usize);
            b[x].total_cmp(&b[y])
                .then(heights[x].cmp(&heights[y]))
                .then(x.cmp(&y))
        }),
        None => order.sort_unstable_by_key(|&x| (heights[x as usize], x)),
    }
    let mode = ev.freq.is_nested().then(|| ev.criteria.monotone());
    let zero_budget = ev.criteria.budget == 0;
    let mut search = Search {
        ev,
        metric,
        tags: vec![UNKNOWN; size],
        bound,
        heights,
        mode,
        zero_budget,
        best: None,
        progress,
    };
    for &node in &order {
        let node = node as usize;
        if crate::interrupt::requested() {
            // [`super::search`] returns the interruption
            break;
        }
        if let (Some(best), Some(bound)) = (&search.best, &search.bound)
            && bound[node] > best.cost + metric.tolerance()
        {
            break;
        }
        if search.tags[node] != UNKNOWN && search.tags[node] != PASS {
            continue;
        }
        if search.check(node) {
            search.climb(node);
        }
    }
    search.best
}

impl Search<'_, '_> {
    /// Evaluates `node`, tags, and considers it. Whether it fails the monotone predicate
    /// (its down-set then fails too; always false without tagging).
    fn check(&mut self, node: usize) -> bool {
        let stats = self.ev.evaluate(node);
        (self.progress)(self.ev.evaluated, self.ev.lattice.size());
        let monotone_fail = match self.mode {
            None => false,
            Some(true) => !stats.satisfies,
            Some(false) => !stats.monotone_satisfies,
        };
        if stats.satisfies {
            self.tags[node] = DONE;
            if self.mode == Some(true) {
                let tag = if self.zero_budget { DOMINATED } else { PASS };
                self.tag_up(node, tag);
            }
            let cost = self.metric.cost(&stats);
            if self.is_better(cost, node) {
                self.best = Some(Best { node, cost, stats });
            }
        } else if monotone_fail {
            self.tag_down(node);
        } else {
            self.tags[node] = REJECTED;
        }
        monotone_fail
    }

    /// Whether `node` with `cost` beats the best so far (tie rule in the module docs).
    fn is_better(&self, cost: f64, node: usize) -> bool {
        let Some(best) = &self.best else {
            return true;
        };
        let tolerance = self.metric.tolerance();
        if cost < best.cost - tolerance {
            return true;
        }
        if cost > best.cost + tolerance {
            return false;
        }
        (self.heights[node], node) < (self.heights[best.node], best.node)
    }

    /// Tags the strict generalizations of `node` with `tag` where nothing better is known.
    fn tag_up(&mut self, node: usize, tag: u8) {
        let lattice = &self.ev.lattice;
        let (low, high) = (lattice.levels(node), lattice.top_levels());
        let tags = &mut self.tags;
        lattice.for_each_between(&low, &high, |m| {
            if m != node && (tags[m] == UNKNOWN || tags[m] == PASS) {
                tags[m] = tag;
            }
        });
    }

    /// Tags every specialization of the failing `node` as failing.
    fn tag_down(&mut self, node: usize) {
        let lattice = &self.ev.lattice;
        let (low, high) = (vec![0; lattice.dimensions()], lattice.levels(node));
        let tags = &mut self.tags;
        lattice.for_each_between(&low, &high, |m| tags[m] = FAIL);
    }

    /// From the failing `start`, follows successors not known to satisfy (cheapest bound
    /// first) and binary-searches that chain for its highest failing node, whose down-set is
    /// then tagged failing. The chain is monotone: failing nodes, then satisfying ones.
    fn climb(&mut self, start: usize) {
        let mut path = vec![start];
        let mut current = start;
        loop {
            let next = self
                .ev
                .lattice
                .successors(current)
                .filter(|&s| matches!(self.tags[s], UNKNOWN | FAIL))
                .min_by(|&a, &b| match &self.bound {
                    Some(bound) => bound[a].total_cmp(&bound[b]).then(a.cmp(&b)),
                    None => a.cmp(&b),
                });
            match next {
                Some(s) => {
                    path.push(s);
                    current = s;
                }
                None => break,
            }
        }
        // path[lo] fails; path[hi] satisfies (hi == len: beyond the chain)
        let (mut lo, mut hi) = (0, path.len());
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            let node = path[mid];
            // evaluated or implied nodes other than FAIL pass the monotone predicate
            let fails = match self.tags[node] {
                FAIL => true,
                UNKNOWN => self.check(node),
                _ => false,
            };
            if fails {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        if lo > 0 {
            self.tag_down(path[lo]);
        }
    }
}
