//! Verifying k-map and δ-presence on the written output: F_E of every written class, counted
//! from the population table by the release's labels, and the bounds checked on the written
//! classes' sizes.
//!
//! F_E is counted apart from the search's level-code alignment
//! ([`crate::search::population`]), so that the two cross-check each other:
//! - **full-domain**: the population is recoded at the release's levels with the registered
//!   hierarchies (`SELECT generalize(qi, 'qi', level)…, count(*) FROM population GROUP BY …`,
//!   [`Policy::population_counts_plan`], the plan the generalized table joins with too) and a
//!   written class's F_E is the count of its label tuple;
//! - **local**: labels overlap, so a label tuple is not a function of the raw values; each
//!   class's F_E is counted over its cells when the release is built
//!   ([`crate::search::release::LocalRecoding::population_covered`]) and looked up by its labels.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use super::classes::ClassCounter;
use crate::generalize::TOP_LABEL;
use crate::policy::{Policy, PopulationAchieved, PopulationRequirement, SuppressionMode};
use crate::search::release::Release;

/// The population's rows per label tuple of `release` (of `width` quasi-identifiers), and
/// the population's rows.
pub(super) async fn population_by_label(
    ctx: &SessionContext,
    policy: &Policy,
    population_table: &str,
    release: &Release,
    width: usize,
) -> Result<(ClassCounter, u64)> {
    let mut counter = ClassCounter::new(width);
    match release {
        Release::FullDomain(levels) => {
            let plan = policy
                .population_counts_plan(ctx, levels)
                .await?
                .ok_or_else(|| {
                    DataFusionError::Internal("the policy has no population".to_string())
                })?;
            let batches = ctx.execute_logical_plan(plan).await?.collect().await?;
            let mut total = 0;
            for batch in &batches {
                let columns = batch.columns()[..width]
                    .iter()
                    .map(|c| cast(c, &DataType::Utf8))
                    .collect::<std::result::Result<Vec<_>, _>>()?;
                let counts = batch.column(width).as_primitive::<Int64Type>();
                let mut labels: Vec<Option<&[u8]>> = Vec::with_capacity(width);
                for row in 0..batch.num_rows() {
                    labels.clear();
                    labels.extend(columns.iter().map(|c| {
                        let c = c.as_string::<i32>();
                        c.is_valid(row).then(|| c.value(row).as_bytes())
                    }));
                    let rows = counts.value(row).max(0) as u64;
                    let class = counter.intern(&labels);
                    counter.add_rows(class, rows);
                    total += rows;
                }
            }
            Ok((counter, total))
        }
        Release::Local(local) => {
            let covered = local.population_covered().ok_or_else(|| {
                DataFusionError::Internal(
                    "the local release was built without the population's counts".to_string(),
                )
            })?;
            let columns = local
                .class_labels()
                .iter()
                .map(|c| cast(c, &DataType::Utf8))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let mut labels: Vec<Option<&[u8]>> = Vec::with_capacity(width);
            for (class, &f) in covered.iter().enumerate() {
                labels.clear();
                labels.extend(columns.iter().map(|c| {
                    let c = c.as_string::<i32>();
                    c.is_valid(class).then(|| c.value(class).as_bytes())
                }));
                let id = counter.intern(&labels);
                // classes with equal labels have equal cells, so equal counts: count once
                if counter.size(id) == 0 {
                    counter.add_rows(id, f);
                }
            }
            let total = ctx.table(population_table).await?.count().await? as u64;
            Ok((counter, total))
        }
    }
}

/// The population figures of the written classes `written`, and why they fail
/// `requirement`, if any (empty when they pass). The masked rows' all-`*` class is left out in mask
/// mode, as the verification leaves it out of k.
pub(super) fn verify_population(
    written: &ClassCounter,
    by_label: &ClassCounter,
    population_rows: u64,
    requirement: Option<&PopulationRequirement>,
    suppression: SuppressionMode,
) -> (PopulationAchieved, Vec<String>) {
    let mut achieved = PopulationAchieved {
        population_rows,
        k_map: None,
        delta_presence: None,
        expected_matches: 0.0,
    };
    let mut failing = 0u64;
    for class in 0..written.classes() as u32 {
        let size = written.size(class);
        let is_top = written
            .labels(class)
            .all(|label| label == Some(TOP_LABEL.as_bytes()));
        if size == 0 || (suppression == SuppressionMode::Mask && is_top) {
            continue;
        }
        let covered = by_label
            .find(written, class)
            .map_or(0, |c| by_label.size(c));
        achieved.add_class(size, covered);
        if requirement.is_some_and(|r| !r.passes(size, covered)) {
            failing += 1;
        }
    }
    let mut failures = Vec::new();
    if let Some(requirement) = requirement.filter(|_| failing > 0) {
        let mut what = Vec::new();
        if let (Some(k), Some(found)) = (requirement.k_map, achieved.k_map) {
            what.push(format!("k-map {found} where {k} is required"));
        }
        if let (Some(bounds), Some((lo, hi))) =
            (requirement.delta_presence, achieved.delta_presence)
        {
            what.push(format!(
                "δ-presence in [{lo:.4}, {hi:.4}] where [{}, {}] is required",
                bounds.min, bounds.max
            ));
        }
        failures.push(format!(
            "{failing} class(es) of the output fail the population requirements ({})",
            what.join(", ")
        ));
    }
    (achieved, failures)
}
