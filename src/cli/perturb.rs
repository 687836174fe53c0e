//! What `anon anonymize` prints for a perturbation policy's release.

use datafusion_anonymity_engine::publish::perturbed::PerturbedReport;

/// The release's one-line summary, its microaggregation, utility and risk figures.
pub fn print_summary(report: &PerturbedReport) {
    println!(
        "published {} of {} records to {} (perturbed: {}), verified",
        report.verification.rows,
        report.input_rows,
        report.output,
        report
            .attributes
            .iter()
            .map(|a| format!("{} {}", a.attribute, a.transformation))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("order: shuffled, seed: {}", report.seed);
    if let (Some(micro), Some(k)) = (&report.microaggregation, report.verification.k) {
        println!(
            "microaggregation ({}, {}): {} groups, k = {k} on the written file, IL = {:.2}",
            micro.algorithm, micro.aggregate, micro.groups, micro.information_loss
        );
    }
    if let Some(utility) = &report.utility {
        println!(
            "utility: IL {:.2}, IL1s {:.4}, largest correlation change {:.4}",
            utility.il, utility.il1s, utility.max_correlation_change
        );
    }
    if let Some(risk) = &report.risk {
        println!(
            "risk: DBRL {:.2} %, SDID (±{} %) {:.2} %",
            100.0 * risk.dbrl,
            risk.sdid_percent,
            100.0 * risk.sdid
        );
    }
}
