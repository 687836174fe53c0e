//! Sessions for the CLI: the crate's functions registered, and optionally a memory limit
//! under which sorts and aggregations spill to disk instead of failing.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::storage::LakeStoreRegistry;

/// The share of `--memory-limit` given to DataFusion's memory pool, which tracks the
/// aggregations, sorts, the frequency set and the class counters. The rest is headroom for
/// what no pool tracks: Parquet decoding and encoding buffers, batches in flight, the
/// allocator's slack. Measured on 100M rows under 2 GiB: the process peaks about 0.4 GiB above
/// its pool (BENCHMARKS.md, "issue 13").
pub const POOL_SHARE: f64 = 0.8;

/// A runtime that reads every object-store URL ([`LakeStoreRegistry`]); with `memory_limit`
/// (bytes, the whole process's budget), a fair spilling memory pool of [`POOL_SHARE`] of it.
pub fn runtime(memory_limit: Option<usize>) -> Result<Arc<RuntimeEnv>> {
    let mut runtime =
        RuntimeEnvBuilder::new().with_object_store_registry(Arc::new(LakeStoreRegistry::default()));
    if let Some(bytes) = memory_limit {
        let pool = (bytes as f64 * POOL_SHARE) as usize;
        runtime = runtime.with_memory_pool(Arc::new(FairSpillPool::new(pool)));
    }
    runtime.build_arc()
}

/// A session with the crate's functions registered over [`runtime`]`(memory_limit)`.
pub fn context(memory_limit: Option<usize>) -> Result<SessionContext> {
    let ctx = SessionContext::new_with_config_rt(SessionConfig::new(), runtime(memory_limit)?);
    crate::register(&ctx)?;
    Ok(ctx)
}

/// A session for a `--memory-limit` option: unlimited when absent, else [`parse_size`].
pub fn context_with_limit(memory_limit: Option<&str>) -> Result<SessionContext> {
    context(memory_limit.map(parse_size).transpose()?)
}

/// `state` planning `factor` partitions per partition it runs at once, for a scan whose every
/// partition is one task with state of its own (the frequency set's counts, a local release's
/// written rows): a scan's partitions are whole row groups, so they hold unequal rows, and
/// with several partitions per thread a thread whose partition ends early takes another
/// instead of idling while the largest finishes. (Only where the partitions' states are cheap
/// to merge: a full-domain release's written-class counters cost more to merge than the
/// balance saves.)
pub(crate) fn partitions_per_thread(
    state: &mut datafusion::execution::SessionState,
    factor: usize,
) {
    let options = state.config_mut().options_mut();
    options.execution.target_partitions =
        options.execution.target_partitions.saturating_mul(factor);
}

/// Parses a size such as `2GiB`, `512M`, `1.5G` or `1000000` (bytes); K, M, G, T are powers
/// of 1024, with or without `iB`/`B`.
pub fn parse_size(text: &str) -> Result<usize> {
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(size_error(text)),
    };
    let value: f64 = number.parse().map_err(|_| size_error(text))?;
    let bytes = value * scale;
    if !(bytes >= 1.0 && bytes < usize::MAX as f64) {
        return Err(size_error(text));
    }
    Ok(bytes as usize)
}

fn size_error(text: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "'{text}' is not a memory size (examples: 2GiB, 512M, 1000000)"
    ))
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("2GiB").unwrap(), 2 * 1024 * 1024 * 1024);
        assert_eq!(parse_size("512M").unwrap(), 512 * 1024 * 1024);
        assert_eq!(parse_size("1.5k").unwrap(), 1536);
        assert_eq!(parse_size("1000").unwrap(), 1000);
        assert!(parse_size("lots").is_err());
        assert!(parse_size("0").is_err());
        assert!(parse_size("2PB").is_err());
    }
}
