//! Where publishing may write: refusing an output that exists (unless overwriting), has the
//! wrong extension, or is, contains or lies inside the input.
//!
//! A refusal is a [`TargetError`] naming what was to be written ([`Written`]): the release, a
//! report or a recoding file. An existing file is a [`UsageError`]: the option that replaces
//! it is the shell's to name (`--overwrite` on the command line, `overwrite=True` in Python:
//! [`crate::errors::Vocabulary`]).

use std::path::{Path, PathBuf};

use datafusion::error::{DataFusionError, Result};

use crate::errors::{FailureKind, Opt, UsageError};
use crate::storage::{self, Location, StoreOptions};

/// What a job writes, as a refusal names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// The release.
    Output,
    /// A JSON or HTML report.
    Report,
    /// A saved recoding (`--recoding-out`).
    RecodingFile,
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Written::Output => "output",
            Written::Report => "report",
            Written::RecodingFile => "recoding file",
        })
    }
}

/// Why a location cannot be written ([`check_target`]).
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{what} {location}: empty path")]
    EmptyPath { what: Written, location: String },
    #[error("{what} {location}: {reason}")]
    OverlapsInput {
        what: Written,
        location: String,
        /// how it overlaps: is, lies inside or contains the input
        reason: String,
    },
    #[error(
        "{what} {location}: the output is Parquet; name a .parquet file or a directory, not a \
         .{extension} file"
    )]
    NotParquetName {
        what: Written,
        location: String,
        extension: String,
    },
    #[error("{what} {location}: its directory {directory} does not exist")]
    NoDirectory {
        what: Written,
        location: String,
        directory: String,
    },
}

impl From<TargetError> for DataFusionError {
    fn from(error: TargetError) -> Self {
        // a location that cannot be written as given: the caller's value is wrong
        FailureKind::Invalid.error(error.to_string())
    }
}

/// Refuses a Parquet output that [`check_target`] refuses, or whose name has another
/// extension than `.parquet` (`out.csv` would hold Parquet).
pub async fn check_output(
    out: &Location,
    input: &Location,
    overwrite: bool,
    options: &StoreOptions,
) -> Result<()> {
    check_target(out, input, overwrite, options, true, Written::Output).await
}

/// Refuses `what` at `out` when it exists (unless `overwrite`), equals the input, lies
/// inside a directory input, or contains the input (overwriting it would delete the input);
/// with `parquet`, also one named with another extension than `.parquet`.
pub async fn check_target(
    out: &Location,
    input: &Location,
    overwrite: bool,
    options: &StoreOptions,
    parquet: bool,
    what: Written,
) -> Result<()> {
    let location = out.to_string();
    let refuse = |reason: String| TargetError::OverlapsInput {
        what,
        location: location.clone(),
        reason,
    };
    match (out, input) {
        (Location::Local(out_path), _) if out_path.as_os_str().is_empty() => {
            return Err(TargetError::EmptyPath { what, location }.into());
        }
        (Location::Local(out_path), Location::Local(input_path)) => {
            check_local_overlap(out_path, input_path).map_err(refuse)?;
        }
        (Location::Url(_), Location::Url(_)) => {
            // compared as shown (no credentials or query); a glob input by the prefix it lists
            let (out_shown, input_shown) = (out.to_string(), input.to_string());
            let out_text = out_shown.trim_end_matches('/');
            let input_base = match input_shown.find(['*', '?', '[']) {
                Some(i) => &input_shown[..input_shown[..i].rfind('/').unwrap_or(i)],
                None => input_shown.as_str(),
            }
            .trim_end_matches('/');
            if out_text == input_base {
                return Err(refuse("is the input; choose another location".into()).into());
            }
            if out_text.starts_with(&format!("{input_base}/")) {
                return Err(refuse(format!(
                    "lies inside the input {input}; it would be read as input next time"
                ))
                .into());
            }
            if input_base.starts_with(&format!("{out_text}/")) {
                return Err(refuse(format!(
                    "contains the input {input}; writing it would destroy the input"
                ))
                .into());
            }
        }
        _ => {}
    }
    if let Some(extension) = out.extension().filter(|e| parquet && e != "parquet") {
        return Err(TargetError::NotParquetName {
            what,
            location,
            extension: extension.to_string(),
        }
        .into());
    }
    if !overwrite && storage::exists(out, options).await? {
        // the shell names the option that replaces it
        return Err(UsageError::new()
            .text(format!("{what} {location}: exists; pass "))
            .opt(Opt::Overwrite)
            .text(" to replace it")
            .kind(FailureKind::AlreadyExists)
            .into());
    }
    if let Location::Local(out_path) = out {
        match absolute(out_path).parent() {
            Some(parent) if !parent.as_os_str().is_empty() && !parent.is_dir() => {
                return Err(TargetError::NoDirectory {
                    what,
                    location,
                    directory: parent.display().to_string(),
                }
                .into());
            }
            _ => {}
        }
    }
    Ok(())
}

/// The local overlap rules of [`check_output`]: the reason to refuse, if any.
fn check_local_overlap(out: &Path, input: &Path) -> std::result::Result<(), String> {
    let out_abs = absolute(out);
    // a glob input is judged by the directory it lists
    let input_base = glob_base(input);
    let input_abs = absolute(&input_base);
    if out_abs == input_abs {
        return Err("is the input; choose another path".into());
    }
    if input_base.is_dir() && out_abs.starts_with(&input_abs) {
        return Err(format!(
            "lies inside the input directory {}; it would be read as input next time",
            input_base.display()
        ));
    }
    if input_abs.starts_with(&out_abs) {
        return Err(format!(
            "contains the input {}; writing it would destroy the input",
            input.display()
        ));
    }
    Ok(())
}

/// `path` made absolute and, where it exists, canonical (symlinks resolved).
fn absolute(path: &Path) -> PathBuf {
    if let Ok(canonical) = path.canonicalize() {
        return canonical;
    }
    // not there yet: canonicalize the nearest existing ancestor, keep the rest
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
    let mut result = existing
        .canonicalize()
        .unwrap_or_else(|_| existing.to_path_buf());
    for name in rest.into_iter().rev() {
        result.push(name);
    }
    result
}

/// The directory part of a glob path (`data/*.parquet` → `data`), or the path itself.
fn glob_base(path: &Path) -> PathBuf {
    let text = path.to_string_lossy();
    match text.find(['*', '?', '[']) {
        Some(i) => {
            let prefix = &text[..i];
            let cut = prefix.rfind('/').map(|j| &prefix[..j]).unwrap_or(".");
            PathBuf::from(if cut.is_empty() { "/" } else { cut })
        }
        None => path.to_path_buf(),
    }
}
