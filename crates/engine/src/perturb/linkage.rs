//! Distance-based record linkage (DBRL; Pagliuca & Seri 1999, sdcMicro's `dRisk`): the share
//! of published records whose nearest original record, on the numeric attributes standardized
//! by the original's mean and sample SD, is their own. A tie counts as linked (the adversary
//! may pick either; taking the link never understates the risk).
//!
//! A k-d tree over the originals (built in O(n log n)) answers, for each record, whether any
//! other original is strictly nearer its published values than its own — stopping at the
//! first found, so a record in a dense region costs little: never an n × n distance matrix.

use super::kdtree::{KdTree, Offsets};
use super::points::{Points, mean_sd, squared_distance};

/// Standardizes `published` and `original` alike, by the original's mean and sample SD.
fn standardized_pair(original: &[&[f64]], published: &[&[f64]]) -> (Points, Points) {
    let d = original.len();
    let n = original.first().map_or(0, |c| c.len());
    let mut a = vec![0.0; n * d];
    let mut b = vec![0.0; n * d];
    for j in 0..d {
        let (mean, sd) = mean_sd(original[j]);
        let scale = if sd > 0.0 { 1.0 / sd } else { 1.0 };
        for i in 0..n {
            a[i * d + j] = (original[j][i] - mean) * scale;
            b[i * d + j] = (published[j][i] - mean) * scale;
        }
    }
    (Points::new(d.max(1), a), Points::new(d.max(1), b))
}

/// Records below which linkage stays on one thread.
const QUERIES_PER_THREAD: usize = 10_000;

/// DBRL: the share of records `i` whose published values are at least as near their own
/// original as any other original (records aligned; see the module docs).
pub fn dbrl(original: &[&[f64]], published: &[&[f64]]) -> f64 {
    let n = original.first().map_or(0, |c| c.len());
    if n == 0 || original.is_empty() {
        return 0.0;
    }
    let (originals, releases) = standardized_pair(original, published);
    let tree = KdTree::new(&originals);
    // each record's query near its own original, so in the tree's order (see `order`): on
    // 1M records this halves the time, which is waiting on memory
    let order = tree.order();
    let linked_in = |range: std::ops::Range<usize>| {
        let mut offsets = Offsets::default();
        order[range]
            .iter()
            .map(|&i| i as usize)
            .filter(|&i| {
                let own = squared_distance(releases.row(i), originals.row(i));
                !tree.any_nearer(releases.row(i), own, i as u32, &mut offsets)
            })
            .count()
    };
    // the queries are independent: one share of the records per core
    let threads = crate::parallel::threads()
        .min(n.div_ceil(QUERIES_PER_THREAD))
        .max(1);
    let share = n.div_ceil(threads);
    let linked: usize = crate::parallel::map_scoped_unwinding(0..threads, |t| {
        linked_in(t * share..((t + 1) * share).min(n))
    })
    .into_iter()
    .sum();
    linked as f64 / n as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    /// The same share by brute force: every published record against every original.
    fn brute_force(original: &[&[f64]], published: &[&[f64]]) -> f64 {
        let (originals, releases) = standardized_pair(original, published);
        let n = originals.len();
        let linked = (0..n)
            .filter(|&i| {
                let own = squared_distance(releases.row(i), originals.row(i));
                (0..n).all(|j| own <= squared_distance(releases.row(i), originals.row(j)))
            })
            .count();
        linked as f64 / n as f64
    }

    #[test]
    fn dbrl_equals_a_brute_force_search() {
        let mut rng = SplitMix64(5);
        for case in 0..20 {
            let n = 20 + case * 13;
            let d = 1 + case % 4;
            let noise = 0.05 * (1 + case % 5) as f64;
            let original: Vec<Vec<f64>> = (0..d)
                .map(|_| (0..n).map(|_| rng.unit() * 10.0).collect())
                .collect();
            let published: Vec<Vec<f64>> = original
                .iter()
                .map(|c| {
                    c.iter()
                        .map(|x| x + (rng.unit() - 0.5) * 10.0 * noise)
                        .collect()
                })
                .collect();
            let o: Vec<&[f64]> = original.iter().map(Vec::as_slice).collect();
            let p: Vec<&[f64]> = published.iter().map(Vec::as_slice).collect();
            assert_eq!(dbrl(&o, &p), brute_force(&o, &p), "case {case}");
        }
    }

    /// Enough records for several threads (each takes a share of the queries), on one
    /// attribute, against a reference by sorting: a published value's nearest other original
    /// is the first original on either side of its place in the sorted originals that is
    /// not its own.
    #[test]
    fn dbrl_over_several_threads_equals_a_reference_by_sorting() {
        let mut rng = SplitMix64(9);
        let n = 4 * QUERIES_PER_THREAD + 7;
        let original: Vec<f64> = (0..n).map(|_| rng.unit() * 1_000.0).collect();
        let published: Vec<f64> = original
            .iter()
            .map(|x| x + (rng.unit() - 0.5) * 0.2)
            .collect();
        // standardizing scales both by the same factor: the comparisons are unchanged
        let mut sorted: Vec<(f64, usize)> = original.iter().copied().zip(0..).collect();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let linked = (0..n)
            .filter(|&i| {
                let p = published[i];
                let own = (p - original[i]).abs();
                let at = sorted.partition_point(|&(x, _)| x < p);
                let left = sorted[..at].iter().rev().find(|&&(_, j)| j != i);
                let right = sorted[at..].iter().find(|&&(_, j)| j != i);
                [left, right]
                    .into_iter()
                    .flatten()
                    .all(|&(x, _)| (p - x).abs() >= own)
            })
            .count();
        let expected = linked as f64 / n as f64;
        assert!(
            expected > 0.1 && expected < 0.99,
            "a case with both outcomes"
        );
        assert_eq!(dbrl(&[&original], &[&published]), expected);
    }

    /// Unperturbed data: every record is its own nearest (distance 0); fully swapped pairs
    /// on a line of two records: none is.
    #[test]
    fn dbrl_of_worked_cases() {
        let x = [1.0, 5.0, 9.0];
        assert_eq!(dbrl(&[&x], &[&x]), 1.0);
        let y = [9.0, 5.0, 1.0];
        // record 1 (5 → 5) is linked; records 0 and 2 land on each other's originals
        assert!((dbrl(&[&x], &[&y]) - 1.0 / 3.0).abs() < 1e-12);
    }
}
