//! The failing classes of a chosen node, derived from the frequency set: what publishing
//! needs to suppress them without aggregating the input again.
//!
//! The classes are judged by the same [`Evaluator`] as the search, which follows the
//! provider's rules (k, l and t compared through [`crate::policy::LDiversity::is_met_by`] and
//! [`crate::policy::TCloseness::is_met_by`], the SQL functions' NULL rules). Their labels are
//! recoded with each QI's [`Hierarchy`](crate::generalize::Hierarchy) from one leaf value of
//! the class, as the provider recodes every row.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema};
use datafusion::error::{DataFusionError, Result};

use super::evaluate::Evaluator;
use super::frequency::FrequencySet;
use crate::generalize::udf::LABEL_TYPE;
use crate::policy::PrivacyRequirements;

/// The class size column of a failing-classes table; named not to collide with user columns.
pub(crate) const ROWS: &str = "__anon_class_rows";

/// The label column of quasi-identifier `i` in a failing-classes table.
pub(crate) fn key_name(i: usize) -> String {
    format!("__anon_key_{i}")
}

/// The classes of a node that fail the requirements, in the format of
/// [`GeneralizedTable::failing_classes_plan`](crate::provider::GeneralizedTable::failing_classes_plan)'s
/// output (what [`GeneralizedTable::with_failing_classes`](crate::provider::GeneralizedTable::with_failing_classes)
/// takes): per QI `i`, its recoded label `__anon_key_<i>` (Utf8View, as the recoded columns),
/// then the class size as Int64 `__anon_class_rows`.
#[derive(Debug, Clone)]
pub struct FailingClasses {
    /// The QI names, in key order (the frequency set's order).
    pub quasi_identifiers: Vec<String>,
    /// The node's level of each QI (`None` for a local release).
    pub levels: Option<Vec<usize>>,
    /// One class per row (one batch, possibly empty).
    pub batches: Vec<RecordBatch>,
    /// Rows of all failing classes: the rows to suppress.
    pub suppressed_rows: u64,
    /// Rows of the input table.
    pub input_rows: u64,
}

impl FailingClasses {
    /// No failing class: a local release whose every class its algorithm judged, with
    /// `suppressed_rows` of its `input_rows` suppressed by the release itself.
    pub fn none(quasi_identifiers: Vec<String>, suppressed_rows: u64, input_rows: u64) -> Self {
        Self {
            quasi_identifiers,
            levels: None,
            batches: Vec::new(),
            suppressed_rows,
            input_rows,
        }
    }
}

/// The failing classes of the node `levels` (one level per QI, in the frequency set's
/// order) under `requirements`, judged as the search judges them; see [`FailingClasses`].
///
/// Errors: invalid requirements or levels (as [`super::evaluate_levels`]), a frequency set
/// built from codes (it has no values to label the classes with), or a hierarchy failing to
/// recode.
pub fn failing_classes(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    levels: &[usize],
) -> Result<FailingClasses> {
    let mut ev = Evaluator::new(freq, requirements)?;
    ev.lattice.check(levels)?;
    let node = ev.lattice.index(levels);
    let (codes, sizes) = ev.failing_classes(node);
    let qis = freq.qis();
    let mut fields = Vec::with_capacity(qis.len() + 1);
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(qis.len() + 1);
    for (j, qi) in qis.iter().enumerate() {
        columns.push(qi.labels_of_codes(levels[j], &codes[j])?);
        fields.push(Field::new(key_name(j), LABEL_TYPE, true));
    }
    let rows = sizes
        .iter()
        .map(|&n| i64::try_from(n))
        .collect::<std::result::Result<Int64Array, _>>()
        .map_err(|_| DataFusionError::Execution("a class size overflows Int64".to_string()))?;
    columns.push(Arc::new(rows));
    fields.push(Field::new(ROWS, DataType::Int64, false));
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?;
    Ok(FailingClasses {
        quasi_identifiers: freq.qi_names(),
        levels: Some(levels.to_vec()),
        batches: vec![batch],
        suppressed_rows: sizes.iter().sum(),
        input_rows: freq.rows(),
    })
}

/// The rows of the failing classes in `batches` (the last column is [`ROWS`], as
/// [`failing_classes`] and the generalized table's failing-classes plan give it).
pub fn failing_rows(batches: &[RecordBatch]) -> u64 {
    batches
        .iter()
        .map(|b| {
            let rows = b.column(b.num_columns() - 1).as_primitive::<Int64Type>();
            rows.iter().flatten().map(|r| r as u64).sum::<u64>()
        })
        .sum()
}
