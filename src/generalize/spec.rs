//! A hierarchy as plain data, for sending it to another process: a Ballista scheduler or
//! executor recodes with the same hierarchies as the client that planned the query.
//!
//! The form keeps what defines the recoding (a tree's rows, an interval hierarchy's levels
//! and coding, a date hierarchy's units, a mask's length), never data rows. Numbers travel as
//! JSON numbers, which round-trip `f64` exactly.

use datafusion::error::{DataFusionError, Result};
use serde::{Deserialize, Serialize};

use super::date::{DateHierarchy, DateUnit};
use super::interval::{IntervalHierarchy, IntervalLevel};
use super::mask::MaskHierarchy;
use super::registry::HierarchyRegistry;
use super::tree::TreeHierarchy;
use super::{Hierarchy, HierarchyKind};

/// A hierarchy's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HierarchySpec {
    Mask {
        name: String,
        max_len: usize,
    },
    Interval {
        name: String,
        levels: Vec<IntervalLevelSpec>,
        bottom: Option<f64>,
        top: Option<f64>,
    },
    Date {
        name: String,
        units: Vec<String>,
    },
    Tree {
        name: String,
        /// leaf first, top last, one row per leaf
        rows: Vec<Vec<String>>,
    },
}

/// One level of an interval hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "level", rename_all = "snake_case")]
pub enum IntervalLevelSpec {
    Width { width: f64, origin: f64 },
    Breaks { breaks: Vec<f64> },
}

impl Hierarchy {
    /// The hierarchy's definition as plain data ([`Hierarchy::from_spec`] rebuilds it).
    pub fn to_spec(&self) -> HierarchySpec {
        let name = self.name().to_string();
        match self.kind() {
            HierarchyKind::Mask(mask) => HierarchySpec::Mask {
                name,
                max_len: mask.max_len(),
            },
            HierarchyKind::Interval(interval) => HierarchySpec::Interval {
                name,
                levels: interval
                    .levels()
                    .iter()
                    .map(|level| match level {
                        IntervalLevel::Width { width, origin } => IntervalLevelSpec::Width {
                            width: *width,
                            origin: *origin,
                        },
                        IntervalLevel::Breaks(breaks) => IntervalLevelSpec::Breaks {
                            breaks: breaks.clone(),
                        },
                    })
                    .collect(),
                bottom: interval.bottom(),
                top: interval.top(),
            },
            HierarchyKind::Date(date) => HierarchySpec::Date {
                name,
                units: date.units().iter().map(|u| u.name().to_string()).collect(),
            },
            HierarchyKind::Tree(tree) => HierarchySpec::Tree {
                name,
                rows: tree.rows(),
            },
        }
    }

    /// The hierarchy `spec` defines; the same checks as building it from a policy.
    pub fn from_spec(spec: &HierarchySpec) -> Result<Self> {
        Ok(match spec {
            HierarchySpec::Mask { name, max_len } => Hierarchy::new(
                name.clone(),
                HierarchyKind::Mask(MaskHierarchy::new(*max_len)),
            ),
            HierarchySpec::Interval {
                name,
                levels,
                bottom,
                top,
            } => {
                let levels = levels
                    .iter()
                    .map(|level| match level {
                        IntervalLevelSpec::Width { width, origin } => IntervalLevel::Width {
                            width: *width,
                            origin: *origin,
                        },
                        IntervalLevelSpec::Breaks { breaks } => {
                            IntervalLevel::Breaks(breaks.clone())
                        }
                    })
                    .collect();
                Hierarchy::interval(name.clone(), IntervalHierarchy::new(levels, *bottom, *top)?)
            }
            HierarchySpec::Date { name, units } => {
                let units = units
                    .iter()
                    .map(|u| DateUnit::from_name(u))
                    .collect::<Result<Vec<_>>>()?;
                Hierarchy::new(
                    name.clone(),
                    HierarchyKind::Date(DateHierarchy::new(units)?),
                )
            }
            HierarchySpec::Tree { name, rows } => Hierarchy::new(
                name.clone(),
                HierarchyKind::Tree(TreeHierarchy::from_rows(name, rows)?),
            ),
        })
    }
}

/// Every hierarchy of `registry` with the name it is registered under, as JSON bytes.
pub fn encode_registry(registry: &HierarchyRegistry) -> Result<Vec<u8>> {
    let entries: Vec<(String, HierarchySpec)> = registry
        .names()
        .into_iter()
        .filter_map(|name| registry.get(&name).map(|h| (name, h.to_spec())))
        .collect();
    serde_json::to_vec(&entries)
        .map_err(|e| DataFusionError::Internal(format!("cannot encode hierarchies: {e}")))
}

/// The registry [`encode_registry`] wrote.
pub fn decode_registry(bytes: &[u8]) -> Result<HierarchyRegistry> {
    let entries: Vec<(String, HierarchySpec)> = serde_json::from_slice(bytes)
        .map_err(|e| DataFusionError::Internal(format!("cannot decode hierarchies: {e}")))?;
    let registry = HierarchyRegistry::new();
    for (name, spec) in &entries {
        registry.insert(name, std::sync::Arc::new(Hierarchy::from_spec(spec)?));
    }
    Ok(registry)
}
