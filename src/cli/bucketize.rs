//! `anon anonymize` for a policy whose `[privacy] method` is a bucketization:
//! (c,k)-anonymization or its (p,k)-angelization baseline. Read, bucketize, publish GT and ST
//! together, verify, report.

use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use datafusion_anonymity_engine::bucketize::{CkSummary, Dependencies};
use datafusion_anonymity_engine::policy::Policy;
use datafusion_anonymity_engine::publish::bucketized::{BucketizedReport, publish_policy};
use datafusion_anonymity_engine::session;
use datafusion_anonymity_engine::storage::Location;

/// The JSON report.
#[derive(Serialize)]
struct Report<'a> {
    policy: &'a str,
    input: String,
    method: &'static str,
    dependencies: &'a Dependencies,
    construction: Option<&'a CkSummary>,
    publish: &'a BucketizedReport,
    seconds: Timings,
}

#[derive(Serialize)]
struct Timings {
    read: f64,
    bucketize: f64,
    write: f64,
    verify: f64,
    total: f64,
}

/// Runs a bucketization policy; `out` was checked by the caller.
pub async fn run(
    mut policy: Policy,
    out: Location,
    report: Option<&Location>,
    overwrite: bool,
    memory_limit: Option<&str>,
    quiet: bool,
) -> Result<()> {
    let started = Instant::now();
    let ctx = session::context_with_limit(memory_limit)?;
    policy.register_with(&ctx, false).await?;
    let mut progress = |line: String| {
        if !quiet {
            eprintln!("{line}");
        }
    };
    let outcome = publish_policy(&ctx, &policy, &out, overwrite, &mut progress)
        .await
        .map_err(|e| policy.locate_input_error(e))?;
    let published = &outcome.report;
    println!(
        "published {} records to {}: gt.parquet ({} generalized buckets) and st.parquet ({} \
         fingerprint buckets), verified",
        published.rows,
        published.output,
        published.generalized_buckets,
        published.fingerprint_buckets
    );
    let attack = &published.attack;
    println!(
        "fingerprint-correlation attack (linking '{}'): {} records partially, {} fully pinned",
        attack.linking_attribute, attack.partially_pinned, attack.fully_pinned
    );
    for other in &published.other_links {
        if other.partially_pinned > 0 {
            eprintln!(
                "warning: an adversary who knows a person's '{}' (instead of '{}') pins {} of \
                 {} records through linked buckets ({} fully); this method does not cut those \
                 links ('{}' is its linking attribute)",
                other.linking_attribute,
                attack.linking_attribute,
                other.linked_attributes.join(", "),
                other.partially_pinned,
                other.fully_pinned,
                attack.linking_attribute
            );
        }
    }
    println!("NCP: {:.2} %", published.ncp_percent);
    if let Some(path) = report {
        let json = Report {
            policy: policy.source(),
            input: policy.input().to_string(),
            method: published.method,
            dependencies: &outcome.dependencies,
            construction: outcome.construction.as_ref(),
            publish: published,
            seconds: Timings {
                read: outcome.read_seconds,
                bucketize: outcome.bucketize_seconds,
                write: published.write_seconds,
                verify: published.verify_seconds,
                total: started.elapsed().as_secs_f64(),
            },
        };
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))?;
        datafusion_anonymity_engine::jobs::report::write_report(path, policy.storage(), text)
            .await?;
    }
    Ok(())
}
