//! [`PublishRequest`]: where a release goes and under which policy, with the phases every
//! release method shares. Each method (generalized: `generalized.rs`; perturbed:
//! `perturbed.rs`; cloaked: `cloaked.rs`) makes its rows and verifies them its own way, and
//! writes, checks and commits them through these, so that staging, the uniqueness check and
//! the commit are one rule each:
//!
//! 1. **write**: the rows staged next to the output, invisible to readers
//!    ([`PublishRequest::write`]);
//! 2. *the method's verification of the staged files*;
//! 3. **settle**: the uniqueness of the columns that are not the release's keys, refused
//!    above the policy's `max_unique_share` ([`PublishRequest::check_uniqueness`]);
//! 4. **commit**: moved into place, or one new Delta version with the verified figures
//!    ([`PublishRequest::commit`]).
//!
//! A bucketized release is two tables in one directory, each verified against the other, and
//! stages and commits the directory as a whole (`bucketized.rs`).

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;

use super::Output;
use super::staged::StagedOutput;
use super::uniqueness::{CheckedUniqueness, check_release};
use crate::policy::Policy;

/// One release to publish: the session that reads and writes, the policy it must meet and
/// where it goes (checked before anything was read: `jobs::output::PlannedOutput::check`).
#[derive(Clone, Copy)]
pub struct PublishRequest<'a> {
    pub ctx: &'a SessionContext,
    pub policy: &'a Policy,
    pub output: &'a Output,
}

impl<'a> PublishRequest<'a> {
    pub fn new(ctx: &'a SessionContext, policy: &'a Policy, output: &'a Output) -> Self {
        Self {
            ctx,
            policy,
            output,
        }
    }

    /// Writes `rows` to a staging location next to the output, in the policy's store;
    /// `published` gives the columns a reader will see (those of a Delta table's schema).
    pub async fn write(
        &self,
        rows: DataFrame,
        published: impl FnOnce(&DataFrame) -> SchemaRef,
    ) -> Result<StagedOutput> {
        StagedOutput::write_for(rows, self.output, self.policy.storage(), published).await
    }

    /// The uniqueness check of the staged files: each column that is neither one of `keys`
    /// (the columns that make the release's classes) nor `unmeasured`, measured with `keys`
    /// in `reader`'s session; refused above the policy's `max_unique_share`.
    pub async fn check_uniqueness(
        &self,
        reader: &SessionContext,
        staged: &StagedOutput,
        keys: &[String],
        unmeasured: &[&str],
    ) -> Result<CheckedUniqueness> {
        check_release(
            reader,
            staged.staging(),
            keys,
            unmeasured,
            self.policy.thresholds(),
        )
        .await
    }

    /// Moves the verified `staged` files into place, or commits them as one new version of
    /// the Delta table whose `commitInfo` records `figures`: the output's URL and the
    /// version.
    pub async fn commit(
        &self,
        staged: StagedOutput,
        figures: impl FnOnce() -> serde_json::Value,
    ) -> Result<(String, Option<i64>)> {
        staged.commit_for(self.ctx, self.output, figures).await
    }
}
