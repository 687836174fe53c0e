//! `anon-bench`: times each anonymity query and job against its plain-SQL floor (COPY, a
//! `count(*)`) measured in the same run, and prints the ratios with their targets; the figures
//! and commands are in BENCHMARKS.md. A development tool, kept out of the shipped `anon`
//! binary; its child processes (the `large` suite) are that binary, built beside it.

#[path = "../../allocator.rs"]
mod allocator;
mod bucketize;
mod harness;
mod large;
mod measure;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    allocator::tune();
    let args = harness::BenchArgs::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(harness::run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
