//! The rows of a local release as they are written: their labels made from their class keys.
//!
//! Publishing a local release carries each row's class key (one `UInt32`) through the
//! suppression, the class counts and the shuffle in place of its label columns (several
//! 16-byte views a row, which the shuffle would code again to hold them), and makes the labels
//! from the key only here, on the way to the writer, with the same lookup that recodes the
//! rows ([`LocalRecodeFunction::labels_of_keys`]).
//!
//! ```text
//! rows:     kept columns…, __anon_class_key
//! written:  the recoded table's columns, in its order: kept columns and labels
//! ```

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::{SchemaRef, UInt32Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::streaming::PartitionStream;

use crate::generalize::udf::local_recode::LocalRecodeFunction;

/// Where a written column comes from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// the keyed rows' column at this position
    Kept(usize),
    /// the label of this quasi-identifier
    Label(usize),
}

/// Keyed rows → written rows; see the module documentation.
#[derive(Debug)]
pub(crate) struct LabelExpansion {
    lookup: Arc<LocalRecodeFunction>,
    /// per written column, its source
    layout: Vec<Source>,
    /// the position of the class key in the keyed rows
    key: usize,
    schema: SchemaRef,
}

impl LabelExpansion {
    /// Rows of `keyed` (with the class key at `key`) written as `written`, whose quasi-identifier
    /// columns are `quasi_identifiers` (in label order) and whose other columns are `keyed`'s
    /// of the same names.
    pub(crate) fn new(
        keyed: &SchemaRef,
        key: usize,
        written: SchemaRef,
        quasi_identifiers: &[String],
        lookup: Arc<LocalRecodeFunction>,
    ) -> Result<Self> {
        let layout = written
            .fields()
            .iter()
            .map(|field| {
                let name = field.name();
                match quasi_identifiers.iter().position(|q| q == name) {
                    Some(q) => Ok(Source::Label(q)),
                    None => keyed.index_of(name).map(Source::Kept).map_err(|_| {
                        DataFusionError::Internal(format!(
                            "column '{name}' of the output is not among the keyed rows'"
                        ))
                    }),
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            lookup,
            layout,
            key,
            schema: written,
        })
    }

    /// The position of the class key in the keyed rows.
    pub(crate) fn key(&self) -> usize {
        self.key
    }

    /// The schema of the written rows.
    pub(crate) fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The written rows of `batch`.
    pub(crate) fn expand(&self, batch: &RecordBatch) -> Result<RecordBatch> {
        let keys = batch
            .column(self.key)
            .as_primitive_opt::<UInt32Type>()
            .ok_or_else(|| DataFusionError::Internal("the class keys are not UInt32".into()))?;
        let labels = self.lookup.labels_of_keys(keys.values())?;
        let columns = self
            .layout
            .iter()
            .map(|source| match *source {
                Source::Kept(i) => Ok(Arc::clone(batch.column(i))),
                Source::Label(q) => labels
                    .get(q)
                    .cloned()
                    .ok_or_else(|| DataFusionError::Internal(format!("no label {q}"))),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// `partition`'s rows written as `expansion` makes them.
pub(crate) fn expanded(
    partition: Arc<dyn PartitionStream>,
    expansion: Arc<LabelExpansion>,
) -> Arc<dyn PartitionStream> {
    let schema = Arc::clone(&expansion.schema);
    super::suppress::mapped(partition, schema, move |batch| expansion.expand(&batch))
}
