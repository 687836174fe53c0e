//! Mondrian's outlier trim: within the suppression budget, the leaf classes whose removal
//! lowers the Loss are suppressed (see the rule in the documentation of [`super`]).

use std::ops::Range;

use super::{Cutter, TRIM_CANDIDATES};
use crate::search::local::Cell;

impl Cutter<'_> {
    /// Suppresses outliers within `budget` rows where that lowers the Loss: per class, the leaf
    /// class whose removal lowers the class's total cell cost by more than its own rows cost
    /// when suppressed (d per row), the rest still meeting the policy; best gains first, one
    /// per class per round, until no gain or no budget is left.
    ///
    /// Class c is the first `kept[c]` records of `regions[c]` (in `points`); a trimmed record
    /// moves behind them, the others keeping their order. A class without a candidate in one
    /// round has none in the next (its records are the same and the budget only shrinks), so
    /// only the others are searched again.
    pub(super) fn trim_outliers(
        &mut self,
        points: &mut [u32],
        regions: &[Range<usize>],
        kept: &mut [usize],
        cells: &mut [Cell],
        mut budget: u64,
    ) {
        let d = self.layout.d;
        let per_suppressed_row = d as f64;
        let layout = self.layout;
        let width = layout.width;
        let mut open: Vec<usize> = (0..regions.len()).collect();
        loop {
            // (gain, class, position of the record in it)
            let mut candidates: Vec<(f64, usize, usize)> = Vec::new();
            for &c in &open {
                let n = kept[c];
                if !(2..=TRIM_CANDIDATES).contains(&n) {
                    continue;
                }
                let records = &points[layout.span(&regions[c])][..n * width];
                // the class's cells as they stand (recomputed below when it is trimmed)
                let before =
                    layout.rows(records) as f64 * self.cells_cost(&cells[c * d..(c + 1) * d]);
                let mut best: Option<(f64, usize)> = None;
                for i in 0..n {
                    let rows = layout.size(records, i);
                    if rows > budget {
                        continue;
                    }
                    // the cost without the record is at least 0, so the gain is at most
                    // `bound` (rounding is monotonic, so in floating point too): most records
                    // of tight classes are ruled out without computing their cells
                    let bound = before - rows as f64 * per_suppressed_row;
                    if bound <= 1e-9 || best.is_some_and(|(b, _)| b >= bound) {
                        continue;
                    }
                    let gain = before
                        - self.records_cost(records, Some(i))
                        - rows as f64 * per_suppressed_row;
                    if gain <= 1e-9 || best.is_some_and(|(b, _)| b >= gain) {
                        continue;
                    }
                    let mut tally = self.judge.tally();
                    for j in (0..n).filter(|&j| j != i) {
                        self.add_record(&mut tally, records, j, true);
                    }
                    if self.judge.passes(&tally) {
                        best = Some((gain, i));
                    }
                }
                if let Some((gain, i)) = best {
                    candidates.push((gain, c, i));
                }
            }
            candidates.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            open.clear();
            for (_, c, i) in candidates {
                open.push(c);
                let records = &mut points[layout.span(&regions[c])][..kept[c] * width];
                let rows = layout.size(records, i);
                if rows <= budget {
                    budget -= rows;
                    records[i * width..].rotate_left(width);
                    kept[c] -= 1;
                    let mut trimmed = Vec::with_capacity(d);
                    self.region_cells(&records[..kept[c] * width], &mut trimmed);
                    cells[c * d..(c + 1) * d].copy_from_slice(&trimmed);
                }
            }
            if open.is_empty() {
                return;
            }
            open.sort_unstable();
        }
    }
}
