//! Tables served to datafusion-python but planned and run by this library.
//!
//! A [`GeneralizedTable`](datafusion_anonymity_engine::provider::GeneralizedTable) is a view whose
//! plan calls this crate's functions: the recoding (with its hierarchies as parameters) and,
//! for l and t requirements, the l-diversity and t-closeness aggregates, the latter through the
//! whole-table rewrite. A datafusion-python session knows none of them as they are here, and
//! its analyzer would not run the rewrite. So [`OwnSessionTable`] plans every scan in this
//! library's own session (which registered the policy: functions, rewrite, hierarchies, object
//! stores) and hands datafusion-python one leaf node, [`OwnSessionExec`], that runs the
//! finished plan with that session's task context. datafusion-python's optimizer sees a leaf
//! and cannot rewrite what is inside.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion_anonymity::datafusion::arrow::datatypes::SchemaRef;
use datafusion_anonymity::datafusion::catalog::{Session, TableProvider};
use datafusion_anonymity::datafusion::common::tree_node::TreeNodeRecursion;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::execution::SessionState;
use datafusion_anonymity::datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion_anonymity::datafusion::logical_expr::{Expr, TableType};
use datafusion_anonymity::datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties,
};

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
            Ok(Arc::new(OwnSessionExec::new(plan, state.task_ctx())) as Arc<dyn ExecutionPlan>)
        })
        .await?
    }
}

/// A finished plan of this library run with this library's task context, as a leaf.
#[derive(Debug)]
pub struct OwnSessionExec {
    plan: Arc<dyn ExecutionPlan>,
    task_ctx: Arc<TaskContext>,
    properties: Arc<PlanProperties>,
}

impl OwnSessionExec {
    fn new(plan: Arc<dyn ExecutionPlan>, task_ctx: Arc<TaskContext>) -> Self {
        let properties = Arc::clone(plan.properties());
        Self {
            plan,
            task_ctx,
            properties,
        }
    }
}

impl DisplayAs for OwnSessionExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "OwnSessionExec: planned by datafusion-anonymity")
    }
}

impl ExecutionPlan for OwnSessionExec {
    fn name(&self) -> &str {
        "OwnSessionExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if children.is_empty() {
            Ok(self)
        } else {
            Err(DataFusionError::Internal(
                "OwnSessionExec is a leaf: it takes no children".to_string(),
            ))
        }
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.plan.execute(partition, Arc::clone(&self.task_ctx))
    }
}
