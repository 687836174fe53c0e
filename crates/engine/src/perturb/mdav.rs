//! MDAV, maximum distance to average vector (Domingo-Ferrer & Torra 2005), with fixed group
//! size k, exactly as `shared/data/casc/README.md` defines it:
//!
//! 1. while at least 3k records remain: the record r farthest from the centroid of the
//!    remaining records forms a group with its k − 1 nearest remaining records; then the
//!    record s farthest from r (among those left) forms a group with its k − 1 nearest;
//! 2. with 2k..3k − 1 left: one more group around the record farthest from their centroid,
//!    and the rest form the last group;
//! 3. with k..2k − 1 left: they form the last group.
//!
//! Distances are Euclidean on the standardized attributes ([`super::Points`]). Ties (two
//! records equally far, or equally near) go to the record first in input order, so the
//! partition is a function of the input. Time O(n²/k · d), memory O(n·d).

use super::points::{Points, squared_distance};

/// MDAV's groups of `points` (indices into it), each of k..2k − 1 points (all points when
/// fewer than 2k). `k` ≥ 1.
pub fn mdav(points: &Points, k: usize) -> Vec<Vec<u32>> {
    let k = k.max(1);
    let mut remaining: Vec<u32> = (0..points.len() as u32).collect();
    let mut groups = Vec::with_capacity(points.len() / k + 1);
    let mut centroid = vec![0.0; points.d()];
    let mut scratch = Vec::with_capacity(points.len());
    while remaining.len() >= 3 * k {
        points.centroid_into(&remaining, &mut centroid);
        let r = farthest(points, &remaining, &centroid);
        groups.push(take_group(points, &mut remaining, r, k, &mut scratch));
        let s = farthest(points, &remaining, points.row(r as usize));
        groups.push(take_group(points, &mut remaining, s, k, &mut scratch));
    }
    if remaining.len() >= 2 * k {
        points.centroid_into(&remaining, &mut centroid);
        let r = farthest(points, &remaining, &centroid);
        groups.push(take_group(points, &mut remaining, r, k, &mut scratch));
    }
    if !remaining.is_empty() {
        groups.push(remaining);
    }
    groups
}

/// The member of `among` (ascending indices) farthest from `from`; the first on a tie.
fn farthest(points: &Points, among: &[u32], from: &[f64]) -> u32 {
    let mut best = among[0];
    let mut best_distance = f64::NEG_INFINITY;
    for &i in among {
        let distance = squared_distance(points.row(i as usize), from);
        if distance > best_distance {
            best_distance = distance;
            best = i;
        }
    }
    best
}

/// Removes `center` and its k − 1 nearest members of `remaining` (ties to the lower index)
/// from it, and returns them as a group (ascending indices). `remaining` stays ascending.
fn take_group(
    points: &Points,
    remaining: &mut Vec<u32>,
    center: u32,
    k: usize,
    scratch: &mut Vec<(f64, u32)>,
) -> Vec<u32> {
    let from = points.row(center as usize);
    scratch.clear();
    scratch.extend(
        remaining
            .iter()
            .filter(|&&i| i != center)
            .map(|&i| (squared_distance(points.row(i as usize), from), i)),
    );
    let nearest = k - 1;
    let mut group = Vec::with_capacity(k);
    group.push(center);
    if nearest > 0 {
        let order = |a: &(f64, u32), b: &(f64, u32)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        if nearest < scratch.len() {
            scratch.select_nth_unstable_by(nearest - 1, order);
        }
        group.extend(
            scratch[..nearest.min(scratch.len())]
                .iter()
                .map(|&(_, i)| i),
        );
    }
    group.sort_unstable();
    // both ascending: one merge pass removes the group
    let mut next = 0;
    remaining.retain(|&i| {
        if next < group.len() && group[next] == i {
            next += 1;
            false
        } else {
            true
        }
    });
    group
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_dimension(values: &[f64]) -> Points {
        Points::new(1, values.to_vec())
    }

    /// Nine records on a line (already in comparable units; standardizing a single attribute
    /// scales every distance by the same factor, so the groups are the same either way), k = 3:
    ///
    /// values:   0  1  2 | 10 11 12 | 20 21 40   (indices 0..8 in this order)
    ///
    /// 9 ≥ 3k: centroid = 117 / 9 = 13; the farthest record is 40 (index 8, distance 27); its
    /// two nearest are 21 and 20, so group {6, 7, 8}. The farthest from 40 among the rest is 0
    /// (index 0); its two nearest are 1 and 2: group {0, 1, 2}. Three left (< 2k): the last
    /// group {3, 4, 5}.
    #[test]
    fn mdav_groups_a_worked_line() {
        let points = one_dimension(&[0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 20.0, 21.0, 40.0]);
        let groups = mdav(&points, 3);
        assert_eq!(groups, vec![vec![6, 7, 8], vec![0, 1, 2], vec![3, 4, 5]]);
    }

    /// Seven records, k = 3 (2k ≤ 7 < 3k): one group around the record farthest from the
    /// centroid, the rest one group of 4.
    ///
    /// values: 0 1 2 3 4 5 30: centroid 45/7 ≈ 6.43; farthest is 30 (index 6); its nearest are
    /// 5 and 4: {4, 5, 6}; the rest {0, 1, 2, 3}.
    #[test]
    fn mdav_with_two_to_three_k_left_makes_two_groups() {
        let points = one_dimension(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 30.0]);
        assert_eq!(mdav(&points, 3), vec![vec![4, 5, 6], vec![0, 1, 2, 3]]);
    }

    /// Two dimensions, eight records, k = 2 (hand computed):
    ///
    /// index:  0      1      2      3      4      5      6       7
    /// point: (0,0) (0,1) (1,0) (5,5) (5,6) (6,5) (10,0) (10,1)
    ///
    /// centroid = (37/8, 18/8) = (4.625, 2.25). Squared distances to it: index 0: 21.39+5.06
    /// = 26.45; index 6: 28.89+5.06 = 33.95; index 7: 28.89+1.56 = 30.45. Farthest: 6; its
    /// nearest: 7 → {6, 7}. Farthest from (10,0) among the rest: index 1 (100+1 = 101, against
    /// 0's 100) → with its nearest 0 (distance 1; 2 is at 2) → {0, 1}. Four left (= 2k): the
    /// centroid of 2,3,4,5 is (4.25, 4); farthest is 2 (10.56+16 = 26.56); its nearest is 3
    /// (16+25 = 41, against 4's 16+36 and 5's 25+25) → {2, 3}; the rest {4, 5}.
    #[test]
    fn mdav_groups_a_worked_plane() {
        let values = [
            0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 5.0, 5.0, 5.0, 6.0, 6.0, 5.0, 10.0, 0.0, 10.0, 1.0,
        ];
        let points = Points::new(2, values.to_vec());
        assert_eq!(
            mdav(&points, 2),
            vec![vec![6, 7], vec![0, 1], vec![2, 3], vec![4, 5]]
        );
    }

    #[test]
    fn fewer_than_two_k_records_are_one_group() {
        let points = one_dimension(&[3.0, 1.0, 2.0]);
        assert_eq!(mdav(&points, 2), vec![vec![0, 1, 2]]);
    }
}
