//! The allocator of the `anon` and `anon-bench` binaries and its settings, so the benchmark's
//! processes allocate as the shipped one does.

// DataFusion allocates and frees many large buffers per query: mimalloc keeps them cheap
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` of mimalloc's `mi_option_e` (mimalloc.h of mimalloc v3, which
/// libmimalloc-sys builds unless its `v2` feature is on; the Rust bindings do not name it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Sets mimalloc's and the process's memory options; call first in `main`, before any thread
/// is started.
pub fn tune() {
    // Keep freed memory in the process instead of returning it to the OS after 10 ms: a query
    // frees and reallocates large buffers between its phases, and on virtual machines freshly
    // faulted pages cost as much as the aggregation itself (kernel time in page clearing). The
    // peak footprint is unchanged; only its release is deferred to the end of the process.
    // SAFETY: sets a plain integer option, before any thread is started.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    // No transparent huge pages: mimalloc asks for them on its arenas, and where the kernel
    // compacts memory to fault one in (`defrag = madvise`, the common default) a first touch
    // measured 2.5 s per GiB against 0.43 s in 4 KiB pages. The first touches of a 10M-row
    // anonymize (its 1.1 GB peak) were then a quarter of its single-threaded phases; without
    // them system time fell from 2.2-2.5 s to 0.8 s, the wall time by 0.4-0.8 s (user time
    // +0.7 s: more TLB misses). Process-wide, so it also covers the arena mimalloc reserved
    // before `main` (its own `allow_thp` option is read only then).
    #[cfg(target_os = "linux")]
    // SAFETY: a flag of this process, no pointers passed.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}
