//! Counting classes for publishing: the failing classes (by an exact in-memory counter, or
//! by SQL when l or t apply or the counts do not fit the memory pool), and the partitions'
//! counters of written classes merged.

use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::Column;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_plan::execute_stream_partitioned;
use datafusion::prelude::SessionContext;
use futures::StreamExt;

use super::class_keys::KeyCounts;
use super::classes::ClassCounter;
use crate::local_recode::LocalRecodeFunction;
use crate::policy::quote_ident;
use crate::progress::ScanProgress;

/// The classes of fewer than `k` rows, their rows, and all rows.
pub(super) fn failing_by_size(classes: &ClassCounter, k: u64) -> (ClassCounter, u64, u64) {
    let width = classes.width();
    let mut failing = ClassCounter::new(width);
    let (mut suppressed, mut input_rows) = (0, 0);
    let mut labels = Vec::with_capacity(width);
    for class in 0..classes.classes() as u32 {
        let size = classes.size(class);
        input_rows += size;
        if size > 0 && size < k {
            suppressed += size;
            labels.clear();
            labels.extend(classes.labels(class));
            failing.intern(&labels);
        }
    }
    (failing, suppressed, input_rows)
}

/// The failing classes, their rows and all rows, by the table's own plan (the crate's
/// aggregate functions for l and t; DataFusion's aggregation, which spills).
pub(super) async fn failing_by_sql(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    table: &crate::provider::GeneralizedTable,
    width: usize,
    progress: Option<Arc<ScanProgress>>,
) -> Result<(ClassCounter, u64, u64, Vec<RecordBatch>)> {
    let count_sql = format!("SELECT count(*) FROM {}", quote_ident(policy.table_name()));
    let input_rows = first_i64(&ctx.sql(&count_sql).await?.collect().await?) as u64;
    let frame = ctx
        .execute_logical_plan(table.failing_classes_plan()?)
        .await?;
    let task_ctx = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await?;
    let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
    let batches = datafusion::physical_plan::collect(plan, task_ctx).await?;
    Ok((
        failing_from_batches(&batches, width)?,
        crate::search::failing::failing_rows(&batches),
        input_rows,
        batches,
    ))
}

/// The failing classes of `batches` (the first `width` columns are the labels) as a counter.
pub(super) fn failing_from_batches(batches: &[RecordBatch], width: usize) -> Result<ClassCounter> {
    let mut failing = ClassCounter::new(width);
    let mut classes = Vec::new();
    for batch in batches {
        if batch.num_columns() < width {
            return Err(DataFusionError::Internal(format!(
                "failing classes with {} columns for {width} quasi-identifiers",
                batch.num_columns()
            )));
        }
        failing.classify(&batch.columns()[..width], batch.num_rows(), &mut classes)?;
    }
    Ok(failing)
}

/// The classes of the recoded rows and their sizes: one scan of the quasi-identifiers, each
/// partition counted in its own task, the counters merged.
pub(super) async fn count_classes(
    ctx: &SessionContext,
    recoded: &LogicalPlan,
    quasi_identifiers: &[String],
    progress: Option<Arc<ScanProgress>>,
) -> Result<ClassCounter> {
    let keys: Vec<Expr> = quasi_identifiers
        .iter()
        .map(|q| Expr::Column(Column::from_name(q)))
        .collect();
    let plan = LogicalPlanBuilder::from(recoded.clone())
        .project(keys)?
        .build()?;
    let plan = ctx.state().create_physical_plan(&plan).await?;
    let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
    let streams = execute_stream_partitioned(plan, ctx.task_ctx())?;
    let width = quasi_identifiers.len();
    let pool = Arc::clone(&ctx.runtime_env().memory_pool);
    let mut tasks = tokio::task::JoinSet::new();
    for mut stream in streams {
        let reservation = MemoryConsumer::new("anon class count").register(&pool);
        tasks.spawn(async move {
            let mut counter = ClassCounter::new(width);
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                counter.count(batch.columns(), batch.num_rows())?;
                reservation.try_resize(counter.memory_size())?;
            }
            Ok::<_, DataFusionError>((counter, reservation))
        });
    }
    // each partition's memory stays reserved until it is merged
    let mut total: Option<(ClassCounter, MemoryReservation)> = None;
    while let Some(counted) = tasks.join_next().await {
        let (counted, reservation) = counted
            .map_err(|e| DataFusionError::Execution(format!("class count failed: {e}")))??;
        match total.as_mut() {
            None => total = Some((counted, reservation)),
            Some((total, total_reservation)) => {
                total.merge(&counted);
                drop(reservation);
                total_reservation.try_resize(total.memory_size())?;
            }
        }
    }
    Ok(total.map_or_else(|| ClassCounter::new(width), |(counter, _)| counter))
}

/// The partitions' counters of written classes, merged, with the rows counted by class key
/// (`keys`, whose labels `lookup` gives).
pub(super) fn merge_counters(
    counters: &Mutex<Vec<(usize, ClassCounter)>>,
    keys: &Mutex<Vec<KeyCounts>>,
    lookup: Option<&LocalRecodeFunction>,
    width: usize,
) -> Result<ClassCounter> {
    let lost =
        || DataFusionError::Execution("the counts of the written classes were lost".to_string());
    let mut counters = counters.lock().map_err(|_| lost())?;
    let mut keys = keys.lock().map_err(|_| lost())?;
    if let Some(mut merged_keys) = keys.pop() {
        for other in keys.iter() {
            merged_keys.merge(other);
        }
        let lookup = lookup.ok_or_else(|| {
            DataFusionError::Internal("rows counted by class key without a lookup".to_string())
        })?;
        // no partition of its own: the partition is only for labelling written class keys
        counters.push((usize::MAX, merged_keys.classes(lookup)?));
    }
    let mut merged = counters
        .pop()
        .map_or_else(|| ClassCounter::new(width), |(_, counter)| counter);
    for (_, counter) in counters.iter() {
        merged.merge(counter);
    }
    Ok(merged)
}

pub(super) fn first_i64(batches: &[datafusion::arrow::record_batch::RecordBatch]) -> i64 {
    batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| {
            let column = b.column(0).as_primitive_opt::<Int64Type>()?;
            column.is_valid(0).then(|| column.value(0))
        })
        .unwrap_or(0)
}
