//! `anon`: the command-line interface of datafusion-anonymity.

mod cli;

// DataFusion allocates and frees many large buffers per query: mimalloc keeps them cheap
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::main()
}
