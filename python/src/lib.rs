//! `datafusion_anonymity._internal`: the compiled part of the Python package
//! `datafusion_anonymity` (python/datafusion_anonymity wraps it).
//!
//! - The aggregate, scalar and window functions go to a datafusion-python `SessionContext`
//!   through DataFusion's FFI (`__datafusion_aggregate_udf__` / `__datafusion_scalar_udf__` /
//!   `__datafusion_window_udf__` capsules); [`functions`] says what does not cross and how each
//!   function stays correct.
//! - The query planner ([`planner`]) goes as a `__datafusion_query_planner__` capsule: it runs
//!   the rewrite the Rust session runs as an analyzer rule. Its plans cross the FFI serialized,
//!   with two codecs of the extension bundle ([`codec`]) in the session's chain.
//! - A policy's tables (its input and its generalized table) go as table providers
//!   (`__datafusion_table_provider__`), planned and run in this library's session ([`table`]).
//! - `anonymize`, `apply`, `profile` and `sql` run in this library's own sessions and tokio
//!   runtime and return JSON reports or Arrow streams ([`jobs`]).
//!
//! Every call that runs a query releases the GIL while it runs.

mod codec;
mod errors;
mod functions;
mod held;
mod jobs;
mod leaf;
mod planner;
mod runtime;
mod sources;
mod table;
mod watch;

use std::collections::HashMap;
use std::ffi::CString;
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
use datafusion_anonymity::datafusion::config::ExtensionOptions;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::execution::context::QueryPlanner;
use datafusion_anonymity::datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};
use datafusion_anonymity::generalize::{Hierarchy, HierarchyRegistry};
use datafusion_anonymity::options::AnonymityOptions;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::query_planner::FFI_QueryPlanner;
use datafusion_ffi::table_provider::FFI_TableProvider;
use datafusion_ffi::udaf::FFI_AggregateUDF;
use datafusion_ffi::udf::FFI_ScalarUDF;
use datafusion_ffi::udwf::FFI_WindowUDF;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};

use errors::{AnonymityError, to_py};
use jobs::TableSource;

/// Runs the future `job` makes on the library's runtime with the GIL released
/// ([`runtime::run_job`]); its error as an `AnonymityError`. Interrupted (Ctrl-C), the job
/// stops and commits nothing, and the signal's exception (`KeyboardInterrupt`) is raised with
/// a note saying so; a signal that came after the commit is a warning, and the job's result
/// is returned (its release is published: losing its report would help nobody).
fn run<T, F>(py: Python<'_>, job: impl FnOnce() -> F + Send) -> PyResult<T>
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

fn capsule<'py, T: 'static + Send>(
    py: Python<'py>,
    value: T,
    name: &str,
) -> PyResult<Bound<'py, PyCapsule>> {
    let name = CString::new(name).map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyCapsule::new(py, value, Some(name))
}

/// An aggregate function of the crate, for `datafusion.udaf(...)` /
/// `AggregateUDF.from_pycapsule(...)`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct AggregateFunction {
    udaf: Arc<AggregateUDF>,
}

#[pymethods]
impl AggregateFunction {
    #[getter]
    fn name(&self) -> String {
        self.udaf.name().to_string()
    }

    fn __datafusion_aggregate_udf__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        capsule(
            py,
            FFI_AggregateUDF::from(Arc::clone(&self.udaf)),
            "datafusion_aggregate_udf",
        )
    }
}

/// A scalar (recoding) function of the crate, for `datafusion.udf(...)` /
/// `ScalarUDF.from_pycapsule(...)`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct ScalarFunction {
    udf: Arc<ScalarUDF>,
}

#[pymethods]
impl ScalarFunction {
    #[getter]
    fn name(&self) -> String {
        self.udf.name().to_string()
    }

    fn __datafusion_scalar_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        capsule(
            py,
            FFI_ScalarUDF::from(Arc::clone(&self.udf)),
            "datafusion_scalar_udf",
        )
    }
}

/// A window function of the crate (the rewrite's finalizers), for
/// `WindowUDF.from_pycapsule(...)`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct WindowFunction {
    udwf: Arc<WindowUDF>,
}

#[pymethods]
impl WindowFunction {
    #[getter]
    fn name(&self) -> String {
        self.udwf.name().to_string()
    }

    fn __datafusion_window_udf__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        capsule(
            py,
            FFI_WindowUDF::from(Arc::clone(&self.udwf)),
            "datafusion_window_udf",
        )
    }
}

/// A copy of `capsule`'s FFI struct of type `T`, checked against the capsule `name`.
fn from_capsule<T: Clone>(capsule: &Bound<'_, PyAny>, name: &std::ffi::CStr) -> PyResult<T> {
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer: NonNull<T> = capsule.pointer_checked(Some(name))?.cast();
    // SAFETY: a capsule under this name holds a `T` (datafusion-python's protocol) and stays
    // alive while it is cloned here
    Ok(unsafe { pointer.as_ref() }.clone())
}

/// The query planner of [`planner`], for `SessionContext.set_query_planner(...)` or as what
/// an extension bundle's `__datafusion_session_planner__` returns.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct Planner {
    fallback: Arc<dyn QueryPlanner + Send + Sync>,
    options: AnonymityOptions,
}

#[pymethods]
impl Planner {
    /// The planner as a capsule, for `session` (the context it is installed on): it and the
    /// fallback planner exchange plans with the session's codecs (with the bundle's
    /// [`codec`]s among them).
    #[pyo3(signature = (session=None))]
    fn __datafusion_query_planner__<'py>(
        &self,
        py: Python<'py>,
        session: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let session = session.ok_or_else(|| {
            PyTypeError::new_err("the query planner needs the SessionContext it is installed on")
        })?;
        let logical: FFI_LogicalExtensionCodec = from_capsule(
            &session.call_method1("__datafusion_logical_extension_codec__", (session.clone(),))?,
            c"datafusion_logical_extension_codec",
        )?;
        let physical: FFI_PhysicalExtensionCodec = from_capsule(
            &session.call_method1(
                "__datafusion_physical_extension_codec__",
                (session.clone(),),
            )?,
            c"datafusion_physical_extension_codec",
        )?;
        let planner = planner::AnonymityPlanner::new(
            Arc::clone(&self.fallback),
            logical.clone(),
            physical.clone(),
            self.options.clone(),
        );
        capsule(
            py,
            FFI_QueryPlanner::new_with_ffi_codecs(Arc::new(planner), logical, physical),
            "datafusion_query_planner",
        )
    }
}

/// The task context provider of `session` (a datafusion-python `SessionContext`).
fn task_ctx_provider(session: &Bound<'_, PyAny>) -> PyResult<FFI_TaskContextProvider> {
    from_capsule(
        &session.call_method0("__datafusion_task_context_provider__")?,
        c"datafusion_task_context_provider",
    )
}

/// The logical half of [`codec`], for an extension bundle's `SessionExtensionComponents`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct LogicalCodec;

#[pymethods]
impl LogicalCodec {
    #[new]
    fn new() -> Self {
        Self
    }

    /// The id its payloads are tagged with in the session's codec chain.
    #[classattr]
    #[pyo3(name = "__datafusion_codec_id__")]
    fn codec_id() -> &'static str {
        "datafusion_anonymity.held.logical"
    }

    #[pyo3(signature = (session=None))]
    fn __datafusion_logical_extension_codec__<'py>(
        &self,
        py: Python<'py>,
        session: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let session = session.ok_or_else(|| PyTypeError::new_err("the codec needs its session"))?;
        let handle = runtime::handle().map_err(to_py)?;
        let codec = FFI_LogicalExtensionCodec::new(
            Arc::new(codec::ByReferenceLogical),
            Some(handle),
            task_ctx_provider(&session)?,
        );
        capsule(py, codec, "datafusion_logical_extension_codec")
    }
}

/// The physical half of [`codec`], for an extension bundle's `SessionExtensionComponents`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct PhysicalCodec;

#[pymethods]
impl PhysicalCodec {
    #[new]
    fn new() -> Self {
        Self
    }

    /// The id its payloads are tagged with in the session's codec chain.
    #[classattr]
    #[pyo3(name = "__datafusion_codec_id__")]
    fn codec_id() -> &'static str {
        "datafusion_anonymity.held.physical"
    }

    #[pyo3(signature = (session=None))]
    fn __datafusion_physical_extension_codec__<'py>(
        &self,
        py: Python<'py>,
        session: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let session = session.ok_or_else(|| PyTypeError::new_err("the codec needs its session"))?;
        let handle = runtime::handle().map_err(to_py)?;
        let codec = FFI_PhysicalExtensionCodec::new(
            Arc::new(codec::ByReferencePhysical),
            Some(handle),
            task_ctx_provider(&session)?,
        );
        capsule(py, codec, "datafusion_physical_extension_codec")
    }
}

/// The query planner wrapping `fallback` (a `datafusion_query_planner` capsule: the planner
/// the session has), with the crate's `options` (`anonymity.*` without the prefix, as text).
/// Without options, `None` when that is this library's planner already (installed once);
/// with options, that planner's layer is replaced by one with them.
#[pyfunction]
#[pyo3(signature = (fallback, options=None))]
fn query_planner(
    fallback: Bound<'_, PyAny>,
    options: Option<HashMap<String, String>>,
) -> PyResult<Option<Planner>> {
    let fallback: FFI_QueryPlanner = from_capsule(&fallback, c"datafusion_query_planner")?;
    let fallback: Arc<dyn QueryPlanner + Send + Sync> = (&fallback).into();
    let ours = planner::AnonymityPlanner::inner(&fallback);
    let Some(given) = options else {
        return Ok(ours.is_none().then_some(Planner {
            fallback,
            options: AnonymityOptions::default(),
        }));
    };
    let mut options = AnonymityOptions::default();
    for (key, value) in given {
        let key = key.strip_prefix("anonymity.").unwrap_or(&key);
        options.set(key, &value).map_err(to_py)?;
    }
    Ok(Some(Planner {
        fallback: ours.unwrap_or(fallback),
        options,
    }))
}

/// How many of this library's query planners the `datafusion_query_planner` capsule
/// `planner` has on top (0: none; for tests and diagnostics).
#[pyfunction]
fn planner_layers(planner: Bound<'_, PyAny>) -> PyResult<usize> {
    let planner: FFI_QueryPlanner = from_capsule(&planner, c"datafusion_query_planner")?;
    let planner: Arc<dyn QueryPlanner + Send + Sync> = (&planner).into();
    Ok(planner::AnonymityPlanner::layers(planner.as_ref()))
}

/// The window functions (the rewrite's finalizers), to register on a datafusion-python
/// session.
#[pyfunction]
fn window_functions() -> Vec<WindowFunction> {
    datafusion_anonymity::rewrite::all_window_functions()
        .into_iter()
        .map(|udwf| WindowFunction { udwf })
        .collect()
}

/// A table planned and run by this library, for `SessionContext.register_table(name, ...)`.
#[pyclass(module = "datafusion_anonymity._internal", frozen)]
struct Table {
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

/// Query results, for `pyarrow.table(...)` / `pyarrow.RecordBatchReader.from_stream(...)`
/// (the Arrow PyCapsule stream protocol). Read once.
#[pyclass(module = "datafusion_anonymity._internal")]
struct ArrowStream {
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

/// The aggregate functions, to register on a datafusion-python session.
#[pyfunction]
fn aggregate_functions() -> Vec<AggregateFunction> {
    functions::aggregate_functions()
        .into_iter()
        .map(|udaf| AggregateFunction { udaf })
        .collect()
}

/// The recoding functions, with `generalize` knowing `hierarchies` (name → ARX hierarchy CSV)
/// and, with `policy`, the policy's quasi-identifiers' hierarchies under their column names.
#[pyfunction]
#[pyo3(signature = (hierarchies, policy=None))]
fn scalar_functions(
    py: Python<'_>,
    hierarchies: Vec<(String, String)>,
    policy: Option<String>,
) -> PyResult<Vec<ScalarFunction>> {
    let registry = Arc::new(HierarchyRegistry::new());
    if let Some(policy) = policy {
        let (_, policy) = run(py, || jobs::policy_session(&policy, None, None, None))?;
        for (column, hierarchy) in policy.quasi_identifiers() {
            registry.insert(&column, hierarchy);
        }
    }
    for (name, path) in hierarchies {
        let tree = Hierarchy::tree_from_csv_file(name.as_str(), &path).map_err(to_py)?;
        registry.insert(&name, Arc::new(tree));
    }
    Ok(functions::scalar_functions(registry)
        .into_iter()
        .map(|udf| ScalarFunction { udf })
        .collect())
}

/// The tables of `policy`: its input under the policy's table name and, with a
/// `[transformation]` or `levels`, its generalized table as `<name>_anon`.
#[pyfunction]
#[pyo3(signature = (policy, levels=None, memory_limit=None, recoding=None))]
fn policy_tables(
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
fn generalized_table(
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
fn anonymize(
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
fn apply(
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
fn profile(
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
fn sql(
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
fn build_hierarchy(
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
fn check_hierarchy(
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
fn attack_fingerprint(
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
fn generate(py: Python<'_>, table: String, rows: usize, out: String, seed: u64) -> PyResult<()> {
    py.detach(|| datafusion_anonymity_generate::write_named(&table, Path::new(&out), rows, seed))
        .map_err(to_py)
}

/// Every function name the crate registers in Rust (aliases included).
#[pyfunction]
fn function_names() -> Vec<String> {
    datafusion_anonymity::function_names()
}

#[pymodule]
#[pyo3(name = "_internal")]
fn internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::add_exceptions(m)?;
    m.add_class::<AggregateFunction>()?;
    m.add_class::<ScalarFunction>()?;
    m.add_class::<WindowFunction>()?;
    m.add_class::<Planner>()?;
    m.add_class::<LogicalCodec>()?;
    m.add_class::<PhysicalCodec>()?;
    m.add_class::<Table>()?;
    m.add_class::<ArrowStream>()?;
    m.add_function(wrap_pyfunction!(aggregate_functions, m)?)?;
    m.add_function(wrap_pyfunction!(scalar_functions, m)?)?;
    m.add_function(wrap_pyfunction!(window_functions, m)?)?;
    m.add_function(wrap_pyfunction!(query_planner, m)?)?;
    m.add_function(wrap_pyfunction!(planner_layers, m)?)?;
    m.add_function(wrap_pyfunction!(policy_tables, m)?)?;
    m.add_function(wrap_pyfunction!(generalized_table, m)?)?;
    m.add_function(wrap_pyfunction!(anonymize, m)?)?;
    m.add_function(wrap_pyfunction!(apply, m)?)?;
    m.add_function(wrap_pyfunction!(profile, m)?)?;
    m.add_function(wrap_pyfunction!(sql, m)?)?;
    m.add_function(wrap_pyfunction!(build_hierarchy, m)?)?;
    m.add_function(wrap_pyfunction!(check_hierarchy, m)?)?;
    m.add_function(wrap_pyfunction!(generate, m)?)?;
    m.add_function(wrap_pyfunction!(attack_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(function_names, m)?)?;
    Ok(())
}
