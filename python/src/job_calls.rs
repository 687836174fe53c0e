//! The jobs as Python calls (`anonymize`, `apply`, `profile`, `sql`, the hierarchy builders,
//! `attack_fingerprint`, `generate`, a policy's tables): each parses its arguments into the
//! engine's options, runs the job on the library's runtime with the GIL released
//! ([`runtime::run_job`]), and returns its report as JSON text (the Python package decodes it)
//! or its result as an Arrow stream.

use std::collections::HashMap;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::Arc;

use datafusion_anonymity::datafusion::arrow::array::{RecordBatchIterator, RecordBatchReader};
use datafusion_anonymity::datafusion::arrow::datatypes::SchemaRef;
use datafusion_anonymity::datafusion::arrow::ffi::FFI_ArrowSchema;
use datafusion_anonymity::datafusion::arrow::ffi_stream::{
    ArrowArrayStreamReader, FFI_ArrowArrayStream,
};
use datafusion_anonymity::datafusion::arrow::record_batch::RecordBatch;
use datafusion_anonymity::datafusion::catalog::TableProvider;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::table_provider::FFI_TableProvider;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use crate::capsules::capsule;
use crate::errors::{self, AnonymityError, to_py};
use crate::jobs::{self, TableSource};
use crate::{runtime, sources, table, watch};

/// Runs the future `job` makes on the library's runtime with the GIL released
/// ([`runtime::run_job`]); its error as an `AnonymityError`. Interrupted (Ctrl-C), the job
/// stops and commits nothing, and the signal's exception (`KeyboardInterrupt`) is raised with
/// a note saying so; a signal that came after the commit is a warning, and the job's result
/// is returned (its release is published: losing its report would help nobody).
pub(crate) fn run<T, F>(py: Python<'_>, job: impl FnOnce() -> F + Send) -> PyResult<T>
where
    T: Send,
    F: Future<Output = Result<T>>,
{
    settle(py, runtime::run_job(py, job, |_| Ok(())))
}

/// [`run`] for a job watched by `watch`: while it runs, `progress` (the caller's callback,
/// if any) is called with `(phase, done, total, unit)` whenever that changes, at most every
/// 50 ms; an exception it raises stops the job as Ctrl-C does. Once the
/// job is over, its warnings are raised through Python's `warnings` module.
fn run_watched<T, F>(
    py: Python<'_>,
    watch: &watch::Watch,
    progress: Option<Bound<'_, PyAny>>,
    job: impl FnOnce() -> F + Send,
) -> PyResult<T>
where
    T: Send,
    F: Future<Output = Result<T>>,
{
    let progress = progress.map(Bound::unbind);
    let mut last = None;
    let tick = |py: Python<'_>| {
        let Some(callback) = &progress else {
            return Ok(());
        };
        let now = watch.progress();
        if now.is_none() || now == last {
            return Ok(());
        }
        last = now.clone();
        let Some(now) = now else { return Ok(()) };
        callback.call1(py, (now.phase, now.done, now.total, now.unit))?;
        Ok(())
    };
    let outcome = settle(py, runtime::run_job(py, job, tick));
    errors::warn(py, watch.take_warnings())?;
    outcome
}

/// A job's outcome as Python sees it: its result, or its error as an `AnonymityError`, or the
/// exception that interrupted it, noted as such.
fn settle<T>(py: Python<'_>, outcome: runtime::JobOutcome<T>) -> PyResult<T> {
    let runtime::JobOutcome { outcome, signal } = outcome;
    match (outcome, signal) {
        (Err(_), Some(raised)) => {
            let note = datafusion_anonymity_engine::interrupt::INTERRUPTED;
            let _ = raised.value(py).call_method1("add_note", (note,));
            Err(raised)
        }
        (Ok(result), Some(_)) => {
            let category = py.get_type::<pyo3::exceptions::PyRuntimeWarning>();
            let message = c"datafusion-anonymity: interrupted after the job had published; \
                the release is in place and this is its result";
            pyo3::PyErr::warn(py, &category, message, 1)?;
            Ok(result)
        }
        (outcome, None) => outcome.map_err(to_py),
    }
}

/// Query results, for `pyarrow.table(...)` / `pyarrow.RecordBatchReader.from_stream(...)`
/// (the Arrow PyCapsule stream protocol). Read once.
#[pyclass(module = "datafusion_anonymity._internal")]
pub(crate) struct ArrowStream {
    result: Option<(SchemaRef, Vec<RecordBatch>)>,
}

#[pymethods]
impl ArrowStream {
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &mut self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // the schema is the query's; a requested one is not cast to
        let _ = requested_schema;
        let (schema, batches) = self
            .result
            .take()
            .ok_or_else(|| AnonymityError::new_err("this result has been read already"))?;
        let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
        capsule(
            py,
            FFI_ArrowArrayStream::new(Box::new(reader)),
            "arrow_array_stream",
        )
    }
}

/// Reads an object with `__arrow_c_stream__` (a pyarrow Table or RecordBatchReader, ...).
fn read_arrow(value: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let stream = value.call_method0("__arrow_c_stream__")?;
    let stream = stream.cast::<PyCapsule>()?;
    let pointer: NonNull<FFI_ArrowArrayStream> =
        stream.pointer_checked(Some(c"arrow_array_stream"))?.cast();
    // SAFETY: a capsule named arrow_array_stream holds an ArrowArrayStream (the Arrow
    // PyCapsule protocol); from_raw moves it out and leaves a released stream behind
    let reader = unsafe { ArrowArrayStreamReader::from_raw(pointer.as_ptr()) }
        .map_err(|e| AnonymityError::new_err(format!("cannot read the Arrow stream: {e}")))?;
    let schema = reader.schema();
    let batches = reader
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| AnonymityError::new_err(format!("cannot read the Arrow stream: {e}")))?;
    Ok((schema, batches))
}

/// The tables of `policy`: its input under the policy's table name and, with a
/// `[transformation]` or `levels`, its generalized table as `<name>_anon`.
#[pyfunction]
#[pyo3(signature = (policy, levels=None, memory_limit=None, recoding=None))]
pub(crate) fn policy_tables(
    py: Python<'_>,
    policy: String,
    levels: Option<HashMap<String, usize>>,
    memory_limit: Option<String>,
    recoding: Option<String>,
) -> PyResult<Vec<(String, Table)>> {
    let tables = run(py, || async move {
        let (ctx, policy) = jobs::policy_session(
            &policy,
            levels,
            recoding.as_deref(),
            memory_limit.as_deref(),
        )
        .await?;
        let state = ctx.state();
        let mut names = vec![policy.table_name().to_string()];
        if let Ok(generalized) = jobs::generalized_name(&ctx, &policy) {
            names.push(generalized);
        }
        let mut tables = Vec::new();
        for name in names {
            let provider = ctx.table_provider(name.as_str()).await?;
            let provider: Arc<dyn TableProvider> =
                Arc::new(table::OwnSessionTable::new(provider, state.clone()));
            tables.push((name, provider));
        }
        Ok::<_, DataFusionError>(tables)
    })?;
    Ok(tables
        .into_iter()
        .map(|(name, provider)| (name, Table { provider }))
        .collect())
}

/// The generalized table of `policy` at its `[transformation]` or at `levels`.
#[pyfunction]
#[pyo3(signature = (policy, levels=None, memory_limit=None, recoding=None))]
pub(crate) fn generalized_table(
    py: Python<'_>,
    policy: String,
    levels: Option<HashMap<String, usize>>,
    memory_limit: Option<String>,
    recoding: Option<String>,
) -> PyResult<Table> {
    let provider = run(py, || async move {
        let (ctx, policy) = jobs::policy_session(
            &policy,
            levels,
            recoding.as_deref(),
            memory_limit.as_deref(),
        )
        .await?;
        let name = jobs::generalized_name(&ctx, &policy)?;
        let provider = ctx.table_provider(name.as_str()).await?;
        Ok::<_, DataFusionError>(
            Arc::new(table::OwnSessionTable::new(provider, ctx.state())) as Arc<dyn TableProvider>
        )
    })?;
    Ok(Table { provider })
}

/// `anon anonymize`; the JSON report.
#[pyfunction]
#[pyo3(signature = (policy, out=None, report=None, algorithm="optimal".to_string(),
    metric="loss".to_string(), seed=None, overwrite=false, memory_limit=None,
    html_report=None, utility=false, recoding_out=None, format=None, append=false,
    refine=true, record_seed=false, policy_text=None, policy_table=None, input=None,
    progress=None, cluster=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn anonymize(
    py: Python<'_>,
    policy: Option<String>,
    out: Option<String>,
    report: Option<String>,
    algorithm: String,
    metric: String,
    seed: Option<u64>,
    overwrite: bool,
    memory_limit: Option<String>,
    html_report: Option<String>,
    utility: bool,
    recoding_out: Option<String>,
    format: Option<String>,
    append: bool,
    refine: bool,
    record_seed: bool,
    policy_text: Option<String>,
    policy_table: Option<String>,
    input: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
    cluster: Option<String>,
) -> PyResult<String> {
    let policy = sources::policy_source(policy, policy_text, policy_table, input)?;
    let watch = watch::Watch::default();
    let report = run_watched(py, &watch, progress, || {
        jobs::anonymize(
            jobs::AnonymizeOptions {
                policy,
                out,
                report,
                html_report,
                algorithm,
                metric,
                seed,
                overwrite,
                utility,
                recoding_out,
                memory_limit,
                cluster,
                format,
                append,
                refine,
                record_seed,
            },
            &watch,
        )
    })?;
    Ok(report.to_string())
}

/// `anon apply`; the JSON report (`--report`'s keys).
#[pyfunction]
#[pyo3(signature = (policy, levels=None, out=None, overwrite=false, memory_limit=None,
    report=None, html_report=None, seed=None, utility=false, recoding=None, format=None,
    append=false, record_seed=false, policy_text=None, policy_table=None, input=None,
    progress=None, cluster=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn apply(
    py: Python<'_>,
    policy: Option<String>,
    levels: Option<HashMap<String, usize>>,
    out: Option<String>,
    overwrite: bool,
    memory_limit: Option<String>,
    report: Option<String>,
    html_report: Option<String>,
    seed: Option<u64>,
    utility: bool,
    recoding: Option<String>,
    format: Option<String>,
    append: bool,
    record_seed: bool,
    policy_text: Option<String>,
    policy_table: Option<String>,
    input: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
    cluster: Option<String>,
) -> PyResult<String> {
    let policy = sources::policy_source(policy, policy_text, policy_table, input)?;
    let output =
        datafusion_anonymity_engine::jobs::output::OutputRequest::new(format.as_deref(), append)
            .map_err(to_py)?;
    let options = datafusion_anonymity_engine::jobs::apply::ApplyOptions {
        policy,
        levels: levels.map(|levels| levels.into_iter().collect()),
        recoding,
        out,
        report,
        html_report,
        seed,
        overwrite,
        record_seed,
        utility,
        output,
    };
    let watch = watch::Watch::default();
    let report = run_watched(py, &watch, progress, || {
        jobs::apply(options, memory_limit, cluster, &watch)
    })?;
    Ok(report.to_string())
}

/// `anon profile --format json`; the JSON report.
#[pyfunction]
#[pyo3(signature = (input, qi, sensitive, person_id, population, original, key, policy,
    hierarchies, recursive_c, queries, seed, show_values, memory_limit, background_values=3,
    by_position=false, relink=None, fingerprint_st=None, linking=None, determined=None,
    bucket_column="bucket_id".to_string(), policy_text=None, policy_table=None, progress=None,
    bad_values=None, text_report=None, html_report=None, cluster=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn profile(
    py: Python<'_>,
    input: String,
    qi: Vec<String>,
    sensitive: Vec<String>,
    person_id: Option<String>,
    population: Option<String>,
    original: Option<String>,
    key: Option<String>,
    policy: Option<String>,
    hierarchies: Vec<(String, String)>,
    recursive_c: f64,
    queries: usize,
    seed: u64,
    show_values: bool,
    memory_limit: Option<String>,
    background_values: usize,
    by_position: bool,
    relink: Option<String>,
    fingerprint_st: Option<String>,
    linking: Option<String>,
    determined: Option<Vec<String>>,
    bucket_column: String,
    policy_text: Option<String>,
    policy_table: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
    bad_values: Option<String>,
    text_report: Option<String>,
    html_report: Option<String>,
    cluster: Option<String>,
) -> PyResult<String> {
    use datafusion_anonymity_engine::jobs::profile::ProfileFormat;
    let policy = sources::optional_policy_source(policy, policy_text, policy_table)?;
    let bad_values = sources::bad_values(bad_values)?;
    let rendered: Vec<(ProfileFormat, String)> = [
        (ProfileFormat::Text, text_report),
        (ProfileFormat::Html, html_report),
    ]
    .into_iter()
    .filter_map(|(format, location)| location.map(|location| (format, location)))
    .collect();
    let fingerprint = match (fingerprint_st, linking) {
        (Some(sensitive_table), Some(linking)) => Some(
            datafusion_anonymity_engine::jobs::profile::FingerprintTarget {
                sensitive_table,
                bucket_column,
                linking,
                determined,
            },
        ),
        (None, None) => None,
        _ => {
            return Err(errors::to_py(
                datafusion_anonymity_engine::datafusion::error::DataFusionError::Plan(
                    "fingerprint_st and linking go together".to_string(),
                ),
            ));
        }
    };
    let watch = watch::Watch::default();
    let report = run_watched(py, &watch, progress, || {
        jobs::profile(
            datafusion_anonymity_engine::jobs::profile::ProfileJobOptions {
                quasi_identifiers: qi,
                sensitive,
                person_id,
                population,
                original,
                key,
                by_position,
                relink,
                policy,
                hierarchies,
                recursive_c,
                background_values,
                queries,
                seed,
                show_values,
                fingerprint,
                bad_values,
                ..datafusion_anonymity_engine::jobs::profile::ProfileJobOptions::new(input)
            },
            memory_limit,
            cluster,
            rendered,
            &watch,
        )
    })?;
    Ok(report.to_string())
}

/// `anon sql`: the last statement's result as an Arrow stream. `tables` maps names to paths
/// (str) or Arrow streams (objects with `__arrow_c_stream__`).
#[pyfunction]
#[pyo3(signature = (query, tables, policy=None, levels=None, hierarchies=Vec::new(),
    memory_limit=None, policy_text=None, policy_table=None, bad_values=None, cluster=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn sql(
    py: Python<'_>,
    query: String,
    tables: Bound<'_, PyDict>,
    policy: Option<String>,
    levels: Option<HashMap<String, usize>>,
    hierarchies: Vec<(String, String)>,
    memory_limit: Option<String>,
    policy_text: Option<String>,
    policy_table: Option<String>,
    bad_values: Option<String>,
    cluster: Option<String>,
) -> PyResult<ArrowStream> {
    let policy = sources::optional_policy_source(policy, policy_text, policy_table)?;
    let bad_values = sources::bad_values(bad_values)?;
    let mut sources = Vec::new();
    for (name, value) in tables.iter() {
        let name: String = name.extract()?;
        let source = if let Ok(path) = value.extract::<String>() {
            TableSource::Path(path)
        } else if value.hasattr("__arrow_c_stream__")? {
            let (schema, batches) = read_arrow(&value)?;
            TableSource::Batches(schema, batches)
        } else {
            return Err(PyTypeError::new_err(format!(
                "table '{name}': give a path (str) or Arrow data (a pyarrow Table or \
                 RecordBatchReader), not {}",
                value.get_type().name()?
            )));
        };
        sources.push((name, source));
    }
    let result = run(py, || {
        jobs::sql(jobs::SqlArgs {
            query,
            tables: sources,
            policy,
            levels,
            hierarchies,
            memory_limit,
            cluster,
            bad_values,
        })
    })?;
    Ok(ArrowStream {
        result: Some(result),
    })
}

/// `anon hierarchy build`: builds a hierarchy file from a column; the JSON report.
#[pyfunction]
#[pyo3(signature = (table, column, out, kind, widths=None, origin=None, min_size=None,
    keep=None, units=None, overwrite=false, memory_limit=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_hierarchy(
    py: Python<'_>,
    table: String,
    column: String,
    out: String,
    kind: String,
    widths: Option<Vec<f64>>,
    origin: Option<f64>,
    min_size: Option<Vec<u64>>,
    keep: Option<Vec<usize>>,
    units: Option<Vec<String>>,
    overwrite: bool,
    memory_limit: Option<String>,
) -> PyResult<String> {
    use datafusion_anonymity_engine::hierarchies::{BuilderOptions, BuilderSpec};
    let spec = BuilderSpec::from_options(BuilderOptions {
        kind,
        widths,
        origin,
        min_size,
        keep,
        units,
    })
    .map_err(errors::to_py)?;
    let options = datafusion_anonymity_engine::jobs::hierarchy::BuildOptions {
        table,
        column,
        out,
        spec,
        overwrite,
    };
    let report = run(py, || jobs::build_hierarchy(options, memory_limit))?;
    Ok(report.to_string())
}

/// `anon hierarchy check`: checks a hierarchy file against a column; the JSON report.
#[pyfunction]
#[pyo3(signature = (file, column, table, memory_limit=None))]
pub(crate) fn check_hierarchy(
    py: Python<'_>,
    file: String,
    column: String,
    table: String,
    memory_limit: Option<String>,
) -> PyResult<String> {
    let options = datafusion_anonymity_engine::jobs::hierarchy::CheckOptions {
        file,
        column,
        table,
    };
    let report = run(py, || jobs::check_hierarchy(options, memory_limit))?;
    Ok(report.to_string())
}

/// `anon attack fingerprint --json`: the fingerprint-correlation attack on a bucketized
/// release's sensitive table; the JSON report (with the refuted assumptions).
#[pyfunction]
#[pyo3(signature = (sensitive_table, linking, generalized_table=None, determined=None,
    bucket_column="bucket_id".to_string(), memory_limit=None))]
pub(crate) fn attack_fingerprint(
    py: Python<'_>,
    sensitive_table: String,
    linking: String,
    generalized_table: Option<String>,
    determined: Option<Vec<String>>,
    bucket_column: String,
    memory_limit: Option<String>,
) -> PyResult<String> {
    let options = datafusion_anonymity_engine::jobs::attack::FingerprintOptions {
        sensitive_table,
        generalized_table,
        linking,
        determined,
        bucket_column,
    };
    let report = run(py, || jobs::attack_fingerprint(options, memory_limit))?;
    Ok(report.to_string())
}

/// `anon generate`: writes `rows` rows of the seeded synthetic table `table` to `out`
/// (Parquet, whole or not at all).
#[pyfunction]
#[pyo3(signature = (table, rows, out, seed=42))]
pub(crate) fn generate(
    py: Python<'_>,
    table: String,
    rows: usize,
    out: String,
    seed: u64,
) -> PyResult<()> {
    py.detach(|| datafusion_anonymity_generate::write_named(&table, Path::new(&out), rows, seed))
        .map_err(to_py)
}

/// A table planned and run by this library, for `SessionContext.register_table(name, ...)`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
pub(crate) struct Table {
    provider: Arc<dyn TableProvider>,
}

#[pymethods]
impl Table {
    /// The table's schema (Arrow PyCapsule protocol): `pyarrow.schema(table)`.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema = FFI_ArrowSchema::try_from(self.provider.schema().as_ref())
            .map_err(|e| AnonymityError::new_err(format!("cannot export the schema: {e}")))?;
        capsule(py, schema, "arrow_schema")
    }

    fn __datafusion_table_provider__<'py>(
        &self,
        py: Python<'py>,
        session: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        // the session's own codec: it decodes what the session sends (no filter is pushed
        // down, so it is only carried)
        let attribute = "__datafusion_logical_extension_codec__";
        if !session.hasattr(attribute)? {
            return Err(PyTypeError::new_err(
                "register the table on a datafusion SessionContext (datafusion 55): \
                 ctx.register_table(name, table)",
            ));
        }
        let codec_capsule = session.getattr(attribute)?.call0()?;
        let codec_capsule = codec_capsule.cast::<PyCapsule>()?;
        let codec: NonNull<FFI_LogicalExtensionCodec> = codec_capsule
            .pointer_checked(Some(c"datafusion_logical_extension_codec"))?
            .cast();
        // SAFETY: the capsule holds a codec under this name (datafusion-python's protocol) and
        // stays alive while it is cloned here
        let codec = unsafe { codec.as_ref() }.clone();
        let handle = runtime::handle().map_err(to_py)?;
        let provider = FFI_TableProvider::new_with_ffi_codec(
            Arc::clone(&self.provider),
            false,
            Some(handle),
            codec,
        );
        capsule(py, provider, "datafusion_table_provider")
    }
}
