//! The best-first search of the IAB (Intelligent Anonymity Balance) approach for smart-health
//! data: keep as many distinct quasi-identifier tuples as possible.
//!
//! Start at the raw table (the all-zero node). Repeatedly take the frontier table with the
//! most distinct QI tuples (classes before suppression), fewest violating rows on ties (rows
//! of classes that fail a requirement), then lowest height and smallest level vector; if it
//! satisfies the requirements it becomes the best table (when it has more distinct tuples than
//! the best so far), otherwise its successors — one attribute generalized by one level — join
//! the frontier. Stop when no frontier table has more distinct tuples than the best
//! satisfying table found (or the frontier is empty) and return that table. A satisfying table
//! is not expanded: with nested hierarchies its generalizations have no more distinct tuples.
//!
//! ## Relation to the optimal search
//! IAB maximizes the number of distinct tuples, not the Loss: the table it returns satisfies
//! the requirements (it is judged exactly like the optimal search judges nodes), but it is a
//! heuristic for utility — its Loss is never below the optimal search's Loss and is often
//! above it (many small classes can come from generalizing one attribute heavily while
//! another keeps its detail). It also visits every table with more distinct tuples than the
//! one it returns, so it can evaluate far more nodes than the optimal search.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::evaluate::{Evaluator, NodeStats};

/// Runs IAB; the chosen node and its figures, `None` when no visited table satisfies.
pub(crate) fn iab(
    ev: &mut Evaluator<'_>,
    progress: &mut dyn FnMut(usize, usize),
) -> Option<(usize, NodeStats)> {
    let lattice = ev.lattice.clone();
    let mut seen = vec![false; lattice.size()];
    // (distinct tuples, fewest violating rows, lowest height, smallest levels), satisfies
    type Entry = (u64, Reverse<u64>, Reverse<usize>, Reverse<usize>, bool);
    let mut frontier: BinaryHeap<Entry> = BinaryHeap::new();
    let mut push = |ev: &mut Evaluator<'_>, node: usize, frontier: &mut BinaryHeap<Entry>| {
        let stats = ev.evaluate(node);
        progress(ev.evaluated, lattice.size());
        frontier.push((
            stats.classes,
            Reverse(stats.suppressed_rows),
            Reverse(lattice.height(node)),
            Reverse(node),
            stats.satisfies,
        ));
    };
    seen[lattice.bottom()] = true;
    push(ev, lattice.bottom(), &mut frontier);
    let mut best: Option<(usize, u64)> = None;
    while let Some((classes, _, _, Reverse(node), satisfies)) = frontier.pop() {
        if crate::interrupt::requested() {
            // [`super::search`] returns the interruption
            break;
        }
        if best.is_some_and(|(_, b)| classes <= b) {
            break;
        }
        if satisfies {
            best = Some((node, classes));
            continue;
        }
        // roll the successors up from this node's classes
        ev.prepare(node);
        for s in lattice.successors(node).collect::<Vec<_>>() {
            if !seen[s] {
                seen[s] = true;
                push(ev, s, &mut frontier);
            }
        }
    }
    best.map(|(node, _)| (node, ev.evaluate(node)))
}
