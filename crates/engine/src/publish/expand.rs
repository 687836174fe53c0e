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
//! Either way the labels written for a key are those its class was counted under, which the
//! verification of a k-only policy measures: the key → label mapping is what makes the two
//! agree, and the tests check it against the release's view (`tests/integration/publish.rs`).
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
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use datafusion::physical_plan::streaming::PartitionStream;

use super::classes::{ClassCounter, JointCodes};
use crate::direct_table::{PREFETCH_DISTANCE, prefetch};
use crate::errors::MemoryExhausted;
use crate::local_recode::LocalRecodeFunction;
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
    /// the table's memory, in the session's pool
    reservation: Mutex<MemoryReservation>,
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
    /// The labels of the classes that the `partitions` partitions count into `counters`; the
    /// table of them is held in `pool`.
    pub(crate) fn new(
        counters: Arc<Mutex<Vec<(usize, ClassCounter)>>>,
        partitions: usize,
        pool: &Arc<dyn MemoryPool>,
    ) -> Self {
        Self {
            counters,
            partitions,
            built: Mutex::new(None),
            reservation: Mutex::new(
                MemoryConsumer::new("anon written class labels").register(pool),
            ),
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
        let classes = ClassCounter::joint_codes(&by_partition, width);
        self.reservation
            .lock()
            .map_err(|_| lost())?
            .try_grow(classes.memory_size())
            .map_err(|e| {
                MemoryExhausted::new(
                    format!(
                        "holding the labels of the {} classes being written",
                        starts.last().copied().unwrap_or(0)
                    ),
                    e,
                )
            })?;
        let table = Arc::new(ClassLabelTable { starts, classes });
        *built = Some(Arc::clone(&table));
        Ok(table)
    }

    /// Per quasi-identifier (`width` of them), the label of each of `keys`: the class's codes
    /// read once a row (the one access to the class table, which is too large for the
    /// processor's first-level cache; rows are in random order), then each column's label
    /// from its dictionary of a few labels.
    fn labels(&self, keys: &[u64], width: usize) -> Result<Vec<ArrayRef>> {
        let table = self.table(width)?;
        let JointCodes {
            dictionaries,
            codes,
            packed,
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
        // fetch a few classes ahead, so that their cache misses overlap instead of each
        // stalling the loop
        let columns: Vec<Vec<u32>> = match packed {
            Some(packed) => {
                let words: Vec<u32> = rows
                    .iter()
                    .enumerate()
                    .map(|(i, &row)| {
                        if let Some(&ahead) = rows.get(i + PREFETCH_DISTANCE) {
                            prefetch(&packed.words[ahead]);
                        }
                        packed.words[row]
                    })
                    .collect();
                packed
                    .shifts
                    .iter()
                    .zip(&packed.masks)
                    .map(|(&shift, &mask)| words.iter().map(|&w| w >> shift & mask).collect())
                    .collect()
            }
            None => {
                let mut columns = vec![vec![0; rows.len()]; width];
                for (i, &row) in rows.iter().enumerate() {
                    if let Some(&ahead) = rows.get(i + PREFETCH_DISTANCE) {
                        prefetch(&codes[ahead * width]);
                    }
                    for (column, &code) in columns.iter_mut().zip(&codes[row * width..][..width]) {
                        column[i] = code;
                    }
                }
                columns
            }
        };
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
    super::mapped::mapped(partition, schema, move |batch| expansion.expand(&batch))
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, StringViewArray};

    use datafusion::execution::memory_pool::{GreedyMemoryPool, UnboundedMemoryPool};

    use super::*;
    use crate::errors::{Vocabulary, is_memory_exhausted, one_line};
    use crate::rng::SplitMix64;

    fn unbounded() -> Arc<dyn MemoryPool> {
        Arc::new(UnboundedMemoryPool::default())
    }

    #[test]
    fn the_label_table_is_held_in_the_pool() {
        let mut counter = ClassCounter::new(3);
        let mut rng = SplitMix64(9);
        let pool = [Some("a"), Some("b"), Some("c")];
        counter.count(&columns(&mut rng, &pool, 100), 100).unwrap();
        let counters = Arc::new(Mutex::new(vec![(0, counter)]));
        // room for a few bytes: the table does not fit, and the error says what to raise
        let small: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(64));
        let written = WrittenClassLabels::new(Arc::clone(&counters), 1, &small);
        let error = written.labels(&[0], 3).unwrap_err();
        assert!(is_memory_exhausted(&error), "{error}");
        // the shell names its own setting
        let line = one_line(&error, Vocabulary::KEYS);
        assert!(
            line.starts_with("holding the labels of the ")
                && line.contains(" classes being written needs more memory")
                && line.contains("raise memory_limit"),
            "{line}"
        );
        // with room, it is reserved for as long as the labels are made
        let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1 << 20));
        let written = WrittenClassLabels::new(counters, 1, &pool);
        written.labels(&[0], 3).unwrap();
        assert!(pool.reserved() > 0);
        drop(written);
        assert_eq!(pool.reserved(), 0);
    }

    /// Labels of `rows` rows drawn from `pool`, three columns.
    fn columns(rng: &mut SplitMix64, pool: &[Option<&str>], rows: usize) -> Vec<ArrayRef> {
        (0..3)
            .map(|_| {
                let values: Vec<Option<&str>> = (0..rows)
                    .map(|_| pool[rng.below(pool.len() as u64) as usize])
                    .collect();
                Arc::new(StringViewArray::from(values)) as ArrayRef
            })
            .collect()
    }

    #[test]
    fn written_class_keys_give_their_counters_labels_packed_or_not() {
        // three partitions (the second counts nothing), labels long and short and NULL
        let mut rng = SplitMix64(5);
        let pool = [
            Some("x"),
            Some("a label longer than twelve"),
            None,
            Some("y"),
        ];
        let mut counters = Vec::new();
        for (partition, rows) in [(0, 200), (1, 0), (2, 300)] {
            let mut counter = ClassCounter::new(3);
            if rows > 0 {
                counter
                    .count(&columns(&mut rng, &pool, rows), rows)
                    .unwrap();
            }
            counters.push((partition, counter));
        }
        // keys of every class of every partition, in a random order, some twice
        let mut keys: Vec<u64> = counters
            .iter()
            .flat_map(|(p, c)| (0..c.classes() as u64).map(move |class| (*p as u64) << 32 | class))
            .collect();
        keys.extend(keys.clone().iter().step_by(3));
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let expected: Vec<Vec<Option<String>>> = keys
            .iter()
            .map(|&key| {
                let counter = &counters[(key >> 32) as usize].1;
                counter
                    .labels(key as u32)
                    .map(|l| l.map(|b| String::from_utf8(b.to_vec()).unwrap()))
                    .collect()
            })
            .collect();
        let written = WrittenClassLabels::new(Arc::new(Mutex::new(counters)), 3, &unbounded());
        let packed_table = written.table(3).unwrap();
        assert!(
            packed_table.classes.packed.is_some(),
            "4 labels a column pack"
        );
        for packed in [true, false] {
            if !packed {
                // the same table with the codes one per column, as when they do not fit a word
                let table = ClassLabelTable {
                    starts: packed_table.starts.clone(),
                    classes: JointCodes {
                        dictionaries: packed_table.classes.dictionaries.clone(),
                        codes: packed_table.classes.codes.clone(),
                        packed: None,
                    },
                };
                *written.built.lock().unwrap() = Some(Arc::new(table));
            }
            let labels = written.labels(&keys, 3).unwrap();
            for (row, expected) in expected.iter().enumerate() {
                let got: Vec<Option<String>> = labels
                    .iter()
                    .map(|column| {
                        let column = column.as_string_view();
                        column.is_valid(row).then(|| column.value(row).to_string())
                    })
                    .collect();
                assert_eq!(&got, expected, "row {row}, packed {packed}");
            }
        }
        // a key past its partition's classes, or of no partition, is an error naming it
        let classes = packed_table.starts[1];
        let error = written.labels(&[u64::from(classes)], 3).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("no written class {classes} in partition 0"))
        );
        let error = written.labels(&[7 << 32], 3).unwrap_err();
        assert!(error.to_string().contains("partition 7"), "{error}");
    }

    #[test]
    fn labels_wait_for_every_partition() {
        let written = WrittenClassLabels::new(
            Arc::new(Mutex::new(vec![(0, ClassCounter::new(1))])),
            2,
            &unbounded(),
        );
        let error = written.labels(&[0], 1).unwrap_err();
        assert!(error.to_string().contains("partition 1"), "{error}");
    }
}
