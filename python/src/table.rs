//! Tables served to datafusion-python but planned and run by this library.
//!
//! A [`GeneralizedTable`](datafusion_anonymity_engine::provider::GeneralizedTable) is a view whose
//! plan calls this crate's functions: the recoding (with its hierarchies as parameters) and,
//! for l and t requirements, the l-diversity and t-closeness aggregates, the latter through the
//! whole-table rewrite. A datafusion-python session knows none of them as they are here, and
//! its analyzer would not run the rewrite. So [`OwnSessionTable`] plans every scan in this
//! library's own session (which registered the policy: functions, rewrite, hierarchies, object
//! stores) and hands datafusion-python one leaf node, [`LeafExec::own_session`], that runs the
//! finished plan with that session's task context. datafusion-python's optimizer sees a leaf
//! and cannot rewrite what is inside.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion_anonymity::datafusion::arrow::datatypes::SchemaRef;
use datafusion_anonymity::datafusion::catalog::{Session, TableProvider};
use datafusion_anonymity::datafusion::error::Result;
use datafusion_anonymity::datafusion::execution::SessionState;
use datafusion_anonymity::datafusion::logical_expr::{Expr, TableType};
use datafusion_anonymity::datafusion::physical_plan::ExecutionPlan;

use crate::leaf::LeafExec;
use crate::runtime;

/// A table planned in `state` whatever session scans it (see module docs).
#[derive(Debug)]
pub struct OwnSessionTable {
    inner: Arc<dyn TableProvider>,
    state: SessionState,
}

impl OwnSessionTable {
    /// `inner`, planned and run in `state`.
    pub fn new(inner: Arc<dyn TableProvider>, state: SessionState) -> Self {
        Self { inner, state }
    }
}

#[async_trait]
impl TableProvider for OwnSessionTable {
    fn schema(&self) -> SchemaRef {
        self.inner.schema()
    }

    fn table_type(&self) -> TableType {
        self.inner.table_type()
    }

    async fn scan(
        &self,
        _session: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let inner = Arc::clone(&self.inner);
        let state = self.state.clone();
        let projection = projection.cloned();
        let filters = filters.to_vec();
        // listing files and planning may spawn tasks or block: on this library's runtime,
        // not on the caller's (datafusion-python's tokio is another copy of tokio)
        runtime::on_runtime(async move {
            let plan = inner
                .scan(&state, projection.as_ref(), &filters, limit)
                .await?;
            Ok(Arc::new(LeafExec::own_session(plan, state.task_ctx())) as Arc<dyn ExecutionPlan>)
        })
        .await?
    }
}
