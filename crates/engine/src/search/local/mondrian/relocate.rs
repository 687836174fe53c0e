//! Relocation: leaf classes moved between the classes of a zone while a move lowers the
//! Loss (the rule: the module documentation of [`super`], "Refinement").
//!
//! A class's cells are folds ([`Fold`]: a rank range, or a climb in a nested hierarchy), so a
//! class without one of its members is the join of the folds before and after it, and a class
//! with one more is its fold plus that member's keys: a candidate move costs d joins, not a
//! pass over the class. Destinations are tried cheapest class first, and the search stops once
//! even an unchanged destination (its rows plus the member's, times its cells' cost) would
//! cost more than the move gains; a destination's loss is summed QI by QI and dropped as soon
//! as it exceeds the gain left.

use std::ops::Range;

use super::Cutter;
use super::folds::Fold;
use crate::search::local::Cell;

/// Tolerance below which a gain is not a gain (floating-point noise).
const EPSILON: f64 = 1e-9;

impl<'a> Cutter<'a> {
    /// Moves leaf classes (records) between the classes `classes` of `records`, each meeting
    /// the policy, while a move lowers the zone's Σ rows × cell cost, for at most `rounds`
    /// rounds; then reorders `records` so that every class is a run again: the runs in
    /// `classes`, their cells in `cells` (d per class).
    pub(super) fn relocate(
        &mut self,
        records: &mut [u32],
        classes: &mut Vec<Range<usize>>,
        cells: &mut Vec<Cell>,
        rounds: usize,
    ) {
        let layout = self.layout;
        let (d, width) = (layout.d, layout.width);
        let (qis, axes) = (self.freq.qis(), self.axes);
        let k = self.judge.k();
        let mut members: Vec<Vec<u32>> = classes
            .iter()
            .map(|r| (r.start as u32..r.end as u32).collect())
            .collect();
        let key = |i: u32, p: usize| records[i as usize * width + p];
        let size = |i: u32| layout.size(records, i as usize);
        let cost_of = |folds: &[Fold<'a>]| -> f64 {
            folds
                .iter()
                .enumerate()
                .map(|(p, f)| axes[p].cost(&qis[p], f.cell(&qis[p], &axes[p])))
                .sum()
        };
        let fold_into = |out: &mut Vec<Fold<'a>>, i: u32, first: bool| {
            if first {
                out.clear();
                out.extend((0..d).map(|p| Fold::start(&qis[p], &axes[p], key(i, p))));
            } else {
                for (p, f) in out.iter_mut().enumerate() {
                    f.add(key(i, p));
                }
            }
        };
        let class_folds = |m: &[u32], out: &mut Vec<Fold<'a>>| {
            for (j, &i) in m.iter().enumerate() {
                fold_into(out, i, j == 0);
            }
        };
        let c = members.len();
        let mut folds: Vec<Vec<Fold>> = vec![Vec::with_capacity(d); c];
        for (m, f) in members.iter().zip(&mut folds) {
            class_folds(m, f);
        }
        let qi_costs = |folds: &[Fold<'a>], out: &mut [f64]| {
            for (p, (f, out)) in folds.iter().zip(out).enumerate() {
                *out = axes[p].cost(&qis[p], f.cell(&qis[p], &axes[p]));
            }
        };
        let mut qi_cost = vec![0.0; c * d];
        for (f, out) in folds.iter().zip(qi_cost.chunks_exact_mut(d.max(1))) {
            qi_costs(f, out);
        }
        let mut cc: Vec<f64> = folds.iter().map(|f| cost_of(f)).collect();
        let mut rows: Vec<u64> = members
            .iter()
            .map(|m| m.iter().map(|&i| size(i)).sum())
            .collect();
        let mut prefix: Vec<Vec<Fold<'a>>> = Vec::new();
        let mut without: Vec<Fold> = Vec::with_capacity(d);
        let mut suffix: Vec<Fold> = Vec::with_capacity(d);
        for _ in 0..rounds {
            let mut moved = false;
            // destinations cheapest first, as the round starts (a move changes two classes'
            // costs: the order may then stop a search early, never allow a losing move)
            let mut by_cost: Vec<usize> = (0..c).collect();
            by_cost.sort_by(|&a, &b| cc[a].total_cmp(&cc[b]).then(a.cmp(&b)));
            for a in 0..c {
                // a class whose cells cost nothing gains nothing by losing a member
                if cc[a] <= EPSILON {
                    continue;
                }
                let n = members[a].len();
                // the folds of each prefix of the class's members
                prefix.resize_with(n, || Vec::with_capacity(d));
                for j in 1..n {
                    let (done, rest) = prefix.split_at_mut(j);
                    let previous = &done[j - 1];
                    let out = &mut rest[0];
                    if j == 1 {
                        fold_into(out, members[a][0], true);
                    } else {
                        out.clone_from(previous);
                        fold_into(out, members[a][j - 1], false);
                    }
                }
                // (gain, position of the record, destination)
                let mut best: Option<(f64, usize, usize)> = None;
                suffix.clear();
                for j in (0..n).rev() {
                    let i = members[a][j];
                    let s = size(i);
                    // the class without member j: its prefix before j joined with the
                    // suffix after it
                    let alone = n == 1;
                    if !alone {
                        without.clear();
                        if j == 0 {
                            without.extend_from_slice(&suffix);
                        } else {
                            without.extend_from_slice(&prefix[j]);
                            if !suffix.is_empty() {
                                for (w, s) in without.iter_mut().zip(&suffix) {
                                    w.join(s);
                                }
                            }
                        }
                    }
                    // the suffix from j on, for the next (smaller) j
                    fold_into(&mut suffix, i, j == n - 1);
                    if alone || rows[a] - s < k {
                        continue;
                    }
                    let gain_a = rows[a] as f64 * cc[a] - (rows[a] - s) as f64 * cost_of(&without);
                    for &b in &by_cost {
                        let floor = best.map_or(0.0, |(g, ..)| g);
                        if s as f64 * cc[b] >= gain_a - floor - EPSILON {
                            break;
                        }
                        if b == a {
                            continue;
                        }
                        // the loss of b, QI by QI: its cells only grow, so the move is
                        // ruled out as soon as the growth so far exceeds what is left
                        let budget = gain_a - floor - EPSILON;
                        let mut loss_b = s as f64 * cc[b];
                        let grown = (rows[b] + s) as f64;
                        for p in 0..d {
                            let mut f = folds[b][p];
                            f.add(key(i, p));
                            let cost = axes[p].cost(&qis[p], f.cell(&qis[p], &axes[p]));
                            loss_b += grown * (cost - qi_cost[b * d + p]);
                            if loss_b >= budget {
                                break;
                            }
                        }
                        if loss_b < budget {
                            best = Some((gain_a - loss_b, j, b));
                        }
                    }
                }
                let Some((_, j, b)) = best else {
                    continue;
                };
                if !self.move_passes(records, &members[a], j, &members[b]) {
                    continue;
                }
                let i = members[a].remove(j);
                members[b].push(i);
                for x in [a, b] {
                    class_folds(&members[x], &mut folds[x]);
                    cc[x] = cost_of(&folds[x]);
                    qi_costs(&folds[x], &mut qi_cost[x * d..(x + 1) * d]);
                    rows[x] = members[x].iter().map(|&i| size(i)).sum();
                }
                moved = true;
            }
            if !moved {
                break;
            }
        }
        // the classes as runs again, in class order
        self.scratch.clear();
        classes.clear();
        cells.clear();
        for (m, f) in members.iter().zip(&folds) {
            let start = self.scratch.len() / width;
            for &i in m {
                let i = i as usize;
                self.scratch
                    .extend_from_slice(&records[i * width..(i + 1) * width]);
            }
            classes.push(start..start + m.len());
            cells.extend(f.iter().enumerate().map(|(p, f)| f.cell(&qis[p], &axes[p])));
        }
        records.copy_from_slice(&self.scratch);
    }

    /// Whether moving member `j` of `from` to `to` leaves both classes meeting the policy.
    fn move_passes(&mut self, records: &[u32], from: &[u32], j: usize, to: &[u32]) -> bool {
        let moved = from[j];
        let mut left = self.judge.tally();
        for (_, &i) in from.iter().enumerate().filter(|&(x, _)| x != j) {
            self.add_record(&mut left, records, i as usize, true);
        }
        let mut right = self.judge.tally();
        for &i in to.iter().chain([&moved]) {
            self.add_record(&mut right, records, i as usize, true);
        }
        self.judge.passes(&left) && self.judge.passes(&right)
    }
}
