//! A perturbation policy (`[privacy] method = "perturbation"`) published: the input registered,
//! the release computed and published ([`crate::publish::perturbed`]). `anon anonymize` and
//! `anon apply` run this for such a policy (there is no search: the policy fixes every
//! transformation), and so does Python's `anonymize()`.
//!
//! The seed decides the noise, the swaps, PRAM's draws, the permutations and the row order; it
//! is as secret as the data (with it, the noise can be subtracted), so, as for every method,
//! a written report holds it only with `--record-seed` (stdout prints it, Python returns it).
//! Give `--seed` to reproduce a release byte for byte.

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use super::Observer;
use super::output::{PlannedOutput, perturbation_info};
use crate::policy::Policy;
use crate::publish::perturbed::{PerturbedReport, publish_perturbed};

/// Publishes the perturbation `policy` describes to `planned` with `seed`; `command`
/// (`anonymize`, `apply`) is what a Delta commit records.
pub async fn perturb(
    ctx: &SessionContext,
    command: &str,
    mut policy: Policy,
    planned: &PlannedOutput,
    seed: u64,
    observer: &dyn Observer,
) -> Result<PerturbedReport> {
    let perturbation = policy.perturbation().cloned().ok_or_else(|| {
        DataFusionError::Internal(format!(
            "policy {} has no perturbation to publish",
            policy.source()
        ))
    })?;
    let output = planned.output(|| perturbation_info(command, &policy, &perturbation));
    policy.register_with(ctx, false).await?;
    let report = publish_perturbed(ctx, &policy, &perturbation, &output, seed).await?;
    for warning in &report.warnings {
        observer.note(&format!("warning: {warning}"));
    }
    if let Some(micro) = &report.microaggregation {
        observer.note(&format!(
            "microaggregation ({}, k = {}): {} groups, the smallest of {}, IL {:.2} ({:.2} s)",
            micro.algorithm,
            micro.k,
            micro.groups,
            micro.smallest_group,
            micro.information_loss,
            report.seconds.compute
        ));
    }
    if report.suppressed_rows > 0 {
        observer.note(&format!(
            "{} records with a NULL or NaN in a numeric perturbed attribute were suppressed",
            report.suppressed_rows
        ));
    }
    Ok(report)
}
