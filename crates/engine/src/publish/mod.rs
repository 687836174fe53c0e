//! Publishing: write the generalized table to a temporary location next to the output, verify
//! what was written, and only then move it into place.
//!
//! Every method publishes through one [`PublishRequest`] (`request.rs`: write, the uniqueness
//! check, commit); a generalized release runs as phases, one function each, in
//! `generalized.rs` (count, rows, write, verify, settle, commit).
//!
//! The data flow, one file each:
//! - where it may write (`target.rs`: never over or inside the input);
//! - the failing classes, counted (`count.rs`, with the exact label-tuple counter of
//!   `classes.rs`);
//! - suppression and the counts of the written rows, on the way to the Parquet writer
//!   (`suppress.rs`), the rows shuffled (`shuffle/`: its scatter and gather passes;
//!   `scatter.rs`: their kernels);
//! - the staged write (`staged.rs`), its verification (`verify.rs`, `population.rs`), its
//!   post-analytics (`post_analytics.rs`), and on request its utility (`utility.rs`).
//!
//! Rows can travel by class key: a local release with no failing class carries one integer
//! a row that determines its labels from the scan on, by which it is counted
//! (`class_keys.rs`) and shuffled; shuffled rows of a full-domain release carry their written
//! class from the suppression stage on. Their labels are made from the key just before the
//! writer (`expand.rs`). See [`publish_ordered`] for the passes.
//!
//! Either the whole, verified output appears at the output path, or nothing does: a failed
//! write or verification removes the temporary copy, and a process killed midway leaves at
//! most a hidden `.<name>.anon-tmp-<pid>[.parquet]` sibling, never a partial file at the output path.
//! The input is never written: an output that is, contains or lies inside a directory input
//! is refused.

pub mod bucketized;
mod class_keys;
mod classes;
pub mod cloaked;
pub mod perturbed;

mod count;
#[cfg(feature = "delta")]
pub mod delta;
mod expand;
mod generalized;
mod mapped;
mod population;
mod post_analytics;
mod request;
mod runs;
mod scatter;
mod shuffle;
pub mod staged;
mod suppress;
pub mod synthetic;
mod target;
mod uniqueness;
pub use generalized::publish_to;
pub use request::PublishRequest;
pub use uniqueness::CheckedUniqueness;
mod utility;
mod verify;

pub use shuffle::{BUCKET_BYTES, RowOrder, SHUFFLE_MEMORY, random_seed};
pub use staged::{StagedOutput, is_parquet_file};
pub use target::{TargetError, Written, check_output, check_target};
pub use utility::{RELEASE_PAIRING, release_utility};
pub use verify::{Verification, verify};

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::policy::PostAnalytics;
use crate::progress::ScanProgress;
use crate::search::release::Release;
use crate::storage::Location;

/// `ctx`'s state without round-robin repartitioning and without file scans stealing each
/// other's files, so that every partition reads the same rows in every run and its batches
/// reach a writer in the order they are made. (With DataFusion's default work stealing, a
/// partition that goes idle reads its sibling's byte ranges: the same seed then shuffled
/// 200,000 rows differently in 1 run of 24 on a busy machine.)
pub(crate) fn in_order(ctx: &SessionContext) -> datafusion::execution::SessionState {
    let mut state = ctx.state();
    let options = state.config_mut().options_mut();
    options.optimizer.enable_round_robin_repartition = false;
    options.execution.enable_file_stream_work_stealing = false;
    state
}

/// A session that runs on this machine over `ctx`'s runtime (its object stores and memory
/// pool) and configuration: where publishing writes the rows it has in hand. On a cluster
/// client ([`crate::distributed`]) the rows come from the cluster and the writer, which holds
/// this process's streams, must run here; locally it is the same work in the same pool.
pub(crate) fn writer_context(ctx: &SessionContext) -> SessionContext {
    SessionContext::new_with_config_rt(ctx.copied_config(), ctx.runtime_env())
}

/// What [`publish`] did.
#[derive(Debug, Clone, Serialize)]
pub struct PublishReport {
    /// Where the output is (a path or a URL).
    pub output: String,
    /// The version of the Delta table the release was committed as (Delta outputs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_version: Option<i64>,
    /// Rows of the input.
    pub input_rows: u64,
    /// `full-domain` or `local`.
    pub recoding: &'static str,
    /// The level of each quasi-identifier, in column order (full-domain releases; empty for
    /// local ones, whose classes carry their own labels).
    pub levels: Vec<QiLevel>,
    /// Rows of the classes that fail the requirements, dropped or masked.
    pub suppressed_rows: u64,
    /// The order of the written rows: `shuffled` (see [`RowOrder`]) or `input`.
    pub row_order: &'static str,
    /// The seed of the shuffle: the same input, release, seed and session configuration
    /// write the same rows in the same order. As secret as the data.
    pub seed: Option<u64>,
    /// What the written output achieves.
    pub verification: Verification,
    /// What the written output gives away: risk and leakage, checked against the policy's
    /// thresholds before it was published.
    pub post_analytics: PostAnalytics,
    /// The written classes by size (the profile's five ranges; the masked all-`*` class left
    /// out when the verification leaves it out).
    pub class_sizes: Vec<crate::profile::SizeBucket>,
    /// What the post-analytics found worth a warning without breaking a threshold (a column
    /// that makes many rows unique with the quasi-identifiers): names and shares, no value.
    pub warnings: Vec<String>,
    /// Seconds spent counting failing classes, writing and verifying.
    pub seconds: PublishTimings,
    /// The person column (`[privacy] person` or `person_id`): what was published of it and
    /// the persons of the smallest class.
    pub person: Option<PersonReport>,
    /// `[synthetic]`: the synthetic records added to classes below its thresholds (private:
    /// lists the classes), absent without `[synthetic]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<synthetic::SyntheticReport>,
    /// The failing classes' keys as the publish settled them (when they were computed as
    /// batches), for [`release_utility`]; not part of the report.
    #[serde(skip)]
    pub failing_classes: Option<Vec<RecordBatch>>,
}

/// The level a quasi-identifier is generalized to.
#[derive(Debug, Clone, Serialize)]
pub struct QiLevel {
    /// The column.
    pub quasi_identifier: String,
    /// Its level (0 = as is).
    pub level: usize,
    /// What the level publishes (`last 2 characters masked`, `decade`, `all *`, …).
    pub meaning: String,
}

/// Time per phase of [`publish`], in seconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PublishTimings {
    /// Counting the input and finding the classes to suppress.
    pub classes: f64,
    /// Writing the generalized table.
    pub write: f64,
    /// Measuring the written output against the requirements.
    pub verify: f64,
    /// The post-analytics of the written output (risk, leakage, thresholds).
    pub post_analytics: f64,
    /// Moving the verified output into place.
    pub commit: f64,
}

/// Rows counted while [`publish_observed`] runs, for a progress report: one counter per pass
/// over the rows, in the order they run. Each starts at 0 and grows while its pass runs, so a
/// reporter shows the latest pass whose counter has moved. Counts only, never values.
#[derive(Debug, Default)]
pub struct PublishProgress {
    /// Rows scanned by the count of the classes to suppress (the leaves of its plan, see
    /// [`crate::progress::rows_scanned`]); stays 0 when the failing classes are given or the
    /// release suppresses nothing. No total: the input's rows are not known yet.
    pub classes: Arc<ScanProgress>,
    /// Rows read into the shuffle's buckets ([`RowOrder::Shuffled`] only), suppressed or not;
    /// its total is set before the pass starts.
    pub shuffled: Arc<ScanProgress>,
    /// Rows handed to the Parquet writer (suppressed rows left out when dropped); its total is
    /// set before the pass starts.
    pub written: Arc<ScanProgress>,
}

impl PublishProgress {
    /// Every counter at 0.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }
}

/// Publishes the registered input of `policy` (see [`crate::policy::Policy::register`])
/// generalized at `levels` to `out`: refuses a transformation that suppresses more rows than
/// the policy allows (before writing anything), writes through the
/// [`GeneralizedTable`](crate::provider::GeneralizedTable) to a temporary sibling, verifies
/// the written data, and moves it into place only if it passes.
pub async fn publish(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    release: &Release,
    out: &Location,
    overwrite: bool,
) -> Result<PublishReport> {
    publish_with_failing_classes(ctx, policy, release, None, out, overwrite).await
}

/// [`publish_ordered`] with the rows shuffled by a fresh random seed (in the report).
pub async fn publish_with_failing_classes(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    release: &Release,
    failing: Option<crate::search::FailingClasses>,
    out: &Location,
    overwrite: bool,
) -> Result<PublishReport> {
    publish_ordered(
        ctx,
        policy,
        release,
        failing,
        out,
        overwrite,
        RowOrder::random(),
    )
    .await
}

/// [`publish`] with the row order chosen and, when `failing` is given, the failing classes
/// already known (e.g. derived from the search's frequency set by
/// [`crate::search::failing_classes`] at the same levels, or
/// [`crate::search::FailingClasses::none`] for a local release whose every class the
/// algorithm judged): the input is neither aggregated nor counted again. `failing` must list
/// the policy's quasi-identifiers in [`crate::policy::Policy::quasi_identifiers`] order. The written output is still
/// measured in full, which catches any disagreement with the data.
///
/// How the rows are counted and measured:
/// - **Failing classes.** Given, or counted: with k the only requirement, each partition
///   groups its recoded quasi-identifiers with an exact label-tuple counter
///   (`publish/classes.rs`); with l or t requirements, by the crate's aggregate functions
///   over the recoded table ([`GeneralizedTable::failing_classes_plan`](crate::provider::GeneralizedTable::failing_classes_plan)).
/// - **Writing.** Each recoded row is classified once on its way to the Parquet writer; the
///   rows of failing classes are dropped or masked there (no join), and the rows passed on are
///   counted per class.
/// - **Order.** With [`RowOrder::Shuffled`], the rows passed on are shuffled by a two-pass
///   bucket shuffle, spilling beyond its memory (`publish/shuffle/`); with
///   [`RowOrder::Input`], each partition's rows are written in the order they are read.
/// - **Verification.** With k the only requirement, the classes of the rows passed on are the
///   output's classes: k is measured on them, and their total must equal the rows the Parquet
///   writer reports. With l or t requirements, the written files are read back and measured
///   with the SQL functions ([`verify`]).
pub async fn publish_ordered(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    release: &Release,
    failing: Option<crate::search::FailingClasses>,
    out: &Location,
    overwrite: bool,
    order: RowOrder,
) -> Result<PublishReport> {
    publish_observed(ctx, policy, release, failing, out, overwrite, order, None).await
}

/// Where and how a release is published.
#[derive(Debug, Clone)]
pub enum Output {
    /// Parquet at a path: staged next to it, verified, moved into place ([`staged`]).
    Files {
        location: Location,
        /// Replace what is there.
        overwrite: bool,
    },
    /// One new version of a Delta table (checked by
    /// [`crate::publish::delta::check_target`] before anything was read), whose `commitInfo`
    /// records `info` with the verified figures added under `figures`.
    #[cfg(feature = "delta")]
    Delta {
        target: crate::publish::delta::DeltaTarget,
        info: serde_json::Value,
    },
}

impl Output {
    /// Where the release goes.
    pub fn location(&self) -> &Location {
        match self {
            Output::Files { location, .. } => location,
            #[cfg(feature = "delta")]
            Output::Delta { target, .. } => &target.location,
        }
    }
}

/// [`publish_ordered`], counting the rows each pass reads into `progress` as it goes (see
/// [`PublishProgress`]); the same work and output.
#[allow(clippy::too_many_arguments)]
pub async fn publish_observed(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    release: &Release,
    failing: Option<crate::search::FailingClasses>,
    out: &Location,
    overwrite: bool,
    order: RowOrder,
    progress: Option<Arc<PublishProgress>>,
) -> Result<PublishReport> {
    check_output(out, policy.input(), overwrite, policy.storage()).await?;
    let output = Output::Files {
        location: out.clone(),
        overwrite,
    };
    publish_to(
        PublishRequest::new(ctx, policy, &output),
        release,
        failing,
        order,
        progress,
    )
    .await
}

/// The person column of a release: what was published of it and its k.
#[derive(Debug, Clone, Serialize)]
pub struct PersonReport {
    /// The column.
    pub column: String,
    /// `dropped`, `pseudonym` (a per-release keyed hash) or `as is`.
    pub published: &'static str,
    /// The smallest class's distinct persons, as verified.
    pub k_persons: Option<u64>,
    /// Whether the policy's k counts persons (`[privacy] person`).
    pub k_counts_persons: bool,
}

impl PersonReport {
    fn of(person: &crate::policy::PersonColumn, verification: &Verification) -> Self {
        use crate::policy::PersonPublished;
        let k_persons = verification
            .sensitive
            .iter()
            .find(|s| s.attribute == person.name)
            .and_then(|s| s.worst.get("persons").copied().flatten())
            .map(|w| w as u64);
        Self {
            column: person.name.clone(),
            published: match person.published {
                PersonPublished::Dropped => "dropped",
                PersonPublished::Pseudonym => "pseudonym",
                PersonPublished::AsIs => "as is",
            },
            k_persons,
            k_counts_persons: person.k_counts_persons,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array};
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;
    use datafusion::physical_plan::ExecutionPlanProperties;
    use datafusion::prelude::SessionConfig;
    use futures::StreamExt;

    /// The rows partition `partition` of `plan` reads when it runs to the end before any
    /// other partition starts.
    async fn rows_read_alone(
        plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
        partition: usize,
        state: &datafusion::execution::SessionState,
    ) -> usize {
        let mut stream = plan.execute(partition, state.task_ctx()).unwrap();
        let mut rows = 0;
        while let Some(batch) = stream.next().await {
            rows += batch.unwrap().num_rows();
        }
        rows
    }

    /// The shuffle keys rows by their partition and position in it, so a partition must read
    /// the same rows whenever the others run. A file of 4 row groups of 1,000 rows, scanned
    /// as 2 byte ranges: partition 1 run to the end first reads only its own range (about
    /// half the rows) in `in_order`'s plans, where DataFusion's default (the control) lets it
    /// steal partition 0's range and read all 4,000.
    #[tokio::test]
    async fn in_order_partitions_read_only_their_own_byte_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let values = Int64Array::from_iter_values(0..4000);
        let batch = RecordBatch::try_from_iter([("v", Arc::new(values) as ArrayRef)]).unwrap();
        let properties = WriterProperties::builder()
            .set_max_row_group_row_count(Some(1000))
            .build();
        let file = std::fs::File::create(&path).unwrap();
        let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(properties)).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let config = SessionConfig::new()
            .with_target_partitions(2)
            .with_repartition_file_min_size(0);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_parquet("t", path.display().to_string(), Default::default())
            .await
            .unwrap();
        // a filter, which DataFusion parallelizes by splitting the scan
        let query = ctx.sql("SELECT v FROM t WHERE v >= 0").await.unwrap();
        let plan = query.into_optimized_plan().unwrap();
        for (state, stealing) in [(ctx.state(), true), (in_order(&ctx), false)] {
            let physical = state.create_physical_plan(&plan).await.unwrap();
            assert_eq!(physical.output_partitioning().partition_count(), 2);
            let second = rows_read_alone(&physical, 1, &state).await;
            let first = rows_read_alone(&physical, 0, &state).await;
            assert_eq!(first + second, 4000, "stealing {stealing}");
            match stealing {
                true => assert_eq!(second, 4000),
                false => assert!(0 < second && second < 4000, "{second}"),
            }
        }
    }
}
