//! Gruteser & Grunwald's quadtree cloaking, made consistent for a batch.
//!
//! Within a root (the largest acceptable cell, the longest window; see [`super`]) the nodes
//! form one tree: the root's window halves down to the base window (**temporal** nodes, at the
//! root's cell), then the base window's cell splits into its four quadrants down to
//! `max_level` (**spatial** nodes). So an event gets a smaller cell only at the base window,
//! and a longer window only at the largest cell: spatial first, then temporal, as in the seed.
//!
//! The rule at a node holding at least k distinct subjects: a child is **kept** (its events go
//! on to smaller labels) when it holds at least k distinct subjects; the events of the other
//! children — the remainder — get the node's own label. When the remainder is not empty but
//! holds fewer than k subjects, the kept child with the fewest events (the first in quadkey or
//! time order on a tie) is given back to the remainder, which then holds at least k (that
//! child alone did). So every label holds at least k distinct subjects, which G&G's rule per
//! event — "the smallest cell around the event that holds k subjects" — does not guarantee of
//! the events actually published under a cell. An event's cell is thus the smallest cell
//! within tolerance whose published label holds k subjects, where "published" follows this
//! rule from the root down; `tests.rs` checks it against a brute-force descent.
//!
//! A root with fewer than k subjects is suppressed whole.

use super::distinct::DistinctCounter;
use super::{Cloaked, CloakingOptions, Events, Label, MAX_LEVEL, Roots, SUPPRESSED, node_label};

/// A node of a root's tree: its cell level and its window's doublings.
#[derive(Debug, Clone, Copy)]
struct Node {
    level: u8,
    doublings: u32,
}

pub(crate) fn cloak(events: &Events, options: &CloakingOptions, roots: &Roots) -> Cloaked {
    let mut label_of = vec![SUPPRESSED; events.len()];
    let mut labels: Vec<Label> = Vec::new();
    let mut counter = DistinctCounter::new(events.subjects);
    let mut walk = Walk {
        events,
        options,
        roots,
        counter: &mut counter,
        label_of: &mut label_of,
        labels: &mut labels,
    };
    for &(start, end) in &roots.ranges {
        if crate::interrupt::requested() {
            // [`super::cloak`] returns the interruption
            break;
        }
        let range = &roots.order[start..end];
        if !walk.counter.at_least(range, &events.subject, options.k) {
            continue;
        }
        let first = range[0] as usize;
        let node = Node {
            level: roots.level[first],
            doublings: options.window_doublings,
        };
        walk.node(start, end, node);
    }
    Cloaked {
        label_of,
        labels,
        suppressed: 0,
    }
}

struct Walk<'a> {
    events: &'a Events,
    options: &'a CloakingOptions,
    roots: &'a Roots,
    counter: &'a mut DistinctCounter,
    label_of: &'a mut Vec<u32>,
    labels: &'a mut Vec<Label>,
}

/// At most four children.
const MAX_CHILDREN: usize = 4;

impl Walk<'_> {
    /// The children of `node` over `order[start..end]`: their boundaries (`bounds[i]..
    /// bounds[i + 1]`), their count, and the child node; `None` at a leaf.
    fn children(&self, start: usize, end: usize, node: Node) -> Option<([usize; 5], usize, Node)> {
        let order = &self.roots.order[start..end];
        let mut bounds = [end; MAX_CHILDREN + 1];
        bounds[0] = start;
        if node.doublings > 0 {
            // sorted by base window: the halves split on the window's bit below the node's
            let bit = node.doublings - 1;
            let window = &self.roots.window;
            let split = order.partition_point(|&e| (window[e as usize] >> bit) & 1 == 0);
            bounds[1] = start + split;
            bounds[2] = end;
            let child = Node {
                level: node.level,
                doublings: bit,
            };
            return Some((bounds, 2, child));
        }
        if node.level >= self.options.max_level {
            return None;
        }
        // sorted by finest cell within one base window: quadrants are contiguous
        let shift = 2 * (MAX_LEVEL - node.level - 1) as u32;
        let code = &self.events.code;
        for quadrant in 1..MAX_CHILDREN as u64 {
            let split = order.partition_point(|&e| (code[e as usize] >> shift) & 3 < quadrant);
            bounds[quadrant as usize] = start + split;
        }
        bounds[MAX_CHILDREN] = end;
        let child = Node {
            level: node.level + 1,
            doublings: 0,
        };
        Some((bounds, MAX_CHILDREN, child))
    }

    /// Labels `order[start..end]`, which holds at least k distinct subjects.
    fn node(&mut self, start: usize, end: usize, node: Node) {
        let subject = &self.events.subject;
        let k = self.options.k;
        let Some((bounds, count, child)) = self.children(start, end, node) else {
            self.label(start, end, node);
            return;
        };
        let mut kept = [false; MAX_CHILDREN];
        for (i, keep) in kept.iter_mut().enumerate().take(count) {
            let range = &self.roots.order[bounds[i]..bounds[i + 1]];
            *keep = !range.is_empty() && self.counter.at_least(range, subject, k);
        }
        let remainder_empty = (0..count).all(|i| kept[i] || bounds[i] == bounds[i + 1]);
        if !remainder_empty {
            self.counter.start();
            let mut subjects = 0;
            for i in (0..count).filter(|&i| !kept[i]) {
                let range = &self.roots.order[bounds[i]..bounds[i + 1]];
                subjects = self.counter.add(range, subject, subjects, k);
            }
            if subjects < k {
                // give back the smallest kept child (fewest events, first on a tie)
                let smallest = (0..count)
                    .filter(|&i| kept[i])
                    .min_by_key(|&i| (bounds[i + 1] - bounds[i], i));
                if let Some(i) = smallest {
                    kept[i] = false;
                }
            }
        }
        // the remainder first, under one label; then the kept children
        let mut remainder_label = None;
        for i in (0..count).filter(|&i| !kept[i] && bounds[i] < bounds[i + 1]) {
            let id = *remainder_label.get_or_insert_with(|| self.new_label(bounds[i], node));
            self.assign(bounds[i], bounds[i + 1], id);
        }
        for i in (0..count).filter(|&i| kept[i]) {
            self.node(bounds[i], bounds[i + 1], child);
        }
    }

    /// Gives `order[start..end]` the label of `node`.
    fn label(&mut self, start: usize, end: usize, node: Node) {
        let id = self.new_label(start, node);
        self.assign(start, end, id);
    }

    /// A new label for `node`, which holds `order[at]`.
    fn new_label(&mut self, at: usize, node: Node) -> u32 {
        let first = self.roots.order[at] as usize;
        self.labels.push(node_label(
            self.events.code[first],
            node.level,
            self.roots.window[first],
            node.doublings,
            self.options,
        ));
        (self.labels.len() - 1) as u32
    }

    fn assign(&mut self, start: usize, end: usize, id: u32) {
        for &e in &self.roots.order[start..end] {
            self.label_of[e as usize] = id;
        }
    }
}
