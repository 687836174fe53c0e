//! The order of published rows: random by default, so that two releases of the same data (at
//! different levels, or by different algorithms) cannot be joined row by row — the unsorted
//! matching attack (Sweeney 2002, seed 004 §3.2): with rows in input order, row i of one release
//! and row i of the other are the same person, and the less generalized value of each
//! quasi-identifier can be taken from whichever release has it.
//!
//! Each row passed on to the writer gets a 64-bit key, a seeded bijective mix of its partition
//! and its position among the partition's rows — not of its values, and unique, so there are
//! no ties. The rows are then written sorted by the key (DataFusion's sort, which spills to
//! disk beyond its memory budget) and the key is dropped. Every input order is equally likely
//! to end at any output position; the same input, release, seed and session configuration
//! (`target_partitions`, which decides how the scan splits the input) give the same order.
//!
//! The sort's memory is bounded: by the session's pool when it has a limit (`--memory-limit`),
//! else by a pool of its own of [`SHUFFLE_MEMORY`] bytes; beyond it the sort spills sorted
//! runs to disk and merges them.
//!
//! The seed is as secret as the data: whoever holds it and knows how the input was split can
//! recompute every row's key and so undo the shuffle.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, UInt64Array};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::execution::memory_pool::{FairSpillPool, MemoryLimit};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::logical_expr::{SortExpr, col};
use datafusion::prelude::{SessionContext, ident};

/// The column holding each row's random key while it is sorted (never written).
pub const ORDER_COLUMN: &str = "__anon_order";

/// The shuffle's memory when the session has no limit: the sort spills beyond it.
pub const SHUFFLE_MEMORY: usize = 1 << 30;

/// The order in which published rows are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOrder {
    /// A random permutation drawn from the seed (the default).
    Shuffled(u64),
    /// The order the rows are read in: open to the unsorted matching attack.
    Input,
}

impl RowOrder {
    /// Shuffled with a fresh random seed.
    pub fn random() -> Self {
        RowOrder::Shuffled(random_seed())
    }

    /// `shuffled` or `input`, as reports say.
    pub fn name(&self) -> &'static str {
        match self {
            RowOrder::Shuffled(_) => "shuffled",
            RowOrder::Input => "input",
        }
    }

    /// The seed, when shuffled.
    pub fn seed(&self) -> Option<u64> {
        match self {
            RowOrder::Shuffled(seed) => Some(*seed),
            RowOrder::Input => None,
        }
    }
}

/// A seed from the operating system's randomness (the standard library's hash keys).
pub fn random_seed() -> u64 {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(std::process::id() as u64);
    hasher.finish()
}

/// The murmur3 64-bit finalizer: a bijection of u64 that mixes every input bit into every
/// output bit.
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The keys of one partition's rows, in the order they are passed on.
#[derive(Debug)]
pub(crate) struct OrderKeys {
    first: u64,
    second: u64,
    /// the partition in the top 24 bits, the row counter in the lower 40
    next: u64,
}

impl OrderKeys {
    pub(crate) fn new(seed: u64, partition: usize) -> Self {
        let mut rng = crate::rng::SplitMix64(seed);
        Self {
            first: rng.next_u64(),
            second: rng.next_u64(),
            next: (partition as u64) << 40,
        }
    }

    /// The keys of the next `rows` rows.
    pub(crate) fn next(&mut self, rows: usize) -> ArrayRef {
        let (first, second, start) = (self.first, self.second, self.next);
        let keys: Vec<u64> = (start..start + rows as u64)
            .map(|x| fmix64(fmix64(x ^ first) ^ second))
            .collect();
        self.next += rows as u64;
        Arc::new(UInt64Array::from(keys))
    }
}

/// `frame` (whose last column is [`ORDER_COLUMN`]) sorted by its keys, without them: in a
/// session whose pool bounds the sort (see the module docs).
pub(crate) fn sorted_by_keys(ctx: &SessionContext, frame: DataFrame) -> Result<DataFrame> {
    let state = super::in_order(ctx);
    let runtime = ctx.runtime_env();
    let state = match runtime.memory_pool.memory_limit() {
        MemoryLimit::Finite(_) => state,
        MemoryLimit::Infinite | MemoryLimit::Unknown => {
            let bounded = RuntimeEnvBuilder::from_runtime_env(&runtime)
                .with_memory_pool(Arc::new(FairSpillPool::new(SHUFFLE_MEMORY)))
                .build_arc()?;
            SessionStateBuilder::new_from_existing(state)
                .with_runtime_env(bounded)
                .build()
        }
    };
    let columns: Vec<_> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .filter(|name| name != ORDER_COLUMN)
        .map(ident)
        .collect();
    let (_, plan) = frame.into_parts();
    DataFrame::new(state, plan)
        .sort(vec![SortExpr::new(col(ORDER_COLUMN), true, false)])?
        .select(columns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt64Type;

    #[test]
    fn keys_are_distinct_and_depend_on_the_seed() {
        let collect = |seed, partition| {
            let mut keys = OrderKeys::new(seed, partition);
            let mut all: Vec<u64> = Vec::new();
            for rows in [3, 0, 5] {
                all.extend(keys.next(rows).as_primitive::<UInt64Type>().values().iter());
            }
            all
        };
        let a = collect(1, 0);
        let mut everything = a.clone();
        everything.extend(collect(1, 1));
        everything.sort_unstable();
        everything.dedup();
        assert_eq!(everything.len(), 16);
        assert_eq!(a, collect(1, 0));
        assert_ne!(a, collect(2, 0));
        // a batch boundary does not change a row's key
        let mut whole = OrderKeys::new(1, 0);
        let whole: Vec<u64> = whole.next(8).as_primitive::<UInt64Type>().values().to_vec();
        assert_eq!(a, whole);
    }
}
