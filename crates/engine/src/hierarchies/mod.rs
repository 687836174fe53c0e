//! Hierarchy files built from the data, and what a value tree does to a column: the library
//! side of `anon hierarchy build` and `anon hierarchy check` (the job is
//! [`crate::jobs::hierarchy`]).
//!
//! Everything here works on a column's **frequency set**, its distinct non-null values with
//! their row counts (one `GROUP BY` of the column), never on its rows:
//! - [`spec`]: what a builder is asked for, checked before any data is read;
//! - [`build`]: the levels of a hierarchy (`interval`, `quantile`, `prefix`, `date`,
//!   `category`) over the distinct values, as label arrays;
//! - [`csv`]: those levels written as an ARX hierarchy CSV file (one row per leaf, `;`
//!   separated, quoted where needed), the format `kind = "tree"` reads, a chunk of lines at a
//!   time;
//! - [`summary`]: per level of a value tree, the classes the data fall into and the rows of
//!   the smallest, counted from the frequency set.
//!
//! A file is checked by the same rules whoever reads it (the policy loader, `--hierarchy`,
//! `anon hierarchy check`) and by the job that writes it, on its label arrays: see
//! [`crate::generalize::tree_rules`].

pub mod build;
pub mod csv;
pub mod spec;
pub mod summary;

pub use build::Levels;
pub use spec::{BuilderOptions, BuilderSpec};
pub use summary::{LevelSummary, built_level_summaries, level_summaries};
