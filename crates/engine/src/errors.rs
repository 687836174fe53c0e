//! Errors as one line for people: what the CLI prints and the Python package raises.

use datafusion::error::DataFusionError;

use crate::failure;
pub use crate::failure::{FailureKind, prefixed};
use crate::storage;
use crate::tables::redact;

/// An option of a job, which each shell names in its users' words ([`Vocabulary`]): the
/// engine's messages name options by this, never by a command-line flag or a keyword.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    /// Where the release goes.
    Out,
    /// Replacing what exists.
    Overwrite,
    /// Adding a version to a Delta table.
    Append,
    /// Publishing a Delta table.
    FormatDelta,
    /// The session's memory limit.
    MemoryLimit,
    /// The JSON report.
    Report,
    /// The HTML report.
    HtmlReport,
    /// The utility figures of the release.
    Utility,
    /// Saving a local recoding.
    RecodingOut,
    /// Applying a saved recoding.
    Recoding,
    /// Levels given to `apply` instead of the policy's transformation.
    Levels,
    /// Mondrian without its refinement of small regions.
    NoRefine,
    /// The Mondrian algorithm.
    Mondrian,
    /// The local recoding algorithms.
    LocalAlgorithms,
    /// The profile's quasi-identifiers.
    Qi,
    /// Matching the profile's rows by position.
    ByPosition,
    /// Matching the profile's rows by a key column.
    Key,
    /// The values the background-knowledge attack rules out.
    BackgroundValues,
}

impl Opt {
    /// The option as the job's own options name it (the rendering without a shell).
    pub fn key(self) -> &'static str {
        match self {
            Opt::Out => "out",
            Opt::Overwrite => "overwrite",
            Opt::Append => "append",
            Opt::FormatDelta => "format = delta",
            Opt::MemoryLimit => "memory_limit",
            Opt::Report => "report",
            Opt::HtmlReport => "html_report",
            Opt::Utility => "utility",
            Opt::RecodingOut => "recoding_out",
            Opt::Recoding => "recoding",
            Opt::Levels => "levels",
            Opt::NoRefine => "refine = false",
            Opt::Mondrian => "algorithm mondrian",
            Opt::LocalAlgorithms => "algorithm mondrian, kaca or iab",
            Opt::Qi => "qi",
            Opt::ByPosition => "by_position",
            Opt::Key => "key",
            Opt::BackgroundValues => "background_values",
        }
    }
}

/// How a shell names the options its users set ([`Opt`]): an error that tells what to do
/// names the option as they would write it.
#[derive(Debug, Clone, Copy)]
pub struct Vocabulary {
    pub name: fn(Opt) -> &'static str,
}

impl Vocabulary {
    /// The job options' own names ([`Opt::key`]).
    pub const KEYS: Vocabulary = Vocabulary { name: Opt::key };

    fn of(&self, option: Opt) -> &'static str {
        (self.name)(option)
    }
}

/// A job's options used where they do not apply (or missing where needed), in words and
/// options, so that each shell names the options its own way.
#[derive(Debug, Clone, Default)]
pub struct UsageError {
    parts: Vec<UsagePart>,
    /// [`FailureKind::Invalid`] unless [`Self::kind`] says otherwise.
    kind: Option<FailureKind>,
}

#[derive(Debug, Clone)]
enum UsagePart {
    Text(String),
    Option(Opt),
}

impl UsageError {
    /// An empty message, built with [`Self::text`] and [`Self::opt`].
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(UsagePart::Text(text.into()));
        self
    }

    pub fn opt(mut self, option: Opt) -> Self {
        self.parts.push(UsagePart::Option(option));
        self
    }

    /// The kind of failure (an existing output is [`FailureKind::AlreadyExists`]).
    pub fn kind(mut self, kind: FailureKind) -> Self {
        self.kind = Some(kind);
        self
    }

    /// The message with the options in `words`.
    pub fn render(&self, words: Vocabulary) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                UsagePart::Text(text) => text.as_str(),
                UsagePart::Option(option) => words.of(*option),
            })
            .collect()
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render(Vocabulary::KEYS))
    }
}

impl std::error::Error for UsageError {}

impl From<UsageError> for DataFusionError {
    fn from(error: UsageError) -> Self {
        DataFusionError::External(Box::new(error))
    }
}

/// A step of ours that needs more memory than the session's limit leaves it. Raised as
/// `DataFusionError::External` (so its message names the limit in each shell's words); the
/// fallbacks that take a slower path that fits recognise it, and DataFusion's own
/// `ResourcesExhausted`, by [`is_memory_exhausted`].
#[derive(Debug, thiserror::Error)]
#[error("{what} needs more memory than the limit allows ({detail})")]
pub struct MemoryExhausted {
    /// What needed it, e.g. "the frequency set".
    pub what: String,
    /// How much, or the pool's own refusal.
    pub detail: String,
}

impl MemoryExhausted {
    pub fn new(what: impl Into<String>, detail: impl std::fmt::Display) -> Self {
        Self {
            what: what.into(),
            detail: detail.to_string(),
        }
    }

    fn render(&self, words: Vocabulary) -> String {
        format!(
            "{self}; raise {}. Nothing was written",
            words.of(Opt::MemoryLimit)
        )
    }
}

impl From<MemoryExhausted> for DataFusionError {
    fn from(error: MemoryExhausted) -> Self {
        DataFusionError::External(Box::new(error))
    }
}

/// The kind of `error` (see [`FailureKind`]): our typed errors say it; then by
/// [`failure::variant_kind`].
pub fn failure_kind(error: &DataFusionError) -> FailureKind {
    if is_memory_exhausted(error) {
        return FailureKind::Memory;
    }
    if let DataFusionError::External(external) = error.find_root()
        && let Some(usage) = external.downcast_ref::<UsageError>()
    {
        return usage.kind.unwrap_or(FailureKind::Invalid);
    }
    failure::variant_kind(error)
}

/// Whether `error` is a refusal of the memory pool: DataFusion's (`ResourcesExhausted`) or
/// one of our steps' ([`MemoryExhausted`]).
pub fn is_memory_exhausted(error: &DataFusionError) -> bool {
    match error.find_root() {
        DataFusionError::ResourcesExhausted(_) => true,
        DataFusionError::External(external) => external.is::<MemoryExhausted>(),
        _ => false,
    }
}

/// One line describing `error`: DataFusion's innermost error without its category prefix
/// ("Error during planning: ..."), on one line, with quoted values removed from errors that
/// come from reading or converting data, and no credential. Options are named in `words`.
pub fn one_line(error: &DataFusionError, words: Vocabulary) -> String {
    let memory_setting = words.of(Opt::MemoryLimit);
    let root = error.find_root();
    let text = match root {
        DataFusionError::External(external) => {
            if let Some(usage) = external.downcast_ref::<UsageError>() {
                usage.render(words)
            } else if let Some(memory) = external.downcast_ref::<MemoryExhausted>() {
                memory.render(words)
            } else {
                external.to_string()
            }
        }
        // Arrow quotes the offending value in parse and cast errors
        DataFusionError::ArrowError(arrow, _) => redact(&arrow.to_string()),
        // the sqlparser error's own Display ("sql parser error: Expected ...") reads better
        // than DataFusion's Debug rendering of it
        DataFusionError::SQL(parser, _) => parser.to_string(),
        DataFusionError::Internal(message) => format!("internal error: {message}"),
        // DataFusion's own object-store errors name the object but may carry the server's
        // response: keep the plain reason
        DataFusionError::ObjectStore(store) => storage::describe_store_error(store),
        // DataFusion refusing an operator memory (its pool, or a spill without a disk): known
        // by its variant, not its text; say what to do about it. The pool's own words
        // ("Failed to allocate additional 12.0 MB for … - …") are shortened to their first part.
        DataFusionError::ResourcesExhausted(message) => {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each kind from the error's variant or type, through DataFusion's context wrapping, and
    /// whatever the text says.
    #[test]
    fn failure_kinds_come_from_types_not_text() {
        let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "exists");
        let cases = [
            (DataFusionError::IoError(missing), FailureKind::NotFound),
            (
                DataFusionError::ObjectStore(Box::new(object_store::Error::NotFound {
                    path: "a".into(),
                    source: "b".into(),
                })),
                FailureKind::NotFound,
            ),
            (
                FailureKind::AlreadyExists.error("not found"),
                FailureKind::AlreadyExists,
            ),
            (
                UsageError::new()
                    .text("x exists; pass ")
                    .opt(Opt::Overwrite)
                    .kind(FailureKind::AlreadyExists)
                    .into(),
                FailureKind::AlreadyExists,
            ),
            (
                UsageError::new().text("not found").into(),
                FailureKind::Invalid,
            ),
            (
                DataFusionError::Plan("not found".into()),
                FailureKind::Invalid,
            ),
            (
                MemoryExhausted::new("the frequency set", "1 GB").into(),
                FailureKind::Memory,
            ),
            (
                DataFusionError::ResourcesExhausted("x".into()),
                FailureKind::Memory,
            ),
            (
                DataFusionError::Execution("not found".into()),
                FailureKind::Other,
            ),
            (
                prefixed("policy: ", FailureKind::NotFound.error("cannot read p")),
                FailureKind::NotFound,
            ),
        ];
        for (i, (error, kind)) in cases.into_iter().enumerate() {
            assert_eq!(failure_kind(&error), kind, "case {i}: {error}");
            let wrapped = error.context("while publishing");
            assert_eq!(failure_kind(&wrapped), kind, "case {i} wrapped");
        }
        assert_eq!(
            prefixed("policy: ", FailureKind::NotFound.error("cannot read p")).message(),
            "policy: cannot read p"
        );
    }
}
