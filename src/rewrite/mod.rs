//! Whole-table statistics for per-class functions, in one scan.
//!
//! `t_closeness`, `t_closeness_ordered`, `ncp` and `entropy_leakage` compare each class with the
//! whole table. [`WholeTableRewrite`], an analyzer rule, turns
//!
//! ```text
//! Aggregate: groupBy=[zip, age], aggr=[t_closeness(disease)]
//! ```
//! into
//! ```text
//! Projection: zip, age, __anon_final_0 AS "t_closeness(disease)"
//!   Window: __anon_t_closeness_final(__anon_state_0) OVER () AS __anon_final_0
//!     Aggregate: groupBy=[zip, age], aggr=[__anon_sa_histogram(disease) AS __anon_state_0]
//! ```
//! The aggregate computes each class's state in the usual partitioned hash aggregation; the
//! window runs over the grouped rows (one per class, not one per input row), derives the
//! table's statistics from all the states and finalizes every class. The output schema is the
//! original aggregate's, so everything above it (HAVING, ORDER BY, projections) is untouched.
//! Filters below the aggregate (`WHERE`) are below the window too, so "the whole table" is the
//! filtered input, and `GROUP BY` expressions work as they do for any aggregate.

mod finalizer;

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DataFusionError};
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Expr, LogicalPlan, Projection, Window, WindowUDF, col};
use datafusion::optimizer::AnalyzerRule;

use crate::functions::whole_table::{WholeTableFunction, WholeTableKind};
pub use finalizer::finalizer_udwf;

/// The window functions that finalize whole-table aggregates.
pub fn all_window_functions() -> Vec<Arc<WindowUDF>> {
    WholeTableKind::ALL
        .into_iter()
        .map(finalizer_udwf)
        .collect()
}

/// The analyzer rule (see module docs). Registered by [`crate::register`].
#[derive(Debug, Default)]
pub struct WholeTableRewrite {}

impl WholeTableRewrite {
    pub fn new() -> Self {
        Self {}
    }
}

impl AnalyzerRule for WholeTableRewrite {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up_with_subqueries(rewrite_aggregate).data()
    }

    fn name(&self) -> &str {
        "anonymity_whole_table_rewrite"
    }
}

/// The whole-table function called by an aggregate expression, if any.
fn whole_table_call(expr: &Expr) -> Option<(WholeTableKind, &AggregateFunction)> {
    let expr = match expr {
        Expr::Alias(alias) => alias.expr.as_ref(),
        other => other,
    };
    let Expr::AggregateFunction(call) = expr else {
        return None;
    };
    let function = call.func.inner().downcast_ref::<WholeTableFunction>()?;
    Some((function.kind(), call))
}

fn rewrite_aggregate(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Aggregate(aggregate) = &plan else {
        return Ok(Transformed::no(plan));
    };
    if !aggregate
        .aggr_expr
        .iter()
        .any(|e| whole_table_call(e).is_some())
    {
        return Ok(Transformed::no(plan));
    }
    if aggregate
        .group_expr
        .iter()
        .any(|e| matches!(e, Expr::GroupingSet(_)))
    {
        return Err(DataFusionError::Plan(
            "t_closeness, t_closeness_ordered, ncp and entropy_leakage are not supported with \
             GROUPING SETS, ROLLUP or CUBE: run one query per grouping"
                .into(),
        ));
    }

    let mut class_aggregates = Vec::with_capacity(aggregate.aggr_expr.len());
    let mut finalizers = Vec::new();
    // per aggregate expression: the window column holding its final value, if rewritten
    let mut final_columns: Vec<Option<String>> = Vec::with_capacity(aggregate.aggr_expr.len());
    for (i, expr) in aggregate.aggr_expr.iter().enumerate() {
        let Some((kind, call)) = whole_table_call(expr) else {
            class_aggregates.push(expr.clone());
            final_columns.push(None);
            continue;
        };
        if call.params.distinct {
            return Err(DataFusionError::Plan(format!(
                "{} does not support DISTINCT",
                call.func.name()
            )));
        }
        let state = format!("__anon_state_{i}");
        let result = format!("__anon_final_{i}");
        class_aggregates.push(
            kind.class_state(call.params.args.clone(), call.params.filter.clone())
                .alias(&state),
        );
        finalizers.push(finalizer_udwf(kind).call(vec![col(state)]).alias(&result));
        final_columns.push(Some(result));
    }

    let group_fields = aggregate.group_expr.len();
    let classes = Aggregate::try_new(
        Arc::clone(&aggregate.input),
        aggregate.group_expr.clone(),
        class_aggregates,
    )?;
    let window = Window::try_new(finalizers, Arc::new(LogicalPlan::Aggregate(classes)))?;
    let outputs = aggregate
        .schema
        .iter()
        .enumerate()
        .map(|(index, (qualifier, field))| {
            let final_column = index
                .checked_sub(group_fields)
                .and_then(|i| final_columns[i].as_ref());
            match final_column {
                Some(name) => col(name).alias_qualified(qualifier.cloned(), field.name()),
                None => Expr::Column(Column::from((qualifier, field))),
            }
        })
        .collect();
    let projection = Projection::try_new(outputs, Arc::new(LogicalPlan::Window(window)))?;
    Ok(Transformed::yes(LogicalPlan::Projection(projection)))
}
