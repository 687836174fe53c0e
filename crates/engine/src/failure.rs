//! The kind of a failure, apart from its message: a leaf that the storage, the policy and the
//! errors' rendering ([`crate::errors`]) all use, importing nothing of the crate.

use datafusion::error::DataFusionError;

/// What kind of failure an error is, for shells whose errors have types: Python raises
/// `FileNotFoundError`, `FileExistsError`, `ValueError` and `MemoryError` subclasses by it.
/// Known from the error's variant and type, never from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// A file, object or table named as an input (or a policy) does not exist.
    NotFound,
    /// An output exists and the options do not say to replace or add to it.
    AlreadyExists,
    /// A policy, an option, a query or a value that cannot be used as given.
    Invalid,
    /// The memory limit is too small for a step.
    Memory,
    /// Anything else (a failure while running: I/O, a store, an internal error).
    Other,
}

impl FailureKind {
    /// An error of this kind saying `message` (already one line, free of values).
    pub fn error(self, message: impl Into<String>) -> DataFusionError {
        DataFusionError::External(Box::new(Classified {
            kind: self,
            message: message.into(),
        }))
    }
}

/// A message tagged with its [`FailureKind`] where the variant alone does not tell it (a
/// missing file is an I/O error, like a failing disk).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Classified {
    pub(crate) kind: FailureKind,
    message: String,
}
