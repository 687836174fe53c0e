//! The refinement of small regions: a region of at most [`Refinement::zone_rows`] rows (a
//! *zone*) is partitioned to the end by one thread, choosing the cuts of its regions of at
//! most [`Refinement::pilot_rows`] rows by rollout ([`super::pilot`]); then records move
//! between the zone's classes while a move lowers the Loss ([`super::relocate`]), the classes
//! that admit a cut afterwards are cut again, and so on.

use std::ops::Range;
use std::sync::atomic::Ordering;

use super::{Cell, Cutter, FinishedClasses, parts};

/// How small regions are refined; the default is what measured best on Adult against its
/// cost (BENCHMARKS.md, "Mondrian with hierarchies (issue 37)").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refinement {
    /// Regions of at most this many rows are zones: partitioned by one thread, their classes
    /// then refined together.
    pub zone_rows: u64,
    /// Regions of at most this many rows choose their cut by rollout.
    pub pilot_rows: u64,
    /// How many QIs with an allowable cut (widest first) a rollout tries.
    pub pilot_width: usize,
    /// At most this many rounds of relocation per pass (a round moves at most one record
    /// out of each class; the rounds stop when one moves none).
    pub rounds: usize,
    /// At most this many times the classes are cut again after relocation.
    pub recuts: usize,
}

impl Default for Refinement {
    fn default() -> Self {
        Self {
            zone_rows: 200,
            pilot_rows: 50,
            pilot_width: 3,
            rounds: 20,
            recuts: 5,
        }
    }
}

impl Cutter<'_> {
    /// Partitions the zone `records` (at `offset`) to the end, refines its classes, and adds
    /// them with their cells to `done`.
    pub(super) fn finish_zone(
        &mut self,
        refine: Refinement,
        offset: usize,
        records: &mut [u32],
        done: &mut FinishedClasses,
    ) {
        let layout = self.layout;
        let mut classes = Vec::new();
        let whole: Vec<Range<usize>> = std::iter::once(0..layout.len(records)).collect();
        self.cut_to_the_end(records, whole, &mut classes);
        let cells = self.refine_classes(refine, records, &mut classes);
        for (c, class) in classes.iter().enumerate() {
            let span = &records[layout.span(class)];
            let smallest = (0..class.len())
                .map(|i| layout.member(span, i))
                .min()
                .unwrap_or(u32::MAX);
            done.classes
                .push((smallest, offset + class.start..offset + class.end));
            done.cells
                .extend_from_slice(&cells[c * layout.d..(c + 1) * layout.d]);
            self.found_rows
                .fetch_add(layout.rows(span), Ordering::Relaxed);
        }
    }

    /// Refines the classes `classes` (runs of `records`, in record order): relocation, then
    /// the classes that admit a cut are cut again, up to [`Refinement::recuts`] times. The
    /// classes, runs of `records` again, into `classes`; their cells returned (d per class).
    pub(super) fn refine_classes(
        &mut self,
        refine: Refinement,
        records: &mut [u32],
        classes: &mut Vec<Range<usize>>,
    ) -> Vec<Cell> {
        let mut cells = Vec::new();
        for pass in 0..=refine.recuts {
            self.relocate(records, classes, &mut cells, refine.rounds);
            if pass == refine.recuts {
                break;
            }
            // a class that admits no cut keeps its records (in another order), so its cells
            // stand; when none does, the classes are final
            let before = classes.len();
            let regions = std::mem::take(classes);
            self.cut_to_the_end(records, regions, classes);
            if classes.len() == before {
                break;
            }
        }
        cells
    }

    /// Cuts `regions` of `records` and their parts until none has an allowable cut; the
    /// classes into `classes`, in record order.
    fn cut_to_the_end(
        &mut self,
        records: &mut [u32],
        mut regions: Vec<Range<usize>>,
        classes: &mut Vec<Range<usize>>,
    ) {
        while let Some(region) = regions.pop() {
            match self.cut(&mut records[self.layout.span(&region)]) {
                Some(lengths) => regions.extend(parts(region.start, &lengths)),
                None => classes.push(region),
            }
        }
        classes.sort_unstable_by_key(|class| class.start);
    }
}
