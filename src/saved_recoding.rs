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
//! itself; `label` null: a class of NULLs), an `interval` (`(a, b)` or `[a, b]`), or `all`
//! (`*`). Classes the publish suppressed are left out, and a label tuple written by several
//! classes is written once. **The file holds nothing the release did not publish**: labels
//! only — no raw value beyond them (with `local_labels = "exact"` the ends of the intervals are
//! members' values, as that release published them), no counts, rows or seeds.
//!
//! ## Applying it to new data
//! A class **covers** a raw QI combination of the new input when every cell covers its value:
//! a node when the value's label at that level of the policy's hierarchy is the node's (NULL
//! covers NULL), an interval when it holds the value (never NULL), `*` always. Labels of
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
use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use crate::functions::common::ordered_as_f64;
use crate::generalize::parse_interval_label;
use crate::publish::PublishReport;
use crate::release::{CellKind, LocalRecoding, Release};
use crate::search::local::labels::end_values;
use crate::search::local::{IntervalBounds, LocalLabels};
use crate::search::{FrequencySet, QiDomain};
use crate::storage::{self, Location, StoreOptions};

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
        let matchers = freq
            .qis()
            .iter()
            .enumerate()
            .map(|(q, qi)| QiMatcher::new(source, qi, self.classes.iter().map(|c| &c[q])))
            .collect::<Result<Vec<_>>>()?;
        // per value of a QI, the classes covering it: built for the QIs with the fewest
        // classes to try over the combinations, within a memory bound (one u32 a pair)
        const MAX_PAIRS: u64 = 1 << 28;
        let leaf_codes = freq.leaf_codes();
        let lengths: Vec<Vec<u64>> = matchers.iter().map(QiMatcher::list_lengths).collect();
        let tries = |q: usize| -> u64 {
            leaf_codes[q]
                .iter()
                .map(|&leaf| lengths[q][leaf as usize])
                .sum()
        };
        let mut order: Vec<usize> = (0..d).collect();
        order.sort_by_key(|&q| tries(q));
        let mut indexed = Vec::new();
        let mut total = 0u64;
        for &q in &order {
            let pairs: u64 = lengths[q].iter().sum();
            if !indexed.is_empty() && total + pairs > MAX_PAIRS {
                continue;
            }
            if pairs > MAX_PAIRS {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "recoding {source}: its {classes} classes cover {pairs} (class, value) \
                     pairs of every quasi-identifier, more than the {MAX_PAIRS} its index holds"
                )));
            }
            total += pairs;
            indexed.push(q);
        }
        // each class's breadth: Σ over QIs of the share of the QI's values its cell covers
        let mut breadth = vec![0.0f64; classes];
        for m in &matchers {
            let shares = m.shares();
            for (b, &cell) in breadth.iter_mut().zip(&m.cell_of_class) {
                *b += shares[cell as usize];
            }
        }
        // per value, its candidates narrowest first (ties in file order): the first that
        // covers a combination is its narrowest
        let candidates: Vec<(usize, Candidates)> = indexed
            .iter()
            .map(|&q| (q, matchers[q].candidates(&breadth)))
            .collect();
        // per combination, the shortest list among the indexed QIs' (the same classes cover
        // it whichever list is scanned), and how far it was scanned: dissolved classes never
        // come back, so a later search resumes there
        let list_of = |combination: usize| -> &[u32] {
            candidates
                .iter()
                .map(|(q, c)| {
                    let leaf = leaf_codes[*q][combination] as usize;
                    &c.classes[c.start[leaf]..c.start[leaf + 1]]
                })
                .min_by_key(|list| list.len())
                .unwrap_or_default()
        };
        let sizes = freq.sizes();
        let combinations = freq.leaf_classes();
        let mut dissolved = vec![false; classes];
        // the narrowest class covering a combination that is not dissolved, searched from
        // position `from` of its list: the class and its position
        let narrowest = |combination: usize, dissolved: &[bool], from: u32| {
            let list = list_of(combination);
            let from = (from as usize).min(list.len());
            list[from..]
                .iter()
                .position(|&class| {
                    let c = class as usize;
                    !dissolved[c]
                        && matchers
                            .iter()
                            .zip(leaf_codes)
                            .all(|(m, codes)| m.covers(c, codes[combination] as usize))
                })
                .map(|at| (list[from + at], (from + at) as u32))
        };
        // the first pass, over the threads (no class dissolved yet)
        let threads = crate::parallel::threads().max(1);
        let chunk = combinations.div_ceil(threads).max(1);
        let found = crate::parallel::map_scoped(
            "matching a recoding's classes",
            (0..combinations).step_by(chunk),
            |start| {
                (start..(start + chunk).min(combinations))
                    .map(|combination| narrowest(combination, &dissolved, 0))
                    .collect::<Vec<_>>()
            },
        )?;
        let mut class_of = vec![classes as u32; combinations];
        let mut scanned = vec![0u32; combinations];
        let mut rows = vec![0u64; classes];
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); classes];
        for (combination, hit) in found.into_iter().flatten().enumerate() {
            if let Some((class, at)) = hit {
                class_of[combination] = class;
                scanned[combination] = at;
                rows[class as usize] += sizes[combination];
                members[class as usize].push(combination as u32);
            }
        }
        // classes below k handed on: always the first (in file order) class not dissolved
        // with 0 < rows < k; rows only grow in the others, so each is dissolved at most once
        let small = |rows: u64| rows > 0 && rows < k;
        let mut queue: std::collections::BTreeSet<usize> =
            (0..classes).filter(|&c| small(rows[c])).collect();
        while let Some(class) = queue.pop_first() {
            dissolved[class] = true;
            let mut kept = Vec::new();
            for combination in std::mem::take(&mut members[class]) {
                let i = combination as usize;
                match narrowest(i, &dissolved, scanned[i]) {
                    Some((next, at)) => {
                        scanned[i] = at;
                        let next = next as usize;
                        class_of[i] = next as u32;
                        rows[class] -= sizes[i];
                        rows[next] += sizes[i];
                        members[next].push(combination);
                        if small(rows[next]) {
                            queue.insert(next);
                        } else {
                            queue.remove(&next);
                        }
                    }
                    // no other class covers it: it stays, and its class fails when published
                    None => kept.push(combination),
                }
            }
            members[class] = kept;
        }
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

/// One QI's side of the matching: each class's cell as a test on the QI's leaves (the new
/// data's distinct values).
struct QiMatcher {
    /// per class, its cell
    cell_of_class: Vec<u32>,
    cells: Vec<Test>,
    /// per level a node names: each leaf's label id there (ids of [`Test::Node`])
    level_ids: Vec<Vec<u32>>,
    /// per level a node names: per label id, its leaves
    leaves_of_id: Vec<Vec<Vec<u32>>>,
    /// per leaf, its value as a number (when an interval is tested)
    numbers: Vec<Option<f64>>,
    /// the non-NULL leaves by value (when an interval is tested)
    by_number: Vec<(f64, u32)>,
    leaves: usize,
}

/// Whether a cell covers a leaf.
enum Test {
    All,
    /// the leaf's label id at `level` is `id` (`u32::MAX`: a label no leaf has)
    Node {
        level: usize,
        id: u32,
    },
    Interval(IntervalBounds),
}

/// Per leaf, the classes (ascending) whose cell covers it: `classes[start[leaf]..start[leaf + 1]]`.
struct Candidates {
    start: Vec<usize>,
    classes: Vec<u32>,
}

impl QiMatcher {
    fn new<'a>(
        source: &str,
        qi: &QiDomain,
        cells: impl Iterator<Item = &'a SavedCell>,
    ) -> Result<Self> {
        let name = qi.name();
        let (Some(hierarchy), Some(values)) = (qi.hierarchy(), qi.leaf_values()) else {
            return Err(DataFusionError::Plan(format!(
                "quasi-identifier '{name}' has no values: a recoding cannot be applied"
            )));
        };
        let leaves = values.len();
        let mut distinct: HashMap<&SavedCell, u32> = HashMap::new();
        let mut saved: Vec<&SavedCell> = Vec::new();
        let cell_of_class = cells
            .map(|cell| {
                *distinct.entry(cell).or_insert_with(|| {
                    saved.push(cell);
                    saved.len() as u32 - 1
                })
            })
            .collect();
        // per level named by a node: each leaf's label, interned
        let mut level_ids: Vec<Vec<u32>> = vec![Vec::new(); hierarchy.height()];
        let mut interned: Vec<HashMap<Option<String>, u32>> =
            vec![HashMap::new(); hierarchy.height()];
        let mut numbers = Vec::new();
        let mut tests = Vec::with_capacity(saved.len());
        for (c, cell) in saved.iter().enumerate() {
            tests.push(match cell {
                SavedCell::All => Test::All,
                SavedCell::Node { level, label } => {
                    let level = *level as usize;
                    if level >= hierarchy.height() {
                        return Err(DataFusionError::Plan(format!(
                            "recoding {source}: a label of '{name}' is at level {level}, above \
                             the top of its hierarchy ({}): is this the policy it was made \
                             with?",
                            hierarchy.top_level()
                        )));
                    }
                    if level_ids[level].is_empty() && leaves > 0 {
                        let labels = cast(
                            &hierarchy.generalize_column(name, values, level)?,
                            &DataType::Utf8,
                        )?;
                        let labels = labels.as_string::<i32>();
                        let ids = &mut interned[level];
                        level_ids[level] = (0..leaves)
                            .map(|leaf| {
                                let label = labels.is_valid(leaf).then(|| labels.value(leaf));
                                let next = ids.len() as u32;
                                *ids.entry(label.map(str::to_string)).or_insert(next)
                            })
                            .collect();
                    }
                    Test::Node {
                        level,
                        id: interned[level].get(label).copied().unwrap_or(u32::MAX),
                    }
                }
                SavedCell::Interval { label } => {
                    let not_interval = || {
                        DataFusionError::Plan(format!(
                            "recoding {source}: cell {c} of '{name}' is not an interval of the \
                             column's type"
                        ))
                    };
                    let interval = parse_interval_label(label).ok_or_else(not_interval)?;
                    let ends = end_values(&[interval.lo, interval.hi], values.data_type())?;
                    let (Some(lo), Some(hi)) = (ends[0], ends[1]) else {
                        return Err(not_interval());
                    };
                    if numbers.is_empty() && leaves > 0 {
                        numbers = ordered_as_f64(values)?;
                    }
                    Test::Interval(IntervalBounds {
                        lo,
                        hi,
                        open: interval.open,
                    })
                }
            });
        }
        let mut by_number: Vec<(f64, u32)> = numbers
            .iter()
            .enumerate()
            .filter_map(|(leaf, &v)| Some((v?, leaf as u32)))
            .collect();
        by_number.sort_by(|a, b| a.0.total_cmp(&b.0));
        let leaves_of_id = level_ids
            .iter()
            .zip(&interned)
            .map(|(ids, names)| {
                let mut of_id = vec![Vec::new(); names.len()];
                for (leaf, &id) in ids.iter().enumerate() {
                    of_id[id as usize].push(leaf as u32);
                }
                of_id
            })
            .collect();
        Ok(Self {
            cell_of_class,
            cells: tests,
            level_ids,
            leaves_of_id,
            numbers,
            by_number,
            leaves,
        })
    }

    /// Whether class `class`'s cell covers leaf `leaf`.
    #[inline]
    fn covers(&self, class: usize, leaf: usize) -> bool {
        match &self.cells[self.cell_of_class[class] as usize] {
            Test::All => true,
            Test::Node { level, id } => self.level_ids[*level][leaf] == *id,
            Test::Interval(bounds) => self.numbers[leaf].is_some_and(|x| bounds.holds(x)),
        }
    }

    /// The leaves cell `cell` covers.
    fn covered(&self, cell: usize) -> Vec<u32> {
        match &self.cells[cell] {
            Test::All => (0..self.leaves as u32).collect(),
            Test::Node { level, id } => self.leaves_of_id[*level]
                .get(*id as usize)
                .cloned()
                .unwrap_or_default(),
            Test::Interval(bounds) => self.by_number[self.number_range(bounds)]
                .iter()
                .map(|&(_, leaf)| leaf)
                .collect(),
        }
    }

    /// The positions in `by_number` of the values `bounds` holds.
    fn number_range(&self, bounds: &IntervalBounds) -> std::ops::Range<usize> {
        let (first, end) = if bounds.open {
            (
                self.by_number.partition_point(|(v, _)| *v <= bounds.lo),
                self.by_number.partition_point(|(v, _)| *v < bounds.hi),
            )
        } else {
            (
                self.by_number.partition_point(|(v, _)| *v < bounds.lo),
                self.by_number.partition_point(|(v, _)| *v <= bounds.hi),
            )
        };
        first..end.max(first)
    }

    /// Per leaf, the classes whose cell covers it: the lengths of [`Self::candidates`]' lists,
    /// counted per cell (a range of values for an interval, a label id for a node), not per
    /// covered leaf.
    fn list_lengths(&self) -> Vec<u64> {
        let mut of_cell = vec![0u64; self.cells.len()];
        for &cell in &self.cell_of_class {
            of_cell[cell as usize] += 1;
        }
        let mut everywhere = 0;
        let mut of_id: Vec<Vec<u64>> = self
            .leaves_of_id
            .iter()
            .map(|ids| vec![0; ids.len()])
            .collect();
        // over `by_number`: +m where an interval starts, −m past its end
        let mut steps = vec![0i64; self.by_number.len() + 1];
        for (cell, &m) in of_cell.iter().enumerate() {
            match &self.cells[cell] {
                Test::All => everywhere += m,
                Test::Node { level, id } => {
                    if let Some(n) = of_id[*level].get_mut(*id as usize) {
                        *n += m;
                    }
                }
                Test::Interval(bounds) => {
                    let range = self.number_range(bounds);
                    steps[range.start] += m as i64;
                    steps[range.end] -= m as i64;
                }
            }
        }
        let mut lengths = vec![everywhere; self.leaves];
        for (ids, leaves) in of_id.iter().zip(&self.leaves_of_id) {
            for (&m, leaves) in ids.iter().zip(leaves) {
                for &leaf in leaves {
                    lengths[leaf as usize] += m;
                }
            }
        }
        let mut open = 0i64;
        for (&(_, leaf), step) in self.by_number.iter().zip(&steps) {
            open += step;
            lengths[leaf as usize] += open as u64;
        }
        lengths
    }

    /// Per cell, the share of the QI's values (the new input's distinct ones) it covers.
    fn shares(&self) -> Vec<f64> {
        (0..self.cells.len())
            .map(|c| self.covered_count(c) as f64 / self.leaves.max(1) as f64)
            .collect()
    }

    fn covered_count(&self, cell: usize) -> u64 {
        match &self.cells[cell] {
            Test::All => self.leaves as u64,
            Test::Node { level, id } => self.leaves_of_id[*level]
                .get(*id as usize)
                .map_or(0, |leaves| leaves.len() as u64),
            Test::Interval(bounds) => self.number_range(bounds).len() as u64,
        }
    }

    /// Per leaf, the classes whose cell covers it, by `breadth` then class order.
    fn candidates(&self, breadth: &[f64]) -> Candidates {
        let covered: Vec<Vec<u32>> = (0..self.cells.len()).map(|c| self.covered(c)).collect();
        let mut start = vec![0usize; self.leaves + 1];
        for &cell in &self.cell_of_class {
            for &leaf in &covered[cell as usize] {
                start[leaf as usize + 1] += 1;
            }
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        let mut next = start.clone();
        let mut classes = vec![0u32; start[self.leaves]];
        for (class, &cell) in self.cell_of_class.iter().enumerate() {
            for &leaf in &covered[cell as usize] {
                classes[next[leaf as usize]] = class as u32;
                next[leaf as usize] += 1;
            }
        }
        for leaf in 0..self.leaves {
            classes[start[leaf]..start[leaf + 1]].sort_by(|&a, &b| {
                breadth[a as usize]
                    .total_cmp(&breadth[b as usize])
                    .then(a.cmp(&b))
            });
        }
        Candidates { start, classes }
    }
}

#[cfg(test)]
mod tests;
