//! Levels written as an ARX hierarchy CSV file: one line per leaf (level 0 first, the top
//! last), fields separated by `;`, a field quoted with `"` (a `"` inside doubled) when it
//! holds a `;` or a `"`, and the empty string written `""` so that it is seen. Lines end in
//! LF. What [`crate::generalize::TreeHierarchy::from_csv_str`] reads back, field for field.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::error::{DataFusionError, Result};

use super::Levels;

/// The file's text; a value holding a line break (which the format cannot hold) is an error
/// naming `column` (never the value).
pub fn to_csv(levels: &Levels, column: &str) -> Result<String> {
    let columns: Vec<_> = levels.labels.iter().map(|l| l.as_string::<i32>()).collect();
    let rows = levels.values.len();
    let bytes: usize = columns.iter().map(|c| c.value_data().len()).sum();
    let mut text = String::with_capacity(bytes + rows * (columns.len() + 1));
    for row in 0..rows {
        for (level, labels) in columns.iter().enumerate() {
            if level > 0 {
                text.push(';');
            }
            let field = if labels.is_valid(row) {
                labels.value(row)
            } else {
                ""
            };
            if field.contains(['\n', '\r']) {
                return Err(DataFusionError::Plan(format!(
                    "a value of column '{column}' holds a line break, which a hierarchy file \
                     cannot hold (level {level}); replace it in the data first"
                )));
            }
            if field.is_empty() || field.contains([';', '"']) {
                text.push('"');
                text.push_str(&field.replace('"', "\"\""));
                text.push('"');
            } else {
                text.push_str(field);
            }
        }
        text.push('\n');
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generalize::TreeHierarchy;
    use datafusion::arrow::array::{ArrayRef, StringArray};
    use std::sync::Arc;

    #[test]
    fn awkward_values_read_back_as_written() {
        let leaves: ArrayRef = Arc::new(StringArray::from(vec!["", "a;b", "say \"hi\"", " x "]));
        let group: ArrayRef = Arc::new(StringArray::from(vec!["g", "g", "h;", "h;"]));
        let top: ArrayRef = Arc::new(StringArray::from(vec!["*"; 4]));
        let levels = Levels {
            values: Arc::clone(&leaves),
            counts: vec![1; 4],
            labels: vec![Arc::clone(&leaves), group, top],
            meanings: vec![],
        };
        let text = to_csv(&levels, "c").unwrap();
        // by hand: "" quoted, ; and " quoted with " doubled, spaces kept as they are
        assert_eq!(
            text,
            "\"\";g;*\n\"a;b\";g;*\n\"say \"\"hi\"\"\";\"h;\";*\n x ;\"h;\";*\n"
        );
        let tree = TreeHierarchy::from_csv_str("c", "c.csv", &text).unwrap();
        let rows = tree.rows();
        assert_eq!(rows[0], vec!["", "g", "*"]);
        assert_eq!(rows[1], vec!["a;b", "g", "*"]);
        assert_eq!(rows[2], vec!["say \"hi\"", "h;", "*"]);
        assert_eq!(rows[3], vec![" x ", "h;", "*"]);
        let broken: ArrayRef = Arc::new(StringArray::from(vec!["line\nbreak"]));
        let levels = Levels {
            values: Arc::clone(&broken),
            counts: vec![1],
            labels: vec![broken],
            meanings: vec![],
        };
        let e = to_csv(&levels, "c").unwrap_err().to_string();
        assert!(
            e.contains("a value of column 'c' holds a line break"),
            "{e}"
        );
        assert!(!e.contains("line\nbreak"), "{e}");
    }
}
