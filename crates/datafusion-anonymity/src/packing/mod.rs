//! Values to dense codes and packed keys to classes: the building blocks shared by the packed
//! `GROUP BY` kernel of [`crate::rewrite`] and the engine (its frequency set, local recoding,
//! publishing and bucketization), kept here, in the lowest crate that needs them.
//!
//! - [`value_codes::ValueCodes`]: one column's values → dense `u32` codes, vectorized.
//! - [`direct_table::DirectTable`]: an open-addressing map from a packed 64-bit key to a class.
//! - [`growing`]: indexes in front of a growing domain's maps (small integer ranges, short
//!   text), so that most rows skip hashing.
//! - [`radix::radix_sort`]: packed 64-bit words sorted by a range of their bits; for large
//!   inputs, [`radix::radix_sort_parallel`] on several threads.

pub mod direct_table;
pub mod growing;
pub mod radix;
pub mod value_codes;
