//! [`HierarchyRegistry`]: the hierarchies of a session, by name, shared with the SQL function
//! `generalize` that holds it (how a session gets one: [`super::session`]).

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use datafusion::error::{DataFusionError, Result};
use hashbrown::HashMap;

use super::Hierarchy;

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
