//! Whole-table statistics for per-class functions: an analyzer rule rewriting
//! `Aggregate` into `Aggregate -> Window(OVER ()) -> Projection`.
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::{LogicalPlan, WindowUDF};
use datafusion::optimizer::AnalyzerRule;

/// Window functions that finalize whole-table aggregates.
pub fn all_window_functions() -> Vec<Arc<WindowUDF>> {
    vec![]
}

/// The analyzer rule (see module docs).
#[derive(Debug, Default)]
pub struct WholeTableRewrite {}

impl WholeTableRewrite {
    pub fn new() -> Self {
        Self {}
    }
}

impl AnalyzerRule for WholeTableRewrite {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        Ok(plan)
    }
    fn name(&self) -> &str {
        "anonymity_whole_table_rewrite"
    }
}
