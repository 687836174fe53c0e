//! Rows as they are written: their labels made from their class keys.
//!
//! Publishing can carry each row's class key (one integer) in place of its label columns
//! (several 16-byte views a row, which the class counts and the shuffle would each code again)
//! and make the labels from the key only here, on the way to the writer:
//! - a local release's rows carry the lookup's class key (`UInt32`) from the scan on, and get
//!   their labels from the same lookup that recodes them
//!   ([`LocalRecodeFunction::labels_of_keys`]);
//! - shuffled rows of a full-domain release carry their *written class* (`UInt64`:
//!   `partition << 32 | class`) from the suppression stage on, which counts them by label
//!   anyway, and get their labels from the partitions' counters ([`WrittenClassLabels`]),
//!   complete by then: the shuffle reads every partition to its end before it passes a row
//!   on.
//!
//! ```text
//! rows:     kept columns…, __anon_class_key
//! written:  the recoded table's columns, in its order: kept columns and labels
//! ```

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::take;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, UInt32Type, UInt64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::streaming::PartitionStream;

use super::classes::{ClassCounter, JointCodes};
use crate::direct_table::{PREFETCH_DISTANCE, prefetch};
use crate::generalize::udf::local_recode::LocalRecodeFunction;
use crate::provider::CLASS_KEY_COLUMN;

/// Where the labels of the class keys come from.
#[derive(Debug)]
pub(crate) enum KeyLabels {
    /// a local release's lookup, by its class keys (`UInt32`)
    Lookup(Arc<LocalRecodeFunction>),
    /// the written classes, by `partition << 32 | class` (`UInt64`)
    Written(WrittenClassLabels),
}

impl KeyLabels {
    /// Per quasi-identifier, the label of each of `keys`.
    fn labels(&self, keys: &ArrayRef, width: usize) -> Result<Vec<ArrayRef>> {
        let wrong =
            || DataFusionError::Internal(format!("the class keys are {}", keys.data_type()));
        match self {
            KeyLabels::Lookup(lookup) => {
                let keys = keys.as_primitive_opt::<UInt32Type>().ok_or_else(wrong)?;
                lookup.labels_of_keys(keys.values())
            }
            KeyLabels::Written(written) => {
                let keys = keys.as_primitive_opt::<UInt64Type>().ok_or_else(wrong)?;
                written.labels(keys.values(), width)
            }
        }
    }
}

/// The labels of the classes the suppression stage counted, by their written class key
/// (`partition << 32 | class`, the class as partition `partition`'s counter numbers it).
#[derive(Debug)]
pub(crate) struct WrittenClassLabels {
    /// the partitions' counters, as the suppression stage hands them over at their end
    counters: Arc<Mutex<Vec<(usize, ClassCounter)>>>,
    partitions: usize,
    /// built from the counters at the first batch
    built: Mutex<Option<Arc<ClassLabelTable>>>,
}

/// Every partition's classes in one table: partition `p`'s class `c` is class `starts[p] + c`
/// of `classes`.
#[derive(Debug)]
struct ClassLabelTable {
    /// `partitions + 1` offsets
    starts: Vec<u32>,
    classes: JointCodes,
}

impl WrittenClassLabels {
    /// The labels of the classes that the `partitions` partitions count into `counters`.
    pub(crate) fn new(counters: Arc<Mutex<Vec<(usize, ClassCounter)>>>, partitions: usize) -> Self {
        Self {
            counters,
            partitions,
            built: Mutex::new(None),
        }
    }

    fn table(&self, width: usize) -> Result<Arc<ClassLabelTable>> {
        let lost = || DataFusionError::Internal("the written classes were lost".to_string());
        let mut built = self.built.lock().map_err(|_| lost())?;
        if let Some(table) = built.as_ref() {
            return Ok(Arc::clone(table));
        }
        let counters = self.counters.lock().map_err(|_| lost())?;
        let mut by_partition: Vec<Option<&ClassCounter>> = vec![None; self.partitions];
        for (partition, counter) in counters.iter() {
            if let Some(slot) = by_partition.get_mut(*partition) {
                *slot = Some(counter);
            }
        }
        let by_partition = by_partition
            .into_iter()
            .enumerate()
            .map(|(partition, counter)| {
                counter.ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "rows passed on before partition {partition}'s classes were all counted"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut starts = vec![0u32];
        for counter in &by_partition {
            let end = starts.last().map_or(0, |&s| s as usize) + counter.classes();
            starts.push(
                u32::try_from(end).map_err(|_| {
                    DataFusionError::Internal("over 2^32 written classes".to_string())
                })?,
            );
        }
        let table = Arc::new(ClassLabelTable {
            starts,
            classes: ClassCounter::joint_codes(&by_partition, width),
        });
        *built = Some(Arc::clone(&table));
        Ok(table)
    }

    /// Per quasi-identifier (`width` of them), the label of each of `keys`: the class's codes
    /// read once a row (the one access to the class table, which is too large for the
    /// processor's cache), then each column's label from its dictionary of a few labels.
    fn labels(&self, keys: &[u64], width: usize) -> Result<Vec<ArrayRef>> {
        let table = self.table(width)?;
        let JointCodes {
            dictionaries,
            codes,
            ..
        } = &table.classes;
        let mut rows = Vec::with_capacity(keys.len());
        for &key in keys {
            let (partition, class) = ((key >> 32) as usize, key as u32);
            match table.starts.get(partition..partition + 2) {
                Some(&[start, end]) if class < end - start => rows.push((start + class) as usize),
                _ => {
                    return Err(DataFusionError::Internal(format!(
                        "no written class {class} in partition {partition}"
                    )));
                }
            }
        }
        // the rows are in random order: fetch a few classes ahead, so that their cache misses
        // overlap instead of each stalling the loop
        let mut columns: Vec<Vec<u32>> = vec![vec![0; rows.len()]; width];
        for (i, &row) in rows.iter().enumerate() {
            if let Some(&ahead) = rows.get(i + PREFETCH_DISTANCE) {
                prefetch(&codes[ahead * width]);
            }
            for (column, &code) in columns.iter_mut().zip(&codes[row * width..][..width]) {
                column[i] = code;
            }
        }
        columns
            .into_iter()
            .zip(dictionaries)
            .map(|(codes, dictionary)| Ok(take(dictionary, &UInt32Array::from(codes), None)?))
            .collect()
    }
}

/// The schema of rows passed on by written class key: `schema` without its quasi-identifier
/// columns (at `quasi_identifiers`), with the key last.
pub(crate) fn written_keyed_schema(schema: &SchemaRef, quasi_identifiers: &[usize]) -> SchemaRef {
    let mut fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(i, _)| !quasi_identifiers.contains(i))
        .map(|(_, field)| field.as_ref().clone())
        .collect();
    fields.push(Field::new(CLASS_KEY_COLUMN, DataType::UInt64, false));
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

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
    key_labels: KeyLabels,
    /// per written column, its source
    layout: Vec<Source>,
    /// the number of quasi-identifiers
    width: usize,
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
        key_labels: KeyLabels,
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
            key_labels,
            layout,
            width: quasi_identifiers.len(),
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
        let labels = self.key_labels.labels(batch.column(self.key), self.width)?;
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
