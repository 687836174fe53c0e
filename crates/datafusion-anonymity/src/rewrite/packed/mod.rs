//! [`PackedAggregation`]: `GROUP BY` over low-cardinality keys counted by packed keys.
//!
//! The usual quasi-identifiers are integers, dates, and short text or dictionaries with few
//! values. For those, DataFusion's hash aggregation (hashing every row's keys, comparing them
//! with the stored groups') does more than needed: this rule runs the same aggregation as a
//! [`PackedAggregateExec`], whose [`PackedGroups`](groups::PackedGroups) code each key
//! column's values densely and find a row's class by its codes packed into one word — an
//! index into a flat array of
//! classes when the codes need at most [`groups::FLAT_BITS`] bits together, else a
//! [`DirectTable`](crate::packing::direct_table::DirectTable) lookup. The aggregates' own
//! accumulators then run exactly as in DataFusion's aggregation (`count(*)` for
//! `k_anonymity()`, the histograms of l, t, β, δ…), so values are unchanged.
//!
//! Plan before and after, for `GROUP BY zip, age, sex` with `k_anonymity()` on two partitions:
//! ```text
//! before: AggregateExec(FinalPartitioned) ← RepartitionExec(hash) ← AggregateExec(Partial) ← scan
//! after:  PackedAggregateExec(FinalPartitioned) ← RepartitionExec(hash) ← PackedAggregateExec(Partial) ← scan
//! ```
//! (the final one codes the partial classes' keys the same way and merges their states with
//! the accumulators' `merge_batch`)
//! and, with a per-row log in the query (see [`super::SinglePhaseAggregation`]), the
//! `SinglePartitioned` aggregation itself.
//!
//! Applied to partial, final, single and their partitioned aggregations whose keys are all of a
//! [`groups::packable`] type (not floats, decimals, binary or nested types), without
//! GROUPING SETS, DISTINCT or ordered aggregates, whose aggregates all have a groups
//! accumulator. At run time it falls back to DataFusion's aggregation (the `fallback`
//! metric of `EXPLAIN ANALYZE` counts the partitions) when the memory pool refuses its
//! first megabyte or, for a single- or final-mode aggregation, when the pool has a limit at all
//! (DataFusion's aggregation spills; this kernel does not: a partial one emits its classes
//! early instead, as DataFusion's does). When the packed keys and class numbers outgrow 64
//! bits, the classes found so far are handed to DataFusion's group table, which goes on with
//! them (the `hashed` metric). Off with `SET anonymity.packed_aggregation = false`.

mod exec;
pub mod groups;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};

pub use exec::PackedAggregateExec;
use groups::packable;

/// The physical optimizer rule (see module docs).
#[derive(Debug, Default)]
pub struct PackedAggregation;

impl PackedAggregation {
    /// The rule, taking over only the aggregations `eligible` accepts besides: a host whose
    /// plans hold functions the kernel must not run (datafusion-python's, which cross the
    /// FFI, see the Python package's planner) leaves those aggregations to DataFusion.
    pub fn optimize_where(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
        eligible: impl Fn(&AggregateExec) -> bool,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        super::replace_nodes(
            plan,
            config,
            |options| options.packed_aggregation,
            true,
            |plan| match plan.downcast_ref::<AggregateExec>() {
                Some(aggregate) if eligible(aggregate) => packed(plan),
                _ => Ok(None),
            },
        )
    }
}

impl PhysicalOptimizerRule for PackedAggregation {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.optimize_where(plan, config, |_| true)
    }

    fn name(&self) -> &str {
        "anonymity_packed_aggregation"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The kernel in place of `plan`, when it is an aggregation the kernel runs.
fn packed(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(aggregate) = plan.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    let group_by = aggregate.group_expr();
    let input_schema = aggregate.input().schema();
    let eligible = matches!(
        aggregate.mode(),
        AggregateMode::Partial
            | AggregateMode::Single
            | AggregateMode::SinglePartitioned
            | AggregateMode::Final
            | AggregateMode::FinalPartitioned
    ) && !group_by.is_empty()
        && !group_by.has_grouping_set()
        && *aggregate.input_order_mode() == InputOrderMode::Linear
        && aggregate.limit_options().is_none()
        && aggregate.dynamic_expressions_produced().is_empty()
        && aggregate.aggr_expr().iter().all(|a| {
            !a.is_distinct() && a.order_bys().is_empty() && a.groups_accumulator_supported()
        });
    if !eligible {
        return Ok(None);
    }
    for key in group_by.input_exprs() {
        if !packable(&key.data_type(&input_schema)?) {
            return Ok(None);
        }
    }
    Ok(Some(Arc::new(PackedAggregateExec::try_new(
        aggregate,
        Arc::clone(plan),
    )?)))
}
