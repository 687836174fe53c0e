//! Rank swapping (Moore 1996; sdcMicro's `rankSwap`): per attribute, the values are ranked,
//! and each value not yet swapped, from the lowest rank up, is swapped with a value drawn
//! uniformly among those not yet swapped whose rank is above it by at most w = ⌊p · n / 100⌋,
//! where **p is a percentage** of the records (sdcMicro documents P as a percentage but
//! applies it as a proportion; here `p = 5` means 5 %). A value with no partner left in its
//! window stays. Ties are ranked by input order, so the ranks are a function of the input.
//! No value moves more than w ranks.
//!
//! NaN is not ranked here: records with a NaN or NULL in a perturbed attribute are suppressed
//! before (`publish::perturbed`).

use datafusion::error::{DataFusionError, Result};

use crate::direct_table::{PREFETCH_DISTANCE, prefetch};
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
    // who swaps with whom depends on n, w and the stream, not on the values: drawn on a
    // thread of its own while the values are ranked
    let (partners, pairs) = std::thread::scope(|scope| {
        let drawing = scope.spawn(|| partners(n, w, rng));
        let pairs = ranked(column);
        (drawing.join(), pairs)
    });
    let partners = partners
        .map_err(|_| DataFusionError::Internal("drawing the swap partners panicked".into()))?;
    // each record gets its partner's value: the partner's key is read within the window and
    // the record's slot written anywhere, both fetched a few ranks ahead (cache misses
    // otherwise, at 10M records)
    let mut out = vec![0.0; n];
    for (rank, &(_, record)) in pairs.iter().enumerate() {
        if let Some(&(_, ahead)) = pairs.get(rank + PREFETCH_DISTANCE) {
            prefetch(&out[ahead as usize]);
            prefetch(&pairs[partners[rank + PREFETCH_DISTANCE] as usize]);
        }
        out[record as usize] = from_key(pairs[partners[rank] as usize].0);
    }
    Ok(out)
}

/// Each rank's partner (itself when it keeps its value): from the lowest rank up, a rank not
/// yet swapped draws its partner among the free ranks of its window ([`partner`]).
fn partners(n: usize, w: usize, rng: &mut SplitMix64) -> Vec<u32> {
    let mut partners: Vec<u32> = (0..n as u32).collect();
    if w == 0 {
        return partners;
    }
    // a bit per rank (not a byte): the window's bits stay in cache
    let mut swapped = Ranks::new(n);
    for i in 0..n {
        if swapped.contains(i) {
            continue;
        }
        let last = (i + w).min(n - 1);
        if last == i {
            continue;
        }
        let Some(j) = partner(&swapped, i + 1, last, rng) else {
            continue;
        };
        // i itself is never looked at again: only ranks above the current one are drawn
        swapped.insert(j);
        partners[i] = j as u32;
        partners[j] = i as u32;
    }
    partners
}

/// A set of ranks, a bit each.
struct Ranks(Vec<u64>);

impl Ranks {
    fn new(n: usize) -> Self {
        Self(vec![0; n.div_ceil(64)])
    }

    fn contains(&self, rank: usize) -> bool {
        self.0[rank / 64] >> (rank % 64) & 1 == 1
    }

    fn insert(&mut self, rank: usize) {
        self.0[rank / 64] |= 1 << (rank % 64);
    }

    /// The ranks first..=last not in the set, in order.
    fn free(&self, first: usize, last: usize) -> impl Iterator<Item = usize> + '_ {
        (first..=last).filter(|&rank| !self.contains(rank))
    }

    /// How many of the ranks first..=last are not in the set (a word at a time).
    fn free_count(&self, first: usize, last: usize) -> usize {
        let (low, high) = (first / 64, last / 64);
        let taken: u32 = (low..=high)
            .map(|word| {
                let mut bits = self.0[word];
                if word == low {
                    bits &= u64::MAX << (first % 64);
                }
                if word == high && last % 64 < 63 {
                    bits &= (1 << (last % 64 + 1)) - 1;
                }
                bits.count_ones()
            })
            .sum();
        last - first + 1 - taken as usize
    }
}

/// `x` as an unsigned integer in the order of `f64::total_cmp` (negatives below positives,
/// −0 below +0), and back.
fn key(x: f64) -> u64 {
    let bits = x.to_bits();
    // a negative value: every bit flipped; a positive one: the sign bit set
    bits ^ ((((bits as i64) >> 63) as u64) | (1 << 63))
}

fn from_key(key: u64) -> f64 {
    let bits = if key >> 63 == 1 {
        key ^ (1 << 63)
    } else {
        !key
    };
    f64::from_bits(bits)
}

/// The bits of the leading digit that spreads the keys over buckets in [`ranked`].
const BUCKET_BITS: u32 = 16;

/// The records in rank order (by value in `total_cmp` order, ties by record), with their
/// keys ([`key`]): one counting pass and one scatter spread the (key, record) pairs over up
/// to 2^16 buckets by the leading bits of the key's range, each bucket is then sorted alone
/// (in cache: a comparison sort of millions of pairs is not). A bucket of equal keys comes out
/// of the scatter in record order, already sorted. (The engine's `radix_sort` sorts 64-bit
/// words; a 64-bit key and its record do not fit one.)
fn ranked(column: &[f64]) -> Vec<(u64, u32)> {
    ranked_sorting_in_two_from(column, PARALLEL_SORT)
}

/// [`ranked`], its buckets sorted on two threads from `parallel_from` records.
fn ranked_sorting_in_two_from(column: &[f64], parallel_from: usize) -> Vec<(u64, u32)> {
    let (lo, hi) = column.iter().fold((u64::MAX, 0), |(lo, hi), &x| {
        (lo.min(key(x)), hi.max(key(x)))
    });
    let span = hi.saturating_sub(lo);
    let shift = (u64::BITS - span.leading_zeros()).saturating_sub(BUCKET_BITS);
    let buckets = (span >> shift) as usize + 1;
    let mut start = vec![0usize; buckets + 1];
    for &x in column {
        start[((key(x) - lo) >> shift) as usize + 1] += 1;
    }
    for b in 1..=buckets {
        start[b] += start[b - 1];
    }
    let mut next = start.clone();
    let mut pairs = vec![(0u64, 0u32); column.len()];
    for (record, &x) in column.iter().enumerate() {
        let k = key(x);
        let slot = &mut next[((k - lo) >> shift) as usize];
        pairs[*slot] = (k, record as u32);
        *slot += 1;
    }
    // the buckets sorted in two halves of about n/2 pairs on two threads: attributes are
    // swapped two at a time, and the last one would otherwise sort alone on one core
    let sort_buckets = |pairs: &mut [(u64, u32)], bounds: &[usize]| {
        let first = bounds[0];
        for bucket in bounds.windows(2) {
            let part = &mut pairs[bucket[0] - first..bucket[1] - first];
            if part.len() > 1 {
                part.sort_by_key(|&(key, _)| key);
            }
        }
    };
    let split = start.partition_point(|&b| b < column.len() / 2);
    if column.len() >= parallel_from && split > 0 && split < buckets {
        let (low, high) = pairs.split_at_mut(start[split]);
        std::thread::scope(|scope| {
            scope.spawn(|| sort_buckets(high, &start[split..]));
            sort_buckets(low, &start[..=split]);
        });
    } else {
        sort_buckets(&mut pairs, &start);
    }
    pairs
}

/// Records from which [`ranked`] sorts its buckets on two threads.
const PARALLEL_SORT: usize = 1 << 20;

/// A rank drawn uniformly among the ranks first..=last not yet swapped: by rejection (the
/// draws are uniform over the free ranks), then by a scan after 32 misses.
fn partner(swapped: &Ranks, first: usize, last: usize, rng: &mut SplitMix64) -> Option<usize> {
    let width = (last - first + 1) as u64;
    for _ in 0..32 {
        // the draw scaled into the window by a multiplication, not a division: a few cycles
        // against dozens, on millions of draws (the bias, like a modulo's, is below
        // width / 2^64)
        let j = first + ((u128::from(rng.next_u64()) * u128::from(width)) >> 64) as usize;
        if !swapped.contains(j) {
            return Some(j);
        }
    }
    let free = swapped.free_count(first, last);
    if free == 0 {
        return None;
    }
    let pick = rng.below(free as u64) as usize;
    swapped.free(first, last).nth(pick)
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
            assert!(key(pair[0]) < key(pair[1]), "{pair:?}");
        }
        for x in values {
            assert_eq!(from_key(key(x)).to_bits(), x.to_bits());
        }
    }

    /// The bucketed ranking against a comparison sort of (value by `total_cmp`, record), on
    /// columns with ties, both signs, infinities, one value, and spans both wide and narrow.
    #[test]
    fn ranks_are_a_stable_sort_by_value() {
        let mut rng = SplitMix64(8);
        let columns: Vec<Vec<f64>> = vec![
            (0..50_000).map(|_| (rng.next_u64() % 40) as f64).collect(),
            (0..50_000)
                .map(|_| f64::from_bits(rng.next_u64()))
                .filter(|x| !x.is_nan())
                .collect(),
            (0..50_000)
                .map(|_| (rng.next_u64() % 2_000_001) as f64 / 1_000.0 - 1_000.0)
                .chain([f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0])
                .collect(),
            vec![7.5; 1_000],
            vec![],
        ];
        for column in columns {
            let mut expected: Vec<u32> = (0..column.len() as u32).collect();
            expected.sort_by(|&a, &b| {
                column[a as usize]
                    .total_cmp(&column[b as usize])
                    .then(a.cmp(&b))
            });
            let pairs = ranked(&column);
            let (keys, order): (Vec<u64>, Vec<u32>) = pairs.iter().copied().unzip();
            assert_eq!(order, expected, "{} records", column.len());
            // the buckets sorted in two halves on two threads: the same
            assert_eq!(ranked_sorting_in_two_from(&column, 0), pairs);
            let values: Vec<u64> = order
                .iter()
                .map(|&r| column[r as usize].to_bits())
                .collect();
            let from_keys: Vec<u64> = keys.iter().map(|&k| from_key(k).to_bits()).collect();
            assert_eq!(values, from_keys);
        }
    }

    /// The partners are pairs (an involution) within the window, and a rank keeps its value
    /// only when every rank of its window was taken before its turn (taken ranks stay taken).
    #[test]
    fn partners_are_pairs_within_the_window_and_none_is_missed() {
        for (n, w, seed) in [
            (1_000, 10, 1),
            (1_000, 1, 2),
            (5_000, 400, 3),
            (7, 100, 4),
            (1, 5, 5),
        ] {
            let partners = partners(n, w, &mut SplitMix64(seed));
            for (i, &j) in partners.iter().enumerate() {
                let j = j as usize;
                assert_eq!(partners[j] as usize, i, "n {n}: not a pair");
                assert!(i.abs_diff(j) <= w, "n {n}: {i} and {j} are beyond w = {w}");
                if j == i {
                    let window = i + 1..=(i + w).min(n - 1);
                    for (later, &partner) in window.clone().zip(&partners[window]) {
                        assert_ne!(partner as usize, later, "n {n}: {i} missed {later}");
                    }
                }
            }
        }
        assert_eq!(
            partners(10, 0, &mut SplitMix64(1)),
            (0..10).collect::<Vec<u32>>()
        );
    }

    /// The free ranks of a range counted a word at a time against a bit-by-bit count.
    #[test]
    fn free_ranks_are_counted_across_words() {
        let mut rng = SplitMix64(3);
        let mut ranks = Ranks::new(300);
        for _ in 0..150 {
            ranks.insert(rng.below(300) as usize);
        }
        for first in [0, 1, 63, 64, 65, 127, 200] {
            for last in [first, first + 1, 63, 64, 128, 191, 255, 299] {
                if last < first {
                    continue;
                }
                let expected = (first..=last).filter(|&r| !ranks.contains(r)).count();
                assert_eq!(ranks.free_count(first, last), expected, "{first}..={last}");
                assert_eq!(ranks.free(first, last).count(), expected);
            }
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
