//! [`QiDomain`]: one quasi-identifier of a frequency set, its levels as code maps and Loss
//! costs, and how it is built from a hierarchy ([`qi_domain_from_hierarchy`]) or from codes
//! ([`qi_domain_from_codes`]). Below the frequency set ([`super::frequency`]), so that what
//! reads only the domains (the population, the publication's settling) needs no frequency set.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use hashbrown::HashMap;

use crate::generalize::{Hierarchy, HierarchyKind};
use crate::policy::{LocalLabels, SetLabels};

/// One quasi-identifier of a [`FrequencySet`]: its levels as code maps and Loss costs.
#[derive(Debug, Clone)]
pub struct QiDomain {
    pub(super) name: String,
    pub(super) hierarchy: Option<Arc<Hierarchy>>,
    /// the distinct raw values, indexed by leaf code (`None` for [`FrequencySet::from_codes`])
    pub(super) leaf_values: Option<ArrayRef>,
    /// per level: leaf code → level code
    pub(super) leaf_to_code: Vec<Vec<u32>>,
    /// per level: number of level codes
    pub(super) cardinality: Vec<usize>,
    /// per level, per level code: the Loss cost of a cell with that value
    pub(super) cost: Vec<Vec<f64>>,
    /// per level: mean cost over the table's rows (no suppression)
    pub(super) mean_cost: Vec<f64>,
    /// `between[a][b - a]`: level-a code → level-b code, when level b is a function of
    /// level a on the leaves present (always for nested hierarchies)
    pub(super) between: Vec<Vec<Option<Vec<u32>>>>,
    /// how a local release labels a class's values of this QI when it is ordered
    pub(super) local_labels: LocalLabels,
    /// local releases publish the QI as sets of values (or intervals of a numeric one),
    /// never through its hierarchy's nodes
    pub(super) set_based: bool,
    /// how long a set label may grow
    pub(super) set_labels: SetLabels,
    /// the QI's weight over the mean weight (1 unweighted): every cost of the QI is scaled by
    /// it, so that the Loss is the weighted mean Σ w_q·L_q / Σ w_q
    pub(super) weight_factor: f64,
}

impl QiDomain {
    /// The column name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The hierarchy the domain was built from (`None` for [`FrequencySet::from_codes`]).
    pub fn hierarchy(&self) -> Option<&Arc<Hierarchy>> {
        self.hierarchy.as_ref()
    }

    /// The distinct raw values (NULL included), indexed by leaf code; `None` for
    /// [`FrequencySet::from_codes`].
    pub fn leaf_values(&self) -> Option<&ArrayRef> {
        self.leaf_values.as_ref()
    }

    /// Number of levels (the top is `height() − 1`).
    pub fn height(&self) -> usize {
        self.leaf_to_code.len()
    }

    /// Number of distinct leaves (raw values, NULL included) in the data.
    pub fn leaves(&self) -> usize {
        self.leaf_to_code[0].len()
    }

    /// Number of distinct published values at `level`.
    pub fn cardinality(&self, level: usize) -> usize {
        self.cardinality[level]
    }

    /// Mean Loss of this QI's cells at `level` over all rows, without suppression.
    pub fn mean_loss(&self, level: usize) -> f64 {
        self.mean_cost[level]
    }

    /// Leaf code → code at `level`.
    pub(crate) fn leaf_map(&self, level: usize) -> &[u32] {
        &self.leaf_to_code[level]
    }

    /// Cost of each code at `level`.
    pub(crate) fn costs(&self, level: usize) -> &[f64] {
        &self.cost[level]
    }

    /// Level-`a` code → level-`b` code (`a ≤ b`), if level b is a function of level a.
    pub(crate) fn between(&self, a: usize, b: usize) -> Option<&[u32]> {
        self.between[a][b - a].as_deref()
    }

    /// The published labels (as the hierarchy recodes them, Utf8View) of the level-`level`
    /// `codes`: each code is recoded from one of its leaves, since all its leaves share the
    /// label. Errors for a domain built from codes (no values to recode).
    pub fn labels_of_codes(&self, level: usize, codes: &[u32]) -> Result<ArrayRef> {
        let (Some(hierarchy), Some(values)) = (&self.hierarchy, &self.leaf_values) else {
            return Err(DataFusionError::Plan(format!(
                "quasi-identifier '{}' has no values (a frequency set built from codes): its \
                 classes cannot be labelled",
                self.name
            )));
        };
        let mut leaf_of_code = vec![u32::MAX; self.cardinality[level]];
        for (leaf, &code) in self.leaf_to_code[level].iter().enumerate() {
            let slot = &mut leaf_of_code[code as usize];
            if *slot == u32::MAX {
                *slot = leaf as u32;
            }
        }
        let leaves = UInt32Array::from_iter_values(codes.iter().map(|&c| leaf_of_code[c as usize]));
        let representatives = take(values.as_ref(), &leaves, None)?;
        hierarchy.generalize_column(&self.name, &representatives, level)
    }

    /// Whether every level is a coarsening of every lower level on the data's leaves: what
    /// monotonicity-based pruning needs.
    pub fn is_nested(&self) -> bool {
        self.between.iter().flatten().all(Option::is_some)
    }

    /// How a local release labels a class's values of this QI, if ordered
    /// ([`FrequencySet::set_local_labels`]; value-free by default).
    pub fn local_labels(&self) -> LocalLabels {
        self.local_labels
    }

    /// Whether local releases publish this QI as sets of values or intervals
    /// ([`FrequencySet::set_generalization`]; always without a hierarchy).
    pub fn is_set_based(&self) -> bool {
        self.set_based
    }

    /// How long a set label of this QI may grow.
    pub fn set_labels(&self) -> SetLabels {
        self.set_labels
    }

    /// The QI's weight over the mean weight of all QIs (1 without weights): the factor of
    /// every cost of this QI ([`FrequencySet::set_weights`]).
    pub fn weight_factor(&self) -> f64 {
        self.weight_factor
    }
}

/// A quasi-identifier for [`FrequencySet::from_codes`]: `levels[l][leaf]` is the generalized
/// code of `leaf` at level `l` (any `u32`s; equal codes are the same published value). The
/// number of leaves |D| is `levels[0].len()`; Loss costs follow docs/definitions.md for a value
/// tree with those leaves: `(leaves under the code − 1)/(|D| − 1)`, and 1 at the last level.
#[derive(Debug, Clone)]
pub struct QiCodes {
    pub name: String,
    pub levels: Vec<Vec<u32>>,
}

/// The level maps and costs of a QI from its hierarchy and distinct values.
pub(super) fn qi_domain_from_hierarchy(
    name: &str,
    hierarchy: &Arc<Hierarchy>,
    distinct: &ArrayRef,
) -> Result<QiDomain> {
    let height = hierarchy.height();
    let mut leaf_to_code = Vec::with_capacity(height);
    let mut cardinality = Vec::with_capacity(height);
    let mut cost = Vec::with_capacity(height);
    for level in 0..height {
        let labels = hierarchy.generalize_column(name, distinct, level)?;
        let labels = cast(&labels, &DataType::Utf8)?;
        let labels = labels.as_string::<i32>();
        let loss = hierarchy.coverage(name, distinct, level)?.loss();
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut null_id = None;
        let mut level_cost: Vec<f64> = Vec::new();
        let mut map = Vec::with_capacity(labels.len());
        for i in 0..labels.len() {
            let id = if labels.is_null(i) {
                *null_id.get_or_insert_with(|| {
                    // NULL is published as NULL at every level: it costs nothing
                    level_cost.push(0.0);
                    (level_cost.len() - 1) as u32
                })
            } else {
                let next = level_cost.len() as u32;
                let id = *ids.entry(labels.value(i)).or_insert(next);
                if id == next {
                    level_cost.push(if loss.is_valid(i) { loss.value(i) } else { 0.0 });
                }
                id
            };
            map.push(id);
        }
        cardinality.push(level_cost.len());
        cost.push(level_cost);
        leaf_to_code.push(map);
    }
    Ok(finish_domain(
        name,
        Some((Arc::clone(hierarchy), Arc::clone(distinct))),
        leaf_to_code,
        cardinality,
        cost,
    ))
}

/// The level maps and tree-rule costs of a QI given as codes.
pub(super) fn qi_domain_from_codes(qi: &QiCodes) -> QiDomain {
    let leaves = qi.levels[0].len();
    let top = qi.levels.len() - 1;
    let mut leaf_to_code = Vec::with_capacity(qi.levels.len());
    let mut cardinality = Vec::with_capacity(qi.levels.len());
    let mut cost = Vec::with_capacity(qi.levels.len());
    for (level, codes) in qi.levels.iter().enumerate() {
        let mut ids: HashMap<u32, u32> = HashMap::new();
        let mut under: Vec<u64> = Vec::new();
        let map: Vec<u32> = codes
            .iter()
            .map(|&c| {
                let next = under.len() as u32;
                let id = *ids.entry(c).or_insert(next);
                if id == next {
                    under.push(0);
                }
                under[id as usize] += 1;
                id
            })
            .collect();
        let level_cost = under
            .iter()
            .map(|&u| {
                if level == top {
                    1.0
                } else if leaves <= 1 {
                    0.0
                } else {
                    (u - 1) as f64 / (leaves - 1) as f64
                }
            })
            .collect();
        cardinality.push(under.len());
        cost.push(level_cost);
        leaf_to_code.push(map);
    }
    finish_domain(&qi.name, None, leaf_to_code, cardinality, cost)
}

/// Adds the level-to-level maps (mean costs are filled in by `assemble`).
pub(super) fn finish_domain(
    name: &str,
    source: Option<(Arc<Hierarchy>, ArrayRef)>,
    leaf_to_code: Vec<Vec<u32>>,
    cardinality: Vec<usize>,
    cost: Vec<Vec<f64>>,
) -> QiDomain {
    let height = leaf_to_code.len();
    let between = (0..height)
        .map(|a| {
            (a..height)
                .map(|b| {
                    let mut map = vec![u32::MAX; cardinality[a]];
                    for (&ca, &cb) in leaf_to_code[a].iter().zip(&leaf_to_code[b]) {
                        let slot = &mut map[ca as usize];
                        if *slot == u32::MAX {
                            *slot = cb;
                        } else if *slot != cb {
                            // two leaves published alike at level a differ at level b
                            return None;
                        }
                    }
                    Some(map)
                })
                .collect()
        })
        .collect();
    let (hierarchy, leaf_values) = source.unzip();
    let hierarchy_is_set = hierarchy
        .as_ref()
        .is_some_and(|h: &Arc<Hierarchy>| matches!(h.kind(), HierarchyKind::Set));
    QiDomain {
        name: name.to_string(),
        hierarchy,
        leaf_values,
        leaf_to_code,
        cardinality,
        cost,
        mean_cost: Vec::new(),
        between,
        local_labels: LocalLabels::default(),
        set_based: hierarchy_is_set,
        set_labels: SetLabels::default(),
        weight_factor: 1.0,
    }
}
