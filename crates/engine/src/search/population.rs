//! Population counts for k-map and δ-presence: how many rows of a population table each
//! published class covers (F_E), aligned with a frequency set's level codes so that every
//! lattice node and every local class can be counted in memory.
//!
//! ## Encoding
//! The population is read with one `SELECT qi…, count(*) FROM population GROUP BY qi…` (its
//! columns cast to the input's types). Each quasi-identifier's distinct population values
//! are recoded by the same hierarchy at every level, and each label is looked up among the
//! labels the frequency set publishes at that level: the level code of the sample class the
//! population value would join, or [`ABSENT`] when no sample row has that label (a
//! population row with an absent code matches no class at that level). Labels, not raw
//! values, are compared, so a population value the sample lacks still counts for the
//! generalized class it falls into. For ordered QIs the values are also kept as numbers, for
//! the `[lo, hi]` intervals of local releases.
//!
//! ## Counting
//! - **Full-domain node** ([`PopulationCounts::count_node`]): the node's classes are keyed by
//!   their level codes, and each population combination adds its count to the class with its
//!   codes at the node's levels: one pass over the population's combinations.
//! - **Local class** ([`super::local::population::covered`]): a population combination counts when
//!   every cell covers it — a node when the value's label at the node's level is the node's,
//!   an interval when the (non-NULL) value lies within it, a set when the value is one of the
//!   class's members' values, `*` always. Overlapping local
//!   labels mean one population row may count for several classes, as the adversary, who
//!   sees only labels, would count it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::count::count_all;
use datafusion::prelude::{SessionContext, ident};
use hashbrown::HashMap;

use super::codes::stream_codes;
use super::domain::QiDomain;
use crate::functions::common::{is_ordered, ordered_as_f64};

/// The level code of a population value whose label no sample row publishes.
pub const ABSENT: u32 = u32::MAX;

/// A population table's quasi-identifier combinations, encoded in a frequency set's level
/// codes; see the module documentation.
#[derive(Debug, Clone)]
pub struct PopulationCounts {
    /// the population as named in messages
    pub(super) name: String,
    pub(super) rows: u64,
    /// per combination: its rows
    pub(super) counts: Vec<u64>,
    /// per QI: the value index of each combination
    pub(super) values: Vec<Vec<u32>>,
    /// per QI, per level: value index → the frequency set's level code, or [`ABSENT`]
    pub(super) level_codes: Vec<Vec<Vec<u32>>>,
    /// per QI: each value as a number (`None` for NULL), for ordered types
    pub(super) numbers: Vec<Option<Vec<Option<f64>>>>,
}

impl PopulationCounts {
    /// Reads the population `table` (registered on `ctx`; `name` labels it in errors) and
    /// encodes it for the frequency set of quasi-identifiers `qis`, which it must have (cast to
    /// their types).
    pub async fn load(
        ctx: &SessionContext,
        table: &str,
        name: &str,
        qis: &[QiDomain],
    ) -> Result<Self> {
        let df = ctx.table(table).await?;
        for qi in qis {
            if df.schema().field_with_unqualified_name(qi.name()).is_err() {
                return Err(DataFusionError::Plan(format!(
                    "population {name} has no column '{}', a quasi-identifier of the policy",
                    qi.name()
                )));
            }
        }
        let df = df.aggregate(
            qis.iter().map(|q| ident(q.name())).collect(),
            vec![count_all().alias("__anon_population")],
        )?;
        let streamed = stream_codes(ctx, df, qis.len(), None).await?;
        let mut values = Vec::with_capacity(qis.len());
        let mut level_codes = Vec::with_capacity(qis.len());
        let mut numbers = Vec::with_capacity(qis.len());
        for (qi, (codes, distinct)) in qis.iter().zip(streamed.columns) {
            let (Some(hierarchy), Some(leaves)) = (qi.hierarchy(), qi.leaf_values()) else {
                return Err(DataFusionError::Plan(format!(
                    "quasi-identifier '{}' has no values (a frequency set built from codes): \
                     a population cannot be matched to it",
                    qi.name()
                )));
            };
            let target = leaves.data_type();
            let distinct = cast(&distinct, target).map_err(|_| {
                DataFusionError::Plan(format!(
                    "population {name}: column '{}' has type {}, which does not convert to the \
                     input's {target}",
                    qi.name(),
                    distinct.data_type()
                ))
            })?;
            hierarchy
                .validate_values(qi.name(), &distinct)
                .map_err(|e| {
                    DataFusionError::Plan(format!("population {name}: {}", e.message()))
                })?;
            let mut per_level = Vec::with_capacity(qi.height());
            for level in 0..qi.height() {
                let sample_codes: Vec<u32> = (0..qi.cardinality(level) as u32).collect();
                let sample = utf8(&qi.labels_of_codes(level, &sample_codes)?)?;
                let sample = sample.as_string::<i32>();
                let code_of: HashMap<Option<&str>, u32> = sample
                    .iter()
                    .enumerate()
                    .map(|(code, label)| (label, code as u32))
                    .collect();
                let labels = utf8(&hierarchy.generalize_column(qi.name(), &distinct, level)?)?;
                per_level.push(
                    labels
                        .as_string::<i32>()
                        .iter()
                        .map(|label| code_of.get(&label).copied().unwrap_or(ABSENT))
                        .collect(),
                );
            }
            level_codes.push(per_level);
            numbers.push(if is_ordered(target) {
                Some(ordered_as_f64(&distinct)?)
            } else {
                None
            });
            values.push(codes);
        }
        Ok(Self {
            name: name.to_string(),
            rows: streamed.counts.iter().sum(),
            counts: streamed.counts,
            values,
            level_codes,
            numbers,
        })
    }

    /// Population counts for a frequency set built from codes
    /// (`FrequencySet::from_codes`, whose domains hold every leaf of their hierarchies):
    /// `rows` pairs each combination's leaves (one per QI) with its count.
    pub fn from_leaf_codes(qis: &[QiDomain], rows: &[(Vec<u32>, u64)]) -> Result<Self> {
        if let Some((leaves, _)) = rows.iter().find(|(leaves, _)| {
            leaves.len() != qis.len()
                || leaves
                    .iter()
                    .zip(qis)
                    .any(|(&l, qi)| l as usize >= qi.leaves())
        }) {
            return Err(DataFusionError::Plan(format!(
                "a population row has leaves {leaves:?} outside the quasi-identifiers' domains"
            )));
        }
        Ok(Self {
            name: "population".to_string(),
            rows: rows.iter().map(|(_, n)| n).sum(),
            counts: rows.iter().map(|(_, n)| *n).collect(),
            values: (0..qis.len())
                .map(|j| rows.iter().map(|(leaves, _)| leaves[j]).collect())
                .collect(),
            // a value's index is its leaf code
            level_codes: qis
                .iter()
                .map(|qi| (0..qi.height()).map(|l| qi.leaf_map(l).to_vec()).collect())
                .collect(),
            numbers: vec![None; qis.len()],
        })
    }

    /// Per leaf class of the frequency set this was encoded for (its quasi-identifiers `qis`,
    /// its `leaf_classes` and, per QI, each leaf class's leaf code `leaf_codes`), the
    /// population rows
    /// with exactly its raw quasi-identifiers. Any class holding the leaf class covers them,
    /// so a sum over a class's leaf classes is a lower bound of its F_E: what the local
    /// algorithms judge k-map on while they cut and merge (never overstating it).
    pub fn per_leaf_class(
        &self,
        qis: &[QiDomain],
        leaf_codes: &[Vec<u32>],
        leaf_classes: usize,
    ) -> Vec<u64> {
        let d = qis.len();
        let index: HashMap<Vec<u32>, u32> = (0..leaf_classes)
            .map(|c| {
                let key = (0..d)
                    .map(|j| qis[j].leaf_map(0)[leaf_codes[j][c] as usize])
                    .collect();
                (key, c as u32)
            })
            .collect();
        let mut out = vec![0u64; leaf_classes];
        let mut key = Vec::with_capacity(d);
        for (row, &count) in self.counts.iter().enumerate() {
            key.clear();
            key.extend((0..d).map(|j| self.level_codes[j][0][self.values[j][row] as usize]));
            if let Some(&c) = index.get(&key) {
                out[c as usize] += count;
            }
        }
        out
    }

    /// The population as named in messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Rows of the population.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// F_E of each class of a full-domain node: `levels` per QI, `class_codes[qi][class]`
    /// the classes' level codes (with `cardinalities[qi]` codes at the node's level). Writes
    /// one count per class into `out`.
    pub fn count_node(
        &self,
        levels: &[usize],
        class_codes: &[impl AsRef<[u32]>],
        cardinalities: &[usize],
        out: &mut Vec<u64>,
    ) {
        let classes = class_codes.first().map_or(0, |c| c.as_ref().len());
        out.clear();
        out.resize(classes, 0);
        let maps: Vec<&[u32]> = levels
            .iter()
            .enumerate()
            .map(|(j, &l)| self.level_codes[j][l].as_slice())
            .collect();
        // a packed key when the codes fit 64 bits (always, in practice), else a vector
        let bits: Vec<u32> = cardinalities
            .iter()
            .map(|&c| u32::BITS - (c as u32).leading_zeros())
            .collect();
        if bits.iter().sum::<u32>() <= 64 {
            let pack = |code_at: &dyn Fn(usize) -> u32| {
                let mut key = 0u64;
                for (j, &b) in bits.iter().enumerate() {
                    key = (key << b) | u64::from(code_at(j));
                }
                key
            };
            let index: HashMap<u64, u32> = (0..classes)
                .map(|c| (pack(&|j| class_codes[j].as_ref()[c]), c as u32))
                .collect();
            'combinations: for (row, &count) in self.counts.iter().enumerate() {
                let mut key = 0u64;
                for (j, &b) in bits.iter().enumerate() {
                    let code = maps[j][self.values[j][row] as usize];
                    if code == ABSENT {
                        continue 'combinations;
                    }
                    key = (key << b) | u64::from(code);
                }
                if let Some(&c) = index.get(&key) {
                    out[c as usize] += count;
                }
            }
        } else {
            let index: HashMap<Vec<u32>, u32> = (0..classes)
                .map(|c| {
                    let key = class_codes.iter().map(|codes| codes.as_ref()[c]).collect();
                    (key, c as u32)
                })
                .collect();
            let mut key = Vec::with_capacity(levels.len());
            for (row, &count) in self.counts.iter().enumerate() {
                key.clear();
                key.extend((0..levels.len()).map(|j| maps[j][self.values[j][row] as usize]));
                if key.contains(&ABSENT) {
                    continue;
                }
                if let Some(&c) = index.get(&key) {
                    out[c as usize] += count;
                }
            }
        }
    }
}

/// Labels as Utf8 (the hierarchy writes views).
fn utf8(labels: &Arc<dyn Array>) -> Result<Arc<dyn Array>> {
    Ok(cast(labels, &DataType::Utf8)?)
}
