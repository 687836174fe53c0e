//! The default microaggregation: a partition (MDAV's) improved by local search. Each pass
//! visits every record in index order and, against a few candidate groups, applies the best
//! of:
//! - a **move** to another group, when its own keeps at least k records and the other stays
//!   below 2k: ΔSSE = b/(b+1)·|x − c_B|² − a/(a−1)·|x − c_A|²;
//! - a **swap** with a record y of another group (sizes unchanged):
//!   ΔSSE = 2 (c_B − c_A)·(y − x) − |y − x|² (1/a + 1/b),
//!
//! when it lowers SSE. Every change lowers SSE, so the result is never worse than the
//! partition it starts from, every group keeps k..2k − 1 records (or what it had, when it
//! started larger), and the search ends (at a local optimum or after [`MAX_PASSES`]; after
//! one pass with [`Reach::Neighbours`]).
//!
//! The candidates ([`Reach`]) are either the groups whose centroids are nearest the record,
//! among all groups (exact, O(n·g·d) per pass: for a table of a few thousand records), or the
//! groups whose centroids are nearest the record's own group's, found once per pass
//! ([`nearest_groups`]; O(n·C·k·d) per pass and a few buckets' scan per group: for large
//! inputs).

use super::neighbours::{DEFAULT_BUCKET, nearest_groups};
use super::points::{Points, squared_distance};

/// Passes at most (each lowers SSE; in practice the search settles in a few).
pub const MAX_PASSES: usize = 30;

/// Groups tried for a record's moves and swaps.
const CANDIDATES: usize = 8;

/// Changes must lower SSE by more than this share of it (rounding never loops).
const EPSILON: f64 = 1e-12;

/// Where a record looks for groups to move to or swap with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The [`CANDIDATES`] groups whose centroids are nearest the record, among all groups;
    /// passes continue while any change is made.
    Record,
    /// The [`NEIGHBOUR_CANDIDATES`] groups whose centroids are nearest the record's group's
    /// centroid, in one pass ([`NEIGHBOUR_PASSES`]).
    Neighbours,
}

/// Groups tried for a record's moves and swaps with [`Reach::Neighbours`]. On 10M generated
/// firms (k = 5), 8, 6 and 4 candidates gave IL 0.937, 0.950 and 0.956 in 9.8–10.4, 8.6–9.0
/// and 7.6–7.9 s of compute; on 100k of them 3.392, 3.411 and 3.442, all below whole-table
/// MDAV's 3.508 (BENCHMARKS.md, issue 35).
const NEIGHBOUR_CANDIDATES: usize = 4;

/// Passes with [`Reach::Neighbours`] (large inputs, where every pass is a scan of millions of
/// records). On 100,000 generated firms (blocks of 5,000, MDAV on leaves of 256, k = 5), IL
/// after 0, 1, 2 and 3 passes was 3.857, 3.402, 3.295 and 3.238, against whole-table MDAV's
/// 3.508, at 0.04, 0.10, 0.27 and 0.36 s: one pass already beats MDAV, and the next ones
/// cost more than they gain (BENCHMARKS.md, issue 35).
pub const NEIGHBOUR_PASSES: usize = 1;

/// `groups` (a partition of `points` into groups of at least k) improved by moves and swaps,
/// with candidates from [`Reach::Record`].
pub fn refine(points: &Points, groups: Vec<Vec<u32>>, k: usize) -> Vec<Vec<u32>> {
    refine_with(points, groups, k, Reach::Record, None)
}

/// `groups` improved by moves and swaps with candidates from `reach`. With
/// [`Reach::Neighbours`], `buckets` may give the boundaries of runs of groups that lie near
/// each other (see [`nearest_groups`]); they make the search for neighbours faster and never
/// change it. Without them, runs of [`DEFAULT_BUCKET`] groups.
pub fn refine_with(
    points: &Points,
    mut groups: Vec<Vec<u32>>,
    k: usize,
    reach: Reach,
    buckets: Option<&[usize]>,
) -> Vec<Vec<u32>> {
    let d = points.d();
    let g = groups.len();
    if g < 2 {
        return groups;
    }
    let n = points.len();
    let mut group_of = vec![0u32; n];
    let mut sums = vec![0.0; g * d];
    for (id, members) in groups.iter().enumerate() {
        for &i in members {
            group_of[i as usize] = id as u32;
            for (s, x) in sums[id * d..(id + 1) * d]
                .iter_mut()
                .zip(points.row(i as usize))
            {
                *s += x;
            }
        }
    }
    let mut centroids = vec![0.0; g * d];
    let update = |centroids: &mut [f64], sums: &[f64], groups: &[Vec<u32>], id: usize| {
        let size = groups[id].len() as f64;
        for j in 0..d {
            centroids[id * d + j] = sums[id * d + j] / size;
        }
    };
    for id in 0..g {
        update(&mut centroids, &sums, &groups, id);
    }
    // each group's radius: its farthest member's distance from its centroid
    let radius_of = |members: &[u32], centroid: &[f64]| -> f64 {
        members
            .iter()
            .map(|&y| squared_distance(points.row(y as usize), centroid))
            .fold(0.0, f64::max)
            .sqrt()
    };
    let mut radius: Vec<f64> = (0..g)
        .map(|id| radius_of(&groups[id], &centroids[id * d..(id + 1) * d]))
        .collect();
    let scale = points.sse(&groups).max(f64::MIN_POSITIVE);
    let mut nearest: Vec<(f64, u32)> = Vec::with_capacity(g);
    let mut neighbours: Vec<u32> = Vec::new();
    let mut delta = vec![0.0; d];
    let passes = match reach {
        Reach::Record => MAX_PASSES,
        Reach::Neighbours => NEIGHBOUR_PASSES,
    };
    let candidates = match reach {
        Reach::Record => CANDIDATES,
        Reach::Neighbours => NEIGHBOUR_CANDIDATES,
    };
    for _ in 0..passes {
        let mut changed = false;
        if reach == Reach::Neighbours {
            // each group's nearest groups, by the centroids at the start of the pass
            match buckets {
                Some(buckets) => {
                    nearest_groups(&centroids, d, buckets, candidates, &mut neighbours)
                }
                None => {
                    let runs: Vec<usize> = (0..g).step_by(DEFAULT_BUCKET).chain([g]).collect();
                    nearest_groups(&centroids, d, &runs, candidates, &mut neighbours)
                }
            }
        }
        for x in 0..n {
            let a = group_of[x] as usize;
            let row = points.row(x);
            nearest.clear();
            let c = match reach {
                Reach::Record => {
                    nearest.extend((0..g).filter(|&b| b != a).map(|b| {
                        (
                            squared_distance(row, &centroids[b * d..(b + 1) * d]),
                            b as u32,
                        )
                    }));
                    let c = candidates.min(nearest.len());
                    nearest.select_nth_unstable_by(c - 1, |p, q| {
                        p.0.total_cmp(&q.0).then(p.1.cmp(&q.1))
                    });
                    c
                }
                Reach::Neighbours => {
                    // padding (a group with fewer neighbours than CANDIDATES) is the group itself
                    nearest.extend(
                        neighbours[a * candidates..(a + 1) * candidates]
                            .iter()
                            .filter(|&&b| b as usize != a)
                            .map(|&b| {
                                let b = b as usize;
                                (
                                    squared_distance(row, &centroids[b * d..(b + 1) * d]),
                                    b as u32,
                                )
                            }),
                    );
                    nearest.len()
                }
            };
            let size_a = groups[a].len() as f64;
            let centroid_a = &centroids[a * d..(a + 1) * d];
            let own = squared_distance(row, centroid_a);
            // (ΔSSE, group, partner or None for a move)
            let mut best: (f64, usize, Option<u32>) = (-EPSILON * scale, usize::MAX, None);
            for &(to_b, b) in &nearest[..c] {
                let b = b as usize;
                let size_b = groups[b].len() as f64;
                if groups[a].len() > k && groups[b].len() < 2 * k - 1 {
                    let change = size_b / (size_b + 1.0) * to_b - size_a / (size_a - 1.0) * own;
                    if change < best.0 {
                        best = (change, b, None);
                    }
                }
                let centroid_b = &centroids[b * d..(b + 1) * d];
                // no swap with b can beat the best when its lower bound does not (see
                // `swap_bound`): the answer is the same, without the members' scan
                if swap_bound(row, centroid_a, centroid_b, to_b, radius[b], size_a, size_b) > best.0
                {
                    continue;
                }
                for &y in &groups[b] {
                    let other = points.row(y as usize);
                    let mut dot = 0.0;
                    let mut norm = 0.0;
                    for j in 0..d {
                        delta[j] = other[j] - row[j];
                        dot += (centroid_b[j] - centroid_a[j]) * delta[j];
                        norm += delta[j] * delta[j];
                    }
                    let change = 2.0 * dot - norm * (1.0 / size_a + 1.0 / size_b);
                    if change < best.0 {
                        best = (change, b, Some(y));
                    }
                }
            }
            if best.1 == usize::MAX {
                continue;
            }
            changed = true;
            let (_, b, partner) = best;
            let x32 = x as u32;
            remove(&mut groups[a], x32);
            groups[b].push(x32);
            group_of[x] = b as u32;
            shift(&mut sums, d, a, b, row);
            if let Some(y) = partner {
                remove(&mut groups[b], y);
                groups[a].push(y);
                group_of[y as usize] = a as u32;
                shift(&mut sums, d, b, a, points.row(y as usize));
            }
            update(&mut centroids, &sums, &groups, a);
            update(&mut centroids, &sums, &groups, b);
            for id in [a, b] {
                radius[id] = radius_of(&groups[id], &centroids[id * d..(id + 1) * d]);
            }
        }
        if !changed {
            break;
        }
    }
    for members in &mut groups {
        members.sort_unstable();
    }
    groups
}

/// A lower bound on ΔSSE of swapping record `x` (in group A) with any member y of group B,
/// B's members lying within `radius_b` of its centroid; `to_b` = |x − c_B|². With
/// u = c_B − c_A, v = c_B − x, r = y − c_B (|r| ≤ R) and s = 1/a + 1/b, the swap's
/// ΔSSE = 2u·(v + r) − s|v + r|² ≥ 2u·v − 2|u|R − s(|v| + R)². The bound is lowered by far
/// more than its rounding, so that it never exceeds a computed ΔSSE.
fn swap_bound(
    x: &[f64],
    centroid_a: &[f64],
    centroid_b: &[f64],
    to_b: f64,
    radius_b: f64,
    size_a: f64,
    size_b: f64,
) -> f64 {
    let (mut uv, mut uu) = (0.0, 0.0);
    for ((&a, &b), &x) in centroid_a.iter().zip(centroid_b).zip(x) {
        let u = b - a;
        uv += u * (b - x);
        uu += u * u;
    }
    let spread = 2.0 * uu.sqrt() * radius_b;
    let reach = (1.0 / size_a + 1.0 / size_b) * (to_b.sqrt() + radius_b).powi(2);
    let bound = 2.0 * uv - spread - reach;
    bound - 1e-9 * (2.0 * uv.abs() + spread + reach) - f64::MIN_POSITIVE
}

fn remove(members: &mut Vec<u32>, x: u32) {
    if let Some(at) = members.iter().position(|&m| m == x) {
        members.swap_remove(at);
    }
}

/// Moves `row`'s coordinates from group `from`'s sum to group `to`'s.
fn shift(sums: &mut [f64], d: usize, from: usize, to: usize, row: &[f64]) {
    for j in 0..d {
        sums[from * d + j] -= row[j];
        sums[to * d + j] += row[j];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perturb::mdav::mdav;
    use crate::rng::SplitMix64;

    /// A partition where one swap helps, by hand: 1-D values 0, 1, 10, 11 (indices 0..3),
    /// groups {0, 2} and {1, 3} (k = 2): each group is 5 from its two values, SSE = 4 · 25 = 100. Swapping 2 and
    /// 1 gives {0, 1}, {2, 3}: SSE 0.5 + 0.5 = 1.
    #[test]
    fn a_swap_that_lowers_sse_is_made() {
        let points = Points::new(1, vec![0.0, 1.0, 10.0, 11.0]);
        let start = vec![vec![0, 2], vec![1, 3]];
        assert!((points.sse(&start) - 100.0).abs() < 1e-9);
        let refined = refine(&points, start, 2);
        let mut sorted = refined.clone();
        sorted.sort();
        assert_eq!(sorted, vec![vec![0, 1], vec![2, 3]]);
        assert!((points.sse(&refined) - 1.0).abs() < 1e-9);
    }

    /// The bound that skips a group's swaps never exceeds a swap's ΔSSE, computed as the
    /// refinement computes it (the bound is what makes skipping change nothing): random
    /// groups A and B of 3..8 points in 1..5 dimensions, every x in A against every y in B,
    /// with B's radius its farthest member's distance from its centroid.
    #[test]
    fn the_swap_bound_is_below_every_swap() {
        let mut rng = SplitMix64(41);
        let centroid = |members: &[Vec<f64>], d: usize| -> Vec<f64> {
            (0..d)
                .map(|j| members.iter().map(|m| m[j]).sum::<f64>() / members.len() as f64)
                .collect()
        };
        let mut tight = 0;
        for case in 0..2_000 {
            let d = 1 + case % 5;
            let spread = if case % 2 == 0 { 1.0 } else { 10.0 };
            let mut point =
                |shift: f64| -> Vec<f64> { (0..d).map(|_| shift + rng.unit() * spread).collect() };
            let a: Vec<Vec<f64>> = (0..3 + case % 6).map(|_| point(0.0)).collect();
            let b: Vec<Vec<f64>> = (0..3 + case % 5).map(|_| point(3.0)).collect();
            let (c_a, c_b) = (centroid(&a, d), centroid(&b, d));
            let radius = b
                .iter()
                .map(|y| squared_distance(y, &c_b))
                .fold(0.0, f64::max)
                .sqrt();
            let (size_a, size_b) = (a.len() as f64, b.len() as f64);
            for x in &a {
                let bound = swap_bound(
                    x,
                    &c_a,
                    &c_b,
                    squared_distance(x, &c_b),
                    radius,
                    size_a,
                    size_b,
                );
                for y in &b {
                    let (mut dot, mut norm) = (0.0, 0.0);
                    for j in 0..d {
                        let delta = y[j] - x[j];
                        dot += (c_b[j] - c_a[j]) * delta;
                        norm += delta * delta;
                    }
                    let change = 2.0 * dot - norm * (1.0 / size_a + 1.0 / size_b);
                    assert!(bound <= change, "case {case}: bound {bound} above {change}");
                    if change - bound < 0.5 * change.abs() {
                        tight += 1;
                    }
                }
            }
        }
        // and it is not vacuous: often within half the swap's size of it
        assert!(tight > 1_000, "{tight}");
    }

    #[test]
    fn refinement_keeps_sizes_and_never_raises_sse() {
        let mut rng = SplitMix64(3);
        for case in 0..20 {
            let n = 30 + case * 7;
            let k = 2 + case % 4;
            let values: Vec<f64> = (0..3 * n).map(|_| rng.unit() * 10.0).collect();
            let points = Points::new(3, values);
            let start = mdav(&points, k);
            let before = points.sse(&start);
            for reach in [Reach::Record, Reach::Neighbours] {
                let refined = refine_with(&points, start.clone(), k, reach, None);
                assert!(refined.iter().all(|g| g.len() >= k && g.len() < 2 * k));
                let mut all: Vec<u32> = refined.iter().flatten().copied().collect();
                all.sort_unstable();
                assert_eq!(all, (0..n as u32).collect::<Vec<_>>());
                assert!(points.sse(&refined) <= before + 1e-9, "{reach:?}");
            }
        }
    }
}
