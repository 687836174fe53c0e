//! Rank swapping (Moore 1996; sdcMicro's `rankSwap`): per attribute, the values are ranked,
//! and each value not yet swapped, from the lowest rank up, is swapped with a value drawn
//! uniformly among those not yet swapped whose rank is above it by at most w = ⌊p · n / 100⌋,
//! where **p is a percentage** of the records (sdcMicro documents P as a percentage but
//! applies it as a proportion; here `p = 5` means 5 %). A value with no partner left in its
//! window stays. Ties are ranked by input order, so the ranks are a function of the input.
//! No value moves more than w ranks.

use datafusion::error::{DataFusionError, Result};

use crate::rng::SplitMix64;

/// The window of rank swapping: ⌊p · n / 100⌋ ranks. `p` in (0, 100].
pub fn window(p: f64, n: usize) -> usize {
    (p / 100.0 * n as f64).floor() as usize
}

/// Checks p: a percentage in (0, 100].
pub fn check_percentage(p: f64) -> std::result::Result<(), String> {
    if p > 0.0 && p <= 100.0 {
        Ok(())
    } else {
        Err(format!(
            "rank swapping's p is a percentage of the records in (0, 100], got {p}"
        ))
    }
}

/// `column` rank-swapped with window ⌊p·n/100⌋ (see the module docs).
pub fn rank_swap(column: &[f64], p: f64, rng: &mut SplitMix64) -> Result<Vec<f64>> {
    check_percentage(p).map_err(DataFusionError::Plan)?;
    let n = column.len();
    let w = window(p, n);
    // ranks: (value in total order, record) sorted as integers, read in order; on millions of
    // records a comparison that looks values up is a cache miss each
    let mut keys: Vec<(i64, u32)> = column
        .iter()
        .enumerate()
        .map(|(i, x)| (total_order(*x), i as u32))
        .collect();
    keys.sort_unstable();
    let order: Vec<u32> = keys.into_iter().map(|(_, i)| i).collect();
    // the values by rank, swapped there, then put back in record order
    let mut ranked: Vec<f64> = order.iter().map(|&i| column[i as usize]).collect();
    let mut swapped = vec![false; n];
    for i in 0..n {
        if swapped[i] || w == 0 {
            continue;
        }
        let last = (i + w).min(n - 1);
        if last == i {
            continue;
        }
        let Some(j) = partner(&swapped, i + 1, last, rng) else {
            continue;
        };
        ranked.swap(i, j);
        swapped[i] = true;
        swapped[j] = true;
    }
    let mut out = vec![0.0; n];
    for (&i, &value) in order.iter().zip(&ranked) {
        out[i as usize] = value;
    }
    Ok(out)
}

/// `x` as an integer in the order of `f64::total_cmp`.
fn total_order(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// A rank drawn uniformly among the ranks first..=last not yet swapped: by rejection (the
/// draws are uniform over the free ranks), then by a scan after 32 misses.
fn partner(swapped: &[bool], first: usize, last: usize, rng: &mut SplitMix64) -> Option<usize> {
    let width = (last - first + 1) as u64;
    for _ in 0..32 {
        let j = first + rng.below(width) as usize;
        if !swapped[j] {
            return Some(j);
        }
    }
    let free = (first..=last).filter(|&j| !swapped[j]).count();
    if free == 0 {
        return None;
    }
    let pick = rng.below(free as u64) as usize;
    (first..=last).filter(|&j| !swapped[j]).nth(pick)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// n = 100 distinct values (value = rank), p = 10 %: w = 10. Over 200 seeds, no value
    /// moves more than 10 ranks, and some move exactly 10 (the window is 10, not 0.1 or 1000).
    #[test]
    fn no_value_moves_further_than_its_window_and_the_window_is_p_percent() {
        assert_eq!(window(10.0, 100), 10);
        assert_eq!(window(5.0, 1_000), 50);
        let column: Vec<f64> = (0..100).map(f64::from).collect();
        let mut widest = 0;
        for seed in 0..200 {
            let out = rank_swap(&column, 10.0, &mut SplitMix64(seed)).unwrap();
            for (i, &v) in out.iter().enumerate() {
                let moved = (v as i64 - i as i64).unsigned_abs() as usize;
                assert!(moved <= 10, "seed {seed}: rank {i} moved {moved}");
                widest = widest.max(moved);
            }
            let mut sorted = out.clone();
            sorted.sort_by(f64::total_cmp);
            assert_eq!(sorted, column, "a permutation of the values");
        }
        assert_eq!(widest, 10);
    }

    /// The integer keys order values as `total_cmp` does: negatives, zeros of both signs,
    /// infinities.
    #[test]
    fn keys_follow_the_total_order() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
        ];
        for pair in values.windows(2) {
            assert!(pair[0].total_cmp(&pair[1]).is_lt());
            assert!(total_order(pair[0]) < total_order(pair[1]), "{pair:?}");
        }
    }

    #[test]
    fn p_outside_its_range_is_refused() {
        for p in [0.0, -1.0, 100.5] {
            let error = rank_swap(&[1.0, 2.0], p, &mut SplitMix64(1)).unwrap_err();
            assert!(error.to_string().contains("in (0, 100]"), "{error}");
        }
    }
}
