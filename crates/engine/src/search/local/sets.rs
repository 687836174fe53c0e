//! Set-based (hierarchy-free) local recoding: a quasi-identifier without a hierarchy, or with
//! `generalization = "set"`, is published by each class as what its members hold rather than
//! as a hierarchy node.
//!
//! | column | a class of several values publishes | example |
//! |---|---|---|
//! | numeric (integer, float, decimal) | an interval, value-free by default: `(a, b)` with `a` the midpoint between the class's smallest value and the next smaller value of the column, `b` the midpoint between its largest value and the next larger one (`-inf` / `inf` beyond the column's ends) | ages 31 … 44, neighbours 30 and 46: `(30.5, 45)` |
//! | numeric, `local_labels = "exact"` | `[min, max]` | `[31, 44]` |
//! | any other type (strings, booleans, dates) | the set of its distinct values, in value order | `{Private, Self-emp-inc}` |
//!
//! A class with one value publishes it (a set QI as the one-value set `{Private}`, so that
//! every label of a set QI parses as a set); NULL alone publishes NULL, NULL mixed with values
//! `*`.
//!
//! **Midpoint ends.** No end of an interval is a value of the column (a midpoint lies strictly
//! between two adjacent distinct values; should rounding make it equal one of them, the end is
//! the outside neighbour itself, never a member's value). The ends tell how far the class's
//! extreme values and their outside neighbours lie apart (their mean), nothing else.
//!
//! **Set labels** are `{` + the values' text (as `CAST(x AS VARCHAR)` prints them) joined by
//! `, ` + `}`; in a value, `\`, `,`, `{` and `}` are escaped with `\`, so that a label reads
//! back to exactly its values ([`parse_set_label`]). A set holds at most `[privacy]
//! max_set_values` values (64 by default): with `set_fallback = "*"` a larger one is published
//! as `*` (and costs 1 in the search, which therefore avoids it); without, it is an error
//! naming the column, and nothing is written.
//!
//! **Loss** (docs/definitions.md): a set of c values costs (c − 1)/(|D| − 1), |D| the column's
//! distinct non-NULL values; an interval costs (values covered − 1)/(|D| − 1), the values
//! covered being the column's distinct values inside `[min, max]` (those inside `(a, b)`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringViewBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};

use super::{Cell, LocalRelease, QiAxis, SUPPRESSED};
use crate::generalize::TOP_LABEL;
use crate::search::QiDomain;

/// The policy key of the set labels' cap, as errors name it.
pub const SET_CAP_KEY: &str = "privacy.max_set_values";

/// A class's set label would hold more values than `privacy.max_set_values` allows and the
/// policy names no fallback: the policy's to fix (its job names the policy file).
#[derive(Debug, thiserror::Error)]
#[error(
    "quasi-identifier '{quasi_identifier}': a class's set label would hold {values} values, \
     more than {SET_CAP_KEY} = {cap}, and privacy.set_fallback is not set (set_fallback = \
     \"*\" publishes such a set as *)"
)]
pub struct SetCapExceeded {
    pub quasi_identifier: String,
    pub values: usize,
    pub cap: usize,
}

impl From<SetCapExceeded> for DataFusionError {
    fn from(error: SetCapExceeded) -> Self {
        DataFusionError::External(Box::new(error))
    }
}

/// Per rank of an ordered QI's values (ascending, NULL first as −∞), the ends `(a, b)` of a
/// value-free interval it starts (`a`) or ends (`b`): the midpoints to the neighbouring
/// values, `−∞` / `∞` at the column's ends.
pub fn midpoint_ends(value_of_rank: &[f64]) -> Vec<(f64, f64)> {
    let n = value_of_rank.len();
    (0..n)
        .map(|r| {
            let v = value_of_rank[r];
            if !v.is_finite() {
                return (f64::NEG_INFINITY, f64::INFINITY);
            }
            let a = match r.checked_sub(1).map(|p| value_of_rank[p]) {
                Some(prev) if prev.is_finite() => between(prev, v).unwrap_or(prev),
                _ => f64::NEG_INFINITY,
            };
            let b = match value_of_rank.get(r + 1) {
                Some(&next) if next.is_finite() => between(v, next).unwrap_or(next),
                _ => f64::INFINITY,
            };
            (a, b)
        })
        .collect()
}

/// The midpoint of `lo < hi`, if the floats hold a number strictly between them (adjacent
/// floats do not: the caller then takes the outside neighbour itself).
fn between(lo: f64, hi: f64) -> Option<f64> {
    let mid = lo + (hi - lo) / 2.0;
    (lo < mid && mid < hi).then_some(mid)
}

/// The text of an interval end (`-inf`, `inf`, or the shortest decimal that reads back).
pub fn end_text(x: f64) -> String {
    if x == f64::INFINITY {
        "inf".to_string()
    } else if x == f64::NEG_INFINITY {
        "-inf".to_string()
    } else {
        format!("{x}")
    }
}

/// Appends `value` to `out` with `\`, `,`, `{` and `}` escaped.
fn push_escaped(out: &mut String, value: &str) {
    for ch in value.chars() {
        if matches!(ch, '\\' | ',' | '{' | '}') {
            out.push('\\');
        }
        out.push(ch);
    }
}

/// The label of a set of values: `{a, b, c}`, each value escaped (see the module
/// documentation).
pub fn set_label<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::from("{");
    for (i, value) in values.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        push_escaped(&mut out, value);
    }
    out.push('}');
    out
}

/// The values of a set label ([`set_label`]), unescaped; `None` for any other text.
pub fn parse_set_label(label: &str) -> Option<Vec<String>> {
    let inner = label.strip_prefix('{')?.strip_suffix('}')?;
    let mut values = vec![String::new()];
    let mut chars = inner.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => values.last_mut()?.push(chars.next()?),
            ',' => {
                // a separator is ", "
                if chars.next()? != ' ' {
                    return None;
                }
                values.push(String::new());
            }
            // an unescaped brace inside: not a set label (the last `}` was stripped)
            '{' | '}' => return None,
            other => values.last_mut()?.push(other),
        }
    }
    Some(values)
}

/// The leaf of NULL among a QI's leaves, if it has one.
pub fn null_leaf(qi: &QiDomain) -> Option<u32> {
    let values = qi.leaf_values()?;
    (0..values.len())
        .find(|&leaf| values.is_null(leaf))
        .map(|leaf| leaf as u32)
}

/// The cell of a set-based categorical QI's class whose distinct leaves are `leaves`
/// (non-empty, distinct).
pub fn set_cell_of_leaves(qi: &QiDomain, axis: &QiAxis, leaves: &[u32]) -> Cell {
    let null = null_leaf(qi);
    let with_null = leaves.iter().any(|&l| Some(l) == null);
    let count = leaves.len() as u32 - u32::from(with_null);
    axis.set_cell(qi, count, with_null, leaves.first().copied().unwrap_or(0))
}

/// The label of QI `q` of a set-based categorical QI for every class of `release`, then `*`
/// (the suppressed combinations'), as Utf8View: sets from the class's members (see the module
/// documentation), a hierarchy node's label for nodes above the values (KACA and IAB cells).
/// Errors for a set beyond `max_set_values` (no fallback configured).
pub(crate) fn set_class_labels(
    qi: &QiDomain,
    axis: &QiAxis,
    leaf_codes: &[u32],
    release: &LocalRelease,
    q: usize,
) -> Result<ArrayRef> {
    let values = qi.leaf_values().ok_or_else(|| {
        DataFusionError::Plan(format!(
            "quasi-identifier '{}' has no values: a local release of it cannot be labelled",
            qi.name()
        ))
    })?;
    let text = cast(values, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    let classes = release.classes();
    // per class, its distinct leaves (in value order: leaf codes are)
    let mut leaves_of: Vec<Vec<u32>> = vec![Vec::new(); classes];
    for (m, &c) in release.class_of.iter().enumerate() {
        if c != SUPPRESSED {
            leaves_of[c as usize].push(leaf_codes[m]);
        }
    }
    let cap = axis.set_labels().max_values;
    let mut builder = StringViewBuilder::with_capacity(classes + 1);
    for (c, leaves) in leaves_of.iter_mut().enumerate() {
        leaves.sort_unstable();
        leaves.dedup();
        match release.cells_of(c)[q] {
            Cell::Top => builder.append_value(TOP_LABEL),
            Cell::Node { level, code } if level > 0 => {
                let labels = cast(
                    &qi.labels_of_codes(level as usize, &[code])?,
                    &DataType::Utf8,
                )?;
                let labels = labels.as_string::<i32>();
                if labels.is_valid(0) {
                    builder.append_value(labels.value(0));
                } else {
                    builder.append_null();
                }
            }
            Cell::Interval { .. } => {
                return Err(DataFusionError::Internal(
                    "an interval on a set-based categorical quasi-identifier".to_string(),
                ));
            }
            _ if leaves.iter().all(|&l| text.is_null(l as usize)) => builder.append_null(),
            _ if leaves.iter().any(|&l| text.is_null(l as usize)) => {
                builder.append_value(TOP_LABEL)
            }
            _ if leaves.len() > cap => {
                return Err(SetCapExceeded {
                    quasi_identifier: qi.name().to_string(),
                    values: leaves.len(),
                    cap,
                }
                .into());
            }
            _ => builder.append_value(set_label(leaves.iter().map(|&l| text.value(l as usize)))),
        }
    }
    builder.append_value(TOP_LABEL);
    Ok(Arc::new(builder.finish()))
}
