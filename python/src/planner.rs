//! The query planner that brings the crate's rewrite to a datafusion-python session.
//!
//! datafusion-ffi carries neither analyzer rules nor `AggregateUDFImpl::simplify`, so the
//! rewrite the Rust session runs as an analyzer rule cannot be installed as one. A session's
//! *query planner* does cross (datafusion-ffi 55.2's `FFI_QueryPlanner`, installed by
//! datafusion-python 55's `SessionContext.set_query_planner` or an extension bundle's
//! `__datafusion_session_planner__` hook): it receives every optimized logical plan of the
//! session. [`AnonymityPlanner`] wraps the planner the session had (its *fallback*), and for
//! each plan
//! 1. replaces the [`Guarded`] wrappers by the functions themselves (the rewrite recognises
//!    these);
//! 2. turns a zero-argument `k_anonymity()` / `reidentification_risk()` into its row count
//!    (their `simplify`, which does not cross the FFI). It cannot be counted without that,
//!    even grouped: DataFusion 55 may skip a partial aggregation that does not shrink the
//!    rows and then asks every groups accumulator to turn a batch into states
//!    (`GroupsAccumulator::convert_to_state`, with no way to opt out), passing only the
//!    argument values, none here, so the batch's row count is unknown;
//! 3. runs [`WholeTableRewrite`], which is what the whole-table functions need;
//! 4. hands the plan to the fallback planner, datafusion-python's own unless the user
//!    installed another before, which plans it with the session's tables, functions, options
//!    and physical rules;
//! 5. applies [`SinglePhaseAggregation`] and then [`PackedAggregation`] to the physical plan,
//!    as the Rust session does (there, as physical optimizer rules in the same order), except
//!    to an aggregation whose own expressions call a function of the session: DataFusion's
//!    built-ins reach this library as foreign functions, which datafusion-ffi calls with every
//!    argument as an array (`date_part('year', d)` would fail), so such an aggregation stays
//!    DataFusion's and runs in the session. Installing the planner never changes the result
//!    of a query that uses none of the crate's functions.
//!
//! The plan crosses the FFI serialized (datafusion-proto, with the session's codecs), so the
//! functions the rewrite inserts are found by name in the session: `register()` registers
//! them there with the user-facing ones.

use std::any::Any;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion_anonymity::datafusion::catalog::Session;
use datafusion_anonymity::datafusion::common::config::ConfigOptions;
use datafusion_anonymity::datafusion::common::format::ExplainFormat;
use datafusion_anonymity::datafusion::common::tree_node::TreeNodeRecursion;
use datafusion_anonymity::datafusion::common::tree_node::{
    Transformed, TransformedResult, TreeNode,
};
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::execution::context::QueryPlanner;
use datafusion_anonymity::datafusion::logical_expr::expr::{AggregateFunction, WindowFunction};
use datafusion_anonymity::datafusion::logical_expr::simplify::SimplifyContext;
use datafusion_anonymity::datafusion::logical_expr::{Explain, PlanType, StringifiedPlan};
use datafusion_anonymity::datafusion::logical_expr::{Expr, LogicalPlan, WindowFunctionDefinition};
use datafusion_anonymity::datafusion::optimizer::AnalyzerRule;
use datafusion_anonymity::datafusion::physical_expr::ScalarFunctionExpr;
use datafusion_anonymity::datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion_anonymity::datafusion::physical_plan::aggregates::AggregateExec;
use datafusion_anonymity::datafusion::physical_plan::explain::ExplainExec;
use datafusion_anonymity::datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion_anonymity::functions::whole_table::WholeTableFunction;
use datafusion_anonymity::rewrite::{PackedAggregation, SinglePhaseAggregation, WholeTableRewrite};

use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::query_planner::{FFI_QueryPlanner, ForeignQueryPlanner};
use datafusion_ffi::udf::ForeignScalarUDF;

use crate::functions::Guarded;
use datafusion_anonymity::options::AnonymityOptions;

/// The planner (see module docs).
#[derive(Debug)]
pub struct AnonymityPlanner {
    fallback: Arc<dyn QueryPlanner + Send + Sync>,
    /// The crate's options (`anonymity.*`) for sessions that do not carry them: a
    /// datafusion-python session knows no `anonymity` namespace (config extensions do not
    /// cross the FFI), so `register(ctx, options=...)` hands them to the planner instead.
    options: AnonymityOptions,
}

impl AnonymityPlanner {
    /// A planner wrapping `fallback`, exchanging plans with it through `logical` and
    /// `physical` (the session's codecs extended by [`crate::codec`]).
    pub fn new(
        fallback: Arc<dyn QueryPlanner + Send + Sync>,
        logical: FFI_LogicalExtensionCodec,
        physical: FFI_PhysicalExtensionCodec,
        options: AnonymityOptions,
    ) -> Self {
        let any: &dyn Any = fallback.as_ref();
        let fallback = if any.is::<ForeignQueryPlanner>() {
            // the same foreign planner, reached with these codecs instead of its own
            let rebound = FFI_QueryPlanner::new_with_ffi_codecs(fallback, logical, physical);
            Arc::new(ForeignQueryPlanner(rebound)) as Arc<dyn QueryPlanner + Send + Sync>
        } else {
            fallback
        };
        Self { fallback, options }
    }

    /// The planner `planner` wraps, when it is this library's (so that installing it again,
    /// with other options, replaces the layer instead of adding one).
    pub fn inner(
        planner: &Arc<dyn QueryPlanner + Send + Sync>,
    ) -> Option<Arc<dyn QueryPlanner + Send + Sync>> {
        let any: &dyn Any = planner.as_ref();
        any.downcast_ref::<AnonymityPlanner>()
            .map(|ours| Arc::clone(&ours.fallback))
    }

    /// How many of this library's planners are nested at the top of `planner` (as far as
    /// this library can see: a foreign planner in between hides the rest).
    pub fn layers(planner: &(dyn QueryPlanner + Send + Sync)) -> usize {
        let any: &dyn Any = planner;
        match any.downcast_ref::<AnonymityPlanner>() {
            Some(ours) => 1 + Self::layers(ours.fallback.as_ref()),
            None => 0,
        }
    }
}

#[async_trait]
impl QueryPlanner for AnonymityPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let session_config = session.config_options();
        let with_options;
        let config = if session_config
            .extensions
            .get::<AnonymityOptions>()
            .is_some()
        {
            session_config
        } else {
            let mut config = session_config.clone();
            config.extensions.insert(self.options.clone());
            with_options = config;
            &with_options
        };
        if let LogicalPlan::Explain(explain) = logical_plan {
            return self.explain(explain, config, session).await;
        }
        let plan = rewrite(logical_plan.clone(), config)?;
        let physical = self.fallback.create_physical_plan(&plan, session).await?;
        let physical = SinglePhaseAggregation.optimize(physical, config)?;
        PackedAggregation.optimize_where(physical, config, |aggregate| {
            !calls_foreign_scalar_function(aggregate)
        })
    }
}

impl AnonymityPlanner {
    /// `EXPLAIN`: the plan reaches this planner through DataFusion's FFI, whose encoding of an
    /// `Explain` node keeps its input and options but not the plans the session stringified,
    /// and whose physical planner would show only the initial logical plan. So the input is
    /// planned here (rewritten, planned by the fallback, the kernels placed) and shown as
    /// DataFusion shows it: the final logical plan (after the rewrite) and the physical plan
    /// (`indent`, the default), or the physical plan alone as a tree (`tree`).
    async fn explain(
        &self,
        explain: &Explain,
        config: &ConfigOptions,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let input = explain.plan.as_ref();
        let physical = self.create_physical_plan(input, session).await?;
        let shown = displayable(physical.as_ref());
        let plans = match explain.explain_format {
            ExplainFormat::Tree => vec![StringifiedPlan::new(
                PlanType::FinalPhysicalPlan,
                shown.tree_render().to_string(),
            )],
            _ => vec![
                StringifiedPlan::new(
                    PlanType::FinalLogicalPlan,
                    rewrite(input.clone(), config)?.display_indent().to_string(),
                ),
                StringifiedPlan::new(
                    PlanType::FinalPhysicalPlan,
                    shown.indent(explain.verbose).to_string(),
                ),
            ],
        };
        Ok(Arc::new(ExplainExec::new(
            Arc::clone(explain.schema.inner()),
            plans,
            explain.verbose,
        )))
    }
}

/// Whether an expression of `aggregate` itself (a key, an aggregate's argument or filter)
/// calls a scalar function of the session (DataFusion's own, or the user's): such a function
/// reaches this library as a foreign one, which datafusion-ffi calls with every argument
/// turned into an array, so `date_part('year', d)` would no longer see its literal 'year'.
/// The kernel would run these expressions here; DataFusion's aggregation, left in place, runs
/// them in the session natively. (The nodes below are the session's own: [`crate::codec`]
/// hands a held node the children the session decoded.)
fn calls_foreign_scalar_function(aggregate: &AggregateExec) -> bool {
    let mut foreign = false;
    let _ = aggregate.apply_expressions(&mut |expr| {
        expr.apply(|e| {
            if let Some(call) = e.downcast_ref::<ScalarFunctionExpr>()
                && call.fun().inner().is::<ForeignScalarUDF>()
            {
                foreign = true;
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        })
    });
    foreign
}

/// Steps 1 to 3 of the module docs.
pub fn rewrite(plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
    let plan = plan
        .transform_up_with_subqueries(|node| {
            node.map_expressions(|expr| expr.transform_up(unguard))
        })
        .data()?;
    refuse_windows(&plan)?;
    WholeTableRewrite::new().analyze(plan, config)
}

/// A call of a [`Guarded`] function as a call of the function itself; a zero-argument call
/// simplified to its row count (aliased to its own name, which the plan's schema keeps).
fn unguard(expr: Expr) -> Result<Transformed<Expr>> {
    let Expr::AggregateFunction(call) = expr else {
        return Ok(Transformed::no(expr));
    };
    let Some(guarded) = call.func.inner().downcast_ref::<Guarded>() else {
        return Ok(Transformed::no(Expr::AggregateFunction(call)));
    };
    let func = guarded.function();
    if call.params.args.is_empty()
        && let Some(simplify) = func.simplify()
    {
        let name = Expr::AggregateFunction(call.clone())
            .schema_name()
            .to_string();
        let call = AggregateFunction {
            func,
            params: call.params,
        };
        return Ok(Transformed::yes(
            simplify(call, &SimplifyContext::default())?.alias(name),
        ));
    }
    Ok(Transformed::yes(Expr::AggregateFunction(
        AggregateFunction {
            func,
            params: call.params,
        },
    )))
}

/// A whole-table function called as a window function compares nothing the rewrite could
/// compute: refused with that reason (rather than the missing-planner message the function
/// would give when executed).
fn refuse_windows(plan: &LogicalPlan) -> Result<()> {
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|expr| {
                if let Expr::WindowFunction(window) = expr {
                    let WindowFunction { fun, .. } = window.as_ref();
                    if let WindowFunctionDefinition::AggregateUDF(udaf) = fun {
                        let inner = match udaf.inner().downcast_ref::<Guarded>() {
                            Some(guarded) => guarded.function(),
                            None => Arc::clone(udaf),
                        };
                        if inner.inner().is::<WholeTableFunction>() {
                            return Err(DataFusionError::Plan(format!(
                                "{} compares each GROUP BY class with the whole table: call \
                                 it as an aggregate over GROUP BY, not as a window function",
                                inner.name()
                            )));
                        }
                    }
                }
                Ok(datafusion_anonymity::datafusion::common::tree_node::TreeNodeRecursion::Continue)
            })
        })
    })
    .map(|_| ())
}
