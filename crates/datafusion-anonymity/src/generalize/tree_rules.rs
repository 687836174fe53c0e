//! The rules a value-tree hierarchy (an ARX hierarchy CSV file, or inline rows) must follow,
//! in one place. The structural rules are checked on the hierarchy's labels level by level,
//! whoever holds them:
//! - [`check_rows`]: rows of fields, as the file parser of [`super::tree`] splits a file (for
//!   a policy, `--hierarchy` or `anon hierarchy check`), or a policy's inline rows;
//! - [`check_arrays`]: Arrow label arrays, one line per row, as `anon hierarchy build` holds
//!   the file it is about to write (so that a built file is checked without being parsed
//!   back).
//!
//! Both run the same checks: `check_shape` (not empty, same levels), then the labels of each
//! level above the leaf interned by their text (each distinct label once: a dictionary's
//! values once, then its keys) and [`Rule::Labelled`], [`Rule::UniqueLeaves`],
//! [`Rule::OneParent`] and [`Rule::SingleTop`] on the label ids. Nothing is allocated per
//! field: fields are borrowed from the text or the arrays, and the leaves are checked unique
//! by sorting their 64-bit hashes (the leaves of an equal hash are then compared as text, so a
//! hash collision is never taken for a duplicate). [`Rule::CoversData`] is checked against a
//! column's distinct values ([`super::Hierarchy::validate_values`]). Every error names the file
//! (or `inline rows`), the line (or row) when there is one, and the rule, and never quotes a
//! value.

use std::borrow::Cow;
use std::hash::BuildHasher;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArrayType};
use datafusion::arrow::datatypes::{DataType, UInt32Type};
use datafusion::error::{DataFusionError, Result};
use hashbrown::{HashMap, HashSet};

use crate::packing::radix::radix_sort;

/// A rule of value-tree hierarchies; [`Rule::name`] is how errors and the documentation name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// Fields are `;`-separated, a quoted field is closed and followed by `;` or the end.
    WellFormed,
    /// At least one row.
    NotEmpty,
    /// Every row has as many fields (levels) as the first.
    SameLevels,
    /// No field above the leaf is empty: an empty label cannot be told from a missing value
    /// once published (a CSV reader reads it as NULL).
    Labelled,
    /// No leaf appears twice.
    UniqueLeaves,
    /// Every level is a function of the level below: no value has two parents.
    OneParent,
    /// The last level is a single value (such as `*`).
    SingleTop,
    /// Every non-null value of the column is a leaf.
    CoversData,
}

impl Rule {
    /// Every rule, in the order they are checked.
    pub const ALL: [Rule; 8] = [
        Rule::WellFormed,
        Rule::NotEmpty,
        Rule::SameLevels,
        Rule::Labelled,
        Rule::UniqueLeaves,
        Rule::OneParent,
        Rule::SingleTop,
        Rule::CoversData,
    ];

    /// The rule's name in errors and in the documentation.
    pub fn name(self) -> &'static str {
        match self {
            Rule::WellFormed => "well-formed",
            Rule::NotEmpty => "not empty",
            Rule::SameLevels => "same levels",
            Rule::Labelled => "labelled",
            Rule::UniqueLeaves => "unique leaves",
            Rule::OneParent => "one parent",
            Rule::SingleTop => "single top",
            Rule::CoversData => "covers the data",
        }
    }

    /// `[rule: NAME]`, the end of every error of this rule.
    pub fn tag(self) -> String {
        format!("[rule: {}]", self.name())
    }
}

/// Where rows came from, for error messages.
#[derive(Clone, Copy)]
pub enum Origin<'a> {
    /// A file (its name as messages show it).
    File(&'a str),
    /// A policy's inline rows.
    Inline,
}

impl Origin<'_> {
    pub(super) fn line(&self, n: usize) -> String {
        match self {
            Origin::File(f) => format!("{f}, line {n}"),
            Origin::Inline => format!("inline rows, row {n}"),
        }
    }

    pub(super) fn whole(&self) -> String {
        match self {
            Origin::File(f) => f.to_string(),
            Origin::Inline => "inline rows".to_string(),
        }
    }

    pub(super) fn unit(&self) -> &'static str {
        match self {
            Origin::File(_) => "line",
            Origin::Inline => "row",
        }
    }
}

/// The line (or inline row) of each row, for error messages.
#[derive(Clone, Copy)]
pub enum Lines<'a> {
    /// Row r is on line `lines[r]` (a parsed file, whose blank lines are skipped).
    Listed(&'a [usize]),
    /// Row r is on line r + 1 (inline rows; a file written one line per row).
    Consecutive,
}

impl Lines<'_> {
    fn of(self, row: usize) -> usize {
        match self {
            Lines::Listed(lines) => lines[row],
            Lines::Consecutive => row + 1,
        }
    }
}

/// An error of hierarchy `name` breaking `rule`.
pub(super) fn invalid(name: &str, rule: Rule, message: String) -> DataFusionError {
    DataFusionError::Plan(format!(
        "invalid hierarchy '{name}': {message} {}",
        rule.tag()
    ))
}

/// Splits one line into `;`-separated fields, honouring `"` quoting ([`Rule::WellFormed`]): a
/// field that starts with `"` runs to the next `"` not doubled (`""` stands for one `"`) and
/// must be followed by `;` or the line's end. Fields are borrowed from the line, but for a
/// quoted field holding `""`.
pub(super) fn split_fields(line: &str) -> std::result::Result<Vec<Cow<'_, str>>, &'static str> {
    let bytes = line.as_bytes();
    let mut fields = Vec::new();
    // `;` and `"` are ASCII: every index found below is a character boundary
    let mut at = 0;
    loop {
        if bytes.get(at) != Some(&b'"') {
            match bytes[at..].iter().position(|&b| b == b';') {
                None => {
                    fields.push(Cow::Borrowed(&line[at..]));
                    return Ok(fields);
                }
                Some(n) => {
                    fields.push(Cow::Borrowed(&line[at..at + n]));
                    at += n + 1;
                }
            }
            continue;
        }
        let start = at + 1;
        let mut unescaped: Option<String> = None;
        let mut piece = start;
        let close = loop {
            let Some(n) = bytes[piece..].iter().position(|&b| b == b'"') else {
                return Err("a quoted field is not closed");
            };
            let quote = piece + n;
            if bytes.get(quote + 1) != Some(&b'"') {
                break quote;
            }
            // `""`: one `"` of the value
            unescaped
                .get_or_insert_with(String::new)
                .push_str(&line[piece..=quote]);
            piece = quote + 2;
        };
        let field = match unescaped {
            None => Cow::Borrowed(&line[start..close]),
            Some(mut text) => {
                text.push_str(&line[piece..close]);
                Cow::Owned(text)
            }
        };
        fields.push(field);
        match bytes.get(close + 1) {
            None => return Ok(fields),
            Some(b';') => at = close + 2,
            Some(_) => return Err("a closing quote is not followed by ';'"),
        }
    }
}

/// [`Rule::NotEmpty`] and [`Rule::SameLevels`] over the number of fields of each row; the
/// height (fields per row).
fn check_shape(
    name: &str,
    origin: Origin,
    fields: impl IntoIterator<Item = usize>,
    lines: Lines,
) -> Result<usize> {
    let mut fields = fields.into_iter();
    let Some(height) = fields.next() else {
        return Err(invalid(
            name,
            Rule::NotEmpty,
            format!("{} is empty (no {}s)", origin.whole(), origin.unit()),
        ));
    };
    if height == 0 {
        return Err(invalid(
            name,
            Rule::NotEmpty,
            format!("{} has no fields", origin.line(lines.of(0))),
        ));
    }
    for (row, n) in fields.enumerate().map(|(i, n)| (i + 1, n)) {
        if n != height {
            return Err(invalid(
                name,
                Rule::SameLevels,
                format!(
                    "{}: {n} fields, but {} {} has {height} (ragged hierarchy)",
                    origin.line(lines.of(row)),
                    origin.unit(),
                    lines.of(0)
                ),
            ));
        }
    }
    Ok(height)
}

/// One level's labels interned by their text.
#[derive(Debug, Clone)]
pub struct InternedLevel<'a> {
    /// Each row's label id.
    pub of_row: Vec<u32>,
    /// The distinct labels by id, in order of first appearance. Interned from a dictionary,
    /// they may include labels no row has.
    pub labels: Vec<&'a str>,
}

impl<'a> InternedLevel<'a> {
    /// Rows `0..rows` of `label`.
    fn of(rows: usize, label: impl Fn(usize) -> &'a str) -> Self {
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let mut labels = Vec::new();
        let mut of_row = Vec::with_capacity(rows);
        for row in 0..rows {
            let text = label(row);
            let id = *ids.entry(text).or_insert_with(|| {
                labels.push(text);
                labels.len() as u32 - 1
            });
            of_row.push(id);
        }
        Self { of_row, labels }
    }

    /// Rows `0..rows` of a label array: strings (NULL is written as the empty label), or a
    /// dictionary of them with UInt32 keys (its values interned once, then its keys mapped).
    fn of_array(array: &'a ArrayRef, rows: usize) -> Result<Self> {
        match array.data_type() {
            DataType::Utf8 => Ok(Self::of(rows, |r| text_at(array.as_string::<i32>(), r))),
            DataType::LargeUtf8 => Ok(Self::of(rows, |r| text_at(array.as_string::<i64>(), r))),
            DataType::Utf8View => Ok(Self::of(rows, |r| text_at(array.as_string_view(), r))),
            DataType::Dictionary(key, _) if key.as_ref() == &DataType::UInt32 => {
                let dictionary = array.as_dictionary::<UInt32Type>();
                let values = dictionary.values();
                let mut level = Self::of_array(values, values.len())?;
                let of_value = std::mem::take(&mut level.of_row);
                let keys = dictionary.keys();
                let empty = if keys.null_count() > 0 {
                    match level.labels.iter().position(|l| l.is_empty()) {
                        Some(id) => id as u32,
                        None => {
                            level.labels.push("");
                            level.labels.len() as u32 - 1
                        }
                    }
                } else {
                    0
                };
                level.of_row = (0..rows)
                    .map(|r| {
                        if keys.is_valid(r) {
                            of_value[keys.value(r) as usize]
                        } else {
                            empty
                        }
                    })
                    .collect();
                Ok(level)
            }
            other => Err(DataFusionError::Internal(format!(
                "hierarchy labels must be strings or a dictionary of them with UInt32 keys, \
                 not {other}"
            ))),
        }
    }
}

/// Row `row` of a string array; NULL is the empty string (how a writer writes it).
fn text_at<'a, S: StringArrayType<'a>>(strings: S, row: usize) -> &'a str {
    if strings.is_valid(row) {
        strings.value(row)
    } else {
        ""
    }
}

/// Every rule but [`Rule::WellFormed`] and [`Rule::CoversData`] over rows of fields (leaf
/// first, top last: a parsed file's rows, or inline rows); the height and the interned
/// levels above the leaf (level 1 first).
pub fn check_rows<'a, S: AsRef<str>>(
    name: &str,
    origin: Origin,
    rows: &'a [Vec<S>],
    lines: Lines,
) -> Result<(usize, Vec<InternedLevel<'a>>)> {
    let height = check_shape(name, origin, rows.iter().map(Vec::len), lines)?;
    let levels: Vec<InternedLevel> = (1..height)
        .map(|level| InternedLevel::of(rows.len(), |r| rows[r][level].as_ref()))
        .collect();
    check_tree(
        name,
        origin,
        rows.len(),
        |r| rows[r][0].as_ref(),
        &levels,
        lines,
    )?;
    Ok((height, levels))
}

/// Every rule but [`Rule::WellFormed`] and [`Rule::CoversData`] over label arrays: `leaves`
/// (level 0, strings) and `levels` (level 1 … the top, strings or dictionaries of them with
/// UInt32 keys), row r being line r + 1 of the file `origin` (one line per leaf, the writer of
/// `anon hierarchy build`); NULL counts as the empty label. The interned levels above the
/// leaf.
pub fn check_arrays<'a>(
    name: &str,
    origin: Origin,
    leaves: &'a ArrayRef,
    levels: &'a [ArrayRef],
) -> Result<Vec<InternedLevel<'a>>> {
    let rows = leaves.len();
    // a row has a field at each level whose array reaches it
    if levels.iter().all(|l| l.len() >= rows) {
        check_shape(
            name,
            origin,
            std::iter::repeat_n(1 + levels.len(), rows),
            Lines::Consecutive,
        )?;
    } else {
        let fields = (0..rows).map(|r| 1 + levels.iter().filter(|l| l.len() > r).count());
        check_shape(name, origin, fields, Lines::Consecutive)?;
    }
    let levels: Vec<InternedLevel> = levels
        .iter()
        .map(|level| InternedLevel::of_array(level, rows))
        .collect::<Result<_>>()?;
    let lines = Lines::Consecutive;
    match leaves.data_type() {
        DataType::Utf8 => {
            let s = leaves.as_string::<i32>();
            check_tree(name, origin, rows, |r| text_at(s, r), &levels, lines)?;
        }
        DataType::LargeUtf8 => {
            let s = leaves.as_string::<i64>();
            check_tree(name, origin, rows, |r| text_at(s, r), &levels, lines)?;
        }
        DataType::Utf8View => {
            let s = leaves.as_string_view();
            check_tree(name, origin, rows, |r| text_at(s, r), &levels, lines)?;
        }
        other => {
            return Err(DataFusionError::Internal(format!(
                "hierarchy leaves must be strings, not {other}"
            )));
        }
    }
    Ok(levels)
}

/// [`Rule::Labelled`], [`Rule::UniqueLeaves`], [`Rule::OneParent`] and [`Rule::SingleTop`]:
/// `rows` rows (at least one, their shape checked), `leaf` each row's leaf, `levels` the
/// levels above the leaf interned.
fn check_tree<'a>(
    name: &str,
    origin: Origin,
    rows: usize,
    leaf: impl Fn(usize) -> &'a str,
    levels: &[InternedLevel],
    lines: Lines,
) -> Result<()> {
    check_labelled(name, origin, levels, lines)?;
    let hasher = hashbrown::DefaultHashBuilder::default();
    check_unique_leaves(name, origin, rows, &leaf, lines, |s| hasher.hash_one(s))?;
    // level 0 is a function of level 1 once its leaves are unique
    for (i, pair) in levels.windows(2).enumerate() {
        check_one_parent(name, origin, i + 1, &pair[0], &pair[1], lines)?;
    }
    check_single_top(name, origin, rows, &leaf, levels, lines)
}

/// [`Rule::Labelled`]: the first row (then level) whose label above the leaf is empty.
fn check_labelled(
    name: &str,
    origin: Origin,
    levels: &[InternedLevel],
    lines: Lines,
) -> Result<()> {
    let mut first: Option<(usize, usize)> = None;
    for (i, level) in levels.iter().enumerate() {
        let Some(empty) = level.labels.iter().position(|l| l.is_empty()) else {
            continue;
        };
        if let Some(row) = level.of_row.iter().position(|&id| id as usize == empty)
            && first.is_none_or(|(r, _)| row < r)
        {
            first = Some((row, i + 1));
        }
    }
    match first {
        None => Ok(()),
        Some((row, level)) => Err(invalid(
            name,
            Rule::Labelled,
            format!(
                "{}, level {level}: the label is empty; give every level above the leaf a \
                 visible label (an empty one reads back as a missing value)",
                origin.line(lines.of(row)),
            ),
        )),
    }
}

/// [`Rule::UniqueLeaves`]: the leaves' hashes sorted, and the leaves of a hash seen twice
/// compared as text in row order: the first row whose leaf an earlier row has is named.
fn check_unique_leaves<'a>(
    name: &str,
    origin: Origin,
    rows: usize,
    leaf: impl Fn(usize) -> &'a str,
    lines: Lines,
    hash: impl Fn(&str) -> u64,
) -> Result<()> {
    let mut hashes: Vec<u64> = (0..rows).map(|r| hash(leaf(r))).collect();
    radix_sort(&mut hashes, 0, u64::BITS);
    let repeated: HashSet<u64> = hashes
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect();
    drop(hashes);
    if repeated.is_empty() {
        return Ok(());
    }
    let mut first_row: HashMap<&str, usize> = HashMap::new();
    for row in 0..rows {
        let text = leaf(row);
        if !repeated.contains(&hash(text)) {
            continue;
        }
        if let Some(&first) = first_row.get(text) {
            return Err(invalid(
                name,
                Rule::UniqueLeaves,
                format!(
                    "{}: duplicate leaf (the same value as {} {})",
                    origin.line(lines.of(row)),
                    origin.unit(),
                    lines.of(first)
                ),
            ));
        }
        first_row.insert(text, row);
    }
    Ok(())
}

/// [`Rule::OneParent`] between `level` (`child`) and `level + 1` (`parent`).
fn check_one_parent(
    name: &str,
    origin: Origin,
    level: usize,
    child: &InternedLevel,
    parent: &InternedLevel,
    lines: Lines,
) -> Result<()> {
    const NONE: u32 = u32::MAX;
    let mut parent_of = vec![NONE; child.labels.len()];
    for (row, (&c, &p)) in child.of_row.iter().zip(&parent.of_row).enumerate() {
        let known = &mut parent_of[c as usize];
        if *known == NONE {
            *known = p;
        } else if *known != p {
            // the first row of the same value (only on the error path)
            let other = child.of_row.iter().position(|&id| id == c).unwrap_or(row);
            return Err(invalid(
                name,
                Rule::OneParent,
                format!(
                    "{}, level {level}: a value has two different parents at level {} \
                     (another at {} {})",
                    origin.line(lines.of(row)),
                    level + 1,
                    origin.unit(),
                    lines.of(other)
                ),
            ));
        }
    }
    Ok(())
}

/// [`Rule::SingleTop`]: the first row whose label at the last level differs from the first
/// row's is named (the last level is the leaf when there is no other).
fn check_single_top<'a>(
    name: &str,
    origin: Origin,
    rows: usize,
    leaf: impl Fn(usize) -> &'a str,
    levels: &[InternedLevel],
    lines: Lines,
) -> Result<()> {
    let differing = match levels.last() {
        Some(top) => top.of_row.iter().position(|&id| id != top.of_row[0]),
        None => (1..rows).find(|&r| leaf(r) != leaf(0)),
    };
    let Some(row) = differing else {
        return Ok(());
    };
    Err(invalid(
        name,
        Rule::SingleTop,
        format!(
            "{}: the last level ({}) differs from {} {}'s; it must be a single value such as \
             '*' on every {}",
            origin.line(lines.of(row)),
            levels.len(),
            origin.unit(),
            lines.of(0),
            origin.unit(),
        ),
    ))
}

#[cfg(test)]
#[path = "tree_rules_tests.rs"]
mod tests;
