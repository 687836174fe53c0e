//! `anon anonymize` for a policy whose `[privacy] method` is a bucketization:
//! (c,k)-anonymization or its (p,k)-angelization baseline. Read, bucketize, publish GT and ST
//! together, verify, report.

use std::path::{Path, PathBuf};
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use datafusion_anonymity::bucketize::{self, CkSummary, Dependencies, encode, groups, weights};
use datafusion_anonymity::policy::{Bucketization, Policy};
use datafusion_anonymity::publish::bucketized::{BucketizedReport, publish_bucketized};
use datafusion_anonymity::session;

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
    out: PathBuf,
    report: Option<&Path>,
    overwrite: bool,
    memory_limit: Option<&str>,
    quiet: bool,
) -> Result<()> {
    let started = Instant::now();
    let Some(bucketization) = policy.bucketization().cloned() else {
        return Err(DataFusionError::Internal(
            "not a bucketization policy".into(),
        ));
    };
    let ctx = session::context_with_limit(memory_limit)?;
    policy.register_with(&ctx, false).await?;
    let phase = Instant::now();
    let table = encode::read_table(
        &ctx,
        policy.table_name(),
        &policy.published_quasi_identifiers(),
        &policy.sensitive_attributes(),
    )
    .await?;
    let read_seconds = phase.elapsed().as_secs_f64();
    if !quiet {
        eprintln!("read {} records ({read_seconds:.2} s)", table.rows());
    }
    let phase = Instant::now();
    let nothing_written = |e: DataFusionError| {
        DataFusionError::Execution(format!("{}; nothing written", e.message()))
    };
    let (release, summary, dependencies) = match &bucketization {
        Bucketization::Ck(options) => {
            let (release, summary) =
                bucketize::ck_anonymize(&table, options).map_err(nothing_written)?;
            let dependencies = summary.dependencies.clone();
            (release, Some(summary), dependencies)
        }
        Bucketization::Pk { p, k, analysis } => {
            let release = groups::pk_angelize(&table, *p, *k).map_err(nothing_written)?;
            // the attack needs the linking attribute: the same analysis as (c,k)
            let dependencies = weights::analyse(&table, analysis).map_err(nothing_written)?;
            (release, None, dependencies)
        }
    };
    let bucketize_seconds = phase.elapsed().as_secs_f64();
    if !quiet {
        let linking = &dependencies.attributes[dependencies.linking];
        eprintln!(
            "{}: {} fingerprint buckets, {} generalized buckets, linking attribute '{linking}' \
             (by {}) ({bucketize_seconds:.2} s)",
            bucketization.method().name(),
            release.buckets,
            release.group_ranges.len(),
            dependencies.linking_reason
        );
    }
    let published = publish_bucketized(
        &ctx,
        &table,
        &release,
        &bucketization,
        &dependencies,
        policy.input(),
        &out,
        overwrite,
    )
    .await?;
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
    println!("NCP: {:.2} %", published.ncp_percent);
    if let Some(path) = report {
        let json = Report {
            policy: policy.source(),
            input: policy.input().display().to_string(),
            method: bucketization.method().name(),
            dependencies: &dependencies,
            construction: summary.as_ref(),
            publish: &published,
            seconds: Timings {
                read: read_seconds,
                bucketize: bucketize_seconds,
                write: published.write_seconds,
                verify: published.verify_seconds,
                total: started.elapsed().as_secs_f64(),
            },
        };
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))?;
        super::anonymize::write_atomically(path, &text)?;
    }
    Ok(())
}
