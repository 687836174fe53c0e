//! Publishing: write the generalized table to a temporary location next to the output, verify
//! what was written, and only then move it into place.
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
mod mapped;
mod population;
mod post_analytics;
mod runs;
mod scatter;
mod shuffle;
pub mod staged;
mod suppress;
pub mod synthetic;
mod target;
mod uniqueness;
pub use uniqueness::CheckedUniqueness;
mod utility;
mod verify;

use count::{
    count_classes, failing_by_size, failing_by_sql, failing_from_batches, failing_rows, first_i64,
    merge_counters,
};
pub(crate) use post_analytics::post_analytics;
pub use shuffle::{BUCKET_BYTES, RowOrder, SHUFFLE_MEMORY, random_seed};
pub use staged::{StagedOutput, is_parquet_file};
pub use target::{TargetError, Written, check_output, check_target};
pub use utility::{RELEASE_PAIRING, release_utility};
use verify::measure_classes;
pub use verify::{Verification, verify};

use std::sync::{Arc, Mutex};

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_plan::ExecutionPlanProperties;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use crate::errors::is_memory_exhausted;
use crate::policy::{PostAnalytics, SuppressionMode, quote_ident};
use crate::progress::ScanProgress;
use crate::provider::CLASS_KEY_COLUMN;
use crate::search::release::Release;
use crate::storage::Location;
use classes::ClassCounter;

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
    publish_to(ctx, policy, release, failing, &output, order, progress).await
}

/// [`publish_observed`] to any [`Output`]: Parquet files or a Delta table, checked by its
/// maker (`jobs::output::PlannedOutput::check` refuses what cannot be written before anything
/// is read).
pub async fn publish_to(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    release: &Release,
    failing: Option<crate::search::FailingClasses>,
    output: &Output,
    order: RowOrder,
    progress: Option<Arc<PublishProgress>>,
) -> Result<PublishReport> {
    let classes_progress = progress.as_ref().map(|p| Arc::clone(&p.classes));
    let started = std::time::Instant::now();
    // `output` was checked when it was planned (`jobs::output::PlannedOutput::check`, or
    // `publish_observed` above): not again here
    #[cfg(feature = "delta")]
    if policy.synthetic().is_some() && matches!(output, Output::Delta { .. }) {
        return Err(DataFusionError::Plan(
            "[synthetic] publishes Parquet files; a Delta output is not supported with it".into(),
        ));
    }
    let table = policy.generalized_table(ctx, release.clone()).await?;
    let generalization = table.generalization().clone();
    let requirements = policy.requirements();
    let quasi_identifiers: Vec<String> = generalization
        .quasi_identifiers()
        .into_iter()
        .map(String::from)
        .collect();
    let width = quasi_identifiers.len();
    let recoded = table.recoded_plan().clone();
    let k_only = !requirements.sensitive.iter().any(|s| s.is_constrained());
    // rows a local release suppressed itself: left out of (drop) or masked in (mask) the
    // recoded rows already, so they never reach the class counts
    let locally_suppressed = match release {
        Release::Local(local) => local.suppressed_rows(),
        Release::FullDomain(_) => 0,
    };
    let counted_here = failing.is_none();
    let (mut failing, mut suppressed, mut input_rows, mut failing_batches) = match failing {
        Some(known) => {
            if known.quasi_identifiers != quasi_identifiers
                || known.levels.as_deref() != release.levels()
            {
                return Err(DataFusionError::Plan(
                    "the failing classes given are not those of this policy's \
                     quasi-identifiers under this release"
                        .to_string(),
                ));
            }
            let failing = failing_from_batches(&known.batches, width)?;
            (
                failing,
                known.suppressed_rows,
                known.input_rows,
                known.batches,
            )
        }
        None if !generalization.suppresses() => {
            let count_sql = format!("SELECT count(*) FROM {}", quote_ident(policy.table_name()));
            let input_rows = first_i64(&ctx.sql(&count_sql).await?.collect().await?) as u64;
            (ClassCounter::new(width), 0, input_rows, Vec::new())
        }
        None => {
            // k alone: counted exactly in memory; with l or t, or when the counts do not fit
            // the memory pool, by the aggregate functions (which spill)
            let counted = if k_only {
                match count_classes(ctx, &recoded, &quasi_identifiers, classes_progress.clone())
                    .await
                {
                    Ok(classes) => Some(classes),
                    Err(e) if is_memory_exhausted(&e) => None,
                    Err(e) => return Err(e),
                }
            } else {
                None
            };
            match counted {
                Some(classes) => {
                    let (failing, suppressed, input_rows) =
                        failing_by_size(&classes, requirements.k);
                    (failing, suppressed, input_rows, Vec::new())
                }
                None => failing_by_sql(ctx, policy, &table, width, classes_progress).await?,
            }
        }
    };
    let dropped_any = suppressed > 0 || locally_suppressed > 0;
    if policy.suppression() == SuppressionMode::Drop
        && requirements.depends_on_table()
        && dropped_any
    {
        let added = table.settle_failing(ctx, &mut failing_batches).await?;
        failing.merge(&failing_from_batches(&added, width)?);
        suppressed += failing_rows(&added);
    }
    if counted_here && policy.suppression() == SuppressionMode::Drop {
        // the rows a drop release left out were not there to be counted
        suppressed += locally_suppressed;
        input_rows += locally_suppressed;
    }
    let allowed = requirements.max_suppressed_rows(input_rows);
    if suppressed > allowed {
        return Err(DataFusionError::Plan(format!(
            "this transformation suppresses {suppressed} of {input_rows} rows, above the \
             policy's limit of {allowed} (max_suppression = {}); nothing written",
            requirements.max_suppression
        )));
    }
    if input_rows > 0 && suppressed == input_rows {
        return Err(DataFusionError::Plan(format!(
            "this transformation suppresses all {input_rows} rows; nothing written"
        )));
    }
    // the population's rows per label tuple of the release, for k-map and δ-presence
    let population = match (&requirements.population, policy.population_table()) {
        (requirement, Some(table)) => {
            let (by_label, rows) =
                population::population_by_label(ctx, policy, table, release, width).await?;
            Some((requirement, by_label, rows))
        }
        (Some(requirement), None) => {
            return Err(DataFusionError::Plan(format!(
                "{} need a population table ([population] path in the policy)",
                requirement.policy_keys().join(" and ")
            )));
        }
        (None, None) => None,
    };
    let classes_seconds = started.elapsed().as_secs_f64();

    let started = std::time::Instant::now();
    let recoded_schema = recoded.schema();
    let positions = quasi_identifiers
        .iter()
        .map(|q| {
            recoded_schema
                .index_of_column_by_name(None, q)
                .ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "quasi-identifier '{q}' is not a column of the recoded table"
                    ))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let written_classes = Arc::new(Mutex::new(Vec::new()));
    let written_keys = Arc::new(Mutex::new(Vec::new()));
    // a local release's rows carry their class key in place of their labels while no class
    // fails (nothing to look up by label): counted and shuffled by it, labelled when written
    let (rows_source, lookup) = match table.keyed_recoded_plan() {
        Some((plan, lookup)) if failing.classes() == 0 => (plan.clone(), Some(Arc::clone(lookup))),
        _ => (recoded.clone(), None),
    };
    // no round-robin repartition (DataFusion adds one ahead of a filter, such as a local
    // release's drop of suppressed rows): each input partition's rows reach the writer in
    // their input order, so the same input and release write the same bytes
    let mut rows_state = in_order(ctx);
    if lookup.is_some() {
        // rows counted by class key merge cheaply: many partitions keep both threads busy
        // to the end (a partition is whole row groups, ~0.3 s each at 10M rows)
        crate::session::partitions_per_thread(&mut rows_state, 8);
    }
    let rows_plan = rows_state.create_physical_plan(&rows_source).await?;
    let schema = rows_plan.schema();
    let written_schema = Arc::new(recoded_schema.as_arrow().clone());
    let local_expansion = match &lookup {
        Some(lookup) => Some(Arc::new(expand::LabelExpansion::new(
            &schema,
            schema.index_of(CLASS_KEY_COLUMN)?,
            Arc::clone(&written_schema),
            &quasi_identifiers,
            expand::KeyLabels::Lookup(Arc::clone(lookup)),
        )?)),
        None => None,
    };
    // shuffled rows counted by label travel by their written class's key, one integer in
    // place of the label columns the shuffle would otherwise code again
    let keyed_output = matches!(order, RowOrder::Shuffled(_))
        && lookup.is_none()
        && positions
            .iter()
            .all(|&i| schema.field(i).data_type() == &DataType::Utf8View);
    let rows_partitions = rows_plan.output_partitioning().partition_count();
    let suppression = suppress::Suppression {
        quasi_identifiers: positions,
        failing: Arc::new(failing),
        mode: policy.suppression(),
        written: Arc::clone(&written_classes),
        keyed_output,
        class_key: local_expansion.as_ref().map(|e| e.key()),
        written_keys: Arc::clone(&written_keys),
        read: None,
    };
    // the shuffle counts the rows it reads, for a progress report
    let read = match (order, &progress) {
        (RowOrder::Shuffled(_), Some(p)) => {
            // the rows a drop release left out never reach the suppression
            let dropped = match policy.suppression() {
                SuppressionMode::Drop => locally_suppressed,
                SuppressionMode::Mask => 0,
            };
            p.shuffled.set_total(input_rows.saturating_sub(dropped));
            Some(Arc::clone(&p.shuffled))
        }
        _ => None,
    };
    let (schema, partitions) = suppress::suppressed_partitions(
        rows_plan,
        suppress::Suppression {
            read,
            ..suppression
        },
    );
    let partitions = match order {
        RowOrder::Shuffled(seed) => vec![shuffle::shuffled(
            Arc::clone(&schema),
            partitions,
            seed,
            input_rows,
        )],
        RowOrder::Input => partitions,
    };
    let expansion = match local_expansion {
        Some(expansion) => Some(expansion),
        None if keyed_output => Some(Arc::new(expand::LabelExpansion::new(
            &schema,
            schema.index_of(CLASS_KEY_COLUMN)?,
            written_schema,
            &quasi_identifiers,
            expand::KeyLabels::Written(expand::WrittenClassLabels::new(
                Arc::clone(&written_classes),
                rows_partitions,
                &ctx.runtime_env().memory_pool,
            )),
        )?)),
        None => None,
    };
    let (schema, partitions) = match &expansion {
        Some(expansion) => (
            Arc::clone(expansion.schema()),
            partitions
                .into_iter()
                .map(|p| expand::expanded(p, Arc::clone(expansion)))
                .collect(),
        ),
        None => (schema, partitions),
    };
    let partitions = match &progress {
        Some(progress) => {
            progress.written.set_total(match policy.suppression() {
                SuppressionMode::Drop => input_rows.saturating_sub(suppressed),
                SuppressionMode::Mask => input_rows,
            });
            partitions
                .into_iter()
                .map(|p| suppress::counted(p, Arc::clone(&progress.written)))
                .collect()
        }
        None => partitions,
    };
    let rows = StreamingTable::try_new(schema, partitions)?;
    // one partition, written in the order it comes: no repartitioning on the way; written
    // here even when the rows come from a cluster
    let frame = SessionContext::new_with_state(in_order(&writer_context(ctx)))
        .read_table(Arc::new(rows))?;
    let staged = StagedOutput::write_for(frame, output, policy.storage(), |frame| {
        Arc::new(published_schema(frame, &generalization))
    })
    .await?;
    crate::interrupt::hook_pause("after-write");
    let write_seconds = started.elapsed().as_secs_f64();

    let started = std::time::Instant::now();
    let written = merge_counters(&written_classes, &written_keys, lookup.as_deref(), width)?;
    let passed_on: u64 = (0..written.classes() as u32).map(|c| written.size(c)).sum();
    if passed_on != staged.rows_written {
        return Err(DataFusionError::Execution(format!(
            "the Parquet writer reports {} rows where {passed_on} were passed on to it, so the \
             output was not published",
            staged.rows_written
        )));
    }
    let mut verification = if k_only {
        measure_classes(&written, requirements, policy.suppression(), input_rows)
    } else {
        verify(
            ctx,
            staged.staging(),
            &quasi_identifiers,
            requirements,
            policy.suppression(),
            input_rows,
        )
        .await?
    };
    if let Some((requirement, by_label, rows)) = &population {
        let (achieved, failures) = population::verify_population(
            &written,
            by_label,
            *rows,
            requirement.as_ref(),
            policy.suppression(),
        );
        verification.population = Some(achieved);
        verification.failures.extend(failures);
    }
    if !verification.passes() {
        return Err(DataFusionError::Execution(format!(
            "the written output fails the policy, so it was not published: {}",
            verification.failures.join("; ")
        )));
    }
    // every input row must be accounted for: a wrongly suppressed class that passes would
    // otherwise go unnoticed (its rows are simply missing)
    let written_as_expected = match policy.suppression() {
        SuppressionMode::Drop => verification.rows + suppressed == input_rows,
        SuppressionMode::Mask => verification.rows + verification.suppressed_rows == input_rows,
    };
    if !written_as_expected {
        return Err(DataFusionError::Execution(format!(
            "the written output has {} rows where {input_rows} input rows minus {suppressed} \
             suppressed were expected, so it was not published",
            verification.rows
        )));
    }
    let (staged, written, synthetic) = match policy.synthetic() {
        None => (staged, written, None),
        Some(settings) => {
            let (staged, report) = synthetic::add_synthetic(
                ctx,
                staged,
                &quasi_identifiers,
                &policy.sensitive_attributes(),
                settings,
                order.seed().unwrap_or(0),
            )
            .await?;
            let written = if report.rows > 0 {
                // the output as published, synthetic rows included, verified again
                verification = verify(
                    ctx,
                    staged.staging(),
                    &quasi_identifiers,
                    requirements,
                    policy.suppression(),
                    input_rows + report.rows,
                )
                .await?;
                if !verification.passes() {
                    return Err(DataFusionError::Execution(format!(
                        "the written output with synthetic records fails the policy, so it was \
                         not published: {}",
                        verification.failures.join("; ")
                    )));
                }
                if verification.rows + suppressed != input_rows + report.rows {
                    return Err(DataFusionError::Execution(format!(
                        "the written output has {} rows where {input_rows} input rows minus \
                         {suppressed} suppressed plus {} synthetic were expected, so it was not \
                         published",
                        verification.rows, report.rows
                    )));
                }
                let counted = verify::register_written(ctx, staged.staging(), "recount").await?;
                let plan = ctx
                    .table(counted.as_str())
                    .await
                    .map(|f| f.into_unoptimized_plan());
                let recounted = match plan {
                    Ok(plan) => count_classes(ctx, &plan, &quasi_identifiers, None).await,
                    Err(e) => Err(e),
                };
                ctx.deregister_table(counted.as_str())?;
                recounted?
            } else {
                written
            };
            (staged, written, Some(report))
        }
    };
    let verify_seconds = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let post_analytics = post_analytics(
        ctx,
        staged.staging(),
        &policy.sensitive_attributes(),
        policy.person_id(),
        &verification,
        (&written, &quasi_identifiers),
    )
    .await?;
    let broken = policy.thresholds().broken_by(&post_analytics);
    if !broken.is_empty() {
        return Err(crate::policy::thresholds_broken(&broken));
    }
    let warnings = policy.thresholds().warnings(&post_analytics);
    let class_sizes = crate::profile::size_buckets(&verify::class_sizes(
        &written,
        policy.suppression() == SuppressionMode::Mask && verification.suppressed_rows > 0,
    ));
    let post_analytics_seconds = started.elapsed().as_secs_f64();
    // persons were counted on pseudonyms in the verified files; a person column that is not
    // published leaves them only now
    let started = std::time::Instant::now();
    let staged = match generalization.unpublished_person() {
        Some(person) => staged.without_column(ctx, person).await?,
        None => staged,
    };
    let write_seconds = write_seconds + started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let (output, delta_version) = staged
        .commit_for(ctx, output, || {
            serde_json::json!({
                "rows": verification.rows,
                "classes": verification.classes,
                "k": verification.k,
                "suppressed": match policy.suppression() {
                    SuppressionMode::Drop => suppressed,
                    SuppressionMode::Mask => verification.suppressed_rows,
                },
                "sensitive": verification.sensitive,
            })
        })
        .await?;
    let commit_seconds = started.elapsed().as_secs_f64();
    Ok(PublishReport {
        output,
        delta_version,
        input_rows,
        recoding: release.kind(),
        levels: policy
            .quasi_identifiers()
            .into_iter()
            .zip(release.levels().unwrap_or_default().iter().copied())
            .map(|((quasi_identifier, hierarchy), level)| QiLevel {
                quasi_identifier,
                level,
                meaning: hierarchy.level_meaning(level),
            })
            .collect(),
        suppressed_rows: suppressed,
        row_order: order.name(),
        seed: order.seed(),
        post_analytics,
        class_sizes,
        warnings,
        seconds: PublishTimings {
            classes: classes_seconds,
            write: write_seconds,
            verify: verify_seconds,
            post_analytics: post_analytics_seconds,
            commit: commit_seconds,
        },
        failing_classes: (!failing_batches.is_empty()).then_some(failing_batches),
        person: policy.person().map(|p| PersonReport::of(p, &verification)),
        synthetic,
        verification,
    })
}

/// The columns `frame` writes once the unpublished person column (if any) is left out: the
/// columns a Delta table of the release holds.
fn published_schema(
    frame: &datafusion::dataframe::DataFrame,
    generalization: &crate::provider::Generalization,
) -> datafusion::arrow::datatypes::Schema {
    let schema = frame.schema().as_arrow();
    match generalization.unpublished_person() {
        Some(person) => datafusion::arrow::datatypes::Schema::new(
            schema
                .fields()
                .iter()
                .filter(|f| f.name() != person)
                .cloned()
                .collect::<Vec<_>>(),
        ),
        None => schema.clone(),
    }
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
