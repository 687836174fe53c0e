//! [`LeafExec`]: a finished plan of this library shown to datafusion-python as one leaf node.
//!
//! Both ways this library hands a scan to datafusion-python need the same thing: a node its
//! optimizer cannot look into nor rewrite, which runs a plan of ours. A [`crate::held`] scan
//! runs with the task context of the query that executes it; an [`crate::table`] scan with the
//! context of the session that planned it (its functions, rewrite and object stores).

use std::fmt;
use std::sync::Arc;

use datafusion_anonymity::datafusion::common::tree_node::TreeNodeRecursion;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion_anonymity::datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, PhysicalExpr, PlanProperties,
};

/// See module docs.
#[derive(Debug)]
pub struct LeafExec {
    plan: Arc<dyn ExecutionPlan>,
    /// the context to run `plan` with; `None`: the executing query's own
    task_ctx: Option<Arc<TaskContext>>,
    properties: Arc<PlanProperties>,
    /// the node's name in `EXPLAIN`
    name: &'static str,
    /// what `EXPLAIN` says of it
    description: &'static str,
}

impl LeafExec {
    /// The session's own scan (`plan`), run with the executing query's context.
    pub fn held(plan: Arc<dyn ExecutionPlan>) -> Self {
        Self::new(plan, None, "HeldExec", "the session's own scan")
    }

    /// `plan`, planned by this library, run with `task_ctx`.
    pub fn own_session(plan: Arc<dyn ExecutionPlan>, task_ctx: Arc<TaskContext>) -> Self {
        Self::new(
            plan,
            Some(task_ctx),
            "OwnSessionExec",
            "planned by datafusion-anonymity",
        )
    }

    fn new(
        plan: Arc<dyn ExecutionPlan>,
        task_ctx: Option<Arc<TaskContext>>,
        name: &'static str,
        description: &'static str,
    ) -> Self {
        let properties = Arc::clone(plan.properties());
        Self {
            plan,
            task_ctx,
            properties,
            name,
            description,
        }
    }
}

impl DisplayAs for LeafExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}: {}", self.name, self.description)
    }
}

impl ExecutionPlan for LeafExec {
    fn name(&self) -> &str {
        self.name
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
            Err(DataFusionError::Internal(format!(
                "{} is a leaf: it takes no children",
                self.name
            )))
        }
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let context = self.task_ctx.clone().unwrap_or(context);
        self.plan.execute(partition, context)
    }
}
