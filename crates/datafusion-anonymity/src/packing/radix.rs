//! An LSD radix sort of 64-bit words by a range of their bits: the one sorting kernel of
//! packed keys (the engine's frequency sets, buckets and recodings; the unique-leaves check of
//! value trees, over the leaves' hashes).

/// Sorts `words` by their bits `low..low + bits` (`low + bits` ≤ 64; the rest of the last
/// 8-bit digit counts too, the bits above it are ignored), stably: an LSD radix sort of 8-bit
/// digits, one counting pass for every digit, then one scatter per digit, but for a digit
/// every word shares (which leaves the order as it is: a key spanning a small range costs few
/// passes).
pub fn radix_sort(words: &mut Vec<u64>, low: u32, bits: u32) {
    let digits = bits.div_ceil(8);
    if words.len() < 2 || digits == 0 {
        return;
    }
    let mut other = vec![0u64; words.len()];
    if lsd(words, &mut other, low, digits) {
        std::mem::swap(words, &mut other);
    }
}

/// Words below which [`radix_sort_parallel`] sorts on the calling thread alone.
const PARALLEL_MIN_WORDS: usize = 1 << 16;

/// [`radix_sort`] on up to `threads` threads, for large inputs: one MSD pass scatters the
/// words by their top digit into 256 buckets, then each bucket is sorted by the remaining
/// digits (LSD, as [`radix_sort`]), the buckets spread over the threads. Besides the threads,
/// the buckets (a 256th of the words each, on spread keys) fit a core's cache where the whole
/// input does not, so each of their passes runs at cache speed. The same order as
/// [`radix_sort`] (stable) and the same memory: the words and one buffer as large.
pub fn radix_sort_parallel(words: &mut Vec<u64>, low: u32, bits: u32, threads: usize) {
    let digits = bits.div_ceil(8);
    if words.len() < PARALLEL_MIN_WORDS || digits < 2 {
        return radix_sort(words, low, bits);
    }
    // the bits that vary, so that the buckets split on the key's highest set bits (a key of
    // 40 bits bound to 64, or a class in the high bits of a word, would fill one bucket)
    let range = 8 * digits;
    let used =
        words.iter().fold(0u64, |acc, &w| acc | (w >> low)) & (u64::MAX >> (64 - range.min(64)));
    let width = u64::BITS - used.leading_zeros();
    if width <= 8 {
        return radix_sort(words, low, width.max(1));
    }
    let top = low + width - 8;
    // within a bucket: the bits below the top digit (the last digit may reach into it, where
    // every word of the bucket agrees)
    let digits = (width - 8).div_ceil(8);
    let digit = |w: u64| ((w >> top) & 0xff) as usize;
    let mut counts = [0usize; 256];
    for &w in words.iter() {
        counts[digit(w)] += 1;
    }
    let mut sorted = vec![0u64; words.len()];
    let mut starts = [0usize; 257];
    for (b, &n) in counts.iter().enumerate() {
        starts[b + 1] = starts[b] + n;
    }
    let mut next = starts;
    for &w in words.iter() {
        let slot = &mut next[digit(w)];
        sorted[*slot] = w;
        *slot += 1;
    }
    // each bucket with its stretch of the old words as the sort's second buffer
    let mut buckets: Vec<Bucket<'_>> = Vec::with_capacity(256);
    let (mut rest, mut scratch) = (sorted.as_mut_slice(), words.as_mut_slice());
    for &n in &counts {
        let (bucket, tail) = rest.split_at_mut(n);
        let (buffer, scratch_tail) = scratch.split_at_mut(n);
        (rest, scratch) = (tail, scratch_tail);
        if n > 1 {
            buckets.push((bucket, buffer));
        }
    }
    // the largest first, each to the thread with the fewest words so far
    buckets.sort_by_key(|(bucket, _)| std::cmp::Reverse(bucket.len()));
    let threads = threads.clamp(1, buckets.len().max(1));
    let mut shares: Vec<(usize, Vec<Bucket<'_>>)> = (0..threads).map(|_| (0, Vec::new())).collect();
    for bucket in buckets {
        let share = shares
            .iter_mut()
            .min_by_key(|(words, _)| *words)
            .expect("at least one thread");
        share.0 += bucket.0.len();
        share.1.push(bucket);
    }
    std::thread::scope(|scope| {
        for (_, share) in shares {
            scope.spawn(move || {
                for (bucket, buffer) in share {
                    if lsd(bucket, buffer, low, digits) {
                        bucket.copy_from_slice(buffer);
                    }
                }
            });
        }
    });
    *words = sorted;
}

/// A bucket of [`radix_sort_parallel`] and its second buffer.
type Bucket<'a> = (&'a mut [u64], &'a mut [u64]);

/// `words` sorted by their `digits` 8-bit digits from bit `low` (LSD, skipping a digit every
/// word shares), with `buffer` (as long) as the second buffer: the sorted words are in
/// `buffer` when this returns `true` (an odd number of passes), else in `words`.
fn lsd(words: &mut [u64], buffer: &mut [u64], low: u32, digits: u32) -> bool {
    let shift = |d: u32| low + 8 * d;
    let mut counts = vec![[0usize; 256]; digits as usize];
    for &w in words.iter() {
        for (d, count) in counts.iter_mut().enumerate() {
            count[((w >> shift(d as u32)) & 0xff) as usize] += 1;
        }
    }
    let (mut from, mut to) = (words, buffer);
    let mut in_buffer = false;
    for (d, count) in counts.iter().enumerate() {
        if count.contains(&from.len()) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut start = 0;
        for (slot, &n) in next.iter_mut().zip(count) {
            *slot = start;
            start += n;
        }
        let s = shift(d as u32);
        for &w in from.iter() {
            let slot = &mut next[((w >> s) & 0xff) as usize];
            to[*slot] = w;
            *slot += 1;
        }
        std::mem::swap(&mut from, &mut to);
        in_buffer = !in_buffer;
    }
    in_buffer
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn radix_sort_orders_like_a_comparison_sort_of_key_then_record() {
        let mut rng = SplitMix64(3);
        for bits in [1u32, 7, 8, 9, 16, 22, 32] {
            let rows = 5_000;
            let mut words: Vec<u64> = (0..rows)
                .map(|r| {
                    let key = rng.next_u64() & ((1u64 << bits) - 1);
                    (key << 32) | r
                })
                .collect();
            // the reference: (key, record) pairs, compared
            let mut expected: Vec<(u64, u32)> =
                words.iter().map(|&w| (w >> 32, w as u32)).collect();
            expected.sort_unstable();
            radix_sort(&mut words, 32, bits);
            let got: Vec<(u64, u32)> = words.iter().map(|&w| (w >> 32, w as u32)).collect();
            assert_eq!(got, expected, "{bits} bits");
        }
    }

    /// The parallel sort against the sequential one and a comparison sort: keys of several
    /// widths (one digit shared by all or none), ties carrying their record (stability), on
    /// more words than the parallel sort sorts alone, on 1 to 3 threads.
    #[test]
    fn the_parallel_sort_orders_as_the_sequential_one() {
        let mut rng = SplitMix64(11);
        let rows = PARALLEL_MIN_WORDS as u64 * 3 + 17;
        // (low, bits, the bits the keys use): keys filling their bound, and keys far below it
        // (ids bound to 64 bits, classes in the low bits of a wide word)
        let cases = [
            (32u32, 9u32, 9u32),
            (32, 16, 16),
            (32, 24, 24),
            (32, 32, 32),
            (0, 40, 40),
            (0, 64, 64),
            (0, 64, 27),
            (32, 32, 17),
            (0, 64, 5),
        ];
        for (low, bits, used) in cases {
            let words: Vec<u64> = (0..rows)
                .map(|r| {
                    let key = rng.next_u64() & (u64::MAX >> (64 - used));
                    if low == 32 { (key << 32) | r } else { key }
                })
                .collect();
            let mut expected = words.clone();
            expected.sort_by_key(|&w| (w >> low) & (u64::MAX >> (64 - bits)));
            let mut sequential = words.clone();
            radix_sort(&mut sequential, low, bits);
            assert_eq!(sequential, expected, "{low}+{bits} ({used} used)");
            for threads in 1..=3 {
                let mut parallel = words.clone();
                radix_sort_parallel(&mut parallel, low, bits, threads);
                assert_eq!(
                    parallel, expected,
                    "{low}+{bits} ({used} used) on {threads} threads"
                );
            }
        }
    }

    #[test]
    fn whole_words_and_shared_digits() {
        let mut rng = SplitMix64(5);
        // whole random words (no digit shared), then words sharing every digit but the
        // second (one pass does it), against a comparison sort
        let random: Vec<u64> = (0..5_000).map(|_| rng.next_u64()).collect();
        let shared: Vec<u64> = (0..5_000)
            .map(|_| 0xabcd_0000_0000_0012 | ((rng.next_u64() & 0xff) << 8))
            .collect();
        for words in [random, shared] {
            let mut expected = words.clone();
            expected.sort_unstable();
            let mut got = words;
            radix_sort(&mut got, 0, 64);
            assert_eq!(got, expected);
        }
    }
}
