//! `anonymize` for a policy whose `[privacy] method` is a bucketization ((c,k)-anonymization or
//! its (p,k)-angelization baseline): read, bucketize, publish the generalized and sensitive
//! tables together, verify, report. Reached through [`super::anonymize::anonymize`].

use std::time::Instant;

use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::Observer;
use crate::bucketize::{CkSummary, Dependencies};
use crate::policy::Policy;
use crate::publish::bucketized::{BucketizedReport, publish_policy};
use crate::publish::{Output, PublishRequest};

/// The report of a bucketized release (the keys `--report` writes).
#[derive(Debug, Serialize)]
pub struct BucketizationReport {
    pub policy: String,
    pub input: String,
    pub method: &'static str,
    pub dependencies: Dependencies,
    pub construction: Option<CkSummary>,
    pub publish: BucketizedReport,
    pub seconds: BucketizationTimings,
}

/// Seconds per phase of a bucketized release.
#[derive(Debug, Serialize)]
pub struct BucketizationTimings {
    pub read: f64,
    pub bucketize: f64,
    pub write: f64,
    pub verify: f64,
    pub total: f64,
}

/// Publishes the bucketization of `policy`'s input to `output` (checked by the caller), the
/// construction's steps as notes; `started` is when the job started.
pub async fn bucketize(
    ctx: &SessionContext,
    mut policy: Policy,
    output: &Output,
    observer: &dyn Observer,
    started: Instant,
) -> Result<BucketizationReport> {
    policy.register_with(ctx, false).await?;
    let mut progress = |line: String| observer.note(&line);
    let outcome = publish_policy(PublishRequest::new(ctx, &policy, output), &mut progress)
        .await
        .map_err(|e| policy.locate_input_error(e))?;
    let published = outcome.report;
    Ok(BucketizationReport {
        policy: policy.source().to_string(),
        input: policy.input().to_string(),
        method: published.method,
        dependencies: outcome.dependencies,
        construction: outcome.construction,
        seconds: BucketizationTimings {
            read: outcome.read_seconds,
            bucketize: outcome.bucketize_seconds,
            write: published.write_seconds,
            verify: published.verify_seconds,
            total: started.elapsed().as_secs_f64(),
        },
        publish: published,
    })
}
