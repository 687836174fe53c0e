//! The profile figures of a location release (docs/definitions.md, "Location releases").
//!
//! Per published event (each event weighs one): the median and 90th-percentile cell side
//! (metres: the side of the square of the label's box area on the sphere) and window length
//! (seconds), and the median cell area (square metres). Per label: the mean and minimum
//! anonymity, the distinct subjects of the events published under it. Percentiles are
//! nearest-rank: the smallest value with at least that share of the events at or below it.

use serde::Serialize;

use super::distinct::DistinctCounter;
use super::{Cloaked, Events, SUPPRESSED};

/// The figures; see the module documentation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocationFigures {
    /// Input events.
    pub events: u64,
    /// Events published.
    pub published: u64,
    /// `published / events` (1 for no events).
    pub share_published: f64,
    /// Labels published.
    pub labels: u64,
    /// Median cell side of the published events, metres.
    pub median_cell_side_m: Option<f64>,
    /// 90th percentile cell side, metres.
    pub p90_cell_side_m: Option<f64>,
    /// Median cell area, square metres.
    pub median_cell_area_m2: Option<f64>,
    /// Median window length, seconds.
    pub median_window_s: Option<f64>,
    /// 90th percentile window length, seconds.
    pub p90_window_s: Option<f64>,
    /// Mean distinct subjects per label.
    pub mean_anonymity: Option<f64>,
    /// Fewest distinct subjects of a label.
    pub min_anonymity: Option<u64>,
}

/// The figures of `cloaked` over `events`.
pub fn location_figures(events: &Events, cloaked: &Cloaked) -> LocationFigures {
    let labels = cloaked.labels.len();
    // events per label, then the events grouped by label (a counting sort: O(n))
    let mut offsets = vec![0usize; labels + 1];
    for &l in &cloaked.label_of {
        if l != SUPPRESSED {
            offsets[l as usize + 1] += 1;
        }
    }
    for i in 0..labels {
        offsets[i + 1] += offsets[i];
    }
    let published = offsets[labels];
    let mut grouped = vec![0u32; published];
    let mut next = offsets.clone();
    for (e, &l) in cloaked.label_of.iter().enumerate() {
        if l != SUPPRESSED {
            grouped[next[l as usize]] = e as u32;
            next[l as usize] += 1;
        }
    }
    let mut counter = DistinctCounter::new(events.subjects);
    let (mut sum, mut min) = (0u64, None::<u64>);
    for l in 0..labels {
        counter.start();
        let subjects = counter.add(
            &grouped[offsets[l]..offsets[l + 1]],
            &events.subject,
            0,
            u32::MAX,
        ) as u64;
        sum += subjects;
        min = Some(min.map_or(subjects, |m| m.min(subjects)));
    }
    let weight = |l: usize| (offsets[l + 1] - offsets[l]) as u64;
    let percentile = |value: &dyn Fn(usize) -> f64, share: f64| {
        let mut by_value: Vec<(f64, u64)> = (0..labels).map(|l| (value(l), weight(l))).collect();
        by_value.sort_by(|a, b| a.0.total_cmp(&b.0));
        weighted_percentile(&by_value, published as u64, share)
    };
    let side = |l: usize| cloaked.labels[l].bounds.side_m();
    let area = |l: usize| cloaked.labels[l].bounds.area_m2();
    let window = |l: usize| (cloaked.labels[l].end - cloaked.labels[l].start) as f64 / 1e6;
    let n = events.len() as u64;
    LocationFigures {
        events: n,
        published: published as u64,
        share_published: if n == 0 {
            1.0
        } else {
            published as f64 / n as f64
        },
        labels: labels as u64,
        median_cell_side_m: percentile(&side, 0.5),
        p90_cell_side_m: percentile(&side, 0.9),
        median_cell_area_m2: percentile(&area, 0.5),
        median_window_s: percentile(&window, 0.5),
        p90_window_s: percentile(&window, 0.9),
        mean_anonymity: (labels > 0).then(|| sum as f64 / labels as f64),
        min_anonymity: min,
    }
}

/// The nearest-rank percentile of values sorted ascending, each with its weight.
fn weighted_percentile(sorted: &[(f64, u64)], total: u64, share: f64) -> Option<f64> {
    if total == 0 {
        return None;
    }
    let rank = ((share * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(value, weight) in sorted {
        seen += weight;
        if seen >= rank {
            return Some(value);
        }
    }
    sorted.last().map(|v| v.0)
}

/// Where and when the suppressed events were: by hour of the day (UTC) and the root cells
/// (the coarsest cells within `max_cell_side`, as quadkeys) holding the most. Places are
/// cells of the tolerance's size, as coarse as a label may be, never an event's position.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuppressedFigures {
    /// `by_hour_utc[h]`: suppressed events whose time falls in hour h (0–23, UTC).
    pub by_hour_utc: Vec<u64>,
    /// The root cells with the most suppressed events, most first (ties by quadkey), at
    /// most [`SUPPRESSED_AREAS`].
    pub by_area: Vec<SuppressedArea>,
    /// The events that would still be suppressed with a tolerance doubled: `max_window`,
    /// `max_cell_side`, then both ([`tolerance_hints`]); empty when none is suppressed.
    pub if_doubled: Vec<ToleranceHint>,
}

/// The suppressed events under other tolerances.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToleranceHint {
    /// Which tolerances are doubled: `max_window`, `max_cell_side` or `both`.
    pub doubled: &'static str,
    /// The largest cell side, metres.
    pub max_cell_side_m: f64,
    /// The longest window, seconds.
    pub max_window_s: f64,
    /// Events still suppressed.
    pub suppressed: u64,
}

/// A root cell and its suppressed events.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SuppressedArea {
    /// The cell's quadkey.
    pub cell: String,
    pub events: u64,
}

/// Root cells listed in [`SuppressedFigures::by_area`].
pub const SUPPRESSED_AREAS: usize = 10;

/// The [`SuppressedFigures`] of `cloaked` over `events`.
pub fn suppressed_figures(
    events: &Events,
    cloaked: &Cloaked,
    options: &super::CloakingOptions,
) -> SuppressedFigures {
    const HOUR_US: i64 = 3_600_000_000;
    let mut by_hour_utc = vec![0u64; 24];
    let mut by_root: std::collections::HashMap<(u8, u64), u64> = std::collections::HashMap::new();
    for (e, _) in cloaked
        .label_of
        .iter()
        .enumerate()
        .filter(|&(_, &l)| l == SUPPRESSED)
    {
        by_hour_utc[events.time[e].div_euclid(HOUR_US).rem_euclid(24) as usize] += 1;
        let level = super::root_level(events.code[e], options);
        *by_root
            .entry((level, super::prefix_code(events.code[e], level)))
            .or_default() += 1;
    }
    let mut areas: Vec<SuppressedArea> = by_root
        .into_iter()
        .map(|((level, code), count)| {
            let mut cell = String::new();
            super::Cell::of_code(code, level).write_quadkey(&mut cell);
            SuppressedArea {
                cell,
                events: count,
            }
        })
        .collect();
    areas.sort_by(|a, b| b.events.cmp(&a.events).then_with(|| a.cell.cmp(&b.cell)));
    areas.truncate(SUPPRESSED_AREAS);
    SuppressedFigures {
        by_hour_utc,
        by_area: areas,
        if_doubled: tolerance_hints(events, cloaked, options),
    }
}

/// How many events would still be suppressed with `max_window` doubled, `max_cell_side`
/// doubled, and both (in that order); empty when none is suppressed.
///
/// Exact, without cloaking again: an event is suppressed when its root (its coarsest
/// acceptable cell, with the longest window around its time) holds fewer than k subjects
/// ([`super`]). Larger tolerances give larger roots, each a union of today's; an event stays
/// suppressed when its new root still holds fewer than k. Only the new roots of suppressed
/// events matter: they are found from those events, and every event is then matched against
/// them by its cell at their levels (whether a cell is a root depends on that cell and its
/// ancestors alone, so every event inside a root's cell belongs to that root), counting up
/// to k distinct subjects per root. One pass over the events for the three; O(n · levels)
/// time; memory for k subjects per such root.
pub fn tolerance_hints(
    events: &Events,
    cloaked: &Cloaked,
    options: &super::CloakingOptions,
) -> Vec<ToleranceHint> {
    if cloaked.suppressed == 0 {
        return Vec::new();
    }
    let wider = super::CloakingOptions {
        max_cell_side_m: 2.0 * options.max_cell_side_m,
        ..options.clone()
    };
    let mut scenarios = [
        (
            "max_window",
            Roots::of_suppressed(events, cloaked, options, 1),
        ),
        (
            "max_cell_side",
            Roots::of_suppressed(events, cloaked, &wider, 0),
        ),
        ("both", Roots::of_suppressed(events, cloaked, &wider, 1)),
    ];
    let k = options.k as usize;
    for e in 0..events.len() {
        for (_, roots) in &mut scenarios {
            roots.count(events, e, k);
        }
    }
    scenarios
        .into_iter()
        .map(|(doubled, roots)| ToleranceHint {
            doubled,
            max_cell_side_m: roots.tolerances.max_cell_side_m,
            max_window_s: (options.window_us << roots.doublings) as f64 / 1e6,
            suppressed: roots.still_suppressed(k),
        })
        .collect()
}

/// The roots the suppressed events of `cloaked` have under other tolerances, and up to k
/// distinct subjects of each; see [`tolerance_hints`].
struct Roots<'a> {
    /// the cells' tolerances
    tolerances: &'a super::CloakingOptions,
    /// the windows: `2^doublings` base windows
    doublings: u32,
    /// (level, cell code, window) → root
    index: hashbrown::HashMap<(u8, u64, i64), usize>,
    /// the levels of the roots
    levels: Vec<u8>,
    /// per suppressed event, its root
    root_of_suppressed: Vec<usize>,
    /// per root, up to k distinct subjects
    subjects: Vec<Vec<u32>>,
}

impl<'a> Roots<'a> {
    fn of_suppressed(
        events: &Events,
        cloaked: &Cloaked,
        tolerances: &'a super::CloakingOptions,
        more_doublings: u32,
    ) -> Self {
        let mut roots = Roots {
            tolerances,
            doublings: tolerances.window_doublings + more_doublings,
            index: hashbrown::HashMap::new(),
            levels: Vec::new(),
            root_of_suppressed: Vec::with_capacity(cloaked.suppressed),
            subjects: Vec::new(),
        };
        for (e, _) in cloaked
            .label_of
            .iter()
            .enumerate()
            .filter(|&(_, &l)| l == SUPPRESSED)
        {
            let level = super::root_level(events.code[e], tolerances);
            if !roots.levels.contains(&level) {
                roots.levels.push(level);
            }
            let key = roots.key(events, e, level);
            let next = roots.index.len();
            let root = *roots.index.entry(key).or_insert(next);
            roots.root_of_suppressed.push(root);
        }
        roots.subjects = vec![Vec::new(); roots.index.len()];
        roots
    }

    /// Event `e`'s root key at `level`.
    fn key(&self, events: &Events, e: usize, level: u8) -> (u8, u64, i64) {
        let window = events.time[e].div_euclid(self.tolerances.window_us) >> self.doublings;
        (level, super::prefix_code(events.code[e], level), window)
    }

    /// Counts event `e`'s subject in its root, if it is in one.
    fn count(&mut self, events: &Events, e: usize, k: usize) {
        for i in 0..self.levels.len() {
            let key = self.key(events, e, self.levels[i]);
            if let Some(&root) = self.index.get(&key) {
                let seen = &mut self.subjects[root];
                if seen.len() < k && !seen.contains(&events.subject[e]) {
                    seen.push(events.subject[e]);
                }
            }
        }
    }

    /// The suppressed events whose root holds fewer than k subjects.
    fn still_suppressed(&self, k: usize) -> u64 {
        self.root_of_suppressed
            .iter()
            .filter(|&&root| self.subjects[root].len() < k)
            .count() as u64
    }
}
