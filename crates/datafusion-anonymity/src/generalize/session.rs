//! The hierarchies of a session, shared with the SQL function `generalize`.
//!
//! Each `SessionContext` gets its own [`HierarchyRegistry`], held by its `generalize` function
//! ([`register_functions`] creates both). [`register_hierarchy`] finds the registry again
//! through the session's `generalize` function, so nothing global is involved and two
//! sessions never see each other's hierarchies. A `SessionState` cloned from a context shares
//! its functions, hence its registry.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

use super::Hierarchy;
use super::registry::HierarchyRegistry;
use super::udf::generalize::GeneralizeFunction;
use super::udf::{bucket_udf, generalize_date_udf, mask_udf};

/// The registry of the `generalize` function registered in `functions` (a `SessionContext`
/// or `SessionState`), if it is this crate's.
pub fn hierarchy_registry(functions: &dyn FunctionRegistry) -> Option<Arc<HierarchyRegistry>> {
    let udf = functions.udf("generalize").ok()?;
    udf.inner()
        .downcast_ref::<GeneralizeFunction>()
        .map(|f| Arc::clone(f.registry()))
}

/// Registers `mask`, `bucket`, `generalize_date` and `generalize` (with a new, empty
/// hierarchy registry) on `functions` (a `SessionContext`, a `SessionState`, any
/// [`FunctionRegistry`]). Called by [`crate::register_udfs`]. Calling it again keeps the
/// registry and its hierarchies.
pub fn register_functions(functions: &mut dyn FunctionRegistry) -> Result<()> {
    for udf in [mask_udf(), bucket_udf(), generalize_date_udf()] {
        functions.register_udf(udf)?;
    }
    if hierarchy_registry(functions).is_none() {
        functions.register_udf(Arc::new(ScalarUDF::new_from_impl(GeneralizeFunction::new(
            Arc::new(HierarchyRegistry::new()),
        ))))?;
    }
    Ok(())
}

/// The recoding functions [`register_functions`] adds, with a new, empty hierarchy registry.
pub fn recoding_functions() -> Vec<Arc<ScalarUDF>> {
    vec![
        mask_udf(),
        bucket_udf(),
        generalize_date_udf(),
        Arc::new(ScalarUDF::new_from_impl(GeneralizeFunction::new(Arc::new(
            HierarchyRegistry::new(),
        )))),
    ]
}

/// Makes `hierarchy` available to `generalize(col, 'name', level)` on `ctx` (replacing a
/// hierarchy of the same name). Registers the recoding functions first if needed.
pub fn register_hierarchy(
    ctx: &SessionContext,
    name: &str,
    hierarchy: Arc<Hierarchy>,
) -> Result<()> {
    if name.is_empty() {
        return Err(DataFusionError::Plan(
            "a hierarchy needs a non-empty name".to_string(),
        ));
    }
    if let Ok(udf) = ctx.udf("generalize")
        && !udf.inner().is::<GeneralizeFunction>()
    {
        return Err(DataFusionError::Plan(
            "another function named 'generalize' is registered on this session; \
             hierarchies need datafusion-anonymity's"
                .to_string(),
        ));
    }
    let registry = match hierarchy_registry(ctx) {
        Some(registry) => registry,
        None => {
            let registry = Arc::new(HierarchyRegistry::new());
            ctx.register_udf(ScalarUDF::new_from_impl(GeneralizeFunction::new(
                Arc::clone(&registry),
            )));
            registry
        }
    };
    registry.insert(name, hierarchy);
    Ok(())
}

/// The hierarchy registered on `ctx` as `name`.
pub fn registered_hierarchy(ctx: &SessionContext, name: &str) -> Option<Arc<Hierarchy>> {
    hierarchy_registry(ctx)?.get(name)
}
