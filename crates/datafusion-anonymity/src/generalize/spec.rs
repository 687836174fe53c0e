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
    Set {
        name: String,
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
            HierarchyKind::Set => HierarchySpec::Set { name },
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
            HierarchySpec::Set { name } => Hierarchy::set(name.clone()),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use datafusion::arrow::array::{ArrayRef, Date32Array, Float64Array, StringArray};

    use super::*;
    use crate::generalize::date::DateUnit;
    use crate::generalize::interval::{IntervalHierarchy, IntervalLevel};

    /// Every level of `hierarchy` and of its round trip through JSON recode `values` alike.
    fn assert_round_trip(hierarchy: &Hierarchy, values: ArrayRef) {
        let registry = HierarchyRegistry::new();
        registry.insert("h", Arc::new(hierarchy.clone()));
        let decoded = decode_registry(&encode_registry(&registry).unwrap()).unwrap();
        let copy = decoded
            .get("h")
            .expect("the hierarchy under its registered name");
        assert_eq!(copy.to_spec(), hierarchy.to_spec());
        assert_eq!(copy.height(), hierarchy.height());
        for level in 0..hierarchy.height() {
            let want = hierarchy.generalize_column("c", &values, level).unwrap();
            let got = copy.generalize_column("c", &values, level).unwrap();
            assert_eq!(&want, &got, "{} level {level}", hierarchy.kind().name());
        }
    }

    #[test]
    fn every_kind_travels_unchanged() {
        let strings: ArrayRef =
            Arc::new(StringArray::from(vec![Some("47677"), Some("47602"), None]));
        assert_round_trip(&Hierarchy::mask("zip", 5), Arc::clone(&strings));
        let tree = Hierarchy::tree_from_rows(
            "zip",
            &[vec!["47677", "476**", "*"], vec!["47602", "476**", "*"]],
        )
        .unwrap();
        assert_round_trip(&tree, Arc::new(StringArray::from(vec!["47677", "47602"])));
        // a width level with an origin, a breaks level (numbers that JSON must carry exactly),
        // bottom and top coding
        let interval = IntervalHierarchy::new(
            vec![
                IntervalLevel::Width {
                    width: 0.1,
                    origin: 0.05,
                },
                IntervalLevel::Breaks(vec![0.15, 0.35, 2.05]),
            ],
            Some(0.05),
            Some(2.05),
        )
        .unwrap();
        assert_round_trip(
            &Hierarchy::interval("x", interval),
            Arc::new(Float64Array::from(vec![
                Some(0.0),
                Some(0.3),
                Some(1.0 / 3.0),
                Some(25.0),
                None,
            ])),
        );
        let date = Hierarchy::date("born", &[DateUnit::Month, DateUnit::Year, DateUnit::Decade]);
        assert_round_trip(
            &date.unwrap(),
            Arc::new(Date32Array::from(vec![Some(9204), Some(11687), None])),
        );
    }
}
