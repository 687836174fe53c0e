//! Sorting rows by columns of small integer codes: the frequency set's canonical order and
//! the generalized buckets' record order share this one kernel.
//!
//! A row's codes are packed into one key (each column in the fewest bits that hold its
//! cardinality, the first column highest), so the order of keys is the lexicographic order
//! of the code tuples. Keys of at most 32 bits travel with their row in one `u64` and are
//! sorted by an LSD radix sort (stable, so ties stay in row order); longer keys are sorted as
//! `(key, row)` pairs; tuples over 64 bits are compared column by column.

/// The SQL crate's radix sort of packed words (the kernel is shared with its value trees).
pub(crate) use datafusion_anonymity::packing::radix::radix_sort;

/// [`radix_sort`] on every core, for the large sorts of whole columns (the uniqueness check's
/// and the repeated-identifier check's words): the same order and memory.
pub(crate) fn radix_sort_on_all_cores(words: &mut Vec<u64>, low: u32, bits: u32) {
    datafusion_anonymity::packing::radix::radix_sort_parallel(
        words,
        low,
        bits,
        crate::parallel::threads(),
    );
}

/// The rows `0..rows` in ascending order of their code tuples (`columns[0]` first), ties in
/// row order. `cardinalities[c]` bounds the codes of `columns[c]` (codes are below it).
pub(crate) fn order_by_codes(columns: &[&[u32]], cardinalities: &[usize], rows: usize) -> Vec<u32> {
    let widths: Vec<u32> = cardinalities
        .iter()
        .map(|&n| u32::BITS - (n.max(1) as u32 - 1).leading_zeros())
        .collect();
    let bits: u32 = widths.iter().sum();
    if bits <= 64 {
        // one column at a time: vectorizable loops, no per-row fold over the columns
        let mut keys = vec![0u64; rows];
        for (codes, &width) in columns.iter().zip(&widths) {
            for (key, &code) in keys.iter_mut().zip(codes.iter()) {
                *key = (*key << width) | u64::from(code);
            }
        }
        if bits <= 32 {
            let mut keyed: Vec<u64> = keys
                .into_iter()
                .enumerate()
                .map(|(r, key)| (key << 32) | r as u64)
                .collect();
            radix_sort(&mut keyed, 32, bits);
            return keyed.into_iter().map(|k| k as u32).collect();
        }
        let mut keyed: Vec<(u64, u32)> = keys
            .into_iter()
            .enumerate()
            .map(|(r, key)| (key, r as u32))
            .collect();
        keyed.sort_unstable();
        return keyed.into_iter().map(|(_, r)| r).collect();
    }
    let mut order: Vec<u32> = (0..rows as u32).collect();
    order.sort_unstable_by(|&a, &b| {
        columns
            .iter()
            .map(|c| c[a as usize].cmp(&c[b as usize]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    order
}

/// How rows stand in the order of their code tuples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CodeOrder {
    Unsorted,
    /// ascending, some rows equal
    Sorted,
    /// ascending, no two rows equal
    Strict,
}

/// Whether the rows `0..rows` are in ascending order of their code tuples (`columns[0]`
/// first): one pass comparing each row with the one before.
pub(crate) fn code_order(columns: &[&[u32]], rows: usize) -> CodeOrder {
    let mut order = CodeOrder::Strict;
    for r in 1..rows {
        let step = columns
            .iter()
            .map(|c| c[r - 1].cmp(&c[r]))
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal);
        match step {
            std::cmp::Ordering::Less => {}
            std::cmp::Ordering::Equal => order = CodeOrder::Sorted,
            std::cmp::Ordering::Greater => return CodeOrder::Unsorted,
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn rows_ordered_like_a_comparison_of_their_tuples_then_row() {
        let mut rng = SplitMix64(11);
        // keys of 3 + 10 = 13 bits (radix), 3 × 16 + 10 = 58 bits (pairs), 5 × 16 = 80 bits
        // (compared); few values per column, so ties are many
        for cardinalities in [
            vec![5usize, 1000],
            vec![60_000, 60_000, 60_000, 1000],
            vec![40_000; 5],
        ] {
            let rows = 4_000;
            let columns: Vec<Vec<u32>> = cardinalities
                .iter()
                .map(|&n| {
                    let used = (n as u64).min(7);
                    (0..rows)
                        .map(|_| (n as u64 - 1 - rng.next_u64() % used) as u32)
                        .collect()
                })
                .collect();
            let views: Vec<&[u32]> = columns.iter().map(Vec::as_slice).collect();
            // the reference: each row's tuple, then the row, compared
            let mut expected: Vec<(Vec<u32>, u32)> = (0..rows)
                .map(|r| (columns.iter().map(|c| c[r]).collect(), r as u32))
                .collect();
            expected.sort();
            let expected: Vec<u32> = expected.into_iter().map(|(_, r)| r).collect();
            assert_eq!(
                order_by_codes(&views, &cardinalities, rows),
                expected,
                "{cardinalities:?}"
            );
            // the rows put in that order are sorted, with ties (few values a column)
            assert_eq!(code_order(&views, rows), CodeOrder::Unsorted);
            let sorted: Vec<Vec<u32>> = columns
                .iter()
                .map(|c| expected.iter().map(|&r| c[r as usize]).collect())
                .collect();
            let sorted: Vec<&[u32]> = sorted.iter().map(Vec::as_slice).collect();
            assert_eq!(code_order(&sorted, rows), CodeOrder::Sorted);
            // and strictly so once the ties are gone
            let mut distinct: Vec<Vec<u32>> = (0..rows)
                .map(|r| sorted.iter().map(|c| c[r]).collect())
                .collect();
            distinct.dedup();
            let strict: Vec<Vec<u32>> = (0..columns.len())
                .map(|c| distinct.iter().map(|t| t[c]).collect())
                .collect();
            let strict: Vec<&[u32]> = strict.iter().map(Vec::as_slice).collect();
            assert_eq!(code_order(&strict, distinct.len()), CodeOrder::Strict);
        }
    }
}
