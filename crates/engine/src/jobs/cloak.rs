//! `anonymize` for a policy whose `[privacy] method` is `cloaking`: read the events (one scan,
//! in the input's order), code each subject by its per-release pseudonym, cloak
//! ([`crate::cloaking`]), publish staged and verified ([`crate::publish::cloaked`]), measure
//! the location figures and unicity, report. Reached through [`super::anonymize::anonymize`].
//!
//! **Bad input** is refused before anything is written, with one message naming the column
//! and, for a value, its row (counted from 1 in the input's scan order — for one file, the
//! file's order), never the value: a latitude outside [-90, 90] or a longitude outside
//! [-180, 180]; a NULL position, time or subject (no event is silently dropped); a time column
//! that is not a timestamp, a position column that is not a number.

use crate::functions::quadtree::PositionError;
use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use serde::Serialize;

use super::Observer;
use super::output::{PlannedOutput, cloaking_info};
use crate::cloaking::figures::{LocationFigures, location_figures};
use crate::cloaking::unicity::{UnicityFigures, unicity_of_events};
use crate::cloaking::{self, Cloaked, Events, SUPPRESSED};
use crate::policy::cloaking::{Cloaking, UNICITY_WARNING, UNICITY_WARNING_POINTS};
use crate::policy::{PersonPublished, Policy, Role, quote_ident};
use crate::pseudonym::{PseudonymKey, pseudonyms};
use crate::publish::cloaked::{CloakedInput, CloakedPublish, publish_cloaked};

pub use crate::cloaking::unicity::{UNICITY_POINTS, UNICITY_SAMPLE};

/// The report of a cloaked release (the keys `--report` writes).
#[derive(Debug, Serialize)]
pub struct CloakingReport {
    pub policy: String,
    pub input: String,
    pub method: &'static str,
    /// `quadtree` or `adaptive`.
    pub cells: &'static str,
    pub k: u32,
    pub max_cell_side_m: f64,
    pub window_s: f64,
    pub max_window_s: f64,
    pub max_level: u8,
    /// The seed of the written rows' order and of unicity's draws.
    pub seed: u64,
    /// `dropped` or `pseudonym`.
    pub subject: &'static str,
    pub events: u64,
    pub subjects: u64,
    pub suppressed: u64,
    pub max_suppression: f64,
    pub figures: LocationFigures,
    /// Unicity of the input's traces at (finest cell at max_level, base window).
    pub unicity_input: UnicityFigures,
    /// Unicity of the release's traces (labels) when each event keeps its subject's pseudonym.
    pub unicity_release: UnicityFigures,
    /// The labels by their published events, as the profile's `class_sizes`; charted in the
    /// HTML report.
    pub label_sizes: Vec<crate::profile::SizeBucket>,
    /// The suppressed events by hour (UTC) and by the root cells holding the most.
    pub suppressed_where: crate::cloaking::figures::SuppressedFigures,
    /// Every warning, as printed on stderr: the release's unicity with pseudonyms, then the
    /// uniqueness check's (`publish.warnings`).
    pub warnings: Vec<String>,
    pub publish: CloakedPublish,
    pub seconds: CloakTimings,
}

/// Seconds per phase.
#[derive(Debug, Serialize)]
pub struct CloakTimings {
    pub read: f64,
    pub cloak: f64,
    pub write: f64,
    pub verify: f64,
    /// The uniqueness check, part of `verify`.
    pub uniqueness: f64,
    pub measure: f64,
    pub total: f64,
}

/// Publishes the cloaking of `policy`'s input to `planned` (checked by the caller); `seed`
/// orders the written rows and draws unicity's samples; `started` is when the job started.
pub async fn cloak(
    ctx: &SessionContext,
    mut policy: Policy,
    planned: &PlannedOutput,
    seed: u64,
    observer: &dyn Observer,
    started: Instant,
) -> Result<CloakingReport> {
    let cloaking = policy.cloaking().cloned().ok_or_else(|| {
        DataFusionError::Internal(format!("policy {}: no cloaking", policy.source()))
    })?;
    let output = planned.output(|| cloaking_info("anonymize", &policy, &cloaking));
    policy.register_with(ctx, false).await?;
    let nothing_written =
        |e: DataFusionError| DataFusionError::Plan(format!("{}; nothing written", e.message()));
    let phase = Instant::now();
    let read = read_events(ctx, &policy, &cloaking)
        .await
        .map_err(|e| nothing_written(policy.locate_input_error(e)))?;
    let read_seconds = phase.elapsed().as_secs_f64();
    observer.note(&format!(
        "read {} events of {} subjects ({read_seconds:.2} s)",
        read.events.len(),
        read.events.subjects
    ));
    let phase = Instant::now();
    let cloaked = cloaking::cloak(&read.events, &cloaking.options).map_err(nothing_written)?;
    let cloak_seconds = phase.elapsed().as_secs_f64();
    let events = read.events.len() as u64;
    let share = if events == 0 {
        0.0
    } else {
        cloaked.suppressed as f64 / events as f64
    };
    let max_suppression = policy.requirements().max_suppression;
    if share > max_suppression {
        let hints =
            crate::cloaking::figures::tolerance_hints(&read.events, &cloaked, &cloaking.options);
        return Err(DataFusionError::Execution(format!(
            "{} of {events} events ({:.2}%) cannot be cloaked within max_cell_side and \
             max_window, above max_suppression = {max_suppression}; {}; raise the tolerances \
             or max_suppression, or lower k; nothing written",
            cloaked.suppressed,
            share * 100.0,
            describe_hints(&hints, events)
        )));
    }
    observer.note(&format!(
        "{}: {} labels, {} events suppressed ({cloak_seconds:.2} s)",
        cloaking.options.variant.name(),
        cloaked.labels.len(),
        cloaked.suppressed
    ));
    let person = policy.person().map(|p| p.published);
    let published_subject =
        (person == Some(PersonPublished::Pseudonym)).then(|| cloaking.subject.clone());
    let events_data = read.events;
    let cloaked = Arc::new(cloaked);
    let input = Arc::new(CloakedInput {
        batches: read.batches,
        pseudonyms: read.pseudonyms,
        kept: read.kept,
        time_zone: read.time_zone,
        published_subject,
    });
    // unicity comes from the labels in memory: measured, and judged, before anything is
    // written
    let phase = Instant::now();
    let (unicity_input, unicity_release) = unicity(&events_data, &cloaked, &cloaking, seed);
    let unicity_seconds = phase.elapsed().as_secs_f64();
    let mut warnings = judge_unicity(
        &cloaking,
        person == Some(PersonPublished::Pseudonym),
        &unicity_release,
    )?;
    let publish = publish_cloaked(
        ctx,
        input,
        Arc::clone(&cloaked),
        &cloaking.options,
        &output,
        &policy,
        seed,
    )
    .await?;
    warnings.extend(publish.warnings.iter().cloned());
    for warning in &warnings {
        observer.note(&format!("warning: {warning}"));
    }
    let phase = Instant::now();
    let figures = location_figures(&events_data, &cloaked);
    let suppressed_where =
        crate::cloaking::figures::suppressed_figures(&events_data, &cloaked, &cloaking.options);
    let label_sizes = crate::profile::size_buckets_of_ids(
        cloaked
            .label_of
            .iter()
            .copied()
            .filter(|&l| l != SUPPRESSED),
    );
    let measure_seconds = phase.elapsed().as_secs_f64() + unicity_seconds;
    let options = &cloaking.options;
    Ok(CloakingReport {
        policy: policy.source().to_string(),
        input: policy.input().to_string(),
        method: "cloaking",
        cells: options.variant.name(),
        k: options.k,
        max_cell_side_m: options.max_cell_side_m,
        window_s: options.window_us as f64 / 1e6,
        max_window_s: options.max_window_us() as f64 / 1e6,
        max_level: options.max_level,
        seed,
        subject: if person == Some(PersonPublished::Pseudonym) {
            "pseudonym"
        } else {
            "dropped"
        },
        events,
        subjects: events_data.subjects as u64,
        suppressed: cloaked.suppressed as u64,
        max_suppression,
        figures,
        unicity_input,
        unicity_release,
        label_sizes,
        suppressed_where,
        warnings,
        seconds: CloakTimings {
            read: read_seconds,
            cloak: cloak_seconds,
            write: publish.write_seconds,
            verify: publish.verify_seconds,
            uniqueness: publish.uniqueness_seconds,
            measure: measure_seconds,
            total: started.elapsed().as_secs_f64(),
        },
        publish,
    })
}

/// The tolerance hints in words: `with max_window doubled (7200 s) 12 (0.10%) would be
/// suppressed, with max_cell_side doubled (6000 m) …, with both …`.
fn describe_hints(hints: &[crate::cloaking::figures::ToleranceHint], events: u64) -> String {
    let parts: Vec<String> = hints
        .iter()
        .map(|hint| {
            format!(
                "with {} doubled ({:.0} m, {:.0} s) {} ({:.2}%)",
                hint.doubled,
                hint.max_cell_side_m,
                hint.max_window_s,
                hint.suppressed,
                100.0 * hint.suppressed as f64 / events.max(1) as f64
            )
        })
        .collect();
    format!("would be suppressed {}", parts.join(", "))
}

/// Refuses a release whose unicity breaks `max_unicity` (nothing is written yet); with
/// pseudonyms (`pseudonyms`), a warning when more than [`UNICITY_WARNING`] of the sampled
/// subjects are unique from [`UNICITY_WARNING_POINTS`] points of their label trace.
fn judge_unicity(
    cloaking: &Cloaking,
    pseudonyms: bool,
    release: &UnicityFigures,
) -> Result<Vec<String>> {
    // a figure not measured counts as every subject unique: never less risk than there is
    let share = |points: usize| release.unique.get(points - 1).copied().unwrap_or(1.0);
    if let Some(limit) = cloaking.max_unicity
        && share(limit.points) > limit.share * (1.0 + crate::policy::RELATIVE_TOLERANCE)
    {
        return Err(DataFusionError::Execution(format!(
            "{:.1}% of the {} sampled subjects are unique from {} points of their release \
             trace, above max_unicity = {{ points = {}, share = {} }}: raise k, max_cell_side or \
             max_window, or publish without pseudonyms; nothing written",
            100.0 * share(limit.points),
            release.subjects_sampled,
            limit.points,
            limit.points,
            limit.share
        )));
    }
    let mut warnings = Vec::new();
    if pseudonyms && share(UNICITY_WARNING_POINTS) > UNICITY_WARNING {
        warnings.push(format!(
            "with pseudonyms, {:.1}% of the {} sampled subjects are unique from {} points of \
             their release trace (above {}%): whoever saw a subject at {} of its places and \
             times finds all its events; publish without pseudonyms, or refuse such a release \
             with [privacy] max_unicity",
            100.0 * share(UNICITY_WARNING_POINTS),
            release.subjects_sampled,
            UNICITY_WARNING_POINTS,
            100.0 * UNICITY_WARNING,
            UNICITY_WARNING_POINTS
        ));
    }
    Ok(warnings)
}

/// Unicity of the input (points: finest cell at `max_level`, base window) and of the release
/// with pseudonyms (points: labels), over the same subjects' sample.
fn unicity(
    events: &Events,
    cloaked: &Cloaked,
    cloaking: &Cloaking,
    seed: u64,
) -> (UnicityFigures, UnicityFigures) {
    let options = &cloaking.options;
    let shift = 2 * (cloaking::MAX_LEVEL - options.max_level) as u32;
    // the input's points: (finest cell, base window)
    let input = unicity_of_events(
        &events.subject,
        events.subjects,
        |e| {
            Some((
                events.code[e] >> shift,
                events.time[e].div_euclid(options.window_us),
            ))
        },
        UNICITY_POINTS,
        UNICITY_SAMPLE,
        seed,
    );
    // the release's: labels
    let release = unicity_of_events(
        &events.subject,
        events.subjects,
        |e| (cloaked.label_of[e] != SUPPRESSED).then_some(cloaked.label_of[e]),
        UNICITY_POINTS,
        UNICITY_SAMPLE,
        seed,
    );
    (input, release)
}

/// The events read from the registered input.
struct ReadEvents {
    batches: Vec<RecordBatch>,
    pseudonyms: Vec<ArrayRef>,
    events: Events,
    kept: Vec<usize>,
    time_zone: Option<Arc<str>>,
}

/// Reads every event of the registered input in scan order; see the module documentation for
/// what is refused.
async fn read_events(
    ctx: &SessionContext,
    policy: &Policy,
    cloaking: &Cloaking,
) -> Result<ReadEvents> {
    let schema = policy
        .schema()
        .cloned()
        .ok_or_else(|| DataFusionError::Internal("the policy is not registered".into()))?;
    let index = |name: &str| schema.index_of(name).map_err(DataFusionError::from);
    let (lat_at, lon_at, time_at, subject_at) = (
        index(&cloaking.latitude)?,
        index(&cloaking.longitude)?,
        index(&cloaking.time)?,
        index(&cloaking.subject)?,
    );
    for (key, at) in [("latitude", lat_at), ("longitude", lon_at)] {
        let data_type = schema.field(at).data_type();
        if !data_type.is_numeric() {
            return Err(DataFusionError::Plan(format!(
                "column '{}' (privacy.{key}) is {data_type}: a position is a number of degrees",
                schema.field(at).name()
            )));
        }
    }
    let time_zone = match schema.field(time_at).data_type() {
        DataType::Timestamp(_, zone) => zone.clone(),
        other => {
            return Err(DataFusionError::Plan(format!(
                "column '{}' (privacy.time) is {other}: the time of a cloaking must be a \
                 timestamp (for CSV input give the attribute type = \"timestamp\")",
                cloaking.time
            )));
        }
    };
    let kept: Vec<usize> = policy
        .columns()
        .iter()
        .filter(|c| matches!(c.role, Role::Insensitive | Role::Sensitive))
        .filter_map(|c| schema.index_of(&c.name).ok())
        .collect();
    let reader = SessionContext::new_with_state(crate::publish::in_order(ctx));
    let sql = format!("SELECT * FROM {}", quote_ident(policy.table_name()));
    let batches = reader.sql(&sql).await?.collect().await?;
    let key = PseudonymKey::random()?;
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let (mut lat, mut lon) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    let mut time = Vec::with_capacity(rows);
    let mut codes = Vec::with_capacity(rows);
    let mut pseudonym_arrays = Vec::with_capacity(batches.len());
    let mut first_row = 1usize;
    let null_error = |column: &str, key: &str, row: usize| {
        DataFusionError::Plan(format!(
            "column '{column}' (privacy.{key}) is NULL at row {row} of the input (counted from 1 \
             in scan order): every event needs a position, a time and a subject"
        ))
    };
    for batch in &batches {
        let checked = |at: usize, key: &str| -> Result<()> {
            let column = batch.column(at);
            if column.null_count() > 0 {
                let row = (0..column.len()).find(|&i| column.is_null(i)).unwrap_or(0);
                return Err(null_error(schema.field(at).name(), key, first_row + row));
            }
            Ok(())
        };
        checked(lat_at, "latitude")?;
        checked(lon_at, "longitude")?;
        checked(time_at, "time")?;
        checked(subject_at, "person")?;
        let degrees = |at: usize| cast(batch.column(at), &DataType::Float64);
        let (lats, lons) = (degrees(lat_at)?, degrees(lon_at)?);
        lat.extend_from_slice(lats.as_primitive::<Float64Type>().values());
        lon.extend_from_slice(lons.as_primitive::<Float64Type>().values());
        let micros = cast(
            batch.column(time_at),
            &DataType::Timestamp(TimeUnit::Microsecond, time_zone.clone()),
        )?;
        let micros = cast(&micros, &DataType::Int64)?;
        time.extend_from_slice(micros.as_primitive::<Int64Type>().values());
        let pseudonym = pseudonyms(&key, batch.column(subject_at))?;
        codes.extend_from_slice(pseudonym.as_primitive::<Int64Type>().values());
        pseudonym_arrays.push(pseudonym);
        first_row += batch.num_rows();
    }
    // dense subject codes in order of first appearance, so that they (and unicity's draws over
    // them) do not depend on the release's pseudonym key
    let mut dense: std::collections::HashMap<i64, u32> = std::collections::HashMap::new();
    let subject: Vec<u32> = codes
        .iter()
        .map(|&c| {
            let next = dense.len() as u32;
            *dense.entry(c).or_insert(next)
        })
        .collect();
    drop(codes);
    let events = Events::from_positions(&lat, &lon, time, subject).map_err(|(row, error)| {
        let column = match error {
            PositionError::Latitude => &cloaking.latitude,
            PositionError::Longitude => &cloaking.longitude,
        };
        DataFusionError::Plan(format!(
            "column '{column}' has {} at row {} of the input (counted from 1 in scan order)",
            error.describe(),
            row + 1
        ))
    })?;
    Ok(ReadEvents {
        batches,
        pseudonyms: pseudonym_arrays,
        events: Events {
            subjects: dense.len() as u32,
            ..events
        },
        kept,
        time_zone,
    })
}
