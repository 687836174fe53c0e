//! Location cloaking (seed 004 §4.3; issue 36): each event's position is replaced by a cell
//! and its time by a window, so that every published (cell, window) label holds the events of
//! at least k **distinct subjects** (a person's 50 events are one subject).
//!
//! Two ways to choose the labels, over the same roots:
//! - [`quadtree`], Gruteser & Grunwald's (MobiSys 2003) spatial-then-temporal cloaking on the
//!   fixed quadtree of `quadkey` ([`crate::functions::quadtree`]);
//! - [`adaptive`], a Mondrian-style split of space and time over the whole batch, whose labels
//!   are the bounding boxes of their events (like local recoding's).
//!
//! **Tolerances.** The largest acceptable cell is a side in metres (the side of the square of
//! the cell's area on the sphere); the windows are the base window doubled `J` times up to the
//! longest acceptable one, aligned on the Unix epoch. An event's **root** is the largest
//! acceptable quadtree cell around it (a cell is acceptable when its side is at most the
//! tolerance; a cell inside an acceptable cell is acceptable too, so the roots partition the
//! globe) with the longest window around its time. Every label lies inside its events' root, so
//! every label meets both tolerances. A root holding fewer than k subjects cannot be cloaked
//! within them: its events are **suppressed**, counted, and the share is bounded by the
//! policy's `max_suppression`.
//!
//! Subjects are dense codes `0..subjects` (the job codes per-release pseudonyms, so two
//! subjects whose pseudonyms collide count as one: never more privacy claimed than there is).
//! Memory is O(n): three arrays of the events, an order, a label per event, a stamp per
//! subject; no allocation per event in the loops.

pub mod adaptive;
mod distinct;
pub mod figures;
pub mod quadtree;
pub mod unicity;

#[cfg(test)]
mod tests;

use datafusion::error::{DataFusionError, Result};

pub use crate::functions::quadtree::{Bounds, Cell, MAX_LEVEL};

/// Which labels: the fixed quadtree or the adaptive split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// Gruteser & Grunwald: the smallest quadtree cell, then the shortest window.
    #[default]
    Quadtree,
    /// Mondrian-style median splits of latitude, longitude and time.
    Adaptive,
}

impl Variant {
    /// The name in policies and reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Quadtree => "quadtree",
            Variant::Adaptive => "adaptive",
        }
    }
}

/// The cloaking's parameters (checked by [`CloakingOptions::check`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CloakingOptions {
    /// Distinct subjects per label, at least 2.
    pub k: u32,
    /// The largest acceptable cell side, metres.
    pub max_cell_side_m: f64,
    /// The finest quadtree level (at most [`MAX_LEVEL`]).
    pub max_level: u8,
    /// The base window, microseconds.
    pub window_us: i64,
    /// How often the window may double: the longest is `window_us · 2^doublings`.
    pub window_doublings: u32,
    /// Quadtree or adaptive.
    pub variant: Variant,
    /// How adaptive labels' boxes and windows are published (quadtree labels are cells and
    /// windows of the grid already).
    pub labels: LabelStyle,
}

/// How an adaptive label's box and window are published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LabelStyle {
    /// Snapped outward to the grid: the box to cells of level `max_level`, the window to base
    /// windows. No boundary is derived from a member's value (a member may lie on a grid line,
    /// as on any grid), and the label stays inside its root, so it meets both tolerances; it
    /// holds the same events, so at least k subjects.
    #[default]
    ValueFree,
    /// The bounding box of the members' finest cells (level 30, 0.17 mm) and the window from
    /// the first member's time to just after the last's: each boundary within a hair of a
    /// member's own position or time.
    Exact,
}

impl CloakingOptions {
    /// The longest window, microseconds.
    pub fn max_window_us(&self) -> i64 {
        self.window_us << self.window_doublings
    }

    /// Refuses options no event can be cloaked under: k below 2, a level beyond
    /// [`MAX_LEVEL`], a non-positive window, or a largest cell smaller than a finest-level cell
    /// at the equator (the largest cells of a level are there).
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.k < 2 {
            return Err(format!(
                "k = {} protects nobody: cloaking needs k of at least 2 distinct subjects per \
                 label",
                self.k
            ));
        }
        if self.max_level > MAX_LEVEL {
            return Err(format!(
                "max_level must be at most {MAX_LEVEL}, got {}",
                self.max_level
            ));
        }
        if self.window_us <= 0 {
            return Err("window must be longer than 0".into());
        }
        if self.window_doublings > 40 || self.max_window_us() <= 0 {
            return Err("max_window is too long".into());
        }
        if !(self.max_cell_side_m.is_finite() && self.max_cell_side_m > 0.0) {
            return Err("max_cell_side must be a positive number of metres".into());
        }
        let n = 1u32 << self.max_level;
        let equator = Cell {
            level: self.max_level,
            x: 0,
            y: n / 2,
        };
        if equator.side_m() > self.max_cell_side_m {
            return Err(format!(
                "max_cell_side = {} m is met by no cell: a level-{} cell (max_level) is {:.1} m \
                 on a side at the equator; raise max_cell_side or max_level",
                self.max_cell_side_m,
                self.max_level,
                equator.side_m()
            ));
        }
        Ok(())
    }
}

/// The events to cloak, one entry per event (struct of arrays).
#[derive(Debug, Clone, Default)]
pub struct Events {
    /// The Morton code of the event's finest cell ([`crate::functions::quadtree::morton`]).
    pub code: Vec<u64>,
    /// Microseconds since the Unix epoch.
    pub time: Vec<i64>,
    /// The subject's dense code.
    pub subject: Vec<u32>,
    /// Distinct subject codes (every code is below it).
    pub subjects: u32,
}

impl Events {
    /// Events from positions in degrees; `Err((row, error))` names the first bad position's
    /// row and which coordinate broke its rule.
    pub fn from_positions(
        lat: &[f64],
        lon: &[f64],
        time: Vec<i64>,
        subject: Vec<u32>,
    ) -> std::result::Result<Self, (usize, crate::functions::quadtree::PositionError)> {
        let mut code = Vec::with_capacity(lat.len());
        for (row, (&lat, &lon)) in lat.iter().zip(lon).enumerate() {
            let (x, y) = crate::functions::quadtree::finest_cell(lat, lon).map_err(|e| (row, e))?;
            code.push(crate::functions::quadtree::morton(x, y));
        }
        let subjects = subject.iter().max().map_or(0, |m| m + 1);
        Ok(Self {
            code,
            time,
            subject,
            subjects,
        })
    }

    /// Events.
    pub fn len(&self) -> usize {
        self.code.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.code.is_empty()
    }
}

/// A published label: a box (a quadtree cell, or an adaptive box inside one) and a window
/// `[start, end)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Label {
    /// The quadtree cell: the label's own (quadtree), or the smallest holding its box
    /// (adaptive).
    pub cell: Cell,
    /// The box, degrees.
    pub bounds: Bounds,
    /// Window start, microseconds since the epoch (inclusive).
    pub start: i64,
    /// Window end (exclusive).
    pub end: i64,
}

/// The marker of a suppressed event in [`Cloaked::label_of`].
pub const SUPPRESSED: u32 = u32::MAX;

/// The cloaking of a batch of events.
#[derive(Debug, Clone)]
pub struct Cloaked {
    /// Each event's label (an index into `labels`), or [`SUPPRESSED`].
    pub label_of: Vec<u32>,
    /// The labels.
    pub labels: Vec<Label>,
    /// Events suppressed.
    pub suppressed: usize,
}

/// Cloaks `events` under `options` (checked first).
pub fn cloak(events: &Events, options: &CloakingOptions) -> Result<Cloaked> {
    options
        .check()
        .map_err(|m| DataFusionError::Plan(format!("cloaking: {m}")))?;
    if events.subject.len() != events.len() || events.time.len() != events.len() {
        return Err(DataFusionError::Internal(
            "cloaking: the event arrays differ in length".into(),
        ));
    }
    if events.len() >= SUPPRESSED as usize {
        return Err(DataFusionError::Plan(format!(
            "cloaking: at most {} events per release",
            SUPPRESSED - 1
        )));
    }
    let roots = Roots::new(events, options);
    let mut cloaked = match options.variant {
        Variant::Quadtree => quadtree::cloak(events, options, &roots),
        Variant::Adaptive => adaptive::cloak(events, options, &roots),
    };
    crate::interrupt::check()?;
    cloaked.suppressed = cloaked
        .label_of
        .iter()
        .filter(|&&l| l == SUPPRESSED)
        .count();
    Ok(cloaked)
}

/// The events in root order, and each root's range of that order.
pub(crate) struct Roots {
    /// Event indices sorted by (root cell, base window, finest cell).
    pub order: Vec<u32>,
    /// Each event's root level.
    pub level: Vec<u8>,
    /// Each event's base window index: `floor(time / window)`.
    pub window: Vec<i64>,
    /// `(start, end)` of each root in `order`.
    pub ranges: Vec<(usize, usize)>,
}

impl Roots {
    fn new(events: &Events, options: &CloakingOptions) -> Self {
        let n = events.len();
        let mut level = Vec::with_capacity(n);
        for &code in &events.code {
            level.push(root_level(code, options));
        }
        let window: Vec<i64> = events
            .time
            .iter()
            .map(|t| t.div_euclid(options.window_us))
            .collect();
        let mut order: Vec<u32> = (0..n as u32).collect();
        let root_code = |i: usize| prefix_code(events.code[i], level[i]);
        order.sort_unstable_by_key(|&i| {
            let i = i as usize;
            (
                root_code(i),
                window[i] >> options.window_doublings,
                window[i],
                events.code[i],
                i,
            )
        });
        let mut ranges = Vec::new();
        let mut start = 0;
        for at in 1..=n {
            let boundary = at == n || {
                let (a, b) = (order[at - 1] as usize, order[at] as usize);
                root_code(a) != root_code(b)
                    || level[a] != level[b]
                    || (window[a] >> options.window_doublings)
                        != (window[b] >> options.window_doublings)
            };
            if boundary && at > start {
                ranges.push((start, at));
                start = at;
            }
        }
        Self {
            order,
            level,
            window,
            ranges,
        }
    }
}

/// `code` with the bits below level `level` cleared: the level-`level` cell, as a code that
/// sorts before the codes of the cells inside it.
pub(crate) fn prefix_code(code: u64, level: u8) -> u64 {
    let drop = 2 * (MAX_LEVEL - level) as u32;
    if drop >= 64 {
        0
    } else {
        (code >> drop) << drop
    }
}

/// The coarsest level whose cell around `code` meets the side tolerance (acceptability only
/// grows with the level along a path, so a binary search finds it); `max_level` when none
/// coarser does ([`CloakingOptions::check`] guarantees that one does, at the equator's worst).
pub(crate) fn root_level(code: u64, options: &CloakingOptions) -> u8 {
    let (mut low, mut high) = (0u8, options.max_level);
    while low < high {
        let mid = low + (high - low) / 2;
        if Cell::of_code(code, mid).side_m() <= options.max_cell_side_m {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    low
}

/// The label of a quadtree node: the level-`level` cell of `code` and the window of
/// `2^doublings` base windows holding base window `window`.
pub(crate) fn node_label(
    code: u64,
    level: u8,
    window: i64,
    doublings: u32,
    options: &CloakingOptions,
) -> Label {
    let cell = Cell::of_code(code, level);
    let start = ((window >> doublings) << doublings) * options.window_us;
    Label {
        cell,
        bounds: cell.bounds(),
        start,
        end: start + (options.window_us << doublings),
    }
}
