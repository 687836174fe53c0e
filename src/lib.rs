//! # datafusion-anonymity
//!
//! Privacy-preserving data publishing as SQL in [Apache DataFusion](https://datafusion.apache.org):
//! k-anonymity, l-diversity, t-closeness, NCP, entropy leakage and re-identification risk as
//! aggregate functions over `GROUP BY <quasi-identifiers>`.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use datafusion::prelude::*;
//! let ctx = SessionContext::new();
//! datafusion_anonymity::register(&ctx)?;
//! ctx.register_parquet("patients", "patients.parquet", ParquetReadOptions::default()).await?;
//! ctx.sql("SELECT zip, age, k_anonymity() AS k, t_closeness(disease) AS t \
//!          FROM patients GROUP BY zip, age").await?.show().await?;
//! # Ok(()) }
//! ```
//!
//! The definitions follow `METRICS.md`; each function's documentation says how it treats nulls,
//! empty input and other edge cases (always on the side that never overstates privacy).

pub use datafusion;

pub mod bench;
pub mod bucketize;
pub mod functions;
pub mod generalize;
pub mod generate;
pub mod options;
pub mod policy;
pub mod profile;
pub mod provider;
pub mod publish;
pub mod release;
pub mod rewrite;
mod rng;
pub mod search;
pub mod session;
pub mod storage;
pub mod tables;
mod value_codes;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::SessionContext;

/// Registers every anonymity function (aggregates, their internal helpers, the recoding
/// functions, the `anonymity_profile` table function), the whole-table rewrite rule, the
/// single-phase aggregation rule and the `anonymity.*` session options
/// ([`options::AnonymityOptions`]) on `ctx`. Call once per `SessionContext`.
pub fn register(ctx: &SessionContext) -> Result<()> {
    for udaf in functions::all_aggregate_functions() {
        ctx.register_udaf(udaf.as_ref().clone());
    }
    for udf in rewrite::all_scalar_functions() {
        ctx.register_udf(udf.as_ref().clone());
    }
    for udwf in rewrite::all_window_functions() {
        ctx.register_udwf(udwf.as_ref().clone());
    }
    ctx.add_analyzer_rule(Arc::new(rewrite::WholeTableRewrite::new()));
    add_session_extensions(ctx);
    generalize::register_functions(ctx)?;
    profile::register_table_function(ctx);
    Ok(())
}

/// Adds [`options::AnonymityOptions`] (unless the session has them already) and the
/// [`rewrite::SinglePhaseAggregation`] physical rule, right after DataFusion's own
/// partial/final combination. A `SessionContext` offers no call to add a physical rule, so the
/// session state is rebuilt from itself with the rule added.
fn add_session_extensions(ctx: &SessionContext) {
    let state_ref = ctx.state_ref();
    let mut state = state_ref.write();
    // the builder forgets the session id and, when the default catalog exists, turns off its
    // creation in the config (which contexts made from this config later would inherit)
    let session_id = state.session_id().to_string();
    let create_default_catalog = state
        .config()
        .options()
        .catalog
        .create_default_catalog_and_schema;
    let mut builder =
        SessionStateBuilder::new_from_existing(state.clone()).with_session_id(session_id);
    if let Some(config) = builder.config()
        && config
            .options()
            .extensions
            .get::<options::AnonymityOptions>()
            .is_none()
    {
        config
            .options_mut()
            .extensions
            .insert(options::AnonymityOptions::default());
    }
    if let Some(optimizer) = builder.physical_optimizers()
        && !optimizer
            .rules
            .iter()
            .any(|r| r.name() == rewrite::SinglePhaseAggregation.name())
    {
        let at = optimizer
            .rules
            .iter()
            .position(|r| r.name() == "CombinePartialFinalAggregate")
            .map_or(optimizer.rules.len(), |i| i + 1);
        optimizer
            .rules
            .insert(at, Arc::new(rewrite::SinglePhaseAggregation));
    }
    *state = builder.build();
    state
        .config_mut()
        .options_mut()
        .catalog
        .create_default_catalog_and_schema = create_default_catalog;
}

/// Extension-trait style of [`register`]: `ctx.register_anonymity()?`.
pub trait AnonymityContextExt {
    /// See [`register`].
    fn register_anonymity(&self) -> Result<()>;
}

impl AnonymityContextExt for SessionContext {
    fn register_anonymity(&self) -> Result<()> {
        register(self)
    }
}
