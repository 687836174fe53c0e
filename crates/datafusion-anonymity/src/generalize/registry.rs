//! The hierarchies of a session, shared with the SQL function `generalize`.
//!
//! Each `SessionContext` gets its own [`HierarchyRegistry`], held by its `generalize` function
//! ([`register_functions`] creates both). [`register_hierarchy`] finds the registry again
//! through the session's `generalize` function, so nothing global is involved and two
//! sessions never see each other's hierarchies. A `SessionState` cloned from a context shares
//! its functions, hence its registry.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;
use hashbrown::HashMap;

use super::Hierarchy;
use super::udf::generalize::GeneralizeFunction;
use super::udf::{bucket_udf, generalize_date_udf, mask_udf};

/// Named hierarchies, looked up by `generalize(col, 'name', level)`.
#[derive(Debug, Default)]
pub struct HierarchyRegistry {
    hierarchies: RwLock<HashMap<String, Arc<Hierarchy>>>,
}

impl HierarchyRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    // a poisoned lock still holds a consistent map: every write is a single insert or remove
    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, Arc<Hierarchy>>> {
        self.hierarchies.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, HashMap<String, Arc<Hierarchy>>> {
        self.hierarchies.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds (or replaces) the hierarchy called `name`; returns the one it replaces.
    pub fn insert(&self, name: &str, hierarchy: Arc<Hierarchy>) -> Option<Arc<Hierarchy>> {
        self.write().insert(name.to_string(), hierarchy)
    }

    /// The hierarchy called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Hierarchy>> {
        self.read().get(name).cloned()
    }

    /// Removes the hierarchy called `name`.
    pub fn remove(&self, name: &str) -> Option<Arc<Hierarchy>> {
        self.write().remove(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.read().keys().cloned().collect();
        names.sort();
        names
    }

    /// The hierarchy called `name`, or an error listing the registered ones.
    pub fn lookup(&self, name: &str) -> Result<Arc<Hierarchy>> {
        self.get(name).ok_or_else(|| {
            let names = self.names();
            DataFusionError::Plan(format!(
                "unknown hierarchy '{name}' ({})",
                if names.is_empty() {
                    "no hierarchy is registered; see register_hierarchy".to_string()
                } else {
                    format!("registered: {}", names.join(", "))
                }
            ))
        })
    }
}

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
