//! DataFusion errors as Python exceptions: one line, DataFusion's innermost error without its
//! category prefix, no data value and no credential (as the CLI prints them).

use datafusion_anonymity::datafusion::error::DataFusionError;
use datafusion_anonymity_engine::errors::Vocabulary;
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

/// The Python keywords the messages name.
const PYTHON: Vocabulary = Vocabulary {
    memory_limit: "memory_limit",
    overwrite: "overwrite=True",
    append: "append=True",
};

/// One line describing `error` (see the module docs).
pub fn one_line(error: &DataFusionError) -> String {
    datafusion_anonymity_engine::errors::one_line(error, PYTHON)
}

/// `error` as an [`AnonymityError`].
pub fn to_py(error: DataFusionError) -> PyErr {
    AnonymityError::new_err(one_line(&error))
}
