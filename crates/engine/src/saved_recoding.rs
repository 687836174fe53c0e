//! A local recoding saved to a file (`anon anonymize --recoding-out FILE`) and applied to new
//! data (`anon apply --recoding FILE`): next month's rows get this month's classes, values the
//! first release never saw included.
//!
//! ## The file
//! JSON, one object:
//! ```json
//! { "format": "datafusion-anonymity local recoding", "version": 1,
//!   "algorithm": "mondrian", "local_labels": "value_free",
//!   "quasi_identifiers": ["born", "age", "sex"],
//!   "classes": [
//!     [ { "cell": "interval", "label": "(1980-02-29, 1980-08-01)" },
//!       { "cell": "node", "level": 1, "label": "[30, 35)" },
//!       { "cell": "all" } ] ] }
//! ```
//! One entry per **published** class, in the release's class order: per quasi-identifier its
//! label and the kind of cell it is — a hierarchy `node` (`level` 0: a value published as
//! itself; `label` null: a class of NULLs), an `interval` (`(a, b)` or `[a, b]`), a `set`
//! (`{a, b}`, a set-based quasi-identifier's) or `all` (`*`). Classes the publish suppressed are left out, and a label tuple written by several
//! classes is written once. **The file holds nothing the release did not publish**: labels
//! only — no raw value beyond them (with `local_labels = "exact"` the ends of the intervals are
//! members' values, as that release published them), no counts, rows or seeds.
//!
//! ## Applying it to new data
//! A class **covers** a raw QI combination of the new input when every cell covers its value:
//! a node when the value's label at that level of the policy's hierarchy is the node's (NULL
//! covers NULL), an interval when it holds the value (never NULL), a set when it lists the
//! value, `*` always. Labels of
//! classes overlap, so several classes may cover a combination; the rule, deterministic
//! for the same file and input:
//! 1. each combination joins the **narrowest** class covering it: the least *breadth*, the sum
//!    over the QIs of the share of the QI's distinct values in the new input (NULL one of
//!    them) that the class's cell covers; ties go to the first in file order;
//! 2. then, while some class holds between 1 and k − 1 rows, the first such class in file
//!    order is **dissolved**: each of its combinations joins the narrowest covering class not
//!    dissolved, or stays if there is none (the class then fails when published). Rows only
//!    grow in the classes left, so each class is dissolved at most once. (Without this step,
//!    re-applying Adult's own Mondrian recoding to Adult suppressed twice the rows.)
//!
//! A combination **no class covers** is suppressed like a failing class's rows (dropped, or
//! masked with every QI `*`) and counted (`uncovered_rows`): it has no published class to
//! join.
//!
//! The release is then published like any local release ([`crate::publish`]): its classes
//! (label tuples) are counted on the new rows, those failing the policy (k, l, t, …) are
//! suppressed, the suppressed rows — uncovered ones included — must fit `max_suppression`, and
//! the written output is verified before it is moved into place; else nothing is written.
//! The policy must name the same quasi-identifiers in the same order, with the hierarchies
//! of the first release (node labels are matched through them). A policy with a
//! `[population]` is refused: the population's count per class is not computed for a
//! recoding read from a file.

use std::collections::HashSet;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringViewBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use serde::{Deserialize, Serialize};

use crate::publish::PublishReport;
use crate::search::FrequencySet;
use crate::search::local::LocalLabels;
use crate::search::release::{CellKind, LocalRecoding, Release};
use crate::storage::{self, Location, StoreOptions};

mod matching;

/// The file's `format`.
pub const FORMAT: &str = "datafusion-anonymity local recoding";
/// The file's `version`.
pub const VERSION: u32 = 1;

/// A recoding file's content (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SavedRecoding {
    pub format: String,
    pub version: u32,
    /// The algorithm that built the classes.
    pub algorithm: String,
    /// The label rule of the release.
    pub local_labels: LocalLabels,
    /// The quasi-identifiers, in the policy's order.
    pub quasi_identifiers: Vec<String>,
    /// Per published class, per quasi-identifier, its cell.
    pub classes: Vec<Vec<SavedCell>>,
}

/// One class's cell of one quasi-identifier, as published.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "cell", rename_all = "snake_case")]
pub enum SavedCell {
    /// The hierarchy's label at `level` (0: the value itself); `None`: NULL.
    Node { level: u32, label: Option<String> },
    /// An interval label, `(a, b)` or `[a, b]`.
    Interval { label: String },
    /// A set label `{a, b}` of a set-based quasi-identifier (escaped as
    /// [`crate::search::local::sets`] says).
    Set { label: String },
    /// `*`.
    All,
}

/// What a recoding file did, for the report (`recoding_file`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecodingFileFigures {
    /// Where the file is.
    pub file: String,
    /// The classes it holds.
    pub classes: usize,
    /// `apply --recoding`: rows of combinations no class covers (suppressed); null when the
    /// file was written.
    pub uncovered_rows: Option<u64>,
}

impl SavedRecoding {
    /// The published classes of `recoding`, built by `algorithm` with `labels`; `suppressed`
    /// are the classes the publish suppressed ([`crate::publish::PublishReport`]'s
    /// `failing_classes`: their labels in the first columns, in the same QI order), left out.
    pub fn of_release(
        recoding: &LocalRecoding,
        algorithm: &str,
        labels: LocalLabels,
        suppressed: Option<&[RecordBatch]>,
    ) -> Result<Self> {
        let d = recoding.quasi_identifiers().len();
        let classes = recoding.classes();
        let kinds = recoding.cell_kinds();
        if kinds.len() != classes * d {
            return Err(DataFusionError::Plan(
                "this local release does not carry its cells (read from a cluster's wire): \
                 it cannot be saved"
                    .to_string(),
            ));
        }
        let suppressed = label_tuples(suppressed.unwrap_or_default(), d)?;
        let texts = recoding
            .class_labels()
            .iter()
            .map(|l| cast(l, &DataType::Utf8))
            .collect::<std::result::Result<Vec<ArrayRef>, _>>()?;
        let label = |q: usize, class: usize| {
            let text = texts[q].as_string::<i32>();
            text.is_valid(class).then(|| text.value(class).to_string())
        };
        let mut written: HashSet<Vec<Option<String>>> = HashSet::new();
        let mut saved = Vec::new();
        for class in 0..classes {
            let tuple: Vec<Option<String>> = (0..d).map(|q| label(q, class)).collect();
            if suppressed.contains(&tuple) || written.contains(&tuple) {
                continue;
            }
            let cells = tuple
                .iter()
                .zip(&kinds[class * d..(class + 1) * d])
                .map(|(label, kind)| match kind {
                    CellKind::Node { level } => Ok(SavedCell::Node {
                        level: *level,
                        label: label.clone(),
                    }),
                    CellKind::Interval => Ok(SavedCell::Interval {
                        label: label.clone().ok_or_else(|| {
                            DataFusionError::Internal("a NULL interval label".to_string())
                        })?,
                    }),
                    CellKind::Set => Ok(SavedCell::Set {
                        label: label.clone().ok_or_else(|| {
                            DataFusionError::Internal("a NULL set label".to_string())
                        })?,
                    }),
                    CellKind::Top => Ok(SavedCell::All),
                })
                .collect::<Result<Vec<_>>>()?;
            saved.push(cells);
            written.insert(tuple);
        }
        Ok(Self {
            format: FORMAT.to_string(),
            version: VERSION,
            algorithm: algorithm.to_string(),
            local_labels: labels,
            quasi_identifiers: recoding.quasi_identifiers().to_vec(),
            classes: saved,
        })
    }

    /// The file's text (pretty JSON).
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| {
            DataFusionError::Execution(format!("cannot encode the local recoding: {e}"))
        })
    }

    /// The recoding in `text`, read from `source` (named in errors): its format, version and
    /// widths checked.
    pub fn from_json(source: &str, text: &str) -> Result<Self> {
        let saved: Self = serde_json::from_str(text).map_err(|e| {
            DataFusionError::Plan(format!(
                "recoding {source} is not a local recoding file: {e}"
            ))
        })?;
        if saved.format != FORMAT || saved.version != VERSION {
            return Err(DataFusionError::Plan(format!(
                "recoding {source} is not a local recoding file of version {VERSION} (format \
                 '{FORMAT}')"
            )));
        }
        let d = saved.quasi_identifiers.len();
        if let Some(c) = saved.classes.iter().position(|cells| cells.len() != d) {
            return Err(DataFusionError::Plan(format!(
                "recoding {source}: class {c} has {} cells for {d} quasi-identifiers",
                saved.classes[c].len()
            )));
        }
        Ok(saved)
    }

    /// Writes the file to `location` as one whole.
    pub async fn write(&self, location: &Location, options: &StoreOptions) -> Result<()> {
        storage::put(location, options, self.to_json()?.into()).await
    }

    /// Reads the file at `location`.
    pub async fn read(location: &Location, options: &StoreOptions) -> Result<Self> {
        let bytes = storage::read_bytes(location, options).await?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| DataFusionError::Plan(format!("recoding {location}: not UTF-8 text")))?;
        Self::from_json(&location.to_string(), text)
    }

    /// The release of `freq`'s combinations under this file's classes for the policy's `k`
    /// (see the module documentation), and the rows of the combinations no class covers
    /// (suppressed). `source` names the file in errors.
    pub fn recoding_for(
        &self,
        source: &str,
        freq: &FrequencySet,
        k: u64,
    ) -> Result<(LocalRecoding, u64)> {
        let names = freq.qi_names();
        if names != self.quasi_identifiers {
            return Err(DataFusionError::Plan(format!(
                "recoding {source} is for the quasi-identifiers {}; the policy's are {}",
                self.quasi_identifiers.join(", "),
                names.join(", ")
            )));
        }
        if freq.population().is_some() {
            return Err(DataFusionError::Plan(format!(
                "recoding {source}: a policy with a [population] cannot apply a saved local \
                 recoding (the population's count per class is not computed for it)"
            )));
        }
        let d = names.len();
        let classes = self.classes.len();
        let class_of = matching::assign(source, freq, &self.classes, k)?;
        let mut labels: Vec<StringViewBuilder> = (0..d)
            .map(|_| StringViewBuilder::with_capacity(classes + 1))
            .collect();
        let mut kinds = Vec::with_capacity(classes * d);
        for cells in &self.classes {
            for (cell, labels) in cells.iter().zip(&mut labels) {
                match cell {
                    SavedCell::Node { level, label } => {
                        labels.append_option(label.as_deref());
                        kinds.push(CellKind::Node { level: *level });
                    }
                    SavedCell::Interval { label } => {
                        labels.append_value(label);
                        kinds.push(CellKind::Interval);
                    }
                    SavedCell::Set { label } => {
                        labels.append_value(label);
                        kinds.push(CellKind::Set);
                    }
                    SavedCell::All => {
                        labels.append_value(crate::generalize::TOP_LABEL);
                        kinds.push(CellKind::Top);
                    }
                }
            }
        }
        let recoding = LocalRecoding::from_labels(freq, class_of, labels, kinds)?;
        let uncovered = recoding.suppressed_rows();
        Ok((recoding, uncovered))
    }
}

/// Saves the local release `release` as `publish` wrote it (its suppressed classes left out)
/// to `location`: what `anon anonymize --recoding-out` does once the output is verified.
pub async fn save_published(
    release: &Release,
    algorithm: &str,
    labels: LocalLabels,
    publish: &PublishReport,
    location: &Location,
    options: &StoreOptions,
) -> Result<RecodingFileFigures> {
    let Release::Local(local) = release else {
        return Err(DataFusionError::Plan(
            "a recoding file is written for local recoding (mondrian, kaca, iab) only".to_string(),
        ));
    };
    let saved =
        SavedRecoding::of_release(local, algorithm, labels, publish.failing_classes.as_deref())?;
    saved.write(location, options).await?;
    Ok(RecodingFileFigures {
        file: location.to_string(),
        classes: saved.classes.len(),
        uncovered_rows: None,
    })
}

/// The label tuples (first `width` columns, as text) of `batches`.
fn label_tuples(batches: &[RecordBatch], width: usize) -> Result<HashSet<Vec<Option<String>>>> {
    let mut tuples = HashSet::new();
    for batch in batches {
        if batch.num_columns() < width {
            return Err(DataFusionError::Internal(
                "suppressed classes without their labels".to_string(),
            ));
        }
        let columns = batch.columns()[..width]
            .iter()
            .map(|c| cast(c, &DataType::Utf8))
            .collect::<std::result::Result<Vec<ArrayRef>, _>>()?;
        for row in 0..batch.num_rows() {
            tuples.insert(
                columns
                    .iter()
                    .map(|c| {
                        let c = c.as_string::<i32>();
                        c.is_valid(row).then(|| c.value(row).to_string())
                    })
                    .collect(),
            );
        }
    }
    Ok(tuples)
}

#[cfg(test)]
mod tests;
