//! The utility of a release, with every row paired with its own original.

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use crate::search::release::Release;

/// The utility of publishing `release` under `policy` (the profile's utility section), with
/// every row paired with its own original: the rows are recoded once more with their
/// original quasi-identifiers beside (`failing`, as [`super::PublishReport::failing_classes`], marks
/// the rows suppressed, which count as `*` whether the policy drops or masks them), held in
/// memory, and measured as `anon profile --original --by-position` would measure them.
/// Costs a scan of the input and the quasi-identifier and sensitive columns in memory.
pub async fn release_utility(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    release: &Release,
    failing: Option<Vec<RecordBatch>>,
) -> Result<crate::profile::Utility> {
    use crate::provider::{original_name, original_pairs_plan};
    let inner = ctx.table_provider(policy.table_name()).await?;
    let generalization = policy.generalization(release.clone())?;
    let plan = original_pairs_plan(policy.table_name(), inner, &generalization, failing)?;
    let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
    let qis: Vec<String> = generalization
        .quasi_identifiers()
        .into_iter()
        .map(String::from)
        .collect();
    let sensitive = policy.sensitive_attributes();
    let released_columns: Vec<(String, String)> = qis
        .iter()
        .chain(&sensitive)
        .map(|c| (c.clone(), c.clone()))
        .collect();
    let original_columns: Vec<(String, String)> = qis
        .iter()
        .enumerate()
        .map(|(i, q)| (original_name(i), q.clone()))
        .chain(sensitive.iter().map(|s| (s.clone(), s.clone())))
        .collect();
    let released = pick_columns(&batches, &released_columns)?;
    let original = pick_columns(&batches, &original_columns)?;
    let (released_name, original_name_) = (
        format!("__anon_release_{}", std::process::id()),
        format!("__anon_original_{}", std::process::id()),
    );
    ctx.register_table(&released_name, Arc::new(released))?;
    ctx.register_table(&original_name_, Arc::new(original))?;
    let mut options = crate::profile::ProfileOptions::new(&released_name, qis);
    options.sensitive = sensitive;
    options.original = Some(original_name_.clone());
    options.by_position = true;
    options.hierarchies = policy.quasi_identifiers().into_iter().collect();
    options
        .labels
        .insert(released_name.clone(), "the release".to_string());
    options
        .labels
        .insert(original_name_.clone(), policy.input().to_string());
    let profiled = crate::profile::profile(ctx, &options).await;
    ctx.deregister_table(released_name.as_str())?;
    ctx.deregister_table(original_name_.as_str())?;
    let mut utility = profiled?.utility.ok_or_else(|| {
        DataFusionError::Internal(
            "the profile of a release with its original has no utility".into(),
        )
    })?;
    // the pairs were made by recoding each input row beside its original, not by the
    // positions of the written (shuffled) rows
    utility.matched_by = RELEASE_PAIRING.to_string();
    Ok(utility)
}

/// How [`release_utility`] pairs each published row with its original (its `matched_by`).
pub const RELEASE_PAIRING: &str = "recoding: each input row recoded again beside its own \
     original values, before any shuffle (the written order is not used)";

/// One in-memory table of `batches`' columns `(from, as)`, in one partition (so a scan keeps
/// the rows' order).
fn pick_columns(
    batches: &[RecordBatch],
    columns: &[(String, String)],
) -> Result<datafusion::datasource::MemTable> {
    let Some(first) = batches.first() else {
        return Err(DataFusionError::Plan("the release has no rows".to_string()));
    };
    let indices = columns
        .iter()
        .map(|(from, _)| first.schema().index_of(from))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let fields: Vec<datafusion::arrow::datatypes::FieldRef> = indices
        .iter()
        .zip(columns)
        .map(|(&i, (_, name))| Arc::new(first.schema().field(i).as_ref().clone().with_name(name)))
        .collect();
    let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(fields));
    let picked = batches
        .iter()
        .map(|b| {
            RecordBatch::try_new(
                Arc::clone(&schema),
                indices.iter().map(|&i| Arc::clone(b.column(i))).collect(),
            )
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    datafusion::datasource::MemTable::try_new(schema, vec![picked])
}
