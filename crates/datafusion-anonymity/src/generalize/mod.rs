//! Generalization hierarchies and the scalar recoding functions built on them.
//!
//! A [`Hierarchy`] maps each value of a column to a more general value at levels 0 (the value
//! itself, as text) … `height() - 1` (the top: `*`, full suppression). Four kinds:
//!
//! | kind | input | level 1 … | module |
//! |---|---|---|---|
//! | mask | strings, integers | `1234*`, `123**`, … `*****` | [`mask`] |
//! | interval | integers, floats, decimals | `[35, 40)`, `[30, 40)`, …, `< 18`, `>= 90`, `*` | [`interval`] |
//! | date | Date32, Date64, timestamps | `2024-03`, `2024`, `2020s`, `*` | [`date`] |
//! | tree | strings, integers, booleans | the labels of an ARX CSV file or inline rows | [`tree`] |
//!
//! Every kind recodes a whole Arrow array at once ([`Hierarchy::generalize`]): output is
//! always **Utf8**, NULL stays NULL at every level (the top included), dictionary input is
//! recoded once per dictionary value. Errors are `DataFusionError::Plan` for definitions,
//! levels and types (found before any data is read) and `DataFusionError::Execution` for data
//! values missing from a tree; none of them quotes a data value.
//!
//! From SQL ([`register_functions`], called by [`crate::register`]):
//! `mask(col, level)`, `bucket(col, width)`, `generalize_date(col, unit)` and
//! `generalize(col, 'hierarchy', level)` for hierarchies added with [`register_hierarchy`].
//!
//! ```no_run
//! # fn demo() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use datafusion::prelude::*;
//! use datafusion_anonymity::generalize::{Hierarchy, register_hierarchy};
//! let ctx = SessionContext::new();
//! datafusion_anonymity::register(&ctx)?;
//! let education = Hierarchy::tree_from_csv_file(
//!     "education", "examples/adult/hierarchies/adult_hierarchy_education.csv")?;
//! register_hierarchy(&ctx, "education", Arc::new(education))?;
//! // SELECT generalize(education, 'education', 2) FROM adult
//! # Ok(()) }
//! ```

pub mod common;
pub mod date;
pub mod interval;
pub mod mask;
pub mod registry;
pub mod session;
pub mod spec;
pub mod tree;
pub mod tree_rules;
pub mod udf;

#[cfg(test)]
mod tests;

use std::path::Path;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Float64Array, UInt64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use hashbrown::{HashMap, HashSet};

/// [`Hierarchy::level_meaning`] of a top level: every value is published as `*`.
pub const ERASED: &str = "all *";

pub use common::{TOP_LABEL, format_number};
pub use date::{DateHierarchy, DateUnit, truncate_dates};
pub use interval::{IntervalHierarchy, IntervalLevel, bucket_values};
pub use mask::{MaskHierarchy, mask_values};
pub use registry::HierarchyRegistry;
pub use session::{
    hierarchy_registry, recoding_functions, register_functions, register_hierarchy,
    registered_hierarchy,
};
pub use tree::TreeHierarchy;
pub use tree_rules::Rule as TreeRule;
pub use udf::{bucket_expr, generalize_date_expr, generalize_expr, mask_expr};

/// What a hierarchy does; see the kind's module.
#[derive(Debug, Clone)]
pub enum HierarchyKind {
    Mask(MaskHierarchy),
    Interval(IntervalHierarchy),
    Date(DateHierarchy),
    Tree(TreeHierarchy),
    /// No hierarchy: level 0 the value, level 1 `*`. What a quasi-identifier without a
    /// hierarchy gets; local recoding publishes such a column as sets of values or intervals
    /// (`generalization = "set"`), never through levels.
    Set,
}

impl HierarchyKind {
    /// `mask`, `interval`, `date`, `tree` or `set`.
    pub fn name(&self) -> &'static str {
        match self {
            HierarchyKind::Mask(_) => "mask",
            HierarchyKind::Interval(_) => "interval",
            HierarchyKind::Date(_) => "date",
            HierarchyKind::Tree(_) => "tree",
            HierarchyKind::Set => "set",
        }
    }

    /// The column types the kind accepts, in words.
    fn expects(&self) -> &'static str {
        match self {
            HierarchyKind::Mask(_) => "a string or integer column",
            HierarchyKind::Interval(_) => "a numeric column (integer, float or decimal)",
            HierarchyKind::Date(_) => "a Date32, Date64 or Timestamp column",
            HierarchyKind::Tree(_) => "a string, numeric, date, timestamp or boolean column",
            HierarchyKind::Set => "a string, numeric, temporal or boolean column",
        }
    }
}

/// A named generalization hierarchy: levels `0 ..= height() - 1`, level 0 the value itself
/// (as text), the top level `*`. Share it as `Arc<Hierarchy>`.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    name: String,
    kind: HierarchyKind,
}

/// For each input value, the number of leaves its generalized value covers, and the domain
/// size |D| — what the Loss metric needs: a cell costs `(leaves − 1) / (|D| − 1)`.
#[derive(Debug, Clone)]
pub struct Coverage {
    /// |D|: the rows of a tree hierarchy's file; for the other kinds the distinct non-null
    /// values passed to [`Hierarchy::coverage`].
    pub domain_size: u64,
    /// Leaves under each input value's generalization (NULL for NULL input).
    pub leaves: UInt64Array,
    /// Whether the level is the top (`*`, which costs 1 even when |D| = 1).
    pub is_top: bool,
}

/// The domain an inclusive interval label `[lo, hi]` of an ordered column is counted in for
/// the Loss metric: a value tree's leaves (as ARX counts them; only its numeric ones can fall
/// inside an interval), else the column's distinct non-null values.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalDomain {
    /// the domain's values, ascending
    points: Vec<f64>,
    /// |D|
    size: u64,
}

impl IntervalDomain {
    /// |D|.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Domain values `x` with `lo ≤ x ≤ hi`.
    pub fn covered(&self, lo: f64, hi: f64) -> u64 {
        self.positions(hi).1.saturating_sub(self.positions(lo).0)
    }

    /// Domain values `x` with `lo < x < hi`.
    pub fn covered_open(&self, lo: f64, hi: f64) -> u64 {
        self.positions(hi).0.saturating_sub(self.positions(lo).1)
    }

    /// The smallest and largest domain values `x` with `lo < x < hi`, if any.
    pub fn inside_open(&self, lo: f64, hi: f64) -> Option<(f64, f64)> {
        let (first, end) = (self.positions(lo).1, self.positions(hi).0);
        (first < end).then(|| (self.points[first as usize], self.points[end as usize - 1]))
    }

    /// The Loss of a cell published as `[lo, hi]`: (covered − 1)/(|D| − 1), at least one value
    /// covered (the cell's own), 0 when |D| ≤ 1.
    pub fn loss(&self, lo: f64, hi: f64) -> f64 {
        self.loss_of_covered(self.covered(lo, hi))
    }

    /// [`Self::loss`] of a cell covering `covered` domain values.
    pub fn loss_of_covered(&self, covered: u64) -> f64 {
        if self.size <= 1 {
            return 0.0;
        }
        let covered = covered.max(1);
        ((covered - 1) as f64 / (self.size - 1) as f64).min(1.0)
    }

    /// Domain values below `x`, and at most `x`: [`Self::covered`]`(lo, hi)` is
    /// `at_most(hi) − below(lo)`.
    pub fn positions(&self, x: f64) -> (u64, u64) {
        (
            self.points.partition_point(|&p| p < x) as u64,
            self.points.partition_point(|&p| p <= x) as u64,
        )
    }
}

/// An interval label of a local release: `[lo, hi]` (both ends members' values, `local_labels =
/// "exact"`) or `(lo, hi)` (both ends outside the class: value-free labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalLabel<'a> {
    pub lo: &'a str,
    pub hi: &'a str,
    /// `(lo, hi)`: lo < x < hi; else lo ≤ x ≤ hi
    pub open: bool,
}

/// The ends of a local release's interval label `[lo, hi]` or `(lo, hi)` as text; `None` for
/// any other label (a hierarchy's `[30, 40)` included).
pub fn parse_interval_label(label: &str) -> Option<IntervalLabel<'_>> {
    let (inner, open) = if let Some(rest) = label.strip_prefix('[') {
        (rest.strip_suffix(']')?, false)
    } else {
        (label.strip_prefix('(')?.strip_suffix(')')?, true)
    };
    inner
        .split_once(", ")
        .filter(|(lo, hi)| !lo.is_empty() && !hi.is_empty() && !hi.contains(", "))
        .map(|(lo, hi)| IntervalLabel { lo, hi, open })
}

impl Coverage {
    /// Per input value: `(leaves − 1) / (|D| − 1)`; 0 at level 0 and when |D| ≤ 1 below the
    /// top, 1 at the top. NULL for NULL input.
    pub fn loss(&self) -> Float64Array {
        let d = self.domain_size;
        self.leaves
            .iter()
            .map(|l| {
                l.map(|l| {
                    if self.is_top {
                        1.0
                    } else if d <= 1 {
                        0.0
                    } else {
                        (l.saturating_sub(1)) as f64 / (d - 1) as f64
                    }
                })
            })
            .collect()
    }
}

impl Hierarchy {
    /// A hierarchy of this kind. `name` appears in error messages (and is the usual name to
    /// register it under).
    pub fn new(name: impl Into<String>, kind: HierarchyKind) -> Self {
        Self {
            name: name.into(),
            kind,
        }
    }

    /// Masking of values up to `max_len` characters (height `max_len + 1`).
    pub fn mask(name: impl Into<String>, max_len: usize) -> Self {
        Self::new(name, HierarchyKind::Mask(MaskHierarchy::new(max_len)))
    }

    /// Masking up to the longest value of `values` (the column's data or its distinct values).
    pub fn mask_from_values(name: impl Into<String>, values: &ArrayRef) -> Result<Self> {
        Ok(Self::new(
            name,
            HierarchyKind::Mask(MaskHierarchy::from_values(values)?),
        ))
    }

    /// An interval hierarchy (see [`IntervalHierarchy::new`] for breakpoints and coding).
    pub fn interval(name: impl Into<String>, interval: IntervalHierarchy) -> Self {
        Self::new(name, HierarchyKind::Interval(interval))
    }

    /// Buckets of growing widths from 0, e.g. `&[5.0, 10.0, 20.0, 40.0]` (height 6).
    pub fn interval_widths(name: impl Into<String>, widths: &[f64]) -> Result<Self> {
        Ok(Self::interval(name, IntervalHierarchy::widths(widths)?))
    }

    /// Explicit breakpoints per level, finest first.
    pub fn interval_breaks(name: impl Into<String>, breaks: Vec<Vec<f64>>) -> Result<Self> {
        Ok(Self::interval(name, IntervalHierarchy::breaks(breaks)?))
    }

    /// Calendar units per level, finest first, e.g. `&[Month, Year, Decade]` (height 5).
    pub fn date(name: impl Into<String>, units: &[DateUnit]) -> Result<Self> {
        Ok(Self::new(
            name,
            HierarchyKind::Date(DateHierarchy::new(units.to_vec())?),
        ))
    }

    /// A value tree read from an ARX hierarchy CSV file.
    pub fn tree_from_csv_file(name: impl Into<String>, path: impl AsRef<Path>) -> Result<Self> {
        let name = name.into();
        let tree = TreeHierarchy::from_csv_file(&name, path)?;
        Ok(Self::new(name, HierarchyKind::Tree(tree)))
    }

    /// A value tree from ARX hierarchy CSV text; `file` names it in error messages.
    pub fn tree_from_csv_str(name: impl Into<String>, file: &str, text: &str) -> Result<Self> {
        let name = name.into();
        let tree = TreeHierarchy::from_csv_str(&name, file, text)?;
        Ok(Self::new(name, HierarchyKind::Tree(tree)))
    }

    /// A value tree from inline rows (leaf first, top last), e.g. from a policy file.
    pub fn tree_from_rows<S: AsRef<str>>(name: impl Into<String>, rows: &[Vec<S>]) -> Result<Self> {
        let name = name.into();
        let tree = TreeHierarchy::from_rows(&name, rows)?;
        Ok(Self::new(name, HierarchyKind::Tree(tree)))
    }

    /// No hierarchy ([`HierarchyKind::Set`]): the value, then `*` (height 2).
    pub fn set(name: impl Into<String>) -> Self {
        Self::new(name, HierarchyKind::Set)
    }

    /// The hierarchy's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The hierarchy's kind and parameters.
    pub fn kind(&self) -> &HierarchyKind {
        &self.kind
    }

    /// Number of levels including level 0 (the top level is `height() - 1`).
    pub fn height(&self) -> usize {
        match &self.kind {
            HierarchyKind::Mask(m) => m.height(),
            HierarchyKind::Interval(i) => i.height(),
            HierarchyKind::Date(d) => d.height(),
            HierarchyKind::Tree(t) => t.height(),
            HierarchyKind::Set => 2,
        }
    }

    /// What `level` publishes, in words: `as is`, `last 3 characters masked`, `width 10`,
    /// `4 ranges`, `decade`, `tree level 2`, or [`ERASED`] at the top.
    pub fn level_meaning(&self, level: usize) -> String {
        if level == 0 {
            return "as is".to_string();
        }
        if level >= self.top_level() {
            return ERASED.to_string();
        }
        match &self.kind {
            HierarchyKind::Mask(_) => format!(
                "last {level} character{} masked",
                if level == 1 { "" } else { "s" }
            ),
            HierarchyKind::Interval(interval) => match interval.levels().get(level - 1) {
                Some(IntervalLevel::Width { width, .. }) => format!("width {width}"),
                Some(IntervalLevel::Breaks(breaks)) => format!("{} ranges", breaks.len() + 1),
                None => format!("level {level}"),
            },
            HierarchyKind::Date(date) => date
                .units()
                .get(level - 1)
                .map_or_else(|| format!("level {level}"), |unit| unit.name().to_string()),
            HierarchyKind::Tree(_) => format!("tree level {level}"),
            HierarchyKind::Set => format!("level {level}"),
        }
    }

    /// The top level, `height() - 1`.
    pub fn top_level(&self) -> usize {
        self.height() - 1
    }

    /// |D| when the hierarchy fixes it (a tree: the rows of its file); `None` for kinds whose
    /// domain is the data's distinct values (see [`Hierarchy::coverage`]).
    pub fn leaf_count(&self) -> Option<usize> {
        match &self.kind {
            HierarchyKind::Tree(t) => Some(t.leaf_count()),
            _ => None,
        }
    }

    /// Whether the hierarchy can recode a column of this type (dictionaries are judged by
    /// their values).
    pub fn accepts(&self, data_type: &DataType) -> bool {
        match &self.kind {
            HierarchyKind::Mask(_) => mask::accepts(data_type),
            HierarchyKind::Interval(_) => interval::accepts(data_type),
            HierarchyKind::Date(_) => date::accepts(data_type),
            HierarchyKind::Tree(_) => tree::accepts(data_type),
            HierarchyKind::Set => {
                common::is_string(data_type)
                    || common::is_number(data_type)
                    || common::is_temporal(data_type)
                    || matches!(
                        common::value_type(data_type),
                        DataType::Boolean | DataType::Null
                    )
            }
        }
    }

    /// An error unless the hierarchy fits a column of this type.
    pub fn check_column(&self, column: &str, data_type: &DataType) -> Result<()> {
        if self.accepts(data_type) {
            return Ok(());
        }
        Err(DataFusionError::Plan(format!(
            "hierarchy '{}' ({}) does not fit column '{column}' of type {data_type}: it needs {}",
            self.name,
            self.kind.name(),
            self.kind.expects()
        )))
    }

    /// An error unless `level` is one of the hierarchy's levels
    /// (`level 7 > top level 4 of hierarchy 'age' (height 5: levels 0 to 4)`).
    pub fn check_level(&self, level: usize) -> Result<()> {
        common::check_level(&self.name, level, self.height())
    }

    /// Recodes `values` at `level`: Utf8View output, NULL stays NULL. Errors name the column as
    /// `<unnamed>`; see [`Hierarchy::generalize_column`].
    pub fn generalize(&self, values: &ArrayRef, level: usize) -> Result<ArrayRef> {
        self.generalize_column("<unnamed>", values, level)
    }

    /// Recodes `values`, the data of `column`, at `level`: Utf8View output, NULL stays NULL.
    /// Checks the level and the type; for a tree, errors on values that are not leaves
    /// (counting them, naming `column`).
    pub fn generalize_column(
        &self,
        column: &str,
        values: &ArrayRef,
        level: usize,
    ) -> Result<ArrayRef> {
        self.check_level(level)?;
        self.check_column(column, values.data_type())?;
        match &self.kind {
            HierarchyKind::Mask(m) => m.generalize(values, level),
            HierarchyKind::Interval(i) => i.generalize(values, level),
            HierarchyKind::Date(d) => d.generalize(values, level),
            HierarchyKind::Tree(t) => t.generalize(&self.name, column, values, level),
            HierarchyKind::Set if level == 0 => common::to_labels(values),
            HierarchyKind::Set => common::constant_label(values, TOP_LABEL),
        }
    }

    /// Checks data of `column` up front (e.g. its distinct values, before writing anything):
    /// the type fits and, for a tree, every non-null value is a leaf.
    pub fn validate_values(&self, column: &str, values: &ArrayRef) -> Result<()> {
        self.check_column(column, values.data_type())?;
        if let HierarchyKind::Tree(t) = &self.kind {
            t.leaf_ids(&self.name, column, values)?;
        }
        Ok(())
    }

    /// The domain interval labels of `column` are counted in ([`IntervalDomain`]), given the
    /// column's distinct values.
    pub fn interval_domain(&self, distinct: &ArrayRef) -> Result<IntervalDomain> {
        if let HierarchyKind::Tree(tree) = &self.kind
            && let Some(labels) = tree.labels(0)
        {
            let mut points: Vec<f64> = labels
                .iter()
                .flatten()
                .filter_map(|s| s.trim().parse::<f64>().ok())
                .collect();
            points.sort_by(f64::total_cmp);
            return Ok(IntervalDomain {
                points,
                size: tree.leaf_count() as u64,
            });
        }
        let mut points: Vec<f64> = crate::functions::common::ordered_as_f64(distinct)?
            .into_iter()
            .flatten()
            .collect();
        points.sort_by(f64::total_cmp);
        points.dedup();
        let size = points.len() as u64;
        Ok(IntervalDomain { points, size })
    }

    /// For each of `distinct` (the distinct values of `column`; duplicates are counted once,
    /// NULLs ignored), the number of leaves its generalization at `level` covers, and |D|. A
    /// tree counts the rows of its file under each label (values absent from the data
    /// included); the other kinds count the distinct values of `distinct` with the same label.
    pub fn coverage(&self, column: &str, distinct: &ArrayRef, level: usize) -> Result<Coverage> {
        self.check_level(level)?;
        self.check_column(column, distinct.data_type())?;
        let is_top = level == self.top_level();
        if let HierarchyKind::Tree(t) = &self.kind {
            let ids = t.label_ids_of(&self.name, column, distinct, level)?;
            let under = t.leaves_under(level).unwrap_or_default();
            let leaves = ids
                .iter()
                .map(|id| id.map(|id| under[id as usize]))
                .collect();
            return Ok(Coverage {
                domain_size: t.leaf_count() as u64,
                leaves,
                is_top,
            });
        }
        let generalized = self.generalize_column(column, distinct, level)?;
        let raw = self.generalize_column(column, distinct, 0)?;
        let (raw, generalized) = (raw.as_string_view(), generalized.as_string_view());
        let mut unique: HashSet<&str> = HashSet::new();
        let mut per_label: HashMap<&str, u64> = HashMap::new();
        for i in 0..raw.len() {
            if raw.is_valid(i) && unique.insert(raw.value(i)) {
                *per_label.entry(generalized.value(i)).or_default() += 1;
            }
        }
        let leaves = (0..raw.len())
            .map(|i| {
                raw.is_valid(i)
                    .then(|| per_label.get(generalized.value(i)).copied().unwrap_or(1))
            })
            .collect();
        Ok(Coverage {
            domain_size: unique.len() as u64,
            leaves,
            is_top,
        })
    }
}
