//! [`SinglePhaseAggregation`]: grouping rows into classes in one phase when the class states
//! are as large as the rows.
//!
//! DataFusion plans a `GROUP BY` as a partial aggregation in each input partition, a hash
//! repartition of the partial states by the grouping keys, and a final aggregation that merges
//! them. That pays when partial aggregation shrinks the data: a count per class is one number
//! however many rows the class has. The per-row logs of this crate's functions do not shrink:
//! a class's persons or incomes are nearly all distinct, so the partial states carry every row
//! again, sorted, as lists — serialized by the partial aggregation, moved, then parsed and
//! sorted again by the final one. With such an aggregate in the query, the rule repartitions the
//! input rows by the grouping keys instead and aggregates each partition once
//! (`SinglePartitioned`), which is what DataFusion itself does when the input is already
//! partitioned by the keys. On 10M rows in 523,269 classes, all functions together took 1.02 s
//! instead of 1.37 s (BENCHMARKS.md).
//!
//! Off with `SET anonymity.single_phase_aggregation = false`. Not applied when the key types
//! alone allow only a few classes (booleans, bytes), where partial aggregation keeps every core
//! busy, nor when the aggregation needs its input in an order (an ordered aggregate such as
//! `array_agg(x ORDER BY y)`, or streaming over input sorted by the keys) that repartitioning
//! would lose.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode, Partitioning, PhysicalExpr};

/// Aggregates whose state keeps a log of the rows' values (persons, sensitive values).
fn keeps_row_log(name: &str, arguments: usize) -> bool {
    match name {
        // k_anonymity() is a count; k_anonymity(person) a set of persons
        "k_anonymity" | "reidentification_risk" => arguments > 0,
        "l_diversity"
        | "entropy_l_diversity"
        | "recursive_cl_diversity"
        | "t_closeness"
        | "t_closeness_ordered"
        | "__anon_sa_histogram" => true,
        _ => false,
    }
}

/// Whether the key types alone bound the classes to a few (booleans, bytes): hashing so few
/// classes to partitions would leave most cores idle, while partial aggregation keeps them all
/// busy and its states stay small.
fn few_classes(keys: &[Arc<dyn PhysicalExpr>], schema: &Schema) -> Result<bool> {
    const FEW: u64 = 1024;
    let mut bound: u64 = 1;
    for key in keys {
        // values of the type, plus NULL
        let values = match key.data_type(schema)? {
            DataType::Boolean => 3,
            DataType::Int8 | DataType::UInt8 => 257,
            _ => return Ok(false),
        };
        bound = bound.saturating_mul(values);
    }
    Ok(bound <= FEW)
}

/// The physical optimizer rule (see module docs).
#[derive(Debug, Default)]
pub struct SinglePhaseAggregation;

impl PhysicalOptimizerRule for SinglePhaseAggregation {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        super::replace_nodes(
            plan,
            config,
            |options| options.single_phase_aggregation,
            false,
            single_phase,
        )
    }

    fn name(&self) -> &str {
        "anonymity_single_phase_aggregation"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `FinalPartitioned ← Repartition(Hash) ← Partial ← input` as
/// `SinglePartitioned ← Repartition(Hash of the keys over input) ← input`, when the partial
/// aggregation keeps a row log — unless it streams over input sorted by the keys or has an
/// ordered aggregate (a repartition would shuffle the order either needs) or the keys allow
/// only a few classes.
fn single_phase(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(last) = plan.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    if *last.mode() != AggregateMode::FinalPartitioned {
        return Ok(None);
    }
    let Some(repartition) = last.input().downcast_ref::<RepartitionExec>() else {
        return Ok(None);
    };
    let Partitioning::Hash(_, partitions) = repartition.partitioning() else {
        return Ok(None);
    };
    let Some(first) = repartition.input().downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    let group_by = first.group_expr();
    if *first.mode() != AggregateMode::Partial
        || repartition.preserve_order()
        || *first.input_order_mode() != InputOrderMode::Linear
        || group_by.has_grouping_set()
        || group_by.is_empty()
        // an ordered aggregate (`array_agg(x ORDER BY y)`) needs its input sorted, which the
        // partial aggregation's input already is and a repartition of it would not be
        || first.aggr_expr().iter().any(|a| !a.order_bys().is_empty())
        || !first
            .aggr_expr()
            .iter()
            .any(|a| keeps_row_log(a.fun().name(), a.expressions().len()))
    {
        return Ok(None);
    }
    let keys = group_by.input_exprs();
    if few_classes(&keys, &first.input_schema())? {
        return Ok(None);
    }
    let rows = Arc::new(RepartitionExec::try_new(
        Arc::clone(first.input()),
        Partitioning::Hash(keys, *partitions),
    )?);
    let single = AggregateExec::try_new(
        AggregateMode::SinglePartitioned,
        group_by.clone(),
        first.aggr_expr().to_vec(),
        first.filter_expr().to_vec(),
        rows,
        first.input_schema(),
    )?
    .with_limit_options(last.limit_options());
    Ok(Some(Arc::new(single)))
}
