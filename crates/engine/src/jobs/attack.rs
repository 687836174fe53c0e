//! `attack fingerprint`: the fingerprint-correlation attack of seed 002 on a bucketized
//! release (its sensitive table, with a bucket id; optionally its generalized table, checked
//! to link to it bucket for bucket). The command line's `anon attack fingerprint` and Python's
//! `attack_fingerprint()` are this function; they differ only in how they show the report.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::Int64Type;
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::bucketize::attack::{AttackReport, attack_table};
use crate::policy::quote_ident;
use crate::tables;

/// What to attack; the command line's flags, Python's keywords.
#[derive(Debug, Clone)]
pub struct FingerprintOptions {
    /// The sensitive table (ST): a bucket id and the sensitive attributes (a path or URL).
    pub sensitive_table: String,
    /// The generalized table (GT), to check that it links to ST bucket for bucket.
    pub generalized_table: Option<String>,
    /// The linking (maximum-weighted) attribute the adversary knows of her target.
    pub linking: String,
    /// The attributes the adversary knows the linking value determines (`None`: every other).
    pub determined: Option<Vec<String>>,
    /// The bucket id column.
    pub bucket_column: String,
}

/// The attack's report, and the assumed determinations the cells refuted (dropped).
#[derive(Debug, Clone, Serialize)]
pub struct FingerprintOutcome {
    #[serde(flatten)]
    pub report: AttackReport,
    /// Attributes assumed determined by the linking one whose cells say otherwise.
    pub refuted: Vec<String>,
}

/// Runs the attack on `ctx` (registering the tables as `st` and `gt`); see the module
/// documentation. Errors about the tables name the sensitive table's path.
pub async fn fingerprint(
    ctx: &SessionContext,
    options: &FingerprintOptions,
) -> Result<FingerprintOutcome> {
    let st = &options.sensitive_table;
    tables::register_path(ctx, "st", st).await?;
    if let Some(gt) = &options.generalized_table {
        check_generalized(ctx, gt, &options.bucket_column).await?;
    }
    let (report, refuted) = attack_table(
        ctx,
        "st",
        &options.bucket_column,
        &options.linking,
        options.determined.as_deref(),
    )
    .await
    .map_err(|e| DataFusionError::Plan(format!("{st}: {}", e.message())))?;
    Ok(FingerprintOutcome { report, refuted })
}

/// GT (at `gt`) and ST must have the same rows per bucket id.
async fn check_generalized(ctx: &SessionContext, gt: &str, bucket_column: &str) -> Result<()> {
    tables::register_path(ctx, "gt", gt).await?;
    let bucket = quote_ident(bucket_column);
    let sql = format!(
        "SELECT count(*) FROM (SELECT {bucket}, count(*) AS n FROM gt GROUP BY {bucket}) g \
         FULL JOIN (SELECT {bucket}, count(*) AS n FROM st GROUP BY {bucket}) s \
         ON g.{bucket} = s.{bucket} WHERE g.n IS DISTINCT FROM s.n"
    );
    let batches = ctx.sql(&sql).await?.collect().await?;
    let mismatched = batches
        .first()
        .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
        .filter(|counts| !counts.is_empty())
        .map_or(0, |counts| counts.value(0));
    if mismatched > 0 {
        return Err(DataFusionError::Plan(format!(
            "{gt}: {mismatched} bucket ids have a different number of rows than in the \
             sensitive table"
        )));
    }
    Ok(())
}
