//! A k-d tree over [`Points`]: whether any point lies nearer a query than a distance (record
//! linkage), in O(log n) per query on typical data, built in O(n log n). Never an n × n
//! distance matrix.
//!
//! The tree keeps its own copy of the coordinates **in tree order**: a subtree is a
//! contiguous run of rows, so the end of a search reads neighbouring memory instead of one
//! scattered row per node, and ranges of at most [`LEAF`] points are leaves scanned in a row.
//! Answers do not depend on the layout: ties go to the lower original index.

use super::points::{Points, squared_distance};

/// Points in a range this small are a leaf, scanned in full.
const LEAF: usize = 8;

/// The points in tree order, each internal node splitting its range at the median point
/// (its middle row) on one axis.
pub struct KdTree {
    d: usize,
    /// Row-major coordinates, in tree order.
    coords: Vec<f64>,
    /// Each row's index in the points the tree was built from.
    index: Vec<u32>,
    /// The axis of the node whose median is at this row (internal nodes only).
    axes: Vec<u8>,
}

impl KdTree {
    /// The tree over all of `points`.
    pub fn new(points: &Points) -> Self {
        let n = points.len();
        let d = points.d();
        let mut tree = KdTree {
            d,
            coords: (0..n).flat_map(|i| points.row(i).iter().copied()).collect(),
            index: (0..n as u32).collect(),
            axes: vec![0; n],
        };
        let mut scratch = Scratch::default();
        tree.build(0, n, 0, &mut scratch);
        tree
    }

    /// Axes in turn by depth. (Splitting on the axis of widest range was tried and dropped:
    /// on heavy-tailed data the outliers make one axis the widest at every depth, the tree
    /// degenerates to one dimension, and record linkage of 1M noised firms ran for minutes.)
    /// The range's rows are reordered so that its median on the axis is in the middle row,
    /// the smaller before it and the larger after it (ties by original index).
    fn build(&mut self, start: usize, end: usize, depth: usize, scratch: &mut Scratch) {
        if end - start <= LEAF {
            return;
        }
        let d = self.d;
        let axis = depth % d;
        let middle = (end - start) / 2;
        let Scratch { keys, rows, order } = scratch;
        keys.clear();
        keys.extend((start..end).map(|r| (self.coords[r * d + axis], r as u32)));
        let index = &self.index;
        keys.select_nth_unstable_by(middle, |a, b| {
            a.0.total_cmp(&b.0)
                .then(index[a.1 as usize].cmp(&index[b.1 as usize]))
        });
        // the range's rows in the selected order
        rows.clear();
        order.clear();
        for &(_, r) in keys.iter() {
            let r = r as usize;
            rows.extend_from_slice(&self.coords[r * d..(r + 1) * d]);
            order.push(self.index[r]);
        }
        self.coords[start * d..end * d].copy_from_slice(rows);
        self.index[start..end].copy_from_slice(order);
        self.axes[start + middle] = axis as u8;
        self.build(start, start + middle, depth + 1, scratch);
        self.build(start + middle + 1, end, depth + 1, scratch);
    }

    /// The points' indices in tree order: neighbours in space are mostly neighbours here, so
    /// queries near the points, asked in this order, walk the tree through warm memory.
    pub fn order(&self) -> &[u32] {
        &self.index
    }

    fn row(&self, r: usize) -> &[f64] {
        &self.coords[r * self.d..(r + 1) * self.d]
    }

    /// Whether a point other than `skip` lies strictly nearer `query` than `squared`
    /// (squared distance). Stops at the first one found, and never looks beyond `squared`:
    /// record linkage asks only this, and in a dense region a query's nearest few are many
    /// points away from where a full search would have to look.
    pub fn any_nearer(
        &self,
        query: &[f64],
        squared: f64,
        skip: u32,
        offsets: &mut Offsets,
    ) -> bool {
        offsets.reset(self.d);
        self.nearer(0, self.index.len(), query, squared, skip, offsets)
    }

    fn nearer(
        &self,
        start: usize,
        end: usize,
        query: &[f64],
        squared: f64,
        skip: u32,
        offsets: &mut Offsets,
    ) -> bool {
        if end - start <= LEAF {
            return (start..end)
                .any(|r| self.index[r] != skip && squared_distance(self.row(r), query) < squared);
        }
        let middle = start + (end - start) / 2;
        let point = self.row(middle);
        if self.index[middle] != skip && squared_distance(point, query) < squared {
            return true;
        }
        let axis = self.axes[middle] as usize;
        let gap = query[axis] - point[axis];
        let (near, far) = if gap < 0.0 {
            ((start, middle), (middle + 1, end))
        } else {
            ((middle + 1, end), (start, middle))
        };
        if self.nearer(near.0, near.1, query, squared, skip, offsets) {
            return true;
        }
        let (saved, bound) = offsets.enter(axis, gap);
        let found = bound < squared && self.nearer(far.0, far.1, query, squared, skip, offsets);
        offsets.leave(axis, saved);
        found
    }
}

/// The bound is a sum updated by differences: shrunk by far more than its rounding, so that
/// it never prunes a cell holding a point whose computed distance is below the threshold.
const SLACK: f64 = 1.0 - 1e-9;

/// A lower bound on the squared distance from a query to the cell being searched (Arya &
/// Mount's incremental distance): per axis, the query's distance to the cell wall crossed on
/// it, summed. In several dimensions it prunes far more than the one split's gap. The
/// queries' scratch: one per thread, reused from query to query.
#[derive(Debug, Default)]
pub struct Offsets {
    per_axis: Vec<f64>,
    bound: f64,
}

impl Offsets {
    fn reset(&mut self, d: usize) {
        self.per_axis.clear();
        self.per_axis.resize(d, 0.0);
        self.bound = 0.0;
    }

    /// Into the far side of a split on `axis` at `gap` from the query: what to restore, and
    /// the far side's bound.
    fn enter(&mut self, axis: usize, gap: f64) -> ((f64, f64), f64) {
        let offset = &mut self.per_axis[axis];
        let saved = (*offset, self.bound);
        self.bound += gap * gap - *offset * *offset;
        *offset = gap;
        (saved, self.bound * SLACK)
    }

    /// Back out of the far side.
    fn leave(&mut self, axis: usize, (offset, bound): (f64, f64)) {
        self.per_axis[axis] = offset;
        self.bound = bound;
    }
}

/// Buffers [`KdTree::build`] reuses from node to node.
#[derive(Default)]
struct Scratch {
    /// (coordinate on the node's axis, row) of the node's rows.
    keys: Vec<(f64, u32)>,
    /// The node's coordinates in their new order.
    rows: Vec<f64>,
    /// The node's original indices in their new order.
    order: Vec<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The k nearest by brute force: sort every other point by (distance, index).
    fn brute_force(points: &Points, query: &[f64], count: usize, skip: u32) -> Vec<(f64, u32)> {
        let mut all: Vec<(f64, u32)> = (0..points.len() as u32)
            .filter(|&i| i != skip)
            .map(|i| (squared_distance(points.row(i as usize), query), i))
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        all.truncate(count);
        all
    }

    /// A tree deep enough that every axis is split several times on a path (the bound
    /// replaces an axis's offset), on continuous values: the answers equal a brute force.
    #[test]
    fn deep_trees_give_exact_answers() {
        let mut rng = SplitMix64(23);
        let d = 3;
        let n = 3_000;
        let values: Vec<f64> = (0..n * d).map(|_| rng.unit() * 4.0).collect();
        let points = Points::new(d, values);
        let tree = KdTree::new(&points);
        let mut offsets = Offsets::default();
        for i in 0..n {
            let expected = brute_force(&points, points.row(i), 2, i as u32);
            let second = expected[1].0;
            assert_eq!(
                tree.any_nearer(points.row(i), second, i as u32, &mut offsets),
                expected[0].0 < second,
                "point {i}"
            );
        }
    }

    #[test]
    fn any_nearer_equals_a_brute_force_search() {
        let mut rng = SplitMix64(11);
        let mut offsets = Offsets::default();
        for case in 0..30 {
            let n = 1 + case * 7;
            let d = 1 + case % 4;
            // coarse values, so that ties between distances occur
            let values: Vec<f64> = (0..n * d).map(|_| (rng.unit() * 6.0).floor()).collect();
            let points = Points::new(d, values);
            let tree = KdTree::new(&points);
            for i in 0..n {
                // nearer than the second nearest's distance: exactly when the nearest (other
                // than i) is strictly nearer than it
                let all = brute_force(&points, points.row(i), 2, i as u32);
                if let Some(&(second, _)) = all.get(1) {
                    assert_eq!(
                        tree.any_nearer(points.row(i), second, i as u32, &mut offsets),
                        all[0].0 < second,
                        "case {case} point {i}"
                    );
                }
                assert!(!tree.any_nearer(points.row(i), 0.0, u32::MAX, &mut offsets));
            }
            // a query off the points: some point is nearer than the nearest's distance plus a
            // margin, and none is nearer than it
            let query: Vec<f64> = (0..d).map(|_| rng.unit() * 6.0).collect();
            let nearest = brute_force(&points, &query, 1, u32::MAX)[0].0;
            assert!(
                !tree.any_nearer(&query, nearest, u32::MAX, &mut offsets),
                "case {case}"
            );
            assert!(
                tree.any_nearer(&query, nearest + 1e-6, u32::MAX, &mut offsets),
                "case {case}"
            );
        }
    }
}
