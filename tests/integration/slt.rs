//! Runs every `sql/*.slt` file (the ones that need the engine: a `REGISTER POLICY 'file.toml'`
//! directive, the equivalent of `anon sql --policy FILE`, or the `anonymity_profile` table
//! function) over a fresh `SessionContext` with [`datafusion_anonymity_engine::register`], one
//! test per file. The SQL crate's own files run in its tests (`crates/datafusion-anonymity/
//! tests/slt/`), through the same connection (`slt_runner`).

use std::path::PathBuf;

use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use futures::future::BoxFuture;

use crate::slt_runner::{AnonDb, run_file, slt_files};

/// The path of a `REGISTER POLICY 'file.toml'` statement (relative to `sql/`).
fn policy_directive(sql: &str) -> Option<&str> {
    let rest = sql.trim();
    let head = rest.get(..15)?;
    if !head.eq_ignore_ascii_case("REGISTER POLICY") {
        return None;
    }
    let quoted = rest[15..].trim().trim_end_matches(';').trim();
    quoted.strip_prefix('\'')?.strip_suffix('\'')
}

/// Registers the policy's input, hierarchies and `<name>_anon` as `anon sql --policy` does.
pub(crate) fn register_policy(
    sql: &str,
    ctx: &SessionContext,
) -> Option<BoxFuture<'static, Result<(), DataFusionError>>> {
    let path = sql_dir().join(policy_directive(sql)?);
    let ctx = ctx.clone();
    Some(Box::pin(async move {
        let mut policy = datafusion_anonymity_engine::policy::Policy::from_file(path)?;
        policy.register(&ctx).await
    }))
}

fn sql_dir() -> PathBuf {
    // `cargo test` sets CARGO_MANIFEST_DIR at run time too; prefer it over the compile-time value
    // so a test binary shared through a common target directory still reads this checkout's files.
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
        .join("sql")
}

/// Runs one `sql/<name>.slt` file with connections from `connect`.
pub(crate) async fn run_slt_with<F>(name: &str, connect: F)
where
    F: Fn() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<AnonDb, DataFusionError>> + Send>,
        > + Send
        + Sync
        + 'static,
{
    run_file(&sql_dir().join(format!("{name}.slt")), connect).await;
}

async fn run_slt(name: &str) {
    run_slt_with(name, || {
        Box::pin(async {
            let ctx = SessionContext::new();
            datafusion_anonymity_engine::register(&ctx)?;
            Ok(AnonDb::with_context(ctx).with_directive(register_policy))
        })
    })
    .await;
}

slt_files!(
    sql_dir();
    tuple_diversity,
    attribute_disclosure,
    profile,
    generalized_table,
);
