//! # datafusion-anonymity-engine
//!
//! The publishing engine of datafusion-anonymity, over the SQL surface of the
//! `datafusion-anonymity` crate: policies (TOML), tables (Parquet, CSV) on local disks and
//! object stores, the optimal lattice search and the local recodings, verified fail-closed
//! publishing, the profile and the bucketization attack.
//!
//! The modules form layers; each imports only from the layers above it in this table (the
//! tests `structure::no_crate_has_a_module_cycle` and
//! `structure::no_folder_has_a_cycle_among_its_files_and_subfolders` of the command-line
//! package fail on a cycle, between modules or between the files of any folder):
//!
//! | layer | modules |
//! |---|---|
//! | building blocks | `text`, `wire`, `progress`, `parallel`, `sort`, `word_runs` (group sizes of words in bounded memory, spilling sorted runs), `label_codes` (`direct_table` and `value_codes` come from the SQL crate's `packing`), `pseudonym`, `storage` (and its `manifest`), `session`, `interrupt` (stopping a job on request) |
//! | transforming | `perturb` (microaggregation, noise, swapping, PRAM), `cloaking` (location events to (cell, window) labels): in memory, over the building blocks alone |
//! | inputs | `tables` (with `tables::delta`, Delta Lake tables behind the `delta` feature); `errors` (typed errors, one line for people, each shell's words for the options); `bucketize` (its options and encodings; the policy names them); `policy`, which describes and checks a policy (naming the transformations' options) and knows nothing of the search; `hierarchies` (hierarchy files built from a column's frequency set, and what a value tree does to a column) |
//! | searching | `search` (the frequency set, the lattice and local searches, `release`), `local_recode`, `provider` (`GeneralizedTable`), `policy_release` (what a bound policy builds for them) |
//! | measuring | `profile` |
//! | writing | `publish` (with `publish::delta`, a release's one Delta commit), `saved_recoding` |
//! | jobs | `jobs` (one pipeline per job, shared by the command line and Python) |
//!
//! The SQL crate's modules are re-exported (`functions`, `generalize`, `options`, `rewrite`,
//! `rng`), so one dependency gives a host everything.

pub use datafusion;
pub use datafusion_anonymity::{
    function_names, functions, generalize, options, register_udfs, rewrite, rng,
    with_anonymity_rules,
};

/// The SQL crate's packing blocks, where the engine has always named them.
pub use datafusion_anonymity::packing::{direct_table, value_codes};
pub mod bucketize;
pub mod cloaking;
pub mod errors;
pub mod failure;
pub mod hierarchies;
pub mod interrupt;
pub mod jobs;
pub mod label_codes;
pub mod local_recode;
pub mod parallel;
pub mod perturb;
pub mod policy;
pub mod policy_release;
pub mod profile;
pub mod progress;
pub mod provider;
pub mod pseudonym;
pub mod publish;
/// The search's output (a module of `search`), at the top for hosts: `engine::release::Release`.
pub use search::release;
pub mod saved_recoding;
pub mod search;
pub mod session;
pub mod sort;
pub mod storage;
pub mod tables;
pub mod text;
pub mod wire;
pub mod word_runs;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// Registers every anonymity function on `ctx` ([`datafusion_anonymity::register`]) and the
/// `anonymity_profile` table function, which needs the engine.
pub fn register(ctx: &SessionContext) -> Result<()> {
    datafusion_anonymity::register(ctx)?;
    profile::register_table_function(ctx);
    Ok(())
}
