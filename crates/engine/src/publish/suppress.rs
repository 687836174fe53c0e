//! The rows to publish: the recoded rows with the failing classes dropped or masked, and the
//! classes of the rows actually handed to the writer counted on the way.
//!
//! [`GeneralizedTable`](crate::provider::GeneralizedTable) finds the rows of failing classes
//! with a hash join, which a view needs (DataFusion must be able to plan, push down and
//! serialize it). Publishing writes every row once and must then measure what it wrote, so
//! it classifies each row once with a [`ClassCounter`] instead: the class decides
//! suppression (a lookup per class, not per row) and the same class ids count the output.
//! The partitions stay parallel up to the Parquet writer.
//!
//! Rows of a local release carry their class key instead of their labels (see
//! `publish/expand.rs`) when no class fails: they are counted by it ([`KeyCounts`]), one
//! integer a row, and passed on as they are.
//!
//! Rows counted by label can leave this stage by key too ([`Suppression::keyed_output`], for
//! the shuffle): each row passed on carries `partition << 32 | class`, its written class in
//! this partition's counter, in place of its labels, and the labels are made from the same
//! counter before the writer. The counts are then of the classes the writer gets labelled,
//! by construction; `publish/expand.rs` explains why it pays.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Scalar, StringViewArray, UInt64Array,
};
use datafusion::arrow::compute::kernels::zip::zip;
use datafusion::arrow::compute::{cast, filter, filter_record_batch};
use datafusion::arrow::datatypes::{SchemaRef, UInt32Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use futures::{Stream, StreamExt};

use super::class_keys::KeyCounts;
use super::classes::ClassCounter;
use crate::errors::MemoryExhausted;
use crate::generalize::TOP_LABEL;
use crate::policy::SuppressionMode;
use crate::progress::ScanProgress;

/// What to suppress and where the counts of the written classes go.
#[derive(Debug, Clone)]
pub(crate) struct Suppression {
    /// Positions of the quasi-identifiers in the rows.
    pub quasi_identifiers: Vec<usize>,
    /// The failing classes (their labels; sizes unused).
    pub failing: Arc<ClassCounter>,
    /// Drop or mask their rows.
    pub mode: SuppressionMode,
    /// One counter per finished partition, with the partition's number: the classes of the
    /// rows passed on.
    pub written: Arc<Mutex<Vec<(usize, ClassCounter)>>>,
    /// Pass rows counted by label on with their written class's key
    /// ([`WrittenClassLabels`](super::expand::WrittenClassLabels)) in place of their labels.
    pub keyed_output: bool,
    /// The position of the rows' class key, if they carry one in place of their labels (a
    /// local release's, with no failing class).
    pub class_key: Option<usize>,
    /// One count per finished partition of the rows passed on by class key (rows counted
    /// here are not in `written`).
    pub written_keys: Arc<Mutex<Vec<KeyCounts>>>,
    /// Counts every row that reaches this stage, suppressed or not (for a progress report).
    pub read: Option<Arc<ScanProgress>>,
}

/// `plan`'s partitions, each suppressed by `suppression`, and the schema of their rows.
pub(crate) fn suppressed_partitions(
    plan: Arc<dyn ExecutionPlan>,
    suppression: Suppression,
) -> (SchemaRef, Vec<Arc<dyn PartitionStream>>) {
    let schema = match suppression.keyed_output {
        true => super::expand::written_keyed_schema(&plan.schema(), &suppression.quasi_identifiers),
        false => plan.schema(),
    };
    let partitions = (0..plan.output_partitioning().partition_count())
        .map(|partition| {
            Arc::new(SuppressedPartition {
                plan: Arc::clone(&plan),
                partition,
                schema: Arc::clone(&schema),
                suppression: suppression.clone(),
            }) as Arc<dyn PartitionStream>
        })
        .collect();
    (schema, partitions)
}

#[derive(Debug)]
struct SuppressedPartition {
    plan: Arc<dyn ExecutionPlan>,
    partition: usize,
    schema: SchemaRef,
    suppression: Suppression,
}

impl PartitionStream for SuppressedPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        let reservation = MemoryConsumer::new(format!("anon written classes[{}]", self.partition))
            .register(ctx.memory_pool());
        match self.plan.execute(self.partition, ctx) {
            Ok(input) => Box::pin(RecordBatchStreamAdapter::new(
                schema,
                SuppressStream {
                    input,
                    state: Some(PartitionState::new(
                        self.suppression.clone(),
                        self.partition,
                        Arc::clone(&self.schema),
                        reservation,
                    )),
                },
            )),
            Err(e) => Box::pin(RecordBatchStreamAdapter::new(
                schema,
                futures::stream::once(async { Err(e) }),
            )),
        }
    }
}

/// One partition's classification state.
struct PartitionState {
    suppression: Suppression,
    partition: usize,
    /// the schema of the rows passed on
    schema: SchemaRef,
    /// the classes of this partition's rows; sizes count the rows passed on
    output: ClassCounter,
    /// the rows passed on by class key, when they carry one
    keyed: Option<KeyCounts>,
    /// per class of `output`: whether it is a failing class
    failing: Vec<bool>,
    /// the all-`*` class of `output` (mask mode, once needed)
    top: Option<u32>,
    classes: Vec<u32>,
    /// the memory of `output`, in the session's pool
    reservation: MemoryReservation,
}

impl PartitionState {
    fn new(
        suppression: Suppression,
        partition: usize,
        schema: SchemaRef,
        reservation: MemoryReservation,
    ) -> Self {
        let output = ClassCounter::new(suppression.quasi_identifiers.len());
        let keyed = suppression.class_key.map(|_| KeyCounts::default());
        Self {
            keyed,
            suppression,
            partition,
            schema,
            output,
            reservation,
            failing: Vec::new(),
            top: None,
            classes: Vec::new(),
        }
    }

    /// Looks up the classes interned since the last call among the failing classes.
    fn flag_new_classes(&mut self) {
        for class in self.failing.len() as u32..self.output.classes() as u32 {
            let failing = self.suppression.failing.find(&self.output, class).is_some();
            self.failing.push(failing);
        }
    }

    fn process(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows();
        if let Some(read) = &self.suppression.read {
            read.add(rows as u64);
        }
        if let (Some(at), Some(keyed)) = (self.suppression.class_key, &mut self.keyed) {
            if self.suppression.failing.classes() > 0 {
                return Err(DataFusionError::Internal(
                    "rows without labels where classes fail".to_string(),
                ));
            }
            let class_keys = batch
                .column(at)
                .as_primitive_opt::<UInt32Type>()
                .ok_or_else(|| {
                    DataFusionError::Internal("the class keys are not UInt32".to_string())
                })?;
            keyed.count(class_keys.values());
            self.reservation
                .try_resize(keyed.memory_size())
                .map_err(|e| written_classes_exhausted(e, None))?;
            return Ok(batch);
        }
        let keys: Vec<ArrayRef> = self
            .suppression
            .quasi_identifiers
            .iter()
            .map(|&i| Arc::clone(batch.column(i)))
            .collect();
        self.output.classify(&keys, rows, &mut self.classes)?;
        self.reservation
            .try_resize(self.output.memory_size())
            .map_err(|e| written_classes_exhausted(e, Some(self.output.classes())))?;
        self.flag_new_classes();
        let failing = &self.failing;
        if !self.classes.iter().any(|&c| failing[c as usize]) {
            for &class in &self.classes {
                self.output.add_rows(class, 1);
            }
            if self.suppression.keyed_output {
                return self.keyed(&batch, None);
            }
            return Ok(batch);
        }
        let suppressed: BooleanArray = self
            .classes
            .iter()
            .map(|&c| Some(failing[c as usize]))
            .collect();
        match self.suppression.mode {
            SuppressionMode::Drop => {
                for &class in &self.classes {
                    if !self.failing[class as usize] {
                        self.output.add_rows(class, 1);
                    }
                }
                let kept = datafusion::arrow::compute::not(&suppressed)?;
                if self.suppression.keyed_output {
                    return self.keyed(&batch, Some(&kept));
                }
                Ok(filter_record_batch(&batch, &kept)?)
            }
            SuppressionMode::Mask => {
                let top = match self.top {
                    Some(top) => top,
                    None => {
                        let labels = vec![Some(TOP_LABEL.as_bytes()); self.output.width()];
                        let top = self.output.intern(&labels);
                        self.flag_new_classes();
                        self.top = Some(top);
                        top
                    }
                };
                for &class in &self.classes {
                    let counted = if self.failing[class as usize] {
                        top
                    } else {
                        class
                    };
                    self.output.add_rows(counted, 1);
                }
                if self.suppression.keyed_output {
                    return self.keyed(&batch, None);
                }
                let mut columns = batch.columns().to_vec();
                let star: ArrayRef = Arc::new(StringViewArray::from(vec![TOP_LABEL]));
                for &i in &self.suppression.quasi_identifiers {
                    let column = &columns[i];
                    // the recoded columns are Utf8View; anything else gets `*` in its type
                    let star = if column.data_type() == star.data_type() {
                        Arc::clone(&star)
                    } else {
                        cast(&star, column.data_type())?
                    };
                    columns[i] = zip(&suppressed, &Scalar::new(star), column)?;
                }
                Ok(RecordBatch::try_new(batch.schema(), columns)?)
            }
        }
    }
}

impl PartitionState {
    /// `batch`'s rows passed on (those `kept` marks, or all) with their written class's key
    /// in place of their labels: a failing class's rows are masked, so their key is the
    /// all-`*` class's.
    fn keyed(&self, batch: &RecordBatch, kept: Option<&BooleanArray>) -> Result<RecordBatch> {
        let high = (self.partition as u64) << 32;
        let written_class = |class: u32| match (self.failing[class as usize], self.top) {
            (true, Some(top)) => top,
            _ => class,
        };
        let keys: UInt64Array = match kept {
            Some(kept) => self
                .classes
                .iter()
                .zip(kept.values())
                .filter(|(_, kept)| *kept)
                .map(|(&class, _)| high | u64::from(written_class(class)))
                .collect(),
            None => self
                .classes
                .iter()
                .map(|&class| high | u64::from(written_class(class)))
                .collect(),
        };
        let quasi_identifiers = &self.suppression.quasi_identifiers;
        let mut columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .enumerate()
            .filter(|(i, _)| !quasi_identifiers.contains(i))
            .map(|(_, column)| match kept {
                Some(kept) => Ok(filter(column, kept)?),
                None => Ok(Arc::clone(column)),
            })
            .collect::<Result<_>>()?;
        columns.push(Arc::new(keys));
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// The error of a partition whose written classes (`classes` of them, if known) do not fit
/// the memory pool.
fn written_classes_exhausted(e: DataFusionError, classes: Option<usize>) -> DataFusionError {
    let classes = classes.map_or(String::new(), |n| format!("{n} "));
    MemoryExhausted::new(
        format!("counting the {classes}classes of the rows being written"),
        e,
    )
    .into()
}

/// The input stream, suppressed; hands its counter over when the input ends.
struct SuppressStream {
    input: SendableRecordBatchStream,
    state: Option<PartitionState>,
}

impl Stream for SuppressStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        match this.input.poll_next_unpin(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(batch))) => Poll::Ready(Some(match this.state.as_mut() {
                Some(state) => state.process(batch),
                None => Err(DataFusionError::Internal(
                    "suppression stream polled after its end".to_string(),
                )),
            })),
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e))),
            Poll::Ready(None) => {
                if let Some(state) = this.state.take() {
                    // a poisoned lock loses this partition's counts, which the check of the
                    // written rows against the counted rows then reports
                    if let Ok(mut written) = state.suppression.written.lock() {
                        written.push((state.partition, state.output));
                    }
                    if let (Some(keyed), Ok(mut written)) =
                        (state.keyed, state.suppression.written_keys.lock())
                    {
                        written.push(keyed);
                    }
                }
                Poll::Ready(None)
            }
        }
    }
}

/// `partition`'s rows, counted into `progress` as they are handed on.
pub(crate) fn counted(
    partition: Arc<dyn PartitionStream>,
    progress: Arc<ScanProgress>,
) -> Arc<dyn PartitionStream> {
    let schema = Arc::clone(partition.schema());
    super::mapped::mapped(partition, schema, move |batch| {
        progress.add(batch.num_rows() as u64);
        Ok(batch)
    })
}
