//! Publishing a location cloaking ([`crate::cloaking`]): the events with their position and
//! time replaced by their (cell, window) label, written staged, verified from the written
//! file, and only then put in place.
//!
//! ```text
//! <every published column of the input but the position, time and subject>
//! cell            Utf8       the quadkey of the label's quadtree cell (adaptive: the smallest
//!                            holding its box)
//! cell_min_lat … cell_max_lon   Float64   the label's box, degrees
//! window_start, window_end      Timestamp(µs, the input's time zone)   [start, end)
//! <subject>       Int64      the per-release pseudonym, only with pseudonym = true
//! ```
//!
//! Suppressed events are not written. Rows are in a random order drawn from the run's seed (an
//! input sorted by subject must not leave each subject's events next to each other), so the
//! same seed gives the same bytes.
//!
//! **Verification** reads the written file back: every label — the tuple of the cell, box and
//! window columns — holds at least k distinct subject pseudonyms (the pseudonym column is
//! written for this and, when the subject is dropped, removed in a second staged copy that must
//! hold the same rows); no pseudonym is NULL; every box's side and every window's length are
//! within the tolerances; the file holds exactly the published events. Any failure publishes
//! nothing.

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{
    Array, ArrayRef, Float64Builder, RecordBatch, StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::compute::interleave;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::{Output, PublishRequest, StagedOutput};
use crate::cloaking::{Cloaked, CloakingOptions, SUPPRESSED};
use crate::functions::quadtree::EARTH_RADIUS_M;
use crate::policy::Policy;
use crate::rng::SplitMix64;
use crate::text::quote_ident;

/// Rows per written batch.
const BATCH_ROWS: usize = 8192;
/// The label columns, in order.
pub const LABEL_COLUMNS: [&str; 7] = [
    "cell",
    "cell_min_lat",
    "cell_min_lon",
    "cell_max_lat",
    "cell_max_lon",
    "window_start",
    "window_end",
];
/// The subject pseudonyms' column while it is verified, when the subject is dropped.
const VERIFIED_SUBJECT: &str = "__anon_subject";

/// The events read, as the job hands them over: the input's batches in scan order, each
/// batch's subject pseudonyms, the columns to keep and the time zone of the time column.
pub struct CloakedInput {
    /// The input, in scan order (the events' order).
    pub batches: Vec<RecordBatch>,
    /// Per batch: the subject pseudonyms (Int64).
    pub pseudonyms: Vec<ArrayRef>,
    /// The input columns published as they are, by index.
    pub kept: Vec<usize>,
    /// The time column's time zone.
    pub time_zone: Option<Arc<str>>,
    /// The subject column's name, when its pseudonym is published under it.
    pub published_subject: Option<String>,
}

/// What was written and verified.
#[derive(Debug, Clone, Serialize)]
pub struct CloakedPublish {
    /// Where.
    pub output: String,
    /// The Delta table's new version (a Delta output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delta_version: Option<i64>,
    /// Rows written.
    pub rows: u64,
    /// Measured on the written file.
    pub verification: CloakVerification,
    /// Seconds writing.
    pub write_seconds: f64,
    /// Seconds verifying.
    pub verify_seconds: f64,
    /// Each published column but the labels and the subject, measured with the labels: the
    /// share of rows it makes unique (the check every method's release passes,
    /// [`super::uniqueness::check_release`]).
    pub uniqueness: Vec<crate::policy::ColumnUniqueness>,
    /// The uniqueness check's warnings, as printed on stderr.
    pub warnings: Vec<String>,
    /// Seconds of the uniqueness check (part of `verify_seconds`; the report's
    /// `seconds.uniqueness`).
    #[serde(skip)]
    pub uniqueness_seconds: f64,
}

/// The figures verification measured on the written file.
#[derive(Debug, Clone, Serialize)]
pub struct CloakVerification {
    /// Distinct labels.
    pub labels: u64,
    /// The fewest distinct subjects of a label.
    pub min_subjects: u64,
    /// The largest box side, metres.
    pub max_cell_side_m: f64,
    /// The longest window, seconds.
    pub max_window_s: f64,
}

/// Writes `cloaked` of `input` to `out` in the order `seed` draws, verifies it and commits it.
pub async fn publish_cloaked(
    ctx: &SessionContext,
    input: Arc<CloakedInput>,
    cloaked: Arc<Cloaked>,
    options: &CloakingOptions,
    output: &Output,
    policy: &Policy,
    seed: u64,
) -> Result<CloakedPublish> {
    let request = PublishRequest::new(ctx, policy, output);
    let started = Instant::now();
    let out = output.location();
    let published = cloaked.label_of.len() - cloaked.suppressed;
    let suppressed = cloaked.suppressed as u64;
    let rows = Arc::new(shuffled_rows(&cloaked, seed));
    let batches = Arc::new(OutputBatches::new(input, cloaked, rows)?);
    let in_order = SessionContext::new_with_state(super::in_order(ctx));
    let table = StreamingTable::try_new(Arc::clone(&batches.schema), vec![batches.clone()])?;
    let frame = super::writer_context(&in_order).read_table(Arc::new(table))?;
    // an append's columns: without the pseudonyms written only to be verified
    let staged = request
        .write(frame, |_| {
            let published = batches
                .schema
                .fields()
                .iter()
                .filter(|f| f.name() != VERIFIED_SUBJECT);
            Arc::new(Schema::new(published.cloned().collect::<Vec<_>>()))
        })
        .await?;
    let write_seconds = started.elapsed().as_secs_f64();
    let verifying = Instant::now();
    let subject = batches.subject_column();
    let verification = verify(ctx, &staged, options, subject, published as u64).await?;
    // the labels take the quasi-identifiers' place; the subject's pseudonyms are unique to
    // their subject by design (their risk is the unicity's)
    let labels: Vec<String> = LABEL_COLUMNS.iter().map(|c| c.to_string()).collect();
    let checking = Instant::now();
    let uniqueness = request
        .check_uniqueness(ctx, &staged, &labels, &[subject])
        .await?;
    let uniqueness_seconds = checking.elapsed().as_secs_f64();
    let staged = if batches.input.published_subject.is_none() {
        staged.without_column(ctx, VERIFIED_SUBJECT).await?
    } else {
        staged
    };
    let verify_seconds = verifying.elapsed().as_secs_f64();
    let rows = staged.rows_written;
    let (_, delta_version) = request
        .commit(staged, || {
            serde_json::json!({
                "rows": rows,
                "labels": verification.labels,
                "min_subjects": verification.min_subjects,
                "suppressed": suppressed,
            })
        })
        .await?;
    Ok(CloakedPublish {
        output: out.to_string(),
        delta_version,
        rows,
        verification,
        write_seconds,
        verify_seconds,
        uniqueness: uniqueness.columns,
        warnings: uniqueness.warnings,
        uniqueness_seconds,
    })
}

/// The published events (global indices) in a random order drawn from `seed`.
fn shuffled_rows(cloaked: &Cloaked, seed: u64) -> Vec<u32> {
    let mut rows: Vec<u32> = (0..cloaked.label_of.len() as u32)
        .filter(|&e| cloaked.label_of[e as usize] != SUPPRESSED)
        .collect();
    let mut rng = SplitMix64(seed);
    for i in (1..rows.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        rows.swap(i, j);
    }
    rows
}

/// The output's batches, made on demand.
struct OutputBatches {
    input: Arc<CloakedInput>,
    cloaked: Arc<Cloaked>,
    rows: Arc<Vec<u32>>,
    /// Where each input batch starts among the events.
    starts: Vec<usize>,
    schema: SchemaRef,
}

impl std::fmt::Debug for OutputBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OutputBatches({} rows)", self.rows.len())
    }
}

impl OutputBatches {
    fn new(input: Arc<CloakedInput>, cloaked: Arc<Cloaked>, rows: Arc<Vec<u32>>) -> Result<Self> {
        let Some(first) = input.batches.first() else {
            return Err(DataFusionError::Plan(
                "the input has no rows: nothing to publish".into(),
            ));
        };
        let source = first.schema();
        let mut fields: Vec<Field> = input
            .kept
            .iter()
            .map(|&i| source.field(i).clone())
            .collect();
        fields.push(Field::new("cell", DataType::Utf8, false));
        for name in &LABEL_COLUMNS[1..5] {
            fields.push(Field::new(*name, DataType::Float64, false));
        }
        let time = DataType::Timestamp(TimeUnit::Microsecond, input.time_zone.clone());
        fields.push(Field::new("window_start", time.clone(), false));
        fields.push(Field::new("window_end", time, false));
        let subject = input
            .published_subject
            .clone()
            .unwrap_or_else(|| VERIFIED_SUBJECT.to_string());
        fields.push(Field::new(subject, DataType::Int64, false));
        let mut starts = Vec::with_capacity(input.batches.len());
        let mut at = 0;
        for batch in &input.batches {
            starts.push(at);
            at += batch.num_rows();
        }
        Ok(Self {
            input,
            cloaked,
            rows,
            starts,
            schema: Arc::new(Schema::new(fields)),
        })
    }

    fn subject_column(&self) -> &str {
        self.schema
            .fields()
            .last()
            .map_or("", |f| f.name().as_str())
    }

    fn batch_count(&self) -> usize {
        self.rows.len().div_ceil(BATCH_ROWS)
    }

    fn batch(&self, index: usize) -> Result<RecordBatch> {
        let start = index * BATCH_ROWS;
        let rows = &self.rows[start..(start + BATCH_ROWS).min(self.rows.len())];
        let sources: Vec<(usize, usize)> = rows
            .iter()
            .map(|&e| {
                let e = e as usize;
                let batch = self.starts.partition_point(|&s| s <= e) - 1;
                (batch, e - self.starts[batch])
            })
            .collect();
        let mut columns: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for &column in &self.input.kept {
            let arrays: Vec<&dyn Array> = self
                .input
                .batches
                .iter()
                .map(|b| b.column(column).as_ref())
                .collect();
            columns.push(interleave(&arrays, &sources)?);
        }
        let n = rows.len();
        let mut cell = StringBuilder::with_capacity(n, n * 16);
        let mut bounds: [Float64Builder; 4] =
            std::array::from_fn(|_| Float64Builder::with_capacity(n));
        let mut window_start = TimestampMicrosecondBuilder::with_capacity(n);
        let mut window_end = TimestampMicrosecondBuilder::with_capacity(n);
        let mut key = String::with_capacity(32);
        for &e in rows {
            let label = &self.cloaked.labels[self.cloaked.label_of[e as usize] as usize];
            key.clear();
            label.cell.write_quadkey(&mut key);
            cell.append_value(&key);
            let b = label.bounds;
            for (builder, value) in bounds
                .iter_mut()
                .zip([b.min_lat, b.min_lon, b.max_lat, b.max_lon])
            {
                builder.append_value(value);
            }
            window_start.append_value(label.start);
            window_end.append_value(label.end);
        }
        columns.push(Arc::new(cell.finish()));
        for builder in &mut bounds {
            columns.push(Arc::new(builder.finish()));
        }
        let zone = self.input.time_zone.clone();
        columns.push(Arc::new(
            window_start.finish().with_timezone_opt(zone.clone()),
        ));
        columns.push(Arc::new(window_end.finish().with_timezone_opt(zone)));
        let pseudonyms: Vec<&dyn Array> =
            self.input.pseudonyms.iter().map(|a| a.as_ref()).collect();
        columns.push(interleave(&pseudonyms, &sources)?);
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

impl PartitionStream for OutputBatches {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, _ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let this = Self {
            input: Arc::clone(&self.input),
            cloaked: Arc::clone(&self.cloaked),
            rows: Arc::clone(&self.rows),
            starts: self.starts.clone(),
            schema: Arc::clone(&self.schema),
        };
        let batches = this.batch_count();
        let stream = futures::stream::iter((0..batches).map(move |i| this.batch(i)));
        Box::pin(RecordBatchStreamAdapter::new(
            Arc::clone(&self.schema),
            stream,
        ))
    }
}

/// Recounts the written file; see the module documentation.
async fn verify(
    ctx: &SessionContext,
    staged: &StagedOutput,
    options: &CloakingOptions,
    subject: &str,
    published: u64,
) -> Result<CloakVerification> {
    let table = super::verify::register_written(ctx, staged.staging(), "cloaked").await?;
    let labels: Vec<String> = LABEL_COLUMNS.iter().map(|c| quote_ident(c)).collect();
    let labels = labels.join(", ");
    let subject = quote_ident(subject);
    // the spherical area of a box over R²: Δλ · (sin φ_max − sin φ_min)
    let sql = format!(
        "SELECT count(*), min(subjects), sum(rows), sum(named), max(area), max(micros) FROM (
           SELECT count(DISTINCT {subject}) AS subjects, count(*) AS rows,
                  count({subject}) AS named,
                  max(radians(cell_max_lon - cell_min_lon)
                      * (sin(radians(cell_max_lat)) - sin(radians(cell_min_lat)))) AS area,
                  max(CAST(window_end AS BIGINT) - CAST(window_start AS BIGINT)) AS micros
           FROM {} GROUP BY {labels})",
        quote_ident(&table)
    );
    let result = ctx.sql(&sql).await?.collect().await;
    let _ = ctx.deregister_table(table.as_str());
    let batches = result?;
    let value = |column: usize| -> Option<f64> {
        let batch = batches.first()?;
        let array =
            datafusion::arrow::compute::cast(batch.column(column), &DataType::Float64).ok()?;
        let array = array
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Float64Array>()?;
        array.is_valid(0).then(|| array.value(0))
    };
    let fail = |what: String| {
        Err(DataFusionError::Execution(format!(
            "verification of the written release failed: {what}; nothing was published"
        )))
    };
    let labels = value(0).unwrap_or(0.0) as u64;
    let min_subjects = value(1).unwrap_or(0.0) as u64;
    let rows = value(2).unwrap_or(0.0) as u64;
    let named = value(3).unwrap_or(0.0) as u64;
    let area = value(4).unwrap_or(0.0);
    let seconds = value(5).unwrap_or(0.0) / 1e6;
    if rows != published || staged.rows_written != published {
        return fail(format!(
            "the file holds {rows} rows ({} written) where {published} events were published",
            staged.rows_written
        ));
    }
    if named != rows {
        return fail(format!("{} rows have no subject pseudonym", rows - named));
    }
    if published > 0 && min_subjects < options.k as u64 {
        return fail(format!(
            "a label holds {min_subjects} distinct subjects, fewer than k = {}",
            options.k
        ));
    }
    let max_side = EARTH_RADIUS_M * area.max(0.0).sqrt();
    // the area in SQL and in the cloaking differ by rounding only
    if max_side > options.max_cell_side_m * (1.0 + 1e-9) {
        return fail(format!(
            "a cell is {max_side:.1} m on a side, above max_cell_side = {} m",
            options.max_cell_side_m
        ));
    }
    if seconds * 1e6 > options.max_window_us() as f64 {
        return fail(format!("a window is {seconds} s long, above max_window"));
    }
    Ok(CloakVerification {
        labels,
        min_subjects,
        max_cell_side_m: max_side,
        max_window_s: seconds,
    })
}
