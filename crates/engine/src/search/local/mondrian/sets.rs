//! Mondrian's cuts of set-based categorical quasi-identifiers ([`crate::search::local::sets`]).
//!
//! A set QI has no order and no hierarchy: a cut splits the region's values into two groups,
//! each part publishing the set of its own. Which split? The region's values are ordered by a
//! statistic that puts values of similar rows next to each other, and the order is cut like
//! an ordered QI, at the allowable threshold whose parts cost least ([`Threshold::Loss`]: all
//! QIs' cells, each part weighted by its rows). Several orders are tried and the cheapest cut
//! of any of them taken:
//! - by the value's rows in the region (most first): the frequent values apart from the rare;
//! - per other ordered QI, by the mean rank of the value's rows on it (values of similar ages
//!   together, so that both parts' age intervals narrow);
//! - per other categorical QI, by the share of the value's rows holding that QI's most
//!   frequent value in the region (values that go with the same category together).
//!
//! NULL comes first in every order (so that a cut can set it apart: a class mixing NULL with
//! values publishes `*`). Ties go to the smaller leaf code (value order): the cut depends on
//! the region alone.
//!
//! [`Threshold::Loss`]: super::Threshold::Loss

use super::Cutter;
use crate::search::local::{Cell, QiAxis};
use crate::search::{FrequencySet, QiDomain};

/// Per set QI, what counting its distinct values in a fold and ordering its values needs.
pub(super) struct SetScratch<'a> {
    /// per QI: per leaf, the fold that last saw it (empty for the other QIs)
    seen: Vec<Vec<u32>>,
    /// the current fold
    stamp: u32,
    /// per QI: distinct non-NULL leaves in the current fold, whether NULL is among them, and
    /// one leaf seen
    count: Vec<u32>,
    with_null: Vec<bool>,
    first: Vec<u32>,
    /// per QI, its NULL leaf
    null_leaves: &'a [Option<u32>],
    /// per leaf of the QI being cut: its position among the region's values (scratch)
    slot: Vec<u32>,
    /// per leaf of the QI being cut: its sort key in the order tried (scratch)
    key: Vec<u32>,
}

impl<'a> SetScratch<'a> {
    pub(super) fn new(
        freq: &FrequencySet,
        axes: &[QiAxis],
        null_leaves: &'a [Option<u32>],
    ) -> Self {
        let d = axes.len();
        let widest = freq
            .qis()
            .iter()
            .zip(axes)
            .filter(|(_, axis)| axis.is_set())
            .map(|(qi, _)| qi.leaves())
            .max()
            .unwrap_or(0);
        Self {
            seen: freq
                .qis()
                .iter()
                .zip(axes)
                .map(|(qi, axis)| {
                    if axis.is_set() {
                        vec![0; qi.leaves()]
                    } else {
                        Vec::new()
                    }
                })
                .collect(),
            stamp: 0,
            count: vec![0; d],
            with_null: vec![false; d],
            first: vec![0; d],
            null_leaves,
            slot: vec![u32::MAX; widest],
            key: vec![0; widest],
        }
    }

    /// Starts a fold: no value seen.
    pub(super) fn start_fold(&mut self) {
        if self.stamp == u32::MAX {
            self.seen.iter_mut().for_each(|s| s.fill(0));
            self.stamp = 0;
        }
        self.stamp += 1;
        self.count.fill(0);
        self.with_null.fill(false);
    }

    /// Adds leaf `leaf` of set QI `q` to the fold.
    #[inline]
    pub(super) fn fold(&mut self, q: usize, leaf: u32) {
        let seen = &mut self.seen[q][leaf as usize];
        if *seen == self.stamp {
            return;
        }
        *seen = self.stamp;
        if Some(leaf) == self.null_leaves[q] {
            self.with_null[q] = true;
        } else {
            self.count[q] += 1;
        }
        self.first[q] = leaf;
    }

    /// The cell of set QI `q` over the fold so far.
    pub(super) fn folded_cell(&self, q: usize, qi: &QiDomain, axis: &QiAxis) -> Cell {
        axis.set_cell(qi, self.count[q], self.with_null[q], self.first[q])
    }
}

impl Cutter<'_> {
    /// The cheapest allowable cut of set QI `q` among the orders of its values (see the
    /// module documentation): the records reordered so that the parts are consecutive, and
    /// the parts' lengths.
    pub(super) fn set_cut(&mut self, q: usize, records: &mut [u32]) -> Option<Vec<usize>> {
        let layout = self.layout;
        let n = layout.len(records);
        let d = layout.d;
        // the region's values, and per value its rows and per other QI its statistic
        let mut values: Vec<u32> = Vec::new();
        for i in 0..n {
            let leaf = layout.key(records, i, q) as usize;
            if self.sets.slot[leaf] == u32::MAX {
                self.sets.slot[leaf] = values.len() as u32;
                values.push(leaf as u32);
            }
        }
        let v = values.len();
        if v < 2 {
            self.clear_slots(&values);
            return None;
        }
        // the most frequent leaf of each categorical QI in the region (rows, then leaf)
        let modes: Vec<Option<u32>> = (0..d)
            .map(|p| {
                if p == q || self.axes[p].is_ordered() {
                    return None;
                }
                let mut counts: hashbrown::HashMap<u32, u64> = hashbrown::HashMap::new();
                for i in 0..n {
                    *counts.entry(layout.key(records, i, p)).or_default() +=
                        layout.size(records, i);
                }
                counts
                    .into_iter()
                    .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
                    .map(|(leaf, _)| leaf)
            })
            .collect();
        // statistics: [rows, then per other QI its mean rank / share of the mode], per value
        let mut rows = vec![0f64; v];
        let mut sums = vec![0f64; v * d];
        for i in 0..n {
            let at = self.sets.slot[layout.key(records, i, q) as usize] as usize;
            let size = layout.size(records, i) as f64;
            rows[at] += size;
            for p in 0..d {
                if p == q {
                    continue;
                }
                let key = layout.key(records, i, p);
                let x = if self.axes[p].is_ordered() {
                    f64::from(key)
                } else {
                    f64::from(u8::from(Some(key) == modes[p]))
                };
                sums[at * d + p] += size * x;
            }
        }
        let null = self.sets.null_leaves[q];
        let mut best: Option<(f64, u64, Vec<u32>)> = None;
        let mut last_tried: Option<Vec<u32>> = None;
        // each order: the statistic per value (ascending), `None` for the rows' order
        for p in std::iter::once(None).chain((0..d).filter(|&p| p != q).map(Some)) {
            let stat = |at: usize| match p {
                None => -rows[at],
                Some(p) => sums[at * d + p] / rows[at].max(1.0),
            };
            let mut order: Vec<usize> = (0..v).collect();
            order.sort_by(|&a, &b| {
                let (la, lb) = (values[a], values[b]);
                (Some(la) != null)
                    .cmp(&(Some(lb) != null))
                    .then(stat(a).total_cmp(&stat(b)))
                    .then(la.cmp(&lb))
            });
            for (position, &at) in order.iter().enumerate() {
                self.sets.key[values[at] as usize] = position as u32;
            }
            let key = std::mem::take(&mut self.sets.key);
            self.sort_records(records, v, |record| key[record[q] as usize]);
            let keys: Vec<u32> = order.iter().map(|&at| values[at]).collect();
            self.sets.key = key;
            last_tried = Some(keys.clone());
            if let Some((cost, distance, end)) = self.best_threshold(q, records)
                && best
                    .as_ref()
                    .is_none_or(|(c, b, _)| (cost, distance) < (*c, *b))
            {
                let _ = end;
                best = Some((cost, distance, keys));
            }
        }
        self.clear_slots(&values);
        let (_, _, order) = best?;
        if last_tried.as_ref() != Some(&order) {
            for (position, &leaf) in order.iter().enumerate() {
                self.sets.key[leaf as usize] = position as u32;
            }
            let key = std::mem::take(&mut self.sets.key);
            self.sort_records(records, v, |record| key[record[q] as usize]);
            self.sets.key = key;
        }
        let (_, _, end) = self.best_threshold(q, records)?;
        Some(vec![end, n - end])
    }

    fn clear_slots(&mut self, values: &[u32]) {
        for &leaf in values {
            self.sets.slot[leaf as usize] = u32::MAX;
        }
    }
}
