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
//!
//! The same rule shares work between functions of one query that look at the same attribute:
//! `l_diversity(d)`, `entropy_l_diversity(d)`, `recursive_cl_diversity(d, c)`, `t_closeness(d)`
//! (and the person-based forms) all read the class histogram of `d`, so it is built once
//! (`__anon_sa_histogram(d)`) and each measure is read off it in the projection
//! (`__anon_histogram_measure`). A function alone on its attribute keeps its own accumulator.

mod finalizer;
mod histogram_measure;
mod single_phase;

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DataFusionError, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    Aggregate, Expr, ExprSchemable, LogicalPlan, Projection, ScalarUDF, Window, WindowUDF, cast,
    col, lit,
};
use datafusion::optimizer::AnalyzerRule;

use crate::functions::class_distribution::ClassDistributionFunction;
use crate::functions::histogram::HistogramOutput;
use crate::functions::whole_table::{WholeTableFunction, WholeTableKind};
pub use finalizer::finalizer_udwf;
pub use histogram_measure::histogram_measure_udf;
pub use single_phase::SinglePhaseAggregation;

/// The window functions that finalize whole-table aggregates.
pub fn all_window_functions() -> Vec<Arc<WindowUDF>> {
    WholeTableKind::ALL
        .into_iter()
        .map(finalizer_udwf)
        .collect()
}

/// Scalar functions the rewrite inserts.
pub fn all_scalar_functions() -> Vec<Arc<ScalarUDF>> {
    vec![histogram_measure_udf()]
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

/// What the rewrite does with one aggregate expression.
enum Role {
    /// left as it is
    Keep,
    /// a whole-table function over its own class state (`ncp`, `entropy_leakage`)
    OwnState(WholeTableKind),
    /// a function of the shared histogram number `.1`: t-closeness (finalized by a window)
    /// or a per-class measure (read in the projection)
    Histogram(HistogramUse, usize),
}

#[derive(Clone, Copy)]
enum HistogramUse {
    Window(WholeTableKind),
    Measure(HistogramOutput),
}

/// The aggregate function called by an aggregate expression (looking through an alias).
fn aggregate_call(expr: &Expr) -> Option<&AggregateFunction> {
    let expr = match expr {
        Expr::Alias(alias) => alias.expr.as_ref(),
        other => other,
    };
    match expr {
        Expr::AggregateFunction(call) => Some(call),
        _ => None,
    }
}

/// The whole-table function called by an aggregate expression, if any.
fn whole_table_call(expr: &Expr) -> Option<(WholeTableKind, &AggregateFunction)> {
    let call = aggregate_call(expr)?;
    let function = call.func.inner().downcast_ref::<WholeTableFunction>()?;
    Some((function.kind(), call))
}

/// A histogram-based call: its use and the (attribute, filter) its histogram is keyed by.
fn histogram_call(expr: &Expr) -> Option<(HistogramUse, &AggregateFunction)> {
    if let Some((kind, call)) = whole_table_call(expr) {
        return kind
            .reads_histogram()
            .then_some((HistogramUse::Window(kind), call));
    }
    let call = aggregate_call(expr)?;
    if call.params.distinct {
        return None;
    }
    let function = call
        .func
        .inner()
        .downcast_ref::<ClassDistributionFunction>()?;
    let output = function.shared_output(&call.params.args)?;
    Some((HistogramUse::Measure(output), call))
}

/// An `ncp` attribute that is also a `GROUP BY` expression has one value per class, so its
/// spread is 0 in every class, whatever the table: it is replaced by a NULL of its type, which
/// `ncp` ignores (spread 0 too) and which costs nothing to aggregate, instead of a histogram of
/// the attribute. The attribute still counts in the mean over the attributes.
fn constant_attributes_as_null(args: &mut [Expr], aggregate: &Aggregate) -> Result<()> {
    let schema = aggregate.input.schema();
    for arg in args.iter_mut() {
        let unaliased = match &*arg {
            Expr::Alias(alias) => alias.expr.as_ref(),
            other => other,
        };
        let is_group_key = aggregate.group_expr.iter().any(|g| {
            let g = match g {
                Expr::Alias(alias) => alias.expr.as_ref(),
                other => other,
            };
            g == unaliased
        });
        if is_group_key {
            let null = ScalarValue::try_new_null(&unaliased.get_type(schema)?)?;
            *arg = lit(null);
        }
    }
    Ok(())
}

fn rewrite_aggregate(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Aggregate(aggregate) = &plan else {
        return Ok(Transformed::no(plan));
    };

    // histograms keyed by (attribute, filter), and how many calls use each
    let mut keys: Vec<(Expr, Option<Box<Expr>>)> = Vec::new();
    let mut users: Vec<usize> = Vec::new();
    let mut roles: Vec<Role> = Vec::with_capacity(aggregate.aggr_expr.len());
    let mut any_window = false;
    // the first whole-table function of the query, named when the query cannot have one
    let mut whole_table_function: Option<String> = None;
    for expr in &aggregate.aggr_expr {
        if let Some((usage, call)) = histogram_call(expr) {
            if call.params.distinct {
                return Err(DataFusionError::Plan(format!(
                    "{} does not support DISTINCT",
                    call.func.name()
                )));
            }
            let key = (call.params.args[0].clone(), call.params.filter.clone());
            let index = match keys.iter().position(|k| *k == key) {
                Some(index) => index,
                None => {
                    keys.push(key);
                    users.push(0);
                    keys.len() - 1
                }
            };
            users[index] += 1;
            if matches!(usage, HistogramUse::Window(_)) {
                any_window = true;
                whole_table_function.get_or_insert_with(|| call.func.name().to_string());
            }
            roles.push(Role::Histogram(usage, index));
        } else if let Some((kind, call)) = whole_table_call(expr) {
            if call.params.distinct {
                return Err(DataFusionError::Plan(format!(
                    "{} does not support DISTINCT",
                    call.func.name()
                )));
            }
            any_window = true;
            whole_table_function.get_or_insert_with(|| call.func.name().to_string());
            roles.push(Role::OwnState(kind));
        } else {
            roles.push(Role::Keep);
        }
    }
    // a per-class measure alone on its attribute is computed directly by its own accumulator,
    // and so are persons and person risk when nothing else needs the attribute's histogram:
    // their distinct-value accumulator is much cheaper than a histogram of near-unique ids
    let mut needs_histogram = vec![false; keys.len()];
    for role in &roles {
        if let Role::Histogram(usage, index) = role
            && !matches!(
                usage,
                HistogramUse::Measure(
                    HistogramOutput::DistinctPersons | HistogramOutput::PersonRisk
                )
            )
        {
            needs_histogram[*index] = true;
        }
    }
    for role in roles.iter_mut() {
        if let Role::Histogram(HistogramUse::Measure(_), index) = role
            && (users[*index] < 2 || !needs_histogram[*index])
        {
            *role = Role::Keep;
        }
    }
    let shared = roles
        .iter()
        .any(|r| matches!(r, Role::Histogram(HistogramUse::Measure(_), _)));
    if !any_window && !shared {
        return Ok(Transformed::no(plan));
    }
    if aggregate
        .group_expr
        .iter()
        .any(|e| matches!(e, Expr::GroupingSet(_)))
    {
        if let Some(function) = whole_table_function {
            return Err(DataFusionError::Plan(format!(
                "{function} compares each class with the whole table, which is not supported \
                 with GROUPING SETS, ROLLUP or CUBE: run one query per grouping"
            )));
        }
        return Ok(Transformed::no(plan));
    }

    let histogram_column = |index: usize| format!("__anon_histogram_{index}");
    let mut class_aggregates = Vec::with_capacity(aggregate.aggr_expr.len());
    let mut histogram_needed = vec![false; keys.len()];
    for (expr, role) in aggregate.aggr_expr.iter().zip(&roles) {
        match role {
            Role::Keep => class_aggregates.push(expr.clone()),
            Role::Histogram(_, index) => histogram_needed[*index] = true,
            Role::OwnState(_) => {}
        }
    }
    for (index, (attribute, filter)) in keys.iter().enumerate() {
        if histogram_needed[index] {
            class_aggregates.push(
                WholeTableKind::TCloseness
                    .class_state(vec![attribute.clone()], filter.clone())
                    .alias(histogram_column(index)),
            );
        }
    }
    let mut finalizers = Vec::new();
    // per aggregate expression: the expression giving its final value, if rewritten
    let mut finals: Vec<Option<Expr>> = Vec::with_capacity(roles.len());
    for (i, (expr, role)) in aggregate.aggr_expr.iter().zip(&roles).enumerate() {
        let result = format!("__anon_final_{i}");
        finals.push(match role {
            Role::Keep => None,
            Role::OwnState(kind) => {
                let state = format!("__anon_state_{i}");
                let call = aggregate_call(expr).ok_or_else(|| {
                    DataFusionError::Internal("whole-table call lost its aggregate".into())
                })?;
                let mut args = call.params.args.clone();
                if *kind == WholeTableKind::Ncp {
                    constant_attributes_as_null(&mut args, aggregate)?;
                }
                class_aggregates.push(
                    kind.class_state(args, call.params.filter.clone())
                        .alias(&state),
                );
                finalizers.push(finalizer_udwf(*kind).call(vec![col(state)]).alias(&result));
                Some(col(result))
            }
            Role::Histogram(HistogramUse::Window(kind), index) => {
                finalizers.push(
                    finalizer_udwf(*kind)
                        .call(vec![col(histogram_column(*index))])
                        .alias(&result),
                );
                Some(col(result))
            }
            Role::Histogram(HistogramUse::Measure(output), index) => {
                let c = match output {
                    HistogramOutput::RecursiveL { c } => *c,
                    _ => 0.0,
                };
                let value = histogram_measure_udf().call(vec![
                    col(histogram_column(*index)),
                    lit(output.name()),
                    lit(c),
                ]);
                Some(if output.is_integer() {
                    cast(value, DataType::Int64)
                } else {
                    value
                })
            }
        });
    }

    let group_fields = aggregate.group_expr.len();
    let classes = LogicalPlan::Aggregate(Aggregate::try_new(
        Arc::clone(&aggregate.input),
        aggregate.group_expr.clone(),
        class_aggregates,
    )?);
    let input = if finalizers.is_empty() {
        classes
    } else {
        LogicalPlan::Window(Window::try_new(finalizers, Arc::new(classes))?)
    };
    let outputs = aggregate
        .schema
        .iter()
        .enumerate()
        .map(|(index, (qualifier, field))| {
            let final_value = index
                .checked_sub(group_fields)
                .and_then(|i| finals[i].clone());
            match final_value {
                Some(value) => value.alias_qualified(qualifier.cloned(), field.name()),
                None => Expr::Column(Column::from((qualifier, field))),
            }
        })
        .collect();
    let projection = Projection::try_new(outputs, Arc::new(input))?;
    Ok(Transformed::yes(LogicalPlan::Projection(projection)))
}
