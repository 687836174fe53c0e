//! The report as aligned text for a terminal: one figure per line, each with a one-line
//! explanation.

use std::fmt::Write;

use crate::text::{group_digits, percent, ratio, whole_number};

use super::attacks::attack_figures;
use super::figures::{self as f, Figure};
use super::{FingerprintAttack, Profile, Relink, SensitiveFigures, Utility};

fn optional(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_string(), ratio)
}

struct Out(String);

impl Out {
    fn heading(&mut self, title: &str) {
        let _ = writeln!(self.0, "\n{title}");
    }

    /// A figure's line with its label and description from [`super::figures`].
    fn figure(&mut self, figure: Figure, value: impl AsRef<str>) {
        self.line(figure.label, value, figure.description);
    }

    fn line(&mut self, label: &str, value: impl AsRef<str>, explanation: &str) {
        let _ = writeln!(
            self.0,
            "  {label:<32} {:>14}  {explanation}",
            value.as_ref()
        );
    }
}

/// The report as text.
pub fn render(profile: &Profile) -> String {
    let mut out = Out(String::new());
    let n = profile.rows;
    let _ = writeln!(
        out.0,
        "Privacy profile of {} ({} rows)",
        profile.input,
        group_digits(n)
    );
    let _ = writeln!(
        out.0,
        "quasi-identifiers: {}",
        profile.quasi_identifiers.join(", ")
    );
    if !profile.sensitive_attributes.is_empty() {
        let _ = writeln!(
            out.0,
            "sensitive attributes: {}",
            profile.sensitive_attributes.join(", ")
        );
    }
    if let Some(person) = &profile.person_id {
        let _ = writeln!(out.0, "person id: {person}");
    }

    let a = &profile.anonymity;
    out.heading("ANONYMITY");
    out.figure(f::K, group_digits(a.k));
    if let Some(k) = a.k_persons {
        out.figure(f::K_PERSONS, group_digits(k));
    }
    out.figure(f::CLASSES, group_digits(a.classes));
    out.line(
        f::SAMPLE_UNIQUES.label,
        group_digits(a.sample_uniques),
        &format!(
            "{} ({} of all rows)",
            f::SAMPLE_UNIQUES.description,
            percent(a.sample_uniques as f64 / n as f64)
        ),
    );
    let _ = writeln!(
        out.0,
        "  {:<32} {:>14}  {:>14}  {}",
        "class size",
        "classes",
        "rows",
        f::ROWS_SIZE.description
    );
    for bucket in &a.class_sizes {
        let _ = writeln!(
            out.0,
            "    {:<30} {:>14}  {:>14}  {}",
            bucket.size,
            group_digits(bucket.classes),
            group_digits(bucket.rows),
            percent(bucket.rows as f64 / n as f64)
        );
    }
    for s in &a.sensitive {
        sensitive(&mut out, s, n);
    }

    let r = &profile.risk;
    out.heading("RISK (re-identification of a record)");
    out.figure(f::PROSECUTOR_RISK_MAX, ratio(r.prosecutor_max));
    out.figure(f::PROSECUTOR_RISK_AVERAGE, ratio(r.prosecutor_average));
    out.figure(f::MARKETER_RISK, ratio(r.marketer));
    // the text shows the share instead of the thresholds' description
    for t in &r.thresholds {
        out.line(
            &f::RISK_OVER.label_with(&[&t.threshold]),
            group_digits(t.rows),
            &format!("{} of all records", percent(t.share)),
        );
    }
    if let Some(p) = &r.population {
        let _ = writeln!(
            out.0,
            "  against population {} ({} rows):",
            p.population,
            group_digits(p.rows)
        );
        out.figure(f::K_MAP, group_digits(p.k_map));
        out.figure(f::JOURNALIST_RISK, ratio(p.journalist));
        out.figure(f::POPULATION_MARKETER_RISK, ratio(p.marketer));
        if p.classes_not_covered > 0 {
            out.line(
                f::CLASSES_NOT_COVERED.label,
                group_digits(p.classes_not_covered),
                &format!("WARNING: {}", f::CLASSES_NOT_COVERED.description),
            );
        }
        for t in &p.thresholds {
            out.line(
                &f::JOURNALIST_RISK_OVER.label_with(&[&t.threshold]),
                group_digits(t.rows),
                &format!("{} of all records", percent(t.share)),
            );
        }
    }

    out.heading(&format!(
        "{} ({})",
        f::LEAKAGE.label.to_uppercase(),
        f::LEAKAGE.description
    ));
    let _ = writeln!(
        out.0,
        "  an attribute near 1 almost singles out rows by itself; treat high ones as quasi-identifiers"
    );
    for l in &profile.leakage.attributes {
        let bar = "#".repeat((l.leakage * 30.0).round() as usize);
        let _ = writeln!(
            out.0,
            "  {:<32} {:>14}  {:<30} {} values{}",
            l.attribute,
            ratio(l.leakage),
            bar,
            group_digits(l.distinct_values),
            if l.quasi_identifier { ", QI" } else { "" }
        );
    }
    out.figure(
        f::LEAKAGE_QUASI_IDENTIFIERS,
        ratio(profile.leakage.quasi_identifiers),
    );

    if let Some(u) = &profile.utility {
        utility(&mut out, u);
    }

    if let Some(r) = &profile.relink {
        relink(&mut out, r);
    }

    if let Some(attack) = &profile.fingerprint_attack {
        fingerprint(&mut out, attack);
    }

    if let Some(classes) = &profile.risky_classes {
        out.heading("RISKIEST CLASSES (quasi-identifier values shown on request)");
        let _ = writeln!(
            out.0,
            "  {:>8}  {}",
            "rows",
            profile.quasi_identifiers.join(" | ")
        );
        for class in classes {
            let values: Vec<&str> = class
                .values
                .iter()
                .map(|v| v.as_deref().unwrap_or("NULL"))
                .collect();
            let _ = writeln!(out.0, "  {:>8}  {}", class.rows, values.join(" | "));
        }
    }
    out.0
}

fn relink(out: &mut Out, r: &Relink) {
    out.heading(&format!(
        "RELINK BY POSITION (against {}, {} rows; compared: {})",
        r.other,
        group_digits(r.other_rows),
        r.columns.join(", ")
    ));
    out.line(
        f::RELINKED.label,
        group_digits(r.relinked),
        &format!(
            "{} of {} positions; {}",
            percent(r.share),
            group_digits(r.positions),
            f::RELINKED.description
        ),
    );
    out.figure(f::RELINK_CHANCE, whole_number(r.expected_by_chance));
}

fn fingerprint(out: &mut Out, attack: &FingerprintAttack) {
    let r = &attack.report;
    out.heading(&format!(
        "FINGERPRINT-CORRELATION ATTACK on {} (linking attribute {})",
        attack.sensitive_table, r.linking_attribute
    ));
    out.figure(
        f::LINKED_ATTRIBUTES,
        if r.linked_attributes.is_empty() {
            "none".to_string()
        } else {
            r.linked_attributes.join(", ")
        },
    );
    out.figure(f::PARTIALLY_PINNED, group_digits(r.partially_pinned));
    out.figure(f::FULLY_PINNED, group_digits(r.fully_pinned));
    for (attribute, pinned) in &r.pinned_per_attribute {
        out.line(
            &f::PINNED_ON.label_with(&[attribute]),
            group_digits(*pinned),
            f::PINNED_ON.description,
        );
    }
}

fn sensitive(out: &mut Out, s: &SensitiveFigures, n: u64) {
    let _ = writeln!(
        out.0,
        "  sensitive attribute {} ({} distinct values)",
        s.attribute,
        group_digits(s.distinct_values)
    );
    out.figure(f::L_DISTINCT, group_digits(s.l_distinct));
    out.figure(f::L_ENTROPY, ratio(s.l_entropy));
    out.line(
        &f::L_RECURSIVE.label_with(&[&s.recursive_c]),
        group_digits(s.l_recursive),
        f::L_RECURSIVE.description,
    );
    out.figure(f::T_EQUAL, ratio(s.t_equal));
    if let Some(t) = s.t_ordered {
        out.figure(f::T_ORDERED, ratio(t));
    }
    out.figure(f::ALPHA, ratio(s.alpha));
    out.figure(f::BETA, ratio(s.beta));
    out.line(
        f::BETA_ENHANCED.label,
        optional(s.beta_enhanced),
        &if s.beta_enhanced.is_some() {
            f::BETA_ENHANCED.description.to_string()
        } else {
            format!(
                "none: {} classes exceed the -ln p cap for frequent values",
                group_digits(s.beta_enhanced_classes_over_cap)
            )
        },
    );
    out.line(
        f::DELTA.label,
        ratio(s.delta),
        &format!(
            "{}; infinite over all values in {} classes",
            f::DELTA.description,
            group_digits(s.delta_classes_missing_values)
        ),
    );
    if let Some(t) = s.tuple_diversity {
        out.figure(f::TUPLE_DIVERSITY, ratio(t));
    }
    for figure in attack_figures(s.background_knowledge.len(), Some(s)) {
        out.line(
            &figure.label,
            group_digits(figure.rows.unwrap_or(0)),
            &figure.explanation(n),
        );
    }
}

fn utility(out: &mut Out, u: &Utility) {
    out.heading(&format!(
        "UTILITY (against {}, rows matched by {})",
        u.original, u.matched_by
    ));
    out.figure(f::SUPPRESSED_ROWS, group_digits(u.suppressed_rows));
    out.figure(f::NCP, ratio(u.ncp));
    out.figure(f::LOSS, ratio(u.loss_metric));
    out.figure(f::DISCERNIBILITY, whole_number(u.discernibility));
    out.figure(f::AECS, optional(u.aecs));
    if let Some(cm) = u.classification_metric {
        out.figure(f::CLASSIFICATION_METRIC, ratio(cm));
    }
    out.figure(f::MODIFICATION_RATE, ratio(u.modification_rate));
    if let (Some(uniform), Some(beta1)) = (u.whd_uniform, u.whd_beta1) {
        out.figure(f::WHD_UNIFORM, ratio(uniform));
        out.figure(f::WHD_BETA1, ratio(beta1));
    }
    out.figure(f::MONOTONE_ENTROPY_LOSS, ratio(u.monotone_entropy_loss));
    out.figure(f::MUTUAL_INFORMATION_LOSS, ratio(u.mutual_information_loss));
    if let Some(pmi) = u.private_mutual_information_utility {
        out.figure(f::PRIVATE_MUTUAL_INFORMATION, ratio(pmi));
    }
    let q = &u.query_accuracy;
    out.line(
        f::QUERY_MEAN_RELATIVE_ERROR.label,
        ratio(q.mean_relative_error),
        &f::QUERY_MEAN_RELATIVE_ERROR.description_with(&[&q.queries, &q.seed]),
    );
    out.figure(
        f::QUERY_MEDIAN_RELATIVE_ERROR,
        ratio(q.median_relative_error),
    );
    let _ = writeln!(
        out.0,
        "  {:<20} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "per attribute", "loss", "modified", "WHD", "WHD b=1", "ent.loss", "MI loss"
    );
    for a in &u.attributes {
        let _ = writeln!(
            out.0,
            "  {:<20} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
            a.attribute,
            ratio(a.loss),
            ratio(a.modification_rate),
            optional(a.whd_uniform),
            optional(a.whd_beta1),
            ratio(a.monotone_entropy_loss),
            ratio(a.mutual_information_loss),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(999), "999");
        assert_eq!(group_digits(1000), "1,000");
        assert_eq!(group_digits(10_000_000), "10,000,000");
        // the discernibility of the release, and rounding
        assert_eq!(whole_number(2_225_769_755.0), "2,225,769,755");
        assert_eq!(whole_number(999.5), "1,000");
        assert_eq!(whole_number(0.4), "0");
        assert_eq!(whole_number(-1234.0), "-1,234");
        assert_eq!(whole_number(f64::INFINITY), "inf");
    }
}
