//! Levels written as an ARX hierarchy CSV file: one line per leaf (level 0 first, the top
//! last), fields separated by `;`, lines ending in LF. A field is quoted with `"` (a `"` inside
//! doubled) when it holds a `;` or a `"`, when it is empty (so that `""` is seen), or when it
//! starts with a byte order mark (which a reader skips at the start of a file). A field
//! holding a line break cannot be written (an error naming the column, never the value).
//! [`crate::generalize::TreeHierarchy::from_csv_str`] reads the text back field for field.
//!
//! The text is produced in chunks of lines ([`CsvWriter`]), so that a file of millions of
//! lines is streamed out rather than held whole (and its chunks written on several threads),
//! and a level given as a dictionary has each of its labels encoded once, then copied to each
//! line.

use std::ops::Range;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, LargeStringArray, StringArray, StringViewArray, UInt32Array,
};
use datafusion::arrow::datatypes::{DataType, UInt32Type};
use datafusion::error::{DataFusionError, Result};

use super::Levels;

/// The lines of the chunks a large file is written in (a few MB).
const ROWS_PER_CHUNK: usize = 1 << 16;

/// A field holds a line break.
struct LineBreak;

/// Appends `field` as the file holds it.
fn encode_field(field: &str, out: &mut Vec<u8>) -> std::result::Result<(), LineBreak> {
    let mut quote = field.is_empty() || field.starts_with('\u{feff}');
    for &b in field.as_bytes() {
        match b {
            b';' | b'"' => quote = true,
            b'\n' | b'\r' => return Err(LineBreak),
            _ => {}
        }
    }
    if !quote {
        out.extend_from_slice(field.as_bytes());
        return Ok(());
    }
    out.push(b'"');
    for piece in field.split_inclusive('"') {
        out.extend_from_slice(piece.as_bytes());
        if piece.ends_with('"') {
            out.push(b'"');
        }
    }
    out.push(b'"');
    Ok(())
}

/// One level's labels as the writer reads them (NULL is written as the empty label).
enum LevelText<'a> {
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
    Utf8View(&'a StringViewArray),
    /// A dictionary: each row's key, and each value encoded once (`None`: it holds a line
    /// break); a NULL key is written as the empty label.
    Encoded {
        keys: &'a UInt32Array,
        bytes: Vec<u8>,
        encoded: Vec<Option<Range<usize>>>,
    },
}

impl<'a> LevelText<'a> {
    fn new(labels: &'a ArrayRef) -> Result<Self> {
        Ok(match labels.data_type() {
            DataType::Utf8 => Self::Utf8(labels.as_string::<i32>()),
            DataType::LargeUtf8 => Self::LargeUtf8(labels.as_string::<i64>()),
            DataType::Utf8View => Self::Utf8View(labels.as_string_view()),
            DataType::Dictionary(key, _) if key.as_ref() == &DataType::UInt32 => {
                let dictionary = labels.as_dictionary::<UInt32Type>();
                let values = Self::new(dictionary.values())?;
                let mut bytes = Vec::new();
                let encoded = (0..dictionary.values().len())
                    .map(|i| {
                        let start = bytes.len();
                        values
                            .encode(i, &mut bytes)
                            .ok()
                            .map(|()| start..bytes.len())
                    })
                    .collect();
                Self::Encoded {
                    keys: dictionary.keys(),
                    bytes,
                    encoded,
                }
            }
            other => {
                return Err(DataFusionError::Internal(format!(
                    "hierarchy labels must be strings or a dictionary of them, not {other}"
                )));
            }
        })
    }

    /// Appends row `row`'s field.
    fn encode(&self, row: usize, out: &mut Vec<u8>) -> std::result::Result<(), LineBreak> {
        fn text<'s>(valid: bool, value: impl FnOnce() -> &'s str) -> &'s str {
            if valid { value() } else { "" }
        }
        match self {
            Self::Utf8(a) => encode_field(text(a.is_valid(row), || a.value(row)), out),
            Self::LargeUtf8(a) => encode_field(text(a.is_valid(row), || a.value(row)), out),
            Self::Utf8View(a) => encode_field(text(a.is_valid(row), || a.value(row)), out),
            Self::Encoded {
                keys,
                bytes,
                encoded,
            } => {
                if keys.is_null(row) {
                    return encode_field("", out);
                }
                let range = encoded
                    .get(keys.value(row) as usize)
                    .cloned()
                    .flatten()
                    .ok_or(LineBreak)?;
                out.extend_from_slice(&bytes[range]);
                Ok(())
            }
        }
    }
}

/// Writes a hierarchy file's text, all of it or a range of its lines at a time (the ranges
/// independent of each other, so they may be written on threads of their own).
pub struct CsvWriter<'a> {
    column: &'a str,
    levels: Vec<LevelText<'a>>,
    rows: usize,
}

impl<'a> CsvWriter<'a> {
    /// A writer of `levels` (one line per leaf; `column` is named in errors).
    pub fn new(levels: &'a Levels, column: &'a str) -> Result<Self> {
        Ok(Self {
            column,
            levels: levels
                .labels
                .iter()
                .map(LevelText::new)
                .collect::<Result<_>>()?,
            rows: levels.labels.first().map_or(0, |l| l.len()),
        })
    }

    /// The file's lines (one per leaf).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The ranges of lines of a file of `rows` lines written a chunk at a time.
    pub fn chunks(rows: usize) -> impl Iterator<Item = Range<usize>> {
        (0..rows)
            .step_by(ROWS_PER_CHUNK)
            .map(move |start| start..(start + ROWS_PER_CHUNK).min(rows))
    }

    /// The text of lines `rows` (row r is line r + 1).
    pub fn lines(&self, rows: Range<usize>) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(rows.len() * 16 * self.levels.len());
        for row in rows {
            for (level, labels) in self.levels.iter().enumerate() {
                if level > 0 {
                    out.push(b';');
                }
                labels.encode(row, &mut out).map_err(|LineBreak| {
                    DataFusionError::Plan(format!(
                        "a value of column '{}' holds a line break, which a hierarchy file \
                         cannot hold (level {level}); replace it in the data first",
                        self.column
                    ))
                })?;
            }
            out.push(b'\n');
        }
        Ok(out)
    }
}

/// The file's whole text; a value holding a line break (which the format cannot hold) is an
/// error naming `column` (never the value).
pub fn to_csv(levels: &Levels, column: &str) -> Result<String> {
    let writer = CsvWriter::new(levels, column)?;
    let text = writer.lines(0..writer.rows())?;
    String::from_utf8(text).map_err(|e| DataFusionError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generalize::TreeHierarchy;
    use datafusion::arrow::array::DictionaryArray;
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

    /// Levels of `n` leaves: the leaf `v{i}`, a dictionary level of 7 labels (one of them
    /// holding a `;`), the top.
    fn dictionary_levels(n: usize) -> Levels {
        let leaves: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("v{i}")),
        ));
        let keys = UInt32Array::from_iter_values((0..n as u32).map(|i| i % 7));
        let groups: ArrayRef = Arc::new(StringArray::from(vec![
            "g0", "g;1", "g2", "g3", "g4", "g5", "g6",
        ]));
        let group: ArrayRef = Arc::new(DictionaryArray::new(keys, groups));
        let top: ArrayRef = Arc::new(DictionaryArray::new(
            UInt32Array::from(vec![0; n]),
            Arc::new(StringArray::from(vec!["*"])),
        ));
        Levels {
            values: Arc::clone(&leaves),
            counts: vec![1; n],
            labels: vec![leaves, group, top],
            meanings: vec![],
        }
    }

    #[test]
    fn chunks_are_whole_lines_and_make_up_the_file() {
        let levels = dictionary_levels(1000);
        let whole = to_csv(&levels, "c").unwrap();
        // by hand: line 2 is leaf v1 in group g;1 (quoted)
        assert!(
            whole.starts_with("v0;g0;*\nv1;\"g;1\";*\nv2;g2;*\n"),
            "{whole}"
        );
        assert_eq!(whole.lines().count(), 1000);
        let writer = CsvWriter::new(&levels, "c").unwrap();
        let mut joined = Vec::new();
        for start in (0..1000).step_by(7) {
            let chunk = writer.lines(start..(start + 7).min(1000)).unwrap();
            assert_eq!(chunk.last(), Some(&b'\n'));
            joined.extend(chunk);
        }
        assert_eq!(String::from_utf8(joined).unwrap(), whole);
        // the chunks of the job cover the lines once, in order
        let ranges: Vec<Range<usize>> = CsvWriter::chunks(150_000).collect();
        assert_eq!(ranges, vec![0..65_536, 65_536..131_072, 131_072..150_000]);
    }

    #[test]
    fn a_leading_byte_order_mark_is_quoted_and_reads_back() {
        // unquoted, a reader would skip the mark at the start of the file
        let leaves: ArrayRef = Arc::new(StringArray::from(vec!["\u{feff}x", "x"]));
        let top: ArrayRef = Arc::new(StringArray::from(vec!["*"; 2]));
        let levels = Levels {
            values: Arc::clone(&leaves),
            counts: vec![1; 2],
            labels: vec![leaves, top],
            meanings: vec![],
        };
        let text = to_csv(&levels, "c").unwrap();
        assert_eq!(text, "\"\u{feff}x\";*\nx;*\n");
        let tree = TreeHierarchy::from_csv_str("c", "c.csv", &text).unwrap();
        assert_eq!(tree.rows()[0], vec!["\u{feff}x", "*"]);
    }

    #[test]
    fn a_line_break_in_a_dictionary_label_is_refused_only_where_written() {
        let leaves: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let groups: ArrayRef = Arc::new(StringArray::from(vec!["g", "secret\nbreak"]));
        let unused = DictionaryArray::new(UInt32Array::from(vec![0, 0]), Arc::clone(&groups));
        let used = DictionaryArray::new(UInt32Array::from(vec![0, 1]), groups);
        let mut levels = Levels {
            values: Arc::clone(&leaves),
            counts: vec![1; 2],
            labels: vec![Arc::clone(&leaves), Arc::new(unused)],
            meanings: vec![],
        };
        assert_eq!(to_csv(&levels, "c").unwrap(), "a;g\nb;g\n");
        levels.labels[1] = Arc::new(used);
        let e = to_csv(&levels, "c").unwrap_err().to_string();
        assert!(
            e.contains("a value of column 'c' holds a line break") && e.contains("level 1"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
    }
}
