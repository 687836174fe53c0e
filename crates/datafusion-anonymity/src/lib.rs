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
//! ctx.register_csv("patients", "patients.csv", CsvReadOptions::new()).await?;
//! ctx.sql("SELECT zip, age, k_anonymity() AS k, t_closeness(disease) AS t \
//!          FROM patients GROUP BY zip, age").await?.show().await?;
//! # Ok(()) }
//! ```
//!
//! The definitions follow `docs/definitions.md`; each function's documentation says how it
//! treats nulls, empty input and other edge cases (always on the side that never overstates
//! privacy).
//!
//! This crate is the SQL surface only: the functions, the rewrite rules that compute the
//! whole-table ones in one scan, the `anonymity.*` options and the hierarchies behind
//! `generalize`. It depends on DataFusion without its default features and on nothing heavier,
//! so a host that wants `k_anonymity()` compiles no more. Policies, tables, object storage, the
//! searches, publishing and the profile are in `datafusion-anonymity-engine`; clusters in
//! `datafusion-anonymity-ballista`; the command line in `datafusion-anonymity-cli`.
//! Dependencies point one way: this crate knows none of them.

pub use datafusion;

pub mod docs;
pub mod functions;
pub mod generalize;
pub mod options;
pub mod packing;
pub mod perturbation;
pub mod rewrite;
pub mod rng;

use std::sync::Arc;

use datafusion::error::Result;
use datafusion::execution::{FunctionRegistry, SessionStateBuilder};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::prelude::SessionContext;

/// Registers every anonymity function on `ctx`: the aggregate, scalar and window functions
/// ([`register_udfs`]), the whole-table rewrite, the
/// single-phase aggregation rule and the `anonymity.*` session options
/// ([`options::AnonymityOptions`]) ([`with_anonymity_rules`]). Call once per `SessionContext`;
/// calling it again keeps the hierarchies registered for `generalize`.
pub fn register(ctx: &SessionContext) -> Result<()> {
    {
        let state_ref = ctx.state_ref();
        let mut state = state_ref.write();
        // the builder forgets the session id and, when the default catalog exists, turns off
        // its creation in the config (which contexts made from this config later would inherit)
        let session_id = state.session_id().to_string();
        let create_default_catalog = state
            .config()
            .options()
            .catalog
            .create_default_catalog_and_schema;
        let builder =
            SessionStateBuilder::new_from_existing(state.clone()).with_session_id(session_id);
        let mut rebuilt = with_anonymity_rules(builder).build();
        rebuilt
            .config_mut()
            .options_mut()
            .catalog
            .create_default_catalog_and_schema = create_default_catalog;
        register_udfs(&mut rebuilt)?;
        *state = rebuilt;
    }
    Ok(())
}

/// Every aggregate, scalar and window function of the crate, the rewrite's internal ones
/// included: what a host that builds its own function registry (a Ballista executor, a
/// session made from parts) must register. `generalize` comes with a new, empty hierarchy
/// registry unless `functions` has this crate's `generalize` already (its hierarchies are kept).
pub fn register_udfs(functions: &mut dyn FunctionRegistry) -> Result<()> {
    for udaf in functions::all_aggregate_functions() {
        functions.register_udaf(udaf)?;
    }
    for udf in rewrite::all_scalar_functions()
        .into_iter()
        .chain(functions::location_functions())
    {
        functions.register_udf(udf)?;
    }
    for udwf in rewrite::all_window_functions() {
        functions.register_udwf(udwf)?;
    }
    for udf in perturbation::perturbation_functions() {
        functions.register_udf(udf)?;
    }
    generalize::register_functions(functions)
}

/// The names [`register_udfs`] registers (aliases included), in registration order.
pub fn function_names() -> Vec<String> {
    let mut names = Vec::new();
    for udaf in functions::all_aggregate_functions() {
        names.push(udaf.name().to_string());
        names.extend(udaf.aliases().iter().cloned());
    }
    for udf in rewrite::all_scalar_functions()
        .into_iter()
        .chain(generalize::recoding_functions())
        .chain(perturbation::perturbation_functions())
        .chain(functions::location_functions())
    {
        names.push(udf.name().to_string());
        names.extend(udf.aliases().iter().cloned());
    }
    for udwf in rewrite::all_window_functions() {
        names.push(udwf.name().to_string());
        names.extend(udwf.aliases().iter().cloned());
    }
    names
}

/// Adds the crate's planning rules to a session being built: the whole-table rewrite (an
/// analyzer rule), the [`rewrite::SinglePhaseAggregation`] physical rule right after
/// DataFusion's own partial/final combination, the [`rewrite::PackedAggregation`] physical
/// rule before the final sanity check, and [`options::AnonymityOptions`]. Each is
/// added once, however often this is called. For hosts that build their own session state
/// (a Ballista scheduler); [`register`] calls it.
pub fn with_anonymity_rules(mut builder: SessionStateBuilder) -> SessionStateBuilder {
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
    let rewrite = rewrite::WholeTableRewrite::new();
    let analyzer = builder
        .analyzer()
        .get_or_insert_with(datafusion::optimizer::Analyzer::new);
    if !analyzer.rules.iter().any(|r| r.name() == rewrite.name()) {
        analyzer.rules.push(Arc::new(rewrite));
    }
    let physical = builder
        .physical_optimizers()
        .get_or_insert_with(datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new);
    if !physical
        .rules
        .iter()
        .any(|r| r.name() == rewrite::SinglePhaseAggregation.name())
    {
        let at = physical
            .rules
            .iter()
            .position(|r| r.name() == "CombinePartialFinalAggregate")
            .map_or(physical.rules.len(), |i| i + 1);
        physical
            .rules
            .insert(at, Arc::new(rewrite::SinglePhaseAggregation));
    }
    if !physical
        .rules
        .iter()
        .any(|r| r.name() == rewrite::PackedAggregation.name())
    {
        // last but the sanity check: the rules before it (sorting, limits, projections) see
        // DataFusion's own aggregation
        let at = physical
            .rules
            .iter()
            .position(|r| r.name() == "SanityCheckPlan")
            .unwrap_or(physical.rules.len());
        physical
            .rules
            .insert(at, Arc::new(rewrite::PackedAggregation));
    }
    builder
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

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    /// No name is registered twice by the crate, and none shadows one of DataFusion's own
    /// functions (registration would silently replace it).
    #[test]
    fn no_function_name_is_registered_twice() {
        let names = function_names();
        let mut seen = HashSet::new();
        for name in &names {
            assert!(
                seen.insert(name.to_ascii_lowercase()),
                "{name} is registered twice"
            );
        }
        let state = SessionContext::new().state();
        for name in &names {
            let taken = state.scalar_functions().contains_key(name)
                || state.aggregate_functions().contains_key(name)
                || state.window_functions().contains_key(name);
            assert!(!taken, "{name} would replace a DataFusion function");
        }
        // and register_udfs registers exactly those names
        let mut state = state;
        register_udfs(&mut state).unwrap();
        for name in &names {
            assert!(
                state.scalar_functions().contains_key(name)
                    || state.aggregate_functions().contains_key(name)
                    || state.window_functions().contains_key(name),
                "{name} is not registered"
            );
        }
    }
}
