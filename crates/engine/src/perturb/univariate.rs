//! The optimal partition of an ordering (Hansen & Mukherjee 2003): given the records in an
//! order, the partition into runs of consecutive records, each of k..2k − 1, with the least
//! SSE, by dynamic programming in O(n·k·d) time.
//!
//! For one attribute in sorted order this is the optimal k-partition (an optimal partition
//! exists whose groups are consecutive in sorted order and of sizes k..2k − 1). For several
//! attributes, [`projection_order`] orders the records along their first principal component
//! (Hansen & Mukherjee's multivariate heuristic); the runs' SSE is still measured in all d
//! dimensions.

use super::points::Points;

/// The least-SSE partition of `order` (indices into `points`) into runs of k..2k − 1
/// consecutive records; one run when fewer than 2k. `order` must hold at least k records.
pub fn optimal_runs(points: &Points, order: &[u32], k: usize) -> Vec<Vec<u32>> {
    let n = order.len();
    let k = k.max(1);
    if n < 2 * k {
        return vec![order.to_vec()];
    }
    let d = points.d();
    // prefix sums of the coordinates and of the squared norms along the order
    let mut sums = vec![0.0; (n + 1) * d];
    let mut squares = vec![0.0; n + 1];
    for (i, &r) in order.iter().enumerate() {
        let row = points.row(r as usize);
        let (before, after) = sums.split_at_mut((i + 1) * d);
        for j in 0..d {
            after[j] = before[i * d + j] + row[j];
        }
        squares[i + 1] = squares[i] + row.iter().map(|x| x * x).sum::<f64>();
    }
    // SSE of the run order[a..b] = Σ|x|² − |Σx|² / m
    let run_sse = |a: usize, b: usize| {
        let m = (b - a) as f64;
        let norm: f64 = (0..d)
            .map(|j| {
                let s = sums[b * d + j] - sums[a * d + j];
                s * s
            })
            .sum();
        (squares[b] - squares[a]) - norm / m
    };
    let mut best = vec![f64::INFINITY; n + 1];
    let mut cut = vec![0usize; n + 1];
    best[0] = 0.0;
    for end in k..=n {
        for size in k..=(2 * k - 1).min(end) {
            let start = end - size;
            if best[start].is_infinite() {
                continue;
            }
            let cost = best[start] + run_sse(start, end);
            // strictly less: on a tie the longest last run (the first size tried) stays
            if cost < best[end] {
                best[end] = cost;
                cut[end] = start;
            }
        }
    }
    let mut runs = Vec::new();
    let mut end = n;
    while end > 0 {
        let start = cut[end];
        runs.push(order[start..end].to_vec());
        end = start;
    }
    runs.reverse();
    runs
}

/// The indices of `points` ordered by their projection on the points' first principal
/// component (power iteration on the covariance; ties by index).
pub fn projection_order(points: &Points) -> Vec<u32> {
    let n = points.len();
    let d = points.d();
    let mut mean = vec![0.0; d];
    let all: Vec<u32> = (0..n as u32).collect();
    points.centroid_into(&all, &mut mean);
    let mut covariance = vec![0.0; d * d];
    for i in 0..n {
        let row = points.row(i);
        for a in 0..d {
            let x = row[a] - mean[a];
            for b in 0..d {
                covariance[a * d + b] += x * (row[b] - mean[b]);
            }
        }
    }
    let mut axis = vec![1.0 / (d as f64).sqrt(); d];
    let mut next = vec![0.0; d];
    for _ in 0..100 {
        for a in 0..d {
            next[a] = (0..d).map(|b| covariance[a * d + b] * axis[b]).sum();
        }
        let norm = next.iter().map(|x| x * x).sum::<f64>().sqrt();
        if norm == 0.0 {
            break;
        }
        next.iter_mut().for_each(|x| *x /= norm);
        let change: f64 = next.iter().zip(&axis).map(|(x, y)| (x - y).abs()).sum();
        std::mem::swap(&mut axis, &mut next);
        if change < 1e-12 {
            break;
        }
    }
    let projection: Vec<f64> = (0..n)
        .map(|i| points.row(i).iter().zip(&axis).map(|(x, w)| x * w).sum())
        .collect();
    let mut order = all;
    order.sort_by(|&a, &b| {
        projection[a as usize]
            .total_cmp(&projection[b as usize])
            .then(a.cmp(&b))
    });
    order
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::perturb::mdav::mdav;
    use crate::perturb::refine::refine;
    use crate::rng::SplitMix64;

    /// Every partition of 0..n into groups of at least k, by brute force (restricted growth
    /// strings), and its least SSE.
    pub(crate) fn brute_force_min_sse(points: &Points, k: usize) -> f64 {
        let n = points.len();
        let mut labels = vec![0usize; n];
        let mut best = f64::INFINITY;
        fn visit(
            i: usize,
            groups: usize,
            labels: &mut Vec<usize>,
            points: &Points,
            k: usize,
            best: &mut f64,
        ) {
            let n = labels.len();
            if i == n {
                let mut members = vec![Vec::new(); groups];
                for (r, &g) in labels.iter().enumerate() {
                    members[g].push(r as u32);
                }
                if members.iter().all(|m| m.len() >= k) {
                    *best = best.min(points.sse(&members));
                }
                return;
            }
            for g in 0..=groups {
                labels[i] = g;
                visit(i + 1, groups.max(g + 1), labels, points, k, best);
            }
        }
        visit(0, 0, &mut labels, points, k, &mut best);
        best
    }

    #[test]
    fn optimal_runs_of_a_sorted_attribute_equal_the_brute_force_optimum() {
        let mut rng = SplitMix64(7);
        for case in 0..40 {
            let n = 4 + (case % 6); // 4..=9 records: Bell(9) = 21,147 partitions
            let k = 2 + case % 2;
            let mut values: Vec<f64> = (0..n).map(|_| rng.below(20) as f64).collect();
            let points = Points::new(1, values.clone());
            let optimum = brute_force_min_sse(&points, k);
            values.sort_by(f64::total_cmp);
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_by(|&a, &b| points.row(a as usize)[0].total_cmp(&points.row(b as usize)[0]));
            let runs = optimal_runs(&points, &order, k);
            assert!(runs.iter().all(|r| r.len() >= k), "case {case}");
            let sse = points.sse(&runs);
            assert!(
                (sse - optimum).abs() < 1e-9,
                "case {case}: {sse} vs {optimum}"
            );
            // no heuristic beats the optimum
            let heuristic = points.sse(&mdav(&points, k));
            assert!(heuristic >= optimum - 1e-9, "case {case}");
            let refined = points.sse(&refine(&points, mdav(&points, k), k));
            assert!(refined >= optimum - 1e-9, "case {case}");
            assert!(refined <= heuristic + 1e-9, "case {case}");
        }
    }

    #[test]
    fn heuristics_never_beat_the_brute_force_optimum_in_two_dimensions() {
        let mut rng = SplitMix64(11);
        for case in 0..30 {
            let n = 4 + (case % 5);
            let k = 2;
            let values: Vec<f64> = (0..2 * n).map(|_| rng.below(10) as f64).collect();
            let points = Points::new(2, values);
            let optimum = brute_force_min_sse(&points, k);
            let order = projection_order(&points);
            for groups in [
                mdav(&points, k),
                refine(&points, mdav(&points, k), k),
                optimal_runs(&points, &order, k),
            ] {
                assert!(groups.iter().all(|g| g.len() >= k));
                assert!(points.sse(&groups) >= optimum - 1e-9, "case {case}");
            }
        }
    }

    #[test]
    fn the_projection_of_points_on_a_line_is_their_order_along_it() {
        // points on the line y = 2x, given out of order: their order along the line is x's
        let xs = [3.0, -1.0, 2.0, 0.0];
        let values: Vec<f64> = xs.iter().flat_map(|&x| [x, 2.0 * x]).collect();
        let order = projection_order(&Points::new(2, values));
        // ascending or descending along the axis, both are the line's order
        assert!(
            order == vec![1, 3, 2, 0] || order == vec![0, 2, 3, 1],
            "{order:?}"
        );
    }
}
