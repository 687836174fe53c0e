//! `anon attack fingerprint`: the fingerprint-correlation attack of seed 002 on any
//! bucketized release (a sensitive table with a bucket id; optionally its generalized table).

use std::path::PathBuf;

use clap::Subcommand;
use datafusion::error::{DataFusionError, Result};

use datafusion_anonymity_engine::jobs::{
    self,
    attack::{FingerprintOptions, FingerprintOutcome},
};
use datafusion_anonymity_engine::session;

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
    let options = FingerprintOptions {
        sensitive_table: st_path.clone(),
        generalized_table: args.gt.map(|gt| gt.display().to_string()),
        linking: args.linking,
        determined: args.determined,
        bucket_column: args.bucket_column,
    };
    let outcome = jobs::attack::fingerprint(&ctx, &options).await?;
    if args.json {
        let text = serde_json::to_string_pretty(&outcome)
            .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    let FingerprintOutcome { report, refuted } = outcome;
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
