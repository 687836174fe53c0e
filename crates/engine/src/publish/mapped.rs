//! A partition stream whose batches pass through a function: the row pipeline's stages
//! ([`super::suppress`], [`super::expand`]) map the partitions of the rows they are given.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use futures::StreamExt;

/// `partition`'s batches passed through `map`, as a partition of `schema`.
pub(crate) fn mapped(
    partition: Arc<dyn PartitionStream>,
    schema: SchemaRef,
    map: impl Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync + 'static,
) -> Arc<dyn PartitionStream> {
    Arc::new(MappedPartition {
        partition,
        schema,
        map: Arc::new(map),
    })
}

/// A batch map, shared by the streams of a [`MappedPartition`].
type BatchMap = Arc<dyn Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync>;

struct MappedPartition {
    partition: Arc<dyn PartitionStream>,
    schema: SchemaRef,
    map: BatchMap,
}

impl std::fmt::Debug for MappedPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedPartition")
            .field("partition", &self.partition)
            .finish_non_exhaustive()
    }
}

impl PartitionStream for MappedPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let map = Arc::clone(&self.map);
        let batches = self
            .partition
            .execute(ctx)
            .map(move |batch| batch.and_then(|b| map(b)));
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            batches,
        ))
    }
}
