//! Cuts of hierarchical quasi-identifiers: the region's lowest common node split into its
//! children present (see the module documentation of [`super`]).

use std::ops::Range;

use super::{Cell, Cutter, EXHAUSTIVE_CHILDREN, Tally};
use crate::search::persons::{ChildSplits, PersonCount, PersonSet};

/// One child of a hierarchical cut: its records (a run of the sorted region), tally and
/// smallest leaf class (the tie-break between children of equal size).
struct Child {
    records: Range<usize>,
    tally: Tally,
    smallest: u32,
}

impl Cutter<'_> {
    /// Splits the region's lowest common node of QI `q` into its children (see the module
    /// documentation).
    pub(super) fn hierarchical_cut(
        &mut self,
        q: usize,
        cell: Cell,
        records: &mut [u32],
    ) -> Option<Vec<usize>> {
        let freq = self.freq;
        let qi = &freq.qis()[q];
        let child_level = match cell {
            Cell::Node { level: 0, .. } | Cell::Interval { .. } | Cell::Set { .. } => return None,
            Cell::Node { level, .. } => level as usize - 1,
            // NULL mixed with values: split at the top level, where NULL has its own code
            Cell::Top => qi.height().checked_sub(1)?,
        };
        let map = qi.leaf_map(child_level);
        self.sort_records(records, qi.cardinality(child_level), |record| {
            map[record[q] as usize]
        });
        let layout = self.layout;
        let n = layout.len(records);
        let with_sensitive = self.judge.has_sensitive();
        let mut children: Vec<Child> = Vec::new();
        let mut i = 0;
        while i < n {
            let (start, child) = (i, self.keys_sorted_child(map, records, i, q));
            let mut tally = self.judge.tally();
            let mut smallest = u32::MAX;
            while i < n && self.keys_sorted_child(map, records, i, q) == child {
                self.add_record(&mut tally, records, i, with_sensitive);
                smallest = smallest.min(layout.member(records, i));
                i += 1;
            }
            children.push(Child {
                records: start..i,
                tally,
                smallest,
            });
        }
        if children.len() < 2 {
            return None;
        }
        let groups = match self.pooled_parts(&children) {
            Some(groups) => groups,
            None if children.len() <= EXHAUSTIVE_CHILDREN => self.best_two_groups(&children)?,
            None => return None,
        };
        // the parts' records consecutive, in part order
        let width = layout.width;
        self.scratch.clear();
        let mut lengths = Vec::with_capacity(groups.len());
        for group in &groups {
            let mut length = 0;
            for &c in group {
                let run = &children[c].records;
                self.scratch
                    .extend_from_slice(&records[run.start * width..run.end * width]);
                length += run.len();
            }
            lengths.push(length);
        }
        records.copy_from_slice(&self.scratch);
        Some(lengths)
    }

    /// The child code of record `i` (QI `q`'s leaf mapped by `map`).
    fn keys_sorted_child(&self, map: &[u32], records: &[u32], i: usize, q: usize) -> u32 {
        map[self.layout.key(records, i, q) as usize]
    }

    /// Children meeting the policy alone as parts, the others pooled; `None` unless that
    /// gives at least two parts. Parts are lists of children.
    fn pooled_parts(&mut self, children: &[Child]) -> Option<Vec<Vec<usize>>> {
        // (children, tally, smallest leaf class)
        let mut parts: Vec<(Vec<usize>, Tally, u32)> = Vec::new();
        let mut pool: (Vec<usize>, Tally) = (Vec::new(), self.judge.tally());
        for (c, child) in children.iter().enumerate() {
            if self.judge.passes(&child.tally) {
                parts.push((vec![c], child.tally.clone(), child.smallest));
            } else {
                pool.0.push(c);
                pool.1.add(&child.tally);
            }
        }
        // largest first, so the pool joins the smallest parts
        parts.sort_by(|a, b| b.1.rows.cmp(&a.1.rows).then(a.2.cmp(&b.2)));
        while !pool.0.is_empty() && !self.judge.passes(&pool.1) {
            let (members, tally, _) = parts.pop()?;
            pool.0.extend(members);
            pool.1.add(&tally);
        }
        let mut parts: Vec<Vec<usize>> = parts.into_iter().map(|(c, ..)| c).collect();
        if !pool.0.is_empty() {
            parts.push(pool.0);
        }
        (parts.len() >= 2).then_some(parts)
    }

    /// The most balanced split of the children into two groups that both meet the policy.
    /// The multi-leaf persons of every split are read off the children each person is in
    /// ([`ChildSplits`]), so a split costs its children's counts, not their persons.
    fn best_two_groups(&mut self, children: &[Child]) -> Option<Vec<Vec<usize>>> {
        let c = children.len();
        let splits: Vec<(usize, ChildSplits)> = self
            .judge
            .person_criteria()
            .map(|(s, _, scratch)| {
                let sets: Vec<&PersonSet> =
                    children.iter().map(|ch| &ch.tally.persons[s]).collect();
                (s, ChildSplits::new(&sets, scratch))
            })
            .collect();
        let counts: Vec<Tally> = children.iter().map(|ch| ch.tally.counts_only()).collect();
        let total_rows: u64 = counts.iter().map(|t| t.rows).sum();
        let (mut left, mut right) = (self.judge.tally(), self.judge.tally());
        let mut left_persons = vec![PersonCount::default(); left.persons.len()];
        let mut right_persons = left_persons.clone();
        let full = (1usize << c) - 1;
        let mut best: Option<(u64, u32)> = None;
        // the last child always goes right: each split is tried once
        for mask in 1u32..(1 << (c - 1)) {
            left.clear();
            right.clear();
            for (i, child) in counts.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    left.add(child);
                }
            }
            let distance = (2 * left.rows).abs_diff(total_rows);
            if best.is_some_and(|(b, _)| b <= distance) {
                continue;
            }
            for (i, child) in counts.iter().enumerate() {
                if mask & (1 << i) == 0 {
                    right.add(child);
                }
            }
            for (s, splits) in &splits {
                left_persons[*s] = left.persons[*s].count_with(splits.union(mask as usize));
                right_persons[*s] =
                    right.persons[*s].count_with(splits.union(full & !(mask as usize)));
            }
            if self.judge.passes_with(&left, &left_persons)
                && self.judge.passes_with(&right, &right_persons)
            {
                best = Some((distance, mask));
            }
        }
        let (_, mask) = best?;
        let (a, b): (Vec<usize>, Vec<usize>) = (0..c).partition(|&i| mask & (1 << i) != 0);
        Some(vec![a, b])
    }
}
