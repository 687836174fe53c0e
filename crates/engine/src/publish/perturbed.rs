//! Publishing a perturbed release ([`crate::perturb`]): two passes over the input, in the same
//! order (partitions of their own byte ranges, no work stealing: the second pass's decoded in
//! parallel), then the usual staged, shuffled, verified write.
//!
//! 1. **Read** the perturbed attributes (numeric ones as `f64`, PRAM ones as text), the strata
//!    and the permuted attributes. A record with a NULL or NaN in a numeric perturbed
//!    attribute is **suppressed**: never averaged into a group, noised or swapped (a NULL
//!    tells nothing to perturb, and a group of one NULL would publish it as it is). The
//!    suppressed share must stay within `max_suppression`, or nothing is written.
//! 2. **Compute** the release in memory ([`crate::perturb::release::compute`]); its utility
//!    and risk figures are measured on a sample of it on a thread of their own, while step 3
//!    runs.
//! 3. **Write**: the input read again, each batch's perturbed columns replaced by their
//!    published values (by the records' positions), suppressed records and identifiers left
//!    out; the rows shuffled with the run's seed (a perturbed record in input order would
//!    be linked to its original by position) and written to a staging location.
//! 4. **Verify** from the written files: the rows written are the records kept, and, with
//!    microaggregation, every class of equal published microaggregated values (and strata)
//!    holds at least k rows. Only then is the output moved into place.
//!
//! Types: microaggregated and noised attributes are published as `Float64` (a group's mean
//! of integers is not an integer); swapped, PRAM and permuted attributes keep their type
//! (their published values are values of the data).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array,
};
use datafusion::arrow::compute::{cast, concat, filter, take};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef};
use datafusion::arrow::row::{RowConverter, SortField};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::stats::Precision;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::{
    ExecutionPlan, ExecutionPlanProperties, SendableRecordBatchStream, StatisticsArgs,
    StatisticsContext,
};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use serde::Serialize;

use super::{Output, PublishRequest, StagedOutput};
use crate::perturb::measures::Utility;
use crate::perturb::release::{
    CategoricalInput, MEASURED_RECORDS, MicroReport, NumericInput, Pram, PramReport, ReleaseInput,
    Risk, Transformation, compute,
};
use crate::policy::file::Role;
use crate::policy::{Perturbation, Policy, quote_ident};

/// What was published and verified.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbedReport {
    /// `perturbation`.
    pub method: &'static str,
    /// Where the release went.
    pub output: String,
    /// The Delta table's new version (a Delta output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_version: Option<i64>,
    pub input_rows: u64,
    /// Records with a NULL or NaN in a numeric perturbed attribute, not published.
    pub suppressed_rows: u64,
    /// `shuffled`.
    pub row_order: &'static str,
    /// The seed of the noise, the swaps, PRAM's draws, the permutations and the row order:
    /// returned to the caller, written into a report only when asked for
    /// ([`crate::jobs::report::ReportTargets::recording_seed`]).
    pub seed: u64,
    /// Each perturbed attribute and its transformation.
    pub attributes: Vec<PerturbedAttribute>,
    /// Strata of microaggregation.
    pub strata: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub microaggregation: Option<MicroReport>,
    /// The microaggregation groups by size, as the profile's `class_sizes` (with
    /// microaggregation); charted in the HTML report.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub group_sizes: Vec<crate::profile::SizeBucket>,
    /// Utility of the numeric perturbed attributes, each record against its original.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub utility: Option<Utility>,
    /// Disclosure risk of the numeric perturbed attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    /// PRAM's matrices and bias-corrected estimates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pram: Vec<PramReport>,
    pub verification: PerturbedVerification,
    /// Each column published as it is (no perturbation, not a stratum), measured with the
    /// microaggregated values and the strata: the share of rows it makes unique (the check
    /// every method's release passes, [`super::uniqueness::check_release`]).
    pub uniqueness: Vec<crate::policy::ColumnUniqueness>,
    /// Every warning, as printed on stderr: noise that left the input's range, then the
    /// uniqueness check's.
    pub warnings: Vec<String>,
    pub seconds: PerturbedSeconds,
}

/// One perturbed attribute.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbedAttribute {
    pub attribute: String,
    pub transformation: &'static str,
    /// The level (noise), p (rank swapping) or retention (PRAM), when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parameter: Option<f64>,
}

/// Measured on the written files.
#[derive(Debug, Clone, Serialize)]
pub struct PerturbedVerification {
    pub rows: u64,
    /// Classes of equal published microaggregated values and strata (with microaggregation).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub classes: Option<u64>,
    /// The smallest of them: the release's k on the microaggregated attributes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
}

/// Seconds per phase.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PerturbedSeconds {
    pub read: f64,
    /// The release in memory.
    pub compute: f64,
    /// The utility and risk figures (on at most 1M records), on a thread of their own while
    /// the release is written (so overlapping `write`).
    pub measure: f64,
    pub write: f64,
    pub verify: f64,
    pub commit: f64,
}

/// The session both passes read with: partitions that each read their own byte ranges of
/// the input in order (no work stealing), so that partition p of the second pass holds the
/// records partition p of the first held, in the same order. The first pass counts each
/// partition's records; the second checks them ([`RewrittenRows`]).
fn ordered_reader(ctx: &SessionContext) -> SessionContext {
    SessionContext::new_with_state(super::in_order(ctx))
}

/// The physical plan of `frame` (a scan of the input) with its files split into byte ranges
/// of their own, one partition each: DataFusion splits a bare scan only under an operator
/// that gains from it, and each pass here is a bare scan. Both passes split the same files
/// the same way (by their sizes, whatever the columns read); a scan that cannot be split
/// (a Delta table's) is read as it is.
async fn split_scan(
    reader: &SessionContext,
    frame: datafusion::prelude::DataFrame,
) -> Result<Arc<dyn ExecutionPlan>> {
    let plan = frame.create_physical_plan().await?;
    let state = reader.state();
    let options = state.config().options();
    Ok(plan
        .repartitioned(options.execution.target_partitions, options)?
        .unwrap_or(plan))
}

/// What the first pass read.
struct ReadColumns {
    /// Records per partition of the read (the second pass must see the same).
    partition_rows: Vec<usize>,
    /// Per numeric perturbed attribute (policy order), every record's value (NaN for NULL).
    numeric: Vec<Vec<f64>>,
    /// Per PRAM attribute, the distinct values (first-appearance order) and every record's
    /// code (`None`: NULL).
    categorical: Vec<(Vec<String>, Vec<Option<u32>>)>,
    /// Every record's stratum (first-appearance order), with strata.
    strata: Option<Vec<u32>>,
    /// Per permuted attribute, every record's value.
    permuted: Vec<ArrayRef>,
}

/// Publishes `policy` (registered, with `perturbation`) to `output`; see the module docs.
pub async fn publish_perturbed(
    ctx: &SessionContext,
    policy: &Policy,
    perturbation: &Perturbation,
    output: &Output,
    seed: u64,
) -> Result<PerturbedReport> {
    let request = PublishRequest::new(ctx, policy, output);
    let started = Instant::now();
    let reader = ordered_reader(ctx);
    let table = policy.table_name();
    let frame = reader.table(table).await?;
    let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
    let numeric: Vec<(&str, &Transformation)> = perturbation
        .attributes
        .iter()
        .filter(|(_, t)| t.is_numeric())
        .map(|(n, t)| (n.as_str(), t))
        .collect();
    for (name, transformation) in &numeric {
        let field = schema.field_with_name(name)?;
        if !field.data_type().is_numeric() {
            // a CSV column of numbers read as text because of one value: the line of that
            // value (a column of text from its first value on is simply not numeric)
            if crate::tables::table_format(&policy.input().datafusion_path())?
                == crate::tables::TableFormat::Csv
                && let Some(change) = crate::tables::csv::locate_type_change(
                    policy.input(),
                    policy.storage(),
                    name,
                    DataType::is_numeric,
                )
                .await?
                && change.before.as_ref().is_some_and(DataType::is_numeric)
            {
                return Err(DataFusionError::Plan(format!(
                    "{}, and {} needs numbers: correct the value, or give the attribute type = \
                     \"float64\" (with [input] bad_values = \"null\" to read such values as \
                     NULL); nothing written",
                    change.describe(name),
                    transformation.name()
                )));
            }
            return Err(DataFusionError::Plan(format!(
                "attribute '{name}' of {} is {}, not numeric: {} needs numbers; nothing written",
                policy.input(),
                field.data_type(),
                transformation.name()
            )));
        }
    }
    let pram: Vec<(&str, &Pram)> = perturbation
        .attributes
        .iter()
        .filter_map(|(n, t)| match t {
            Transformation::Pram(p) => Some((n.as_str(), p)),
            _ => None,
        })
        .collect();
    let permuted: Vec<&str> = perturbation.with(|t| *t == Transformation::Permute);
    let read = read_columns(
        &reader,
        table,
        &numeric.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        &pram.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        &perturbation.strata,
        &permuted,
    )
    .await
    .map_err(|e| policy.locate_input_error(e))?;
    let read_seconds = started.elapsed().as_secs_f64();

    // records kept: no NULL or NaN in a numeric perturbed attribute
    let rows: usize = read.partition_rows.iter().sum();
    let mut compact_of = vec![u32::MAX; rows];
    let mut kept: Vec<u32> = Vec::with_capacity(rows);
    for (i, slot) in compact_of.iter_mut().enumerate() {
        if read.numeric.iter().all(|c| !c[i].is_nan()) {
            *slot = kept.len() as u32;
            kept.push(i as u32);
        }
    }
    let suppressed = rows - kept.len();
    let allowed = policy.requirements().max_suppression;
    if suppressed > 0 && suppressed as f64 > allowed * rows as f64 {
        return Err(DataFusionError::Plan(format!(
            "{suppressed} of {rows} records ({:.2} %) have a NULL or NaN in a numeric perturbed \
             attribute; they cannot be perturbed, and privacy.max_suppression = {allowed} allows \
             at most {:.0}; nothing written",
            100.0 * suppressed as f64 / rows.max(1) as f64,
            (allowed * rows as f64).floor()
        )));
    }
    // moved, not copied, when nothing is suppressed (at 10M records each column is 80 MB)
    let all_kept = kept.len() == rows;
    let compacted = |values: &mut Vec<f64>| -> Vec<f64> {
        if all_kept {
            std::mem::take(values)
        } else {
            kept.iter().map(|&i| values[i as usize]).collect()
        }
    };
    let mut read = read;
    let phase = Instant::now();
    let strata_names = perturbation.strata.join(", ");
    let describe = |id: u32| {
        format!(
            "stratum #{} (in order of first appearance) of [{strata_names}]",
            id + 1
        )
    };
    let input = ReleaseInput {
        numeric: numeric
            .iter()
            .zip(read.numeric.iter_mut())
            .map(|((name, t), values)| NumericInput {
                name: name.to_string(),
                transformation: (*t).clone(),
                values: compacted(values),
                bounds: perturbation.bounds.get(*name).copied(),
            })
            .collect(),
        categorical: pram
            .iter()
            .zip(&read.categorical)
            .map(|((name, p), (values, codes))| sorted_categories(name, p, values, codes, &kept))
            .collect(),
        permuted: permuted.len(),
        strata: read
            .strata
            .as_ref()
            .map(|s| kept.iter().map(|&i| s[i as usize]).collect()),
        micro: perturbation.micro,
        aggregate: perturbation.aggregate,
        disclosure_percent: perturbation.disclosure_percent,
        seed,
    };
    let mut release = compute(&input, &describe).map_err(|e| {
        DataFusionError::Plan(format!(
            "policy {}: {}; nothing written",
            policy.source(),
            e.message()
        ))
    })?;
    let compute_seconds = phase.elapsed().as_secs_f64();
    // noise that left the input's range, named: a warning (never a value)
    let mut warnings: Vec<String> = std::mem::take(&mut release.out_of_range)
        .into_iter()
        .map(|(name, outside)| {
            format!(
                "noise put {} published values of '{name}' outside the input's range (a \
                 negative amount where there was none, say): give the attribute bounds = \
                 \"observed\" (or [min, max]), or kind = \"multiplicative_noise\" for a \
                 positive quantity",
                crate::text::group_digits(outside)
            )
        })
        .collect();
    // the microaggregation groups by size, for the report's chart; freed with the release
    let group_sizes = release
        .groups
        .take()
        .map_or_else(Vec::new, crate::profile::size_buckets_of_ids);
    // the input's values are not needed again: freed before the write holds its own buffers
    drop(input);
    // the figures are measured on their sample while the release is written: the write
    // leaves part of the cores idle
    let measuring = release.measurement.take().map(|measurement| {
        std::thread::spawn(move || {
            let started = Instant::now();
            let (utility, risk) = measurement.measure();
            (utility, risk, started.elapsed().as_secs_f64())
        })
    });

    // the output: the policy's columns but identifiers, in the input's order
    let phase = Instant::now();
    let kept_indices = UInt32Array::from(kept.clone());
    let mut columns = Vec::new();
    let mut fields = Vec::new();
    // the release's outputs by attribute (they come in the perturbation's order; the output
    // is in the input's)
    let mut numeric_outputs: HashMap<&str, Vec<f64>> = numeric
        .iter()
        .map(|(n, _)| *n)
        .zip(release.numeric)
        .collect();
    let mut categorical_outputs: HashMap<&str, _> = pram
        .iter()
        .map(|(n, _)| *n)
        .zip(release.categorical)
        .collect();
    let mut permutations: HashMap<&str, Vec<u32>> =
        permuted.iter().copied().zip(release.permutations).collect();
    let mut permuted_inputs: HashMap<&str, ArrayRef> = permuted
        .iter()
        .copied()
        .zip(std::mem::take(&mut read.permuted))
        .collect();
    let mut pram_reports = Vec::new();
    // the second pass reads only the columns published as they are: the perturbed ones are
    // replaced and the identifiers left out (decoding them again was a tenth of a 10M-record
    // rank swap's write)
    let mut kept_columns: Vec<&str> = Vec::new();
    for column in policy.columns() {
        if column.role == Role::Identifier {
            continue;
        }
        let index = schema.index_of(&column.name)?;
        let field = schema.field(index);
        let transformation = perturbation
            .attributes
            .iter()
            .find(|(n, _)| *n == column.name)
            .map(|(_, t)| t);
        let (output, data_type) = match transformation {
            None => {
                kept_columns.push(column.name.as_str());
                (
                    OutputColumn::Keep(kept_columns.len() - 1),
                    field.data_type().clone(),
                )
            }
            Some(t) if t.is_numeric() => {
                let values = numeric_outputs
                    .remove(column.name.as_str())
                    .unwrap_or_default();
                let data_type = if matches!(t, Transformation::RankSwap(_)) {
                    field.data_type().clone()
                } else {
                    DataType::Float64
                };
                (
                    OutputColumn::Numeric {
                        values: Arc::new(values),
                        data_type: data_type.clone(),
                    },
                    data_type,
                )
            }
            Some(Transformation::Pram(_)) => {
                let published = categorical_outputs
                    .remove(column.name.as_str())
                    .ok_or_else(|| {
                        DataFusionError::Internal("a PRAM attribute without its output".into())
                    })?;
                pram_reports.push(published.report);
                let labels: ArrayRef = Arc::new(StringArray::from(published.categories));
                let codes = UInt32Array::from(published.codes);
                let values = take(labels.as_ref(), &codes, None)?;
                (
                    OutputColumn::Compact(cast(&values, field.data_type())?),
                    field.data_type().clone(),
                )
            }
            Some(_) => {
                // permuted: the kept records' values, each taken from its source record
                let all = permuted_inputs
                    .remove(column.name.as_str())
                    .ok_or_else(|| {
                        DataFusionError::Internal("a permuted attribute without its values".into())
                    })?;
                let source = permutations
                    .remove(column.name.as_str())
                    .unwrap_or_default();
                let kept_values = take(all.as_ref(), &kept_indices, None)?;
                let values = take(kept_values.as_ref(), &UInt32Array::from(source), None)?;
                (OutputColumn::Compact(values), field.data_type().clone())
            }
        };
        fields.push(Field::new(column.name.clone(), data_type, true));
        columns.push(output);
    }
    let output_schema = Arc::new(Schema::new(fields));
    let plan = split_scan(&reader, frame.select_columns(&kept_columns)?).await?;
    let partitions = plan.output_partitioning().partition_count();
    if partitions != read.partition_rows.len() {
        return Err(DataFusionError::Execution(format!(
            "input {}: read again, it is split into {partitions} partitions, not {} as the \
             first time (did it change?); nothing published",
            policy.input(),
            read.partition_rows.len()
        )));
    }
    let (columns, compact_of) = (Arc::new(columns), Arc::new(compact_of));
    let mut first = 0;
    let rows_out: Vec<Arc<dyn PartitionStream>> = read
        .partition_rows
        .iter()
        .enumerate()
        .map(|(partition, &rows)| {
            let records = first..first + rows;
            first += rows;
            Arc::new(RewrittenRows {
                schema: Arc::clone(&output_schema),
                plan: Arc::clone(&plan),
                task: reader.task_ctx(),
                partition,
                records,
                columns: Arc::clone(&columns),
                compact_of: Arc::clone(&compact_of),
            }) as Arc<dyn PartitionStream>
        })
        .collect();
    let shuffled = super::shuffle::shuffled(
        Arc::clone(&output_schema),
        rows_out,
        seed,
        kept.len() as u64,
    );
    // the release held in memory beside the write (the published values, the records'
    // positions, the measured sample), accounted in the session's pool: a fair pool gives the
    // spilling consumers (the shuffle) what unspillable reservations leave
    let held_bytes = numeric.len() * kept.len() * std::mem::size_of::<f64>()
        + (rows + 2 * kept.len()) * std::mem::size_of::<u32>()
        + numeric.len() * MEASURED_RECORDS.min(kept.len()) * 2 * std::mem::size_of::<f64>();
    let held =
        MemoryConsumer::new("anon perturbed release").register(&ctx.runtime_env().memory_pool);
    held.grow(held_bytes);
    let streaming = StreamingTable::try_new(Arc::clone(&output_schema), vec![shuffled])?;
    let frame = super::writer_context(ctx).read_table(Arc::new(streaming))?;
    let staged = request.write(frame, |_| Arc::clone(&output_schema)).await?;
    drop(held);
    let write_seconds = phase.elapsed().as_secs_f64();
    let (utility, risk, measure_seconds) = match measuring {
        Some(thread) => {
            let (utility, risk, seconds) = thread.join().map_err(|_| {
                DataFusionError::Internal("measuring the release panicked".to_string())
            })?;
            (Some(utility), Some(risk), seconds)
        }
        None => (None, None, 0.0),
    };

    let phase = Instant::now();
    let microaggregated = perturbation.microaggregated();
    let verification =
        verify_written(&reader, &staged, &microaggregated, &perturbation.strata).await?;
    let mut failures = Vec::new();
    if verification.rows != kept.len() as u64 || staged.rows_written != kept.len() as u64 {
        failures.push(format!(
            "{} rows were written where {} records were kept",
            verification.rows,
            kept.len()
        ));
    }
    if let Some(k) = verification.k
        && k < perturbation.micro.k as u64
    {
        failures.push(format!(
            "a class of the written microaggregated values has {k} rows, fewer than k = {}",
            perturbation.micro.k
        ));
    }
    if !failures.is_empty() {
        return Err(DataFusionError::Execution(format!(
            "verification failed: {}; nothing published",
            failures.join("; ")
        )));
    }
    // the microaggregated values and the strata make the classes; a perturbed attribute
    // protects itself (a noisy value is unique by design), so the columns published as they
    // are are measured
    let keys: Vec<String> = microaggregated
        .iter()
        .map(|c| c.to_string())
        .chain(perturbation.strata.iter().cloned())
        .collect();
    let perturbed: Vec<&str> = perturbation
        .attributes
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    let uniqueness = request
        .check_uniqueness(&reader, &staged, &keys, &perturbed)
        .await?;
    warnings.extend(uniqueness.warnings);
    let verify_seconds = phase.elapsed().as_secs_f64();
    let phase = Instant::now();
    let (written, delta_version) = request
        .commit(staged, || {
            serde_json::json!({
                "rows": verification.rows,
                "classes": verification.classes,
                "k": verification.k,
                "suppressed": suppressed,
            })
        })
        .await?;
    let commit_seconds = phase.elapsed().as_secs_f64();
    Ok(PerturbedReport {
        method: "perturbation",
        output: written,
        delta_version,
        input_rows: rows as u64,
        suppressed_rows: suppressed as u64,
        row_order: "shuffled",
        seed,
        attributes: perturbation
            .attributes
            .iter()
            .map(|(name, t)| PerturbedAttribute {
                attribute: name.clone(),
                transformation: t.name(),
                parameter: match t {
                    Transformation::Noise(l)
                    | Transformation::CorrelatedNoise(l)
                    | Transformation::MultiplicativeNoise(l) => Some(*l),
                    Transformation::RankSwap(p) => Some(*p),
                    Transformation::Pram(Pram::Retention { alpha, .. }) => Some(*alpha),
                    _ => None,
                },
            })
            .collect(),
        strata: perturbation.strata.clone(),
        microaggregation: release.micro,
        group_sizes,
        utility,
        risk,
        pram: pram_reports,
        verification,
        uniqueness: uniqueness.columns,
        warnings,
        seconds: PerturbedSeconds {
            read: read_seconds,
            compute: compute_seconds,
            measure: measure_seconds,
            write: write_seconds,
            verify: verify_seconds,
            commit: commit_seconds,
        },
    })
}

/// The categories of a PRAM attribute sorted (so codes do not depend on the input's order),
/// and the kept records' codes among them.
fn sorted_categories(
    name: &str,
    pram: &Pram,
    values: &[String],
    codes: &[Option<u32>],
    kept: &[u32],
) -> CategoricalInput {
    let mut order: Vec<u32> = (0..values.len() as u32).collect();
    order.sort_by(|&a, &b| values[a as usize].cmp(&values[b as usize]));
    let mut rank = vec![0u32; values.len()];
    for (r, &v) in order.iter().enumerate() {
        rank[v as usize] = r as u32;
    }
    CategoricalInput {
        name: name.to_string(),
        pram: pram.clone(),
        values: order.iter().map(|&v| values[v as usize].clone()).collect(),
        codes: kept
            .iter()
            .map(|&i| codes[i as usize].map(|c| rank[c as usize]))
            .collect(),
    }
}

/// The first pass (see the module docs).
async fn read_columns(
    reader: &SessionContext,
    table: &str,
    numeric: &[&str],
    pram: &[&str],
    strata: &[String],
    permuted: &[&str],
) -> Result<ReadColumns> {
    // only the columns the release needs, each once, in the input's order
    let frame = reader.table(table).await?;
    let needed: Vec<&str> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .filter(|name| {
            numeric.contains(name)
                || pram.contains(name)
                || strata.iter().any(|s| s == name)
                || permuted.contains(name)
        })
        .collect();
    let frame = frame.clone().select_columns(&needed)?;
    let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
    let position = |name: &str| schema.index_of(name);
    let numeric_at: Vec<usize> = numeric
        .iter()
        .map(|n| position(n))
        .collect::<Result<_, _>>()?;
    let pram_at: Vec<usize> = pram.iter().map(|n| position(n)).collect::<Result<_, _>>()?;
    let strata_at: Vec<usize> = strata
        .iter()
        .map(|n| position(n))
        .collect::<Result<_, _>>()?;
    let permuted_at: Vec<usize> = permuted
        .iter()
        .map(|n| position(n))
        .collect::<Result<_, _>>()?;
    let converter = if strata.is_empty() {
        None
    } else {
        Some(RowConverter::new(
            strata_at
                .iter()
                .map(|&i| SortField::new(schema.field(i).data_type().clone()))
                .collect(),
        )?)
    };
    let plan = split_scan(reader, frame).await?;
    // the columns sized once when the input knows its rows (Parquet's footer): growing them
    // by doubling would hold the old and the new buffers of every column at once
    let expected = {
        let statistics = StatisticsContext::new().compute(plan.as_ref(), &StatisticsArgs::new())?;
        match statistics.num_rows {
            Precision::Exact(rows) => rows,
            _ => 0,
        }
    };
    // every partition decoded on a task of its own, its numeric values gathered there; the
    // other columns (PRAM, strata, permuted) are coded afterwards, partition by partition in
    // order, since their codes are numbered by first appearance (decoding the partitions in
    // turn left all cores but one idle: 1.0 s of a 5.5 s rank swap of 10M records)
    let task = reader.task_ctx();
    let partitions = plan.output_partitioning().partition_count();
    let numeric_at: Arc<[usize]> = numeric_at.into();
    let mut others_at: Vec<usize> = pram_at
        .iter()
        .chain(&strata_at)
        .chain(&permuted_at)
        .copied()
        .collect();
    others_at.sort_unstable();
    others_at.dedup();
    let other_position = |at: usize| others_at.iter().position(|&o| o == at).unwrap_or(0);
    let (pram_in, strata_in, permuted_in): (Vec<usize>, Vec<usize>, Vec<usize>) = (
        pram_at.iter().map(|&a| other_position(a)).collect(),
        strata_at.iter().map(|&a| other_position(a)).collect(),
        permuted_at.iter().map(|&a| other_position(a)).collect(),
    );
    let others_at: Arc<[usize]> = others_at.into();
    let tasks = (0..partitions)
        .map(|partition| {
            let stream = plan.execute(partition, Arc::clone(&task))?;
            // room for every record in each partition's columns: the first one's grow into
            // the whole columns, and room not written to takes no memory
            Ok(SpawnedTask::spawn(read_partition(
                stream,
                Arc::clone(&numeric_at),
                Arc::clone(&others_at),
                expected,
            )))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut parts = Vec::with_capacity(partitions);
    for task in tasks {
        parts.push(task.join_unwind().await.map_err(|e| {
            DataFusionError::Execution(format!("reading the input stopped: {e}"))
        })??);
    }
    let mut read = ReadColumns {
        partition_rows: parts.iter().map(|part| part.rows).collect(),
        numeric: vec![Vec::new(); numeric_at.len()],
        categorical: vec![(Vec::new(), Vec::new()); pram.len()],
        strata: converter.as_ref().map(|_| Vec::new()),
        permuted: Vec::new(),
    };
    for part in &mut parts {
        for (column, values) in read.numeric.iter_mut().zip(&mut part.numeric) {
            if column.is_empty() {
                *column = std::mem::take(values);
            } else {
                column.extend_from_slice(values);
                *values = Vec::new();
            }
        }
    }
    let mut category_codes: Vec<HashMap<String, u32>> = vec![HashMap::new(); pram.len()];
    let mut stratum_ids: HashMap<Box<[u8]>, u32> = HashMap::new();
    let mut permuted_batches: Vec<Vec<ArrayRef>> = vec![Vec::new(); permuted.len()];
    for batch in parts.iter().flat_map(|part| &part.others) {
        for (j, &at) in pram_in.iter().enumerate() {
            let text = cast(batch.column(at), &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            let (values, codes) = &mut read.categorical[j];
            let known = &mut category_codes[j];
            for i in 0..text.len() {
                if text.is_null(i) {
                    codes.push(None);
                    continue;
                }
                let value = text.value(i);
                let code = match known.get(value) {
                    Some(&code) => code,
                    None => {
                        let code = values.len() as u32;
                        values.push(value.to_string());
                        known.insert(value.to_string(), code);
                        code
                    }
                };
                codes.push(Some(code));
            }
        }
        if let (Some(converter), Some(ids)) = (&converter, &mut read.strata) {
            let keys: Vec<ArrayRef> = strata_in
                .iter()
                .map(|&i| Arc::clone(batch.column(i)))
                .collect();
            let rows = converter.convert_columns(&keys)?;
            for row in rows.iter() {
                let next = stratum_ids.len() as u32;
                let id = match stratum_ids.get(row.as_ref()) {
                    Some(&id) => id,
                    None => {
                        stratum_ids.insert(row.as_ref().into(), next);
                        next
                    }
                };
                ids.push(id);
            }
        }
        for (j, &at) in permuted_in.iter().enumerate() {
            permuted_batches[j].push(Arc::clone(batch.column(at)));
        }
    }
    for (j, batches) in permuted_batches.into_iter().enumerate() {
        let refs: Vec<&dyn Array> = batches.iter().map(|a| a.as_ref()).collect();
        read.permuted.push(if refs.is_empty() {
            datafusion::arrow::array::new_empty_array(schema.field(permuted_at[j]).data_type())
        } else {
            concat(&refs)?
        });
    }
    Ok(read)
}

/// One partition's share of the first pass: its rows, each numeric attribute's values (NaN for
/// NULL) and its batches of the other columns read (`others_at`), coded later in order.
struct PartitionPart {
    rows: usize,
    numeric: Vec<Vec<f64>>,
    others: Vec<RecordBatch>,
}

async fn read_partition(
    mut stream: SendableRecordBatchStream,
    numeric_at: Arc<[usize]>,
    others_at: Arc<[usize]>,
    capacity: usize,
) -> Result<PartitionPart> {
    let mut part = PartitionPart {
        rows: 0,
        numeric: vec![Vec::with_capacity(capacity); numeric_at.len()],
        others: Vec::new(),
    };
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        part.rows += batch.num_rows();
        for (out, &at) in part.numeric.iter_mut().zip(numeric_at.iter()) {
            let values = cast(batch.column(at), &DataType::Float64)?;
            let values = values.as_primitive::<Float64Type>();
            if values.null_count() == 0 {
                out.extend_from_slice(values.values());
            } else {
                out.extend((0..values.len()).map(|i| {
                    if values.is_null(i) {
                        f64::NAN
                    } else {
                        values.value(i)
                    }
                }));
            }
        }
        if !others_at.is_empty() {
            part.others.push(batch.project(&others_at)?);
        }
    }
    Ok(part)
}

/// How the second pass makes an output column from a batch of the input.
#[derive(Debug)]
enum OutputColumn {
    /// The column at this index of the second pass (which reads only these), as it is.
    Keep(usize),
    /// The published values of the kept records (by compact index), as `data_type`.
    Numeric {
        values: Arc<Vec<f64>>,
        data_type: DataType,
    },
    /// The published values of the kept records, already an array.
    Compact(ArrayRef),
}

/// The second pass over one partition of the input: its batches, their kept records with
/// the published values.
#[derive(Debug)]
struct RewrittenRows {
    schema: SchemaRef,
    plan: Arc<dyn ExecutionPlan>,
    /// The reader's task context: its files are read without work stealing (the writer's
    /// session, which runs this stream, would let partitions take each other's files).
    task: Arc<TaskContext>,
    partition: usize,
    /// The records (positions in the first pass's order) the partition held the first time.
    records: std::ops::Range<usize>,
    columns: Arc<Vec<OutputColumn>>,
    /// Each record's compact index (`u32::MAX`: suppressed).
    compact_of: Arc<Vec<u32>>,
}

impl PartitionStream for RewrittenRows {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _writer: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        let columns = Arc::clone(&self.columns);
        let compact_of = Arc::clone(&self.compact_of);
        let records = self.records.clone();
        let mut offset = records.start;
        let input = match self.plan.execute(self.partition, Arc::clone(&self.task)) {
            Ok(stream) => stream,
            Err(e) => {
                return Box::pin(RecordBatchStreamAdapter::new(
                    schema,
                    futures::stream::once(async move { Err(e) }),
                ));
            }
        };
        let out_schema = Arc::clone(&schema);
        let stream = input.map(move |batch| {
            let batch = batch?;
            let len = batch.num_rows();
            let end = offset + len;
            if end > records.end {
                return Err(DataFusionError::Execution(
                    "the input has more rows than when it was first read (did it change?); \
                     nothing published"
                        .into(),
                ));
            }
            let slots = &compact_of[offset..end];
            offset = end;
            rewrite(&batch, slots, &columns, &out_schema)
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, stream))
    }
}

/// One batch of the second pass: its kept records (`slots`: compact index or `u32::MAX`), each
/// column made by its [`OutputColumn`].
fn rewrite(
    batch: &RecordBatch,
    slots: &[u32],
    columns: &[OutputColumn],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let mask = BooleanArray::from_iter(slots.iter().map(|&s| Some(s != u32::MAX)));
    let indices = UInt32Array::from_iter_values(slots.iter().copied().filter(|&s| s != u32::MAX));
    let arrays = columns
        .iter()
        .map(|column| -> Result<ArrayRef> {
            Ok(match column {
                OutputColumn::Keep(at) => filter(batch.column(*at), &mask)?,
                OutputColumn::Numeric { values, data_type } => {
                    let published: ArrayRef = Arc::new(Float64Array::from_iter_values(
                        indices.values().iter().map(|&c| values[c as usize]),
                    ));
                    if *data_type == DataType::Float64 {
                        published
                    } else {
                        cast(&published, data_type)?
                    }
                }
                OutputColumn::Compact(values) => take(values.as_ref(), &indices, None)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), arrays)?)
}

/// Counts the written rows and, with microaggregated attributes, the classes of their equal
/// published values (with the strata) and the smallest.
async fn verify_written(
    reader: &SessionContext,
    staged: &StagedOutput,
    microaggregated: &[&str],
    strata: &[String],
) -> Result<PerturbedVerification> {
    let table = super::verify::register_written(reader, staged.staging(), "perturbed").await?;
    let scalar = |batches: &[RecordBatch], column: usize| -> Option<i64> {
        let batch = batches.first()?;
        let values = batch.column(column).as_primitive_opt::<Int64Type>()?;
        (!values.is_empty() && values.is_valid(0)).then(|| values.value(0))
    };
    let rows = reader
        .sql(&format!("SELECT count(*) FROM {}", quote_ident(&table)))
        .await?
        .collect()
        .await?;
    let rows = scalar(&rows, 0).unwrap_or(0) as u64;
    let (classes, k) = if microaggregated.is_empty() {
        (None, None)
    } else {
        let keys: Vec<String> = microaggregated
            .iter()
            .map(|c| quote_ident(c))
            .chain(strata.iter().map(|s| quote_ident(s)))
            .collect();
        let batches = reader
            .sql(&format!(
                "SELECT count(*), min(c) FROM (SELECT count(*) AS c FROM {} GROUP BY {})",
                quote_ident(&table),
                keys.join(", ")
            ))
            .await?
            .collect()
            .await?;
        (
            scalar(&batches, 0).map(|c| c as u64),
            Some(scalar(&batches, 1).unwrap_or(0) as u64),
        )
    };
    reader.deregister_table(table.as_str())?;
    Ok(PerturbedVerification { rows, classes, k })
}
