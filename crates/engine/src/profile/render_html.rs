//! The report as one self-contained HTML file: inline CSS and inline SVG charts (class-size
//! distribution, risk distribution, leakage ranking), no script, no font, nothing fetched.
//! Every text from the data or the command line is escaped. Quasi-identifier values appear
//! only when the profile holds them (`--show-values`).
//!
//! [`Page`] lends the same style, figure rows and utility section to other reports (the
//! release report of `anon apply` and `anon anonymize`), so that a figure looks and reads the
//! same in each.

use std::fmt::Write;

use super::attacks::attack_figures;
use super::figures::{self as f, Figure};
use super::{Profile, Relink, SensitiveFigures, SizeBucket, Utility};
use crate::text::{group_digits, percent, ratio, whole_number};

const HIGH_RISK_COLOR: &str = "#c0392b";
const LOW_RISK_COLOR: &str = "#7f8c8d";

/// Whether a re-identification risk is above the highest threshold the report counts
/// ([`super::RISK_THRESHOLDS`], 0.2): the one rule for red in the report's risk cards and bars.
fn risk_is_high(risk: f64) -> bool {
    risk > super::RISK_THRESHOLDS[0]
}

/// `text` escaped for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:62em;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ccc}
h3{font-size:1em;margin-bottom:.3em}
.meta{color:#555}
table{border-collapse:collapse;margin:.5em 0}
td,th{padding:.25em .8em;text-align:left;vertical-align:top}
th{background:#f2f2f2}
td.v{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.e{color:#555}
.cards{display:flex;gap:1em;flex-wrap:wrap}
.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;min-width:8em}
.card b{display:block;font-size:1.6em}
.card.bad{border-color:#c0392b;background:#fdf0ee}
svg text{font-size:12px;fill:#222}
.warn{color:#c0392b}
";

struct Html(String);

impl Html {
    fn push(&mut self, s: &str) {
        self.0.push_str(s);
    }

    /// A figure's row with its label and description from [`super::figures`].
    fn figure(&mut self, figure: Figure, value: impl AsRef<str>) {
        self.row(figure.label, value, figure.description);
    }

    fn row(&mut self, figure: &str, value: impl AsRef<str>, meaning: &str) {
        self.cells(figure, &[value.as_ref()], meaning);
    }

    /// A table row: the figure, its values (right-aligned), what it means.
    fn cells(&mut self, figure: &str, values: &[&str], meaning: &str) {
        let _ = write!(self.0, "<tr><td>{}</td>", escape(figure));
        for value in values {
            let _ = write!(self.0, "<td class=\"v\">{}</td>", escape(value));
        }
        let _ = write!(self.0, "<td class=\"e\">{}</td></tr>", escape(meaning));
    }

    /// Opens a table whose header row names `columns`.
    fn table(&mut self, columns: &[&str]) {
        self.push("<table><tr>");
        for column in columns {
            let _ = write!(self.0, "<th>{}</th>", escape(column));
        }
        self.push("</tr>");
    }

    /// The start of a document titled `title`: its head (the style inline) and the opening
    /// of its body.
    fn document(title: &str) -> Self {
        let mut h = Html(String::new());
        let _ = write!(
            h.0,
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>{}</title><style>{STYLE}</style></head><body>",
            escape(title)
        );
        h
    }

    /// The chart of rows by class size: a bar per range, its share of the `rows`.
    fn class_sizes(&mut self, buckets: &[SizeBucket], rows: u64) {
        let bars: Vec<(String, f64, String)> = buckets
            .iter()
            .map(|b| {
                (
                    format!("size {}", b.size),
                    share(b.rows, rows),
                    format!(
                        "{} rows in {} classes",
                        group_digits(b.rows),
                        group_digits(b.classes)
                    ),
                )
            })
            .collect();
        self.bars("Rows by class size", &bars, "#4a7ab5");
    }

    /// The end of the document.
    fn finish(mut self) -> String {
        self.push("</body></html>\n");
        self.0
    }

    fn card(&mut self, label: &str, value: &str, bad: bool) {
        let _ = write!(
            self.0,
            "<div class=\"card{}\"><b>{}</b>{}</div>",
            if bad { " bad" } else { "" },
            escape(value),
            escape(label)
        );
    }

    /// A horizontal bar chart: one bar per (label, share in 0..1, caption), all in `color`.
    fn bars(&mut self, title: &str, bars: &[(String, f64, String)], color: &str) {
        let colored: Vec<(String, f64, String, &str)> = bars
            .iter()
            .map(|(label, share, caption)| (label.clone(), *share, caption.clone(), color))
            .collect();
        self.colored_bars(title, &colored);
    }

    /// A horizontal bar chart: one bar per (label, share in 0..1, caption, color).
    fn colored_bars(&mut self, title: &str, bars: &[(String, f64, String, &str)]) {
        const LABEL: f64 = 170.0;
        const WIDTH: f64 = 420.0;
        const ROW: f64 = 22.0;
        let height = ROW * bars.len() as f64 + 6.0;
        let _ = write!(
            self.0,
            "<figure><figcaption>{}</figcaption><svg width=\"{}\" height=\"{height}\" \
             role=\"img\" aria-label=\"{}\">",
            escape(title),
            LABEL + WIDTH + 180.0,
            escape(title)
        );
        for (i, (label, share, caption, color)) in bars.iter().enumerate() {
            let y = i as f64 * ROW + 3.0;
            let w = (share.clamp(0.0, 1.0) * WIDTH).max(if *share > 0.0 { 1.0 } else { 0.0 });
            let _ = write!(
                self.0,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\
                 <rect x=\"{LABEL}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{color}\"/>\
                 <text x=\"{:.1}\" y=\"{}\">{}</text>",
                LABEL - 6.0,
                y + 14.0,
                escape(label),
                ROW - 6.0,
                LABEL + w + 6.0,
                y + 14.0,
                escape(caption)
            );
        }
        self.push("</svg></figure>");
    }
}

/// The report as a self-contained HTML document.
pub fn render(profile: &Profile) -> String {
    let mut h = Html::document(&format!("Privacy profile of {}", profile.input));
    let n = profile.rows;
    let _ = write!(
        h.0,
        "<h1>Privacy profile of {}</h1><p class=\"meta\">{} rows · quasi-identifiers: {}",
        escape(&profile.input),
        group_digits(n),
        escape(&profile.quasi_identifiers.join(", "))
    );
    if !profile.sensitive_attributes.is_empty() {
        let _ = write!(
            h.0,
            " · sensitive: {}",
            escape(&profile.sensitive_attributes.join(", "))
        );
    }
    if let Some(person) = &profile.person_id {
        let _ = write!(h.0, " · person id: {}", escape(person));
    }
    h.push("</p>");

    let a = &profile.anonymity;
    let r = &profile.risk;
    h.push("<div class=\"cards\">");
    // the cards are named as the figures' rows below
    h.card(f::K.label, &group_digits(a.k), a.k < 5);
    h.card(
        f::SAMPLE_UNIQUES.label,
        &percent(a.sample_uniques as f64 / n as f64),
        a.sample_uniques > 0,
    );
    // one rule for every risk figure and bar: red above the highest counted threshold
    h.card(
        f::PROSECUTOR_RISK_MAX.label,
        &ratio(r.prosecutor_max),
        risk_is_high(r.prosecutor_max),
    );
    h.card(
        f::PROSECUTOR_RISK_AVERAGE.label,
        &ratio(r.prosecutor_average),
        risk_is_high(r.prosecutor_average),
    );
    if let Some(s) = a.sensitive.first() {
        h.card(
            &format!("{} of {}", f::L_DISTINCT.label, s.attribute),
            &group_digits(s.l_distinct),
            s.l_distinct < 2,
        );
        h.card(
            &format!("{} of {}", f::T_EQUAL.label, s.attribute),
            &ratio(s.t_equal),
            s.t_equal > 0.5,
        );
        h.card(
            &format!("{} of {}", f::HOMOGENEOUS.label, s.attribute),
            &percent(s.homogeneity.rows as f64 / n as f64),
            s.homogeneity.rows > 0,
        );
    }
    h.push("</div>");

    h.push("<h2>Anonymity</h2><table><tr><th>figure</th><th>value</th><th>meaning</th></tr>");
    h.figure(f::K, group_digits(a.k));
    if let Some(k) = a.k_persons {
        h.figure(f::K_PERSONS, group_digits(k));
    }
    h.figure(f::CLASSES, group_digits(a.classes));
    h.figure(f::SAMPLE_UNIQUES, group_digits(a.sample_uniques));
    h.push("</table>");
    h.class_sizes(&a.class_sizes, n);
    for s in &a.sensitive {
        sensitive(&mut h, s, n);
    }

    h.push("<h2>Re-identification risk</h2><table><tr><th>figure</th><th>value</th><th>meaning</th></tr>");
    h.figure(f::PROSECUTOR_RISK_MAX, ratio(r.prosecutor_max));
    h.figure(f::PROSECUTOR_RISK_AVERAGE, ratio(r.prosecutor_average));
    h.figure(f::MARKETER_RISK, ratio(r.marketer));
    for t in &r.thresholds {
        h.row(
            &f::RISK_OVER.label_with(&[&t.threshold]),
            format!("{} ({})", group_digits(t.rows), percent(t.share)),
            f::RISK_OVER.description,
        );
    }
    if let Some(p) = &r.population {
        h.row(
            f::POPULATION_ROWS.label,
            format!("{} rows", group_digits(p.rows)),
            &format!("{} ({})", f::POPULATION_ROWS.description, p.population),
        );
        h.figure(f::K_MAP, group_digits(p.k_map));
        h.figure(f::JOURNALIST_RISK, ratio(p.journalist));
        h.figure(f::POPULATION_MARKETER_RISK, ratio(p.marketer));
        if p.classes_not_covered > 0 {
            h.row(
                f::CLASSES_NOT_COVERED.label,
                group_digits(p.classes_not_covered),
                &format!("warning: {}", f::CLASSES_NOT_COVERED.description),
            );
        }
    }
    h.push("</table>");
    let bars: Vec<(String, f64, String, &str)> = r
        .distribution
        .iter()
        .map(|b| {
            let label = if b.min == 0.0 {
                format!("risk ≤ {}", b.max)
            } else {
                format!("{} < risk ≤ {}", b.min, b.max)
            };
            (
                label,
                b.share,
                format!("{} rows ({})", group_digits(b.rows), percent(b.share)),
                // a range (min, max] lies above the threshold when min is at least it
                if b.min >= super::RISK_THRESHOLDS[0] {
                    HIGH_RISK_COLOR
                } else {
                    LOW_RISK_COLOR
                },
            )
        })
        .collect();
    h.colored_bars("Rows by re-identification risk", &bars);

    h.push(
        "<h2>Leakage ranking</h2><p>Normalized entropy leakage ΔS/S0 of each attribute alone: \
         near 1 it almost singles out rows by itself. Attributes ranking high should be treated \
         as quasi-identifiers.</p>",
    );
    let bars: Vec<(String, f64, String)> = profile
        .leakage
        .attributes
        .iter()
        .map(|l| {
            (
                format!(
                    "{}{}",
                    l.attribute,
                    if l.quasi_identifier { " (QI)" } else { "" }
                ),
                l.leakage,
                format!(
                    "{} · {} values",
                    ratio(l.leakage),
                    group_digits(l.distinct_values)
                ),
            )
        })
        .collect();
    h.bars("Leakage by attribute", &bars, "#8e44ad");
    let _ = write!(
        h.0,
        "<p>Leakage of {}: {}</p>",
        escape(f::LEAKAGE_QUASI_IDENTIFIERS.label),
        ratio(profile.leakage.quasi_identifiers)
    );

    if let Some(u) = &profile.utility {
        utility(&mut h, u, f::SUPPRESSED_ROWS.description);
    }

    if let Some(r) = &profile.relink {
        relink(&mut h, r);
    }
    if let Some(attack) = &profile.fingerprint_attack {
        let r = &attack.report;
        let _ = write!(
            h.0,
            "<h2>Fingerprint-correlation attack</h2><p>{} records of {}, linking attribute {}; linked: {}</p><table>",
            group_digits(r.records),
            escape(&attack.sensitive_table),
            escape(&r.linking_attribute),
            escape(&r.linked_attributes.join(", "))
        );
        h.figure(f::PARTIALLY_PINNED, group_digits(r.partially_pinned));
        h.figure(f::FULLY_PINNED, group_digits(r.fully_pinned));
        for (attribute, pinned) in &r.pinned_per_attribute {
            h.row(
                &f::PINNED_ON.label_with(&[attribute]),
                group_digits(*pinned),
                f::PINNED_ON.description,
            );
        }
        h.push("</table>");
    }

    if let Some(classes) = &profile.risky_classes {
        h.push("<h2>Riskiest classes</h2><p class=\"warn\">Quasi-identifier values shown on request (--show-values).</p><table><tr><th>rows</th>");
        for qi in &profile.quasi_identifiers {
            let _ = write!(h.0, "<th>{}</th>", escape(qi));
        }
        h.push("</tr>");
        for class in classes {
            let _ = write!(h.0, "<tr><td class=\"v\">{}</td>", class.rows);
            for value in &class.values {
                let _ = write!(
                    h.0,
                    "<td>{}</td>",
                    escape(value.as_deref().unwrap_or("NULL"))
                );
            }
            h.push("</tr>");
        }
        h.push("</table>");
    }
    h.finish()
}

fn sensitive(h: &mut Html, s: &SensitiveFigures, n: u64) {
    let _ = write!(
        h.0,
        "<h3>Sensitive attribute {} ({} distinct values)</h3>\
         <table><tr><th>figure</th><th>value</th><th>meaning</th></tr>",
        escape(&s.attribute),
        group_digits(s.distinct_values)
    );
    h.figure(f::L_DISTINCT, group_digits(s.l_distinct));
    h.figure(f::L_ENTROPY, ratio(s.l_entropy));
    h.row(
        &f::L_RECURSIVE.label_with(&[&s.recursive_c]),
        group_digits(s.l_recursive),
        f::L_RECURSIVE.description,
    );
    h.figure(f::T_EQUAL, ratio(s.t_equal));
    if let Some(t) = s.t_ordered {
        h.figure(f::T_ORDERED, ratio(t));
    }
    h.figure(f::ALPHA, ratio(s.alpha));
    h.figure(f::BETA, ratio(s.beta));
    h.row(
        f::BETA_ENHANCED.label,
        s.beta_enhanced.map_or_else(|| "none".to_string(), ratio),
        &format!(
            "{}; {} classes exceed the -ln p cap",
            f::BETA_ENHANCED.description,
            group_digits(s.beta_enhanced_classes_over_cap)
        ),
    );
    h.row(
        f::DELTA.label,
        ratio(s.delta),
        &format!(
            "{}; {} classes lack some value (delta infinite over all values)",
            f::DELTA.description,
            group_digits(s.delta_classes_missing_values)
        ),
    );
    if let Some(t) = s.tuple_diversity {
        h.figure(f::TUPLE_DIVERSITY, ratio(t));
    }
    for figure in attack_figures(s.background_knowledge.len(), Some(s)) {
        h.row(
            &figure.label,
            group_digits(figure.rows.unwrap_or(0)),
            &figure.explanation(n),
        );
    }
    h.push("</table>");
}

fn relink(h: &mut Html, r: &Relink) {
    let _ = write!(
        h.0,
        "<h2>Relink by position</h2><p>Against {} ({} rows), comparing {}.</p>\
         <table><tr><th>figure</th><th>value</th><th>meaning</th></tr>",
        escape(&r.other),
        group_digits(r.other_rows),
        escape(&r.columns.join(", "))
    );
    h.row(
        f::RELINKED.label,
        format!(
            "{} ({} of {})",
            group_digits(r.relinked),
            percent(r.share),
            group_digits(r.positions)
        ),
        f::RELINKED.description,
    );
    h.figure(f::RELINK_CHANCE, whole_number(r.expected_by_chance));
    h.push("</table>");
}

/// `part` as a share of `whole` (0 of nothing).
fn share(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The utility section, its suppressed rows explained as `suppressed` (what became of them
/// differs between a profiled table and a release that drops them).
fn utility(h: &mut Html, u: &Utility, suppressed: &str) {
    let _ = write!(
        h.0,
        "<h2>Utility</h2><p>Against {}, rows matched by {}.</p>\
         <table><tr><th>figure</th><th>value</th><th>meaning</th></tr>",
        escape(&u.original),
        escape(&u.matched_by)
    );
    let opt = |x: Option<f64>| x.map_or_else(|| "n/a".to_string(), ratio);
    h.row(
        f::SUPPRESSED_ROWS.label,
        group_digits(u.suppressed_rows),
        suppressed,
    );
    h.figure(f::NCP, ratio(u.ncp));
    h.figure(f::LOSS, ratio(u.loss_metric));
    h.figure(f::DISCERNIBILITY, whole_number(u.discernibility));
    h.figure(f::AECS, opt(u.aecs));
    if let Some(cm) = u.classification_metric {
        h.figure(f::CLASSIFICATION_METRIC, ratio(cm));
    }
    h.figure(f::MODIFICATION_RATE, ratio(u.modification_rate));
    if u.whd_uniform.is_some() {
        h.figure(f::WHD_UNIFORM, opt(u.whd_uniform));
        h.figure(f::WHD_BETA1, opt(u.whd_beta1));
    }
    h.figure(f::MONOTONE_ENTROPY_LOSS, ratio(u.monotone_entropy_loss));
    h.figure(f::MUTUAL_INFORMATION_LOSS, ratio(u.mutual_information_loss));
    if let Some(pmi) = u.private_mutual_information_utility {
        h.figure(f::PRIVATE_MUTUAL_INFORMATION, ratio(pmi));
    }
    let q = &u.query_accuracy;
    h.row(
        f::QUERY_MEAN_RELATIVE_ERROR.label,
        ratio(q.mean_relative_error),
        &f::QUERY_MEAN_RELATIVE_ERROR.description_with(&[&q.queries, &q.seed]),
    );
    h.figure(
        f::QUERY_MEDIAN_RELATIVE_ERROR,
        ratio(q.median_relative_error),
    );
    h.push("</table>");
    // Loss is a share in [0, 1]: the bar's length is the figure itself
    let bars: Vec<(String, f64, String)> = u
        .attributes
        .iter()
        .map(|a| (a.attribute.clone(), a.loss, ratio(a.loss)))
        .collect();
    h.bars(LOSS_CHART, &bars, "#d35400");
}

/// The title of the chart of each quasi-identifier's Loss.
pub const LOSS_CHART: &str = "Loss by quasi-identifier";

/// A self-contained HTML page in the profile report's style (inline CSS, no script, nothing
/// fetched), for reports built from the profile's pieces: its figure rows (labels and
/// descriptions from [`super::figures`]) and its utility section. Every text handed to it is
/// escaped; no method takes markup.
pub struct Page(Html);

impl Page {
    /// A page titled `title` (in the head and as its heading).
    pub fn new(title: &str) -> Self {
        let mut h = Html::document(title);
        let _ = write!(h.0, "<h1>{}</h1>", escape(title));
        Self(h)
    }

    /// A line of context under the title (muted).
    pub fn meta(&mut self, text: &str) {
        let _ = write!(self.0.0, "<p class=\"meta\">{}</p>", escape(text));
    }

    /// A section heading.
    pub fn heading(&mut self, text: &str) {
        let _ = write!(self.0.0, "<h2>{}</h2>", escape(text));
    }

    /// A paragraph.
    pub fn paragraph(&mut self, text: &str) {
        let _ = write!(self.0.0, "<p>{}</p>", escape(text));
    }

    /// Opens a table whose header row names `columns`; rows follow, then [`Page::end_table`].
    pub fn table(&mut self, columns: &[&str]) {
        self.0.table(columns);
    }

    /// A row: the figure's label, its values (right-aligned), what it means.
    pub fn row(&mut self, label: &str, values: &[&str], meaning: &str) {
        self.0.cells(label, values, meaning);
    }

    /// A row of a profile figure: its label, `value`, its description.
    pub fn figure(&mut self, figure: Figure, value: &str) {
        self.0.figure(figure, value);
    }

    /// Closes the table [`Page::table`] opened.
    pub fn end_table(&mut self) {
        self.0.push("</table>");
    }

    /// A paragraph set off as a warning.
    pub fn warning(&mut self, text: &str) {
        let _ = write!(self.0.0, "<p class=\"warn\">{}</p>", escape(text));
    }

    /// The profile's chart of rows by class size, over `rows` rows.
    pub fn class_sizes(&mut self, buckets: &[SizeBucket], rows: u64) {
        self.0.class_sizes(buckets, rows);
    }

    /// A horizontal bar chart titled `title`: one bar per (label, share in 0..1, caption).
    pub fn bars(&mut self, title: &str, bars: &[(String, f64, String)]) {
        self.0.bars(title, bars, "#b5714a");
    }

    /// The profile's utility section, as `anon profile --format html` renders it, with its
    /// suppressed rows explained as `suppressed`.
    pub fn utility(&mut self, u: &Utility, suppressed: &str) {
        utility(&mut self.0, u, suppressed);
    }

    /// The finished document.
    pub fn finish(self) -> String {
        self.0.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_escapes_every_text_and_keeps_the_figure_labels() {
        let mut page = Page::new("<t&>");
        page.meta("m<");
        page.heading("h>");
        page.paragraph("p&");
        page.table(&["c\""]);
        page.row("l'", &["v<"], "e>");
        page.figure(f::K, "3");
        page.end_table();
        let html = page.finish();
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
        for escaped in [
            "<title>&lt;t&amp;&gt;</title>",
            "<h1>&lt;t&amp;&gt;</h1>",
            "<p class=\"meta\">m&lt;</p>",
            "<h2>h&gt;</h2>",
            "<p>p&amp;</p>",
            "<th>c&quot;</th>",
            "<td>l&#39;</td><td class=\"v\">v&lt;</td><td class=\"e\">e&gt;</td>",
        ] {
            assert!(html.contains(escaped), "{escaped} missing: {html}");
        }
        assert!(html.contains(&format!(
            "<td>{}</td><td class=\"v\">3</td><td class=\"e\">{}</td>",
            f::K.label,
            f::K.description
        )));
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }
}
