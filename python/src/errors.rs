//! DataFusion errors as Python exceptions: one line, DataFusion's innermost error without its
//! category prefix, no data value and no credential (as the CLI prints them).

use datafusion_anonymity::datafusion::error::DataFusionError;
use datafusion_anonymity_engine::errors::{Opt, Vocabulary};
use pyo3::PyErr;
use pyo3::create_exception;
use pyo3::exceptions::PyException;

// named after the package users import it from (`datafusion_anonymity.AnonymityError`), not
// the extension module that defines it
create_exception!(
    datafusion_anonymity,
    AnonymityError,
    PyException,
    "An error of datafusion-anonymity: a policy, an input, a query or an output that cannot \
     be used. The message names what is wrong; it never shows data values."
);

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

/// `error` as an [`AnonymityError`].
pub fn to_py(error: DataFusionError) -> PyErr {
    AnonymityError::new_err(one_line(&error))
}
