//! DataFusion errors as Python exceptions: one line, DataFusion's innermost error without its
//! category prefix, no data value and no credential (as the CLI prints them).

use datafusion_anonymity::datafusion::error::DataFusionError;
use datafusion_anonymity::storage;
use datafusion_anonymity::tables::redact;
use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    _internal,
    AnonymityError,
    PyException,
    "An error of datafusion-anonymity: a policy, an input, a query or an output that cannot \
     be used. The message names what is wrong; it never shows data values."
);

/// One line describing `error` (see the module docs).
pub fn one_line(error: &DataFusionError) -> String {
    let text = match error.find_root() {
        // Arrow quotes the offending value in parse and cast errors
        DataFusionError::ArrowError(arrow, _) => redact(&arrow.to_string()),
        DataFusionError::SQL(parser, _) => parser.to_string(),
        DataFusionError::Internal(message) => format!("internal error: {message}"),
        DataFusionError::ObjectStore(store) => storage::describe_store_error(store),
        DataFusionError::ResourcesExhausted(message)
            if message.starts_with("Failed to allocate") =>
        {
            let what = message.split(" - ").next().unwrap_or(message);
            format!(
                "the memory limit is too small for this input ({}); raise memory_limit. \
                 Nothing was written",
                what.trim_start_matches("Failed to allocate ")
            )
        }
        other => other.message().into_owned(),
    };
    let joined = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    storage::redact_credentials(&joined)
}

/// `error` as an [`AnonymityError`].
pub fn to_py(error: DataFusionError) -> PyErr {
    AnonymityError::new_err(one_line(&error))
}
