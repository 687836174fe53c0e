//! Matching a new input's combinations to a saved recoding's classes (see the parent module's
//! "Applying it to new data"): each QI's cells as tests on the QI's distinct values, and per
//! value the classes covering it, narrowest first.

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::{DataFusionError, Result};
use hashbrown::HashMap;

use super::SavedCell;
use crate::functions::common::ordered_as_f64;
use crate::generalize::parse_interval_label;
use crate::search::local::IntervalBounds;
use crate::search::local::labels::end_values;
use crate::search::local::sets::parse_set_label;
use crate::search::{FrequencySet, QiDomain};

/// Per combination of `freq`, its class among `saved` (a class per entry, a cell per QI), or
/// `saved.len()` when none covers it; `k` is the policy's. `source` names the file in
/// errors.
pub(super) fn assign(
    source: &str,
    freq: &FrequencySet,
    saved: &[Vec<SavedCell>],
    k: u64,
) -> Result<Vec<u32>> {
    let d = freq.qis().len();
    let classes = saved.len();
    let matchers = freq
        .qis()
        .iter()
        .enumerate()
        .map(|(q, qi)| QiMatcher::new(source, qi, saved.iter().map(|c| &c[q])))
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
    Ok(class_of)
}

/// One QI's side of the matching: each class's cell as a test on the QI's leaves (the new
/// data's distinct values).
pub(super) struct QiMatcher {
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
    /// the leaf is one of these (ascending)
    Set(Vec<u32>),
}

/// Per leaf, the classes (ascending) whose cell covers it: `classes[start[leaf]..start[leaf + 1]]`.
pub(super) struct Candidates {
    pub(super) start: Vec<usize>,
    classes: Vec<u32>,
}

impl QiMatcher {
    pub(super) fn new<'a>(
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
        // per value's text, its leaf (when a set is tested)
        let mut leaf_of_text: Option<HashMap<String, u32>> = None;
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
                SavedCell::Set { label } => {
                    let members = parse_set_label(label).ok_or_else(|| {
                        DataFusionError::Plan(format!(
                            "recoding {source}: cell {c} of '{name}' is not a set label"
                        ))
                    })?;
                    if leaf_of_text.is_none() {
                        let text = cast(values, &DataType::Utf8)?;
                        let text = text.as_string::<i32>();
                        leaf_of_text = Some(
                            (0..leaves)
                                .filter(|&leaf| text.is_valid(leaf))
                                .map(|leaf| (text.value(leaf).to_string(), leaf as u32))
                                .collect(),
                        );
                    }
                    let of_text = leaf_of_text.as_ref().ok_or_else(|| {
                        DataFusionError::Internal("no texts of the values".to_string())
                    })?;
                    let mut set: Vec<u32> = members
                        .iter()
                        .filter_map(|m| of_text.get(m).copied())
                        .collect();
                    set.sort_unstable();
                    set.dedup();
                    Test::Set(set)
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
            Test::Set(set) => set.binary_search(&(leaf as u32)).is_ok(),
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
            Test::Set(set) => set.clone(),
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
    pub(super) fn list_lengths(&self) -> Vec<u64> {
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
        let mut sets_extra = vec![0u64; self.leaves];
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
                Test::Set(set) => {
                    for &leaf in set {
                        sets_extra[leaf as usize] += m;
                    }
                }
            }
        }
        let mut lengths: Vec<u64> = sets_extra.iter().map(|&n| n + everywhere).collect();
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
            Test::Set(set) => set.len() as u64,
        }
    }

    /// Per leaf, the classes whose cell covers it, by `breadth` then class order.
    pub(super) fn candidates(&self, breadth: &[f64]) -> Candidates {
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
