//! What a release does to the quasi-identifiers: [`Release::FullDomain`] (one hierarchy level
//! per QI, the same for every row) or [`Release::Local`] (each raw QI combination gets its
//! class's labels: local recoding).
//!
//! Both are served by the same [`GeneralizedTable`](crate::provider::GeneralizedTable) and
//! published, suppressed and verified by the same code: only the recoding step differs.
//!
//! ## Local labels
//! A [`LocalRecoding`] is a lookup table from each distinct raw QI combination of the input
//! to its published labels (Utf8View, like full-domain labels):
//!
//! | cell | label | example |
//! |---|---|---|
//! | hierarchy node | the hierarchy's label at that level | `Higher education`, `123**`, `[30, 40)` |
//! | one raw value | the value as text (level 0) | `37`, `2024-03-01`, `Bachelors` |
//! | interval of an ordered QI, value-free (the default) | `(a, b)`, both exclusive: the grid cells from the class's smallest to its largest value, no end a member's value ([`crate::search::local::labels`]) | `(29, 45)` |
//! | interval of an ordered QI, `local_labels = "exact"` | `[lo, hi]`, both inclusive, the class's smallest and largest raw values | `[35, 41]` |
//! | set of values of a set-based QI (`generalization = "set"`, or no hierarchy) | `{a, b}`, escaped ([`crate::search::local::sets`]) | `{Private, Self-emp-inc}` |
//! | interval of a set-based numeric QI, value-free | `(a, b)`, midpoints to the neighbouring values | `(30.5, 45)` |
//! | whole domain | `*` | `*` |
//! | only NULLs | NULL | |
//!
//! Labels of different classes may overlap (`37` in one class, `(29, 45)` in another); k, l and
//! t are counted over the published label tuples. The GeneralizedTable looks each row's raw
//! QI values up in this table (NULL equal to NULL, input order kept); rows of combinations the
//! release suppressed are left out (`suppression = "drop"`) or published with every label `*`
//! (`"mask"`).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, StringArray, StringViewBuilder, UInt32Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, UInt32Type};
use datafusion::error::{DataFusionError, Result};

use crate::generalize::TOP_LABEL;
use crate::search::FrequencySet;
use crate::search::local::labels::{end_labels, open_interval_label};
use crate::search::local::sets::{end_text, set_class_labels};
use crate::search::local::{Cell, LocalLabels, LocalRelease, QiAxis, SUPPRESSED, axes};
use crate::wire;

/// How the quasi-identifiers of a release are recoded.
#[derive(Debug, Clone)]
pub enum Release {
    /// One level per quasi-identifier, in the generalization's QI order.
    FullDomain(Vec<usize>),
    /// A label tuple per raw QI combination.
    Local(Arc<LocalRecoding>),
}

impl Release {
    /// `full-domain` or `local`.
    pub fn kind(&self) -> &'static str {
        match self {
            Release::FullDomain(_) => "full-domain",
            Release::Local(_) => "local",
        }
    }

    /// The levels of a full-domain release.
    pub fn levels(&self) -> Option<&[usize]> {
        match self {
            Release::FullDomain(levels) => Some(levels),
            Release::Local(_) => None,
        }
    }
}

/// The labels of every raw QI combination of a local release (see the module docs): each
/// QI's distinct raw values, each combination's leaf codes and class, and each class's labels.
#[derive(Debug, Clone)]
pub struct LocalRecoding {
    quasi_identifiers: Vec<String>,
    /// per QI, the distinct raw values (a value's position is its leaf code)
    leaf_values: Vec<ArrayRef>,
    /// per QI, the leaf code of each combination
    leaf_codes: Vec<Vec<u32>>,
    /// per combination, its class; suppressed ones have class `classes`
    class_of: Vec<u32>,
    /// per QI, the label of each class, then `*` (the suppressed combinations' labels)
    class_labels: Vec<ArrayRef>,
    classes: usize,
    rows: u64,
    suppressed_rows: u64,
    /// per class, the population rows its cells cover (when the frequency set carries a
    /// population: k-map and δ-presence)
    population_covered: Option<Vec<u64>>,
    /// per class, per QI (`[class * d + qi]`): what kind of cell its label is (empty for a
    /// release read from the wire)
    cell_kinds: Vec<CellKind>,
}

/// What kind of cell a class's label is ([`LocalRecoding::cell_kinds`]): what a recoding file
/// records beside the label, so that the label can be matched against new values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellKind {
    /// The hierarchy's label at `level` (0: the value itself; a NULL label: NULL).
    Node { level: u32 },
    /// An interval label, `(a, b)` or `[a, b]`.
    Interval,
    /// A set label `{a, b}` of a set-based quasi-identifier.
    Set,
    /// `*`.
    Top,
}

impl From<Cell> for CellKind {
    fn from(cell: Cell) -> Self {
        match cell {
            Cell::Node { level, .. } => CellKind::Node { level },
            Cell::Interval { .. } => CellKind::Interval,
            Cell::Set { .. } => CellKind::Set,
            Cell::Top => CellKind::Top,
        }
    }
}

impl LocalRecoding {
    /// The labels of `release`, computed on `freq` (built from data, so that each QI has its
    /// hierarchy and raw values).
    pub fn new(freq: &FrequencySet, release: &LocalRelease) -> Result<Self> {
        let qis = freq.qis();
        let axes = axes(freq)?;
        let combinations = freq.leaf_classes();
        if release.class_of.len() != combinations || release.width != qis.len() {
            return Err(DataFusionError::Internal(
                "the local release does not fit the frequency set".to_string(),
            ));
        }
        let classes = release.classes();
        let mut labelled = Vec::with_capacity(qis.len());
        for qi in qis {
            let (Some(hierarchy), Some(values)) = (qi.hierarchy(), qi.leaf_values()) else {
                return Err(DataFusionError::Plan(format!(
                    "quasi-identifier '{}' has no values (a frequency set built from codes): \
                     a local release of it cannot be labelled",
                    qi.name()
                )));
            };
            labelled.push((qi, hierarchy, values));
        }
        // each QI's labels on a thread of its own: they are independent, and each takes a
        // pass over the classes
        let class_labels = crate::parallel::map_scoped(
            "labelling a local release",
            labelled.iter().enumerate(),
            |(q, &(qi, hierarchy, values))| {
                if axes[q].is_set() {
                    set_class_labels(qi, &axes[q], &freq.leaf_codes()[q], release, q)
                } else {
                    class_labels_of(qi, &axes[q], hierarchy, values, release, q)
                }
            },
        )?;
        let class_labels = class_labels.into_iter().collect::<Result<Vec<_>>>()?;
        let suppressed_class = classes as u32;
        let class_of = release
            .class_of
            .iter()
            .map(|&c| if c == SUPPRESSED { suppressed_class } else { c })
            .collect();
        let suppressed_rows = release
            .class_of
            .iter()
            .zip(freq.sizes())
            .filter(|(c, _)| **c == SUPPRESSED)
            .map(|(_, &n)| n)
            .sum();
        let population_covered = freq.population().map(|population| {
            let members = release.members();
            (0..classes)
                .map(|c| {
                    super::local::population::covered(
                        population,
                        release.cells_of(c),
                        &axes,
                        freq,
                        &members[c],
                    )
                })
                .collect()
        });
        Ok(Self {
            population_covered,
            cell_kinds: release.cells.iter().map(|&c| CellKind::from(c)).collect(),
            quasi_identifiers: freq.qi_names(),
            leaf_values: labelled
                .iter()
                .map(|(_, _, values)| Arc::clone(values))
                .collect(),
            leaf_codes: freq.leaf_codes().to_vec(),
            class_of,
            class_labels,
            classes,
            rows: freq.rows(),
            suppressed_rows,
        })
    }

    /// A release of `freq`'s combinations from given labels: `class_of[combination]` is its
    /// class or `classes` (suppressed); `class_labels[q]` holds each class's label of QI q
    /// (Utf8View) and `cell_kinds[class * d + q]` its kind. The `*` of suppressed
    /// combinations is appended here.
    pub(crate) fn from_labels(
        freq: &FrequencySet,
        class_of: Vec<u32>,
        mut class_labels: Vec<StringViewBuilder>,
        cell_kinds: Vec<CellKind>,
    ) -> Result<Self> {
        let qis = freq.qis();
        let classes = cell_kinds.len() / qis.len().max(1);
        if class_of.len() != freq.leaf_classes()
            || class_labels.len() != qis.len()
            || cell_kinds.len() != classes * qis.len()
        {
            return Err(DataFusionError::Internal(
                "the labels do not fit the frequency set".to_string(),
            ));
        }
        let leaf_values = qis
            .iter()
            .map(|qi| {
                qi.leaf_values().cloned().ok_or_else(|| {
                    DataFusionError::Plan(format!(
                        "quasi-identifier '{}' has no values (a frequency set built from                          codes): a local release of it cannot be labelled",
                        qi.name()
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let suppressed_rows = class_of
            .iter()
            .zip(freq.sizes())
            .filter(|(c, _)| **c as usize >= classes)
            .map(|(_, &n)| n)
            .sum();
        let class_labels = class_labels
            .iter_mut()
            .map(|labels| {
                labels.append_value(TOP_LABEL);
                Arc::new(labels.finish()) as ArrayRef
            })
            .collect();
        Ok(Self {
            quasi_identifiers: freq.qi_names(),
            leaf_values,
            leaf_codes: freq.leaf_codes().to_vec(),
            class_of: class_of
                .into_iter()
                .map(|c| c.min(classes as u32))
                .collect(),
            class_labels,
            classes,
            rows: freq.rows(),
            suppressed_rows,
            population_covered: None,
            cell_kinds,
        })
    }

    /// Per class, per QI (`[class * d + qi]`), the kind of its label's cell; empty for a
    /// release read from the wire.
    pub fn cell_kinds(&self) -> &[CellKind] {
        &self.cell_kinds
    }

    /// Per class, the population rows its cells cover, when built with a population.
    pub fn population_covered(&self) -> Option<&[u64]> {
        self.population_covered.as_deref()
    }

    /// The quasi-identifiers, in lookup-table order.
    pub fn quasi_identifiers(&self) -> &[String] {
        &self.quasi_identifiers
    }

    /// Classes of the release.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// Rows of the input the release was computed on.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Rows of the suppressed combinations.
    pub fn suppressed_rows(&self) -> u64 {
        self.suppressed_rows
    }

    /// Distinct raw QI combinations.
    pub fn combinations(&self) -> usize {
        self.class_of.len()
    }

    /// Per QI, the distinct raw values (position = leaf code).
    pub fn leaf_values(&self) -> &[ArrayRef] {
        &self.leaf_values
    }

    /// Per QI, the leaf code of each combination.
    pub fn leaf_codes(&self) -> &[Vec<u32>] {
        &self.leaf_codes
    }

    /// The class of each combination; [`LocalRecoding::classes`] for suppressed ones.
    pub fn class_of(&self) -> &[u32] {
        &self.class_of
    }

    /// Per QI, each class's label (Utf8View), followed by `*` for suppressed combinations.
    pub fn class_labels(&self) -> &[ArrayRef] {
        &self.class_labels
    }

    /// Appends the release to an extension-codec payload (the Ballista crate's codec).
    pub fn put_wire(&self, out: &mut Vec<u8>) -> Result<()> {
        let header = serde_json::json!({
            "quasi_identifiers": self.quasi_identifiers,
            "classes": self.classes,
            "rows": self.rows,
            "suppressed_rows": self.suppressed_rows,
        });
        wire::put_bytes(out, header.to_string().as_bytes());
        for q in 0..self.quasi_identifiers.len() {
            wire::put_array(out, &self.leaf_values[q])?;
            let codes: ArrayRef = Arc::new(UInt32Array::from(self.leaf_codes[q].clone()));
            wire::put_array(out, &codes)?;
            wire::put_array(out, &self.class_labels[q])?;
        }
        let class_of: ArrayRef = Arc::new(UInt32Array::from(self.class_of.clone()));
        wire::put_array(out, &class_of)
    }

    /// The release [`LocalRecoding::put_wire`] wrote.
    pub fn from_wire(reader: &mut wire::WireReader) -> Result<Self> {
        #[derive(serde::Deserialize)]
        struct Header {
            quasi_identifiers: Vec<String>,
            classes: usize,
            rows: u64,
            suppressed_rows: u64,
        }
        let header: Header = serde_json::from_slice(reader.bytes()?)
            .map_err(|e| DataFusionError::Internal(format!("malformed local release: {e}")))?;
        let width = header.quasi_identifiers.len();
        let mut leaf_values = Vec::with_capacity(width);
        let mut leaf_codes = Vec::with_capacity(width);
        let mut class_labels = Vec::with_capacity(width);
        let codes_of = |array: ArrayRef| -> Result<Vec<u32>> {
            array
                .as_primitive_opt::<UInt32Type>()
                .map(|a| a.values().to_vec())
                .ok_or_else(|| DataFusionError::Internal("malformed local release".to_string()))
        };
        for _ in 0..width {
            leaf_values.push(reader.array()?);
            leaf_codes.push(codes_of(reader.array()?)?);
            class_labels.push(reader.array()?);
        }
        let class_of = codes_of(reader.array()?)?;
        Ok(Self {
            quasi_identifiers: header.quasi_identifiers,
            leaf_values,
            leaf_codes,
            class_of,
            class_labels,
            classes: header.classes,
            rows: header.rows,
            suppressed_rows: header.suppressed_rows,
            // the population's counts stay with the process that verifies the release
            population_covered: None,
            cell_kinds: Vec::new(),
        })
    }
}

/// The label of QI `q` for every class of `release` (NULL: only NULLs), then `*` (the label
/// of the suppressed combinations), as Utf8View. A hierarchy node's label is computed once per
/// node, not once per class.
fn class_labels_of(
    qi: &crate::search::QiDomain,
    axis: &QiAxis,
    hierarchy: &crate::generalize::Hierarchy,
    values: &ArrayRef,
    release: &LocalRelease,
    q: usize,
) -> Result<ArrayRef> {
    let classes = release.classes();
    let as_text = |labels: ArrayRef| -> Result<StringArray> {
        let labels = cast(&labels, &DataType::Utf8)?;
        labels
            .as_any()
            .downcast_ref::<StringArray>()
            .cloned()
            .ok_or_else(|| DataFusionError::Internal("labels are not Utf8".to_string()))
    };
    let level0 = as_text(hierarchy.generalize_column(qi.name(), values, 0)?)?;
    // per level, the distinct nodes the classes use, and each one's label
    let mut slot_of: Vec<Vec<u32>> = vec![Vec::new(); qi.height()];
    let mut nodes: Vec<Vec<u32>> = vec![Vec::new(); qi.height()];
    for c in 0..classes {
        if let Cell::Node { level, code } = release.cells_of(c)[q] {
            let (level, code) = (level as usize, code as usize);
            let slots = &mut slot_of[level];
            if slots.is_empty() {
                slots.resize(qi.cardinality(level), u32::MAX);
            }
            if slots[code] == u32::MAX {
                slots[code] = nodes[level].len() as u32;
                nodes[level].push(code as u32);
            }
        }
    }
    let node_labels = nodes
        .iter()
        .enumerate()
        .map(|(level, codes)| {
            if codes.is_empty() {
                Ok(None)
            } else {
                as_text(qi.labels_of_codes(level, codes)?).map(Some)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    // value-free intervals: both ends of every interval, printed as the column's values
    let open_ends = if axis.labels() == LocalLabels::ValueFree {
        let ends: Vec<f64> = (0..classes)
            .filter_map(|c| match release.cells_of(c)[q] {
                Cell::Interval { lo, hi } => Some(axis.interval_bounds(lo, hi)),
                _ => None,
            })
            .flat_map(|bounds| [bounds.lo, bounds.hi])
            .collect();
        if axis.has_midpoint_ends() {
            ends.iter().map(|&e| end_text(e)).collect()
        } else {
            end_labels(&ends, values.data_type())?
        }
    } else {
        Vec::new()
    };
    let mut open_ends = open_ends.chunks_exact(2);
    let mut builder = StringViewBuilder::with_capacity(classes + 1);
    let mut interval = String::new();
    for c in 0..classes {
        match release.cells_of(c)[q] {
            Cell::Top => builder.append_value(TOP_LABEL),
            Cell::Interval { .. } if axis.labels() == LocalLabels::ValueFree => {
                let ends = open_ends.next().ok_or_else(|| {
                    DataFusionError::Internal("an interval without its ends".to_string())
                })?;
                builder.append_value(open_interval_label(&ends[0], &ends[1]));
            }
            Cell::Interval { lo, hi } => {
                let text = |rank: u32| {
                    let leaf = axis.leaf_of_rank()[rank as usize] as usize;
                    if level0.is_valid(leaf) {
                        level0.value(leaf)
                    } else {
                        ""
                    }
                };
                interval.clear();
                interval.push('[');
                interval.push_str(text(lo));
                interval.push_str(", ");
                interval.push_str(text(hi));
                interval.push(']');
                builder.append_value(&interval);
            }
            Cell::Set { .. } => {
                return Err(DataFusionError::Internal(
                    "a set on a quasi-identifier that is not set-based".to_string(),
                ));
            }
            Cell::Node { level, code } => {
                let slot = slot_of[level as usize][code as usize] as usize;
                match &node_labels[level as usize] {
                    Some(labels) if labels.is_valid(slot) => {
                        builder.append_value(labels.value(slot))
                    }
                    _ => builder.append_null(),
                }
            }
        }
    }
    builder.append_value(TOP_LABEL);
    Ok(Arc::new(builder.finish()))
}
