//! Distinct persons of groups of leaf classes, for k over persons (`k_persons`) in the local
//! algorithms, without a histogram over every person per group.
//!
//! A person-id column is a sensitive attribute of the frequency set whose only requirement is
//! k over persons: a group of leaf classes E holds `persons(E)` distinct non-NULL ids, a NULL
//! id adding none, and a group of NULL ids only counting one person (docs/definitions.md,
//! `k_anonymity(person_id)`). Most persons of 1:M data have constant quasi-identifiers, so
//! all their rows lie in one leaf class. [`LeafPersons`] splits the persons once:
//!
//! - *single-leaf persons*, counted per leaf class (`single(ℓ)`): each is in exactly one leaf
//!   class, so in exactly one group of any partition of the leaf classes;
//! - *multi-leaf persons* (rows in two leaf classes or more), renumbered densely and listed
//!   per leaf class.
//!
//! Then `persons(E) = Σ_{ℓ ∈ E} single(ℓ) + |{p multi-leaf : some leaf of p is in E}|`,
//! exactly, with the NULL rule applied on top ([`PersonCount`]). A group's persons are kept
//! in a [`PersonSet`] (the sum, whether a NULL id occurs, and a bag of its multi-leaf persons
//! with repeats), added to in O(size of what is added) and counted in O(bag) with a stamp
//! array ([`PersonScratch::distinct`]); Mondrian's threshold sweep moves leaf classes from one
//! side to the other with two counters per multi-leaf person ([`PersonSweep`]), and its split
//! of a node's children into two groups reads every split's count off the children each
//! person touches ([`ChildSplits`]). All of it is O(leaf classes + (leaf class, multi-leaf
//! person) pairs): memory O(n). The optimal search rolls [`ClassPersons`] up the lattice the
//! same way: per class a sum, a flag and its multi-leaf persons.

use super::group::{ClassHistograms, HistogramMerger, Histograms};

/// A group's persons as the requirement judges them: its distinct non-NULL ids, and whether
/// it has rows with a NULL id.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct PersonCount {
    pub known: u64,
    pub nulls: bool,
}

impl PersonCount {
    /// persons(E): the known persons; a NULL id may be any person of the group, so it adds
    /// none, except that a group of NULL ids only is one person.
    pub fn persons(self) -> u64 {
        self.known.max(u64::from(self.nulls))
    }
}

/// The persons of each leaf class of a frequency set, split into single-leaf and multi-leaf
/// persons (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct LeafPersons {
    /// per leaf class: its non-NULL persons found in no other leaf class
    single: Vec<u32>,
    /// per leaf class: whether some of its rows have a NULL id
    has_null: Vec<bool>,
    /// per leaf class: its multi-leaf persons (ids `0..multi_persons`, ascending) at
    /// `multi[offsets[ℓ]..offsets[ℓ + 1]]`
    offsets: Vec<u32>,
    multi: Vec<u32>,
    multi_persons: usize,
}

impl LeafPersons {
    /// The split of the persons of `histograms` (the leaf classes' histograms of the
    /// person-id attribute, `cardinality` codes, NULL `null_code`).
    pub fn new(histograms: &ClassHistograms, null_code: Option<u32>, cardinality: usize) -> Self {
        let leaves = histograms.classes();
        let (mut codes, mut counts) = (Vec::new(), Vec::new());
        // the leaf classes each person (code) occurs in, saturating at 2
        let mut seen_in = vec![0u8; cardinality];
        for leaf in 0..leaves {
            for &code in histograms.class(leaf, &mut codes, &mut counts).0 {
                let slot = &mut seen_in[code as usize];
                *slot = slot.saturating_add(1).min(2);
            }
        }
        // multi-leaf persons numbered in code order, so each leaf's list stays ascending
        let mut multi_id = vec![u32::MAX; cardinality];
        let mut multi_persons = 0usize;
        for (code, &seen) in seen_in.iter().enumerate() {
            if seen >= 2 && Some(code as u32) != null_code {
                multi_id[code] = multi_persons as u32;
                multi_persons += 1;
            }
        }
        drop(seen_in);
        let mut out = Self {
            single: Vec::with_capacity(leaves),
            has_null: Vec::with_capacity(leaves),
            offsets: Vec::with_capacity(leaves + 1),
            multi: Vec::new(),
            multi_persons,
        };
        out.offsets.push(0);
        for leaf in 0..leaves {
            let mut single = 0u32;
            let mut has_null = false;
            for &code in histograms.class(leaf, &mut codes, &mut counts).0 {
                if Some(code) == null_code {
                    has_null = true;
                } else if multi_id[code as usize] == u32::MAX {
                    single += 1;
                } else {
                    out.multi.push(multi_id[code as usize]);
                }
            }
            out.single.push(single);
            out.has_null.push(has_null);
            out.offsets.push(out.multi.len() as u32);
        }
        out
    }

    /// The number of multi-leaf persons (their ids are `0..multi_persons()`).
    pub fn multi_persons(&self) -> usize {
        self.multi_persons
    }

    /// The multi-leaf persons of leaf class `leaf`, ascending.
    #[inline]
    pub fn multi_of(&self, leaf: usize) -> &[u32] {
        &self.multi[self.offsets[leaf] as usize..self.offsets[leaf + 1] as usize]
    }

    /// Adds leaf class `leaf`'s single-leaf persons and NULL ids (not its multi-leaf persons)
    /// to `set`.
    #[inline]
    pub fn add_counts(&self, set: &mut PersonSet, leaf: usize) {
        set.single += u64::from(self.single[leaf]);
        set.null_leaves += u64::from(self.has_null[leaf]);
    }

    /// Takes leaf class `leaf`'s single-leaf persons and NULL ids back out of `set` (which
    /// holds them).
    #[inline]
    pub fn remove_counts(&self, set: &mut PersonSet, leaf: usize) {
        set.single -= u64::from(self.single[leaf]);
        set.null_leaves -= u64::from(self.has_null[leaf]);
    }

    /// Adds leaf class `leaf` to `set`.
    #[inline]
    pub fn add(&self, set: &mut PersonSet, leaf: usize) {
        self.add_counts(set, leaf);
        set.bag.extend_from_slice(self.multi_of(leaf));
    }
}

/// The persons of a group of leaf classes (no leaf class twice): see the module
/// documentation. Groups are disjoint in the algorithms, so adding two sets is their union.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PersonSet {
    /// Σ single-leaf persons of the leaf classes
    single: u64,
    /// the leaf classes with NULL ids
    null_leaves: u64,
    /// the multi-leaf persons of every leaf class, with repeats
    bag: Vec<u32>,
}

impl PersonSet {
    /// Adds the disjoint group `other`.
    pub fn add(&mut self, other: &PersonSet) {
        self.single += other.single;
        self.null_leaves += other.null_leaves;
        self.bag.extend_from_slice(&other.bag);
    }

    pub fn clear(&mut self) {
        self.single = 0;
        self.null_leaves = 0;
        self.bag.clear();
    }

    /// The set without its multi-leaf persons (for counts that come from elsewhere).
    pub fn counts_only(&self) -> PersonSet {
        PersonSet {
            single: self.single,
            null_leaves: self.null_leaves,
            bag: Vec::new(),
        }
    }

    /// The count of this set whose distinct multi-leaf persons are `multi` (found elsewhere:
    /// a sweep, a split).
    pub fn count_with(&self, multi: u64) -> PersonCount {
        PersonCount {
            known: self.single + multi,
            nulls: self.null_leaves > 0,
        }
    }

    /// The multi-leaf persons with repeats.
    pub fn bag(&self) -> &[u32] {
        &self.bag
    }
}

/// Reusable per-person arrays of one judge (one thread) for one person criterion, all sized
/// by the multi-leaf persons and left zeroed between uses.
#[derive(Debug, Default)]
pub(crate) struct PersonScratch {
    /// the epoch in which each person was last counted ([`Self::distinct`])
    stamps: Vec<u32>,
    epoch: u32,
    sweep: PersonSweep,
    /// per person, the children holding it ([`ChildSplits`])
    child_masks: Vec<u16>,
    touched: Vec<u32>,
}

impl PersonScratch {
    pub fn new(multi_persons: usize) -> Self {
        Self {
            stamps: vec![0; multi_persons],
            epoch: 0,
            sweep: PersonSweep {
                total: vec![0; multi_persons],
                left: vec![0; multi_persons],
                ..PersonSweep::default()
            },
            child_masks: vec![0; multi_persons],
            touched: Vec::new(),
        }
    }

    /// The persons of `set`: its single-leaf persons and its distinct multi-leaf ones.
    pub fn count(&mut self, set: &PersonSet) -> PersonCount {
        set.count_with(self.distinct(&set.bag))
    }

    /// Distinct ids in `bag`, in one pass: each id is stamped with a fresh epoch when first
    /// met.
    fn distinct(&mut self, bag: &[u32]) -> u64 {
        if bag.is_empty() {
            return 0;
        }
        if self.epoch == u32::MAX {
            self.stamps.fill(0);
            self.epoch = 0;
        }
        self.epoch += 1;
        let epoch = self.epoch;
        let mut distinct = 0;
        for &p in bag {
            let stamp = &mut self.stamps[p as usize];
            if *stamp != epoch {
                *stamp = epoch;
                distinct += 1;
            }
        }
        distinct
    }

    /// The sweep's counters.
    pub fn sweep(&mut self) -> &mut PersonSweep {
        &mut self.sweep
    }
}

/// Two groups of leaf classes, *left* and *right*, with leaf classes moving from right to left
/// (Mondrian's threshold sweep): the distinct multi-leaf persons of each side, kept exactly by
/// two counters per person — its leaf classes in the region and on the left. A person is on
/// the left once it has one leaf class there and on the right until all of them are.
#[derive(Debug, Default)]
pub(crate) struct PersonSweep {
    total: Vec<u32>,
    left: Vec<u32>,
    touched: Vec<u32>,
    on_left: u64,
    on_right: u64,
}

impl PersonSweep {
    /// Puts the leaf classes `leaves` all on the right (the counters must be clear:
    /// [`Self::finish`] after each sweep).
    pub fn start(&mut self, persons: &LeafPersons, leaves: impl Iterator<Item = usize>) {
        self.on_left = 0;
        for leaf in leaves {
            for &p in persons.multi_of(leaf) {
                let total = &mut self.total[p as usize];
                if *total == 0 {
                    self.touched.push(p);
                }
                *total += 1;
            }
        }
        self.on_right = self.touched.len() as u64;
    }

    /// Moves leaf class `leaf` from the right to the left.
    #[inline]
    pub fn move_left(&mut self, persons: &LeafPersons, leaf: usize) {
        for &p in persons.multi_of(leaf) {
            let p = p as usize;
            let left = &mut self.left[p];
            if *left == 0 {
                self.on_left += 1;
            }
            *left += 1;
            if *left == self.total[p] {
                self.on_right -= 1;
            }
        }
    }

    /// Distinct multi-leaf persons on the left and on the right.
    pub fn sides(&self) -> (u64, u64) {
        (self.on_left, self.on_right)
    }

    /// Clears the counters of the persons touched.
    pub fn finish(&mut self) {
        for &p in &self.touched {
            self.total[p as usize] = 0;
            self.left[p as usize] = 0;
        }
        self.touched.clear();
        self.on_left = 0;
        self.on_right = 0;
    }
}

/// The distinct multi-leaf persons of every union of some of a node's children (at most 16),
/// from the children each person occurs in: `union(mask)` = persons − those whose children
/// all lie outside `mask`, a sum over subsets computed once for all masks.
pub(crate) struct ChildSplits {
    /// `within[m]`: multi-leaf persons all of whose children are in the set `m`
    within: Vec<u64>,
    full: usize,
}

impl ChildSplits {
    /// The splits of `children` (their person sets; at most 16), with `scratch`'s arrays.
    pub fn new(children: &[&PersonSet], scratch: &mut PersonScratch) -> Self {
        let c = children.len();
        debug_assert!(c <= 16);
        let full = (1usize << c) - 1;
        let masks = &mut scratch.child_masks;
        let touched = &mut scratch.touched;
        for (i, child) in children.iter().enumerate() {
            for &p in child.bag() {
                let mask = &mut masks[p as usize];
                if *mask == 0 {
                    touched.push(p);
                }
                *mask |= 1 << i;
            }
        }
        let mut within = vec![0u64; full + 1];
        for &p in touched.iter() {
            within[masks[p as usize] as usize] += 1;
            masks[p as usize] = 0;
        }
        touched.clear();
        // sum over subsets: within[m] = Σ_{s ⊆ m} (persons whose children are exactly s)
        for bit in 0..c {
            for m in 0..=full {
                if m & (1 << bit) != 0 {
                    within[m] += within[m ^ (1 << bit)];
                }
            }
        }
        Self { within, full }
    }

    /// Distinct multi-leaf persons of the union of the children in `mask`.
    pub fn union(&self, mask: usize) -> u64 {
        self.within[self.full] - self.within[self.full & !mask]
    }
}

/// The persons of the classes of a lattice node (the optimal search's roll-ups): per class,
/// its single-leaf persons, its leaf classes with NULL ids, and its multi-leaf persons (a
/// compressed-row histogram over the multi-leaf ids). Rolling up sums the first two and merges
/// only the multi-leaf persons, so a node costs its classes and multi-leaf pairs rather than
/// a histogram entry per person.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClassPersons {
    single: Vec<u64>,
    null_leaves: Vec<u64>,
    multi: Histograms,
}

impl ClassPersons {
    /// The leaf classes' persons.
    pub fn leaves(persons: &LeafPersons) -> Self {
        Self {
            single: persons.single.iter().map(|&n| u64::from(n)).collect(),
            null_leaves: persons.has_null.iter().map(|&n| u64::from(n)).collect(),
            multi: Histograms {
                offsets: persons.offsets.clone(),
                codes: persons.multi.clone(),
                counts: vec![1; persons.multi.len()],
            },
        }
    }

    /// The persons of the `classes` classes `class_of[c]` that the classes `c` roll up into;
    /// `multi_persons` bounds the multi-leaf ids.
    pub fn roll_up(
        &self,
        merger: &mut HistogramMerger,
        classes: usize,
        class_of: &[u32],
        entry_class: &mut Vec<u32>,
        multi_persons: usize,
    ) -> Self {
        let mut single = vec![0u64; classes];
        let mut null_leaves = vec![0u64; classes];
        for ((&c, &s), &z) in class_of.iter().zip(&self.single).zip(&self.null_leaves) {
            single[c as usize] += s;
            null_leaves[c as usize] += z;
        }
        entry_class.clear();
        for (c, w) in self.multi.offsets.windows(2).enumerate() {
            entry_class.extend(std::iter::repeat_n(class_of[c], (w[1] - w[0]) as usize));
        }
        let multi = merger.merge(
            classes,
            entry_class,
            &self.multi.codes,
            &self.multi.counts,
            multi_persons,
        );
        Self {
            single,
            null_leaves,
            multi,
        }
    }

    /// The persons of class `c`: the merged multi-leaf histogram has one entry per distinct
    /// person.
    #[inline]
    pub fn count(&self, c: usize) -> PersonCount {
        PersonCount {
            known: self.single[c] + self.multi.class(c).0.len() as u64,
            nulls: self.null_leaves[c] > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use super::*;
    use crate::rng::SplitMix64;

    /// Leaf classes of random persons: per leaf class, its person codes (`None` = NULL id).
    fn random_leaves(seed: u64, leaves: usize, persons: u32) -> Vec<BTreeSet<Option<u32>>> {
        let mut rng = SplitMix64(seed);
        let mut out = vec![BTreeSet::new(); leaves];
        for p in 0..persons {
            // most persons in one leaf class, some in up to 4
            let spread = if rng.below(3) == 0 {
                1 + rng.below(4)
            } else {
                1
            };
            for _ in 0..spread {
                out[rng.below(leaves as u64) as usize].insert(Some(p));
            }
        }
        for leaf in &mut out {
            if rng.below(5) == 0 {
                leaf.insert(None);
            }
        }
        out
    }

    /// The leaf persons of `leaves` through the frequency set's histograms (NULL code 0, a
    /// person p coded p + 1).
    fn leaf_persons(leaves: &[BTreeSet<Option<u32>>], persons: u32, sparse: bool) -> LeafPersons {
        let (mut class_of, mut codes, mut counts) = (Vec::new(), Vec::new(), Vec::new());
        for (c, leaf) in leaves.iter().enumerate() {
            for p in leaf {
                class_of.push(c as u32);
                codes.push(p.map_or(0, |p| p + 1));
                counts.push(2);
            }
        }
        // a small domain is kept dense, a large one sparse
        let cardinality = if sparse { persons as usize + 1 } else { 16 };
        let histograms = ClassHistograms::build(
            &mut HistogramMerger::default(),
            leaves.len(),
            &class_of,
            &codes,
            &counts,
            cardinality,
        );
        LeafPersons::new(&histograms, Some(0), cardinality)
    }

    /// persons(E) by definition, over the leaf classes of `group`.
    fn brute_force(leaves: &[BTreeSet<Option<u32>>], group: &[usize]) -> u64 {
        let ids: BTreeSet<Option<u32>> = group.iter().flat_map(|&l| leaves[l].clone()).collect();
        let known = ids.iter().filter(|p| p.is_some()).count() as u64;
        if known == 0 && ids.contains(&None) {
            1
        } else {
            known
        }
    }

    #[test]
    fn null_rule() {
        let count = |known, nulls| PersonCount { known, nulls }.persons();
        assert_eq!(count(0, false), 0);
        // NULL ids only: one person
        assert_eq!(count(0, true), 1);
        // NULL ids with known persons add none
        assert_eq!(count(3, true), 3);
        assert_eq!(count(3, false), 3);
    }

    /// Sets, sweeps and splits against the definition on random groups of random leaf
    /// classes.
    #[test]
    fn counts_match_the_definition() {
        for seed in 0..20u64 {
            // 15 persons fit a dense histogram (16 codes with NULL), 300 do not
            let (leaves_n, persons) = if seed % 2 == 0 { (12, 15) } else { (40, 300) };
            let leaves = random_leaves(seed, leaves_n, persons);
            let index = leaf_persons(&leaves, persons, seed % 2 == 1);
            let mut scratch = PersonScratch::new(index.multi_persons());
            let mut rng = SplitMix64(seed + 100);
            // groups: every leaf class in one of 4 groups
            let group_of: Vec<usize> = (0..leaves_n).map(|_| rng.below(4) as usize).collect();
            let mut sets = vec![PersonSet::default(); 4];
            for (leaf, &g) in group_of.iter().enumerate() {
                index.add(&mut sets[g], leaf);
            }
            for (g, set) in sets.iter().enumerate() {
                let members: Vec<usize> = (0..leaves_n).filter(|&l| group_of[l] == g).collect();
                assert_eq!(
                    scratch.count(set).persons(),
                    brute_force(&leaves, &members),
                    "seed {seed}, group {g}"
                );
            }
            // the union of groups 0 and 1 by adding sets
            let mut union = sets[0].clone();
            union.add(&sets[1]);
            let members: Vec<usize> = (0..leaves_n).filter(|&l| group_of[l] < 2).collect();
            assert_eq!(
                scratch.count(&union).persons(),
                brute_force(&leaves, &members)
            );
            // a sweep over the leaf classes in order, every cut checked; twice, so the
            // counters are clear after `finish`
            for _ in 0..2 {
                let sweep = scratch.sweep();
                sweep.start(&index, 0..leaves_n);
                let (mut left, mut right) = (PersonSet::default(), PersonSet::default());
                for leaf in 0..leaves_n {
                    index.add_counts(&mut right, leaf);
                }
                for cut in 0..leaves_n {
                    sweep.move_left(&index, cut);
                    index.add_counts(&mut left, cut);
                    index.remove_counts(&mut right, cut);
                    let (on_left, on_right) = sweep.sides();
                    let ahead: Vec<usize> = (0..=cut).collect();
                    let behind: Vec<usize> = (cut + 1..leaves_n).collect();
                    assert_eq!(
                        left.count_with(on_left).persons(),
                        brute_force(&leaves, &ahead),
                        "seed {seed}, left of {cut}"
                    );
                    assert_eq!(
                        right.count_with(on_right).persons(),
                        brute_force(&leaves, &behind),
                        "seed {seed}, right of {cut}"
                    );
                }
                sweep.finish();
            }
            // splits of the 4 groups, every mask
            let children: Vec<&PersonSet> = sets.iter().collect();
            let splits = ChildSplits::new(&children, &mut scratch);
            for mask in 0..16usize {
                let members: Vec<usize> = (0..leaves_n)
                    .filter(|&l| mask & (1 << group_of[l]) != 0)
                    .collect();
                let mut counts = PersonSet::default();
                for (g, set) in sets.iter().enumerate() {
                    if mask & (1 << g) != 0 {
                        counts.add(&set.counts_only());
                    }
                }
                assert_eq!(
                    counts.count_with(splits.union(mask)).persons(),
                    brute_force(&leaves, &members),
                    "seed {seed}, mask {mask:b}"
                );
            }
            // the scratch is clean after the splits
            assert!(scratch.child_masks.iter().all(|&m| m == 0));
        }
    }

    /// Class persons rolled up twice (leaf classes → 6 groups → 2) against the definition.
    #[test]
    fn rolled_up_class_persons_match_the_definition() {
        for seed in 0..10u64 {
            let leaves = random_leaves(seed, 30, 200);
            let index = leaf_persons(&leaves, 200, true);
            let mut rng = SplitMix64(seed + 7);
            let first: Vec<u32> = (0..30).map(|_| rng.below(6) as u32).collect();
            let second: Vec<u32> = (0..6).map(|g| g % 2).collect();
            let (mut merger, mut entries) = (HistogramMerger::default(), Vec::new());
            let leaf_level = ClassPersons::leaves(&index);
            for leaf in 0..30 {
                assert_eq!(
                    leaf_level.count(leaf).persons(),
                    brute_force(&leaves, &[leaf])
                );
            }
            let groups = leaf_level.roll_up(&mut merger, 6, &first, &mut entries, 200);
            let halves = groups.roll_up(&mut merger, 2, &second, &mut entries, 200);
            for g in 0..6 {
                let members: Vec<usize> = (0..30).filter(|&l| first[l] == g as u32).collect();
                assert_eq!(
                    groups.count(g).persons(),
                    brute_force(&leaves, &members),
                    "seed {seed}, group {g}"
                );
            }
            for h in 0..2 {
                let members: Vec<usize> = (0..30)
                    .filter(|&l| second[first[l] as usize] == h as u32)
                    .collect();
                assert_eq!(
                    halves.count(h).persons(),
                    brute_force(&leaves, &members),
                    "seed {seed}, half {h}"
                );
            }
        }
    }

    /// A worked example: persons 1 and 2 in leaf 0 only, person 3 in leaves 0 and 1, person 4
    /// in leaf 1 only, NULL ids in leaf 2 only.
    #[test]
    fn splits_single_and_multi_leaf_persons() {
        let leaves: Vec<BTreeSet<Option<u32>>> = vec![
            [Some(1), Some(2), Some(3)].into(),
            [Some(3), Some(4)].into(),
            [None].into(),
        ];
        let index = leaf_persons(&leaves, 5, true);
        assert_eq!(index.single, vec![2, 1, 0]);
        assert_eq!(index.has_null, vec![false, false, true]);
        assert_eq!(index.multi_persons(), 1);
        assert_eq!(index.multi_of(0), &[0]);
        assert_eq!(index.multi_of(1), &[0]);
        assert_eq!(index.multi_of(2), &[] as &[u32]);
        let mut scratch = PersonScratch::new(1);
        let mut set = PersonSet::default();
        // leaves 0 and 1: persons 1, 2, 3, 4 (3 once)
        index.add(&mut set, 0);
        index.add(&mut set, 1);
        assert_eq!(
            scratch.count(&set),
            PersonCount {
                known: 4,
                nulls: false
            }
        );
        // leaf 2 alone: NULL ids only, one person
        let mut nulls = PersonSet::default();
        index.add(&mut nulls, 2);
        assert_eq!(scratch.count(&nulls).persons(), 1);
        // all three: the NULL ids add none
        set.add(&nulls);
        assert_eq!(scratch.count(&set).persons(), 4);
        let by_leaf: BTreeMap<usize, u64> =
            (0..3).map(|l| (l, brute_force(&leaves, &[l]))).collect();
        assert_eq!(by_leaf, BTreeMap::from([(0, 3), (1, 2), (2, 1)]));
    }
}
