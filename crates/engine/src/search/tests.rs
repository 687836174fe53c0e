//! The search against an independent brute force: every lattice node of small random tables
//! is evaluated row by row, straight from the definitions in docs/definitions.md (nothing from
//! `evaluate.rs`, `formulas.rs` or the grouping kernels), and the best satisfying node is
//! compared with the search's answer.

use std::collections::{BTreeMap, BTreeSet};

use super::evaluate::Evaluator;
use super::*;
use crate::policy::{
    BetaLikeness, DeltaPresence, LDiversity, LDiversityKind, PopulationRequirement,
    PrivacyRequirements, SensitiveRequirement, TCloseness, TClosenessKind,
};

use crate::rng::SplitMix64 as Rng;

/// Small hand-made hierarchies: `levels[l][leaf]`.
fn hierarchies() -> Vec<Vec<Vec<u32>>> {
    vec![
        // 4 leaves: pairs, then *
        vec![vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![0, 0, 0, 0]],
        // 6 leaves: pairs, halves of 4 + 2, *
        vec![
            vec![0, 1, 2, 3, 4, 5],
            vec![7, 7, 8, 8, 9, 9],
            vec![0, 0, 0, 0, 1, 1],
            vec![5, 5, 5, 5, 5, 5],
        ],
        // 3 leaves: value or *
        vec![vec![0, 1, 2], vec![0, 0, 0]],
        // 5 leaves, uneven: {0,1,2} {3} {4}, then *
        vec![
            vec![0, 1, 2, 3, 4],
            vec![0, 0, 0, 1, 2],
            vec![0, 0, 0, 0, 0],
        ],
    ]
}

/// A random table: rows of (QI leaves, two sensitive values with some NULLs in the first).
struct Table {
    qis: Vec<Vec<Vec<u32>>>,
    rows: Vec<(Vec<u32>, Vec<Option<u32>>)>,
    /// the population the rows were sampled from: their QIs, then as many rows again drawn
    /// uniformly (values the sample lacks included)
    population: Vec<Vec<u32>>,
}

fn random_table(seed: u64, with_nulls: bool) -> Table {
    let mut rng = Rng(seed);
    let all = hierarchies();
    // 2 or 3 QIs, chosen by the seed
    let count = 2 + rng.below(2) as usize;
    let mut chosen: Vec<usize> = (0..all.len()).collect();
    for i in 0..chosen.len() {
        let j = i + rng.below((chosen.len() - i) as u64) as usize;
        chosen.swap(i, j);
    }
    let qis: Vec<Vec<Vec<u32>>> = chosen[..count].iter().map(|&h| all[h].clone()).collect();
    let n = 15 + rng.below(40) as usize;
    let rows = (0..n)
        .map(|_| {
            let qi = qis
                .iter()
                .map(|h| {
                    // skewed: low leaves more frequent
                    let leaves = h[0].len() as u64;
                    let a = rng.below(leaves);
                    let b = rng.below(leaves);
                    a.min(b) as u32
                })
                .collect();
            let s1 = if with_nulls && rng.below(8) == 0 {
                None
            } else {
                Some(rng.below(4) as u32 * 10)
            };
            let s2 = Some(rng.below(3) as u32);
            (qi, vec![s1, s2])
        })
        .collect::<Vec<(Vec<u32>, Vec<Option<u32>>)>>();
    let mut population: Vec<Vec<u32>> = rows.iter().map(|(qi, _)| qi.clone()).collect();
    for _ in 0..n {
        population.push(
            qis.iter()
                .map(|h| rng.below(h[0].len() as u64) as u32)
                .collect(),
        );
    }
    Table {
        qis,
        rows,
        population,
    }
}

fn frequency_set(table: &Table) -> FrequencySet {
    let qis = table
        .qis
        .iter()
        .enumerate()
        .map(|(j, levels)| QiCodes {
            name: format!("q{j}"),
            levels: levels.clone(),
        })
        .collect();
    let sensitive = vec![
        SensitiveCodes {
            name: "s1".into(),
            ordered: true,
        },
        SensitiveCodes {
            name: "s2".into(),
            ordered: true,
        },
    ];
    let rows: Vec<FrequencyRow> = table
        .rows
        .iter()
        .map(|(qi, s)| FrequencyRow {
            qi: qi.clone(),
            sensitive: s.clone(),
            count: 1,
        })
        .collect();
    let mut freq = FrequencySet::from_codes(qis, sensitive, &rows).unwrap();
    let population: Vec<(Vec<u32>, u64)> =
        table.population.iter().map(|qi| (qi.clone(), 1)).collect();
    let counts = population::PopulationCounts::from_leaf_codes(freq.qis(), &population).unwrap();
    freq.set_population(counts);
    freq
}

/// What the brute force finds for one node.
#[derive(Debug, Clone)]
struct Brute {
    levels: Vec<usize>,
    satisfies: bool,
    suppressed: u64,
    kept_classes: u64,
    loss: f64,
    discernibility: f64,
    precision: f64,
}

fn entropy_l(counts: &[u64]) -> f64 {
    let n: u64 = counts.iter().sum();
    let h: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n as f64;
            -p * p.ln()
        })
        .sum();
    h.exp()
}

fn recursive_l(counts: &[u64], c: f64) -> usize {
    let mut r = counts.to_vec();
    r.sort_by(|a, b| b.cmp(a));
    let m = r.len();
    let mut best = 1;
    for l in 2..=m {
        let tail: u64 = r[l - 1..].iter().sum();
        if (r[0] as f64) < c * tail as f64 {
            best = l;
        }
    }
    best
}

/// Whether one class (its sensitive values) passes requirement `req` of attribute `s`.
fn class_passes(req: &SensitiveRequirement, class: &[Option<u32>], table: &[Option<u32>]) -> bool {
    let mut ok = true;
    if let Some(l) = req.l {
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        let mut nulls = 0;
        for v in class {
            match v {
                Some(v) => *counts.entry(*v).or_default() += 1,
                None => nulls += 1,
            }
        }
        let achieved = match l.kind {
            LDiversityKind::Distinct => {
                if counts.is_empty() {
                    1.0
                } else {
                    counts.len() as f64
                }
            }
            _ => {
                let mut c: Vec<u64> = counts.values().copied().collect();
                if nulls > 0 {
                    // worst case: NULLs are the most frequent value
                    match c.iter_mut().max() {
                        Some(m) => *m += nulls,
                        None => c.push(nulls),
                    }
                }
                if l.kind == LDiversityKind::Entropy {
                    entropy_l(&c)
                } else {
                    recursive_l(&c, l.c.unwrap()) as f64
                }
            }
        };
        ok &= achieved >= l.l - 1e-9;
    }
    if let Some(t) = req.t {
        // the table's domain, NULL first, then ascending
        let domain: BTreeSet<Option<u32>> = table.iter().copied().collect();
        let share = |set: &[Option<u32>], v: Option<u32>| {
            set.iter().filter(|&&x| x == v).count() as f64 / set.len() as f64
        };
        let distance = match t.kind {
            TClosenessKind::Equal => {
                0.5 * domain
                    .iter()
                    .map(|&v| (share(class, v) - share(table, v)).abs())
                    .sum::<f64>()
            }
            TClosenessKind::Ordered => {
                let m = domain.len();
                if m == 1 {
                    0.0
                } else {
                    let mut cumulative = 0.0;
                    let mut total = 0.0;
                    for &v in &domain {
                        cumulative += share(class, v) - share(table, v);
                        total += cumulative.abs();
                    }
                    total / (m - 1) as f64
                }
            }
        };
        ok &= distance <= t.t + 1e-9;
    }
    // α, β and δ straight from their definitions (docs/definitions.md), over the table's
    // domain with NULL a value of its own (β, δ) or a copy of the most frequent value (α)
    let domain: BTreeSet<Option<u32>> = table.iter().copied().collect();
    let share = |set: &[Option<u32>], v: Option<u32>| {
        set.iter().filter(|&&x| x == v).count() as f64 / set.len() as f64
    };
    if let Some(alpha) = req.alpha {
        let nulls = class.iter().filter(|v| v.is_none()).count() as f64;
        let top = domain
            .iter()
            .flatten()
            .map(|&v| class.iter().filter(|&&x| x == Some(v)).count() as f64)
            .fold(0.0, f64::max);
        ok &= (top + nulls) / class.len() as f64 <= alpha + 1e-9;
    }
    if let Some(beta) = req.beta {
        for &v in &domain {
            let (pe, pt) = (share(class, v), share(table, v));
            if pe > pt {
                let gain = (pe - pt) / pt;
                let cap = if beta.enhanced {
                    beta.beta.min(-pt.ln())
                } else {
                    beta.beta
                };
                ok &= gain <= cap + 1e-9;
            }
        }
    }
    if let Some(persons) = req.persons {
        // a NULL person id may be any person of the class: it adds none (all NULL: one)
        let known: BTreeSet<u32> = class.iter().flatten().copied().collect();
        let count = if known.is_empty() {
            1
        } else {
            known.len() as u64
        };
        ok &= count >= persons;
    }
    if let Some(delta) = req.delta {
        for &v in &domain {
            let (pe, pt) = (share(class, v), share(table, v));
            // a value missing from the class: ln 0, infinitely far
            ok &= pe > 0.0 && (pe / pt).ln().abs() < delta - 1e-9;
        }
    }
    ok
}

/// Every node, evaluated row by row.
/// Whether one class (`members`, its generalized codes `key` at `levels`) meets `req` in a
/// published table of the rows `published`.
fn brute_class_passes(
    table: &Table,
    req: &PrivacyRequirements,
    levels: &[usize],
    key: &[u32],
    members: &[usize],
    published: &[usize],
) -> bool {
    let d = table.qis.len();
    let mut pass = members.len() as u64 >= req.k;
    if let Some(population) = &req.population {
        // F_E: population rows generalized to the class's codes; δ = |E| / F_E
        let f = table
            .population
            .iter()
            .filter(|qi| (0..d).all(|j| table.qis[j][levels[j]][qi[j] as usize] == key[j]))
            .count() as f64;
        let size = members.len() as f64;
        if let Some(k_map) = population.k_map {
            pass &= f >= k_map as f64;
        }
        if let Some(delta) = population.delta_presence {
            pass &= f > 0.0 && size / f >= delta.min - 1e-9 && size / f <= delta.max + 1e-9;
        }
    }
    for req_s in &req.sensitive {
        let s = if req_s.attribute == "s1" { 0 } else { 1 };
        let class: Vec<Option<u32>> = members.iter().map(|&r| table.rows[r].1[s]).collect();
        let all: Vec<Option<u32>> = published.iter().map(|&r| table.rows[r].1[s]).collect();
        pass &= class_passes(req_s, &class, &all);
    }
    pass
}

fn brute_force(table: &Table, req: &PrivacyRequirements) -> Vec<Brute> {
    let d = table.qis.len();
    let n = table.rows.len() as u64;
    let heights: Vec<usize> = table.qis.iter().map(Vec::len).collect();
    let mut out = Vec::new();
    let mut levels = vec![0usize; d];
    loop {
        // classes by generalized codes
        let mut classes: BTreeMap<Vec<u32>, Vec<usize>> = BTreeMap::new();
        for (r, (qi, _)) in table.rows.iter().enumerate() {
            let key = (0..d)
                .map(|j| table.qis[j][levels[j]][qi[j] as usize])
                .collect();
            classes.entry(key).or_default().push(r);
        }
        let mut suppressed = 0u64;
        let mut kept_classes = 0u64;
        let mut squares = 0f64;
        let mut cost_sum = 0f64;
        let mut precision_sum = 0f64;
        // drop mode (docs/definitions.md): t, β and δ against the rows of the classes kept,
        // judged again until no class fails; the first round against every row
        let mut kept: Vec<bool> = vec![true; classes.len()];
        loop {
            let published: Vec<usize> = classes
                .values()
                .zip(&kept)
                .filter(|(_, k)| **k)
                .flat_map(|(m, _)| m.iter().copied())
                .collect();
            let mut dropped = false;
            for ((key, members), k) in classes.iter().zip(kept.iter_mut()) {
                if *k && !brute_class_passes(table, req, &levels, key, members, &published) {
                    *k = false;
                    dropped = true;
                }
            }
            if !dropped
                || !req
                    .sensitive
                    .iter()
                    .any(|s| s.bounds().iter().any(|b| b.measure.depends_on_table()))
            {
                break;
            }
        }
        for ((_, members), &pass) in classes.iter().zip(&kept) {
            if pass {
                kept_classes += 1;
                squares += (members.len() * members.len()) as f64;
                for &r in members {
                    for j in 0..d {
                        let h = &table.qis[j];
                        let top = h.len() - 1;
                        let leaves = h[0].len();
                        let code = h[levels[j]][table.rows[r].0[j] as usize];
                        let under = h[levels[j]].iter().filter(|&&c| c == code).count();
                        cost_sum += if levels[j] == top {
                            1.0
                        } else {
                            (under - 1) as f64 / (leaves - 1) as f64
                        };
                        precision_sum += levels[j] as f64 / top as f64;
                    }
                }
            } else {
                suppressed += members.len() as u64;
                cost_sum += (members.len() * d) as f64;
                precision_sum += (members.len() * d) as f64;
            }
        }
        let nd = (n as usize * d) as f64;
        out.push(Brute {
            levels: levels.clone(),
            satisfies: suppressed <= req.max_suppressed_rows(n) && suppressed < n,
            suppressed,
            kept_classes,
            loss: cost_sum / nd,
            discernibility: squares + (n * suppressed) as f64,
            precision: precision_sum / nd,
        });
        // next level vector (last QI fastest)
        let mut j = d;
        loop {
            if j == 0 {
                return out;
            }
            j -= 1;
            levels[j] += 1;
            if levels[j] < heights[j] {
                break;
            }
            levels[j] = 0;
        }
    }
}

fn brute_cost(b: &Brute, metric: Metric) -> f64 {
    match metric {
        Metric::Loss => b.loss,
        Metric::Discernibility => b.discernibility,
        Metric::Precision => b.precision,
        Metric::Classes => -(b.kept_classes as f64),
    }
}

/// The best satisfying node: lowest cost (within 1e-9), then height, then level vector.
fn brute_best(nodes: &[Brute], metric: Metric) -> Option<&Brute> {
    let mut best: Option<&Brute> = None;
    for b in nodes.iter().filter(|b| b.satisfies) {
        best = match best {
            None => Some(b),
            Some(cur) => {
                let (c, bc) = (brute_cost(b, metric), brute_cost(cur, metric));
                let height = |x: &Brute| x.levels.iter().sum::<usize>();
                let better = c < bc - 1e-9
                    || ((c - bc).abs() <= 1e-9
                        && (height(b), &b.levels) < (height(cur), &cur.levels));
                Some(if better { b } else { cur })
            }
        };
    }
    best
}

fn sensitive(
    attribute: &str,
    l: Option<LDiversity>,
    t: Option<TCloseness>,
) -> SensitiveRequirement {
    SensitiveRequirement {
        attribute: attribute.into(),
        l,
        t,
        ..Default::default()
    }
}

fn policies() -> Vec<(&'static str, PrivacyRequirements)> {
    let req = |k, max_suppression, sensitive| PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression,
        sensitive,
    };
    let l = |kind, l, c| LDiversity { kind, l, c };
    let t = |kind, t| TCloseness { kind, t };
    let mut out = Vec::new();
    for rate in [0.0, 0.1, 0.25] {
        out.push(("k", req(3, rate, vec![])));
        out.push((
            "k + distinct l",
            req(
                2,
                rate,
                vec![sensitive(
                    "s1",
                    Some(l(LDiversityKind::Distinct, 2.0, None)),
                    None,
                )],
            ),
        ));
        out.push((
            "k + entropy l",
            req(
                2,
                rate,
                vec![sensitive(
                    "s1",
                    Some(l(LDiversityKind::Entropy, 1.8, None)),
                    None,
                )],
            ),
        ));
        out.push((
            "k + recursive l",
            req(
                2,
                rate,
                vec![sensitive(
                    "s1",
                    Some(l(LDiversityKind::Recursive, 2.0, Some(2.0))),
                    None,
                )],
            ),
        ));
        out.push((
            "k + t equal",
            req(
                2,
                rate,
                vec![sensitive("s1", None, Some(t(TClosenessKind::Equal, 0.3)))],
            ),
        ));
        out.push((
            "k + t ordered",
            req(
                2,
                rate,
                vec![sensitive("s1", None, Some(t(TClosenessKind::Ordered, 0.2)))],
            ),
        ));
        out.push((
            "two sensitive attributes",
            req(
                2,
                rate,
                vec![
                    sensitive("s1", Some(l(LDiversityKind::Distinct, 2.0, None)), None),
                    sensitive("s2", None, Some(t(TClosenessKind::Equal, 0.35))),
                ],
            ),
        ));
    }
    for rate in [0.0, 0.25] {
        let against = |k_map, delta_presence| PrivacyRequirements {
            suppression: Default::default(),
            population: Some(PopulationRequirement {
                k_map,
                delta_presence,
            }),
            ..req(2, rate, vec![])
        };
        let delta = |min, max| Some(DeltaPresence { min, max });
        out.push(("k-map", against(Some(5), None)));
        out.push(("δ-presence", against(None, delta(0.3, 0.7))));
        out.push(("δ-presence, no lower bound", against(None, delta(0.0, 0.5))));
        out.push(("k-map + δ-presence", against(Some(4), delta(0.2, 0.8))));
    }
    for rate in [0.0, 0.25] {
        let with = |extra: SensitiveRequirement| vec![extra];
        out.push((
            "k + alpha",
            req(
                2,
                rate,
                with(SensitiveRequirement {
                    alpha: Some(0.6),
                    ..SensitiveRequirement::unconstrained("s1")
                }),
            ),
        ));
        out.push((
            "k + beta",
            req(
                2,
                rate,
                with(SensitiveRequirement {
                    beta: Some(BetaLikeness {
                        beta: 1.0,
                        enhanced: false,
                    }),
                    ..SensitiveRequirement::unconstrained("s1")
                }),
            ),
        ));
        out.push((
            "k + enhanced beta",
            req(
                2,
                rate,
                with(SensitiveRequirement {
                    beta: Some(BetaLikeness {
                        beta: 2.0,
                        enhanced: true,
                    }),
                    ..SensitiveRequirement::unconstrained("s1")
                }),
            ),
        ));
        out.push((
            "k + delta",
            req(
                2,
                rate,
                with(SensitiveRequirement {
                    delta: Some(1.2),
                    ..SensitiveRequirement::unconstrained("s2")
                }),
            ),
        ));
        out.push((
            "k + persons",
            req(
                2,
                rate,
                with(SensitiveRequirement {
                    persons: Some(3),
                    ..SensitiveRequirement::unconstrained("s1")
                }),
            ),
        ));
        out.push((
            "alpha, beta and delta on two attributes",
            req(
                2,
                rate,
                vec![
                    SensitiveRequirement {
                        alpha: Some(0.7),
                        delta: Some(1.5),
                        ..SensitiveRequirement::unconstrained("s1")
                    },
                    SensitiveRequirement {
                        beta: Some(BetaLikeness {
                            beta: 1.5,
                            enhanced: false,
                        }),
                        ..SensitiveRequirement::unconstrained("s2")
                    },
                ],
            ),
        ));
    }
    out.push(("k only, k = 1", req(1, 0.0, vec![])));
    out
}

#[test]
fn optimal_equals_brute_force() {
    let metrics = [
        Metric::Loss,
        Metric::Discernibility,
        Metric::Precision,
        Metric::Classes,
    ];
    let mut solved = 0;
    let mut solved_per_policy: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..12u64 {
        let table = random_table(seed, seed % 3 == 0);
        let freq = frequency_set(&table);
        for (name, req) in policies() {
            solved_per_policy.entry(name).or_default();
            let nodes = brute_force(&table, &req);
            for metric in metrics {
                let outcome =
                    search(&freq, &req, Algorithm::Optimal, metric, &mut |_, _| {}).unwrap();
                let expected = brute_best(&nodes, metric);
                let context = format!(
                    "seed {seed}, {name}, {metric}, rate {}",
                    req.max_suppression
                );
                match (expected, &outcome.solution) {
                    (None, None) => {}
                    (Some(b), Some(s)) => {
                        solved += 1;
                        *solved_per_policy.entry(name).or_default() += 1;
                        assert_eq!(s.levels, b.levels, "{context}");
                        let e = &s.evaluation;
                        assert!(e.satisfies, "{context}");
                        assert_eq!(e.suppressed_rows, b.suppressed, "{context}");
                        assert_eq!(e.classes, b.kept_classes, "{context}");
                        assert!((e.loss - b.loss).abs() < 1e-9, "{context}");
                        assert!((e.precision - b.precision).abs() < 1e-9, "{context}");
                        assert_eq!(e.discernibility, b.discernibility, "{context}");
                    }
                    (b, s) => panic!("{context}: brute force {b:?}, search {s:?}"),
                }
            }
        }
    }
    // the policies are not all trivially unsatisfiable, and none is always
    assert!(solved > 500, "{solved}");
    for (name, solved) in solved_per_policy {
        assert!(solved > 0, "{name} is never solved");
    }
}

/// Every node evaluated through one evaluator in a shuffled order (so nodes roll up from
/// cached finer nodes of all kinds) agrees with the brute force.
#[test]
fn every_node_matches_brute_force() {
    for seed in 100..106u64 {
        let table = random_table(seed, true);
        let freq = frequency_set(&table);
        for (name, req) in policies() {
            let nodes = brute_force(&table, &req);
            let mut ev = Evaluator::new(&freq, &req).unwrap();
            let mut order: Vec<usize> = ev.lattice.nodes().collect();
            let mut rng = Rng(seed);
            for i in 0..order.len() {
                let j = i + rng.below((order.len() - i) as u64) as usize;
                order.swap(i, j);
            }
            for node in order {
                let e = ev.describe(node);
                let b = nodes.iter().find(|b| b.levels == e.levels).unwrap();
                let context = format!("seed {seed}, {name}, node {:?}", e.levels);
                assert_eq!(e.satisfies, b.satisfies, "{context}");
                assert_eq!(e.suppressed_rows, b.suppressed, "{context}");
                assert_eq!(e.classes, b.kept_classes, "{context}");
                assert!((e.loss - b.loss).abs() < 1e-9, "{context}");
                assert!((e.precision - b.precision).abs() < 1e-9, "{context}");
                assert_eq!(e.discernibility, b.discernibility, "{context}");
            }
        }
    }
}

#[test]
fn iab_satisfies_and_is_not_better_than_optimal() {
    let mut solved = 0;
    let mut solved_per_policy: BTreeMap<&str, usize> = BTreeMap::new();
    for seed in 0..12u64 {
        let table = random_table(seed, seed % 3 == 0);
        let freq = frequency_set(&table);
        for (name, req) in policies() {
            solved_per_policy.entry(name).or_default();
            let nodes = brute_force(&table, &req);
            let optimal = search(
                &freq,
                &req,
                Algorithm::Optimal,
                Metric::Loss,
                &mut |_, _| {},
            )
            .unwrap();
            let iab = search(
                &freq,
                &req,
                Algorithm::IabFullDomain,
                Metric::Loss,
                &mut |_, _| {},
            )
            .unwrap();
            let context = format!("seed {seed}, {name}");
            match (&optimal.solution, &iab.solution) {
                (None, None) => {}
                (Some(o), Some(i)) => {
                    solved += 1;
                    let b = nodes.iter().find(|b| b.levels == i.levels).unwrap();
                    assert!(b.satisfies, "{context}");
                    assert!((i.evaluation.loss - b.loss).abs() < 1e-9, "{context}");
                    assert!(i.evaluation.loss >= o.evaluation.loss - 1e-12, "{context}");
                    // IAB maximizes distinct tuples: no satisfying node has more classes
                    // before suppression... among nodes it can reach; with nested
                    // hierarchies that is every node
                    let best_classes = nodes
                        .iter()
                        .filter(|b| b.satisfies)
                        .map(|b| {
                            // classes before suppression of the brute-force node
                            let d = table.qis.len();
                            table
                                .rows
                                .iter()
                                .map(|(qi, _)| {
                                    (0..d)
                                        .map(|j| table.qis[j][b.levels[j]][qi[j] as usize])
                                        .collect::<Vec<_>>()
                                })
                                .collect::<BTreeSet<_>>()
                                .len() as u64
                        })
                        .max()
                        .unwrap();
                    assert_eq!(
                        i.evaluation.classes_before_suppression, best_classes,
                        "{context}"
                    );
                }
                (o, i) => panic!("{context}: optimal {o:?}, iab {i:?}"),
            }
        }
    }
    assert!(solved > 100, "{solved}");
}

/// Loss of a hand-checked node.
///
/// QI a: 4 leaves, level 1 = pairs {0,1} {2,3}, level 2 = *; QI b: 3 leaves, level 1 = *.
/// Rows (a, b): (0,0) (1,0) (2,1) (3,2). Node [1, 0]: classes {(0,0),(1,0)} → ({0,1}, 0) of
/// 2 rows, ({2,3}, 1) and ({2,3}, 2) of one row each. With k = 2 and 50% suppression the two
/// single rows are suppressed (2 ≤ ⌊0.5·4⌋).
/// - Loss: kept rows cost (2−1)/(4−1) = 1/3 for a and 0 for b; suppressed rows 1 per QI:
///   (2·(1/3 + 0) + 2·(1 + 1)) / (4·2) = (2/3 + 4)/8 = 7/12 = 0.58333.
/// - Discernibility: 2² + 4·2 = 12.
/// - Precision: kept rows 1/2 (a) + 0/1 (b); (2·0.5 + 2·2)/8 = 5/8.
#[test]
fn hand_checked_loss() {
    let qis = vec![
        QiCodes {
            name: "a".into(),
            levels: vec![vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![0, 0, 0, 0]],
        },
        QiCodes {
            name: "b".into(),
            levels: vec![vec![0, 1, 2], vec![0, 0, 0]],
        },
    ];
    let rows: Vec<FrequencyRow> = [(0, 0), (1, 0), (2, 1), (3, 2)]
        .iter()
        .map(|&(a, b)| FrequencyRow {
            qi: vec![a, b],
            sensitive: vec![],
            count: 1,
        })
        .collect();
    let freq = FrequencySet::from_codes(qis, vec![], &rows).unwrap();
    let req = PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 2,
        max_suppression: 0.5,
        sensitive: vec![],
    };
    let e = evaluate_levels(&freq, &req, &[1, 0]).unwrap();
    assert!(e.satisfies);
    assert_eq!(e.suppressed_rows, 2);
    assert_eq!(e.classes, 1);
    assert_eq!(e.classes_before_suppression, 3);
    assert_eq!(e.min_class_size, Some(2));
    assert!((e.loss - 7.0 / 12.0).abs() < 1e-12, "{}", e.loss);
    assert_eq!(e.discernibility, 12.0);
    assert!((e.precision - 5.0 / 8.0).abs() < 1e-12);
    // without suppression: 1/3 for a, 0 for b over 2 QIs = 1/6
    assert!((freq.loss_without_suppression(&[1, 0]) - 1.0 / 6.0).abs() < 1e-12);
    // the optimum over the 6 nodes: [0, 0] and [0, 1] leave four single rows (4 > 2
    // suppressed); [1, 0] costs 7/12; [1, 1] has two classes of 2, nothing suppressed:
    // (4·(1/3) + 4·1)/8 = 2/3; [2, 0] keeps (*, 0) of 2 rows and suppresses 2:
    // (2·1 + 2·2)/8 = 3/4; [2, 1] costs 1. Best: [1, 0].
    let s = search(
        &freq,
        &req,
        Algorithm::Optimal,
        Metric::Loss,
        &mut |_, _| {},
    )
    .unwrap()
    .into_solution()
    .unwrap();
    assert_eq!(s.levels, vec![1, 0]);
}

#[test]
fn k_larger_than_the_table_has_no_solution() {
    let table = random_table(7, false);
    let freq = frequency_set(&table);
    for rate in [0.0, 1.0] {
        let req = PrivacyRequirements {
            suppression: Default::default(),
            population: None,
            k: table.rows.len() as u64 + 1,
            max_suppression: rate,
            sensitive: vec![],
        };
        for algorithm in [Algorithm::Optimal, Algorithm::IabFullDomain] {
            let outcome = search(&freq, &req, algorithm, Metric::Loss, &mut |_, _| {}).unwrap();
            assert!(outcome.solution.is_none());
            let message = outcome.into_solution().unwrap_err().to_string();
            assert!(message.contains("no generalization"), "{message}");
        }
    }
}

#[test]
fn invalid_requirements() {
    let freq = frequency_set(&random_table(3, false));
    let check = |req: PrivacyRequirements, expected: &str| {
        let err = search(
            &freq,
            &req,
            Algorithm::Optimal,
            Metric::Loss,
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains(expected), "{err}");
    };
    let base = |sensitive| PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 2,
        max_suppression: 0.0,
        sensitive,
    };
    check(
        PrivacyRequirements {
            suppression: Default::default(),
            population: None,
            k: 0,
            ..base(vec![])
        },
        "k must be",
    );
    check(
        PrivacyRequirements {
            suppression: Default::default(),
            population: None,
            max_suppression: 1.5,
            ..base(vec![])
        },
        "max_suppression",
    );
    let l = |kind, l, c| Some(LDiversity { kind, l, c });
    check(
        base(vec![sensitive(
            "nope",
            l(LDiversityKind::Distinct, 2.0, None),
            None,
        )]),
        "'nope' is not in the frequency set",
    );
    check(
        base(vec![sensitive(
            "s1",
            l(LDiversityKind::Recursive, 2.0, None),
            None,
        )]),
        "kind = \"recursive\" needs c",
    );
    check(
        base(vec![sensitive(
            "s1",
            l(LDiversityKind::Distinct, 0.5, None),
            None,
        )]),
        "at least 1",
    );
    // ordered t on an attribute declared unordered
    let table = random_table(3, false);
    let rows: Vec<FrequencyRow> = table
        .rows
        .iter()
        .map(|(qi, s)| FrequencyRow {
            qi: qi.clone(),
            sensitive: vec![s[0]],
            count: 1,
        })
        .collect();
    let qis = table
        .qis
        .iter()
        .enumerate()
        .map(|(j, levels)| QiCodes {
            name: format!("q{j}"),
            levels: levels.clone(),
        })
        .collect();
    let unordered = FrequencySet::from_codes(
        qis,
        vec![SensitiveCodes {
            name: "s1".into(),
            ordered: false,
        }],
        &rows,
    )
    .unwrap();
    let req = base(vec![sensitive(
        "s1",
        None,
        Some(TCloseness {
            kind: TClosenessKind::Ordered,
            t: 0.2,
        }),
    )]);
    let err = search(
        &unordered,
        &req,
        Algorithm::Optimal,
        Metric::Loss,
        &mut |_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("ordered t-closeness needs an ordered attribute"),
        "{err}"
    );
}

/// k-map and δ-presence by hand. One QI of 4 leaves (pairs, then `*`); the sample has leaves
/// 0, 0, 1, 2, 3 and the population those rows plus 0, 1, 1, 2, 3, 3. F per leaf: 0 → 3,
/// 1 → 3, 2 → 2, 3 → 3; per pair: {0,1} → 6, {2,3} → 5; `*` → 11. Nothing may be
/// suppressed, k = 1.
/// - k-map 3: level 0 fails on leaf 2 (F = 2); level 1 passes (6, 5): level 1.
/// - k-map 2: level 0 passes.
/// - δ ≤ 0.5: level 0 has leaf 0 at 2/3; level 1 has 3/6 = 0.5 and 2/5 = 0.4: level 1.
/// - 0.45 ≤ δ ≤ 0.6: level 1 has 0.4 < 0.45; the top has 5/11 ≈ 0.4545: level 2.
/// - 0.5 ≤ δ ≤ 0.6: nothing (the top's 5/11 is below 0.5).
#[test]
fn population_requirements_by_hand() {
    let qis = vec![QiCodes {
        name: "a".into(),
        levels: vec![vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![0, 0, 0, 0]],
    }];
    let rows: Vec<FrequencyRow> = [0, 0, 1, 2, 3]
        .iter()
        .map(|&a| FrequencyRow {
            qi: vec![a],
            sensitive: vec![],
            count: 1,
        })
        .collect();
    let mut freq = FrequencySet::from_codes(qis, vec![], &rows).unwrap();
    let population: Vec<(Vec<u32>, u64)> = [0, 0, 1, 2, 3, 0, 1, 1, 2, 3, 3]
        .iter()
        .map(|&a| (vec![a], 1))
        .collect();
    freq.set_population(
        population::PopulationCounts::from_leaf_codes(freq.qis(), &population).unwrap(),
    );
    let chosen = |k_map, delta_presence| {
        let req = PrivacyRequirements {
            suppression: Default::default(),
            population: Some(PopulationRequirement {
                k_map,
                delta_presence,
            }),
            k: 1,
            max_suppression: 0.0,
            sensitive: vec![],
        };
        search(
            &freq,
            &req,
            Algorithm::Optimal,
            Metric::Loss,
            &mut |_, _| {},
        )
        .unwrap()
        .solution
        .map(|s| s.levels)
    };
    let delta = |min, max| Some(DeltaPresence { min, max });
    assert_eq!(chosen(Some(3), None), Some(vec![1]));
    assert_eq!(chosen(Some(2), None), Some(vec![0]));
    assert_eq!(chosen(None, delta(0.0, 0.5)), Some(vec![1]));
    assert_eq!(chosen(None, delta(0.45, 0.6)), Some(vec![2]));
    assert_eq!(chosen(None, delta(0.5, 0.6)), None);
    // without the population's counts, the requirement is refused, not ignored
    let bare = FrequencySet::from_codes(
        vec![QiCodes {
            name: "a".into(),
            levels: vec![vec![0, 1], vec![0, 0]],
        }],
        vec![],
        &rows[..1],
    )
    .unwrap();
    let req = PrivacyRequirements {
        suppression: Default::default(),
        population: Some(PopulationRequirement {
            k_map: Some(2),
            delta_presence: None,
        }),
        k: 1,
        max_suppression: 0.0,
        sensitive: vec![],
    };
    let err = search(
        &bare,
        &req,
        Algorithm::Optimal,
        Metric::Loss,
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("k_map need a population table"),
        "{err}"
    );
}

/// Every algorithm's name reads back as its method (the one reading the command line and
/// Python share), and an unknown name lists the five.
#[test]
fn algorithm_names_read_as_their_methods() {
    use super::local::LocalAlgorithm;
    use super::{Algorithm, Method};
    let expected = [
        ("optimal", Method::FullDomain(Algorithm::Optimal)),
        (
            "iab-full-domain",
            Method::FullDomain(Algorithm::IabFullDomain),
        ),
        ("mondrian", Method::Local(LocalAlgorithm::Mondrian)),
        ("kaca", Method::Local(LocalAlgorithm::Kaca)),
        ("iab", Method::Local(LocalAlgorithm::Iab)),
    ];
    for (name, method) in expected {
        assert_eq!(name.parse::<Method>().unwrap(), method);
        assert_eq!(method.name(), name);
    }
    let error = "best".parse::<Method>().unwrap_err().to_string();
    assert!(
        error.contains(
            "unknown algorithm 'best': expected optimal, iab-full-domain, mondrian, kaca or iab"
        ),
        "{error}"
    );
}
