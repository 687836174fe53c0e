//! Rollout ("pilot") choice of a region's cut.
//!
//! For each quasi-identifier with an allowable cut, the region is cut on it (as the greedy
//! rule cuts that QI) and each part is then partitioned to the end by the greedy rule; the QI
//! whose completed partition costs least is cut. The greedy rule's own choice is among those
//! tried, so by induction over the regions a rollout choice never costs more than the greedy
//! rule on the same region.

use std::ops::Range;

use super::{Cell, Cutter, parts};

impl Cutter<'_> {
    /// The cut, among each QI's, whose completion by the greedy rule costs least; ties to the
    /// widest QI (the greedy choice).
    pub(super) fn pilot_cut(
        &mut self,
        order: &[(f64, usize, Cell)],
        records: &mut [u32],
        width: usize,
    ) -> Option<Vec<usize>> {
        // each try cuts a copy of the region; the best try's copy is kept
        let mut trial = std::mem::take(&mut self.trial);
        let mut kept = std::mem::take(&mut self.kept_trial);
        let mut best: Option<(f64, Vec<usize>)> = None;
        let mut tried = 0;
        for &(_, q, cell) in order {
            // no completion costs less than nothing
            if tried == width || best.as_ref().is_some_and(|(b, _)| *b <= 0.0) {
                break;
            }
            trial.clear();
            trial.extend_from_slice(records);
            let Some(lengths) = self.cut_on(q, cell, &mut trial) else {
                continue;
            };
            tried += 1;
            let bound = best.as_ref().map_or(f64::INFINITY, |(b, _)| *b);
            let mut cost = 0.0;
            for part in parts(0, &lengths) {
                cost += self.completed_cost(&mut trial[self.layout.span(&part)], bound - cost);
                if cost >= bound {
                    break;
                }
            }
            if cost < bound {
                best = Some((cost, lengths));
                std::mem::swap(&mut trial, &mut kept);
            }
        }
        // the completions reordered records within each part only
        let best = best.map(|(_, lengths)| {
            records.copy_from_slice(&kept);
            lengths
        });
        self.trial = trial;
        self.kept_trial = kept;
        best
    }

    /// Σ over the rows of the classes the greedy rule makes of `records` of their cells' cost;
    /// once it reaches `bound`, some figure at least `bound`.
    fn completed_cost(&mut self, records: &mut [u32], bound: f64) -> f64 {
        let layout = self.layout;
        let mut total = 0.0;
        let mut stack: Vec<Range<usize>> = std::iter::once(0..layout.len(records)).collect();
        while let Some(region) = stack.pop() {
            let span = layout.span(&region);
            let cut = match self.widest_first(&records[span.clone()]) {
                Some(order) => self.greedy_cut(order, &mut records[span.clone()]),
                None => None,
            };
            match cut {
                Some(lengths) => stack.extend(parts(region.start, &lengths)),
                None => {
                    total += layout.rows(&records[span]) as f64 * self.cells_cost(&self.cells);
                    if total >= bound {
                        return total;
                    }
                }
            }
        }
        total
    }
}
