//! The report of a release, one for `anon apply` and `anon anonymize`: the same keys from
//! both (the search's figures null for `apply`), written as JSON (`--report`) and as one
//! self-contained HTML page of the same figures (`--html-report`).
//!
//! Reports are outputs: checked before anything is read (refused if they exist, unless
//! `--overwrite`), written only once the release is published, each as one whole. They carry
//! counts, shares, levels and names, never a value of the data.

use crate::errors::{Opt, UsageError};
use std::time::Instant;

use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use crate::policy::{
    Direction, Measure, Policy, PrivacyRequirements, RiskThresholds, SuppressionMode,
    UNIQUE_SHARE_WARNING,
};
use crate::profile::Utility;
use crate::profile::figures::{self as f, Figure};
use crate::profile::render_html::Page;
use crate::publish::{self, PublishReport, QiLevel};
use crate::saved_recoding::RecodingFileFigures;
use crate::search::Metric;
use crate::storage::{self, Location, StoreOptions};
use crate::text::{group_digits, percent, ratio};

/// Where the reports go, checked.
pub struct ReportTargets {
    json: Option<Location>,
    html: Option<Location>,
    /// Whether the reports hold the seed ([`ReportTargets::recording_seed`]).
    record_seed: bool,
}

impl ReportTargets {
    /// The JSON and HTML reports asked for, refused as an output would be (existing without
    /// `overwrite`, in or over the input, in a missing directory) or when one is `out` or
    /// both are the same file: called before anything is read or written.
    pub async fn check(
        json: Option<&str>,
        html: Option<&str>,
        policy: &Policy,
        out: &Location,
        overwrite: bool,
    ) -> Result<Self> {
        let targets = Self {
            json: json.map(Location::parse).transpose()?,
            html: html.map(Location::parse).transpose()?,
            record_seed: false,
        };
        for report in targets.json.iter().chain(&targets.html) {
            if report == out {
                return Err(DataFusionError::Plan(format!(
                    "report {report} is the output; choose another path"
                )));
            }
            // a report is an output too: replaced only with --overwrite
            publish::check_target(
                report,
                policy.input(),
                overwrite,
                policy.storage(),
                false,
                publish::Written::Report,
            )
            .await?;
        }
        if let (Some(json), Some(html)) = (&targets.json, &targets.html)
            && json == html
        {
            return Err(UsageError::new()
                .opt(Opt::Report)
                .text(" and ")
                .opt(Opt::HtmlReport)
                .text(format!(" both name {json}; give each its own file"))
                .into());
        }
        Ok(targets)
    }

    /// The reports with the seed (`record`: the publisher asked for it, `--record-seed`).
    /// By default they do not hold it, whatever the method: the seed orders the rows (and
    /// draws the noise, the swaps, PRAM's changes, the unicity samples), so with the input it
    /// undoes the shuffle or the noise. What a job returns to its caller (the command line's
    /// stdout, Python's result) still has it; a Delta `commitInfo` never does.
    pub fn recording_seed(mut self, record: bool) -> Self {
        self.record_seed = record;
        self
    }

    /// Whether any report is asked for.
    pub fn any(&self) -> bool {
        self.json.is_some() || self.html.is_some()
    }

    /// Writes `report` to each place asked for, each as one whole.
    pub async fn write(&self, report: &Report, options: &StoreOptions) -> Result<()> {
        self.write_with_page(report, |record_seed| report.html(record_seed), options)
            .await
    }

    /// Writes `report` as JSON and `page(record_seed)` as the HTML report, each where asked
    /// for, each as one whole: every method's reports ([`super::method_pages`]).
    pub async fn write_with_page(
        &self,
        report: &impl Serialize,
        page: impl FnOnce(bool) -> String,
        options: &StoreOptions,
    ) -> Result<()> {
        self.write_json(report, options).await?;
        if let Some(path) = &self.html {
            write_report(path, options, page(self.record_seed)).await?;
        }
        Ok(())
    }

    /// Writes `report` as JSON, if a JSON report was asked for, without its seed unless
    /// [`ReportTargets::recording_seed`].
    pub async fn write_json(&self, report: &impl Serialize, options: &StoreOptions) -> Result<()> {
        let Some(path) = &self.json else {
            return Ok(());
        };
        let mut value = serde_json::to_value(report)
            .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))?;
        if !self.record_seed {
            remove_seed(&mut value);
        }
        let text = serde_json::to_string_pretty(&value)
            .map_err(|e| DataFusionError::Execution(format!("cannot encode the report: {e}")))?;
        write_report(path, options, text).await
    }
}

/// Removes the seed from a report's JSON: `seed` (cloaking) and `publish.seed`
/// (generalization), the only places a report holds it.
pub fn remove_seed(report: &mut serde_json::Value) {
    if let Some(top) = report.as_object_mut() {
        top.remove("seed");
    }
    if let Some(publish) = report
        .get_mut("publish")
        .and_then(serde_json::Value::as_object_mut)
    {
        publish.remove("seed");
    }
}

/// Writes the report `text` to `location` as one whole (see [`storage::put`]).
pub async fn write_report(location: &Location, options: &StoreOptions, text: String) -> Result<()> {
    storage::put(location, options, text.into())
        .await
        .map_err(|e| {
            DataFusionError::Execution(format!("cannot write the report: {}", e.message()))
        })
}

/// The report of a published release. The JSON keys are defined in `docs/definitions.md`.
#[derive(Debug, Serialize)]
pub struct Report {
    /// `apply` or `anonymize`
    pub command: &'static str,
    pub policy: String,
    pub input: String,
    /// the version of a Delta input read (absent for other inputs): with it, the release
    /// can be made again from the same rows
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_version: Option<i64>,
    /// the search's algorithm (anonymize; null for apply)
    pub algorithm: Option<&'static str>,
    /// Mondrian only: whether it refined its small regions (`false` with `--no-refine`)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refined: Option<bool>,
    /// `full-domain` or `local`
    pub recoding: &'static str,
    /// what the search minimized, and its value (anonymize; null for apply)
    #[serde(serialize_with = "metric_name")]
    pub metric: Option<Metric>,
    pub metric_value: Option<f64>,
    /// the levels (full-domain); empty for local recoding
    pub levels: Vec<QiLevel>,
    /// lattice nodes (full-domain searches)
    pub lattice_size: Option<usize>,
    pub nodes_checked: Option<usize>,
    /// classes of the release as the algorithm built them (local recoding)
    pub local_classes: Option<usize>,
    /// combinations of the frequency set, when one was built
    pub frequency_set_rows: Option<usize>,
    /// the local recoding file written (`anonymize --recoding-out`) or applied (`apply
    /// --recoding`), with its classes and, applied, the rows no class covered
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recoding_file: Option<RecodingFileFigures>,
    pub publish: PublishReport,
    /// every warning of the job, as the command line prints them (without `warning: `): the
    /// input's (an identifier whose values repeat), then the release's ([`release_warnings`])
    pub warnings: Vec<String>,
    /// the policy's post-analytics thresholds, which `publish.post_analytics` met
    pub thresholds: RiskThresholds,
    /// With `--utility`: the profile's utility section, every row paired with its original.
    pub utility: Option<Utility>,
    pub seconds: Timings,
    /// the policy's table name in SQL (`<name>_anon` serves the release)
    #[serde(skip)]
    pub table_name: String,
    /// the policy's requirements, for the HTML page's "required" column
    #[serde(skip)]
    requirements: PrivacyRequirements,
    #[serde(skip)]
    suppression: SuppressionMode,
}

/// Seconds per phase: together they make up `total`, but for the moments between them.
#[derive(Debug, Serialize, Default)]
pub struct Timings {
    /// reading the policy, checking the outputs and registering the input (a CSV input is
    /// read whole there, to infer or check its types), up to the first phase below
    pub input: f64,
    /// building the frequency set (null when none was built)
    pub frequency_set: Option<f64>,
    /// the search (anonymize; null for apply)
    pub search: Option<f64>,
    pub suppression_count: f64,
    pub write: f64,
    pub verify: f64,
    pub post_analytics: f64,
    /// moving the verified output into place
    pub commit: f64,
    /// measuring the utility (`--utility`; null without)
    pub utility: Option<f64>,
    pub total: f64,
}

/// How a search found the release (`anonymize`; `apply` has a fixed one).
#[derive(Debug, Clone)]
pub struct SearchFigures {
    pub algorithm: &'static str,
    /// Mondrian only: whether it refined its small regions.
    pub refined: Option<bool>,
    pub metric: Metric,
    pub metric_value: f64,
    /// Lattice nodes (full-domain searches).
    pub lattice_size: Option<usize>,
    pub nodes_checked: Option<usize>,
    /// Classes of the release as the algorithm built them (local recoding).
    pub local_classes: Option<usize>,
    pub seconds: f64,
}

/// The frequency set a run built: its combinations, and the seconds it took.
#[derive(Debug, Clone, Copy)]
pub struct FrequencySetFigures {
    pub combinations: usize,
    pub seconds: f64,
}

/// What a generalized release's report is made of, each part from the phase that found it.
#[derive(Debug)]
pub struct ReportParts<'a> {
    /// `apply` or `anonymize`.
    pub command: &'static str,
    pub policy: &'a Policy,
    /// The input's warnings ([`super::input_warnings`]).
    pub input_warnings: Vec<String>,
    pub publish: PublishReport,
    pub search: Option<SearchFigures>,
    pub frequency_set: Option<FrequencySetFigures>,
    pub recoding_file: Option<RecodingFileFigures>,
    /// With `utility`: the figures and the seconds they took.
    pub utility: Option<(Utility, f64)>,
    /// When the command started.
    pub started: Instant,
    /// From then to its first phase.
    pub input_seconds: f64,
}

/// A generalized release's warnings: each quasi-identifier erased entirely (its level
/// publishes every value as `*`), then the post-analytics' (`publish.warnings`). Without
/// their `warning: ` prefix.
pub fn release_warnings(publish: &PublishReport) -> Vec<String> {
    publish
        .levels
        .iter()
        .filter(|l| l.meaning == datafusion_anonymity::generalize::ERASED)
        .map(|erased| {
            format!(
                "quasi-identifier '{}' is erased entirely: level {} publishes every value as *",
                erased.quasi_identifier, erased.level
            )
        })
        .chain(publish.warnings.iter().cloned())
        .collect()
}

/// Tells `observer` each of [`release_warnings`], as the command line prints them.
pub fn note_release_warnings(publish: &PublishReport, observer: &dyn super::Observer) {
    for warning in release_warnings(publish) {
        observer.note(&format!("warning: {warning}"));
    }
}

impl Report {
    /// The report of a generalized release, from its parts.
    pub fn new(parts: ReportParts<'_>) -> Self {
        let ReportParts {
            command,
            policy,
            input_warnings,
            publish,
            search,
            frequency_set,
            recoding_file,
            utility,
            started,
            input_seconds,
        } = parts;
        let (utility, utility_seconds) = utility.unzip();
        let seconds = Timings {
            input: input_seconds,
            frequency_set: frequency_set.map(|f| f.seconds),
            search: search.as_ref().map(|s| s.seconds),
            suppression_count: publish.seconds.classes,
            write: publish.seconds.write,
            verify: publish.seconds.verify,
            post_analytics: publish.seconds.post_analytics,
            commit: publish.seconds.commit,
            utility: utility_seconds,
            total: started.elapsed().as_secs_f64(),
        };
        let warnings = input_warnings
            .into_iter()
            .chain(release_warnings(&publish))
            .collect();
        Self {
            command,
            policy: policy.source().to_string(),
            input: policy.input().to_string(),
            input_version: policy.input_version(),
            algorithm: search.as_ref().map(|s| s.algorithm),
            refined: search.as_ref().and_then(|s| s.refined),
            recoding: publish.recoding,
            metric: search.as_ref().map(|s| s.metric),
            metric_value: search.as_ref().map(|s| s.metric_value),
            levels: publish.levels.clone(),
            lattice_size: search.as_ref().and_then(|s| s.lattice_size),
            nodes_checked: search.as_ref().and_then(|s| s.nodes_checked),
            local_classes: search.as_ref().and_then(|s| s.local_classes),
            frequency_set_rows: frequency_set.map(|f| f.combinations),
            recoding_file,
            publish,
            warnings,
            thresholds: policy.thresholds().clone(),
            utility,
            seconds,
            table_name: policy.table_name().to_string(),
            requirements: policy.requirements().clone(),
            suppression: policy.suppression(),
        }
    }

    /// The report as one self-contained HTML page: the release, its levels, the verification
    /// beside the requirements, the post-analytics beside the thresholds, the utility (with
    /// `--utility`) and the timings. Profile figures keep the profile's labels.
    pub fn html(&self, record_seed: bool) -> String {
        let p = &self.publish;
        let mut page = Page::new(&format!("Release report: {}", p.output));
        page.meta(&format!(
            "anon {} · policy {} · input {}",
            self.command, self.policy, self.input
        ));
        // the input's warnings and erased quasi-identifiers; the post-analytics' are shown
        // beside them
        for warning in self
            .warnings
            .iter()
            .filter(|w| !self.publish.warnings.contains(w))
        {
            page.warning(&format!("warning: {warning}"));
        }
        self.release(&mut page, record_seed);
        self.levels(&mut page);
        self.verification(&mut page);
        self.post_analytics(&mut page);
        if let Some(utility) = &self.utility {
            page.utility(utility, self.suppressed_meaning());
        }
        self.timings(&mut page);
        page.finish()
    }

    fn release(&self, page: &mut Page, record_seed: bool) {
        let p = &self.publish;
        let v = &p.verification;
        page.heading("Release");
        page.table(&["figure", "value", "meaning"]);
        page.row("output", &[&p.output], "where the release was published");
        page.row(
            "input rows",
            &[&group_digits(p.input_rows)],
            "rows of the policy's input",
        );
        page.row(
            "rows written",
            &[&format!(
                "{} ({})",
                group_digits(v.rows),
                percent(share(v.rows, p.input_rows))
            )],
            "rows of the output (the masked all-* class left out when it fails on its own)",
        );
        let suppression = match self.suppression {
            SuppressionMode::Drop => "dropped",
            SuppressionMode::Mask => "kept with every quasi-identifier masked as *",
        };
        page.row(
            f::SUPPRESSED_ROWS.label,
            &[&format!(
                "{} ({})",
                group_digits(p.suppressed_rows),
                percent(share(p.suppressed_rows, p.input_rows))
            )],
            &format!("rows of the classes that fail the requirements, {suppression}"),
        );
        page.row(
            "recoding",
            &[p.recoding],
            "full-domain: one level per quasi-identifier; local: each class on its own",
        );
        if let Some(algorithm) = self.algorithm {
            page.row("algorithm", &[algorithm], "what chose the release");
        }
        if let Some(refined) = self.refined {
            page.row(
                "refined",
                &[if refined {
                    "yes"
                } else {
                    "no (refinement off)"
                }],
                "Mondrian: small regions refined where that lowers the Loss",
            );
        }
        if let (Some(metric), Some(value)) = (self.metric, self.metric_value) {
            page.row(
                metric.name(),
                &[&metric.display(value)],
                "what the search minimized",
            );
        }
        if let (Some(checked), Some(size)) = (self.nodes_checked, self.lattice_size) {
            page.row(
                "lattice nodes checked",
                &[&format!(
                    "{} of {}",
                    group_digits(checked as u64),
                    group_digits(size as u64)
                )],
                "transformations the search evaluated",
            );
        }
        if let Some(rows) = self.frequency_set_rows {
            page.row(
                "frequency set",
                &[&group_digits(rows as u64)],
                "distinct combinations of the quasi-identifiers (and sensitive attributes) read",
            );
        }
        match p.seed {
            Some(seed) if record_seed => page.row(
                "row order",
                &[&format!("{}, seed {seed}", p.row_order)],
                "the rows written in a random order from this seed: keep it as secret as the \
                 data, with the input it undoes the shuffle",
            ),
            Some(_) => page.row(
                "row order",
                &[p.row_order],
                "the rows written in a random order; the seed is not recorded here (it is as \
                 secret as the data: with the input it undoes the shuffle)",
            ),
            None => page.row("row order", &[p.row_order], "the rows in the input's order"),
        }
        page.end_table();
        page.class_sizes(&p.class_sizes, v.rows);
    }

    /// What the utility section's suppressed rows are in this release: the utility counts
    /// them as all `*` either way, but only a mask release publishes them so.
    fn suppressed_meaning(&self) -> &'static str {
        match self.suppression {
            SuppressionMode::Drop => {
                "rows of the classes that fail the requirements: left out of the release \
                 (drop), counted by the figures below as rows whose quasi-identifiers are all *"
            }
            SuppressionMode::Mask => f::SUPPRESSED_ROWS.description,
        }
    }

    fn levels(&self, page: &mut Page) {
        if self.recoding == "local" {
            page.heading("Local recoding");
            page.paragraph(&match self.local_classes {
                Some(classes) => format!(
                    "Each class is generalized on its own: {} classes as the algorithm built them.",
                    group_digits(classes as u64)
                ),
                None => "Each class is generalized on its own.".to_string(),
            });
            return;
        }
        page.heading("Levels");
        page.table(&["quasi-identifier", "level", "meaning"]);
        for level in &self.levels {
            page.row(
                &level.quasi_identifier,
                &[&level.level.to_string()],
                &level.meaning,
            );
        }
        page.end_table();
    }

    fn verification(&self, page: &mut Page) {
        let p = &self.publish;
        let v = &p.verification;
        let r = &self.requirements;
        page.heading("Verification");
        page.paragraph(
            "Measured on the written output, against the policy's requirements, before it was \
             moved into place.",
        );
        page.table(&["figure", "value", "required", "meaning"]);
        page.row(
            f::K.label,
            &[&group_digits(v.k), &format!("≥ {}", r.k)],
            f::K.description,
        );
        page.row(
            f::CLASSES.label,
            &[&group_digits(v.classes), ""],
            f::CLASSES.description,
        );
        page.row(
            &format!("{} (as the output shows)", f::SUPPRESSED_ROWS.label),
            &[
                &group_digits(v.suppressed_rows),
                &format!(
                    "≤ {} (max_suppression = {})",
                    group_digits(r.max_suppressed_rows(p.input_rows)),
                    r.max_suppression
                ),
            ],
            "input rows not written (drop), or rows of the all-* class when it fails on its own \
             (mask)",
        );
        for achieved in &v.sensitive {
            let bounds = r
                .sensitive
                .iter()
                .find(|s| s.attribute == achieved.attribute)
                .map(|s| s.bounds())
                .unwrap_or_default();
            for (key, worst) in &achieved.worst {
                let bound = bounds.iter().find(|b| b.measure.key() == *key);
                let (label, description) = match bound {
                    Some(b) => measure_label(b.measure),
                    None => (key.to_string(), ""),
                };
                let required = bound.map_or_else(String::new, |b| {
                    let direction = match b.measure.direction() {
                        Direction::AtLeast => "≥",
                        Direction::AtMost => "≤",
                        Direction::Below => "<",
                    };
                    format!("{direction} {}", b.limit)
                });
                page.row(
                    &format!("{label} of {}", achieved.attribute),
                    &[&worst.map_or_else(|| "n/a".to_string(), ratio), &required],
                    &format!("{description} (the worst class)"),
                );
            }
        }
        if let Some(population) = &v.population {
            let requirement = r.population.as_ref();
            page.row(
                f::POPULATION_ROWS.label,
                &[&group_digits(population.population_rows), ""],
                f::POPULATION_ROWS.description,
            );
            page.row(
                f::K_MAP.label,
                &[
                    &population
                        .k_map
                        .map_or_else(|| "n/a".to_string(), group_digits),
                    &requirement
                        .and_then(|q| q.k_map)
                        .map_or_else(String::new, |k| format!("≥ {k}")),
                ],
                f::K_MAP.description,
            );
            if let Some((min, max)) = population.delta_presence {
                page.row(
                    "δ-presence",
                    &[
                        &format!("{} to {}", presence(min), presence(max)),
                        &requirement
                            .and_then(|q| q.delta_presence)
                            .map_or_else(String::new, |d| format!("{} to {}", d.min, d.max)),
                    ],
                    "|E| / F_E over the written classes: the chance a matching person of the \
                     population is in the release",
                );
            }
        }
        page.end_table();
    }

    fn post_analytics(&self, page: &mut Page) {
        let a = &self.publish.post_analytics;
        let t = &self.thresholds;
        page.heading("Post-analytics");
        page.paragraph(
            "What the written output gives away, checked against the policy's thresholds before \
             it was published.",
        );
        for warning in &self.publish.warnings {
            page.warning(&format!("warning: {warning}"));
        }
        page.table(&["figure", "value", "threshold", "meaning"]);
        let mut risk = |figure: Figure, value: f64, name: &str, limit: Option<f64>| {
            page.row(
                figure.label,
                &[&ratio(value), &threshold(name, limit)],
                figure.description,
            );
        };
        risk(
            f::PROSECUTOR_RISK_MAX,
            a.prosecutor_max,
            "max_prosecutor_risk",
            t.max_prosecutor_risk,
        );
        risk(
            f::PROSECUTOR_RISK_AVERAGE,
            a.prosecutor_average,
            "max_average_risk",
            t.max_average_risk,
        );
        risk(
            f::MARKETER_RISK,
            a.marketer,
            "max_marketer_risk",
            t.max_marketer_risk,
        );
        if let Some(journalist) = a.journalist {
            risk(
                f::JOURNALIST_RISK,
                journalist,
                "max_journalist_risk",
                t.max_journalist_risk,
            );
        }
        if let Some(marketer) = a.population_marketer {
            page.row(
                f::POPULATION_MARKETER_RISK.label,
                &[&ratio(marketer), ""],
                f::POPULATION_MARKETER_RISK.description,
            );
        }
        page.end_table();
        page.paragraph(&format!(
            "The {} of the published attributes (the sensitive ones left out): {}.",
            f::LEAKAGE.label,
            f::LEAKAGE.description
        ));
        page.table(&["attribute", "leakage", "threshold", ""]);
        for leakage in &a.leakage {
            page.row(
                &leakage.attribute,
                &[
                    &ratio(leakage.leakage),
                    &threshold(
                        "max_leakage",
                        t.max_leakage.get(&leakage.attribute).copied(),
                    ),
                ],
                "",
            );
        }
        page.end_table();
        page.paragraph(
            "Each published column that is not a quasi-identifier, with the quasi-identifiers: \
             the rows no other row matches on both (whoever knows a person's value of the \
             column and quasi-identifiers finds their row), and the leakage of the pair.",
        );
        page.table(&[
            "column",
            "unique rows",
            "share",
            "leakage with the quasi-identifiers",
            "threshold",
        ]);
        for column in &a.uniqueness {
            page.row(
                &column.attribute,
                &[
                    &group_digits(column.unique_rows),
                    &percent(column.unique_share),
                    &ratio(column.leakage_with_quasi_identifiers),
                    &t.max_unique_share.map_or_else(
                        || format!("warned above {}", percent(UNIQUE_SHARE_WARNING)),
                        |limit| format!("≤ {} (max_unique_share)", percent(limit)),
                    ),
                ],
                "",
            );
        }
        page.end_table();
    }

    fn timings(&self, page: &mut Page) {
        let s = &self.seconds;
        page.heading("Timings");
        page.table(&["phase", "seconds", ""]);
        let phases = [
            ("input", Some(s.input)),
            ("frequency set", s.frequency_set),
            ("search", s.search),
            ("suppression count", Some(s.suppression_count)),
            ("write", Some(s.write)),
            ("verify", Some(s.verify)),
            ("post-analytics", Some(s.post_analytics)),
            ("commit", Some(s.commit)),
            ("utility", s.utility),
            ("total", Some(s.total)),
        ];
        for (phase, seconds) in phases {
            if let Some(seconds) = seconds {
                page.row(phase, &[&format!("{seconds:.2}")], "");
            }
        }
        page.end_table();
    }
}

/// The metric by its name in the JSON report.
fn metric_name<S: serde::Serializer>(
    metric: &Option<Metric>,
    serializer: S,
) -> std::result::Result<S::Ok, S::Error> {
    match metric {
        Some(metric) => serializer.serialize_str(metric.name()),
        None => serializer.serialize_none(),
    }
}

/// The profile's label and description of what `measure` measures.
fn measure_label(measure: Measure) -> (String, &'static str) {
    let figure = match measure {
        Measure::DistinctL => f::L_DISTINCT,
        Measure::EntropyL => f::L_ENTROPY,
        Measure::RecursiveL { c } => {
            return (f::L_RECURSIVE.label_with(&[&c]), f::L_RECURSIVE.description);
        }
        Measure::EqualT => f::T_EQUAL,
        Measure::OrderedT => f::T_ORDERED,
        Measure::Alpha => f::ALPHA,
        Measure::Beta => f::BETA,
        Measure::EnhancedBeta => f::BETA_ENHANCED,
        Measure::Delta => f::DELTA,
        Measure::TupleDiversity => f::TUPLE_DIVERSITY,
        Measure::Persons => f::K_PERSONS,
    };
    (figure.label.to_string(), figure.description)
}

/// `part` as a share of `whole` (0 of nothing).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A threshold as the policy sets it, or `none`.
fn threshold(name: &str, limit: Option<f64>) -> String {
    limit.map_or_else(|| "none".to_string(), |l| format!("≤ {l} ({name})"))
}

/// A δ-presence bound, `inf` when no population row covers a class.
fn presence(delta: f64) -> String {
    if delta.is_finite() {
        ratio(delta)
    } else {
        "inf".to_string()
    }
}
