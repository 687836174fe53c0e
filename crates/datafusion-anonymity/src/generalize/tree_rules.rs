//! The rules a value-tree hierarchy (an ARX hierarchy CSV file, or inline rows) must follow,
//! in one place: the file parser of [`super::tree`] checks the structural ones when a
//! hierarchy is read (by a policy, `--hierarchy`, or `anon hierarchy check`), and
//! [`Rule::CoversData`] is checked against a column's distinct values
//! ([`super::Hierarchy::validate_values`]). Every error names the file (or `inline rows`), the
//! line (or row) when there is one, and the rule, and never quotes a value.

use datafusion::error::DataFusionError;

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
pub(super) enum Origin<'a> {
    File(&'a str),
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

/// An error of hierarchy `name` breaking `rule`.
pub(super) fn invalid(name: &str, rule: Rule, message: String) -> DataFusionError {
    DataFusionError::Plan(format!(
        "invalid hierarchy '{name}': {message} {}",
        rule.tag()
    ))
}

/// Splits one line into `;`-separated fields, honouring `"` quoting ([`Rule::WellFormed`]).
pub(super) fn split_fields(line: &str) -> std::result::Result<Vec<String>, &'static str> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err("a quoted field is not closed"),
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(';') => fields.push(field),
                Some(_) => return Err("a closing quote is not followed by ';'"),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(';') => break,
                    Some(c) => field.push(c),
                }
            }
            fields.push(field);
        }
    }
}

/// [`Rule::NotEmpty`], [`Rule::SameLevels`] and [`Rule::Labelled`] over the rows (`lines`:
/// each row's line); the height (fields per row).
pub(super) fn check_shape(
    name: &str,
    origin: Origin,
    rows: &[Vec<String>],
    lines: &[usize],
) -> Result<usize, DataFusionError> {
    let Some(first) = rows.first() else {
        return Err(invalid(
            name,
            Rule::NotEmpty,
            format!("{} is empty (no {}s)", origin.whole(), origin.unit()),
        ));
    };
    let height = first.len();
    if height == 0 {
        return Err(invalid(
            name,
            Rule::NotEmpty,
            format!("{} has no fields", origin.line(lines[0])),
        ));
    }
    for (row, &line) in rows.iter().zip(lines) {
        if row.len() != height {
            return Err(invalid(
                name,
                Rule::SameLevels,
                format!(
                    "{}: {} fields, but {} {} has {height} (ragged hierarchy)",
                    origin.line(line),
                    row.len(),
                    origin.unit(),
                    lines[0]
                ),
            ));
        }
        if let Some(level) = row.iter().skip(1).position(String::is_empty) {
            return Err(invalid(
                name,
                Rule::Labelled,
                format!(
                    "{}, level {}: the label is empty; give every level above the leaf a \
                     visible label (an empty one reads back as a missing value)",
                    origin.line(line),
                    level + 1
                ),
            ));
        }
    }
    Ok(height)
}

/// [`Rule::UniqueLeaves`]: `leaf_of_row` is each row's leaf id (rows with the same leaf share
/// one), `distinct` the number of ids.
pub(super) fn check_unique_leaves(
    name: &str,
    origin: Origin,
    leaf_of_row: &[u32],
    distinct: usize,
    lines: &[usize],
) -> Result<(), DataFusionError> {
    if distinct == leaf_of_row.len() {
        return Ok(());
    }
    let mut first_line: Vec<Option<usize>> = vec![None; distinct];
    for (&leaf, &line) in leaf_of_row.iter().zip(lines) {
        if let Some(first) = first_line[leaf as usize] {
            return Err(invalid(
                name,
                Rule::UniqueLeaves,
                format!(
                    "{}: duplicate leaf (the same value as {} {first})",
                    origin.line(line),
                    origin.unit()
                ),
            ));
        }
        first_line[leaf as usize] = Some(line);
    }
    Ok(())
}

/// [`Rule::OneParent`] between `level` and `level + 1`, given each row's label id at both
/// (`labels`: the number of labels of `level`).
pub(super) fn check_one_parent(
    name: &str,
    origin: Origin,
    level: usize,
    (child, labels): (&[u32], usize),
    parent: &[u32],
    lines: &[usize],
) -> Result<(), DataFusionError> {
    let mut parent_of: Vec<Option<(u32, usize)>> = vec![None; labels];
    for (row, &line) in lines.iter().enumerate() {
        let (c, p) = (child[row], parent[row]);
        match parent_of[c as usize] {
            None => parent_of[c as usize] = Some((p, line)),
            Some((q, _)) if q == p => {}
            Some((_, other)) => {
                return Err(invalid(
                    name,
                    Rule::OneParent,
                    format!(
                        "{}, level {level}: a value has two different parents at level {} \
                         (another at {} {other})",
                        origin.line(line),
                        level + 1,
                        origin.unit()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// [`Rule::SingleTop`]: `top` is each row's label id at the last level (`height - 1`);
/// the first row whose top differs from the first row's is named.
pub(super) fn check_single_top(
    name: &str,
    origin: Origin,
    height: usize,
    top: &[u32],
    lines: &[usize],
) -> Result<(), DataFusionError> {
    let Some(row) = top.iter().position(|&t| t != top[0]) else {
        return Ok(());
    };
    Err(invalid(
        name,
        Rule::SingleTop,
        format!(
            "{}: the last level ({}) differs from {} {}'s; it must be a single value such as \
             '*' on every {}",
            origin.line(lines[row]),
            height - 1,
            origin.unit(),
            lines[0],
            origin.unit(),
        ),
    ))
}
