//! What a value tree does to a column, level by level: the classes its rows fall into and the
//! rows of the smallest, counted from the column's frequency set.

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use crate::generalize::{Hierarchy, HierarchyKind};

/// One level of a hierarchy over a column.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelSummary {
    pub level: usize,
    /// What the level is (`value`, `width 10`, `>= 100 rows`, `month`, `*`; for a file that
    /// was not built here, `level N`).
    pub meaning: String,
    /// The level's labels the column's non-null rows fall into.
    pub classes: usize,
    /// Rows of the smallest of those classes (0 when the column has no non-null row).
    pub smallest: u64,
}

/// Per level of the tree `hierarchy`, the classes of `column`'s frequency set (`values`,
/// distinct and non-null, with their row `counts`). Every value must be a leaf (the error of
/// the `covers the data` rule otherwise). `meanings`, when given, name the levels.
pub fn level_summaries(
    hierarchy: &Hierarchy,
    column: &str,
    values: &ArrayRef,
    counts: &[u64],
    meanings: Option<&[String]>,
) -> Result<Vec<LevelSummary>> {
    let HierarchyKind::Tree(tree) = hierarchy.kind() else {
        return Err(DataFusionError::Plan(format!(
            "hierarchy '{}' is not a value tree",
            hierarchy.name()
        )));
    };
    let mut summaries = Vec::with_capacity(tree.height());
    for level in 0..tree.height() {
        let labels = tree.labels(level).map_or(0, |l| l.len());
        let ids = tree.label_ids_of(hierarchy.name(), column, values, level)?;
        let mut rows = vec![0u64; labels];
        for (i, &id) in ids.values().iter().enumerate() {
            if ids.is_valid(i) {
                rows[id as usize] += counts[i];
            }
        }
        let present = rows.iter().filter(|&&r| r > 0);
        summaries.push(LevelSummary {
            level,
            meaning: meanings
                .and_then(|m| m.get(level).cloned())
                .unwrap_or_else(|| format!("level {level}")),
            classes: present.clone().count(),
            smallest: present.min().copied().unwrap_or(0),
        });
    }
    Ok(summaries)
}

/// The summary as a text table, one line per level.
pub fn summary_table(levels: &[LevelSummary]) -> String {
    let width = levels
        .iter()
        .map(|l| l.meaning.chars().count())
        .max()
        .unwrap_or(0)
        .max("meaning".len());
    let mut text = format!(
        "{:>5}  {:<width$}  {:>10}  {:>14}\n",
        "level", "meaning", "classes", "smallest class"
    );
    for l in levels {
        text.push_str(&format!(
            "{:>5}  {:<width$}  {:>10}  {:>14}\n",
            l.level, l.meaning, l.classes, l.smallest
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use std::sync::Arc;

    #[test]
    fn classes_and_smallest_by_hand() {
        // leaves a, b (group g), c (group h); unused leaf d (group h)
        let h = Hierarchy::tree_from_rows(
            "t",
            &[
                vec!["a", "g", "*"],
                vec!["b", "g", "*"],
                vec!["c", "h", "*"],
                vec!["d", "h", "*"],
            ],
        )
        .unwrap();
        let values: ArrayRef = Arc::new(StringArray::from(vec!["c", "a", "b"]));
        // rows: c 5, a 2, b 4 → level 0: 3 classes, smallest 2; level 1: g 6, h 5 →
        // smallest 5; top: 11
        let s = level_summaries(&h, "col", &values, &[5, 2, 4], None).unwrap();
        let got: Vec<(usize, u64)> = s.iter().map(|l| (l.classes, l.smallest)).collect();
        assert_eq!(got, vec![(3, 2), (2, 5), (1, 11)]);
        let missing: ArrayRef = Arc::new(StringArray::from(vec!["zz"]));
        let e = level_summaries(&h, "col", &missing, &[1], None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("[rule: covers the data]"), "{e}");
    }
}
