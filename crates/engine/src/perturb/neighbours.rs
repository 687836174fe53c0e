//! Each group's nearest other groups, by centroid: the refinement's candidates on large
//! inputs ([`super::refine::Reach::Neighbours`]).
//!
//! The answer is exact (the `count` nearest by squared distance, a tie to the lower index).
//! The groups come in **buckets** of consecutive indices — in a blocked microaggregation,
//! the groups seeded in one k-d leaf, so a bucket is a small region of space. A query scans
//! its own bucket, then the other buckets in order of their box's distance from its own
//! bucket's box (sorted once per bucket), skipping a box farther from the query than its
//! current `count`-th nearest, and stops at the first box whose distance from its own box
//! already is. A block's ~1,000 groups in ~30 buckets cost a query a few buckets' scans: about a
//! third of a k-d tree's search with leaves of 8 (measured on 10M records, BENCHMARKS.md,
//! issue 35). The buckets only decide the speed, never the answer.

use super::points::squared_distance;

/// A box's distance is a sum of per-axis terms rounded on the way: shrunk by far more than
/// its rounding, so that it never skips a bucket holding a centroid at the current bound.
const SLACK: f64 = 1.0 - 1e-9;

/// Buckets when the caller has none: runs of this many groups in index order.
pub const DEFAULT_BUCKET: usize = 32;

/// The `count` groups nearest each group (other than itself) by centroid, nearest first, a
/// tie to the lower index: `count` entries per group in `out` (group a's at
/// `a * count..(a + 1) * count`), padded with the group itself when there are fewer others.
/// `centroids` is row-major, d wide; `buckets` holds the buckets' boundaries (0, …, groups),
/// each bucket the groups between two boundaries.
pub fn nearest_groups(
    centroids: &[f64],
    d: usize,
    buckets: &[usize],
    count: usize,
    out: &mut Vec<u32>,
) {
    let g = centroids.len().checked_div(d).unwrap_or(0);
    out.clear();
    if g == 0 || count == 0 {
        return;
    }
    let bucket_count = buckets.len().saturating_sub(1);
    // each bucket's bounding box
    let mut low = vec![f64::INFINITY; bucket_count * d];
    let mut high = vec![f64::NEG_INFINITY; bucket_count * d];
    for bucket in 0..bucket_count {
        for a in buckets[bucket]..buckets[bucket + 1] {
            for j in 0..d {
                let x = centroids[a * d + j];
                low[bucket * d + j] = low[bucket * d + j].min(x);
                high[bucket * d + j] = high[bucket * d + j].max(x);
            }
        }
    }
    // squared distance between two buckets' boxes: a lower bound on any of their pairs'
    let box_gap = |p: usize, q: usize, query: Option<&[f64]>| -> f64 {
        let mut bound = 0.0;
        for j in 0..d {
            let (low_p, high_p) = match query {
                Some(x) => (x[j], x[j]),
                None => (low[p * d + j], high[p * d + j]),
            };
            let gap = (low[q * d + j] - high_p).max(low_p - high[q * d + j]);
            if gap > 0.0 {
                bound += gap * gap;
            }
        }
        bound * SLACK
    };
    let mut best = Best::new(count);
    // the other buckets by their box's distance from the own bucket's
    let mut order: Vec<(f64, u32)> = Vec::with_capacity(bucket_count);
    let mut own = usize::MAX;
    for a in 0..g {
        let mut bucket_of_a = if own == usize::MAX { 0 } else { own };
        while bucket_of_a + 1 < bucket_count && buckets[bucket_of_a + 1] <= a {
            bucket_of_a += 1;
        }
        if bucket_of_a != own {
            own = bucket_of_a;
            order.clear();
            order.extend(
                (0..bucket_count)
                    .filter(|&q| q != own)
                    .map(|q| (box_gap(own, q, None), q as u32)),
            );
            order.sort_unstable_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
        }
        let query = &centroids[a * d..(a + 1) * d];
        best.clear();
        let scan = |bucket: usize, best: &mut Best| {
            for b in buckets[bucket]..buckets[bucket + 1] {
                if b != a {
                    best.offer(
                        squared_distance(&centroids[b * d..(b + 1) * d], query),
                        b as u32,
                    );
                }
            }
        };
        scan(own, &mut best);
        // a bucket's box is at least as far from the query as from the own bucket's box: the
        // first beyond the bound ends the search
        for &(between, bucket) in &order {
            if between > best.bound() {
                break;
            }
            if box_gap(0, bucket as usize, Some(query)) <= best.bound() {
                scan(bucket as usize, &mut best);
            }
        }
        out.extend(best.found.iter().map(|&(_, b)| b));
        out.resize((a + 1) * count, a as u32);
    }
}

/// The best `count` (distance, index) pairs offered, nearest first (a tie to the lower
/// index).
struct Best {
    count: usize,
    found: Vec<(f64, u32)>,
}

impl Best {
    fn new(count: usize) -> Self {
        Self {
            count,
            found: Vec::with_capacity(count + 1),
        }
    }

    fn clear(&mut self) {
        self.found.clear();
    }

    /// The distance a pair must not exceed to be kept, once `count` are kept.
    fn bound(&self) -> f64 {
        if self.found.len() < self.count {
            f64::INFINITY
        } else {
            self.found[self.count - 1].0
        }
    }

    fn offer(&mut self, distance: f64, index: u32) {
        let before = |p: &(f64, u32)| p.0 < distance || (p.0 == distance && p.1 < index);
        if self.found.len() == self.count {
            // the worst kept comes first (indices differ): nothing changes
            if before(&self.found[self.count - 1]) {
                return;
            }
            self.found.pop();
        }
        let at = self.found.partition_point(before);
        self.found.insert(at, (distance, index));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// Each group's `count` nearest by brute force: every other centroid sorted by (distance,
    /// index), padded with the group itself.
    fn brute_force(centroids: &[f64], d: usize, count: usize) -> Vec<u32> {
        let g = centroids.len() / d;
        let mut out = Vec::new();
        for a in 0..g {
            let mut all: Vec<(f64, u32)> = (0..g)
                .filter(|&b| b != a)
                .map(|b| {
                    let distance: f64 = (0..d)
                        .map(|j| (centroids[b * d + j] - centroids[a * d + j]).powi(2))
                        .sum();
                    (distance, b as u32)
                })
                .collect();
            all.sort_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
            out.extend(all.iter().take(count).map(|&(_, b)| b));
            out.resize((a + 1) * count, a as u32);
        }
        out
    }

    /// Coarse coordinates (ties between distances are common) and continuous ones, buckets
    /// that are regions (sorted on the first axis, then cut) and buckets that are not (index
    /// runs over unsorted points), fewer groups than `count`: always the brute force's answer.
    #[test]
    fn equals_a_brute_force_search_whatever_the_buckets() {
        let mut rng = SplitMix64(29);
        for case in 0..40 {
            let g = 1 + case * 11;
            let d = 1 + case % 5;
            let coarse = case % 2 == 0;
            let mut centroids: Vec<f64> = (0..g * d)
                .map(|_| {
                    let x = rng.unit() * 6.0;
                    if coarse { x.floor() } else { x }
                })
                .collect();
            if case % 3 == 0 {
                // regions: sorted by the first coordinate
                let mut rows: Vec<Vec<f64>> = centroids.chunks(d).map(<[f64]>::to_vec).collect();
                rows.sort_by(|p, q| p[0].total_cmp(&q[0]));
                centroids = rows.concat();
            }
            let count = 1 + case % 9;
            let run = 1 + case % 7;
            let mut buckets: Vec<usize> = (0..g).step_by(run).collect();
            buckets.push(g);
            let mut out = Vec::new();
            nearest_groups(&centroids, d, &buckets, count, &mut out);
            assert_eq!(out, brute_force(&centroids, d, count), "case {case}");
        }
    }
}
