//! Full-domain generalization search: choose one hierarchy level per quasi-identifier so that
//! the recoded table meets the privacy requirements with the least information loss.
//!
//! 1. [`FrequencySet::build`] reads the table once (`GROUP BY` every QI and sensitive
//!    attribute) and integer-encodes it ([`frequency`]).
//! 2. [`search`] walks the [`Lattice`] of level vectors. Each node is evaluated in memory by
//!    rolling up the frequency set or a finer node's classes ([`evaluate`]); classes that fail
//!    a requirement are suppressed, within the policy's suppression limit.
//!    - [`Algorithm::Optimal`] ([`optimal`]): the satisfying node with the smallest
//!      [`Metric`], exactly, with bound-based pruning and monotonicity tagging.
//!    - [`Algorithm::IabFullDomain`] ([`iab`]): the IAB best-first heuristic (most distinct
//!      tuples) over whole-column levels.
//! 3. [`failing_classes`] labels the chosen node's failing classes for publishing
//!    ([`failing`]), so the input need not be aggregated again to suppress them.
//! 4. Local recoding ([`local`]: Mondrian, KACA, sibling-scoped IAB) works on the same
//!    frequency set but publishes a label tuple per class instead of one level per QI.
//!
//! ```no_run
//! # async fn demo() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use datafusion::prelude::*;
//! use datafusion_anonymity::generalize::Hierarchy;
//! use datafusion_anonymity_engine::policy::PrivacyRequirements;
//! use datafusion_anonymity_engine::search::{search, Algorithm, FrequencySet, Metric};
//! let ctx = SessionContext::new();
//! ctx.register_parquet("adult", "examples/adult/adult.parquet", ParquetReadOptions::default()).await?;
//! let education = Arc::new(Hierarchy::tree_from_csv_file(
//!     "education", "examples/adult/hierarchies/adult_hierarchy_education.csv")?);
//! let freq = FrequencySet::build(&ctx, "adult", &[("education".into(), education)], &[]).await?;
//! let requirements = PrivacyRequirements { suppression: Default::default(), population: None, k: 5, max_suppression: 0.02, sensitive: vec![] };
//! let outcome = search(&freq, &requirements, Algorithm::Optimal, Metric::Loss, &mut |_, _| {})?;
//! let solution = outcome.into_solution()?;
//! println!("{:?} with Loss {}", solution.levels, solution.evaluation.loss);
//! # Ok(()) }
//! ```

mod codes;
pub mod domain;
pub mod evaluate;
pub mod failing;
pub mod frequency;
mod group;
pub mod iab;
pub mod lattice;
pub mod local;
pub mod optimal;
mod packed;
pub(crate) mod persons;
pub mod population;
mod publication;
pub mod release;

#[cfg(test)]
mod persons_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use datafusion::error::{DataFusionError, Result};

pub use evaluate::{NodeEvaluation, SensitiveAchieved};
pub use failing::{FailingClasses, failing_classes};
pub use frequency::{
    FrequencyRow, FrequencySet, QiCodes, QiDomain, SensitiveCodes, SensitiveDomain,
};
pub use lattice::Lattice;

use crate::policy::PrivacyRequirements;
use evaluate::{Evaluator, NodeStats};

/// Which search to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// The exact optimum of the metric over all satisfying nodes ([`optimal`]).
    #[default]
    Optimal,
    /// The IAB best-first heuristic over whole-column levels ([`iab`]); the metric is only
    /// reported. The faithful, sibling-scoped IAB is [`local::iab`].
    IabFullDomain,
}

impl Algorithm {
    /// `optimal` or `iab-full-domain`.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Optimal => "optimal",
            Algorithm::IabFullDomain => "iab-full-domain",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Algorithm {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "optimal" => Ok(Algorithm::Optimal),
            "iab-full-domain" => Ok(Algorithm::IabFullDomain),
            other => Err(DataFusionError::Plan(format!(
                "unknown search algorithm '{other}': expected optimal or iab-full-domain"
            ))),
        }
    }
}

/// What the optimal search minimizes (see [`evaluate`] for the definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Metric {
    /// Loss (hierarchy NCP, docs/definitions.md): the default.
    #[default]
    Loss,
    /// Discernibility: Σ |E|² + n · suppressed rows.
    Discernibility,
    /// Height-based precision loss: mean of level/top over rows × QIs.
    Precision,
    /// The number of kept classes, maximized.
    Classes,
}

impl Metric {
    /// `loss`, `discernibility`, `precision` or `classes`.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Loss => "loss",
            Metric::Discernibility => "discernibility",
            Metric::Precision => "precision",
            Metric::Classes => "classes",
        }
    }

    /// `value` of this metric as reports print it: the counts (discernibility, classes) as
    /// whole numbers grouped by thousands, the shares with four decimals.
    pub fn display(self, value: f64) -> String {
        match self {
            Metric::Discernibility | Metric::Classes => crate::text::whole_number(value),
            Metric::Loss | Metric::Precision => format!("{value:.4}"),
        }
    }

    /// The metric's value for an evaluated node.
    pub fn value(self, evaluation: &NodeEvaluation) -> f64 {
        match self {
            Metric::Loss => evaluation.loss,
            Metric::Discernibility => evaluation.discernibility,
            Metric::Precision => evaluation.precision,
            Metric::Classes => evaluation.classes as f64,
        }
    }

    /// What the search minimizes (Classes is maximized, so its cost is negated).
    pub(crate) fn cost(self, stats: &NodeStats) -> f64 {
        match self {
            Metric::Loss => stats.loss,
            Metric::Discernibility => stats.discernibility,
            Metric::Precision => stats.precision,
            Metric::Classes => -(stats.kept_classes as f64),
        }
    }

    /// Costs closer than this are a tie: rounding of the fractional metrics.
    pub(crate) fn tolerance(self) -> f64 {
        match self {
            Metric::Loss | Metric::Precision => 1e-12,
            Metric::Discernibility | Metric::Classes => 0.0,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = DataFusionError;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "loss" => Ok(Metric::Loss),
            "discernibility" => Ok(Metric::Discernibility),
            "precision" => Ok(Metric::Precision),
            "classes" => Ok(Metric::Classes),
            other => Err(DataFusionError::Plan(format!(
                "unknown metric '{other}': expected loss, discernibility, precision or classes"
            ))),
        }
    }
}

/// The node a search chose.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The QI names, in the frequency set's order.
    pub qis: Vec<String>,
    /// The chosen level of each QI.
    pub levels: Vec<usize>,
    /// The value of the search's metric.
    pub metric_value: f64,
    /// Everything about the chosen node: k, l and t achieved, suppression, all metrics.
    pub evaluation: NodeEvaluation,
}

/// The result of [`search`].
#[derive(Debug, Clone, PartialEq)]
pub struct SearchOutcome {
    pub algorithm: Algorithm,
    pub metric: Metric,
    /// The chosen node; `None` when no node satisfies the requirements.
    pub solution: Option<Solution>,
    /// Why there is no solution (one line, counts only), when there is none.
    pub failure: Option<String>,
    /// Nodes evaluated (rolled up), a measure of the search's work.
    pub nodes_checked: usize,
    /// Nodes in the lattice.
    pub lattice_size: usize,
    /// Time of the search (the frequency set's build excluded).
    pub elapsed: Duration,
}

impl SearchOutcome {
    /// The solution, or an error saying that no node satisfies the requirements.
    pub fn into_solution(self) -> Result<Solution> {
        match self.solution {
            Some(s) => Ok(s),
            None => Err(DataFusionError::Execution(self.failure.unwrap_or_else(
                || "no generalization satisfies the privacy requirements".to_string(),
            ))),
        }
    }
}

/// Searches the lattice of `freq`'s hierarchies for a node meeting `requirements`.
/// `progress(nodes evaluated, lattice size)` is called after each evaluation.
///
/// Errors: invalid requirements (k = 0, rates outside [0, 1], an l below 1, a recursive l
/// without a positive c, an attribute missing from the frequency set, ordered t on an
/// unordered attribute) or a lattice too large. No satisfying node is not an error: the
/// outcome's `solution` is `None` (see [`SearchOutcome::into_solution`]).
pub fn search(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    algorithm: Algorithm,
    metric: Metric,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<SearchOutcome> {
    let start = Instant::now();
    let mut ev = Evaluator::new(freq, requirements)?;
    let found = match algorithm {
        Algorithm::Optimal => {
            optimal::optimal(&mut ev, metric, progress).map(|best| (best.node, best.stats))
        }
        Algorithm::IabFullDomain => iab::iab(&mut ev, progress),
    };
    crate::interrupt::check()?;
    let nodes_checked = ev.evaluated;
    let (solution, failure) = match found {
        Some((node, stats)) => {
            let evaluation = ev.to_evaluation(node, &stats);
            let solution = Solution {
                qis: freq.qi_names(),
                levels: evaluation.levels.clone(),
                metric_value: metric.value(&evaluation),
                evaluation,
            };
            (Some(solution), None)
        }
        None => {
            let top = ev.describe(ev.lattice.top());
            let message = if top.rows == 0 {
                "no generalization satisfies the privacy requirements: the table has no rows"
                    .to_string()
            } else {
                let mut message = format!(
                    "no generalization of the {} quasi-identifiers satisfies the privacy \
                 requirements (k = {}, at most {} of {} rows suppressed): even with every \
                 quasi-identifier at its top level, {} rows fail",
                    freq.qis().len(),
                    requirements.k,
                    top.max_suppressed_rows,
                    top.rows,
                    top.suppressed_rows
                );
                if let (Some(_), Some(population)) = (&requirements.population, freq.population()) {
                    // at the top the whole table is (about) one class: say what it achieves
                    message.push_str(&format!(
                        " (there the table is one class, NULLs apart: {} rows against {} population rows, \
                         δ = {:.4})",
                        top.rows,
                        population.rows(),
                        crate::policy::requirements::presence(top.rows, population.rows())
                    ));
                }
                message
            };
            (None, Some(message))
        }
    };
    Ok(SearchOutcome {
        algorithm,
        metric,
        solution,
        failure,
        nodes_checked,
        lattice_size: ev.lattice.size(),
        elapsed: start.elapsed(),
    })
}

/// Any algorithm of `anon anonymize`: a full-domain search or a local recoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// One level per QI ([`search`]).
    FullDomain(Algorithm),
    /// A label tuple per class ([`local::anonymize`]).
    Local(local::LocalAlgorithm),
}

impl FromStr for Method {
    type Err = DataFusionError;

    /// `optimal`, `iab-full-domain`, `mondrian`, `kaca` or `iab`: the one reading of an
    /// algorithm's name, for every shell.
    fn from_str(s: &str) -> Result<Self> {
        if let Ok(algorithm) = s.parse::<Algorithm>() {
            return Ok(Method::FullDomain(algorithm));
        }
        if let Ok(algorithm) = s.parse::<local::LocalAlgorithm>() {
            return Ok(Method::Local(algorithm));
        }
        Err(DataFusionError::Plan(format!(
            "unknown algorithm '{s}': expected optimal, iab-full-domain, mondrian, kaca or iab"
        )))
    }
}

impl Method {
    /// `optimal`, `iab-full-domain`, `mondrian`, `kaca` or `iab`.
    pub fn name(self) -> &'static str {
        match self {
            Method::FullDomain(a) => a.name(),
            Method::Local(a) => a.name(),
        }
    }

    /// The metric the method minimizes and reports when `requested`: the full-domain searches
    /// take any; local recoding minimizes Loss and refuses another metric.
    pub fn metric(self, requested: Metric) -> Result<Metric> {
        match self {
            Method::FullDomain(_) => Ok(requested),
            Method::Local(_) if requested == Metric::Loss => Ok(Metric::Loss),
            Method::Local(_) => Err(DataFusionError::Plan(format!(
                "the metric {} applies to the full-domain searches (optimal, \
                 iab-full-domain); local recoding minimizes loss",
                requested.name()
            ))),
        }
    }
}

/// What [`decide`] chose: the release to publish, its failing classes (so publishing need not
/// aggregate the input again), and its figures.
#[derive(Debug, Clone)]
pub struct Decision {
    pub method: Method,
    /// The metric minimized and reported ([`Method::metric`]).
    pub metric: Metric,
    pub release: crate::search::release::Release,
    pub failing: FailingClasses,
    /// The metric's value (Loss for local recoding).
    pub metric_value: f64,
    /// Full-domain searches: nodes in the lattice and nodes evaluated.
    pub lattice_size: Option<usize>,
    pub nodes_checked: Option<usize>,
    /// Local recoding: the classes built.
    pub local_classes: Option<usize>,
    /// Rows the decision suppresses.
    pub suppressed_rows: u64,
}

impl Decision {
    /// One line for a person: the levels or the classes, the metric, the suppressed rows.
    pub fn summary(&self, freq: &FrequencySet) -> String {
        let what = match &self.release {
            crate::search::release::Release::FullDomain(levels) => {
                let levels: Vec<String> = freq
                    .qi_names()
                    .iter()
                    .zip(levels)
                    .map(|(q, l)| format!("{q}={l}"))
                    .collect();
                format!("levels {}", levels.join(", "))
            }
            crate::search::release::Release::Local(local) => format!("{} classes", local.classes()),
        };
        format!(
            "{}: {what}, {} {:.4}, {} rows suppressed",
            self.method.name(),
            self.metric.name(),
            self.metric_value,
            self.suppressed_rows
        )
    }
}

/// Runs `method` on `freq` and prepares its release for publishing. `metric` is what the
/// full-domain searches minimize ([`Method::metric`]);
/// `options` are the local algorithms'. `progress` is told (nodes checked, lattice size) by
/// the full-domain searches and (done, total) by the local algorithms
/// ([`local::anonymize_with_progress`]). No release meeting the requirements is an error (one
/// line, counts only).
pub fn decide(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    method: Method,
    metric: Metric,
    options: local::LocalOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Decision> {
    let metric = method.metric(metric)?;
    match method {
        Method::FullDomain(algorithm) => {
            let outcome = search(freq, requirements, algorithm, metric, progress)?;
            let (nodes_checked, lattice_size) = (outcome.nodes_checked, outcome.lattice_size);
            if outcome.solution.is_none()
                && let Some(decision) = all_star_decision(freq, requirements, method, metric)?
            {
                return Ok(Decision {
                    lattice_size: Some(lattice_size),
                    nodes_checked: Some(nodes_checked),
                    ..decision
                });
            }
            let solution = outcome.into_solution()?;
            let failing = failing_classes(freq, requirements, &solution.levels)?;
            Ok(Decision {
                method,
                metric,
                suppressed_rows: solution.evaluation.suppressed_rows,
                release: crate::search::release::Release::FullDomain(solution.levels),
                failing,
                metric_value: solution.metric_value,
                lattice_size: Some(lattice_size),
                nodes_checked: Some(nodes_checked),
                local_classes: None,
            })
        }
        Method::Local(algorithm) => {
            let (release, evaluation) =
                local::anonymize_with_progress(freq, requirements, algorithm, options, progress)?;
            let recoding = crate::search::release::LocalRecoding::new(freq, &release)?;
            Ok(Decision {
                method,
                metric,
                failing: FailingClasses::none(
                    freq.qi_names(),
                    recoding.suppressed_rows(),
                    freq.rows(),
                ),
                suppressed_rows: evaluation.suppressed_rows,
                release: crate::search::release::Release::Local(std::sync::Arc::new(recoding)),
                metric_value: evaluation.loss,
                lattice_size: None,
                nodes_checked: None,
                local_classes: Some(release.classes()),
            })
        }
    }
}

/// When no node satisfies: the release of every row as `*` for every quasi-identifier, if it
/// meets the requirements. A full-domain node keeps NULL apart at every level, so with NULL
/// quasi-identifiers the top node is not that release; published as one local class.
fn all_star_decision(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    method: Method,
    metric: Metric,
) -> Result<Option<Decision>> {
    let (release, evaluation) = local::settled(freq, requirements, local::all_star_release(freq))?;
    if !evaluation.satisfies {
        return Ok(None);
    }
    let recoding = crate::search::release::LocalRecoding::new(freq, &release)?;
    Ok(Some(Decision {
        method,
        metric,
        failing: FailingClasses::none(freq.qi_names(), recoding.suppressed_rows(), freq.rows()),
        suppressed_rows: evaluation.suppressed_rows,
        release: crate::search::release::Release::Local(std::sync::Arc::new(recoding)),
        metric_value: match metric {
            Metric::Loss => evaluation.loss,
            Metric::Discernibility => evaluation.discernibility,
            // every cell at its top
            Metric::Precision => 1.0,
            Metric::Classes => evaluation.classes as f64,
        },
        lattice_size: None,
        nodes_checked: None,
        local_classes: Some(release.classes()),
    }))
}

/// Evaluates one node (`levels`, one per QI) against `requirements`, e.g. levels chosen by
/// hand.
pub fn evaluate_levels(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    levels: &[usize],
) -> Result<NodeEvaluation> {
    let mut ev = Evaluator::new(freq, requirements)?;
    ev.lattice.check(levels)?;
    let node = ev.lattice.index(levels);
    Ok(ev.describe(node))
}
