//! DataFusion errors as Python exceptions: one line, DataFusion's innermost error without its
//! category prefix, no data value and no credential (as the CLI prints them).

use datafusion_anonymity::datafusion::error::DataFusionError;
use datafusion_anonymity_engine::errors::{FailureKind, Opt, Vocabulary, failure_kind};
use pyo3::create_exception;
use pyo3::exceptions::{
    PyException, PyFileExistsError, PyFileNotFoundError, PyMemoryError, PyUserWarning, PyValueError,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyType};

// named after the package users import it from (`datafusion_anonymity.AnonymityError`), not
// the extension module that defines it
create_exception!(
    datafusion_anonymity,
    AnonymityError,
    PyException,
    "An error of datafusion-anonymity: a policy, an input, a query or an output that cannot \
     be used. The message names what is wrong; it never shows data values."
);

create_exception!(
    datafusion_anonymity,
    AnonymityWarning,
    PyUserWarning,
    "A warning of a datafusion-anonymity job (an identifier whose values repeat, a uniqueness \
     share above its threshold): the job went on; the message says what to check."
);

/// Raises each of a job's `warnings` as an [`AnonymityWarning`] through Python's `warnings`
/// module (filtered, caught or turned into errors as the caller configured it).
pub fn warn(py: Python<'_>, warnings: Vec<String>) -> PyResult<()> {
    let category = py.get_type::<AnonymityWarning>();
    for warning in warnings {
        let message = std::ffi::CString::new(warning.replace('\0', " "))?;
        PyErr::warn(py, &category, &message, 2)?;
    }
    Ok(())
}

/// The Python keywords for the options the engine's messages name.
fn keyword(option: Opt) -> &'static str {
    match option {
        Opt::Out => "out=",
        Opt::Overwrite => "overwrite=True",
        Opt::Append => "append=True",
        Opt::FormatDelta => "format=\"delta\"",
        Opt::MemoryLimit => "memory_limit",
        Opt::Report => "report=",
        Opt::HtmlReport => "html_report=",
        Opt::Utility => "utility=True",
        Opt::RecodingOut => "recoding_out=",
        Opt::Recoding => "recoding=",
        Opt::Levels => "levels=",
        Opt::NoRefine => "refine=False",
        Opt::Mondrian => "algorithm=\"mondrian\"",
        Opt::LocalAlgorithms => "algorithm=\"mondrian\", \"kaca\" or \"iab\"",
        Opt::Qi => "qi=[...]",
        Opt::ByPosition => "by_position=True",
        Opt::Key => "key=",
        Opt::BackgroundValues => "background_values=",
    }
}

const PYTHON: Vocabulary = Vocabulary { name: keyword };

/// One line describing `error` (see the module docs).
pub fn one_line(error: &DataFusionError) -> String {
    datafusion_anonymity_engine::errors::one_line(error, PYTHON)
}

/// The subclasses of [`AnonymityError`] that also derive from the built-in exception of their
/// kind, so that `except FileNotFoundError` catches a missing policy as Python code expects:
/// (name, kind, docstring); the built-in is [`builtin`]'s. Made at import by
/// [`add_exceptions`] (pyo3 makes exception types of one base only). [`FailureKind::Other`]
/// has none: it is a plain `AnonymityError`.
const KINDS: [(&str, FailureKind, &str); 4] = [
    (
        "NotFoundError",
        FailureKind::NotFound,
        "A policy, input or hierarchy file (or object) that does not exist.",
    ),
    (
        "AlreadyExistsError",
        FailureKind::AlreadyExists,
        "An output that exists, where neither overwrite=True nor append=True was given.",
    ),
    (
        "InvalidValueError",
        FailureKind::Invalid,
        "A policy, an argument or a query that cannot be used as given.",
    ),
    (
        "MemoryLimitError",
        FailureKind::Memory,
        "A step that needs more memory than memory_limit leaves it; nothing was written.",
    ),
];

/// The built-in exception a kind's subclass also derives from.
fn builtin(py: Python<'_>, kind: FailureKind) -> Option<Bound<'_, PyType>> {
    match kind {
        FailureKind::NotFound => Some(py.get_type::<PyFileNotFoundError>()),
        FailureKind::AlreadyExists => Some(py.get_type::<PyFileExistsError>()),
        FailureKind::Invalid => Some(py.get_type::<PyValueError>()),
        FailureKind::Memory => Some(py.get_type::<PyMemoryError>()),
        FailureKind::Other => None,
    }
}

/// The classes of [`KINDS`] by kind, once the module is imported.
static KIND_CLASSES: PyOnceLock<Vec<(FailureKind, Py<PyType>)>> = PyOnceLock::new();

/// Adds `AnonymityError` and its subclasses of [`KINDS`] to the module `m`.
pub fn add_exceptions(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let base = py.get_type::<AnonymityError>();
    m.add("AnonymityError", &base)?;
    m.add("AnonymityWarning", py.get_type::<AnonymityWarning>())?;
    let mut classes = Vec::with_capacity(KINDS.len());
    for (name, kind, doc) in KINDS {
        let Some(builtin) = builtin(py, kind) else {
            continue;
        };
        let namespace = PyDict::new(py);
        namespace.set_item("__module__", "datafusion_anonymity")?;
        namespace.set_item("__doc__", doc)?;
        let class = py
            .get_type::<PyType>()
            .call1((name, (base.clone(), builtin), namespace))?
            .cast_into::<PyType>()?;
        m.add(name, &class)?;
        classes.push((kind, class.unbind()));
    }
    let _ = KIND_CLASSES.set(py, classes);
    Ok(())
}

/// `error` as an [`AnonymityError`], of the subclass of its kind when it has one.
pub fn to_py(error: DataFusionError) -> PyErr {
    let message = one_line(&error);
    let kind = failure_kind(&error);
    Python::attach(|py| {
        let class = KIND_CLASSES.get(py).and_then(|classes| {
            classes
                .iter()
                .find(|(k, _)| *k == kind)
                .map(|(_, class)| class.bind(py).clone())
        });
        match class {
            Some(class) => PyErr::from_type(class, message),
            None => AnonymityError::new_err(message),
        }
    })
}
