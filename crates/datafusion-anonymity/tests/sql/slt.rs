//! Runs every `tests/slt/*.slt` file with the `sqllogictest` crate over a fresh
//! `SessionContext` with the crate's functions ([`datafusion_anonymity::register`]), one test
//! per file, so `cargo test -p datafusion-anonymity --test sql slt::diversity` runs one file
//! and a failure names its file and line. The files that need a policy or the engine's
//! `anonymity_profile` table function are the engine's, under the repository's `sql/`.

use std::path::PathBuf;

use datafusion::prelude::SessionContext;

use crate::slt_runner::{AnonDb, run_file, slt_files};

fn slt_dir() -> PathBuf {
    // `cargo test` sets CARGO_MANIFEST_DIR at run time too; prefer it over the compile-time value
    // so a test binary shared through a common target directory still reads this checkout's files.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("tests/slt")
}

async fn run_slt(name: &str) {
    run_file(&slt_dir().join(format!("{name}.slt")), || {
        Box::pin(async {
            let ctx = SessionContext::new();
            datafusion_anonymity::register(&ctx)?;
            Ok(AnonDb::with_context(ctx))
        })
    })
    .await;
}

slt_files!(
    slt_dir();
    worked_example,
    k_anonymity,
    diversity,
    t_closeness,
    ncp_leakage,
    edge_cases,
    types,
    queries,
    parquet,
    generalize,
    perturbation,
    location,
    shared_states,
);
