//! Value-tree hierarchies, from ARX's hierarchy CSV format or from inline rows.
//!
//! ## Format
//! One row per leaf: the leaf (level 0) first, then its generalization at each level, ending
//! with the top (usually `*`): `Bachelors;Undergraduate;Higher education;*`. In a file, fields
//! are separated by `;`; a field may be quoted with `"` (a `""` inside stands for one `"`), so
//! it can hold a `;`. Lines may end in LF or CRLF, the last line may lack its line break, a
//! UTF-8 byte order mark is ignored, and empty lines are skipped. Fields are taken as they are
//! (no trimming). Leaves absent from the data are fine: the hierarchy describes the domain.
//!
//! A hierarchy is valid when it follows the rules of [`super::tree_rules`]: it is well
//! formed and not empty, every row has as many fields as the first, no label above the leaf
//! is empty, no leaf appears twice, each value of a level has one parent at the next level
//! (the rows form a tree), and the last level is a single value. Errors name the file (or
//! `inline rows`), the line (or row), the level where there is one, and the rule
//! (`[rule: one parent]`); they never quote leaf values. An empty leaf is the empty string, a
//! value of its own (write it `""` for clarity); NULL is never a leaf: it stays NULL.
//!
//! ## Encoding
//! The tree is encoded once: leaf value → leaf id (a hash map, and for leaves that are decimal
//! integers an integer table, so integer columns match without formatting), and per level an
//! array of its distinct labels, the label id of each leaf and the number of leaves under each
//! label. Recoding a batch looks up each row's value (`&str` or integer, no allocation) or, for
//! dictionary input, each dictionary value once; then gathers the labels with an integer
//! `take`.
//!
//! Input: strings (Utf8, LargeUtf8, Utf8View), integers (matched by their decimal form, so
//! the ARX age hierarchy fits an Int64 age column), and floats, decimals, dates, timestamps and
//! booleans (matched by their text as `CAST(x AS VARCHAR)` prints it: `2.5`, `2024-03-15`,
//! `true`), and dictionaries of them. Output: Utf8View (the labels of the file). NULL stays NULL. A non-null value that is
//! not a leaf is an error that says how many distinct values are missing, never which.

use std::path::Path;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, StringArray, StringArrayType, UInt32Array, new_null_array,
};
use datafusion::arrow::compute::{cast, take};
use datafusion::arrow::datatypes::{DataType, Int64Type, UInt32Type};
use datafusion::error::{DataFusionError, Result};

use hashbrown::{HashMap, HashSet};

use super::common::{
    LABEL_TYPE, inline_bytes_key, inline_view_key, is_integer, is_number, is_string, is_temporal,
    value_type,
};
use super::tree_rules::{Lines, Origin, Rule, check_rows, invalid, split_fields};

const MISSING: u32 = u32::MAX;

/// One level of an encoded tree.
#[derive(Debug, Clone)]
struct TreeLevel {
    /// The distinct labels of the level, in order of first appearance in the rows.
    labels: StringArray,
    /// The same labels as [`LABEL_TYPE`], gathered by the recoding.
    label_views: ArrayRef,
    /// Leaf id → label id.
    of_leaf: Vec<u32>,
    /// Label id → number of leaves under it.
    leaves: Vec<u64>,
}

impl TreeLevel {
    /// A level from its distinct labels (by id) and each leaf's label id.
    fn new(labels: Vec<&str>, of_leaf: Vec<u32>) -> Result<Self> {
        let mut leaves = vec![0u64; labels.len()];
        for &id in &of_leaf {
            leaves[id as usize] += 1;
        }
        let labels = StringArray::from(labels);
        let label_views = cast(&labels, &LABEL_TYPE)?;
        Ok(Self {
            labels,
            label_views,
            of_leaf,
            leaves,
        })
    }
}

/// Integer leaves (those written as canonical decimal integers) → leaf id.
#[derive(Debug, Clone)]
enum IntegerLeaves {
    None,
    Dense { min: i64, ids: Vec<u32> },
    Sparse(HashMap<i64, u32>),
}

/// The words of the error for values missing from a value tree.
pub const MISSING_FROM_TREE: &str = "missing from hierarchy";

/// Values of a column that a value tree has no leaf for, as the recoding found them (in one
/// batch: the caller may count them over the whole column). An error of its own type, so that
/// a caller tells it from others without reading its text.
#[derive(Debug)]
pub struct MissingFromTree {
    pub column: String,
    pub hierarchy: String,
    /// distinct values without a leaf
    pub missing: usize,
    /// where the tree came from
    pub source: String,
    pub leaves: usize,
}

impl std::fmt::Display for MissingFromTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let one = self.missing == 1;
        write!(
            f,
            "column '{}': {} distinct value{} {MISSING_FROM_TREE} '{}' ({}, {} leaves); add {} \
             to the hierarchy (values are not shown, to keep the data private) {}",
            self.column,
            self.missing,
            if one { " is" } else { "s are" },
            self.hierarchy,
            self.source,
            self.leaves,
            if one { "it" } else { "them" },
            Rule::CoversData.tag(),
        )
    }
}

impl std::error::Error for MissingFromTree {}

impl MissingFromTree {
    /// Whether `error` is, at its root, a value missing from a tree.
    pub fn is_cause_of(error: &DataFusionError) -> bool {
        matches!(error.find_root(), DataFusionError::External(inner) if inner.is::<Self>())
    }
}

/// A value-tree hierarchy encoded as dictionaries (see the module documentation).
#[derive(Debug, Clone)]
pub struct TreeHierarchy {
    source: String,
    leaf_ids: HashMap<String, u32>,
    /// the leaves of at most 12 bytes by [`inline_bytes_key`]: Utf8View rows are looked up
    /// by their view, without reading or comparing bytes
    inline_leaf_ids: HashMap<u128, u32>,
    integer_leaves: IntegerLeaves,
    levels: Vec<TreeLevel>,
}

impl TreeHierarchy {
    /// Reads an ARX hierarchy CSV file from a local path. `name` names the hierarchy in error
    /// messages. (Object-store URLs are read by the engine crate, which has the stores, and
    /// parsed by [`TreeHierarchy::from_csv_str`].)
    pub fn from_csv_file(name: &str, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| {
            DataFusionError::Plan(format!(
                "cannot read hierarchy '{name}': cannot read {}: {e}",
                path.display()
            ))
        })?;
        Self::from_csv_str(name, &path.display().to_string(), &text)
    }

    /// Parses ARX hierarchy CSV text; `file` names it in error messages.
    pub fn from_csv_str(name: &str, file: &str, text: &str) -> Result<Self> {
        let origin = Origin::File(file);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut rows = Vec::new();
        let mut lines = Vec::new();
        for (i, line) in text.split('\n').enumerate() {
            let line = line.strip_suffix('\r').unwrap_or(line);
            if line.is_empty() {
                continue;
            }
            let fields = split_fields(line).map_err(|why| {
                invalid(
                    name,
                    Rule::WellFormed,
                    format!("{}: {why}", origin.line(i + 1)),
                )
            })?;
            rows.push(fields);
            lines.push(i + 1);
        }
        Self::build(name, origin, &rows, Lines::Listed(&lines))
    }

    /// A hierarchy from inline rows (leaf first, top last), as written in a policy file.
    pub fn from_rows<S: AsRef<str>>(name: &str, rows: &[Vec<S>]) -> Result<Self> {
        Self::build(name, Origin::Inline, rows, Lines::Consecutive)
    }

    fn build<S: AsRef<str>>(
        name: &str,
        origin: Origin,
        rows: &[Vec<S>],
        lines: Lines,
    ) -> Result<Self> {
        let (height, interned) = check_rows(name, origin, rows, lines)?;
        // level 0: the leaves in row order (unique: leaf id = row)
        let leaves: Vec<&str> = rows.iter().map(|r| r[0].as_ref()).collect();
        let mut levels = Vec::with_capacity(height);
        levels.push(TreeLevel::new(leaves, (0..rows.len() as u32).collect())?);
        for level in interned {
            levels.push(TreeLevel::new(level.labels, level.of_row)?);
        }
        let leaf_ids: HashMap<String, u32> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (r[0].as_ref().to_string(), i as u32))
            .collect();
        let inline_leaf_ids = leaf_ids
            .iter()
            .filter_map(|(leaf, &id)| Some((inline_bytes_key(leaf.as_bytes())?, id)))
            .collect();
        let integer_leaves = integer_leaves(rows);
        Ok(Self {
            source: origin.whole(),
            leaf_ids,
            inline_leaf_ids,
            integer_leaves,
            levels,
        })
    }

    /// The file (or `inline rows`) the hierarchy was read from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The rows the hierarchy was built from, one per leaf in order (leaf first, top last).
    pub fn rows(&self) -> Vec<Vec<String>> {
        let leaves = self.levels.first().map_or(0, |level| level.of_leaf.len());
        (0..leaves)
            .map(|leaf| {
                self.levels
                    .iter()
                    .map(|level| level.labels.value(level.of_leaf[leaf] as usize).to_string())
                    .collect()
            })
            .collect()
    }

    /// Levels including level 0 (the fields per row).
    pub fn height(&self) -> usize {
        self.levels.len()
    }

    /// The leaves |D|: the rows of the file, including values absent from the data.
    pub fn leaf_count(&self) -> usize {
        self.levels[0].of_leaf.len()
    }

    /// The distinct labels of `level`, in order of first appearance (label id = index).
    /// Level 0's labels are the leaves in row order (label id = leaf id).
    pub fn labels(&self, level: usize) -> Option<&StringArray> {
        self.levels.get(level).map(|l| &l.labels)
    }

    /// Leaf id → label id at `level`.
    pub fn label_ids(&self, level: usize) -> Option<&[u32]> {
        self.levels.get(level).map(|l| l.of_leaf.as_slice())
    }

    /// Label id → number of leaves under that label at `level` (the `leaves(u)` of the Loss
    /// metric).
    pub fn leaves_under(&self, level: usize) -> Option<&[u64]> {
        self.levels.get(level).map(|l| l.leaves.as_slice())
    }

    /// The leaf id of each row of `values` (NULL stays NULL). A non-null value that is not a
    /// leaf is an error naming `column` and the number of such distinct values.
    pub fn leaf_ids(
        &self,
        hierarchy: &str,
        column: &str,
        values: &ArrayRef,
    ) -> Result<UInt32Array> {
        self.lookup(hierarchy, column, values, None)
    }

    /// How many distinct non-null values of `values` are not leaves of the hierarchy.
    pub fn missing_count(&self, values: &ArrayRef) -> Result<usize> {
        let ids = self.ids(values, None)?;
        if !ids.values().contains(&MISSING) {
            return Ok(0);
        }
        self.count_missing(values, &ids)
    }

    /// Label id at `level` of each row of `values` (level checked by the caller).
    pub fn label_ids_of(
        &self,
        hierarchy: &str,
        column: &str,
        values: &ArrayRef,
        level: usize,
    ) -> Result<UInt32Array> {
        self.lookup(hierarchy, column, values, Some(&self.levels[level].of_leaf))
    }

    /// Recodes `values` at `level` (checked by the caller): label ids, then `take`.
    pub fn generalize(
        &self,
        hierarchy: &str,
        column: &str,
        values: &ArrayRef,
        level: usize,
    ) -> Result<ArrayRef> {
        if values.logical_null_count() == values.len() {
            return Ok(new_null_array(&LABEL_TYPE, values.len()));
        }
        let ids = self.label_ids_of(hierarchy, column, values, level)?;
        Ok(take(&self.levels[level].label_views, &ids, None)?)
    }

    fn lookup(
        &self,
        hierarchy: &str,
        column: &str,
        values: &ArrayRef,
        table: Option<&[u32]>,
    ) -> Result<UInt32Array> {
        let ids = self.ids(values, table)?;
        if ids.null_count() < ids.len() && ids.values().contains(&MISSING) {
            let missing = self.count_missing(values, &ids)?;
            if missing > 0 {
                return Err(DataFusionError::External(Box::new(MissingFromTree {
                    column: column.to_string(),
                    hierarchy: hierarchy.to_string(),
                    missing,
                    source: self.source.clone(),
                    leaves: self.leaf_count(),
                })));
            }
        }
        Ok(ids)
    }

    /// Distinct non-null values whose id is MISSING (only on the error path).
    fn count_missing(&self, values: &ArrayRef, ids: &UInt32Array) -> Result<usize> {
        let text = cast(values, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut seen: HashSet<&str> = HashSet::new();
        for (i, &id) in ids.values().iter().enumerate() {
            if id == MISSING && ids.is_valid(i) && text.is_valid(i) {
                seen.insert(text.value(i));
            }
        }
        Ok(seen.len())
    }

    /// Ids per row through `table` (leaf id → id; identity when `None`), MISSING for values
    /// that are not leaves, nulls where the input is null.
    fn ids(&self, values: &ArrayRef, table: Option<&[u32]>) -> Result<UInt32Array> {
        let map = |leaf: u32| match table {
            Some(t) => t[leaf as usize],
            None => leaf,
        };
        if let Some(dictionary) = values.as_any_dictionary_opt() {
            // each dictionary value once, then one integer gather per row
            let per_value = self.ids(dictionary.values(), table)?;
            return Ok(take(&per_value, dictionary.keys(), None)?
                .as_primitive::<UInt32Type>()
                .clone());
        }
        let nulls = values.logical_nulls();
        let ids: Vec<u32> = match values.data_type() {
            DataType::Utf8 => self.string_ids(values.as_string::<i32>(), map),
            DataType::LargeUtf8 => self.string_ids(values.as_string::<i64>(), map),
            DataType::Utf8View => {
                let strings = values.as_string_view();
                strings
                    .views()
                    .iter()
                    .enumerate()
                    .map(|(i, &view)| {
                        if strings.is_null(i) {
                            return 0;
                        }
                        let leaf = match inline_view_key(view) {
                            Some(key) => self.inline_leaf_ids.get(&key),
                            None => self.leaf_ids.get(strings.value(i)),
                        };
                        leaf.map_or(MISSING, |&leaf| map(leaf))
                    })
                    .collect()
            }
            DataType::Null => vec![0; values.len()],
            DataType::Int64 => self.integer_ids(values.as_primitive::<Int64Type>().values(), map),
            dt if dt.is_integer() => {
                let wide = cast(values, &DataType::Int64)?;
                // a u64 beyond i64 becomes NULL in the cast: it cannot be a leaf of this table
                let wide_ids = self.integer_ids(wide.as_primitive::<Int64Type>().values(), map);
                wide_ids
                    .into_iter()
                    .enumerate()
                    .map(|(i, id)| if wide.is_null(i) { MISSING } else { id })
                    .collect()
            }
            // matched by their text, as `CAST(x AS VARCHAR)` prints them (and the hierarchy
            // builders write them)
            dt if matches!(dt, DataType::Boolean) || is_number(dt) || is_temporal(dt) => {
                return self.ids(&cast(values, &DataType::Utf8)?, table);
            }
            other => {
                return Err(DataFusionError::Plan(format!(
                    "a tree hierarchy needs a string, numeric, temporal or boolean column, not \
                     {other}"
                )));
            }
        };
        Ok(UInt32Array::new(ids.into(), nulls))
    }

    fn string_ids<'a, S: StringArrayType<'a>>(
        &self,
        strings: S,
        map: impl Fn(u32) -> u32,
    ) -> Vec<u32> {
        strings
            .iter()
            .map(|v| match v {
                Some(s) => self.leaf_ids.get(s).map_or(MISSING, |&leaf| map(leaf)),
                None => 0,
            })
            .collect()
    }

    fn integer_ids(&self, values: &[i64], map: impl Fn(u32) -> u32) -> Vec<u32> {
        match &self.integer_leaves {
            IntegerLeaves::None => vec![MISSING; values.len()],
            IntegerLeaves::Dense { min, ids } => values
                .iter()
                .map(|&v| {
                    let slot = v.wrapping_sub(*min) as u64;
                    match ids.get(slot as usize) {
                        Some(&leaf) if leaf != MISSING => map(leaf),
                        _ => MISSING,
                    }
                })
                .collect(),
            IntegerLeaves::Sparse(ids) => values
                .iter()
                .map(|v| ids.get(v).map_or(MISSING, |&leaf| map(leaf)))
                .collect(),
        }
    }
}

/// Leaves written as canonical decimal integers (`39`, `-5`; not `007` or `+5`).
fn integer_leaves<S: AsRef<str>>(rows: &[Vec<S>]) -> IntegerLeaves {
    let ints: Vec<(i64, u32)> = rows
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let leaf = r[0].as_ref();
            let v: i64 = leaf.parse().ok()?;
            (v.to_string() == leaf).then_some((v, i as u32))
        })
        .collect();
    let (Some(min), Some(max)) = (
        ints.iter().map(|p| p.0).min(),
        ints.iter().map(|p| p.0).max(),
    ) else {
        return IntegerLeaves::None;
    };
    let span = (max as i128 - min as i128) as u128;
    if span < 4 * ints.len() as u128 + 1024 {
        let mut ids = vec![MISSING; span as usize + 1];
        for (v, id) in ints {
            ids[(v - min) as usize] = id;
        }
        IntegerLeaves::Dense { min, ids }
    } else {
        IntegerLeaves::Sparse(ints.into_iter().collect())
    }
}

/// Whether a tree hierarchy accepts a column of this type.
pub fn accepts(data_type: &DataType) -> bool {
    is_string(data_type)
        || is_integer(data_type)
        || is_number(data_type)
        || is_temporal(data_type)
        || matches!(value_type(data_type), DataType::Boolean | DataType::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{
        BooleanArray, DictionaryArray, Int32Array, Int64Array, StringViewArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::Int8Type;
    use std::sync::Arc;

    const SEX: &str = "Male;*\r\nFemale;*";

    fn strings(a: &ArrayRef) -> Vec<Option<&str>> {
        assert_eq!(a.data_type(), &DataType::Utf8View);
        a.as_string_view().iter().collect()
    }

    #[test]
    fn parses_crlf_without_final_newline() {
        let t = TreeHierarchy::from_csv_str("sex", "sex.csv", SEX).unwrap();
        assert_eq!(t.height(), 2);
        assert_eq!(t.leaf_count(), 2);
        let v: ArrayRef = Arc::new(StringViewArray::from(vec![
            Some("Female"),
            None,
            Some("Male"),
        ]));
        assert_eq!(
            strings(&t.generalize("sex", "sex", &v, 0).unwrap()),
            vec![Some("Female"), None, Some("Male")]
        );
        assert_eq!(
            strings(&t.generalize("sex", "sex", &v, 1).unwrap()),
            vec![Some("*"), None, Some("*")]
        );
    }

    #[test]
    fn quoted_fields_bom_and_blank_lines() {
        let text = "\u{feff}\"a;b\";\"say \"\"hi\"\"\";*\n\nc;x;*\n";
        let t = TreeHierarchy::from_csv_str("q", "q.csv", text).unwrap();
        assert_eq!(t.leaf_count(), 2);
        let v: ArrayRef = Arc::new(StringArray::from(vec!["a;b", "c"]));
        assert_eq!(
            strings(&t.generalize("q", "c", &v, 1).unwrap()),
            vec![Some("say \"hi\""), Some("x")]
        );
        let e = TreeHierarchy::from_csv_str("q", "q.csv", "\"open;*\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("q.csv, line 1: a quoted field is not closed"),
            "{e}"
        );
    }

    #[test]
    fn every_input_type() {
        // a small tree: 1..4 → low, 5..6 → high; by hand 3 → low, 6 → high
        let rows = vec![
            vec!["1", "low", "*"],
            vec!["2", "low", "*"],
            vec!["3", "low", "*"],
            vec!["4", "low", "*"],
            vec!["5", "high", "*"],
            vec!["6", "high", "*"],
        ];
        let t = TreeHierarchy::from_rows("n", &rows).unwrap();
        let want = vec![Some("low"), Some("high"), None];
        let i64s: ArrayRef = Arc::new(Int64Array::from(vec![Some(3), Some(6), None]));
        let i32s: ArrayRef = Arc::new(Int32Array::from(vec![Some(3), Some(6), None]));
        let u64s: ArrayRef = Arc::new(UInt64Array::from(vec![Some(3), Some(6), None]));
        let text: ArrayRef = Arc::new(StringArray::from(vec![Some("3"), Some("6"), None]));
        let dict: ArrayRef = Arc::new(
            vec![Some("3"), Some("6"), None]
                .into_iter()
                .collect::<DictionaryArray<Int8Type>>(),
        );
        for v in [i64s, i32s, u64s, text, dict] {
            assert_eq!(strings(&t.generalize("n", "c", &v, 1).unwrap()), want);
        }
        assert_eq!(t.leaves_under(1), Some(&[4u64, 2][..]));
        let b = TreeHierarchy::from_rows("b", &[vec!["true", "*"], vec!["false", "*"]]).unwrap();
        let bools: ArrayRef = Arc::new(BooleanArray::from(vec![Some(false), None]));
        assert_eq!(
            strings(&b.generalize("b", "c", &bools, 0).unwrap()),
            vec![Some("false"), None]
        );
    }

    #[test]
    fn unused_dictionary_values_are_not_missing() {
        let t = TreeHierarchy::from_csv_str("sex", "sex.csv", SEX).unwrap();
        let values: ArrayRef = Arc::new(StringArray::from(vec!["Male", "Other"]));
        let keys = datafusion::arrow::array::Int32Array::from(vec![0, 0]);
        let dict: ArrayRef = Arc::new(DictionaryArray::try_new(keys, values).unwrap());
        assert_eq!(
            strings(&t.generalize("sex", "sex", &dict, 1).unwrap()),
            vec![Some("*"), Some("*")]
        );
    }

    #[test]
    fn missing_values_are_counted_not_shown() {
        let t = TreeHierarchy::from_csv_str("sex", "sex.csv", SEX).unwrap();
        let v: ArrayRef = Arc::new(StringArray::from(vec![
            Some("Male"),
            Some("secret-a"),
            Some("secret-b"),
            Some("secret-a"),
            None,
        ]));
        let e = t
            .generalize("sex", "gender", &v, 1)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("column 'gender': 2 distinct values are missing from hierarchy 'sex'"),
            "{e}"
        );
        assert!(!e.contains("secret"), "{e}");
        assert_eq!(t.missing_count(&v).unwrap(), 2);
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![1, 2]));
        assert_eq!(t.missing_count(&ints).unwrap(), 2);
    }

    #[test]
    fn bad_files() {
        let e = TreeHierarchy::from_csv_str("x", "x.csv", "\r\n\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.csv is empty"), "{e}");
        let e = TreeHierarchy::from_csv_str("x", "x.csv", "a;g;*\nb;g\nc;h;*")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv, line 2: 2 fields, but line 1 has 3 (ragged hierarchy)"),
            "{e}"
        );
        // b's parent g at level 1 has parents X and Y at level 2
        let e = TreeHierarchy::from_csv_str("x", "x.csv", "a;g;X;*\nb;g;Y;*")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv, line 2, level 1: a value has two different parents at level 2 (another at line 1)"),
            "{e}"
        );
        let e = TreeHierarchy::from_csv_str("x", "x.csv", "a;g;*\n\na;g;*")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv, line 3: duplicate leaf (the same value as line 1)"),
            "{e}"
        );
        let e = TreeHierarchy::from_rows("x", &[vec!["a", "g"], vec!["b", "h"]])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("inline rows, row 2: the last level (1) differs from row 1's; it must be a single value such as '*' on every row [rule: single top]"),
            "{e}"
        );
        let e = TreeHierarchy::from_rows("x", &[vec!["a", "*"], vec!["b"]])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("inline rows, row 2: 1 fields, but row 1 has 2"),
            "{e}"
        );
        let e = TreeHierarchy::from_rows::<&str>("x", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("inline rows is empty"), "{e}");
        let e = TreeHierarchy::from_csv_file("x", "/nonexistent/h.csv")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot read hierarchy 'x': cannot read /nonexistent/h.csv"),
            "{e}"
        );
    }
}
