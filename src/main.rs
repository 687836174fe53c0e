//! `anon`: the command-line interface of datafusion-anonymity.

mod cli;

// DataFusion allocates and frees many large buffers per query: mimalloc keeps them cheap
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` of mimalloc's `mi_option_e` (mimalloc.h of mimalloc v3, which
/// libmimalloc-sys builds unless its `v2` feature is on; the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // Keep freed memory in the process instead of returning it to the OS after 10 ms: a query
    // frees and reallocates large buffers between its phases, and on virtual machines freshly
    // faulted pages cost as much as the aggregation itself (kernel time in page clearing). The
    // peak footprint is unchanged; only its release is deferred to the end of the process.
    // SAFETY: sets a plain integer option, before any thread is started.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    cli::main()
}
