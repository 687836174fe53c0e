//! Adaptive cloaking: within each root (see [`super`]), a Mondrian-style split of space and
//! time over the whole batch, instead of the fixed quadtree.
//!
//! A node (a set of events, at first a root's) is split at the median of one of its three
//! dimensions — the finest-cell column (longitude), row (latitude) or the time — tried in
//! decreasing order of the node's extent relative to the root's (the root cell's side, the
//! longest window), at a boundary between values (equal values stay on one side), when both
//! halves hold at least k distinct subjects. A node no dimension splits is a label: by default
//! ([`LabelStyle::ValueFree`]) the bounding box of its events snapped outward to the cells of
//! level `max_level`, and its window snapped outward to base windows, so that no boundary is a
//! member's value (local recoding's value-free labels, for places and times); with
//! `labels = "exact"` the bounding box of its events' finest cells (level 30, 0.17 mm) and the
//! window from its first event's time to just after its last (`[min, max + 1 µs)`). Every label
//! lies inside its root (whose cell is a union of level-`max_level` cells, whose window a
//! union of base windows), so it meets both tolerances; every label holds at least k subjects
//! (a split needs k on both sides, a root fewer than k is suppressed).
//!
//! Boxes of two labels may overlap (snapped, by up to a grid cell) but never share an event;
//! two labels snapped to the same box and window are one label to a reader, with the
//! subjects of both.

use super::distinct::DistinctCounter;
use super::{
    Bounds, Cell, Cloaked, CloakingOptions, Events, Label, LabelStyle, MAX_LEVEL, Roots, SUPPRESSED,
};

/// The finest column and row of a Morton code.
fn column_row(code: u64) -> (u32, u32) {
    let cell = Cell::of_code(code, MAX_LEVEL);
    (cell.x, cell.y)
}

/// The three dimensions.
#[derive(Debug, Clone, Copy)]
enum Dimension {
    Column,
    Row,
    Time,
}

pub(crate) fn cloak(events: &Events, options: &CloakingOptions, roots: &Roots) -> Cloaked {
    let mut label_of = vec![SUPPRESSED; events.len()];
    let mut labels = Vec::new();
    let mut counter = DistinctCounter::new(events.subjects);
    let mut order = roots.order.clone();
    for &(start, end) in &roots.ranges {
        if crate::interrupt::requested() {
            // [`super::cloak`] returns the interruption
            break;
        }
        if !counter.at_least(&order[start..end], &events.subject, options.k) {
            continue;
        }
        let level = roots.level[order[start] as usize];
        let scale = Scale {
            cells: (1u64 << (MAX_LEVEL - level)) as f64,
            time: options.max_window_us() as f64,
        };
        let mut split = Split {
            events,
            options,
            scale,
            counter: &mut counter,
            label_of: &mut label_of,
            labels: &mut labels,
        };
        split.node(&mut order[start..end]);
    }
    Cloaked {
        label_of,
        labels,
        suppressed: 0,
    }
}

/// A root's extents, against which a node's are compared.
#[derive(Debug, Clone, Copy)]
struct Scale {
    cells: f64,
    time: f64,
}

struct Split<'a> {
    events: &'a Events,
    options: &'a CloakingOptions,
    scale: Scale,
    counter: &'a mut DistinctCounter,
    label_of: &'a mut Vec<u32>,
    labels: &'a mut Vec<Label>,
}

/// `extent` snapped outward: columns and rows to whole cells of level `max_level`, times to
/// whole base windows (`max` stays inclusive: the last finest cell, the last microsecond).
fn snapped(extent: &Extent, options: &CloakingOptions) -> Extent {
    let grid = 1u64 << (MAX_LEVEL - options.max_level.min(MAX_LEVEL));
    let cells = |(low, high): (u32, u32)| {
        let low = u64::from(low) / grid * grid;
        let high = (u64::from(high) / grid + 1) * grid - 1;
        (low as u32, high as u32)
    };
    let window = options.window_us;
    Extent {
        column: cells(extent.column),
        row: cells(extent.row),
        time: (
            extent.time.0.div_euclid(window) * window,
            (extent.time.1.div_euclid(window) + 1) * window - 1,
        ),
    }
}

/// A node's box: columns, rows and times, each `(min, max)`.
#[derive(Debug, Clone, Copy)]
struct Extent {
    column: (u32, u32),
    row: (u32, u32),
    time: (i64, i64),
}

impl Split<'_> {
    fn key(&self, e: u32, dimension: Dimension) -> i64 {
        let e = e as usize;
        match dimension {
            Dimension::Column => column_row(self.events.code[e]).0 as i64,
            Dimension::Row => column_row(self.events.code[e]).1 as i64,
            Dimension::Time => self.events.time[e],
        }
    }

    fn extent(&self, node: &[u32]) -> Extent {
        let mut extent = Extent {
            column: (u32::MAX, 0),
            row: (u32::MAX, 0),
            time: (i64::MAX, i64::MIN),
        };
        for &e in node {
            let (x, y) = column_row(self.events.code[e as usize]);
            let t = self.events.time[e as usize];
            extent.column = (extent.column.0.min(x), extent.column.1.max(x));
            extent.row = (extent.row.0.min(y), extent.row.1.max(y));
            extent.time = (extent.time.0.min(t), extent.time.1.max(t));
        }
        extent
    }

    /// Labels `node` (at least k distinct subjects), splitting it while it can.
    fn node(&mut self, node: &mut [u32]) {
        let extent = self.extent(node);
        let mut dimensions = [
            (
                (extent.column.1 - extent.column.0) as f64 / self.scale.cells,
                Dimension::Column,
            ),
            (
                (extent.row.1 - extent.row.0) as f64 / self.scale.cells,
                Dimension::Row,
            ),
            (
                (extent.time.1 - extent.time.0) as f64 / self.scale.time,
                Dimension::Time,
            ),
        ];
        // widest first; a stable sort keeps column, row, time on a tie
        dimensions.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (width, dimension) in dimensions {
            if width <= 0.0 {
                continue;
            }
            if let Some(at) = self.split_at(node, dimension) {
                let (left, right) = node.split_at_mut(at);
                self.node(left);
                self.node(right);
                return;
            }
        }
        self.label(node, &extent);
    }

    /// Sorts `node` by `dimension` and returns the median split, moved to a boundary between
    /// values, when both sides hold k distinct subjects.
    fn split_at(&mut self, node: &mut [u32], dimension: Dimension) -> Option<usize> {
        node.sort_unstable_by_key(|&e| (self.key(e, dimension), e));
        let median = self.key(node[node.len() / 2], dimension);
        let mut at = node.partition_point(|&e| self.key(e, dimension) < median);
        if at == 0 {
            at = node.partition_point(|&e| self.key(e, dimension) <= median);
        }
        if at == 0 || at == node.len() {
            return None;
        }
        let subject = &self.events.subject;
        let k = self.options.k;
        (self.counter.at_least(&node[..at], subject, k)
            && self.counter.at_least(&node[at..], subject, k))
        .then_some(at)
    }

    fn label(&mut self, node: &[u32], extent: &Extent) {
        let extent = match self.options.labels {
            LabelStyle::Exact => *extent,
            LabelStyle::ValueFree => snapped(extent, self.options),
        };
        let corner = |x: u32, y: u32| Cell {
            level: MAX_LEVEL,
            x,
            y,
        };
        let north_west = corner(extent.column.0, extent.row.0).bounds();
        let south_east = corner(extent.column.1, extent.row.1).bounds();
        let bounds = Bounds {
            min_lat: south_east.min_lat,
            min_lon: north_west.min_lon,
            max_lat: north_west.max_lat,
            max_lon: south_east.max_lon,
        };
        let a = crate::functions::quadtree::morton(extent.column.0, extent.row.0);
        let b = crate::functions::quadtree::morton(extent.column.1, extent.row.1);
        let level = match a ^ b {
            0 => MAX_LEVEL,
            differ => (MAX_LEVEL - 1) - ((63 - differ.leading_zeros()) / 2) as u8,
        };
        self.labels.push(Label {
            cell: Cell::of_code(a, level),
            bounds,
            start: extent.time.0,
            end: extent.time.1 + 1,
        });
        let id = (self.labels.len() - 1) as u32;
        for &e in node {
            self.label_of[e as usize] = id;
        }
    }
}
