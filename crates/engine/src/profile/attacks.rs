//! The homogeneity and background-knowledge attacks on a sensitive attribute (seed 004 §3.2,
//! "Attacks as Barrier", after Machanavajjhala et al. 2007): which rows' sensitive value an
//! adversary who knows her target's class learns, with no other knowledge (homogeneity) or
//! when she can rule out m values for her target (background knowledge).
//!
//! Both follow from d_E, the distinct values of s in each class E (NULLs as copies of the
//! class's most frequent value, an all-NULL class d = 1: the per-class l of l-diversity, the
//! worst case): the rows of E are exposed to an adversary ruling out m values exactly when
//! d_E ≤ m + 1, homogeneity being m = 0. The figures are in
//! [`SensitiveFigures`](super::SensitiveFigures); this module tallies them and lists them
//! for every renderer (text, HTML, the table function's columns), labelled from
//! [`super::figures`].

use super::figures::{BACKGROUND, HOMOGENEOUS};
use super::{BackgroundKnowledge, Homogeneity, SensitiveFigures};
use crate::text::{group_digits, percent};

/// Default M: the background-knowledge figures are given for m = 1..=3 values ruled out.
pub const DEFAULT_BACKGROUND_VALUES: usize = 3;
/// The largest M accepted (beyond the distinct values of s, every row is exposed anyway).
pub const MAX_BACKGROUND_VALUES: usize = 100;

/// Classes and rows by their distinct values d, for d = 1..=M+1 (larger d exposes nothing up
/// to M values ruled out).
pub(crate) struct Tally {
    /// (classes, rows) of the classes with d distinct values, at index d − 1.
    by_distinct: Vec<(u64, u64)>,
}

impl Tally {
    /// A tally for M = `background_values`.
    pub fn new(background_values: usize) -> Self {
        Self {
            by_distinct: vec![(0, 0); background_values + 1],
        }
    }

    /// Counts a class of `rows` rows with `distinct` distinct values of s (NULLs as copies of
    /// the most frequent value; 1 for an all-NULL class).
    pub fn add(&mut self, distinct: u64, rows: u64) {
        let index = distinct.max(1) - 1;
        if let Some(slot) = usize::try_from(index)
            .ok()
            .and_then(|i| self.by_distinct.get_mut(i))
        {
            slot.0 += 1;
            slot.1 += rows;
        }
    }

    /// The homogeneity figures and the background-knowledge figures for m = 1..=M: the
    /// classes with d ≤ m + 1, cumulated.
    pub fn finish(self) -> (Homogeneity, Vec<BackgroundKnowledge>) {
        let (mut classes, mut rows) = (0, 0);
        let mut cumulated = self.by_distinct.iter().map(|&(c, r)| {
            classes += c;
            rows += r;
            (classes, rows)
        });
        let (classes, rows) = cumulated.next().unwrap_or((0, 0));
        let homogeneity = Homogeneity { classes, rows };
        let background = cumulated
            .enumerate()
            .map(|(m, (classes, rows))| BackgroundKnowledge {
                ruled_out: m as u64 + 1,
                classes,
                rows,
            })
            .collect();
        (homogeneity, background)
    }
}

/// One figure of the attacks as every renderer shows it: rows exposed, with their classes.
pub(crate) struct AttackFigure {
    /// The label of the text and HTML reports.
    pub label: String,
    /// The table function's column of the rows, without the `<attribute>_` it starts with.
    pub rows_column: String,
    /// The same of the classes.
    pub classes_column: String,
    /// Rows exposed (`None`: the table function's schema, before the profile is computed).
    pub rows: Option<u64>,
    /// Their classes.
    pub classes: Option<u64>,
    /// What the rows are.
    pub meaning: String,
}

impl AttackFigure {
    /// The meaning with the classes and the share of all `n` rows, for the reports.
    pub fn explanation(&self, n: u64) -> String {
        let classes = self.classes.unwrap_or(0);
        let share = self.rows.unwrap_or(0) as f64 / n.max(1) as f64;
        format!(
            "{}; {} of all rows, {} classes",
            self.meaning,
            percent(share),
            group_digits(classes)
        )
    }
}

/// The attack figures of sensitive attribute `s` (homogeneity, then m = 1..=`background_values`
/// values ruled out); without `s` (the table function's schema), their labels only.
pub(crate) fn attack_figures(
    background_values: usize,
    s: Option<&SensitiveFigures>,
) -> Vec<AttackFigure> {
    let mut figures = vec![AttackFigure {
        label: HOMOGENEOUS.label.into(),
        rows_column: HOMOGENEOUS.column("rows"),
        classes_column: HOMOGENEOUS.column("classes"),
        rows: s.map(|s| s.homogeneity.rows),
        classes: s.map(|s| s.homogeneity.classes),
        meaning: HOMOGENEOUS.description.into(),
    }];
    for m in 1..=background_values {
        let b = s.and_then(|s| s.background_knowledge.get(m - 1));
        let values = if m == 1 { "value" } else { "values" };
        figures.push(AttackFigure {
            label: BACKGROUND.label_with(&[&m, &values]),
            rows_column: BACKGROUND.column(format_args!("{m}_rows")),
            classes_column: BACKGROUND.column(format_args!("{m}_classes")),
            rows: b.map(|b| b.rows),
            classes: b.map(|b| b.classes),
            meaning: BACKGROUND.description_with(&[&(m + 1), &m, &values]),
        });
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(background_values: usize, classes: &[(u64, u64)]) -> (Homogeneity, Vec<(u64, u64)>) {
        let mut tally = Tally::new(background_values);
        for &(distinct, rows) in classes {
            tally.add(distinct, rows);
        }
        let (h, b) = tally.finish();
        (h, b.iter().map(|b| (b.classes, b.rows)).collect())
    }

    #[test]
    fn cumulates_classes_up_to_m_plus_one_values() {
        // classes (d, rows): (1, 3), (2, 4), (3, 5), (5, 7)
        // homogeneity: d = 1: 1 class, 3 rows; m = 1: d ≤ 2: 2 classes, 3 + 4 = 7 rows;
        // m = 2: d ≤ 3: 3 classes, 12 rows; m = 3: d ≤ 4: the same (no class of 4)
        let (h, b) = tally(3, &[(3, 5), (1, 3), (5, 7), (2, 4)]);
        assert_eq!((h.classes, h.rows), (1, 3));
        assert_eq!(b, vec![(2, 7), (3, 12), (3, 12)]);
        let (_, b) = tally(4, &[(3, 5), (1, 3), (5, 7), (2, 4)]);
        // m = 4: d ≤ 5: every class, 19 rows
        assert_eq!(b[3], (4, 19));
    }

    #[test]
    fn no_background_values_leaves_homogeneity() {
        // a d = 0 class (nothing counted in it) is taken as d = 1, never dropped
        let (h, b) = tally(0, &[(0, 2), (1, 1), (2, 9)]);
        assert_eq!((h.classes, h.rows), (2, 3));
        assert!(b.is_empty());
    }

    #[test]
    fn labels_and_columns_without_a_profile() {
        let figures = attack_figures(2, None);
        let columns: Vec<&str> = figures.iter().map(|f| f.rows_column.as_str()).collect();
        assert_eq!(
            columns,
            ["homogeneous_rows", "background_1_rows", "background_2_rows"]
        );
        assert_eq!(figures[2].classes_column, "background_2_classes");
        assert!(
            figures[0]
                .meaning
                .starts_with("rows in classes of one sensitive value")
        );
        assert_eq!(figures[1].label, "rows certain, 1 value ruled out");
        assert_eq!(figures[2].label, "rows certain, 2 values ruled out");
        assert!(figures[2].meaning.contains("at most 3 values"));
        assert!(
            figures
                .iter()
                .all(|f| f.rows.is_none() && f.classes.is_none())
        );
    }
}
