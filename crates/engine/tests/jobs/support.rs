//! What the engine's job tests share: the repository's bundled data, scratch directories, the
//! generated patients table and its policy, the Adult policy, and the jobs called the way a
//! shell calls them (an [`AnonymizeOptions`] in, a [`Published`] or a one-line error out).

use std::path::{Path, PathBuf};

use datafusion_anonymity_engine::errors::{Vocabulary, one_line};
use datafusion_anonymity_engine::jobs::Silent;
use datafusion_anonymity_engine::jobs::anonymize::{self, AnonymizeOptions, Published};
use datafusion_anonymity_engine::jobs::apply::{self, AppliedRelease, ApplyOptions};
use datafusion_anonymity_engine::session;

/// Adult's eight quasi-identifiers (issue 4, the bundled policy's), in the policy's order.
pub const ADULT_QIS: [&str; 8] = [
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
pub fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

/// The JSON file at `path` (a report).
pub fn read_json(path: impl AsRef<Path>) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A policy over the bundled Adult extract: the quasi-identifiers `qis` with ARX's tree
/// hierarchies, Adult's other quasi-identifiers insensitive, `salary-class` sensitive, and
/// `privacy` as the `[privacy]` section. Written as `dir/policy.toml`; returns its path.
pub struct AdultPolicy<'a> {
    privacy: &'a str,
    qis: &'a [&'a str],
    input: PathBuf,
    population: Option<PathBuf>,
}

impl<'a> AdultPolicy<'a> {
    /// Every one of Adult's eight quasi-identifiers, over the bundled file.
    pub fn new(privacy: &'a str) -> Self {
        Self {
            privacy,
            qis: &ADULT_QIS,
            input: repo("examples/adult/adult.parquet"),
            population: None,
        }
    }

    /// Only `qis` as quasi-identifiers (the others insensitive).
    pub fn qis(mut self, qis: &'a [&'a str]) -> Self {
        self.qis = qis;
        self
    }

    /// Another input with Adult's columns (a sample).
    pub fn input(mut self, input: &Path) -> Self {
        self.input = input.to_path_buf();
        self
    }

    /// A `[population] path`.
    pub fn population(mut self, population: &Path) -> Self {
        self.population = Some(population.to_path_buf());
        self
    }

    /// The policy's text.
    pub fn text(&self) -> String {
        let mut text = format!("[input]\npath = \"{}\"\n", self.input.display());
        if let Some(population) = &self.population {
            text.push_str(&format!(
                "[population]\npath = \"{}\"\n",
                population.display()
            ));
        }
        text.push_str(&format!("[privacy]\n{}\n[attributes]\n", self.privacy));
        for qi in ADULT_QIS.iter().filter(|q| !self.qis.contains(q)) {
            text.push_str(&format!("\"{qi}\" = {{ role = \"insensitive\" }}\n"));
        }
        for qi in self.qis {
            text.push_str(&format!(
                "\"{qi}\" = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", file = \"{}\" }} }}\n",
                repo(&format!("examples/adult/hierarchies/adult_hierarchy_{qi}.csv")).display()
            ));
        }
        text.push_str("\"salary-class\" = { role = \"sensitive\" }\n");
        text
    }

    /// Writes the policy as `dir/policy.toml`; its path.
    pub fn write(&self, dir: &Path) -> String {
        let path = dir.join("policy.toml");
        std::fs::write(&path, self.text()).unwrap();
        path.display().to_string()
    }
}

/// A job's error as the one line a shell shows, the options named by the jobs' own keys
/// (`refine = false`, not `--no-refine`).
pub fn message(error: &datafusion::error::DataFusionError) -> String {
    one_line(error, Vocabulary::KEYS)
}

/// `anonymize` of `policy` into `out` (with the JSON report at `report`, if given), with the
/// defaults of a shell (optimal, Loss, a random seed) changed by `configure`; the one line a
/// shell would show if it fails.
pub async fn anonymize(
    policy: &str,
    out: &Path,
    report: Option<&Path>,
    configure: impl FnOnce(&mut AnonymizeOptions),
) -> Result<Published, String> {
    let mut options = AnonymizeOptions::new(policy);
    options.out = Some(out.display().to_string());
    options.report = report.map(|r| r.display().to_string());
    configure(&mut options);
    let ctx = session::context(None).map_err(|e| message(&e))?;
    anonymize::anonymize(&ctx, &options, &Silent)
        .await
        .map_err(|e| message(&e))
}

/// `apply` of `policy`'s `[transformation]` into `out`, changed by `configure`.
pub async fn apply(
    policy: &str,
    out: &Path,
    configure: impl FnOnce(&mut ApplyOptions),
) -> Result<AppliedRelease, String> {
    let mut options = ApplyOptions::new(policy);
    options.out = Some(out.display().to_string());
    configure(&mut options);
    let ctx = session::context(None).map_err(|e| message(&e))?;
    apply::apply(&ctx, &options, &Silent)
        .await
        .map_err(|e| message(&e))
}

/// An algorithm by its name, as every shell reads it.
pub fn algorithm(name: &str) -> datafusion_anonymity_engine::search::Method {
    name.parse().unwrap()
}
