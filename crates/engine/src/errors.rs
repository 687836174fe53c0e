//! Errors as one line for people: what the CLI prints and the Python package raises.

use datafusion::error::DataFusionError;

use crate::storage;
use crate::tables::redact;

/// One line describing `error`: DataFusion's innermost error without its category prefix
/// ("Error during planning: ..."), on one line, with quoted values removed from errors that
/// come from reading or converting data, and no credential. `memory_setting` names the memory
/// limit as the caller's users set it (`--memory-limit` on the command line).
pub fn one_line(error: &DataFusionError, memory_setting: &str) -> String {
    let root = error.find_root();
    let text = match root {
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

/// `text` with its lines trimmed and joined by spaces.
pub fn join_lines(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}
