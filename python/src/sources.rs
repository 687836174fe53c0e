//! What a Python job reads its policy from: `policy=` as a path (a file, a path or URL), TOML
//! text or a dict (JSON text here), and `input=` read in place of the policy's `[input] path`.
//! The Python layer tells them apart (`datafusion_anonymity._policy_arguments`) and writes Arrow
//! data given as `input=` to a private temporary Parquet file, whose path arrives here.

use datafusion_anonymity_engine::policy::PolicySource;
use datafusion_anonymity_engine::tables::BadValues;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

/// The policy of a job: exactly one of `file`, `text` (TOML) and `table` (a dict as JSON),
/// with `input` replacing its `[input] path`. Relative paths of text and tables resolve
/// against the current directory, as they would in the caller's own code.
pub fn policy_source(
    file: Option<String>,
    text: Option<String>,
    table: Option<String>,
    input: Option<String>,
) -> PyResult<PolicySource> {
    let source = match (file, text, table) {
        (Some(path), None, None) => PolicySource::file(path),
        (None, Some(toml), None) => PolicySource::text(toml, current_dir()?),
        (None, None, Some(json)) => PolicySource::table(json, current_dir()?),
        _ => {
            return Err(PyValueError::new_err(
                "give the policy once: a path, TOML text or a dict",
            ));
        }
    };
    Ok(source.with_input(input))
}

/// [`policy_source`] for the jobs whose policy is optional (`profile`, `sql`).
pub fn optional_policy_source(
    file: Option<String>,
    text: Option<String>,
    table: Option<String>,
) -> PyResult<Option<PolicySource>> {
    if file.is_none() && text.is_none() && table.is_none() {
        return Ok(None);
    }
    policy_source(file, text, table, None).map(Some)
}

/// `bad_values=` as the command line's `--bad-values` reads it (`error`, `null`, `skip`, ...),
/// refused in the same words.
pub fn bad_values(text: Option<String>) -> PyResult<Option<BadValues>> {
    text.map(|text| BadValues::parse(&text).map_err(crate::errors::to_py))
        .transpose()
}

fn current_dir() -> PyResult<std::path::PathBuf> {
    std::env::current_dir().map_err(|e| {
        PyOSError::new_err(format!(
            "cannot resolve the policy's relative paths: no current directory ({e})"
        ))
    })
}
