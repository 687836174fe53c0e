//! IAB (Intelligent Anonymity Balance, seed 000 §3.3, Algorithm 1) with sibling-scoped
//! generalization, on the frequency set.
//!
//! ## Tables
//! A table is a per-column recoding: every leaf (raw value) of every QI sits at some level of
//! its hierarchy and is published as its node there. Different values of one column may sit
//! at different levels. Generalizing table T **on attribute B** follows seed 000 §3.2
//! ("applied only to the table rows whose B values are either the child or its siblings of
//! the same parent"): for every *violating* row, its B node moves to its parent, and so do
//! that node's siblings — every leaf under the parent is published as the parent, in every
//! row, violating or not. Nodes that are already the top stay. Leaves under no such parent
//! keep their level, so a value whose subtree never violates stays raw.
//!
//! A *class* is a group of rows with equal published tuples (of hierarchy nodes: level and
//! code); the seed's "number of rows" of a table is its number of classes (distinct tuples),
//! and its "violating rows" are the rows of classes failing the policy (fewer than k rows,
//! or an l or t requirement of a sensitive attribute).
//!
//! NULL is a node of its own at every level (see [`super`]): a violating NULL moves up
//! alone and is still published as NULL; once at the top, generalizing it once more publishes
//! it as `*`, the one label that covers both NULL and values, so NULL rows can join the
//! top class instead of being stuck below k.
//!
//! ## Search
//! Best-first, from the raw table (which is returned at once if it satisfies): repeatedly
//! take from the frontier W the table with the most distinct tuples, then the fewest
//! violating rows, then the fewest generalization steps, then the first generated. A table
//! **satisfies** when its violating rows fit the suppression budget (`max_suppression`) and
//! some row is kept; its violating classes are then suppressed. The first satisfying table
//! taken is the best (the most distinct tuples; on ties the first found), and the search
//! stops as soon as W holds no table with more distinct tuples than it: generalizing never
//! adds tuples. A table that does not satisfy is expanded: one child per attribute that has
//! a violating value below its top. Tables reached twice (same level for every leaf) are
//! kept once.
//!
//! ## The expansion cap (a heuristic)
//! The search space grows exponentially, so at most [`LocalOptions::iab_expansions`] tables
//! are expanded. Without the cap the result has the most distinct tuples among all
//! satisfying tables reachable this way; with it, the result is only the best found. If the
//! cap is reached before any table satisfies, the search finishes greedily: from the best
//! table left in W, always take its best child (same order) until one satisfies; the result
//! is that table, or a satisfying table left in W if it has more distinct tuples. When
//! nothing satisfies (violating rows already at the top of every attribute, beyond the
//! budget), the release suppresses every failing class and [`super::anonymize`] refuses it.
//!
//! IAB maximizes distinct tuples, not the Loss; its Loss is often higher than the other
//! algorithms'.
//!
//! ## Relation to `iab-full-domain`
//! [`crate::search::Algorithm::IabFullDomain`] runs the same best-first order over whole-column
//! levels: every step lifts a whole column. Here a step lifts only the violating values' sibling
//! groups, so a column can end at several levels; when the violations touch every group of a
//! column, the step is the whole-column one. On Adult (k = 5) the two agree with 2 %
//! suppression (Loss 0.6768, 535 rows suppressed, the same tables) and the sibling-scoped search
//! keeps more without suppression (Loss 0.7154 and 324 classes against 0.7264), in about twice
//! the time (BENCHMARKS.md).
//!
//! ## Cost
//! Each table is evaluated by grouping the |F| leaf classes by their published nodes
//! (O(|F| · d)), once when generated and once more when expanded; the stored state is one
//! byte per leaf of each QI.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};

use datafusion::error::{DataFusionError, Result};

use super::{Cell, Judge, LocalOptions, LocalRelease, Tally};
use crate::policy::PrivacyRequirements;
use crate::search::FrequencySet;
use crate::search::group::{Column, Grouper};

/// Frontier order: most tuples, fewest violating rows, fewest steps, first generated.
type Rank = (u64, Reverse<u64>, Reverse<u32>, Reverse<u32>);

/// One table of the search.
struct Table {
    /// `levels[leaf_offsets[q] + leaf]`: the level leaf `leaf` of QI q is published at
    levels: Box<[u8]>,
    steps: u32,
    tuples: u64,
    violating: u64,
}

/// Runs IAB; see the module documentation.
pub fn iab(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: LocalOptions,
) -> Result<LocalRelease> {
    iab_with_progress(freq, requirements, options, &mut |_, _| {})
}

/// [`iab`], telling `progress` the tables expanded of the cap after each expansion.
pub fn iab_with_progress(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: LocalOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LocalRelease> {
    let mut ev = Evaluator::new(freq, requirements)?;
    let mut tables: Vec<Table> = Vec::new();
    let mut seen: HashSet<Box<[u8]>> = HashSet::new();
    let mut frontier: BinaryHeap<Rank> = BinaryHeap::new();
    let root: Box<[u8]> = vec![0; ev.width].into();
    seen.insert(root.clone());
    let id = ev.add(&mut tables, root, 0);
    frontier.push(rank(&tables, id));

    let mut best: Option<u32> = None;
    let mut expansions = 0usize;
    let mut capped = false;
    while let Some(entry) = frontier.pop() {
        crate::interrupt::check()?;
        let id = (entry.3).0;
        let table = &tables[id as usize];
        if best.is_some_and(|b| table.tuples <= tables[b as usize].tuples) {
            break;
        }
        if ev.satisfies(table) {
            best = Some(id);
            continue;
        }
        if expansions >= options.iab_expansions {
            frontier.push(entry);
            capped = true;
            break;
        }
        expansions += 1;
        progress(expansions, options.iab_expansions);
        let (steps, levels) = (table.steps + 1, table.levels.clone());
        for child in ev.children(&levels) {
            if seen.insert(child.clone()) {
                let id = ev.add(&mut tables, child, steps);
                frontier.push(rank(&tables, id));
            }
        }
    }
    if capped && best.is_none() {
        best = Some(ev.finish_greedily(&mut tables, &frontier));
    }
    let chosen = best.unwrap_or(0) as usize;
    let levels = tables[chosen].levels.clone();
    Ok(ev.release(&levels))
}

/// The top-level code of `*` (that of the non-NULL leaves), when the column also has NULL,
/// whose code at the top is its own (`None` otherwise: nothing to lift).
fn star_code(qi: &crate::search::QiDomain) -> Option<u32> {
    use datafusion::arrow::array::Array;
    let values = qi.leaf_values()?;
    let top = qi.height() - 1;
    let null = (0..values.len()).find(|&leaf| values.is_null(leaf))?;
    let value = (0..values.len()).find(|&leaf| !values.is_null(leaf))?;
    let (star, own) = (qi.leaf_map(top)[value], qi.leaf_map(top)[null]);
    (star != own).then_some(star)
}

fn rank(tables: &[Table], id: u32) -> Rank {
    let t = &tables[id as usize];
    (
        t.tuples,
        Reverse(t.violating),
        Reverse(t.steps),
        Reverse(id),
    )
}

/// Groups the leaf classes of a table and judges its classes, reusing its buffers.
struct Evaluator<'a> {
    freq: &'a FrequencySet,
    judge: Judge<'a>,
    /// bytes of a table's state: the leaves of every QI
    width: usize,
    leaf_offsets: Vec<usize>,
    /// per QI, per level: the first node id of that level (nodes: (level, code) pairs)
    node_offsets: Vec<Vec<u32>>,
    node_counts: Vec<usize>,
    grouper: Grouper,
    /// per QI: leaf → node id in the current table
    maps: Vec<Vec<u32>>,
    class_of: Vec<u32>,
    representative: Vec<u32>,
    class_rows: Vec<u64>,
    tallies: Vec<Tally>,
    fails: Vec<bool>,
    /// per level of the attribute being generalized: parents to publish
    marks: Vec<Vec<bool>>,
    /// per QI: the top-level code of `*`, when the top level also has NULL's own code; a leaf
    /// at level `height` (one above the top) is published as `*`
    star: Vec<Option<u32>>,
    /// per top-level code of the attribute being generalized: lifted to `*`
    lifts: Vec<bool>,
}

impl<'a> Evaluator<'a> {
    fn new(freq: &'a FrequencySet, requirements: &PrivacyRequirements) -> Result<Self> {
        let qis = freq.qis();
        if let Some(qi) = qis.iter().find(|q| q.height() > u8::MAX as usize) {
            return Err(DataFusionError::NotImplemented(format!(
                "iab: the hierarchy of '{}' has more than 255 levels",
                qi.name()
            )));
        }
        let mut leaf_offsets = Vec::with_capacity(qis.len());
        let mut width = 0;
        for qi in qis {
            leaf_offsets.push(width);
            width += qi.leaves();
        }
        let mut node_offsets = Vec::with_capacity(qis.len());
        let mut node_counts = Vec::with_capacity(qis.len());
        for qi in qis {
            let mut offsets = Vec::with_capacity(qi.height());
            let mut count = 0usize;
            for level in 0..qi.height() {
                offsets.push(count as u32);
                count += qi.cardinality(level);
            }
            node_offsets.push(offsets);
            node_counts.push(count);
        }
        Ok(Self {
            freq,
            judge: Judge::new(freq, requirements)?,
            width,
            leaf_offsets,
            node_offsets,
            node_counts,
            grouper: Grouper::default(),
            maps: vec![Vec::new(); qis.len()],
            class_of: Vec::new(),
            representative: Vec::new(),
            class_rows: Vec::new(),
            tallies: Vec::new(),
            fails: Vec::new(),
            marks: Vec::new(),
            star: qis.iter().map(star_code).collect(),
            lifts: Vec::new(),
        })
    }

    /// Evaluates `levels` and stores it as a table; its id.
    fn add(&mut self, tables: &mut Vec<Table>, levels: Box<[u8]>, steps: u32) -> u32 {
        let tuples = self.group(&levels);
        let violating = (0..tuples)
            .filter(|&c| self.fails[c])
            .map(|c| self.class_rows[c])
            .sum();
        tables.push(Table {
            levels,
            steps,
            tuples: tuples as u64,
            violating,
        });
        (tables.len() - 1) as u32
    }

    fn satisfies(&self, table: &Table) -> bool {
        table.violating <= self.judge.budget() && table.violating < self.freq.rows()
    }

    /// Groups the leaf classes by their published tuple under `levels`; fills `class_of`,
    /// `representative`, `class_rows` and `fails`; the number of classes.
    fn group(&mut self, levels: &[u8]) -> usize {
        let qis = self.freq.qis();
        for (q, qi) in qis.iter().enumerate() {
            let map = &mut self.maps[q];
            map.clear();
            let own = &levels[self.leaf_offsets[q]..self.leaf_offsets[q] + qi.leaves()];
            let top = qi.height() - 1;
            for (leaf, &level) in own.iter().enumerate() {
                let level = level as usize;
                map.push(match self.star[q] {
                    Some(star) if level > top => self.node_offsets[q][top] + star,
                    _ => self.node_offsets[q][level] + qi.leaf_map(level)[leaf],
                });
            }
        }
        let leaf_codes = self.freq.leaf_codes();
        let columns: Vec<Column<'_>> = (0..qis.len())
            .map(|q| Column {
                codes: &leaf_codes[q],
                map: Some(&self.maps[q]),
                cardinality: self.node_counts[q],
            })
            .collect();
        let classes = self.grouper.group(
            self.freq.leaf_classes(),
            &columns,
            &mut self.class_of,
            &mut self.representative,
        );
        self.class_rows.clear();
        self.class_rows.resize(classes, 0);
        for (&c, &n) in self.class_of.iter().zip(self.freq.sizes()) {
            self.class_rows[c as usize] += n;
        }
        self.fails.clear();
        if self.judge.has_sensitive() {
            while self.tallies.len() < classes {
                self.tallies.push(self.judge.tally());
            }
            for t in &mut self.tallies[..classes] {
                t.clear();
            }
            for (leaf_class, &c) in self.class_of.iter().enumerate() {
                self.judge
                    .add_leaf_class(&mut self.tallies[c as usize], leaf_class);
            }
            for c in 0..classes {
                let passes = self.judge.passes(&self.tallies[c]);
                self.fails.push(!passes);
            }
        } else {
            let k = self.judge.k();
            self.fails
                .extend(self.class_rows.iter().map(|&n| n < k || n == 0));
        }
        classes
    }

    /// The children of the table `levels`: generalized on each attribute in turn.
    fn children(&mut self, levels: &[u8]) -> Vec<Box<[u8]>> {
        self.group(levels);
        (0..self.freq.qis().len())
            .filter_map(|b| self.generalize(levels, b))
            .collect()
    }

    /// `levels` generalized on attribute `b` (after [`Self::group`] of `levels`): every
    /// violating row's node of `b` and its siblings move to their parent; `None` when no
    /// violating row's node is below the top.
    fn generalize(&mut self, levels: &[u8], b: usize) -> Option<Box<[u8]>> {
        let qi = &self.freq.qis()[b];
        let (height, offset) = (qi.height(), self.leaf_offsets[b]);
        self.marks.resize(height, Vec::new());
        for (level, marks) in self.marks.iter_mut().enumerate() {
            marks.clear();
            marks.resize(qi.cardinality(level), false);
        }
        let top = height - 1;
        self.lifts.clear();
        self.lifts.resize(qi.cardinality(top), false);
        let mut any = false;
        let codes = &self.freq.leaf_codes()[b];
        for (leaf_class, &c) in self.class_of.iter().enumerate() {
            if !self.fails[c as usize] {
                continue;
            }
            let leaf = codes[leaf_class] as usize;
            let parent = levels[offset + leaf] as usize + 1;
            if parent < height {
                self.marks[parent][qi.leaf_map(parent)[leaf] as usize] = true;
                any = true;
            } else if parent == height
                && let Some(star) = self.star[b]
                && qi.leaf_map(top)[leaf] != star
            {
                // NULL at its top, alone: on to `*`
                self.lifts[qi.leaf_map(top)[leaf] as usize] = true;
                any = true;
            }
        }
        if !any {
            return None;
        }
        let mut child: Box<[u8]> = levels.into();
        for leaf in 0..qi.leaves() {
            let slot = &mut child[offset + leaf];
            // the highest marked ancestor: marks below the current level change nothing
            for level in (*slot as usize + 1)..height {
                if self.marks[level][qi.leaf_map(level)[leaf] as usize] {
                    *slot = level as u8;
                }
            }
            if *slot as usize == top && self.lifts[qi.leaf_map(top)[leaf] as usize] {
                *slot = height as u8;
            }
        }
        Some(child)
    }

    /// After the expansion cap without a satisfying table: greedy descent from the best
    /// table left in `frontier`, or a satisfying table there with more tuples.
    fn finish_greedily(&mut self, tables: &mut Vec<Table>, frontier: &BinaryHeap<Rank>) -> u32 {
        let waiting = frontier
            .iter()
            .filter(|r| self.satisfies(&tables[(r.3).0 as usize]))
            .max()
            .map(|r| (r.3).0);
        let Some(mut current) = frontier.peek().map(|r| (r.3).0) else {
            return waiting.unwrap_or(0);
        };
        while !self.satisfies(&tables[current as usize]) {
            let (steps, levels) = {
                let t = &tables[current as usize];
                (t.steps + 1, t.levels.clone())
            };
            let mut next: Option<u32> = None;
            for child in self.children(&levels) {
                let id = self.add(tables, child, steps);
                if next.is_none_or(|n| rank(tables, id) > rank(tables, n)) {
                    next = Some(id);
                }
            }
            match next {
                Some(n) => current = n,
                None => break,
            }
        }
        // the descent may end stuck (violating rows only at the top): then W's table wins
        let current_ok = self.satisfies(&tables[current as usize]);
        match waiting {
            Some(w)
                if !current_ok || tables[w as usize].tuples >= tables[current as usize].tuples =>
            {
                w
            }
            _ => current,
        }
    }

    /// The release of `levels`: its passing classes, its failing ones suppressed.
    fn release(&mut self, levels: &[u8]) -> LocalRelease {
        let classes = self.group(levels);
        let mut group_of = vec![u32::MAX; classes];
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let mut representatives = Vec::new();
        for (c, group) in group_of.iter_mut().enumerate() {
            if !self.fails[c] {
                *group = groups.len() as u32;
                groups.push(Vec::new());
                representatives.push(self.representative[c] as usize);
            }
        }
        for (leaf_class, &c) in self.class_of.iter().enumerate() {
            if let Some(members) = groups.get_mut(group_of[c as usize] as usize) {
                members.push(leaf_class as u32);
            }
        }
        let (qis, leaf_codes) = (self.freq.qis(), self.freq.leaf_codes());
        LocalRelease::from_groups(self.freq.leaf_classes(), qis.len(), &groups, |g, q, _| {
            let leaf = leaf_codes[q][representatives[g]] as usize;
            let level = levels[self.leaf_offsets[q] + leaf] as usize;
            if level >= qis[q].height() {
                return Cell::Top;
            }
            Cell::Node {
                level: level as u32,
                code: qis[q].leaf_map(level)[leaf],
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{LDiversity, LDiversityKind, SensitiveRequirement};
    use crate::search::QiCodes;
    use crate::search::local::{SUPPRESSED, evaluate};

    /// QIs zip and age, 4 leaves each, hierarchy {leaf, {0,1} / {2,3}, *}.
    fn zip_age() -> Vec<QiCodes> {
        let levels = vec![vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![0, 0, 0, 0]];
        vec![
            QiCodes {
                name: "zip".into(),
                levels: levels.clone(),
            },
            QiCodes {
                name: "age".into(),
                levels,
            },
        ]
    }

    use crate::search::local::tests::{k_only, two_qi_rows as rows};

    fn node(level: u32, code: u32) -> Cell {
        Cell::Node { level, code }
    }

    /// Seed 000 §3.3.2 runs Algorithm 1 on its Table 1, which the seed does not reproduce;
    /// this is a hand-made table in the same spirit (k = 2). Leaf classes (zip, age) × rows:
    /// r0 (0,0)×1, r1 (1,0)×1, r2 (2,1)×1, r3 (2,0)×1, r4 (3,3)×2. T(n, m): n violating
    /// rows, m distinct tuples; Z01 = zip {0,1}, A01 = age {0,1}.
    /// - Root T(4, 5): r0–r3 violate.
    /// - Z = root on zip: violating zips 0, 1, 2 → parents Z01, Z23 → every zip at level 1:
    ///   (Z01,0)×2, (Z23,1)×1, (Z23,0)×1, (Z23,3)×2: T(2, 4).
    /// - A = root on age: violating ages 0, 1 → A01; ages 2, 3 stay: (0,A01)×1, (1,A01)×1,
    ///   (2,A01)×2, (3,3)×2: T(2, 4). Tied with Z, generated later.
    /// - Expand Z: on zip, Z23 → *: every zip at the top: (*,0)×3, (*,1)×1, (*,3)×2: T(1, 3);
    ///   on age (violating r2, r3: ages 1, 0) → A01: (Z01,A01)×2, (Z23,A01)×2, (Z23,3)×2:
    ///   ZA = T(0, 3), satisfies.
    /// - Expand A (4 tuples): on zip, zips 0, 1 → Z01: AZ = T(0, 3); on age, A01 → *: AA =
    ///   T(2, 4).
    /// - Expand AA: on zip: T(0, 3); on age: r0, r1 are at the top, no child.
    /// - Take ZA (3 tuples, 0 violating, 2 steps, generated before AZ): it satisfies; nothing
    ///   left has more than 3 tuples. Result ZA: zip all at level 1, ages 0, 1 at level 1,
    ///   age 3 (whose pair {2,3} never violated) raw.
    #[test]
    fn hand_checked_search() {
        let freq = FrequencySet::from_codes(
            zip_age(),
            vec![],
            &rows(&[(0, 0, 1), (1, 0, 1), (2, 1, 1), (2, 0, 1), (3, 3, 2)]),
        )
        .unwrap();
        let release = iab(&freq, &k_only(2, 0.0), LocalOptions::default()).unwrap();
        assert_eq!(release.class_of, vec![0, 0, 1, 1, 2]);
        assert_eq!(release.cells_of(0), &[node(1, 0), node(1, 0)]);
        assert_eq!(release.cells_of(1), &[node(1, 1), node(1, 0)]);
        assert_eq!(release.cells_of(2), &[node(1, 1), node(0, 3)]);

        // a budget of ⌊6/3⌋ = 2 rows: Z = T(2, 4) satisfies with r2, r3 suppressed, and
        // A = T(2, 4) comes after it
        let release = iab(&freq, &k_only(2, 1.0 / 3.0), LocalOptions::default()).unwrap();
        assert_eq!(release.class_of, vec![0, 0, SUPPRESSED, SUPPRESSED, 1]);
        assert_eq!(release.cells_of(0), &[node(1, 0), node(0, 0)]);
        assert_eq!(release.cells_of(1), &[node(1, 1), node(0, 3)]);
    }

    /// (0,0)×1, (1,1)×1, (0,1)×1, (1,0)×1 violate (k = 2); (2,2)×2 and (3,3)×2 do not.
    /// Root T(4, 6); on zip, zips 0, 1 → Z01 (siblings only: 2, 3 stay raw): (Z01,0)×2,
    /// (Z01,1)×2, (2,2)×2, (3,3)×2 = T(0, 4); on age likewise T(0, 4), generated later. The
    /// zip child wins: zips 2, 3 and every age stay at level 0.
    #[test]
    fn untouched_subtrees_stay_raw() {
        let freq = FrequencySet::from_codes(
            zip_age(),
            vec![],
            &rows(&[
                (0, 0, 1),
                (1, 1, 1),
                (0, 1, 1),
                (1, 0, 1),
                (2, 2, 2),
                (3, 3, 2),
            ]),
        )
        .unwrap();
        let release = iab(&freq, &k_only(2, 0.0), LocalOptions::default()).unwrap();
        assert_eq!(release.class_of, vec![0, 1, 1, 0, 2, 3]);
        assert_eq!(release.cells_of(0), &[node(1, 0), node(0, 0)]);
        assert_eq!(release.cells_of(1), &[node(1, 0), node(0, 1)]);
        assert_eq!(release.cells_of(2), &[node(0, 2), node(0, 2)]);
        assert_eq!(release.cells_of(3), &[node(0, 3), node(0, 3)]);
    }

    use crate::search::local::tests::random_code_freq as random_freq;

    #[test]
    fn every_class_meets_the_policy() {
        let freq = random_freq(5);
        let l3 = vec![SensitiveRequirement {
            attribute: "s".into(),
            l: Some(LDiversity {
                kind: LDiversityKind::Distinct,
                l: 3.0,
                c: None,
            }),
            t: None,
            ..Default::default()
        }];
        for (k, rate, sensitive) in [
            (4, 0.0, vec![]),
            (4, 0.05, vec![]),
            (3, 0.0, l3.clone()),
            (3, 0.03, l3),
        ] {
            let req = PrivacyRequirements {
                suppression: Default::default(),
                population: None,
                k,
                max_suppression: rate,
                sensitive,
            };
            for expansions in [10_000, 3, 0] {
                let options = LocalOptions {
                    iab_expansions: expansions,
                    ..LocalOptions::default()
                };
                let release = iab(&freq, &req, options).unwrap();
                let e = evaluate(&freq, &req, &release).unwrap();
                assert!(e.satisfies, "k {k}, rate {rate}, cap {expansions}");
                assert!(e.min_class_size.unwrap() >= k);
                if let Some(l) = e.sensitive.first() {
                    assert!(l.l().unwrap() >= 3.0);
                }
                assert_eq!(release, iab(&freq, &req, options).unwrap());
            }
        }
    }
}
