//! The HTML reports of perturbed and cloaked releases (`--html-report`): one self-contained
//! page each, in the style of the generalization's ([`super::report::Report::html`]) and built
//! from the same [`Page`], so every method gets the same outputs: the summary on stdout, the
//! JSON report, this page and a Delta `commitInfo`. The pages show what the JSON holds
//! (counts, shares, names, never a value of the data), and the seed only when the publisher
//! asked for it (`--record-seed`).

use crate::cloaking::unicity::UnicityFigures;
use crate::jobs::cloak::CloakingReport;
use crate::policy::ColumnUniqueness;
use crate::profile::render_html::Page;
use crate::publish::perturbed::PerturbedReport;
use crate::text::group_digits;
use crate::text::{percent, ratio};

/// The page of a perturbed release.
pub fn perturbation_page(report: &PerturbedReport, record_seed: bool) -> String {
    let mut page = Page::new(&format!("Release report: {}", report.output));
    page.meta("anon · perturbation");
    warnings(&mut page, &report.warnings);
    page.heading("Release");
    page.table(&["figure", "value", "meaning"]);
    page.row(
        "records published",
        &[&format!(
            "{} of {}",
            group_digits(report.verification.rows),
            group_digits(report.input_rows)
        )],
        "counted on the written files",
    );
    page.row(
        "suppressed",
        &[&group_digits(report.suppressed_rows)],
        "records with a NULL or NaN in a numeric perturbed attribute, not published",
    );
    for attribute in &report.attributes {
        let parameter = attribute
            .parameter
            .map(|p| format!(" ({})", ratio(p)))
            .unwrap_or_default();
        page.row(
            &attribute.attribute,
            &[&format!("{}{parameter}", attribute.transformation)],
            "its transformation (level, p or retention)",
        );
    }
    if !report.strata.is_empty() {
        page.row(
            "strata",
            &[&report.strata.join(", ")],
            "published as they are; microaggregation and the groups stay within each",
        );
    }
    row_order(&mut page, Some(report.seed), record_seed);
    page.end_table();
    if let Some(micro) = &report.microaggregation {
        page.heading("Microaggregation");
        page.table(&["figure", "value", "meaning"]);
        page.row(
            "algorithm",
            &[&format!("{}, {}", micro.algorithm, micro.aggregate)],
            "how the groups were built, and what each publishes",
        );
        page.row(
            "groups",
            &[&format!(
                "{} (the smallest of {})",
                group_digits(micro.groups as u64),
                group_digits(micro.smallest_group as u64)
            )],
            "groups of at least k records",
        );
        if let (Some(classes), Some(k)) = (report.verification.classes, report.verification.k) {
            page.row(
                "k on the written files",
                &[&format!("{k} ({} classes)", group_digits(classes))],
                "the fewest records sharing their published values (and strata)",
            );
        }
        page.row(
            "information loss",
            &[&format!("{:.2}", micro.information_loss)],
            "100 · SSE / SST of the standardized microaggregated attributes",
        );
        page.end_table();
        page.class_sizes(&report.group_sizes, report.verification.rows);
    }
    if let (Some(utility), Some(risk)) = (&report.utility, &report.risk) {
        page.heading("Utility and risk");
        page.table(&["figure", "value", "meaning"]);
        page.row("IL", &[&format!("{:.4}", utility.il)], "information loss");
        page.row(
            "IL1s",
            &[&format!("{:.4}", utility.il1s)],
            "mean absolute change over 2·√2 standard deviations",
        );
        page.row(
            "largest correlation change",
            &[&format!("{:.4}", utility.max_correlation_change)],
            "between two numeric perturbed attributes",
        );
        page.row(
            "DBRL",
            &[&percent(risk.dbrl)],
            "records whose nearest published record is their own",
        );
        page.row(
            "SDID",
            &[&percent(risk.sdid)],
            &format!(
                "records within ±{} % of their published values",
                risk.sdid_percent
            ),
        );
        page.end_table();
    }
    for pram in &report.pram {
        page.heading(&format!("PRAM: {}", pram.attribute));
        page.table(&["category", "published", "estimated original"]);
        for (i, category) in pram.categories.iter().enumerate() {
            let estimated = pram
                .estimated_counts
                .as_ref()
                .and_then(|e| e.get(i))
                .map_or_else(|| "-".to_string(), |e| format!("{e:.1}"));
            page.row(
                category,
                &[&group_digits(pram.published_counts[i])],
                &estimated,
            );
        }
        page.end_table();
        if !pram.associations.is_empty() {
            page.table(&["association with", "before → after", "measure"]);
            for a in &pram.associations {
                page.row(
                    &a.with,
                    &[&format!("{:.3} → {:.3}", a.before, a.after)],
                    a.measure,
                );
            }
            page.end_table();
        }
    }
    uniqueness(
        &mut page,
        &report.uniqueness,
        "with the microaggregated values and strata",
    );
    page.finish()
}

/// The page of a cloaked release.
pub fn cloaking_page(report: &CloakingReport, record_seed: bool) -> String {
    let mut page = Page::new(&format!("Release report: {}", report.publish.output));
    page.meta(&format!(
        "anon · cloaking ({}) · policy {} · input {}",
        report.cells, report.policy, report.input
    ));
    warnings(&mut page, &report.warnings);
    let f = &report.figures;
    let v = &report.publish.verification;
    page.heading("Release");
    page.table(&["figure", "value", "meaning"]);
    page.row(
        "events published",
        &[&format!(
            "{} of {} ({})",
            group_digits(f.published),
            group_digits(f.events),
            percent(f.share_published)
        )],
        "the rest could not be cloaked within the tolerances and were suppressed",
    );
    page.row(
        "labels",
        &[&group_digits(v.labels)],
        "distinct (box, window) labels on the written file",
    );
    page.row(
        "fewest subjects of a label",
        &[&format!("{} (k = {})", v.min_subjects, report.k)],
        "distinct subjects, counted on the written file",
    );
    page.row(
        "largest box side",
        &[&format!(
            "{:.0} m (at most {:.0} m)",
            v.max_cell_side_m, report.max_cell_side_m
        )],
        "the side of the square of the box's area",
    );
    page.row(
        "longest window",
        &[&format!(
            "{:.0} s (at most {:.0} s)",
            v.max_window_s, report.max_window_s
        )],
        "windows of the base window doubled",
    );
    let metres = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} m"));
    let seconds = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} s"));
    page.row(
        "box side, median / p90",
        &[&format!(
            "{} / {}",
            metres(f.median_cell_side_m),
            metres(f.p90_cell_side_m)
        )],
        "over the published events",
    );
    page.row(
        "window, median / p90",
        &[&format!(
            "{} / {}",
            seconds(f.median_window_s),
            seconds(f.p90_window_s)
        )],
        "over the published events",
    );
    page.row(
        "subject",
        &[report.subject],
        "dropped, or published as a per-release pseudonym",
    );
    row_order(&mut page, Some(report.seed), record_seed);
    page.end_table();
    // the labels' events by label size: "rows by class size"
    page.class_sizes(&report.label_sizes, f.published);
    suppressed(&mut page, report);
    page.heading("Unicity");
    page.paragraph(
        "The share of sampled subjects whose trace is the only one holding p of its points: \
         on the input (finest cell, base window) and on the release (labels, as if every event \
         kept its subject's pseudonym).",
    );
    page.table(&["points p", "input → release", "subjects sampled"]);
    unicity_rows(&mut page, &report.unicity_input, &report.unicity_release);
    page.end_table();
    uniqueness(&mut page, &report.publish.uniqueness, "with the labels");
    page.finish()
}

/// Where and when the suppressed events were, with the tolerances that decide it.
fn suppressed(page: &mut Page, report: &CloakingReport) {
    let total = report.suppressed;
    if total == 0 {
        return;
    }
    let s = &report.suppressed_where;
    page.heading("Suppressed events");
    page.paragraph(&format!(
        "{} events could not be cloaked: their root (a cell of at most {:.0} m, a window of \
         at most {:.0} s) held fewer than k = {} subjects. The table below says how many would \
         still be suppressed with a tolerance doubled.",
        group_digits(total),
        report.max_cell_side_m,
        report.max_window_s,
        report.k
    ));
    let hours: Vec<(String, f64, String)> = s
        .by_hour_utc
        .iter()
        .enumerate()
        .map(|(hour, &events)| {
            (
                format!("{hour:02}:00 UTC"),
                events as f64 / total as f64,
                group_digits(events),
            )
        })
        .collect();
    page.table(&["tolerances", "still suppressed", "share of the events"]);
    for hint in &s.if_doubled {
        page.row(
            &format!(
                "{} doubled: {:.0} m, {:.0} s",
                hint.doubled, hint.max_cell_side_m, hint.max_window_s
            ),
            &[&group_digits(hint.suppressed)],
            &percent(hint.suppressed as f64 / report.events.max(1) as f64),
        );
    }
    page.end_table();
    page.bars("Suppressed events by hour", &hours);
    page.table(&["root cell (quadkey)", "suppressed events", "share"]);
    for area in &s.by_area {
        page.row(
            &area.cell,
            &[&group_digits(area.events)],
            &percent(area.events as f64 / total as f64),
        );
    }
    page.end_table();
}

fn warnings(page: &mut Page, warnings: &[String]) {
    for warning in warnings {
        page.warning(&format!("warning: {warning}"));
    }
}

fn row_order(page: &mut Page, seed: Option<u64>, record_seed: bool) {
    match seed {
        Some(seed) if record_seed => page.row(
            "row order",
            &[&format!("shuffled, seed {seed}")],
            "the rows written in a random order from this seed: keep it as secret as the data",
        ),
        _ => page.row(
            "row order",
            &["shuffled"],
            "the rows written in a random order; the seed is not recorded here (it is as \
             secret as the data)",
        ),
    }
}

fn unicity_rows(page: &mut Page, input: &UnicityFigures, release: &UnicityFigures) {
    for (p, (before, after)) in input.unique.iter().zip(&release.unique).enumerate() {
        page.row(
            &(p + 1).to_string(),
            &[&format!("{} → {}", percent(*before), percent(*after))],
            &group_digits(release.subjects_sampled),
        );
    }
}

fn uniqueness(page: &mut Page, columns: &[ColumnUniqueness], keys: &str) {
    if columns.is_empty() {
        return;
    }
    page.heading("Uniqueness");
    page.paragraph(&format!(
        "Each published column, {keys}: the share of the published rows it makes unique \
         (above 5 % it is warned about; [privacy] max_unique_share refuses such a release)."
    ));
    page.table(&["column", "unique rows", "leakage with the keys"]);
    for c in columns {
        page.row(
            &c.attribute,
            &[&format!(
                "{} ({})",
                percent(c.unique_share),
                group_digits(c.unique_rows)
            )],
            &format!("{:.4}", c.leakage_with_quasi_identifiers),
        );
    }
    page.end_table();
}
