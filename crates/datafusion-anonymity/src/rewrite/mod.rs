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
//! Several whole-table functions of one histogram (`t_closeness`, `t_closeness_ordered`,
//! `beta_likeness`, `enhanced_beta_likeness`, `delta_disclosure`) are finalized by one window
//! function (`__anon_histogram_final`), which interns the table's values once for all of them.
//!
//! `ncp` over `GROUP BY` expressions only (and without `FILTER`) is 0 in every class: it reads
//! the class's row count below instead of a state and a window of its own.
//!
//! Two more pairs share one state per class:
//! - the class's rows: `k_anonymity()`, `reidentification_risk()` and `entropy_leakage()` of
//!   one `FILTER` read one `count(1)` (k is the count, the risk `1 / count` — NULL for a class
//!   the filter empties, as the function's own accumulator gives —, the leakage its
//!   finalizer over the counts);
//! - the class's persons: `k_anonymity(p)` and `reidentification_risk(p)` of one attribute
//!   and `FILTER` (and nothing else needing its histogram) read one `k_anonymity(p)`, the risk
//!   being `1 / persons` (NULL for no person).
//!
//! Each shared value is computed by the same accumulator and the same arithmetic as the
//! function alone (`crates/datafusion-anonymity/tests/sql/against_reference.rs` checks the values of every function alone
//! against the query with all of them).

mod finalizer;
mod histogram_measure;
pub mod packed;
mod single_phase;

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNode as _;
use datafusion::common::tree_node::{Transformed, TransformedResult};
use datafusion::common::{Column, DataFusionError, ScalarValue};
use datafusion::error::Result;
use datafusion::functions::core::expr_fn::get_field;
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    Aggregate, Expr, ExprSchemable, LogicalPlan, Projection, ScalarUDF, Window, WindowUDF, cast,
    col, lit, when,
};
use datafusion::optimizer::AnalyzerRule;
use datafusion::physical_plan::ExecutionPlan;

use crate::functions::class_distribution::{ClassDistributionFunction, Kind};
use crate::functions::histogram::HistogramOutput;
use crate::functions::k_anonymity::k_anonymity_udaf;
use crate::functions::whole_table::{WholeTableFunction, WholeTableKind};
use crate::options::AnonymityOptions;
pub use finalizer::{HISTOGRAM_FINALIZED, finalizer_udwf, histogram_finalizer_udwf};
pub use histogram_measure::histogram_measure_udf;
pub use packed::PackedAggregation;
pub use single_phase::SinglePhaseAggregation;

/// `plan` with each node `replace` gives a replacement for, visited bottom-up or top-down,
/// unless the session's [`AnonymityOptions`] turn the rewrite off (`enabled`; on when the
/// options are not registered): the shared body of this module's physical optimizer rules.
pub(crate) fn replace_nodes(
    plan: Arc<dyn ExecutionPlan>,
    config: &ConfigOptions,
    enabled: impl Fn(&AnonymityOptions) -> bool,
    bottom_up: bool,
    replace: impl Fn(&Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>>,
) -> Result<Arc<dyn ExecutionPlan>> {
    if !config
        .extensions
        .get::<AnonymityOptions>()
        .is_none_or(enabled)
    {
        return Ok(plan);
    }
    let visit = |plan: Arc<dyn ExecutionPlan>| {
        Ok(match replace(&plan)? {
            Some(replaced) => Transformed::yes(replaced),
            None => Transformed::no(plan),
        })
    };
    if bottom_up {
        plan.transform_up(visit).data()
    } else {
        plan.transform_down(visit).data()
    }
}

/// The window functions that finalize whole-table aggregates.
pub fn all_window_functions() -> Vec<Arc<WindowUDF>> {
    let mut all: Vec<_> = WholeTableKind::ALL
        .into_iter()
        .map(finalizer_udwf)
        .collect();
    all.push(histogram_finalizer_udwf());
    all
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
    /// a function of the class's rows, sharing the count of the `FILTER` number `.1`
    Rows(RowsUse, usize),
    /// persons or person risk, sharing the persons of the histogram key number `.1`
    Persons(HistogramOutput, usize),
}

/// What a function of the class's rows reads off their count.
#[derive(Clone, Copy, PartialEq)]
enum RowsUse {
    /// `k_anonymity()`: the count
    Count,
    /// `reidentification_risk()`: 1 / count
    Risk,
    /// `entropy_leakage()`: finalized from all classes' counts
    Leakage,
    /// `ncp` over `GROUP BY` expressions only, without `FILTER`: 0 in every class (see
    /// [`spreads_nothing`])
    NoSpread,
}

/// A call counting the class's rows (`k_anonymity()`, `reidentification_risk()`,
/// `entropy_leakage()`), with its use.
fn rows_call(expr: &Expr) -> Option<(RowsUse, &AggregateFunction)> {
    if let Some((WholeTableKind::EntropyLeakage, call)) = whole_table_call(expr) {
        return (!call.params.distinct && call.params.args.is_empty())
            .then_some((RowsUse::Leakage, call));
    }
    let call = aggregate_call(expr)?;
    if call.params.distinct || !call.params.args.is_empty() {
        return None;
    }
    let function = call
        .func
        .inner()
        .downcast_ref::<ClassDistributionFunction>()?;
    match function.kind() {
        Kind::Persons => Some((RowsUse::Count, call)),
        Kind::PersonRisk => Some((RowsUse::Risk, call)),
        _ => None,
    }
}

/// `1 / n` of a count `n`, NULL where `n` is 0 (a class its FILTER empties): the risk the
/// functions' own accumulators give.
fn inverse_or_null(count: Expr) -> Result<Expr> {
    when(
        count.clone().gt(lit(0i64)),
        lit(1.0f64) / cast(count, DataType::Float64),
    )
    .end()
}

/// Index of `key` in `keys`, added if new, with one more user counted.
fn key_index<K: PartialEq>(keys: &mut Vec<K>, users: &mut Vec<usize>, key: K) -> usize {
    let index = match keys.iter().position(|k| *k == key) {
        Some(index) => index,
        None => {
            keys.push(key);
            users.push(0);
            keys.len() - 1
        }
    };
    users[index] += 1;
    index
}

#[derive(Clone, Copy)]
enum HistogramUse {
    Window(WholeTableKind),
    Measure(HistogramOutput),
}

/// The aggregate function called by an aggregate expression (looking through an alias).
fn aggregate_call(expr: &Expr) -> Option<&AggregateFunction> {
    match unaliased(expr) {
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

/// `expr` without its alias.
fn unaliased(expr: &Expr) -> &Expr {
    match expr {
        Expr::Alias(alias) => alias.expr.as_ref(),
        other => other,
    }
}

/// Whether `arg` is one of the aggregate's `GROUP BY` expressions: one value per class.
fn is_group_key(arg: &Expr, aggregate: &Aggregate) -> bool {
    let arg = unaliased(arg);
    aggregate.group_expr.iter().any(|g| unaliased(g) == arg)
}

/// An `ncp` attribute that is also a `GROUP BY` expression has one value per class, so its
/// spread is 0 in every class, whatever the table: it is replaced by a NULL of its type, which
/// `ncp` ignores (spread 0 too) and which costs nothing to aggregate, instead of a histogram of
/// the attribute. The attribute still counts in the mean over the attributes.
fn constant_attributes_as_null(args: &mut [Expr], aggregate: &Aggregate) -> Result<()> {
    let schema = aggregate.input.schema();
    for arg in args.iter_mut() {
        if is_group_key(arg, aggregate) {
            let null = ScalarValue::try_new_null(&unaliased(arg).get_type(schema)?)?;
            *arg = lit(null);
        }
    }
    Ok(())
}

/// Whether an `ncp` call is 0 in every class without looking at the rows: every attribute is
/// a `GROUP BY` expression (each spread is 0, see [`constant_attributes_as_null`]) and there
/// is no `FILTER`, so every class has rows and the table is not empty (the cases where `ncp`
/// is NULL). It then reads the class's row count instead of a state of its own and a window.
fn spreads_nothing(call: &AggregateFunction, aggregate: &Aggregate) -> bool {
    call.params.filter.is_none()
        && !call.params.args.is_empty()
        && call
            .params
            .args
            .iter()
            .all(|arg| is_group_key(arg, aggregate))
}

fn rewrite_aggregate(plan: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Aggregate(aggregate) = &plan else {
        return Ok(Transformed::no(plan));
    };

    // histograms keyed by (attribute, filter), and how many calls use each
    let mut keys: Vec<(Expr, Option<Box<Expr>>)> = Vec::new();
    let mut users: Vec<usize> = Vec::new();
    // row counts keyed by filter, and how many calls use each
    let mut rows_keys: Vec<Option<Box<Expr>>> = Vec::new();
    let mut rows_users: Vec<usize> = Vec::new();
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
            let index = key_index(&mut keys, &mut users, key);
            if matches!(usage, HistogramUse::Window(_)) {
                any_window = true;
                whole_table_function.get_or_insert_with(|| call.func.name().to_string());
            }
            roles.push(Role::Histogram(usage, index));
        } else if let Some((usage, call)) = rows_call(expr) {
            let index = key_index(&mut rows_keys, &mut rows_users, call.params.filter.clone());
            if usage == RowsUse::Leakage {
                any_window = true;
                whole_table_function.get_or_insert_with(|| call.func.name().to_string());
            }
            roles.push(Role::Rows(usage, index));
        } else if let Some((kind, call)) = whole_table_call(expr) {
            if call.params.distinct {
                return Err(DataFusionError::Plan(format!(
                    "{} does not support DISTINCT",
                    call.func.name()
                )));
            }
            if kind == WholeTableKind::Ncp && spreads_nothing(call, aggregate) {
                let index = key_index(&mut rows_keys, &mut rows_users, None);
                roles.push(Role::Rows(RowsUse::NoSpread, index));
                continue;
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
        match *role {
            Role::Histogram(HistogramUse::Measure(_), index) if users[index] < 2 => {
                *role = Role::Keep;
            }
            // persons and person risk of one attribute share its persons instead
            Role::Histogram(HistogramUse::Measure(output), index) if !needs_histogram[index] => {
                *role = Role::Persons(output, index);
            }
            // a count alone keeps its own accumulator
            Role::Rows(usage, index) if rows_users[index] < 2 => {
                *role = match usage {
                    RowsUse::Leakage => Role::OwnState(WholeTableKind::EntropyLeakage),
                    RowsUse::Count | RowsUse::Risk => Role::Keep,
                    // a count is cheaper than ncp's own state and window
                    RowsUse::NoSpread => Role::Rows(usage, index),
                };
            }
            _ => {}
        }
    }
    let shared = roles.iter().any(|r| {
        matches!(
            r,
            Role::Histogram(HistogramUse::Measure(_), _) | Role::Rows(..) | Role::Persons(..)
        )
    });
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
    let rows_column = |index: usize| format!("__anon_rows_{index}");
    let persons_column = |index: usize| format!("__anon_persons_{index}");
    let finals_column = |index: usize| format!("__anon_histogram_final_{index}");
    let mut class_aggregates = Vec::with_capacity(aggregate.aggr_expr.len());
    let mut histogram_needed = vec![false; keys.len()];
    let mut persons_needed = vec![false; keys.len()];
    let mut rows_needed = vec![false; rows_keys.len()];
    // per histogram, the bit mask of its whole-table functions (see `HISTOGRAM_FINALIZED`)
    let mut windows = vec![0i64; keys.len()];
    for (expr, role) in aggregate.aggr_expr.iter().zip(&roles) {
        match role {
            Role::Keep => class_aggregates.push(expr.clone()),
            Role::Histogram(usage, index) => {
                histogram_needed[*index] = true;
                if let HistogramUse::Window(kind) = usage
                    && let Some(bit) = HISTOGRAM_FINALIZED.iter().position(|k| k == kind)
                {
                    windows[*index] |= 1 << bit;
                }
            }
            Role::Rows(_, index) => rows_needed[*index] = true,
            Role::Persons(_, index) => persons_needed[*index] = true,
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
        if persons_needed[index] {
            class_aggregates.push(
                Expr::AggregateFunction(AggregateFunction::new_udf(
                    k_anonymity_udaf(),
                    vec![attribute.clone()],
                    false,
                    filter.clone(),
                    vec![],
                    None,
                ))
                .alias(persons_column(index)),
            );
        }
    }
    for (index, filter) in rows_keys.iter().enumerate() {
        if rows_needed[index] {
            class_aggregates.push(
                Expr::AggregateFunction(AggregateFunction::new_udf(
                    count_udaf(),
                    vec![lit(1i64)],
                    false,
                    filter.clone(),
                    vec![],
                    None,
                ))
                .alias(rows_column(index)),
            );
        }
    }
    let mut finalizers = Vec::new();
    // one finalizer for the whole-table functions of a histogram that has several
    let combined: Vec<bool> = windows.iter().map(|m| m.count_ones() >= 2).collect();
    for (index, &mask) in windows.iter().enumerate() {
        if combined[index] {
            finalizers.push(
                histogram_finalizer_udwf()
                    .call(vec![col(histogram_column(index)), lit(mask)])
                    .alias(finals_column(index)),
            );
        }
    }
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
            Role::Histogram(HistogramUse::Window(kind), index) if combined[*index] => {
                Some(get_field(col(finals_column(*index)), kind.function_name()))
            }
            Role::Rows(usage, index) => {
                let rows = col(rows_column(*index));
                Some(match usage {
                    RowsUse::Count => rows,
                    RowsUse::Risk => inverse_or_null(rows)?,
                    // every class has rows (no FILTER): 0, typed as ncp's nullable Float64
                    RowsUse::NoSpread => when(rows.gt(lit(0i64)), lit(0.0f64)).end()?,
                    RowsUse::Leakage => {
                        finalizers.push(
                            finalizer_udwf(WholeTableKind::EntropyLeakage)
                                .call(vec![rows])
                                .alias(&result),
                        );
                        col(result)
                    }
                })
            }
            Role::Persons(output, index) => {
                let persons = col(persons_column(*index));
                Some(match output {
                    HistogramOutput::PersonRisk => inverse_or_null(persons)?,
                    _ => persons,
                })
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
