//! Integration tests for `datafusion_anonymity`, written from `docs/functions.md` and
//! `docs/definitions.md`: sqllogictest files under `sql/`, a brute-force reference comparison,
//! and a check that the definitions page defines every JSON key of the profile.

mod arguments;
mod bucketize;
mod cloaking;
mod cluster;
mod csv;
mod definitions;
mod delta;
mod hierarchy;
mod persons;
mod perturbation;
mod profile;
mod publish;
mod recoding;
#[path = "../../crates/datafusion-anonymity/tests/support/reference.rs"]
mod reference;
mod report;
mod s3;

mod shuffle;
mod slt;
#[path = "../../crates/datafusion-anonymity/tests/support/slt_runner.rs"]
mod slt_runner;
mod staging;
mod structure;
mod tables;
mod uniqueness;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Adult's eight quasi-identifiers (issue 4, the bundled policy's), in the policy's order.
const ADULT_QIS: [&str; 8] = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
];

/// `path`, relative to the repository's root.
fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The JSON file at `path` (a report).
fn read_json(path: impl AsRef<Path>) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs the `anon` binary with `args`.
fn anon(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_anon"))
        .args(args)
        .output()
        .unwrap()
}

/// `anon anonymize --quiet --policy POLICY --out OUT [--report REPORT] EXTRA…`: the one
/// spawner of the end-to-end tests' anonymize runs.
fn anonymize_quietly(policy: &str, out: &Path, report: Option<&Path>, extra: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_anon"));
    command
        .args(["anonymize", "--quiet", "--policy", policy])
        .args(["--out", &out.display().to_string()]);
    if let Some(report) = report {
        command.args(["--report", &report.display().to_string()]);
    }
    command.args(extra).output().unwrap()
}

/// A scratch directory for one test and the files it writes there.
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// With `anon generate`'s patients table (`rows` rows, seed 5) as `patients.parquet`.
    fn with_patients(rows: usize) -> Self {
        let scratch = Self::new();
        generate_patients(&scratch.path("patients.parquet"), rows, 5);
        scratch
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// [`Self::path`] as a command-line argument.
    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Writes `text` to `name` (creating its folders); its path as an argument.
    fn write(&self, name: &str, text: &str) -> String {
        let path = self.path(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        self.arg(name)
    }

    /// The JSON report a run wrote at `name`.
    fn report(&self, name: &str) -> serde_json::Value {
        read_json(self.path(name))
    }

    /// The names in the directory that start with a dot (hidden: staging, temporary files).
    fn hidden(&self) -> Vec<String> {
        self.names(|name| name.starts_with('.'))
    }

    /// The names in the directory that mark staging (`.NAME.anon-tmp-…`).
    fn staging(&self) -> Vec<String> {
        self.names(|name| name.contains(".anon-tmp-"))
    }

    fn names(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|name| keep(name))
            .collect()
    }
}

/// A command's stderr as text.
fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).to_string()
}

/// Writes `anon generate --table TABLE` (`rows` rows, `seed`) to `path`: the one generator of
/// the end-to-end tests' inputs.
fn generate(table: &str, path: &Path, rows: usize, seed: u64) {
    let generated = anon(&[
        "generate",
        "--table",
        table,
        "--rows",
        &rows.to_string(),
        "--out",
        &path.display().to_string(),
        "--seed",
        &seed.to_string(),
    ]);
    assert!(generated.status.success(), "{}", stderr(&generated));
}

/// Writes `anon generate`'s patients table (`rows` rows, `seed`) to `path`.
fn generate_patients(path: &Path, rows: usize, seed: u64) {
    generate("patients", path, rows, seed);
}

/// A policy over the patients table at `input`: zip, age and sex are quasi-identifiers,
/// disease is sensitive, with `[transformation]` zip = `zip_level`, age = `age_level`.
fn patients_policy(
    input: &str,
    k: u64,
    max_suppression: f64,
    zip_level: usize,
    age_level: usize,
) -> String {
    format!(
        r#"name = "patients"
[input]
path = "{input}"
[privacy]
k = {k}
max_suppression = {max_suppression}
[attributes]
patient_id = {{ role = "identifier" }}
zip = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask", length = 5 }} }}
age = {{ role = "quasi_identifier", hierarchy = {{ kind = "interval", widths = [5, 10, 20] }} }}
sex = {{ role = "quasi_identifier", hierarchy = {{ kind = "tree", rows = [["F", "*"], ["M", "*"]] }} }}
race = {{ role = "insensitive" }}
marital_status = {{ role = "insensitive" }}
education = {{ role = "insensitive" }}
disease = {{ role = "sensitive" }}
income = {{ role = "insensitive" }}
[transformation]
zip = {zip_level}
age = {age_level}
"#
    )
}
