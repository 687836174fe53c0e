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
//! - The jobs (`anonymize`, `apply`, `profile`, `sql`, ...) are Python calls ([`job_calls`]) that
//!   run in this library's own sessions and tokio
//!   runtime and return JSON reports or Arrow streams ([`jobs`]).
//!
//! Every call that runs a query releases the GIL while it runs.

mod capsules;
mod codec;
mod errors;
mod functions;
mod held;
mod job_calls;
mod jobs;
mod leaf;
mod planner;
mod runtime;
mod sources;
mod table;
mod watch;

use std::collections::HashMap;
use std::sync::Arc;

use datafusion_anonymity::datafusion::config::ExtensionOptions;
use datafusion_anonymity::datafusion::execution::context::QueryPlanner;
use datafusion_anonymity::datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};
use datafusion_anonymity::generalize::{Hierarchy, HierarchyRegistry};
use datafusion_anonymity::options::AnonymityOptions;
use datafusion_ffi::execution::FFI_TaskContextProvider;
use datafusion_ffi::proto::logical_extension_codec::FFI_LogicalExtensionCodec;
use datafusion_ffi::proto::physical_extension_codec::FFI_PhysicalExtensionCodec;
use datafusion_ffi::query_planner::FFI_QueryPlanner;
use datafusion_ffi::udaf::FFI_AggregateUDF;
use datafusion_ffi::udf::FFI_ScalarUDF;
use datafusion_ffi::udwf::FFI_WindowUDF;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use capsules::{capsule, from_capsule};
use errors::to_py;
use job_calls::Table;

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
        let (_, policy) = job_calls::run(py, || jobs::policy_session(&policy, None, None, None))?;
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
    m.add_class::<job_calls::ArrowStream>()?;
    m.add_function(wrap_pyfunction!(aggregate_functions, m)?)?;
    m.add_function(wrap_pyfunction!(scalar_functions, m)?)?;
    m.add_function(wrap_pyfunction!(window_functions, m)?)?;
    m.add_function(wrap_pyfunction!(query_planner, m)?)?;
    m.add_function(wrap_pyfunction!(planner_layers, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::policy_tables, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::generalized_table, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::anonymize, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::apply, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::profile, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::sql, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::build_hierarchy, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::check_hierarchy, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::generate, m)?)?;
    m.add_function(wrap_pyfunction!(job_calls::attack_fingerprint, m)?)?;
    m.add_function(wrap_pyfunction!(function_names, m)?)?;
    Ok(())
}
