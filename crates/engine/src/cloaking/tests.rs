use std::collections::{BTreeMap, BTreeSet};

use super::unicity::{Traces, choose_points, sample_subjects, unicity_of_events};
use super::*;
use crate::rng::SplitMix64;

const HOUR: i64 = 3_600_000_000;
const MINUTE: i64 = 60_000_000;

fn events_of(rows: &[(u32, f64, f64, i64)]) -> Events {
    let lat: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let lon: Vec<f64> = rows.iter().map(|r| r.2).collect();
    let time = rows.iter().map(|r| r.3).collect();
    let subject = rows.iter().map(|r| r.0).collect();
    Events::from_positions(&lat, &lon, time, subject).unwrap()
}

fn quadkey(cell: Cell) -> String {
    let mut key = String::new();
    cell.write_quadkey(&mut key);
    key
}

/// The hand-sized example: the level-2 grid of the globe (4 × 4 cells of 90° of longitude by
/// 45° of latitude; a cell's column x = floor((lon + 180) / 90), row y = floor((90 − lat) / 45),
/// quadkey digits x_bit + 2·y_bit), k = 3, max_level 2, windows of 1 h doubling once to 2 h.
///
/// max_cell_side = 12,000 km: a level-1 cell is a quarter of the sphere, side R·√π =
/// 6,371.0088 km × 1.77245 = 11,292 km ≤ 12,000, the globe (level 0) 22,584 km > 12,000; so
/// the roots are the four level-1 cells with the 2 h windows.
///
/// Subjects A..F = 0..5. Events (subject, cell, time):
///
/// ```text
///  0 A 00 0:05   1 B 00 0:15   2 C 00 0:25          cell 00: lon -135, lat 60
///  3 D 01 0:10   4 E 01 0:20   5 F 01 0:30          cell 01: lon  -45, lat 60
///  6 A 02 1:10   7 B 02 1:20   8 C 02 1:30          cell 02: lon -135, lat 30
///  9 D 03 1:40                                      cell 03: lon  -45, lat 30
/// 10 B 10 0:10  11 B 10 0:20  12 C 11 0:40          cell 10: lon 45, lat 60; 11: lon 135, lat 60
/// 13 D 13 1:20                                      cell 13: lon 135, lat 30
/// 14 E 30 0:30                                      cell 30: lon 45, lat -30
/// ```
///
/// Root "0", [0 h, 2 h): subjects A–F ≥ 3. Its halves: [0, 1 h) holds A–F, [1 h, 2 h) A–D:
/// both kept. [0, 1 h) splits into quadrants 00 {A, B, C} and 01 {D, E, F}, both kept and at
/// max_level: events 0–2 get (00, [0, 1 h)), 3–5 get (01, [0, 1 h)). [1 h, 2 h): 02 {A, B, C}
/// is kept, 03 {D} is not, and the remainder {D} has 1 < 3 subjects, so the smallest kept child
/// (02) is given back: events 6–9 get (0, [1 h, 2 h)). (G&G per event would give 6–8 the cell 02
/// and leave D alone under cell 0.)
///
/// Root "1", [0 h, 2 h): subjects B, C, D = 3. [0, 1 h) has 3 events but 2 subjects (B twice):
/// not kept; [1 h, 2 h) {D} not kept; the remainder is the root: events 10–13 get (1, [0, 2 h)),
/// the temporal extension. (Counting events would have kept [0, 1 h) with 2 subjects.)
///
/// Root "3": {E}, 1 < 3: event 14 is suppressed.
#[test]
fn hand_sized_example() {
    let (a, b, c, d, e, f) = (0, 1, 2, 3, 4, 5);
    let at = |h: i64, m: i64| h * HOUR + m * MINUTE;
    let rows = [
        (a, 60.0, -135.0, at(0, 5)),
        (b, 60.0, -135.0, at(0, 15)),
        (c, 60.0, -135.0, at(0, 25)),
        (d, 60.0, -45.0, at(0, 10)),
        (e, 60.0, -45.0, at(0, 20)),
        (f, 60.0, -45.0, at(0, 30)),
        (a, 30.0, -135.0, at(1, 10)),
        (b, 30.0, -135.0, at(1, 20)),
        (c, 30.0, -135.0, at(1, 30)),
        (d, 30.0, -45.0, at(1, 40)),
        (b, 60.0, 45.0, at(0, 10)),
        (b, 60.0, 45.0, at(0, 20)),
        (c, 60.0, 135.0, at(0, 40)),
        (d, 30.0, 135.0, at(1, 20)),
        (e, -30.0, 45.0, at(0, 30)),
    ];
    let options = CloakingOptions {
        k: 3,
        max_cell_side_m: 12_000_000.0,
        max_level: 2,
        window_us: HOUR,
        window_doublings: 1,
        variant: Variant::Quadtree,
        labels: LabelStyle::default(),
    };
    let cloaked = cloak(&events_of(&rows), &options).unwrap();
    let expected: [Option<(&str, i64, i64)>; 15] = [
        Some(("00", 0, HOUR)),
        Some(("00", 0, HOUR)),
        Some(("00", 0, HOUR)),
        Some(("01", 0, HOUR)),
        Some(("01", 0, HOUR)),
        Some(("01", 0, HOUR)),
        Some(("0", HOUR, 2 * HOUR)),
        Some(("0", HOUR, 2 * HOUR)),
        Some(("0", HOUR, 2 * HOUR)),
        Some(("0", HOUR, 2 * HOUR)),
        Some(("1", 0, 2 * HOUR)),
        Some(("1", 0, 2 * HOUR)),
        Some(("1", 0, 2 * HOUR)),
        Some(("1", 0, 2 * HOUR)),
        None,
    ];
    for (event, want) in expected.iter().enumerate() {
        let got = match cloaked.label_of[event] {
            SUPPRESSED => None,
            l => {
                let label = cloaked.labels[l as usize];
                Some((quadkey(label.cell), label.start, label.end))
            }
        };
        let got = got.as_ref().map(|(k, s, e)| (k.as_str(), *s, *e));
        assert_eq!(got, *want, "event {event}");
    }
    assert_eq!(cloaked.suppressed, 1);
    // four labels: (00, w0), (01, w0), (0, w1), (1, [0, 2 h))
    assert_eq!(cloaked.labels.len(), 4);
    let figures = figures::location_figures(&events_of(&rows), &cloaked);
    // anonymity per label: 3, 3, 4 (A–D), 3 (B–D): mean 13 / 4, min 3
    assert_eq!(figures.min_anonymity, Some(3));
    assert_eq!(figures.mean_anonymity, Some(13.0 / 4.0));
    assert_eq!(figures.published, 14);
    // windows of the 14 published events: 10 of 1 h, 4 of 2 h; the median (7th) is 1 h, the
    // 90th percentile (13th) 2 h
    assert_eq!(figures.median_window_s, Some(3600.0));
    assert_eq!(figures.p90_window_s, Some(7200.0));
}

/// Random clustered events: `n` events of `subjects` subjects around a few centres, over a
/// day.
fn random_rows(seed: u64, n: usize, subjects: u32) -> Vec<(u32, f64, f64, i64)> {
    let mut rng = SplitMix64(seed);
    let centres = [(48.85, 2.35), (48.80, 2.45), (45.76, 4.83)];
    (0..n)
        .map(|_| {
            let s = rng.below(subjects as u64) as u32;
            let (clat, clon) = centres[rng.below(centres.len() as u64) as usize];
            let spread = if rng.unit() < 0.7 { 0.01 } else { 0.3 };
            let lat = clat + (rng.unit() - 0.5) * spread;
            let lon = clon + (rng.unit() - 0.5) * spread;
            let time = (rng.unit() * 24.0 * HOUR as f64) as i64;
            (s, lat, lon, time)
        })
        .collect()
}

fn random_options(variant: Variant) -> CloakingOptions {
    CloakingOptions {
        k: 3,
        max_cell_side_m: 20_000.0,
        max_level: 18,
        window_us: 10 * MINUTE,
        window_doublings: 3,
        variant,
        labels: LabelStyle::default(),
    }
}

#[test]
fn properties_on_random_data() {
    for variant in [Variant::Quadtree, Variant::Adaptive] {
        for seed in 1..6 {
            let rows = random_rows(seed, 600, 60);
            let events = events_of(&rows);
            let options = random_options(variant);
            let cloaked = cloak(&events, &options).unwrap();
            let mut subjects_of: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
            let mut published = 0;
            for (i, &(s, lat, lon, t)) in rows.iter().enumerate() {
                let l = cloaked.label_of[i];
                if l == SUPPRESSED {
                    continue;
                }
                published += 1;
                let label = cloaked.labels[l as usize];
                // inside its cell and window, and within the tolerances
                assert!(label.bounds.contains(lat, lon), "{variant:?} event {i}");
                assert!(label.start <= t && t < label.end, "{variant:?} event {i}");
                assert!(label.bounds.side_m() <= options.max_cell_side_m);
                assert!(label.end - label.start <= options.max_window_us());
                // the adaptive box lies in its cell
                let cell = label.cell.bounds();
                assert!(
                    cell.min_lat <= label.bounds.min_lat && label.bounds.max_lat <= cell.max_lat
                );
                assert!(
                    cell.min_lon <= label.bounds.min_lon && label.bounds.max_lon <= cell.max_lon
                );
                subjects_of.entry(l).or_default().insert(s);
            }
            // every published label holds >= k distinct subjects
            for (l, subjects) in &subjects_of {
                assert!(
                    subjects.len() >= 3,
                    "{variant:?} label {l}: {} subjects",
                    subjects.len()
                );
            }
            // written + suppressed = input
            assert_eq!(published + cloaked.suppressed, rows.len());
            assert!(
                published > rows.len() / 2,
                "{variant:?}: most events are published"
            );
            // the same seed gives the same labels
            let again = cloak(&events_of(&random_rows(seed, 600, 60)), &options).unwrap();
            assert_eq!(again.label_of, cloaked.label_of);
            assert_eq!(again.labels, cloaked.labels);
        }
    }
}

/// The quadtree variant's rule, by brute force: descend from the event's root, computing every
/// node's children from all events with sets, keeping a child with >= k subjects, giving back
/// the smallest kept child when the remainder is non-empty and short of k.
fn brute_force_label(
    rows: &[(u32, f64, f64, i64)],
    event: usize,
    options: &CloakingOptions,
) -> Option<(Cell, i64, i64)> {
    let k = options.k as usize;
    let (_, lat, lon, t) = rows[event];
    let window = |t: i64| t.div_euclid(options.window_us);
    let cell_at = |i: usize, level: u8| Cell::of_position(rows[i].1, rows[i].2, level).unwrap();
    let root = (0..=options.max_level)
        .find(|&l| Cell::of_position(lat, lon, l).unwrap().side_m() <= options.max_cell_side_m)
        .unwrap();
    let distinct = |members: &[usize]| {
        members
            .iter()
            .map(|&i| rows[i].0)
            .collect::<BTreeSet<_>>()
            .len()
    };
    let (mut level, mut doublings) = (root, options.window_doublings);
    let in_node = |i: usize, level: u8, doublings: u32| {
        cell_at(i, level) == cell_at(event, level)
            && window(rows[i].3) >> doublings == window(t) >> doublings
    };
    let members: Vec<usize> = (0..rows.len())
        .filter(|&i| in_node(i, level, doublings))
        .collect();
    if distinct(&members) < k {
        return None;
    }
    loop {
        let members: Vec<usize> = (0..rows.len())
            .filter(|&i| in_node(i, level, doublings))
            .collect();
        // child index of each member
        let child_of = |i: usize| -> usize {
            if doublings > 0 {
                ((window(rows[i].3) >> (doublings - 1)) & 1) as usize
            } else {
                let c = cell_at(i, level + 1);
                ((c.x & 1) + 2 * (c.y & 1)) as usize
            }
        };
        if doublings == 0 && level >= options.max_level {
            break;
        }
        let children = if doublings > 0 { 2 } else { 4 };
        let groups: Vec<Vec<usize>> = (0..children)
            .map(|c| {
                members
                    .iter()
                    .copied()
                    .filter(|&i| child_of(i) == c)
                    .collect()
            })
            .collect();
        let mut kept: Vec<bool> = groups
            .iter()
            .map(|g| !g.is_empty() && distinct(g) >= k)
            .collect();
        let remainder: Vec<usize> = (0..children)
            .filter(|&c| !kept[c])
            .flat_map(|c| groups[c].iter().copied())
            .collect();
        if !remainder.is_empty() && distinct(&remainder) < k {
            let smallest = (0..children)
                .filter(|&c| kept[c])
                .min_by_key(|&c| (groups[c].len(), c));
            if let Some(c) = smallest {
                kept[c] = false;
            }
        }
        let mine = child_of(event);
        if !kept[mine] {
            break;
        }
        if doublings > 0 {
            doublings -= 1;
        } else {
            level += 1;
        }
    }
    let cell = Cell::of_position(lat, lon, level).unwrap();
    let start = ((window(t) >> doublings) << doublings) * options.window_us;
    Some((cell, start, start + (options.window_us << doublings)))
}

#[test]
fn quadtree_equals_brute_force_on_small_inputs() {
    // the inputs reach every branch: suppressed roots, longer windows, finer cells, give-backs
    let (mut suppressed, mut windows, mut levels) = (0, BTreeSet::new(), BTreeSet::new());
    for seed in 10..16 {
        let rows = random_rows(seed, 150, 25);
        let options = CloakingOptions {
            k: 2 + (seed % 3) as u32,
            ..random_options(Variant::Quadtree)
        };
        let cloaked = cloak(&events_of(&rows), &options).unwrap();
        for event in 0..rows.len() {
            let got = match cloaked.label_of[event] {
                SUPPRESSED => None,
                l => {
                    let label = cloaked.labels[l as usize];
                    Some((label.cell, label.start, label.end))
                }
            };
            assert_eq!(
                got,
                brute_force_label(&rows, event, &options),
                "seed {seed} event {event}"
            );
            match got {
                None => suppressed += 1,
                Some((cell, start, end)) => {
                    windows.insert(end - start);
                    levels.insert(cell.level);
                }
            }
        }
    }
    assert!(
        suppressed > 0 && windows.len() > 1 && levels.len() > 2,
        "{suppressed} {windows:?} {levels:?}"
    );
}

#[test]
fn adaptive_cells_are_smaller_than_the_quadtrees_on_skewed_data() {
    let rows = random_rows(7, 3000, 300);
    let events = events_of(&rows);
    let quadtree = figures::location_figures(
        &events,
        &cloak(&events, &random_options(Variant::Quadtree)).unwrap(),
    );
    let adaptive = figures::location_figures(
        &events,
        &cloak(&events, &random_options(Variant::Adaptive)).unwrap(),
    );
    // the same roots: the same events suppressed
    assert_eq!(quadtree.published, adaptive.published);
    let (q, a) = (
        quadtree.median_cell_area_m2.unwrap(),
        adaptive.median_cell_area_m2.unwrap(),
    );
    assert!(
        a < q,
        "adaptive median area {a} not below the quadtree's {q}"
    );
}

#[test]
fn bad_options_are_refused() {
    let base = random_options(Variant::Quadtree);
    let refuse = |options: CloakingOptions, wanted: &str| {
        let message = options.check().unwrap_err();
        assert!(message.contains(wanted), "{message}");
    };
    refuse(
        CloakingOptions {
            k: 1,
            ..base.clone()
        },
        "k = 1 protects nobody",
    );
    refuse(
        CloakingOptions {
            max_cell_side_m: 10.0,
            max_level: 10,
            ..base.clone()
        },
        "max_cell_side = 10 m is met by no cell",
    );
    refuse(
        CloakingOptions {
            window_us: 0,
            ..base
        },
        "window must be longer than 0",
    );
}

/// Unicity against a brute-force count: the same draws (sample and points), uniqueness
/// checked by comparing every other subject's whole trace.
#[test]
fn unicity_equals_brute_force() {
    let mut rng = SplitMix64(3);
    let subjects = 30u32;
    let pairs: Vec<(u32, u32)> = (0..200)
        .map(|_| (rng.below(subjects as u64) as u32, rng.below(25) as u32))
        .collect();
    let traces = Traces::new(pairs.clone(), subjects);
    let mut sets: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    for &(s, p) in &pairs {
        sets.entry(s).or_default().insert(p);
    }
    let measured = traces.unicity(5, 20, 99);
    // the brute force replays the draws
    let mut rng = SplitMix64(99);
    let sample = sample_subjects(&traces, 20, &mut rng);
    assert_eq!(sample.len(), 20);
    let mut scratch = Vec::new();
    for p in 1..=5 {
        let mut unique = 0;
        for &s in &sample {
            choose_points(&traces, s, p, &mut rng, &mut scratch);
            assert!(scratch.len() == p.min(sets[&s].len()));
            let others = sets
                .iter()
                .filter(|(o, points)| **o != s && scratch.iter().all(|x| points.contains(x)))
                .count();
            if others == 0 {
                unique += 1;
            }
        }
        assert_eq!(measured.unique[p - 1], unique as f64 / 20.0, "p = {p}");
    }
}

/// Measuring a table's events with only the sampled traces' points indexed gives the figures
/// of every event indexed (points numbered by their sorted order among all of them), for the
/// same seed: 4,000 events of 300 subjects at 3,000 2-D points, a tenth left out (subject 7's all
/// of them), with a sample smaller than the subjects and one covering them all.
#[test]
fn unicity_of_sampled_traces_equals_unicity_of_every_event() {
    let mut rng = SplitMix64(17);
    let subjects = 300u32;
    let events: Vec<(u32, Option<(i64, i64)>)> = (0..4_000)
        .map(|_| {
            let subject = rng.below(subjects as u64) as u32;
            let point = (rng.below(60) as i64 - 30, rng.below(50) as i64 * 1_000);
            let kept = subject != 7 && rng.below(10) != 0;
            (subject, kept.then_some(point))
        })
        .collect();
    let subject: Vec<u32> = events.iter().map(|e| e.0).collect();
    let all_points: BTreeSet<(i64, i64)> = events.iter().filter_map(|e| e.1).collect();
    let rank: BTreeMap<(i64, i64), u32> = all_points
        .iter()
        .enumerate()
        .map(|(i, &p)| (p, i as u32))
        .collect();
    let pairs: Vec<(u32, u32)> = events
        .iter()
        .filter_map(|&(s, p)| Some((s, rank[&p?])))
        .collect();
    let every_event = Traces::new(pairs, subjects);
    for sample in [40, 1_000] {
        for seed in [1, 2, 3] {
            let sampled = unicity_of_events(&subject, subjects, |e| events[e].1, 5, sample, seed);
            assert_eq!(
                sampled,
                every_event.unicity(5, sample, seed),
                "{sample}, {seed}"
            );
        }
    }
    // with every subject sampled, subject 7 (no event kept) is not among them
    let all = unicity_of_events(&subject, subjects, |e| events[e].1, 5, 1_000, 1);
    assert_eq!(all.subjects_sampled, 299);
}

/// Adaptive labels are value-free by default (issue 52), checked by brute force on random
/// data: each label's box is exactly the bounding box of its members' level-`max_level`
/// cells and its window the base windows around its members' times, so no boundary is a
/// member's time or lies within a finest cell of a member's position; with `labels = "exact"`
/// the boundaries are the members' own (the first member's time starts every window), which
/// is what the check would catch.
#[test]
fn adaptive_labels_are_value_free_unless_exact() {
    for (style, seed) in [(LabelStyle::ValueFree, 21), (LabelStyle::Exact, 21)] {
        let rows = random_rows(seed, 600, 60);
        let events = events_of(&rows);
        let options = CloakingOptions {
            labels: style,
            ..random_options(Variant::Adaptive)
        };
        let cloaked = cloak(&events, &options).unwrap();
        let window = options.window_us;
        let mut members: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for (i, &l) in cloaked.label_of.iter().enumerate() {
            if l != SUPPRESSED {
                members.entry(l).or_default().push(i);
            }
        }
        assert!(members.len() > 5, "too few labels to judge");
        let mut on_a_member = 0;
        for (&l, events_of_label) in &members {
            let label = cloaked.labels[l as usize];
            let times: Vec<i64> = events_of_label.iter().map(|&i| rows[i].3).collect();
            if times.contains(&label.start) || times.contains(&(label.end - 1)) {
                on_a_member += 1;
            }
            if style == LabelStyle::Exact {
                continue;
            }
            // the reference: the members' grid cells and base windows, bounded
            let (mut min_lat, mut min_lon) = (f64::INFINITY, f64::INFINITY);
            let (mut max_lat, mut max_lon) = (f64::NEG_INFINITY, f64::NEG_INFINITY);
            for &i in events_of_label {
                let cell = Cell::of_code(events.code[i], options.max_level).bounds();
                min_lat = min_lat.min(cell.min_lat);
                min_lon = min_lon.min(cell.min_lon);
                max_lat = max_lat.max(cell.max_lat);
                max_lon = max_lon.max(cell.max_lon);
            }
            let b = label.bounds;
            let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
            assert!(
                close(b.min_lat, min_lat)
                    && close(b.min_lon, min_lon)
                    && close(b.max_lat, max_lat)
                    && close(b.max_lon, max_lon),
                "label {l}: {b:?}"
            );
            let first = times.iter().min().unwrap().div_euclid(window) * window;
            let last = (times.iter().max().unwrap().div_euclid(window) + 1) * window;
            assert_eq!((label.start, label.end), (first, last), "label {l}");
        }
        match style {
            LabelStyle::ValueFree => assert_eq!(on_a_member, 0),
            LabelStyle::Exact => assert_eq!(on_a_member, members.len()),
        }
    }
}

/// Where the suppressed events were, by brute force on random data: the hours add up to the
/// suppressed events, each listed root cell holds as many suppressed events as a recount by
/// its quadkey finds, most first, at most ten.
#[test]
fn suppressed_figures_recount() {
    let rows = random_rows(31, 800, 120);
    let events = events_of(&rows);
    let options = CloakingOptions {
        k: 6,
        ..random_options(Variant::Quadtree)
    };
    let cloaked = cloak(&events, &options).unwrap();
    assert!(cloaked.suppressed > 0, "the data must suppress some events");
    let figures = super::figures::suppressed_figures(&events, &cloaked, &options);
    assert_eq!(
        figures.by_hour_utc.iter().sum::<u64>(),
        cloaked.suppressed as u64
    );
    let mut by_quadkey: BTreeMap<String, u64> = BTreeMap::new();
    for (e, &label) in cloaked.label_of.iter().enumerate() {
        if label == SUPPRESSED {
            let level = root_level(events.code[e], &options);
            *by_quadkey
                .entry(quadkey(Cell::of_code(events.code[e], level)))
                .or_default() += 1;
        }
    }
    assert!(figures.by_area.len() <= 10 && !figures.by_area.is_empty());
    for pair in figures.by_area.windows(2) {
        assert!(pair[0].events >= pair[1].events);
    }
    for area in &figures.by_area {
        assert_eq!(by_quadkey[&area.cell], area.events, "{}", area.cell);
    }
    let largest = by_quadkey.values().max().copied().unwrap();
    assert_eq!(figures.by_area[0].events, largest);
}

/// The hint of which doubled tolerance lets the suppressed events through, against cloaking
/// again under the doubled tolerances (both variants, several data sets): with the window
/// doubled, the cell side doubled, and both, the events still suppressed are those the
/// cloaking under those options suppresses. Each doubling must let some events through on
/// some data set, so that the comparison is not of zeros.
#[test]
fn tolerance_hints_equal_cloaking_again() {
    let mut helped = [false; 3];
    for (seed, k) in [(31, 6), (32, 8), (33, 12)] {
        let events = events_of(&random_rows(seed, 800, 120));
        for variant in [Variant::Quadtree, Variant::Adaptive] {
            let options = CloakingOptions {
                k,
                ..random_options(variant)
            };
            let cloaked = cloak(&events, &options).unwrap();
            assert!(cloaked.suppressed > 0, "the data must suppress some events");
            let hints = super::figures::tolerance_hints(&events, &cloaked, &options);
            let wider = |side: f64, doublings: u32| CloakingOptions {
                max_cell_side_m: options.max_cell_side_m * side,
                window_doublings: options.window_doublings + doublings,
                ..options.clone()
            };
            let doubled = [wider(1.0, 1), wider(2.0, 0), wider(2.0, 1)];
            assert_eq!(hints.len(), 3);
            for (i, (hint, again)) in hints.iter().zip(&doubled).enumerate() {
                let recloaked = cloak(&events, again).unwrap();
                assert_eq!(hint.suppressed, recloaked.suppressed as u64, "{seed} {i}");
                assert_eq!(hint.max_cell_side_m, again.max_cell_side_m);
                assert_eq!(hint.max_window_s, again.max_window_us() as f64 / 1e6);
                helped[i] |= recloaked.suppressed < cloaked.suppressed;
            }
        }
    }
    assert_eq!(helped, [true; 3]);
    // nothing suppressed: no hint
    let events = events_of(&random_rows(34, 400, 120));
    let options = CloakingOptions {
        k: 2,
        max_cell_side_m: 2_000_000.0,
        ..random_options(Variant::Quadtree)
    };
    let cloaked = cloak(&events, &options).unwrap();
    assert_eq!(cloaked.suppressed, 0);
    assert!(super::figures::tolerance_hints(&events, &cloaked, &options).is_empty());
}
