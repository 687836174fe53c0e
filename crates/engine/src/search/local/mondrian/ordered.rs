//! Cuts of ordered quasi-identifiers: a threshold between two distinct values of the region
//! (see [`super::Threshold`]).

use super::{Cutter, Threshold};
use crate::search::persons::PersonCount;

impl Cutter<'_> {
    /// The allowable threshold of ordered QI `q` (see [`Threshold`]).
    pub(super) fn ordered_cut(&mut self, q: usize, records: &mut [u32]) -> Option<Vec<usize>> {
        let layout = self.layout;
        let n = layout.len(records);
        let (lo, hi) = (0..n)
            .map(|i| layout.key(records, i, q))
            .fold((u32::MAX, 0), |(lo, hi), r| (lo.min(r), hi.max(r)));
        if n == 0 || lo == hi {
            return None;
        }
        let ranks = self.axes[q].rank_of_leaf().len();
        self.sort_records(records, ranks, |record| record[q]);
        let (_, _, end) = self.best_threshold(q, records)?;
        Some(vec![end, n - end])
    }

    /// The allowable threshold of `records`, sorted by QI `q` (runs of equal keys of `q`
    /// are never cut), that [`Threshold`] prefers: (the parts' cost, the left part's distance
    /// from half the rows, the end of the left part).
    pub(super) fn best_threshold(
        &mut self,
        q: usize,
        records: &[u32],
    ) -> Option<(f64, u64, usize)> {
        let layout = self.layout;
        let n = layout.len(records);
        let total_rows = layout.rows(records);
        let k = self.judge.k();
        let with_sensitive = self.judge.has_sensitive();
        // the left part grows record by record and the right shrinks; multi-leaf persons are
        // counted by the sweeps of the person criteria
        let (mut left, mut right) = (self.judge.tally(), self.judge.tally());
        if with_sensitive {
            for i in 0..n {
                self.judge
                    .add_leaf_counts(&mut right, layout.member(records, i) as usize);
            }
            for (_, persons, scratch) in self.judge.person_criteria() {
                let members = (0..n).map(|i| layout.member(records, i) as usize);
                scratch.sweep().start(persons, members);
            }
        }
        let by_loss = self.options.threshold == Threshold::Loss;
        if by_loss && self.runs_fold {
            self.fold_runs(records, q);
        } else if by_loss {
            self.fold_cells(records, q, false);
            self.fold_cells(records, q, true);
        }
        let mut left_persons = std::mem::take(&mut self.left_persons);
        let mut right_persons = std::mem::take(&mut self.right_persons);
        left_persons.resize(left.persons.len(), PersonCount::default());
        right_persons.resize(left.persons.len(), PersonCount::default());
        // (the parts' cost, distance of the left part's rows from half, end of the left part)
        let mut best: Option<(f64, u64, usize)> = None;
        let mut i = 0;
        while i < n {
            let value = layout.key(records, i, q);
            while i < n && layout.key(records, i, q) == value {
                if with_sensitive {
                    let m = layout.member(records, i) as usize;
                    self.judge.add_leaf_counts(&mut left, m);
                    self.judge.remove_leaf_counts(&mut right, m);
                    for (_, persons, scratch) in self.judge.person_criteria() {
                        scratch.sweep().move_left(persons, m);
                    }
                } else {
                    left.rows += layout.size(records, i);
                }
                i += 1;
            }
            if i == n {
                break;
            }
            let right_rows = total_rows - left.rows;
            if left.rows < k || right_rows < k {
                continue;
            }
            let distance = (2 * left.rows).abs_diff(total_rows);
            let cost = if by_loss {
                // prefix i − 1 covers the first i records; suffix j the last j + 1
                let j = n - i - 1;
                left.rows as f64 * self.prefix[i - 1] + right_rows as f64 * self.suffix[j]
            } else {
                0.0
            };
            if best.is_some_and(|(c, b, _)| (c, b) <= (cost, distance)) {
                continue;
            }
            let allowable = if with_sensitive {
                for (s, _, scratch) in self.judge.person_criteria() {
                    let (on_left, on_right) = scratch.sweep().sides();
                    left_persons[s] = left.persons[s].count_with(on_left);
                    right_persons[s] = right.persons[s].count_with(on_right);
                }
                self.judge.passes_with(&left, &left_persons)
                    && self.judge.passes_with(&right, &right_persons)
            } else {
                true
            };
            if allowable {
                best = Some((cost, distance, i));
            }
        }
        if with_sensitive {
            for (_, _, scratch) in self.judge.person_criteria() {
                scratch.sweep().finish();
            }
        }
        self.left_persons = left_persons;
        self.right_persons = right_persons;
        best
    }
}
