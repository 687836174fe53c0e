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
pub mod functions;
pub mod generalize;
pub mod generate;
pub mod policy;
pub mod profile;
pub mod provider;
pub mod publish;
pub mod rewrite;
mod rng;
pub mod search;
pub mod session;
pub mod tables;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;

/// Registers every anonymity function (aggregates, their internal helpers, the recoding
/// functions, the `anonymity_profile` table function) and the whole-table rewrite rule on
/// `ctx`. Call once per `SessionContext`.
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
    ctx.add_analyzer_rule(std::sync::Arc::new(rewrite::WholeTableRewrite::new()));
    generalize::register_functions(ctx)?;
    profile::register_table_function(ctx);
    Ok(())
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
