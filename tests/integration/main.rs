//! Integration tests for `datafusion_anonymity`, written from `docs/functions.md` and
//! `METRICS.md`: sqllogictest files under `sql/` and a brute-force reference comparison.

mod anonymize;
mod bucketize;
mod csv;
mod profile;
mod publish;
mod reference;
mod s3;
mod search;
mod slt;
mod staging;

use std::process::{Command, Output};

/// Runs the `anon` binary with `args`.
fn anon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_anon"))
        .args(args)
        .output()
        .unwrap()
}

/// A command's stderr as text.
fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}
