//! An LSD radix sort of 64-bit words by a range of their bits: the one sorting kernel of
//! packed keys (the engine's frequency sets, buckets and recodings; the unique-leaves check of
//! value trees, over the leaves' hashes).

/// Sorts `words` by their bits `low..low + bits` (`low + bits` ≤ 64; the rest of the last
/// 8-bit digit counts too, the bits above it are ignored), stably: an LSD radix sort of 8-bit
/// digits, one counting pass for every digit, then one scatter per digit, but for a digit
/// every word shares (which leaves the order as it is: a key spanning a small range costs few
/// passes).
pub fn radix_sort(words: &mut Vec<u64>, low: u32, bits: u32) {
    let digits = bits.div_ceil(8) as usize;
    if words.len() < 2 || digits == 0 {
        return;
    }
    let shift = |d: usize| low + 8 * d as u32;
    let mut counts = vec![[0usize; 256]; digits];
    for &w in words.iter() {
        for (d, count) in counts.iter_mut().enumerate() {
            count[((w >> shift(d)) & 0xff) as usize] += 1;
        }
    }
    let mut other = vec![0u64; words.len()];
    for (d, count) in counts.iter().enumerate() {
        if count.contains(&words.len()) {
            continue;
        }
        let mut next = [0usize; 256];
        let mut start = 0;
        for (slot, &n) in next.iter_mut().zip(count) {
            *slot = start;
            start += n;
        }
        let s = shift(d);
        for &w in words.iter() {
            let slot = &mut next[((w >> s) & 0xff) as usize];
            other[*slot] = w;
            *slot += 1;
        }
        std::mem::swap(words, &mut other);
    }
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
