//! Where a job's policy comes from: a file (the command line's `--policy`, a path or a URL),
//! TOML text or a table of values handed over directly (Python's `policy=` as a string or a
//! dict), and optionally a table read in place of the policy's `[input] path` (Python's
//! `input=`).
//!
//! Text and tables have no directory of their own: their relative paths (the input,
//! hierarchy files, the output) resolve against the directory the caller gives, the current
//! directory for Python, as a reader of the code that passes them would expect. Errors name
//! text as `(text)` and a table as `(dict)`, where a file's name its path.

use std::path::PathBuf;

use datafusion::error::Result;

use super::Policy;
use crate::storage::Location;

/// The name errors give a policy handed over as text.
pub const TEXT_SOURCE: &str = "(text)";

/// The name errors give a policy handed over as a table of values.
pub const TABLE_SOURCE: &str = "(dict)";

/// A policy to read, and the input to read instead of its `[input] path`, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicySource {
    origin: Origin,
    input: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    File(String),
    Text { toml: String, directory: PathBuf },
    Table { json: String, directory: PathBuf },
}

impl PolicySource {
    /// The policy file at `path` (a path or a URL).
    pub fn file(path: impl Into<String>) -> Self {
        Self {
            origin: Origin::File(path.into()),
            input: None,
        }
    }

    /// A policy given as TOML text, its relative paths resolved against `directory`.
    pub fn text(toml: impl Into<String>, directory: impl Into<PathBuf>) -> Self {
        Self {
            origin: Origin::Text {
                toml: toml.into(),
                directory: directory.into(),
            },
            input: None,
        }
    }

    /// A policy given as a table of values in JSON text (the keys and values of the TOML
    /// file), its relative paths resolved against `directory`.
    pub fn table(json: impl Into<String>, directory: impl Into<PathBuf>) -> Self {
        Self {
            origin: Origin::Table {
                json: json.into(),
                directory: directory.into(),
            },
            input: None,
        }
    }

    /// Reads the data from `input` (a path or URL) instead of the policy's `[input] path`.
    pub fn with_input(mut self, input: Option<String>) -> Self {
        self.input = input;
        self
    }

    /// The policy, parsed and checked (its hierarchy files loaded), with the input replaced
    /// when one was given.
    pub fn read(&self) -> Result<Policy> {
        let mut policy = match &self.origin {
            Origin::File(path) => Policy::from_file(path)?,
            Origin::Text { toml, directory } => Policy::from_toml(TEXT_SOURCE, directory, toml)?,
            Origin::Table { json, directory } => Policy::from_json(TABLE_SOURCE, directory, json)?,
        };
        if let Some(input) = &self.input {
            policy.set_input(Location::parse(input)?);
        }
        Ok(policy)
    }
}

impl From<String> for PolicySource {
    fn from(path: String) -> Self {
        Self::file(path)
    }
}

impl From<&str> for PolicySource {
    fn from(path: &str) -> Self {
        Self::file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // a minimal policy: one quasi-identifier with a mask, k = 2
    const POLICY: &str = "[input]\npath = \"data/in.parquet\"\n[privacy]\nk = 2\n\
        [attributes]\nzip = { role = \"quasi_identifier\", hierarchy = { kind = \"mask\", length = 5 } }\n";

    #[test]
    fn text_resolves_relative_paths_against_the_given_directory() {
        let policy = PolicySource::text(POLICY, "/somewhere").read().unwrap();
        assert_eq!(
            policy.input(),
            &Location::Local(PathBuf::from("/somewhere/data/in.parquet"))
        );
    }

    #[test]
    fn an_input_given_replaces_the_policys() {
        let policy = PolicySource::text(POLICY, "/somewhere")
            .with_input(Some("/elsewhere/t.parquet".to_string()))
            .read()
            .unwrap();
        assert_eq!(
            policy.input(),
            &Location::Local(PathBuf::from("/elsewhere/t.parquet"))
        );
    }

    #[test]
    fn a_table_reads_as_its_toml_text_does() {
        // the POLICY above as JSON
        let json = r#"{"input": {"path": "data/in.parquet"}, "privacy": {"k": 2},
            "attributes": {"zip": {"role": "quasi_identifier",
                                   "hierarchy": {"kind": "mask", "length": 5}}}}"#;
        let from_table = PolicySource::table(json, "/somewhere").read().unwrap();
        let from_text = PolicySource::text(POLICY, "/somewhere").read().unwrap();
        assert_eq!(from_table.input(), from_text.input());
        assert_eq!(from_table.requirements().k, 2);
        assert_eq!(
            from_table.quasi_identifiers().len(),
            from_text.quasi_identifiers().len()
        );
    }

    #[test]
    fn errors_in_a_table_name_the_table() {
        let json = r#"{"input": {"path": "in.parquet"}, "privacy": {"k": "two"},
            "attributes": {}}"#;
        let message = PolicySource::table(json, "/")
            .read()
            .unwrap_err()
            .to_string();
        assert!(message.contains("policy (dict): "), "message: {message}");
        // a None (JSON null) is not a TOML value
        let message = PolicySource::table(r#"{"name": null}"#, "/")
            .read()
            .unwrap_err()
            .to_string();
        assert!(
            message.contains("policy (dict): not a table of TOML values"),
            "message: {message}"
        );
    }

    #[test]
    fn errors_in_text_name_the_text_and_the_line() {
        let broken = POLICY.replace("k = 2", "k = \"two\"");
        let message = PolicySource::text(broken, "/")
            .read()
            .unwrap_err()
            .to_string();
        // `k` is on the fourth line of the text above
        assert!(
            message.contains("policy (text): line 4:"),
            "message: {message}"
        );
    }
}
