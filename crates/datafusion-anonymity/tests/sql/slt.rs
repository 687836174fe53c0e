//! Runs every `tests/slt/*.slt` file with the `sqllogictest` crate over a fresh
//! `SessionContext` with the crate's functions ([`datafusion_anonymity::register`]), one test
//! per file, so `cargo test -p datafusion-anonymity --test sql slt::diversity` runs one file
//! and a failure names its file and line. The files that need a policy or the engine's
//! `anonymity_profile` table function are the engine's, under the repository's `sql/`.

use std::path::PathBuf;

use datafusion::prelude::SessionContext;

use crate::slt_runner::{AnonDb, files_in, run_file};

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

macro_rules! slt_files {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                run_slt(stringify!($name)).await;
            }
        )*
        const SLT_FILES: &[&str] = &[$(stringify!($name)),*];
    };
}

slt_files!(
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

/// Every `tests/slt/*.slt` file has a test above (none is silently skipped), and every test has
/// a file.
#[test]
fn every_slt_file_runs() {
    let mut registered: Vec<String> = SLT_FILES.iter().map(|s| s.to_string()).collect();
    registered.sort();
    assert_eq!(
        files_in(&slt_dir()),
        registered,
        "tests/slt/*.slt files and the slt_files! list in tests/sql/slt.rs differ"
    );
}
