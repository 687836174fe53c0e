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
    kind: FailureKind,
    message: String,
}

/// The kind of `error` from its variant, or from [`Classified`]: DataFusion's planning, SQL,
/// schema and configuration errors are [`FailureKind::Invalid`]; a missing object or file
/// [`FailureKind::NotFound`]; a refused allocation [`FailureKind::Memory`]. (The kinds of the
/// engine's own typed errors are added by `errors::failure_kind`.)
pub fn variant_kind(error: &DataFusionError) -> FailureKind {
    match error.find_root() {
        DataFusionError::External(external) => {
            if let Some(classified) = external.downcast_ref::<Classified>() {
                classified.kind
            } else if let Some(io) = external.downcast_ref::<std::io::Error>() {
                io_kind(io)
            } else {
                FailureKind::Other
            }
        }
        DataFusionError::IoError(io) => io_kind(io),
        DataFusionError::ObjectStore(store) => match store.as_ref() {
            object_store::Error::NotFound { .. } => FailureKind::NotFound,
            object_store::Error::AlreadyExists { .. } => FailureKind::AlreadyExists,
            _ => FailureKind::Other,
        },
        DataFusionError::ResourcesExhausted(_) => FailureKind::Memory,
        DataFusionError::Plan(_)
        | DataFusionError::SQL(..)
        | DataFusionError::SchemaError(..)
        | DataFusionError::Configuration(_)
        | DataFusionError::NotImplemented(_) => FailureKind::Invalid,
        _ => FailureKind::Other,
    }
}

fn io_kind(error: &std::io::Error) -> FailureKind {
    match error.kind() {
        std::io::ErrorKind::NotFound => FailureKind::NotFound,
        std::io::ErrorKind::AlreadyExists => FailureKind::AlreadyExists,
        _ => FailureKind::Other,
    }
}

/// An I/O failure on a local path said as `message`, of the I/O error's kind (a missing file
/// is [`FailureKind::NotFound`]).
pub fn io_error(message: String, error: &std::io::Error) -> DataFusionError {
    io_kind(error).error(message)
}

/// `error`'s message behind `prefix`, of the same kind by [`variant_kind`] (the context a
/// caller adds: "policy: ", "table 'patients': ").
pub fn prefixed(prefix: &str, error: DataFusionError) -> DataFusionError {
    variant_kind(&error).error(format!("{prefix}{}", error.message()))
}
