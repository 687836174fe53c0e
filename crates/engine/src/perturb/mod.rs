//! Perturbative protection of numeric and categorical microdata (seed 003 §2.2.1–2.2.2):
//! microaggregation, noise addition, rank swapping, PRAM and permutation within groups, and the
//! utility and disclosure-risk figures that let a publisher choose among them.
//!
//! The algorithms work on columns held in memory (n values per perturbed attribute, so
//! O(n·d)); no n × n matrix is ever built. The publishing pipeline
//! ([`crate::publish::perturbed`]) reads the columns in one pass, runs these functions, and
//! writes the rows in a second pass.
//!
//! | file | what |
//! |---|---|
//! | `points.rs` | the standardized points microaggregation works on |
//! | `mdav.rs` | MDAV, the reference heuristic (Domingo-Ferrer & Torra 2005) |
//! | `refine.rs` | the default: MDAV's partition improved by moves and swaps while SSE falls |
//! | `univariate.rs` | the optimal partition of an ordering (Hansen & Mukherjee 2003) |
//! | `partition.rs` | strata, blocks for large inputs, and the chosen algorithm per block |
//! | `noise.rs` | additive and correlated Gaussian noise |
//! | `swap.rs` | rank swapping (Moore 1996) |
//! | `pram.rs` | the post-randomization method |
//! | `measures.rs` | IL, IL1s, correlation and moment changes, SDID |
//! | `kdtree.rs` | a k-d tree: nearest and k nearest points |
//! | `linkage.rs` | distance-based record linkage with the k-d tree |

pub mod association;
pub mod casc;
pub mod kdtree;
pub mod linkage;
pub mod mdav;
pub mod measures;
pub mod neighbours;
pub mod noise;
pub mod partition;
pub mod points;
pub mod pram;
pub mod refine;
pub mod release;
pub mod swap;
pub mod univariate;

pub use partition::{Aggregate, Groups, MicroAlgorithm, MicroOptions, microaggregate};
pub use points::Points;
