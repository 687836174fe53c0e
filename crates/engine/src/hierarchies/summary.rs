//! What a value tree does to a column, level by level: the classes its rows fall into and the
//! rows of the smallest, counted from the column's frequency set.

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::error::{DataFusionError, Result};
use serde::Serialize;

use crate::generalize::tree_rules::InternedLevel;
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
/// the `covers the data` rule otherwise). A file not built here names its levels `level N`.
pub fn level_summaries(
    hierarchy: &Hierarchy,
    column: &str,
    values: &ArrayRef,
    counts: &[u64],
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
        let of_value = ids.iter().map(|id| id.unwrap_or(NO_CLASS));
        let (classes, smallest) = class_sizes(of_value, labels, counts);
        summaries.push(LevelSummary {
            level,
            meaning: format!("level {level}"),
            classes,
            smallest,
        });
    }
    Ok(summaries)
}

/// Per level of a hierarchy being built, the classes of its frequency set: `levels` are the
/// labels above the leaf interned by the rules' check (each value's label id; the leaves,
/// checked unique, are each their own class), `counts` each value's rows, `meanings` the
/// levels' names.
pub fn built_level_summaries(
    levels: &[InternedLevel],
    counts: &[u64],
    meanings: &[String],
) -> Vec<LevelSummary> {
    // each value its own class
    let present = counts.iter().filter(|&&n| n > 0);
    let leaves = (present.clone().count(), present.min().copied().unwrap_or(0));
    let above = levels
        .iter()
        .map(|level| class_sizes(level.of_row.iter().copied(), level.labels.len(), counts));
    std::iter::once(leaves)
        .chain(above)
        .enumerate()
        .map(|(level, (classes, smallest))| LevelSummary {
            level,
            meaning: meanings
                .get(level)
                .cloned()
                .unwrap_or_else(|| format!("level {level}")),
            classes,
            smallest,
        })
        .collect()
}

/// The label id of a value in no class (a NULL).
const NO_CLASS: u32 = u32::MAX;

/// The classes rows fall into and the rows of the smallest (0 without rows): each value's
/// label id (of `labels`; [`NO_CLASS`] for none) and `counts`, each value's rows. A label no
/// row has is no class.
fn class_sizes(of_value: impl Iterator<Item = u32>, labels: usize, counts: &[u64]) -> (usize, u64) {
    let mut rows = vec![0u64; labels];
    for (id, &n) in of_value.zip(counts) {
        if id != NO_CLASS {
            rows[id as usize] += n;
        }
    }
    let present = rows.iter().filter(|&&r| r > 0);
    (present.clone().count(), present.min().copied().unwrap_or(0))
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
        let s = level_summaries(&h, "col", &values, &[5, 2, 4]).unwrap();
        let got: Vec<(usize, u64)> = s.iter().map(|l| (l.classes, l.smallest)).collect();
        assert_eq!(got, vec![(3, 2), (2, 5), (1, 11)]);
        let missing: ArrayRef = Arc::new(StringArray::from(vec!["zz"]));
        let e = level_summaries(&h, "col", &missing, &[1])
            .unwrap_err()
            .to_string();
        assert!(e.contains("[rule: covers the data]"), "{e}");
    }

    #[test]
    fn built_levels_summarize_as_the_tree_does() {
        use crate::generalize::tree_rules::{Origin, check_arrays};
        use datafusion::arrow::array::{DictionaryArray, UInt32Array};
        // leaves a 5, b 2, c 4 rows; level 1 a dictionary with an unused label: a, b → g
        // (7 rows), c → h (4); by hand: (3 classes, smallest 2), (2, 4), (1, 11)
        let leaves: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "c"]));
        let group: ArrayRef = Arc::new(DictionaryArray::new(
            UInt32Array::from(vec![0, 0, 1]),
            Arc::new(StringArray::from(vec!["g", "h", "unused"])),
        ));
        let top: ArrayRef = Arc::new(StringArray::from(vec!["*"; 3]));
        let levels = [group, top];
        let interned = check_arrays("t", Origin::File("t.csv"), &leaves, &levels).unwrap();
        let meanings = ["value".to_string(), "group".to_string(), "*".to_string()];
        let built = built_level_summaries(&interned, &[5, 2, 4], &meanings);
        let got: Vec<(usize, u64)> = built.iter().map(|l| (l.classes, l.smallest)).collect();
        assert_eq!(got, vec![(3, 2), (2, 4), (1, 11)]);
        assert_eq!(built[1].meaning, "group");
        // the same file read as a tree: the same classes
        let h = Hierarchy::tree_from_rows(
            "t",
            &[
                vec!["a", "g", "*"],
                vec!["b", "g", "*"],
                vec!["c", "h", "*"],
            ],
        )
        .unwrap();
        let read = level_summaries(&h, "col", &leaves, &[5, 2, 4]).unwrap();
        let read: Vec<(usize, u64)> = read.iter().map(|l| (l.classes, l.smallest)).collect();
        assert_eq!(read, got);
    }
}
