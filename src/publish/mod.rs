//! Publishing: write the generalized table to a temporary location next to the output, verify
//! what was written, and only then move it into place.
//!
//! The rows are recoded once per pass and grouped by an exact label-tuple counter
//! (`publish/classes.rs`); suppression and the measurement of the written rows happen on the way
//! to the Parquet writer (`publish/suppress.rs`). A local release with no failing class is
//! published by class key instead: each row carries one integer that determines its labels,
//! by which it is counted (`publish/class_keys.rs`) and shuffled, and its labels are made
//! from the key just before the writer (`publish/expand.rs`). See
//! [`publish_with_failing_classes`] for the passes.
//!
//! Either the whole, verified output appears at the output path, or nothing does: a failed
//! write or verification removes the temporary copy, and a process killed midway leaves at
//! most a hidden `.<name>.anon-tmp-<pid>[.parquet]` sibling, never a partial file at the output path.
//! The input is never written: an output that is, contains or lies inside a directory input
//! is refused.

pub mod bucketized;
mod class_keys;
mod classes;
pub(crate) mod codes;
mod expand;
mod population;
mod scatter;
mod shuffle;
pub mod staged;
mod suppress;

pub use shuffle::{BUCKET_BYTES, RowOrder, SHUFFLE_MEMORY, random_seed};
pub use staged::{StagedOutput, is_parquet_file};

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast as arrow_cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::Column;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, col, lit};
use datafusion::physical_plan::{ExecutionPlanProperties, execute_stream_partitioned};
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use futures::StreamExt;
use serde::Serialize;

use crate::generalize::TOP_LABEL;
use crate::generalize::udf::local_recode::LocalRecodeFunction;
use crate::policy::{
    Bound, PostAnalytics, PrivacyRequirements, SensitiveAchieved, SuppressionMode, quote_ident,
};
use crate::profile::leakage::Sums;
use crate::progress::ScanProgress;
use crate::provider::CLASS_KEY_COLUMN;
use crate::release::Release;
use crate::storage::{self, Location, StoreOptions};
use class_keys::KeyCounts;
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

/// Refuses a Parquet output that [`check_target`] refuses, or whose name has another
/// extension than `.parquet` (`out.csv` would hold Parquet).
pub async fn check_output(
    out: &Location,
    input: &Location,
    overwrite: bool,
    options: &StoreOptions,
) -> Result<()> {
    check_target(out, input, overwrite, options, true).await
}

/// Refuses an output (data or report) that exists (unless `overwrite`), equals the input,
/// lies inside a directory input, or contains the input (overwriting it would delete the
/// input); with `parquet`, also one named with another extension than `.parquet`.
pub async fn check_target(
    out: &Location,
    input: &Location,
    overwrite: bool,
    options: &StoreOptions,
    parquet: bool,
) -> Result<()> {
    let refuse = |why: String| DataFusionError::Plan(format!("output {out}: {why}"));
    match (out, input) {
        (Location::Local(out_path), _) if out_path.as_os_str().is_empty() => {
            return Err(refuse("empty path".into()));
        }
        (Location::Local(out_path), Location::Local(input_path)) => {
            check_local_overlap(out_path, input_path).map_err(refuse)?
        }
        (Location::Url(_), Location::Url(_)) => {
            // compared as shown (no credentials or query); a glob input by the prefix it lists
            let (out_shown, input_shown) = (out.to_string(), input.to_string());
            let out_text = out_shown.trim_end_matches('/');
            let input_base = match input_shown.find(['*', '?', '[']) {
                Some(i) => &input_shown[..input_shown[..i].rfind('/').unwrap_or(i)],
                None => input_shown.as_str(),
            }
            .trim_end_matches('/');
            if out_text == input_base {
                return Err(refuse("is the input; choose another location".into()));
            }
            if out_text.starts_with(&format!("{input_base}/")) {
                return Err(refuse(format!(
                    "lies inside the input {input}; it would be read as input next time"
                )));
            }
            if input_base.starts_with(&format!("{out_text}/")) {
                return Err(refuse(format!(
                    "contains the input {input}; writing it would destroy the input"
                )));
            }
        }
        _ => {}
    }
    if let Some(extension) = out.extension().filter(|e| parquet && e != "parquet") {
        return Err(refuse(format!(
            "the output is Parquet; name a .parquet file or a directory, not a .{extension} file"
        )));
    }
    if !overwrite && storage::exists(out, options).await? {
        return Err(refuse("exists; pass --overwrite to replace it".into()));
    }
    if let Location::Local(out_path) = out {
        match absolute(out_path).parent() {
            Some(parent) if !parent.as_os_str().is_empty() && !parent.is_dir() => {
                return Err(refuse(format!(
                    "its directory {} does not exist",
                    parent.display()
                )));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The local overlap rules of [`check_output`]: the reason to refuse, if any.
fn check_local_overlap(out: &Path, input: &Path) -> std::result::Result<(), String> {
    let out_abs = absolute(out);
    // a glob input is judged by the directory it lists
    let input_base = glob_base(input);
    let input_abs = absolute(&input_base);
    if out_abs == input_abs {
        return Err("is the input; choose another path".into());
    }
    if input_base.is_dir() && out_abs.starts_with(&input_abs) {
        return Err(format!(
            "lies inside the input directory {}; it would be read as input next time",
            input_base.display()
        ));
    }
    if input_abs.starts_with(&out_abs) {
        return Err(format!(
            "contains the input {}; writing it would destroy the input",
            input.display()
        ));
    }
    Ok(())
}

/// `path` made absolute and, where it exists, canonical (symlinks resolved).
fn absolute(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    // not there yet: canonicalize the nearest existing ancestor, keep the rest
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
    let mut result = existing
        .canonicalize()
        .unwrap_or_else(|_| existing.to_path_buf());
    for name in rest.into_iter().rev() {
        result.push(name);
    }
    result
}

/// The directory part of a glob path (`data/*.parquet` → `data`), or the path itself.
fn glob_base(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    match text.find(['*', '?', '[']) {
        Some(i) => {
            let prefix = &text[..i];
            let cut = prefix.rfind('/').map(|j| &prefix[..j]).unwrap_or(".");
            PathBuf::from(if cut.is_empty() { "/" } else { cut })
        }
        None => path.to_path_buf(),
    }
}

/// What the published data achieve, measured on the written files.
#[derive(Debug, Clone, Serialize)]
pub struct Verification {
    /// Rows written.
    pub rows: u64,
    /// Equivalence classes among the rows (the all-`*` class of masked rows excluded when it
    /// does not meet the requirements on its own).
    pub classes: u64,
    /// The smallest class (0 when no rows).
    pub k: u64,
    /// Rows suppressed as far as the output shows: input rows not written (drop), or the
    /// rows of the all-`*` class when it is excluded (mask; masked rows in an all-`*` class
    /// that meets the requirements on its own are indistinguishable from generalized ones).
    pub suppressed_rows: u64,
    /// Per sensitive attribute with requirements: the worst value of each bounded measure
    /// over the classes.
    pub sensitive: Vec<SensitiveAchieved>,
    /// k-map and δ-presence against the policy's population, over the written classes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub population: Option<crate::policy::PopulationAchieved>,
    /// Why the output fails the policy; empty when it passes.
    pub failures: Vec<String>,
}

impl Verification {
    /// Whether the output meets the policy.
    pub fn passes(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Measures the Parquet output at `path` (file or directory) with the crate's functions and
/// checks it against `requirements`: every class at least k rows and meeting each l and t
/// (measured against the output's own distribution, as a reader of the published data
/// would), and at most the allowed share of the `input_rows` suppressed.
pub async fn verify(
    ctx: &SessionContext,
    path: &Location,
    quasi_identifiers: &[String],
    requirements: &PrivacyRequirements,
    suppression: SuppressionMode,
    input_rows: u64,
) -> Result<Verification> {
    let table = register_written(ctx, path, "verify").await?;
    let result = measure(
        ctx,
        &table,
        quasi_identifiers,
        requirements,
        suppression,
        input_rows,
    )
    .await;
    ctx.deregister_table(table.as_str())?;
    result
}

/// Registers the Parquet output at `path` (file or directory) on `ctx` under a private name,
/// returned.
async fn register_written(ctx: &SessionContext, path: &Location, purpose: &str) -> Result<String> {
    let table = format!("__anon_{purpose}_{}", std::process::id());
    let location = match path {
        Location::Local(local) if local.is_dir() => format!("{}/", local.display()),
        Location::Url(_) if !is_parquet_file(path) => path.as_prefix().datafusion_path(),
        _ => path.datafusion_path(),
    };
    ctx.register_parquet(&table, &location, ParquetReadOptions::default())
        .await?;
    Ok(table)
}

/// Post-analytics of the written output at `path` (seed 000 §3): the re-identification risk of
/// its classes (from `verification`) and the leakage of every published attribute except
/// the sensitive ones, read back from the files.
///
/// `written` holds the written classes over `quasi_identifiers`: those columns' leakage
/// comes from it (the same counts as a `GROUP BY` of the files, without reading them again).
pub(crate) async fn post_analytics(
    ctx: &SessionContext,
    path: &Location,
    sensitive: &[String],
    verification: &Verification,
    written: (&ClassCounter, &[String]),
) -> Result<PostAnalytics> {
    let table = register_written(ctx, path, "post_analytics").await?;
    let result = async {
        let frame = ctx.table(table.as_str()).await?;
        let attributes: Vec<&str> = frame
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|name| !sensitive.iter().any(|s| s == name))
            .collect();
        let (classes, quasi_identifiers) = written;
        let known = quasi_identifiers
            .iter()
            .enumerate()
            .map(|(q, name)| (name.clone(), Sums::of_counts(classes.label_sizes(q))))
            .collect();
        let leakage = crate::profile::leakage::attribute_leakage(
            &frame,
            &attributes,
            verification.rows,
            known,
        )
        .await?;
        let (rows, classes) = (verification.rows as f64, verification.classes as f64);
        // no row published: nothing to re-identify
        let average = if rows > 0.0 { classes / rows } else { 0.0 };
        Ok(PostAnalytics {
            prosecutor_max: if verification.k > 0 {
                1.0 / verification.k as f64
            } else {
                0.0
            },
            prosecutor_average: average,
            marketer: average,
            journalist: verification.population.map(|p| p.journalist_risk()),
            population_marketer: verification
                .population
                .map(|p| p.marketer_risk(verification.rows)),
            leakage,
        })
    }
    .await;
    ctx.deregister_table(table.as_str())?;
    result
}

/// The column of the verification's per-class table holding bound `j` of attribute `i`.
fn measure_column(i: usize, j: usize) -> String {
    format!("__anon_m{i}_{j}")
}

async fn measure(
    ctx: &SessionContext,
    table: &str,
    quasi_identifiers: &[String],
    requirements: &PrivacyRequirements,
    suppression: SuppressionMode,
    input_rows: u64,
) -> Result<Verification> {
    let keys: Vec<Expr> = quasi_identifiers
        .iter()
        .map(|q| Expr::Column(Column::from_name(q)))
        .collect();
    // per class: its size, each bounded measure, whether it passes, whether it is all `*`
    let mut per_class = vec![count(lit(1)).alias("__anon_k")];
    let mut passes = vec![col("__anon_k").gt_eq(lit(requirements.k as i64))];
    let bounds: Vec<Vec<Bound>> = requirements.sensitive.iter().map(|s| s.bounds()).collect();
    for (i, (s, bounds)) in requirements.sensitive.iter().zip(&bounds).enumerate() {
        for (j, bound) in bounds.iter().enumerate() {
            let name = measure_column(i, j);
            let value = Expr::Column(Column::from_name(&s.attribute));
            // the aggregate stays outermost: the whole-table rewrite looks for it there
            per_class.push(bound.measure.call(value).alias(&name));
            passes.push(bound.passes(col(name)));
        }
    }
    let all_top = keys
        .iter()
        .map(|k| k.clone().eq(lit(TOP_LABEL)).is_true())
        .reduce(Expr::and)
        .unwrap_or_else(|| lit(true));
    let passes = passes.into_iter().reduce(Expr::and).unwrap_or(lit(true));
    let classes = ctx
        .table(table)
        .await?
        .aggregate(keys, per_class)?
        .with_column("__anon_passes", passes)?
        .with_column("__anon_all_top", all_top)?;
    let batches = classes.collect().await?;
    let mut summary = ClassSummary::new(&bounds);
    for batch in &batches {
        let schema = batch.schema();
        let k = batch
            .column(schema.index_of("__anon_k")?)
            .as_primitive::<Int64Type>();
        let pass = batch.column(schema.index_of("__anon_passes")?).as_boolean();
        let top = batch
            .column(schema.index_of("__anon_all_top")?)
            .as_boolean();
        // each bound's column, as Float64, once per batch
        let mut measured: Vec<Vec<ArrayRef>> = Vec::with_capacity(bounds.len());
        for (i, bounds) in bounds.iter().enumerate() {
            let mut columns = Vec::with_capacity(bounds.len());
            for j in 0..bounds.len() {
                let column = batch.column(schema.index_of(&measure_column(i, j))?);
                columns.push(arrow_cast(column, &DataType::Float64)?);
            }
            measured.push(columns);
        }
        for row in 0..batch.num_rows() {
            let size = k.value(row) as u64;
            let passes = pass.is_valid(row) && pass.value(row);
            let is_top = top.is_valid(row) && top.value(row);
            if !summary.add_class(size, passes, is_top, suppression) {
                continue;
            }
            for (i, bounds) in bounds.iter().enumerate() {
                for (j, bound) in bounds.iter().enumerate() {
                    let values = measured[i][j].as_primitive::<Float64Type>();
                    // no value (a class without the attribute's values) counts as the worst
                    let value = if values.is_valid(row) {
                        values.value(row)
                    } else {
                        bound.unmet_value()
                    };
                    let worst = &mut summary.worst[i][j];
                    *worst = Some(worst.map_or(value, |w| bound.worse(w, value)));
                }
            }
        }
    }
    Ok(summary.finish(requirements, &bounds, suppression, input_rows))
}

/// The output's classes summed up into a [`Verification`].
struct ClassSummary {
    rows: u64,
    classes: u64,
    min_k: Option<u64>,
    /// rows of the all-`*` class when it is excluded (mask mode)
    excluded: u64,
    failing_classes: u64,
    /// per sensitive attribute, per bound: the worst value over the kept classes
    worst: Vec<Vec<Option<f64>>>,
}

impl ClassSummary {
    fn new(bounds: &[Vec<Bound>]) -> Self {
        Self {
            rows: 0,
            classes: 0,
            min_k: None,
            excluded: 0,
            failing_classes: 0,
            worst: bounds.iter().map(|b| vec![None; b.len()]).collect(),
        }
    }

    /// Adds a class of `size` rows; `false` when it is the masked rows' all-`*` class that
    /// fails on its own, which is excluded (its l and t are then not to be added).
    fn add_class(
        &mut self,
        size: u64,
        passes: bool,
        is_top: bool,
        suppression: SuppressionMode,
    ) -> bool {
        if suppression == SuppressionMode::Mask && is_top && !passes {
            self.excluded += size;
            return false;
        }
        self.rows += size;
        self.classes += 1;
        self.min_k = Some(self.min_k.map_or(size, |m| m.min(size)));
        if !passes {
            self.failing_classes += 1;
        }
        true
    }

    fn finish(
        self,
        requirements: &PrivacyRequirements,
        bounds: &[Vec<Bound>],
        suppression: SuppressionMode,
        input_rows: u64,
    ) -> Verification {
        let suppressed_rows = match suppression {
            SuppressionMode::Drop => input_rows.saturating_sub(self.rows),
            SuppressionMode::Mask => self.excluded,
        };
        let mut failures = Vec::new();
        if self.failing_classes > 0 {
            failures.push(format!(
                "{} class(es) of the output fail the requirements (smallest class {} rows)",
                self.failing_classes,
                self.min_k.unwrap_or(0)
            ));
        }
        let allowed = requirements.max_suppressed_rows(input_rows);
        if suppressed_rows > allowed {
            failures.push(format!(
                "{suppressed_rows} rows suppressed, above the limit of {allowed} ({} of {input_rows})",
                requirements.max_suppression
            ));
        }
        if self.rows == 0 && input_rows > 0 {
            failures.push("no rows left to publish".to_string());
        }
        Verification {
            rows: self.rows,
            classes: self.classes,
            k: self.min_k.unwrap_or(0),
            suppressed_rows,
            sensitive: requirements
                .sensitive
                .iter()
                .zip(bounds)
                .zip(&self.worst)
                .filter(|((_, bounds), _)| !bounds.is_empty())
                .map(|((s, bounds), worst)| SensitiveAchieved::new(&s.attribute, bounds, worst))
                .collect(),
            population: None,
            failures,
        }
    }
}

/// What [`publish`] did.
#[derive(Debug, Clone, Serialize)]
pub struct PublishReport {
    /// Where the output is (a path or a URL).
    pub output: String,
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
    /// Seconds spent counting failing classes, writing and verifying.
    pub seconds: PublishTimings,
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
///   bucket shuffle, spilling beyond its memory (`publish/shuffle.rs`); with
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
    let classes_progress = progress.as_ref().map(|p| Arc::clone(&p.classes));
    check_output(out, policy.input(), overwrite, policy.storage()).await?;
    let started = std::time::Instant::now();
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
                    Err(e) if matches!(e.find_root(), DataFusionError::ResourcesExhausted(_)) => {
                        None
                    }
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
    let partitions = match order {
        RowOrder::Shuffled(seed) => {
            let read = progress.as_ref().map(|p| {
                // the rows a drop release left out never reach the suppression
                let dropped = match policy.suppression() {
                    SuppressionMode::Drop => locally_suppressed,
                    SuppressionMode::Mask => 0,
                };
                p.shuffled.set_total(input_rows.saturating_sub(dropped));
                Arc::clone(&p.shuffled)
            });
            let suppression = suppress::Suppression {
                read,
                ..suppression
            };
            let partitions = suppress::suppressed_partitions(rows_plan, suppression);
            let schema = partitions
                .first()
                .map_or_else(|| Arc::clone(&schema), |p| Arc::clone(p.schema()));
            vec![shuffle::shuffled(schema, partitions, seed, input_rows)]
        }
        RowOrder::Input => suppress::suppressed_partitions(rows_plan, suppression),
    };
    let schema = partitions
        .first()
        .map_or_else(|| Arc::clone(&schema), |p| Arc::clone(p.schema()));
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
    let staged = StagedOutput::write(frame, out, policy.storage()).await?;
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
    let verify_seconds = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let post_analytics = post_analytics(
        ctx,
        staged.staging(),
        &policy.sensitive_attributes(),
        &verification,
        (&written, &quasi_identifiers),
    )
    .await?;
    let broken = policy.thresholds().broken_by(&post_analytics);
    if !broken.is_empty() {
        return Err(DataFusionError::Execution(format!(
            "the written output breaks the policy's thresholds, so it was not published: {}",
            broken.join("; ")
        )));
    }
    let post_analytics_seconds = started.elapsed().as_secs_f64();
    let output = staged.commit().await?.to_string();
    Ok(PublishReport {
        output,
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
        verification,
        post_analytics,
        seconds: PublishTimings {
            classes: classes_seconds,
            write: write_seconds,
            verify: verify_seconds,
            post_analytics: post_analytics_seconds,
        },
        failing_classes: (!failing_batches.is_empty()).then_some(failing_batches),
    })
}

/// The utility of publishing `release` under `policy` (the profile's utility section), with
/// every row paired with its own original: the rows are recoded once more with their
/// original quasi-identifiers beside (`failing`, as [`PublishReport::failing_classes`], marks
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
    profiled?.utility.ok_or_else(|| {
        DataFusionError::Internal(
            "the profile of a release with its original has no utility".into(),
        )
    })
}

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

/// The classes of fewer than `k` rows, their rows, and all rows.
fn failing_by_size(classes: &ClassCounter, k: u64) -> (ClassCounter, u64, u64) {
    let width = classes.width();
    let mut failing = ClassCounter::new(width);
    let (mut suppressed, mut input_rows) = (0, 0);
    let mut labels = Vec::with_capacity(width);
    for class in 0..classes.classes() as u32 {
        let size = classes.size(class);
        input_rows += size;
        if size > 0 && size < k {
            suppressed += size;
            labels.clear();
            labels.extend(classes.labels(class));
            failing.intern(&labels);
        }
    }
    (failing, suppressed, input_rows)
}

/// The failing classes, their rows and all rows, by the table's own plan (the crate's
/// aggregate functions for l and t; DataFusion's aggregation, which spills).
async fn failing_by_sql(
    ctx: &SessionContext,
    policy: &crate::policy::Policy,
    table: &crate::provider::GeneralizedTable,
    width: usize,
    progress: Option<Arc<ScanProgress>>,
) -> Result<(ClassCounter, u64, u64, Vec<RecordBatch>)> {
    let count_sql = format!("SELECT count(*) FROM {}", quote_ident(policy.table_name()));
    let input_rows = first_i64(&ctx.sql(&count_sql).await?.collect().await?) as u64;
    let frame = ctx
        .execute_logical_plan(table.failing_classes_plan()?)
        .await?;
    let task_ctx = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await?;
    let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
    let batches = datafusion::physical_plan::collect(plan, task_ctx).await?;
    Ok((
        failing_from_batches(&batches, width)?,
        failing_rows(&batches),
        input_rows,
        batches,
    ))
}

/// The rows of the failing classes of `batches` (their last column).
fn failing_rows(batches: &[RecordBatch]) -> u64 {
    batches
        .iter()
        .map(|b| {
            let rows = b.column(b.num_columns() - 1).as_primitive::<Int64Type>();
            rows.iter().flatten().map(|r| r as u64).sum::<u64>()
        })
        .sum()
}

/// The failing classes of `batches` (the first `width` columns are the labels) as a counter.
fn failing_from_batches(batches: &[RecordBatch], width: usize) -> Result<ClassCounter> {
    let mut failing = ClassCounter::new(width);
    let mut classes = Vec::new();
    for batch in batches {
        if batch.num_columns() < width {
            return Err(DataFusionError::Internal(format!(
                "failing classes with {} columns for {width} quasi-identifiers",
                batch.num_columns()
            )));
        }
        failing.classify(&batch.columns()[..width], batch.num_rows(), &mut classes)?;
    }
    Ok(failing)
}

/// The classes of the recoded rows and their sizes: one scan of the quasi-identifiers, each
/// partition counted in its own task, the counters merged.
async fn count_classes(
    ctx: &SessionContext,
    recoded: &LogicalPlan,
    quasi_identifiers: &[String],
    progress: Option<Arc<ScanProgress>>,
) -> Result<ClassCounter> {
    let keys: Vec<Expr> = quasi_identifiers
        .iter()
        .map(|q| Expr::Column(Column::from_name(q)))
        .collect();
    let plan = LogicalPlanBuilder::from(recoded.clone())
        .project(keys)?
        .build()?;
    let plan = ctx.state().create_physical_plan(&plan).await?;
    let _watch = progress.map(|p| crate::progress::watch(Arc::clone(&plan), p));
    let streams = execute_stream_partitioned(plan, ctx.task_ctx())?;
    let width = quasi_identifiers.len();
    let pool = Arc::clone(&ctx.runtime_env().memory_pool);
    let mut tasks = tokio::task::JoinSet::new();
    for mut stream in streams {
        let reservation = MemoryConsumer::new("anon class count").register(&pool);
        tasks.spawn(async move {
            let mut counter = ClassCounter::new(width);
            while let Some(batch) = stream.next().await {
                let batch = batch?;
                counter.count(batch.columns(), batch.num_rows())?;
                reservation.try_resize(counter.memory_size())?;
            }
            Ok::<_, DataFusionError>((counter, reservation))
        });
    }
    // each partition's memory stays reserved until it is merged
    let mut total: Option<(ClassCounter, MemoryReservation)> = None;
    while let Some(counted) = tasks.join_next().await {
        let (counted, reservation) = counted
            .map_err(|e| DataFusionError::Execution(format!("class count failed: {e}")))??;
        match total.as_mut() {
            None => total = Some((counted, reservation)),
            Some((total, total_reservation)) => {
                total.merge(&counted);
                drop(reservation);
                total_reservation.try_resize(total.memory_size())?;
            }
        }
    }
    Ok(total.map_or_else(|| ClassCounter::new(width), |(counter, _)| counter))
}

/// The partitions' counters of written classes, merged, with the rows counted by class key
/// (`keys`, whose labels `lookup` gives).
fn merge_counters(
    counters: &Mutex<Vec<(usize, ClassCounter)>>,
    keys: &Mutex<Vec<KeyCounts>>,
    lookup: Option<&LocalRecodeFunction>,
    width: usize,
) -> Result<ClassCounter> {
    let lost =
        || DataFusionError::Execution("the counts of the written classes were lost".to_string());
    let mut counters = counters.lock().map_err(|_| lost())?;
    let mut keys = keys.lock().map_err(|_| lost())?;
    if let Some(mut merged_keys) = keys.pop() {
        for other in keys.iter() {
            merged_keys.merge(other);
        }
        let lookup = lookup.ok_or_else(|| {
            DataFusionError::Internal("rows counted by class key without a lookup".to_string())
        })?;
        counters.push((usize::MAX, merged_keys.classes(lookup)?));
    }
    let mut merged = counters
        .pop()
        .map_or_else(|| ClassCounter::new(width), |(_, counter)| counter);
    for (_, counter) in counters.iter() {
        merged.merge(counter);
    }
    Ok(merged)
}

/// [`Verification`] of a k-only policy from the classes of the written rows.
fn measure_classes(
    written: &ClassCounter,
    requirements: &PrivacyRequirements,
    suppression: SuppressionMode,
    input_rows: u64,
) -> Verification {
    let bounds: Vec<Vec<Bound>> = requirements.sensitive.iter().map(|s| s.bounds()).collect();
    let mut summary = ClassSummary::new(&bounds);
    for class in 0..written.classes() as u32 {
        let size = written.size(class);
        if size == 0 {
            // a failing class whose rows were all dropped or masked
            continue;
        }
        let is_top = written
            .labels(class)
            .all(|label| label == Some(TOP_LABEL.as_bytes()));
        summary.add_class(size, size >= requirements.k, is_top, suppression);
    }
    summary.finish(requirements, &bounds, suppression, input_rows)
}

fn first_i64(batches: &[datafusion::arrow::record_batch::RecordBatch]) -> i64 {
    batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| {
            let column = b.column(0).as_primitive_opt::<Int64Type>()?;
            column.is_valid(0).then(|| column.value(0))
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::parquet::file::properties::WriterProperties;
    use datafusion::physical_plan::ExecutionPlanProperties;
    use datafusion::prelude::SessionConfig;

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
