//! [`PackedAggregateExec`]: an [`AggregateExec`] (partial, final, single or their partitioned
//! forms) executed with [`PackedGroups`] finding each row's class instead of DataFusion's
//! group table; the aggregates' own [`GroupsAccumulator`]s do the rest (`update_batch` on
//! rows, `merge_batch` on a partial aggregation's states), as they would in the
//! [`AggregateExec`], which it wraps and falls back to.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::{ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryLimit, MemoryReservation};
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode, aggregate_expressions};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan,
    InputDistributionRequirements, PhysicalExpr, PlanProperties, ReplaceChildrenOptions,
};
use futures::{Stream, StreamExt};

use super::groups::PackedGroups;

/// See module docs.
#[derive(Debug)]
pub struct PackedAggregateExec {
    /// the aggregation replaced, run instead when the kernel cannot be (see [`Self::execute`])
    inner: Arc<dyn ExecutionPlan>,
    mode: AggregateMode,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    /// per aggregate, its argument expressions: on rows, or its state columns when merging
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    /// per aggregate, its FILTER (none when merging: the partial aggregation applied it)
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl PackedAggregateExec {
    /// Wraps `aggregate` (the rule checked that the kernel can run it).
    pub fn try_new(aggregate: &AggregateExec, inner: Arc<dyn ExecutionPlan>) -> Result<Self> {
        let mode = *aggregate.mode();
        let keys = aggregate.group_expr().input_exprs();
        // as DataFusion's aggregation takes them: the states follow the keys when merging
        let arguments = aggregate_expressions(aggregate.aggr_expr(), &mode, keys.len())?;
        let filters = if merges(mode) {
            vec![None; aggregate.aggr_expr().len()]
        } else {
            aggregate.filter_expr().to_vec()
        };
        Ok(Self {
            inner,
            mode,
            keys,
            aggregates: aggregate.aggr_expr().to_vec(),
            arguments,
            filters,
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    fn partial(&self) -> bool {
        self.mode == AggregateMode::Partial
    }
}

/// Whether an aggregation of `mode` merges a partial aggregation's states (rather than
/// reading rows).
pub(super) fn merges(mode: AggregateMode) -> bool {
    matches!(mode, AggregateMode::Final | AggregateMode::FinalPartitioned)
}

impl DisplayAs for PackedAggregateExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                let keys: Vec<String> = self.keys.iter().map(|k| k.to_string()).collect();
                let aggregates: Vec<&str> = self.aggregates.iter().map(|a| a.name()).collect();
                write!(
                    f,
                    "PackedAggregateExec: mode={:?}, gby=[{}], aggr=[{}]",
                    self.mode,
                    keys.join(", "),
                    aggregates.join(", ")
                )
            }
            DisplayFormatType::TreeRender => write!(f, "mode={:?}", self.mode),
        }
    }
}

impl ExecutionPlan for PackedAggregateExec {
    fn name(&self) -> &'static str {
        "PackedAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.inner.children()
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        self.inner.input_distribution_requirements()
    }

    fn required_input_ordering(
        &self,
    ) -> Vec<Option<datafusion::physical_expr::OrderingRequirements>> {
        self.inner.required_input_ordering()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        self.inner.maintains_input_order()
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let inner = Arc::clone(&self.inner).replace_children(children, options)?;
        let Some(aggregate) = inner.downcast_ref::<AggregateExec>() else {
            return Err(DataFusionError::Internal(
                "PackedAggregateExec wraps an AggregateExec".into(),
            ));
        };
        Ok(Arc::new(Self::try_new(aggregate, Arc::clone(&inner))?))
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.inner.apply_expressions(f)
    }

    /// The kernel, unless the memory pool refuses its first reservation, or, for an
    /// aggregation that must finish (single or final mode), the pool has a limit: DataFusion's
    /// aggregation can spill, the kernel cannot (a partial one emits its classes early
    /// instead). Either way the `fallback` metric says which ran.
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let fallback = MetricBuilder::new(&self.metrics).counter("fallback", partition);
        let handed_over = MetricBuilder::new(&self.metrics).counter("hashed", partition);
        let pool = context.memory_pool();
        let reservation =
            MemoryConsumer::new(format!("PackedAggregateExec[{partition}]")).register(pool);
        let limited = !matches!(pool.memory_limit(), MemoryLimit::Infinite);
        if (limited && !self.partial()) || reservation.try_grow(FIRST_RESERVATION).is_err() {
            fallback.add(1);
            return self.inner.execute(partition, context);
        }
        let input = self.inner.children()[0].execute(partition, Arc::clone(&context))?;
        let key_schema = Arc::new(datafusion::arrow::datatypes::Schema::new(
            self.keys
                .iter()
                .map(|k| k.return_field(&input.schema()))
                .collect::<Result<Vec<_>>>()?,
        ));
        let accumulators = self
            .aggregates
            .iter()
            .map(|a| a.create_groups_accumulator())
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::pin(PackedStream {
            schema: self.schema(),
            input,
            partial: self.partial(),
            merging: merges(self.mode),
            keys: self.keys.clone(),
            arguments: self.arguments.clone(),
            filters: self.filters.clone(),
            aggregates: self.aggregates.clone(),
            groups: PackedGroups::try_new(key_schema)?,
            accumulators,
            classes: Vec::new(),
            reservation,
            output: VecDeque::new(),
            done: false,
            batch_size: context.session_config().batch_size(),
            baseline: BaselineMetrics::new(&self.metrics, partition),
            handed_over,
        }))
    }

    /// The kernel's metrics, and those of DataFusion's aggregation where it ran instead
    /// (its spills, for one).
    fn metrics(&self) -> Option<MetricsSet> {
        let mut metrics = self.metrics.clone_inner();
        for metric in self.inner.metrics().iter().flat_map(|m| m.iter()) {
            metrics.push(Arc::clone(metric));
        }
        Some(metrics)
    }
}

/// Bytes the kernel reserves before reading a row: less than this and it leaves the
/// aggregation to DataFusion.
const FIRST_RESERVATION: usize = 1 << 20;

/// One partition's aggregation by the kernel.
struct PackedStream {
    schema: SchemaRef,
    input: SendableRecordBatchStream,
    partial: bool,
    /// input rows are a partial aggregation's classes and states
    merging: bool,
    keys: Vec<Arc<dyn PhysicalExpr>>,
    /// per aggregate, its argument expressions
    arguments: Vec<Vec<Arc<dyn PhysicalExpr>>>,
    filters: Vec<Option<Arc<dyn PhysicalExpr>>>,
    aggregates: Vec<Arc<AggregateFunctionExpr>>,
    groups: PackedGroups,
    accumulators: Vec<Box<dyn GroupsAccumulator>>,
    /// scratch: the class of each row of a batch
    classes: Vec<usize>,
    reservation: MemoryReservation,
    output: VecDeque<RecordBatch>,
    done: bool,
    batch_size: usize,
    baseline: BaselineMetrics,
    handed_over: Count,
}

impl PackedStream {
    /// Counts one input batch into the classes.
    fn update(&mut self, batch: &RecordBatch) -> Result<()> {
        let keys = self
            .keys
            .iter()
            .map(|k| k.evaluate(batch)?.into_array(batch.num_rows()))
            .collect::<Result<Vec<ArrayRef>>>()?;
        let was_hashed = self.groups.is_hashed();
        self.groups.intern(&keys, &mut self.classes)?;
        if !was_hashed && self.groups.is_hashed() {
            self.handed_over.add(1);
        }
        let total = self.groups.len();
        for ((accumulator, arguments), filter) in self
            .accumulators
            .iter_mut()
            .zip(&self.arguments)
            .zip(&self.filters)
        {
            let values = arguments
                .iter()
                .map(|a| a.evaluate(batch)?.into_array(batch.num_rows()))
                .collect::<Result<Vec<ArrayRef>>>()?;
            let filter = match filter {
                Some(filter) => Some(filter.evaluate(batch)?.into_array(batch.num_rows())?),
                None => None,
            };
            if self.merging {
                accumulator.merge_batch(&values, &self.classes, total)?;
            } else {
                accumulator.update_batch(
                    &values,
                    &self.classes,
                    filter.as_ref().map(|f| f.as_boolean()),
                    total,
                )?;
            }
        }
        let size = self.groups.size() + self.accumulators.iter().map(|a| a.size()).sum::<usize>();
        if self.reservation.try_resize(size).is_err() {
            if self.partial && !self.groups.is_empty() {
                // as DataFusion's partial aggregation does: the classes so far go out now
                self.emit()?;
            } else {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "PackedAggregateExec: the memory pool refused {size} bytes for the \
                     classes; SET anonymity.packed_aggregation = false"
                )));
            }
        }
        Ok(())
    }

    /// Every class so far, as output batches (the accumulators' states in partial mode,
    /// their values otherwise).
    fn emit(&mut self) -> Result<()> {
        let mut columns = self.groups.emit()?;
        for accumulator in &mut self.accumulators {
            if self.partial {
                columns.extend(accumulator.state(EmitTo::All)?);
            } else {
                columns.push(accumulator.evaluate(EmitTo::All)?);
            }
        }
        // fresh accumulators: their memory goes with the emitted classes
        self.accumulators = self
            .aggregates
            .iter()
            .map(|a| a.create_groups_accumulator())
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        let rows = batch.num_rows();
        let mut offset = 0;
        while offset < rows {
            let length = self.batch_size.min(rows - offset);
            self.output.push_back(batch.slice(offset, length));
            offset += length;
        }
        let size = self.groups.size();
        // shrinking never fails
        let _ = self.reservation.try_resize(size);
        Ok(())
    }
}

impl Stream for PackedStream {
    type Item = Result<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if let Some(batch) = self.output.pop_front() {
                return self.baseline.record_poll(Poll::Ready(Some(Ok(batch))));
            }
            if self.done {
                return Poll::Ready(None);
            }
            match self.input.poll_next_unpin(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(batch))) => {
                    let elapsed = self.baseline.elapsed_compute().clone();
                    let timer = elapsed.timer();
                    let updated = self.update(&batch);
                    timer.done();
                    if let Err(e) = updated {
                        self.done = true;
                        return Poll::Ready(Some(Err(e)));
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    self.done = true;
                    let elapsed = self.baseline.elapsed_compute().clone();
                    let timer = elapsed.timer();
                    let emitted = self.emit();
                    timer.done();
                    if let Err(e) = emitted {
                        return Poll::Ready(Some(Err(e)));
                    }
                }
            }
        }
    }
}

impl RecordBatchStream for PackedStream {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}
