//! Errors as one line for people: what the CLI prints and the Python package raises.

use datafusion::error::DataFusionError;

use crate::publish::TargetError;
use crate::storage;
use crate::tables::redact;

/// The options a shell's users set, in their words: an error that tells what to do names
/// the option as they would write it.
#[derive(Debug, Clone, Copy)]
pub struct Vocabulary {
    /// The memory limit (`--memory-limit`, `memory_limit`).
    pub memory_limit: &'static str,
    /// Replacing what exists (`--overwrite`, `overwrite=True`).
    pub overwrite: &'static str,
    /// Adding a version to a Delta table (`--append`, `append=True`).
    pub append: &'static str,
}

impl Vocabulary {
    /// The command line's.
    pub const CLI: Vocabulary = Vocabulary {
        memory_limit: "--memory-limit",
        overwrite: "--overwrite",
        append: "--append",
    };
}

/// One line describing `error`: DataFusion's innermost error without its category prefix
/// ("Error during planning: ..."), on one line, with quoted values removed from errors that
/// come from reading or converting data, and no credential. Options are named in `words`.
pub fn one_line(error: &DataFusionError, words: Vocabulary) -> String {
    let memory_setting = words.memory_limit;
    let root = error.find_root();
    let text = match root {
        DataFusionError::External(external) => match external.downcast_ref::<TargetError>() {
            Some(TargetError::Exists { what, location }) => format!(
                "{what} {location}: exists; pass {} to replace it",
                words.overwrite
            ),
            _ => match delta_exists(external.as_ref()) {
                Some(location) => format!(
                    "output Delta table {location}: exists; pass {} to publish a new version \
                     replacing its rows, or {} to add this release's rows",
                    words.overwrite, words.append
                ),
                None => external.to_string(),
            },
        },
        // Arrow quotes the offending value in parse and cast errors
        DataFusionError::ArrowError(arrow, _) => redact(&arrow.to_string()),
        // the sqlparser error's own Display ("sql parser error: Expected ...") reads better
        // than DataFusion's Debug rendering of it
        DataFusionError::SQL(parser, _) => parser.to_string(),
        DataFusionError::Internal(message) => format!("internal error: {message}"),
        // DataFusion's own object-store errors name the object but may carry the server's
        // response: keep the plain reason
        DataFusionError::ObjectStore(store) => storage::describe_store_error(store),
        // DataFusion's pool refusing an operator: say what to do about it
        DataFusionError::ResourcesExhausted(message)
            if message.starts_with("Failed to allocate") =>
        {
            let what = message.split(" - ").next().unwrap_or(message);
            format!(
                "the memory limit is too small for this input ({}); raise {memory_setting}. \
                 Nothing was written",
                what.trim_start_matches("Failed to allocate ")
            )
        }
        other => other.message().into_owned(),
    };
    storage::redact_credentials(&join_lines(&text))
}

/// The table of a [`crate::publish::delta::TableExists`] (a build with Delta tables).
fn delta_exists<'a>(error: &'a (dyn std::error::Error + Send + Sync + 'static)) -> Option<&'a str> {
    #[cfg(feature = "delta")]
    if let Some(exists) = error.downcast_ref::<crate::publish::delta::TableExists>() {
        return Some(&exists.location);
    }
    #[cfg(not(feature = "delta"))]
    let _ = error;
    None
}

/// `text` with its lines trimmed and joined by spaces.
pub fn join_lines(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
