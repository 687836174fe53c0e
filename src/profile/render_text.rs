//! The report as aligned text for a terminal: one figure per line, each with a one-line
//! explanation.

use std::fmt::Write;

use super::attacks::attack_figures;
use super::position::{RELINK_CHANCE_LABEL, RELINK_CHANCE_MEANING, RELINK_LABEL, RELINK_MEANING};
use super::{FingerprintAttack, Profile, Relink, SensitiveFigures, Utility};

/// Thousands separators: 1234567 → `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A share as a percentage with two decimals.
pub fn percent(share: f64) -> String {
    format!("{:.2}%", 100.0 * share)
}

/// A ratio with four decimals.
pub fn ratio(x: f64) -> String {
    format!("{x:.4}")
}

fn optional(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".to_string(), ratio)
}

struct Out(String);

impl Out {
    fn heading(&mut self, title: &str) {
        let _ = writeln!(self.0, "\n{title}");
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
    out.line(
        "k (rows)",
        group_digits(a.k),
        "rows of the smallest class: every row shares its QI values with k-1 others",
    );
    if let Some(k) = a.k_persons {
        out.line(
            "k (persons)",
            group_digits(k),
            "distinct persons of the smallest class (rows overstate k when persons repeat)",
        );
    }
    out.line(
        "equivalence classes",
        group_digits(a.classes),
        "distinct combinations of the quasi-identifier values",
    );
    out.line(
        "sample uniques",
        group_digits(a.sample_uniques),
        &format!(
            "rows alone in their class ({} of all rows)",
            percent(a.sample_uniques as f64 / n as f64)
        ),
    );
    let _ = writeln!(
        out.0,
        "  {:<32} {:>14}  {:>14}  rows in classes of each size",
        "class size", "classes", "rows"
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
    out.line(
        "prosecutor risk, max",
        ratio(r.prosecutor_max),
        "1/k: the risk of the most exposed record, attacker knows it is in the data",
    );
    out.line(
        "prosecutor risk, average",
        ratio(r.prosecutor_average),
        "mean over records of 1/(class size)",
    );
    out.line(
        "marketer risk",
        ratio(r.marketer),
        "expected share of records re-identified when all are matched at once",
    );
    for t in &r.thresholds {
        out.line(
            &format!("records with risk > {}", t.threshold),
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
        out.line(
            "k-map",
            group_digits(p.k_map),
            "population rows matching the least common class of the sample",
        );
        out.line(
            "journalist risk",
            ratio(p.journalist),
            "1/(smallest matching population count): attacker does not know who is sampled",
        );
        out.line(
            "marketer risk (population)",
            ratio(p.marketer),
            "expected share of sample records re-identified against the population",
        );
        if p.classes_not_covered > 0 {
            out.line(
                "classes not covered",
                group_digits(p.classes_not_covered),
                "WARNING: classes with fewer population rows than sample rows",
            );
        }
        for t in &p.thresholds {
            out.line(
                &format!("records with journalist risk > {}", t.threshold),
                group_digits(t.rows),
                &format!("{} of all records", percent(t.share)),
            );
        }
    }

    out.heading("LEAKAGE RANKING (normalized entropy leakage ΔS/S0, highest first)");
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
    out.line(
        "all quasi-identifiers together",
        ratio(profile.leakage.quasi_identifiers),
        "leakage of the classes",
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
        RELINK_LABEL,
        group_digits(r.relinked),
        &format!(
            "{} of {} positions; {RELINK_MEANING}",
            percent(r.share),
            group_digits(r.positions)
        ),
    );
    out.line(
        RELINK_CHANCE_LABEL,
        format!("{:.0}", r.expected_by_chance),
        RELINK_CHANCE_MEANING,
    );
}

fn fingerprint(out: &mut Out, attack: &FingerprintAttack) {
    let r = &attack.report;
    out.heading(&format!(
        "FINGERPRINT-CORRELATION ATTACK on {} (linking attribute {})",
        attack.sensitive_table, r.linking_attribute
    ));
    out.line(
        "linked attributes",
        if r.linked_attributes.is_empty() {
            "none".to_string()
        } else {
            r.linked_attributes.join(", ")
        },
        "assumed determined by the linking value, not refuted",
    );
    out.line(
        "records partially pinned",
        group_digits(r.partially_pinned),
        "some attribute besides the linking one has one possible value",
    );
    out.line(
        "records fully pinned",
        group_digits(r.fully_pinned),
        "every attribute besides the linking one has one possible value",
    );
    for (attribute, pinned) in &r.pinned_per_attribute {
        out.line(
            &format!("pinned on {attribute}"),
            group_digits(*pinned),
            "records",
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
    out.line(
        "l (distinct)",
        group_digits(s.l_distinct),
        "fewest distinct sensitive values in a class",
    );
    out.line(
        "l (entropy)",
        ratio(s.l_entropy),
        "smallest exp(entropy) of a class's sensitive values",
    );
    out.line(
        &format!("l (recursive, c = {})", s.recursive_c),
        group_digits(s.l_recursive),
        "smallest recursive (c,l)-diversity: the top value is not too frequent",
    );
    out.line(
        "t (equal distance)",
        ratio(s.t_equal),
        "largest distance of a class's distribution from the table's",
    );
    if let Some(t) = s.t_ordered {
        out.line(
            "t (ordered distance)",
            ratio(t),
            "the same, with values far apart counting more",
        );
    }
    out.line(
        "alpha",
        ratio(s.alpha),
        "largest share of one sensitive value in a class ((alpha,k)-anonymity)",
    );
    out.line(
        "beta (basic)",
        ratio(s.beta),
        "largest relative gain in a value's frequency inside a class (beta-likeness)",
    );
    out.line(
        "beta (enhanced)",
        optional(s.beta_enhanced),
        &if s.beta_enhanced.is_some() {
            "smallest beta meeting enhanced beta-likeness".to_string()
        } else {
            format!(
                "none: {} classes exceed the -ln p cap for frequent values",
                group_digits(s.beta_enhanced_classes_over_cap)
            )
        },
    );
    out.line(
        "delta",
        ratio(s.delta),
        &format!(
            "largest |ln(p_class/p_table)| over values in a class; infinite over all values in {} classes",
            group_digits(s.delta_classes_missing_values)
        ),
    );
    if let Some(t) = s.tuple_diversity {
        out.line(
            "tuple diversity",
            ratio(t),
            "narrowest range of values in a class, as a share of the table's range",
        );
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
    out.line(
        "suppressed rows",
        group_digits(u.suppressed_rows),
        "rows whose quasi-identifiers are all *",
    );
    out.line(
        "NCP",
        ratio(u.ncp),
        "normalized certainty penalty: mean spread of the original values in a class",
    );
    out.line(
        "loss",
        ratio(u.loss_metric),
        "mean cost per cell: 0 unchanged, 1 fully generalized (hierarchies where given)",
    );
    out.line(
        "discernibility",
        format!("{:.0}", u.discernibility),
        "sum of squared class sizes (suppressed rows cost n each)",
    );
    out.line(
        "AECS",
        optional(u.aecs),
        "average class size relative to k (1 is ideal)",
    );
    if let Some(cm) = u.classification_metric {
        out.line(
            "classification metric",
            ratio(cm),
            "share of rows not in their class's majority sensitive value",
        );
    }
    out.line(
        "modification rate",
        ratio(u.modification_rate),
        "share of quasi-identifier cells changed",
    );
    if let (Some(uniform), Some(beta1)) = (u.whd_uniform, u.whd_beta1) {
        out.line(
            "WHD (uniform weights)",
            ratio(uniform),
            "weighted hierarchical distance: levels climbed, each level alike",
        );
        out.line(
            "WHD (beta = 1 weights)",
            ratio(beta1),
            "the same, climbing near the leaves costing less",
        );
    }
    out.line(
        "monotone entropy loss",
        ratio(u.monotone_entropy_loss),
        "bits of uncertainty added per cell (Gionis & Tassa)",
    );
    out.line(
        "mutual-information loss",
        ratio(u.mutual_information_loss),
        "bits lost per cell about the original value",
    );
    if let Some(pmi) = u.private_mutual_information_utility {
        out.line(
            "private mutual information",
            ratio(pmi),
            "bits per cell the QIs still tell about the sensitive attribute",
        );
    }
    out.line(
        "query error (mean)",
        ratio(u.query_accuracy.mean_relative_error),
        &format!(
            "mean relative error of {} random COUNT(*) range queries (seed {})",
            u.query_accuracy.queries, u.query_accuracy.seed
        ),
    );
    out.line(
        "query error (median)",
        ratio(u.query_accuracy.median_relative_error),
        "median of the same",
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
    }
}
