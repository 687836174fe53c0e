//! `anon`: the command-line interface of datafusion-anonymity.

mod allocator;
mod cli;

fn main() -> std::process::ExitCode {
    allocator::tune();
    cli::main()
}
