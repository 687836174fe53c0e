//! What the `anon` subcommands do, as library calls returning JSON reports: `anonymize`,
//! `apply`, `profile` and `sql`, each in a session of its own with every function and the
//! whole-table rewrite. The same library pieces the CLI calls, in the same order; nothing is
//! printed.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion_anonymity::datafusion::arrow::datatypes::SchemaRef;
use datafusion_anonymity::datafusion::arrow::record_batch::RecordBatch;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::prelude::SessionContext;
use datafusion_anonymity_engine::jobs::output::OutputRequest;
use datafusion_anonymity_engine::jobs::{
    Observer, anonymize, apply, attack, hierarchy, profile, sql,
};
use datafusion_anonymity_engine::policy::{Policy, PolicySource};
use datafusion_anonymity_engine::release::Release;
use datafusion_anonymity_engine::saved_recoding::SavedRecoding;
use datafusion_anonymity_engine::search::{Method, Metric};
use datafusion_anonymity_engine::session;
use datafusion_anonymity_engine::storage::Location;
use datafusion_anonymity_engine::tables::BadValues;
use serde_json::Value;

pub use datafusion_anonymity_engine::jobs::sql::TableSource;

/// Options of [`anonymize`], as `anon anonymize` takes them.
pub struct AnonymizeOptions {
    pub policy: PolicySource,
    pub out: Option<String>,
    pub report: Option<String>,
    pub html_report: Option<String>,
    pub algorithm: String,
    pub metric: String,
    pub seed: Option<u64>,
    pub overwrite: bool,
    pub utility: bool,
    pub recoding_out: Option<String>,
    pub memory_limit: Option<String>,
    /// A Ballista scheduler (`df://host:port`) whose executors run the queries.
    pub cluster: Option<String>,
    /// `parquet` or `delta` (`None`: the policy's `[output] format`, or Delta when the output
    /// is a Delta table).
    pub format: Option<String>,
    pub append: bool,
    /// Mondrian: refine its small regions (`false`: plain top-down partitioning).
    pub refine: bool,
    /// Write the seed into the written reports too.
    pub record_seed: bool,
}

/// A job's session: local, or a client of the Ballista cluster at `cluster` (`df://host:port`,
/// `anon scheduler` and `anon executor`), as the command line's `--cluster` makes it.
async fn job_session(memory_limit: Option<&str>, cluster: Option<&str>) -> Result<SessionContext> {
    datafusion_anonymity_ballista::session(memory_limit, cluster).await
}

fn encode(value: &impl serde::Serialize) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))
}

/// `anon anonymize`: the same pipeline ([`anonymize::anonymize`]); its report as JSON, the
/// keys `--report` writes.
pub async fn anonymize(options: AnonymizeOptions, observer: &dyn Observer) -> Result<Value> {
    let ctx = job_session(options.memory_limit.as_deref(), options.cluster.as_deref()).await?;
    let job = anonymize::AnonymizeOptions {
        policy: options.policy,
        out: options.out,
        report: options.report,
        html_report: options.html_report,
        method: options.algorithm.parse::<Method>()?,
        metric: options.metric.parse::<Metric>()?,
        seed: options.seed,
        overwrite: options.overwrite,
        record_seed: options.record_seed,
        utility: options.utility,
        recoding_out: options.recoding_out,
        refine: options.refine,
        output: OutputRequest::new(options.format.as_deref(), options.append)?,
    };
    anonymize::anonymize(&ctx, &job, observer).await?.to_json()
}

/// Reads `policy` and registers it on a new session (the functions, its input, its
/// hierarchies and, with a `[transformation]`, levels or a recoding, `<name>_anon`); `levels`
/// (quasi-identifier → level) replace the policy's `[transformation]`, and `recoding` (a local
/// recoding saved by `anonymize`'s `recoding_out`) gives its classes instead, mapped onto the
/// input as `apply --recoding` maps them. `<name>_anon` is refused when it suppresses more
/// than `max_suppression` allows, as `apply` refuses to publish it.
pub async fn policy_session(
    policy: &str,
    levels: Option<HashMap<String, usize>>,
    recoding: Option<&str>,
    memory_limit: Option<&str>,
) -> Result<(SessionContext, Policy)> {
    let mut policy = Policy::from_file(policy)?;
    let ctx = session::context_with_limit(memory_limit)?;
    policy.register(&ctx).await?;
    let release = match (levels, recoding) {
        (Some(_), Some(_)) => {
            return Err(DataFusionError::Plan(
                "give levels or a recoding, not both".to_string(),
            ));
        }
        (Some(levels), None) => {
            let levels: Vec<(String, usize)> = levels.into_iter().collect();
            Some(Release::FullDomain(apply::levels_in_order(
                &policy, &levels,
            )?))
        }
        (None, Some(recoding)) => {
            let location = Location::parse(recoding)?;
            let saved = SavedRecoding::read(&location, policy.storage()).await?;
            let observer = datafusion_anonymity_engine::jobs::Silent;
            let mapped =
                apply::saved_release(&ctx, &policy, &saved, &location, &observer, None).await?;
            Some(mapped.release)
        }
        // the policy's own [transformation], which registering it served as it is
        (None, None) => policy.transformation().map(Release::FullDomain),
    };
    if let Some(release) = release {
        // served only within the policy's suppression limit, as `apply` publishes
        let table = policy
            .generalized_table(&ctx, release)
            .await?
            .within_suppression_limit(&ctx)
            .await?;
        let name = format!("{}_anon", policy.table_name());
        ctx.deregister_table(name.as_str())?;
        ctx.register_table(name, Arc::new(table))?;
    }
    Ok((ctx, policy))
}

/// The name of the generalized table [`policy_session`] registers, or an error saying how to
/// get one.
pub fn generalized_name(ctx: &SessionContext, policy: &Policy) -> Result<String> {
    let name = format!("{}_anon", policy.table_name());
    if ctx.table_exist(name.as_str())? {
        Ok(name)
    } else {
        Err(DataFusionError::Plan(format!(
            "policy {} has no [transformation]: pass levels={{quasi_identifier: level, ...}} \
             (e.g. the \"levels\" of the report anonymize() returns)",
            policy.source()
        )))
    }
}

/// `anon apply`: the same pipeline ([`apply::apply`]); its report as JSON, the keys
/// `--report` writes.
pub async fn apply(
    options: apply::ApplyOptions,
    memory_limit: Option<String>,
    cluster: Option<String>,
    observer: &dyn Observer,
) -> Result<Value> {
    let ctx = job_session(memory_limit.as_deref(), cluster.as_deref()).await?;
    apply::apply(&ctx, &options, observer).await?.to_json()
}

/// `anon profile --format json`: the same pipeline ([`profile::profile`]); the report as JSON,
/// also written in each of `rendered`'s formats to its location (`anon profile --format F
/// --out PATH`).
pub async fn profile(
    job: profile::ProfileJobOptions,
    memory_limit: Option<String>,
    cluster: Option<String>,
    rendered: Vec<(profile::ProfileFormat, String)>,
    observer: &dyn Observer,
) -> Result<Value> {
    let ctx = job_session(memory_limit.as_deref(), cluster.as_deref()).await?;
    let report = profile::profile(&ctx, &job, observer).await?;
    for (format, location) in &rendered {
        profile::write_rendered(&report, *format, location).await?;
    }
    encode(&report)
}

/// Options of [`sql`].
pub struct SqlArgs {
    pub query: String,
    pub tables: Vec<(String, TableSource)>,
    pub policy: Option<PolicySource>,
    pub levels: Option<HashMap<String, usize>>,
    pub hierarchies: Vec<(String, String)>,
    pub memory_limit: Option<String>,
    /// A Ballista scheduler (`df://host:port`) whose executors run the queries.
    pub cluster: Option<String>,
    /// CSV values that do not convert to their column's type: overrides the policy's.
    pub bad_values: Option<BadValues>,
}

/// `anon sql`: the same pipeline ([`sql::sql`]); the last statement's result.
pub async fn sql(args: SqlArgs) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let ctx = job_session(args.memory_limit.as_deref(), args.cluster.as_deref()).await?;
    let options = sql::SqlOptions {
        tables: args.tables,
        policy: args.policy,
        levels: args.levels.map(|levels| levels.into_iter().collect()),
        hierarchies: args.hierarchies,
        bad_values: args.bad_values,
        ..sql::SqlOptions::new(args.query)
    };
    sql::sql(&ctx, options).await
}

/// `anon attack fingerprint --json`: the same pipeline ([`attack::fingerprint`]); the report
/// as JSON.
pub async fn attack_fingerprint(
    options: attack::FingerprintOptions,
    memory_limit: Option<String>,
) -> Result<Value> {
    let ctx = session::context_with_limit(memory_limit.as_deref())?;
    encode(&attack::fingerprint(&ctx, &options).await?)
}

/// `anon hierarchy build`: the same pipeline ([`hierarchy::build_hierarchy`]); the report as
/// JSON.
pub async fn build_hierarchy(
    options: hierarchy::BuildOptions,
    memory_limit: Option<String>,
) -> Result<Value> {
    let ctx = session::context_with_limit(memory_limit.as_deref())?;
    encode(&hierarchy::build_hierarchy(&ctx, options).await?)
}

/// `anon hierarchy check`: the same pipeline ([`hierarchy::check_hierarchy`]); the report as
/// JSON.
pub async fn check_hierarchy(
    options: hierarchy::CheckOptions,
    memory_limit: Option<String>,
) -> Result<Value> {
    let ctx = session::context_with_limit(memory_limit.as_deref())?;
    encode(&hierarchy::check_hierarchy(&ctx, options).await?)
}
