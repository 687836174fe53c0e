//! KACA: K-Anonymization by Clustering in Attribute hierarchies (Li, Wong, Fu, Pei; seed 004
//! §4.1), on the frequency set.
//!
//! Start with one equivalence class per leaf class (every QI raw, at level 0). While some
//! class fails the policy (fewer than k rows, or an l or t requirement of a sensitive
//! attribute), pick one failing class C at random (splitmix64 seeded with
//! [`LocalOptions::seed`]), find the class C′ whose merge with C costs the least distortion,
//! and merge them. A class publishes, per QI, the lowest hierarchy node covering all its
//! values (as [`super::lowest_common_node`]: the lowest level at which its leaves share a
//! code; `*` when no level does, e.g. NULL mixed with values). KACA works on attribute
//! hierarchies, so every QI publishes nodes here, ordered ones included (never intervals).
//! NULL has its own code at every level: a class of NULLs publishes NULL (distortion 0),
//! NULL mixed with values publishes `*` (distortion 1).
//!
//! ## Distortion
//! The weighted hierarchical distance of seed 004 §3.1 ([`whd`]): generalizing a cell from
//! its raw value to level a costs W(a) = WHD(leaf → a), in [0, 1], 1 at the top and for `*`.
//! Weights are uniform, or `1/(j−1)^β` with [`LocalOptions::whd_beta`]. A class of |C| rows
//! at levels a_q costs |C|·Σ_q W(a_q); merging C and C′ into a class at levels L_q costs the
//! increase Σ_q [|C|·(W(L_q) − W(a_q)) + |C′|·(W(L_q) − W(a′_q))].
//!
//! ## Suppression
//! Suppressing a class publishes `*` for every QI of its rows: it costs |C|·Σ_q (1 − W(a_q)).
//! A failing class is suppressed instead of merged when that is *strictly* cheaper than its
//! cheapest merge and the rows suppressed so far plus its own stay within the budget
//! (`max_suppression`). When a single class remains and it fails, it is suppressed if the
//! budget allows; otherwise it is returned as it is, and [`super::anonymize`] refuses the
//! release.
//!
//! ## Ties and determinism
//! Slots number the leaf classes in the order of their raw values (not the frequency set's
//! numbering, which follows the `GROUP BY` output and can change between runs); a class
//! lives in the slot of its first leaf class. Among merges of equal cost the class in the
//! lowest slot wins, so the result depends on neither scan order nor threads: the same data
//! and seed give the same release. Classes are published in slot order.
//!
//! ## Cost
//! Each step scans every class: O(|E|² · Σ_q h_q) on |E| leaf classes in the worst case. A
//! class keeps, per QI and level, the code its leaves share there (or none), so the lowest
//! common level of two classes is found by comparing two short arrays, and the scan stops a
//! candidate as soon as its partial cost exceeds the best so far. Large scans are split over
//! two threads.

use datafusion::arrow::compute::kernels::sort::SortOptions;
use datafusion::arrow::compute::sort_to_indices;
use datafusion::error::Result;

use super::{Cell, Judge, LocalOptions, LocalRelease, Tally};
use crate::policy::PrivacyRequirements;
use crate::rng::SplitMix64;
use crate::search::FrequencySet;

/// No code shared at this level.
const NONE: u32 = u32::MAX;

/// Scans over at least this many classes are split over two threads.
const PARALLEL_MIN: usize = 4096;

/// Progress is reported once per this many steps.
const REPORT_EVERY: usize = 1024;

pub use crate::functions::formulas::weighted_hierarchical_distance as whd;

/// Runs KACA; see the module documentation.
pub fn kaca(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: LocalOptions,
) -> Result<LocalRelease> {
    kaca_with_progress(freq, requirements, options, &mut |_, _| {})
}

/// [`kaca`], telling `progress` the leaf classes that no longer fail, of all of them, every
/// [`REPORT_EVERY`] merges.
pub fn kaca_with_progress(
    freq: &FrequencySet,
    requirements: &PrivacyRequirements,
    options: LocalOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<LocalRelease> {
    let mut judge = Judge::new(freq, requirements)?;
    // slot s starts as leaf class order[s]
    let order = value_order(freq);
    let mut classes = Classes::new(freq, &order, options.whd_beta);
    let leaf_classes = freq.leaf_classes();
    let mut tallies: Vec<Tally> = order
        .iter()
        .map(|&c| judge.leaf_tally(c as usize))
        .collect();
    let mut members: Vec<Vec<u32>> = order.iter().map(|&c| vec![c]).collect();
    let mut alive = vec![true; leaf_classes];
    let mut live = Slots::new(leaf_classes);
    let mut failing = Slots::new(leaf_classes);
    for (c, tally) in tallies.iter().enumerate() {
        live.insert(c);
        if !judge.passes(tally) {
            failing.insert(c);
        }
    }
    let budget = judge.budget();
    let mut suppressed = 0u64;
    let mut rng = SplitMix64(options.seed);
    let mut steps = 0usize;
    while !failing.items.is_empty() {
        steps += 1;
        if steps.is_multiple_of(REPORT_EVERY) {
            progress(leaf_classes - failing.items.len(), leaf_classes);
            crate::interrupt::check()?;
        }
        let c = failing.items[rng.below(failing.items.len() as u64) as usize] as usize;
        failing.remove(c);
        let rows = classes.rows[c];
        let fits_budget = suppressed + rows <= budget;
        let Some((merge_cost, other)) = classes.nearest(c, &live.items) else {
            // the last class: suppress it if allowed, else leave it failing
            if fits_budget {
                alive[c] = false;
                live.remove(c);
            }
            break;
        };
        if fits_budget && classes.suppression_cost(c) < merge_cost {
            suppressed += rows;
            alive[c] = false;
            live.remove(c);
            continue;
        }
        let other = other as usize;
        let (keep, gone) = (c.min(other), c.max(other));
        classes.merge(keep, gone);
        let moved = std::mem::take(&mut tallies[gone]);
        tallies[keep].add(&moved);
        let moved = std::mem::take(&mut members[gone]);
        members[keep].extend(moved);
        alive[gone] = false;
        live.remove(gone);
        failing.remove(other);
        if !judge.passes(&tallies[keep]) {
            failing.insert(keep);
        }
    }
    let slots: Vec<usize> = (0..leaf_classes).filter(|&c| alive[c]).collect();
    let groups: Vec<Vec<u32>> = slots
        .iter()
        .map(|&c| std::mem::take(&mut members[c]))
        .collect();
    Ok(LocalRelease::from_groups(
        leaf_classes,
        classes.d,
        &groups,
        |g, q, _| classes.cell(slots[g], q),
    ))
}

/// The leaf classes in the order of their raw values, QI by QI (NULL first; a QI without
/// values, or whose type does not sort, in leaf-code order). The frequency set numbers leaf
/// classes as its `GROUP BY` returns them, which can change from run to run.
fn value_order(freq: &FrequencySet) -> Vec<u32> {
    let options = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let mut ranks = Vec::with_capacity(freq.qis().len());
    for qi in freq.qis() {
        let sorted = qi
            .leaf_values()
            .and_then(|v| sort_to_indices(v.as_ref(), Some(options), None).ok());
        let rank = match sorted {
            Some(sorted) => {
                let mut rank = vec![0u32; qi.leaves()];
                for (r, &leaf) in sorted.values().iter().enumerate() {
                    rank[leaf as usize] = r as u32;
                }
                rank
            }
            None => (0..qi.leaves() as u32).collect(),
        };
        ranks.push(rank);
    }
    let leaf_codes = freq.leaf_codes();
    let mut order: Vec<u32> = (0..freq.leaf_classes() as u32).collect();
    order.sort_by(|&a, &b| {
        ranks
            .iter()
            .zip(leaf_codes)
            .map(|(rank, codes)| {
                rank[codes[a as usize] as usize].cmp(&rank[codes[b as usize] as usize])
            })
            .find(|o| o.is_ne())
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    order
}

/// A set of slots with O(1) insertion and removal (order: deterministic, not sorted).
struct Slots {
    items: Vec<u32>,
    position: Vec<u32>,
}

impl Slots {
    fn new(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
            position: vec![NONE; capacity],
        }
    }

    fn insert(&mut self, slot: usize) {
        if self.position[slot] == NONE {
            self.position[slot] = self.items.len() as u32;
            self.items.push(slot as u32);
        }
    }

    fn remove(&mut self, slot: usize) {
        let p = self.position[slot];
        if p == NONE {
            return;
        }
        self.items.swap_remove(p as usize);
        if let Some(&moved) = self.items.get(p as usize) {
            self.position[moved as usize] = p;
        }
        self.position[slot] = NONE;
    }
}

/// The classes in flat arrays, indexed by slot (see the module documentation).
struct Classes {
    d: usize,
    heights: Vec<usize>,
    /// per QI: where its levels start in a class's shared codes, and in `weights`
    offsets: Vec<usize>,
    weight_offsets: Vec<usize>,
    stride: usize,
    /// per QI: W of each level, then 1 for `*` (index = height)
    weights: Vec<f64>,
    rows: Vec<u64>,
    /// `[slot · d + q]`: the published level (height = `*`)
    level: Vec<u32>,
    /// `[slot · stride + offsets[q] + level]`: the code the class's leaves share there
    shared: Vec<u32>,
}

impl Classes {
    fn new(freq: &FrequencySet, order: &[u32], beta: Option<f64>) -> Self {
        let qis = freq.qis();
        let d = qis.len();
        let heights: Vec<usize> = qis.iter().map(|q| q.height()).collect();
        let (mut offsets, mut weight_offsets, mut weights) = (Vec::new(), Vec::new(), Vec::new());
        let mut stride = 0;
        for &h in &heights {
            offsets.push(stride);
            stride += h;
            weight_offsets.push(weights.len());
            weights.extend((0..h).map(|a| whd(h, 0, a, beta)));
            weights.push(1.0);
        }
        let n = freq.leaf_classes();
        let mut shared = vec![NONE; n * stride];
        for (q, qi) in qis.iter().enumerate() {
            let leaves = &freq.leaf_codes()[q];
            for level in 0..heights[q] {
                let map = qi.leaf_map(level);
                for (slot, &c) in order.iter().enumerate() {
                    let leaf = leaves[c as usize];
                    shared[slot * stride + offsets[q] + level] = map[leaf as usize];
                }
            }
        }
        Self {
            d,
            heights,
            offsets,
            weight_offsets,
            stride,
            weights,
            rows: order.iter().map(|&c| freq.sizes()[c as usize]).collect(),
            level: vec![0; n * d],
            shared,
        }
    }

    fn weight(&self, q: usize, level: usize) -> f64 {
        self.weights[self.weight_offsets[q] + level]
    }

    /// The distortion of publishing `*` instead of the class's cells.
    fn suppression_cost(&self, c: usize) -> f64 {
        let levels = &self.level[c * self.d..(c + 1) * self.d];
        let lost: f64 = levels
            .iter()
            .enumerate()
            .map(|(q, &a)| 1.0 - self.weight(q, a as usize))
            .sum();
        self.rows[c] as f64 * lost
    }

    /// The distortion of merging `c` and `x`, `None` once it exceeds `bound`.
    fn merge_cost(&self, c: usize, x: usize, bound: f64) -> Option<f64> {
        let (nc, nx) = (self.rows[c] as f64, self.rows[x] as f64);
        let n = nc + nx;
        let (d, s) = (self.d, self.stride);
        let (lc, lx) = (
            &self.level[c * d..(c + 1) * d],
            &self.level[x * d..(x + 1) * d],
        );
        let (sc, sx) = (
            &self.shared[c * s..(c + 1) * s],
            &self.shared[x * s..(x + 1) * s],
        );
        let mut cost = 0.0;
        for q in 0..d {
            let (ac, ax) = (lc[q] as usize, lx[q] as usize);
            let (o, h) = (self.offsets[q], self.heights[q]);
            // below max(ac, ax) one of the two classes shares no code already
            let common = (ac.max(ax)..h)
                .find(|&l| sc[o + l] != NONE && sc[o + l] == sx[o + l])
                .unwrap_or(h);
            let w = &self.weights[self.weight_offsets[q]..];
            cost += n * w[common] - nc * w[ac] - nx * w[ax];
            // every QI adds a non-negative amount
            if cost > bound {
                return None;
            }
        }
        Some(cost)
    }

    /// The cheapest merge of `c` with another live class: (cost, slot), lowest slot on ties.
    fn nearest(&self, c: usize, live: &[u32]) -> Option<(f64, u32)> {
        let scan = |part: &[u32]| {
            let mut best: Option<(f64, u32)> = None;
            for &x in part {
                if x as usize == c {
                    continue;
                }
                let bound = best.map_or(f64::INFINITY, |b| b.0);
                if let Some(cost) = self.merge_cost(c, x as usize, bound) {
                    best = better(best, Some((cost, x)));
                }
            }
            best
        };
        if live.len() < PARALLEL_MIN {
            return scan(live);
        }
        let (a, b) = live.split_at(live.len() / 2);
        std::thread::scope(|s| {
            let other = s.spawn(|| scan(b));
            let first = scan(a);
            let second = other
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            better(first, second)
        })
    }

    /// Merges slot `gone` into slot `keep`.
    fn merge(&mut self, keep: usize, gone: usize) {
        let (d, s) = (self.d, self.stride);
        for q in 0..d {
            let (o, h) = (self.offsets[q], self.heights[q]);
            let mut lowest = h;
            for l in 0..h {
                let (a, b) = (self.shared[keep * s + o + l], self.shared[gone * s + o + l]);
                let v = if a == b { a } else { NONE };
                self.shared[keep * s + o + l] = v;
                if v != NONE && lowest == h {
                    lowest = l;
                }
            }
            self.level[keep * d + q] = lowest as u32;
        }
        self.rows[keep] += self.rows[gone];
    }

    /// The published cell of slot `c` for QI `q`.
    fn cell(&self, c: usize, q: usize) -> Cell {
        let level = self.level[c * self.d + q];
        if level as usize == self.heights[q] {
            Cell::Top
        } else {
            Cell::Node {
                level,
                code: self.shared[c * self.stride + self.offsets[q] + level as usize],
            }
        }
    }
}

/// The cheaper of two candidates, the lower slot on equal cost.
fn better(a: Option<(f64, u32)>, b: Option<(f64, u32)>) -> Option<(f64, u32)> {
    match (a, b) {
        (Some(x), Some(y)) => {
            if y.0 < x.0 || (y.0 == x.0 && y.1 < x.1) {
                Some(y)
            } else {
                Some(x)
            }
        }
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{LDiversity, LDiversityKind, SensitiveRequirement};
    use crate::search::local::{SUPPRESSED, evaluate};
    use crate::search::{FrequencyRow, QiCodes};

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Seed 004 §3.1: birth date {D/M/Y, M/Y, Y, 10Y, C/T/G/P, *} (h = 6); D/M/Y (our
    /// level 0) → 10Y (our level 3, the seed's 3) is WHD(6, 3).
    /// - uniform: (w₆₅ + w₅₄ + w₄₃) / (w₆₅ + … + w₂₁) = 3/5 = 0.6;
    /// - β = 1, w_{j,j−1} = 1/(j−1): (1/5 + 1/4 + 1/3) / (1/5 + 1/4 + 1/3 + 1/2 + 1)
    ///   = 0.78333 / 2.28333 = 0.34307;
    /// - gender {Male/Female, *} (h = 2) to `*`: w₂₁ / w₂₁ = 1 either way.
    #[test]
    fn whd_seed_example() {
        assert!(close(whd(6, 0, 3, None), 0.6));
        let expected = (1.0 / 3.0 + 0.25 + 0.2) / (1.0 + 0.5 + 1.0 / 3.0 + 0.25 + 0.2);
        assert!(close(whd(6, 0, 3, Some(1.0)), expected));
        assert!((whd(6, 0, 3, Some(1.0)) - 0.3431).abs() < 1e-4);
        assert!(close(whd(2, 0, 1, None), 1.0));
        assert!(close(whd(2, 0, 1, Some(1.0)), 1.0));
        // additive over levels, nothing when nothing moves
        assert!(close(
            whd(6, 0, 1, None) + whd(6, 1, 3, None),
            whd(6, 0, 3, None)
        ));
        assert_eq!(whd(6, 2, 2, None), 0.0);
        assert!(close(whd(6, 0, 5, Some(2.0)), 1.0));
    }

    /// Two QIs a, b with 4 leaves each and the 3-level hierarchy {leaf, pair {0,1}/{2,3},
    /// *}.
    fn two_level_qis() -> Vec<QiCodes> {
        let levels = vec![vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![0, 0, 0, 0]];
        vec![
            QiCodes {
                name: "a".into(),
                levels: levels.clone(),
            },
            QiCodes {
                name: "b".into(),
                levels,
            },
        ]
    }

    use crate::search::local::tests::{k_only, two_qi_rows as rows};

    /// Leaf classes (a, b) × rows: 0: (0,0)×3, 1: (1,0)×1, 2: (2,2)×2, 3: (3,3)×3; k = 3.
    /// With h = 3 and uniform weights W(0) = 0, W(1) = 1/2, W(2) = 1.
    /// - Class 1 (fails): with 0, a joins at level 1, b stays: 4·½ = 2; with 2, both at the
    ///   top: 3·(1 + 1) = 6; with 3: 4·2 = 8. It merges with class 0.
    /// - Class 2 (fails): with 3, both at level 1: 5·(½ + ½) = 5; with 1: 6; with 0: 5·2 =
    ///   10; with {0,1} (a at 1, b at 0): 6·2 − 4·½ = 10. It merges with class 3.
    ///
    /// Either order gives {0,1} publishing ({0,1}, 0) and {2,3} publishing ({2,3}, {2,3}).
    #[test]
    fn hand_checked_merges() {
        let freq = FrequencySet::from_codes(
            two_level_qis(),
            vec![],
            &rows(&[(0, 0, 3), (1, 0, 1), (2, 2, 2), (3, 3, 3)]),
        )
        .unwrap();
        for seed in 0..8 {
            let options = LocalOptions {
                seed,
                ..LocalOptions::default()
            };
            let release = kaca(&freq, &k_only(3, 0.0), options).unwrap();
            assert_eq!(release.class_of, vec![0, 0, 1, 1]);
            assert_eq!(
                release.cells_of(0),
                &[
                    Cell::Node { level: 1, code: 0 },
                    Cell::Node { level: 0, code: 0 }
                ]
            );
            assert_eq!(
                release.cells_of(1),
                &[
                    Cell::Node { level: 1, code: 1 },
                    Cell::Node { level: 1, code: 1 }
                ]
            );
        }
    }

    /// Leaf classes 0: (0,0)×3, 1: (3,0)×1, 2: (2,2)×3; k = 3, n = 7. Class 1 fails; its
    /// merges cost 4·(1 + 0) = 4 (with 0: a at the top) and 4·(½ + 1) = 6 (with 2);
    /// suppressing it costs 1·(1 + 1) = 2 < 4.
    /// - max_suppression 0.2: budget ⌊1.4⌋ = 1 row, so it is suppressed;
    /// - max_suppression 0: it merges with class 0 into (*, 0): a's top node, level 2.
    #[test]
    fn suppression_when_cheaper_and_allowed() {
        let freq = FrequencySet::from_codes(
            two_level_qis(),
            vec![],
            &rows(&[(0, 0, 3), (3, 0, 1), (2, 2, 3)]),
        )
        .unwrap();
        let options = LocalOptions::default();
        let release = kaca(&freq, &k_only(3, 0.2), options).unwrap();
        assert_eq!(release.class_of, vec![0, SUPPRESSED, 1]);
        assert_eq!(
            release.cells_of(1),
            &[
                Cell::Node { level: 0, code: 2 },
                Cell::Node { level: 0, code: 2 }
            ]
        );
        let release = kaca(&freq, &k_only(3, 0.0), options).unwrap();
        assert_eq!(release.class_of, vec![0, 0, 1]);
        assert_eq!(
            release.cells_of(0),
            &[
                Cell::Node { level: 2, code: 0 },
                Cell::Node { level: 0, code: 0 }
            ]
        );
    }

    use crate::search::local::tests::{
        random_code_freq as random_freq, random_code_rows as random_rows,
    };

    /// The same rows in another order number the leaf classes differently (as two runs of
    /// the `GROUP BY` may): every leaf class still gets the same cells.
    #[test]
    fn leaf_class_numbering_does_not_matter() {
        let (qis, sensitive, rows) = random_rows(8);
        let a = FrequencySet::from_codes(qis.clone(), sensitive.clone(), &rows).unwrap();
        let reversed: Vec<FrequencyRow> = rows.iter().rev().cloned().collect();
        let b = FrequencySet::from_codes(qis, sensitive, &reversed).unwrap();
        assert_ne!(a.leaf_codes(), b.leaf_codes());
        let req = k_only(4, 0.02);
        let (ra, rb) = (
            kaca(&a, &req, LocalOptions::default()).unwrap(),
            kaca(&b, &req, LocalOptions::default()).unwrap(),
        );
        let tuple = |f: &FrequencySet, c: usize| -> Vec<u32> {
            f.leaf_codes().iter().map(|codes| codes[c]).collect()
        };
        let cells = |r: &LocalRelease, c: usize| match r.class_of[c] {
            SUPPRESSED => None,
            class => Some(r.cells_of(class as usize).to_vec()),
        };
        for ca in 0..a.leaf_classes() {
            let cb = (0..b.leaf_classes())
                .find(|&cb| tuple(&b, cb) == tuple(&a, ca))
                .unwrap();
            assert_eq!(cells(&ra, ca), cells(&rb, cb));
        }
    }

    #[test]
    fn every_class_meets_k_and_seed_is_deterministic() {
        let freq = random_freq(3);
        let req = k_only(4, 0.0);
        for seed in [1, 2] {
            let options = LocalOptions {
                seed,
                ..LocalOptions::default()
            };
            let release = kaca(&freq, &req, options).unwrap();
            let e = evaluate(&freq, &req, &release).unwrap();
            assert!(e.satisfies);
            assert_eq!(e.suppressed_rows, 0);
            assert!(e.min_class_size.unwrap() >= 4);
            assert!(!release.class_of.contains(&SUPPRESSED));
            assert_eq!(release, kaca(&freq, &req, options).unwrap());
            // β changes the distances, not the guarantee
            let weighted = LocalOptions {
                whd_beta: Some(1.0),
                ..options
            };
            let e = evaluate(&freq, &req, &kaca(&freq, &req, weighted).unwrap()).unwrap();
            assert!(e.satisfies && e.min_class_size.unwrap() >= 4);
        }
        // with a budget: still k, within the budget
        let req = k_only(4, 0.05);
        let e = evaluate(
            &freq,
            &req,
            &kaca(&freq, &req, LocalOptions::default()).unwrap(),
        )
        .unwrap();
        assert!(e.satisfies && e.suppressed_rows <= e.max_suppressed_rows);
    }

    #[test]
    fn every_class_meets_l_diversity() {
        let freq = random_freq(11);
        let req = PrivacyRequirements {
            suppression: Default::default(),
            population: None,
            k: 3,
            max_suppression: 0.0,
            sensitive: vec![SensitiveRequirement {
                attribute: "s".into(),
                l: Some(LDiversity {
                    kind: LDiversityKind::Distinct,
                    l: 3.0,
                    c: None,
                }),
                t: None,
                ..Default::default()
            }],
        };
        let release = kaca(&freq, &req, LocalOptions::default()).unwrap();
        let e = evaluate(&freq, &req, &release).unwrap();
        assert!(e.satisfies);
        assert_eq!(e.suppressed_rows, 0);
        assert!(e.sensitive[0].l().unwrap() >= 3.0);
    }
}
