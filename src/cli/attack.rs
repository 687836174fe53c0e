//! `anon attack fingerprint`: the fingerprint-correlation attack of seed 002 on any
//! bucketized release (a sensitive table with a bucket id; optionally its generalized table).

use std::path::PathBuf;

use clap::Subcommand;
use datafusion::error::{DataFusionError, Result};

use datafusion_anonymity_engine::bucketize::attack::attack_table;
use datafusion_anonymity_engine::policy::quote_ident;
use datafusion_anonymity_engine::{session, tables};

#[derive(clap::Args, Debug)]
pub struct AttackArgs {
    #[command(subcommand)]
    attack: Attack,
}

#[derive(Subcommand, Debug)]
enum Attack {
    /// Rebuild fingerprints across buckets linked through a shared value of the linking
    /// attribute (seed 002 §1.1): intersect, assign left-over values, repeat. Counts the
    /// records whose values it pins down.
    Fingerprint(FingerprintArgs),
}

#[derive(clap::Args, Debug)]
struct FingerprintArgs {
    /// The sensitive table (ST): a bucket id and the sensitive attributes.
    #[arg(long, value_name = "PATH")]
    st: PathBuf,
    /// The generalized table (GT), to check that it links to ST bucket for bucket.
    #[arg(long, value_name = "PATH")]
    gt: Option<PathBuf>,
    /// The linking (maximum-weighted) attribute the adversary knows of her target.
    #[arg(long, value_name = "COLUMN")]
    linking: String,
    /// The attributes the adversary knows the linking value determines (comma-separated).
    /// Default: every other attribute, as the seed's adversary assumes; an assumption the
    /// cells contradict is dropped.
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    determined: Option<Vec<String>>,
    /// The bucket id column.
    #[arg(long, default_value = "bucket_id")]
    bucket_column: String,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(args: AttackArgs) -> Result<()> {
    match args.attack {
        Attack::Fingerprint(args) => fingerprint(args).await,
    }
}

async fn fingerprint(args: FingerprintArgs) -> Result<()> {
    let ctx = session::context(None)?;
    let st_path = args.st.display().to_string();
    tables::register_path(&ctx, "st", &st_path).await?;
    if let Some(gt) = &args.gt {
        check_gt(&ctx, gt, &args.bucket_column).await?;
    }
    let (report, refuted) = attack_table(
        &ctx,
        "st",
        &args.bucket_column,
        &args.linking,
        args.determined.as_deref(),
    )
    .await
    .map_err(|e| DataFusionError::Plan(format!("{st_path}: {}", e.message())))?;
    if args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    println!(
        "fingerprint-correlation attack on {st_path}: linking attribute '{}', {} records",
        report.linking_attribute, report.records
    );
    println!(
        "linked through '{}': {}{}",
        report.linking_attribute,
        if report.linked_attributes.is_empty() {
            "none".to_string()
        } else {
            report.linked_attributes.join(", ")
        },
        if refuted.is_empty() {
            String::new()
        } else {
            format!(" (assumption refuted by the cells: {})", refuted.join(", "))
        }
    );
    println!(
        "records pinned: {} partially, {} fully, of {}",
        report.partially_pinned, report.fully_pinned, report.records
    );
    for (name, pinned) in &report.pinned_per_attribute {
        println!("  {name}: {pinned}");
    }
    println!("rounds: {}", report.rounds);
    Ok(())
}

/// GT and ST must have the same rows per bucket id.
async fn check_gt(
    ctx: &datafusion::prelude::SessionContext,
    gt: &std::path::Path,
    bucket_column: &str,
) -> Result<()> {
    let gt_path = gt.display().to_string();
    tables::register_path(ctx, "gt", &gt_path).await?;
    let bucket = quote_ident(bucket_column);
    let sql = format!(
        "SELECT count(*) FROM (SELECT {bucket}, count(*) AS n FROM gt GROUP BY {bucket}) g \
         FULL JOIN (SELECT {bucket}, count(*) AS n FROM st GROUP BY {bucket}) s \
         ON g.{bucket} = s.{bucket} WHERE g.n IS DISTINCT FROM s.n"
    );
    let batches = ctx.sql(&sql).await?.collect().await?;
    let mismatched = batches
        .first()
        .and_then(|b| {
            b.column(0)
                .as_any()
                .downcast_ref::<datafusion::arrow::array::Int64Array>()
                .map(|a| a.value(0))
        })
        .unwrap_or(0);
    if mismatched > 0 {
        return Err(DataFusionError::Plan(format!(
            "{gt_path}: {mismatched} bucket ids have a different number of rows than in the \
             sensitive table"
        )));
    }
    Ok(())
}
