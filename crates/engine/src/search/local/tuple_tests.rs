//! Tuple diversity as a requirement (docs/definitions.md, `tuple_diversity`): the optimal
//! search against a hand-worked example and a brute force over the lattice, and every local
//! algorithm's releases recounted from the raw rows by the direct formula
//! (max_E − min_E)/(max_T − min_T), NULLs ignored.

use std::collections::BTreeMap;

use super::tests::{k_only, random_code_rows};
use super::{LocalAlgorithm, LocalOptions, SUPPRESSED, anonymize};
use crate::policy::{
    LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement, SuppressionMode,
};
use crate::rng::SplitMix64 as Rng;
use crate::search::{
    Algorithm, FrequencyRow, FrequencySet, Metric, QiCodes, SensitiveCodes, search,
};

/// The requirements: k, a suppression limit and tuple diversity `bound` on `s`.
fn with_tuple_diversity(k: u64, max_suppression: f64, bound: f64) -> PrivacyRequirements {
    PrivacyRequirements {
        sensitive: vec![SensitiveRequirement {
            tuple_diversity: Some(bound),
            ..SensitiveRequirement::unconstrained("s")
        }],
        ..k_only(k, max_suppression)
    }
}

/// (max − min)/range over the values (NULLs ignored): 0 for at most one value or range 0.
fn spread<'a>(values: impl Iterator<Item = &'a Option<u32>>, range: f64) -> f64 {
    let present: Vec<f64> = values.flatten().map(|&v| f64::from(v)).collect();
    let lo = present.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = present.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if hi > lo && range > 0.0 {
        (hi - lo) / range
    } else {
        0.0
    }
}

/// The range of every value of the rows (NULLs ignored).
fn range_of<'a>(values: impl Iterator<Item = &'a Option<u32>>) -> f64 {
    let present: Vec<u32> = values.flatten().copied().collect();
    match (present.iter().min(), present.iter().max()) {
        (Some(&lo), Some(&hi)) => f64::from(hi - lo),
        _ => 0.0,
    }
}

/// One QI `zip` over 4 leaves (leaf / pairs / `*`: costs 0, 1/3, 1) and `s` ordered; `rows`
/// are (leaf, value) with one row each.
fn zip_income(rows: &[(u32, Option<u32>)]) -> FrequencySet {
    let qis = vec![QiCodes {
        name: "zip".into(),
        levels: vec![vec![0, 1, 2, 3], vec![0, 0, 1, 1], vec![0, 0, 0, 0]],
    }];
    let sensitive = vec![SensitiveCodes {
        name: "s".into(),
        ordered: true,
    }];
    let rows: Vec<FrequencyRow> = rows
        .iter()
        .map(|&(zip, s)| FrequencyRow {
            qi: vec![zip],
            sensitive: vec![s],
            count: 1,
        })
        .collect();
    FrequencySet::from_codes(qis, sensitive, &rows).unwrap()
}

fn optimal(freq: &FrequencySet, req: &PrivacyRequirements) -> crate::search::Solution {
    search(freq, req, Algorithm::Optimal, Metric::Loss, &mut |_, _| {})
        .unwrap()
        .into_solution()
        .unwrap()
}

/// Worked example. zip 0: incomes 10, 12; zip 1: 50, 52; zip 2: 10, 90; zip 3: 30, 70. The
/// table spans 10..90 (80); k = 2, tuple diversity ≥ 0.5 (a class must span 40).
/// - Level 0 (Loss 0): zip 0 spans 2/80 = 0.025 and zip 1 2/80: they fail (4 rows); zip 2
///   spans 80/80 = 1, zip 3 40/80 = 0.5, exactly at the bound: it passes.
/// - Level 1 (Loss 1/3): {0, 1} spans 10..52 = 42/80 = 0.525, {2, 3} 10..90 = 1: both pass.
///
/// Without suppression the search takes level 1 (Loss 1/3); distinct l = 2 alone would keep
/// level 0 (every zip has two values). With half the rows suppressible level 0 satisfies, at
/// Loss (4 kept rows · 0 + 4 suppressed · 1)/8 = 0.5 > 1/3: still level 1. With a NULL
/// added to zip 0 nothing changes (NULLs are ignored); with zip 0's values replaced by one
/// NULL and 12, zip 0 has a single value (0), the table still spans 10..90 (zip 2) and the
/// pair {0, 1} spans 12..52 = 40/80 = 0.5, exactly the bound: it passes.
#[test]
fn tuple_diversity_worked_example() {
    let rows = [
        (0, Some(10)),
        (0, Some(12)),
        (1, Some(50)),
        (1, Some(52)),
        (2, Some(10)),
        (2, Some(90)),
        (3, Some(30)),
        (3, Some(70)),
    ];
    let freq = zip_income(&rows);
    let solution = optimal(&freq, &with_tuple_diversity(2, 0.0, 0.5));
    assert_eq!(solution.levels, vec![1]);
    assert!((solution.metric_value - 1.0 / 3.0).abs() < 1e-12);
    let worst = solution.evaluation.sensitive[0]
        .get("tuple_diversity")
        .unwrap();
    assert!((worst - 42.0 / 80.0).abs() < 1e-12, "{worst}");

    let l_only = PrivacyRequirements {
        sensitive: vec![SensitiveRequirement {
            l: Some(LDiversity {
                kind: LDiversityKind::Distinct,
                l: 2.0,
                c: None,
            }),
            ..SensitiveRequirement::unconstrained("s")
        }],
        ..k_only(2, 0.0)
    };
    assert_eq!(optimal(&freq, &l_only).levels, vec![0]);

    let half = optimal(&freq, &with_tuple_diversity(2, 0.5, 0.5));
    assert_eq!(half.levels, vec![1]);
    // level 0 itself satisfies with 4 rows suppressed (zip 3 at the bound passes)
    let mut ev =
        crate::search::evaluate::Evaluator::new(&freq, &with_tuple_diversity(2, 0.5, 0.5)).unwrap();
    let level0 = ev.describe(0);
    assert!(
        level0.satisfies && level0.suppressed_rows == 4,
        "{level0:?}"
    );
    assert!((level0.sensitive[0].get("tuple_diversity").unwrap() - 0.5).abs() < 1e-12);

    let mut with_null = rows.to_vec();
    with_null.push((0, None));
    let solution = optimal(&zip_income(&with_null), &with_tuple_diversity(2, 0.0, 0.5));
    assert_eq!(solution.levels, vec![1]);

    let mut single = rows.to_vec();
    single[0] = (0, None);
    let single = zip_income(&single);
    let mut ev =
        crate::search::evaluate::Evaluator::new(&single, &with_tuple_diversity(2, 0.0, 0.5))
            .unwrap();
    let level1 = ev.describe(1);
    let worst = level1.sensitive[0].get("tuple_diversity").unwrap();
    assert!((worst - 0.5).abs() < 1e-12, "{worst}");
    assert!(level1.satisfies);
    let level0 = ev.describe(0);
    // zip 0 (one value: 0) and zip 1 fail; the worst kept class is zip 3 at 0.5
    assert!(
        !level0.satisfies && level0.suppressed_rows == 4,
        "{level0:?}"
    );
    assert_eq!(level0.sensitive[0].get("tuple_diversity"), Some(0.5));
}

/// The optimal search equals a brute force over the 3 × 3 lattice of two QIs (4 leaves,
/// leaf / pairs / `*`): a node's classes group the rows by their generalized codes, a class
/// fails below k rows or below the bound of (max_E − min_E)/(max_T − min_T), T the input
/// (NULLs ignored), failing rows are suppressed within the budget, at least one row is kept,
/// and Loss is the mean cost over rows × QIs, a suppressed row costing 1 per QI.
#[test]
fn optimal_search_with_tuple_diversity_equals_brute_force() {
    const COST: [f64; 3] = [0.0, 1.0 / 3.0, 1.0];
    let levels = vec![
        (0..4).collect::<Vec<u32>>(),
        vec![0, 0, 1, 1],
        vec![0, 0, 0, 0],
    ];
    let mut rng = Rng(11);
    let mut binding = 0;
    for round in 0..30 {
        let rows: Vec<(u32, u32, Option<u32>)> = (0..16)
            .map(|_| {
                let s = (rng.below(8) != 0).then(|| rng.below(30) as u32);
                (rng.below(4) as u32, rng.below(4) as u32, s)
            })
            .collect();
        let qis: Vec<QiCodes> = ["a", "b"]
            .iter()
            .map(|n| QiCodes {
                name: n.to_string(),
                levels: levels.clone(),
            })
            .collect();
        let frequency_rows: Vec<FrequencyRow> = rows
            .iter()
            .map(|&(a, b, s)| FrequencyRow {
                qi: vec![a, b],
                sensitive: vec![s],
                count: 1,
            })
            .collect();
        let sensitive = vec![SensitiveCodes {
            name: "s".into(),
            ordered: true,
        }];
        let freq = FrequencySet::from_codes(qis, sensitive, &frequency_rows).unwrap();
        let table_range = range_of(rows.iter().map(|r| &r.2));
        for (k, max_suppression, bound) in [(2, 0.0, 0.3), (2, 0.25, 0.5), (3, 0.2, 0.7)] {
            let n = rows.len() as u64;
            let budget = (max_suppression * n as f64 + 1e-9).floor() as u64;
            let mut best: Option<f64> = None;
            for la in 0..3 {
                for lb in 0..3 {
                    let mut classes: BTreeMap<(u32, u32), Vec<Option<u32>>> = BTreeMap::new();
                    for &(a, b, s) in &rows {
                        let key = (levels[la][a as usize], levels[lb][b as usize]);
                        classes.entry(key).or_default().push(s);
                    }
                    let suppressed: u64 = classes
                        .values()
                        .filter(|c| {
                            (c.len() as u64) < k
                                || spread(c.iter(), table_range) < bound * (1.0 - 1e-12)
                        })
                        .map(|c| c.len() as u64)
                        .sum();
                    if suppressed > budget || suppressed == n {
                        continue;
                    }
                    let kept = (n - suppressed) as f64;
                    let loss =
                        (kept * (COST[la] + COST[lb]) + 2.0 * suppressed as f64) / (2.0 * n as f64);
                    best = Some(best.map_or(loss, |b: f64| b.min(loss)));
                }
            }
            let req = with_tuple_diversity(k, max_suppression, bound);
            let outcome = search(
                &freq,
                &req,
                Algorithm::Optimal,
                Metric::Loss,
                &mut |_, _| {},
            )
            .unwrap();
            let context = format!("round {round}, k {k}, budget {budget}, bound {bound}");
            match (best, outcome.into_solution()) {
                (Some(expected), Ok(solution)) => {
                    assert!(
                        (solution.metric_value - expected).abs() < 1e-9,
                        "{context}: {} against {expected}",
                        solution.metric_value
                    );
                    // the k-only optimum is cheaper: the requirement binds
                    let k_alone = optimal(&freq, &k_only(k, max_suppression));
                    if k_alone.metric_value < expected - 1e-9 {
                        binding += 1;
                    }
                }
                (None, Err(_)) => {}
                (expected, found) => {
                    panic!("{context}: brute force {expected:?}, search {found:?}")
                }
            }
        }
    }
    assert!(binding >= 20, "the bound binds only {binding} times");
}

/// Every local algorithm's release meets tuple diversity, recounted from the raw rows: each
/// class, and each group of classes with the same labels (one published class), spans at
/// least the bound of the input's range — hence of the published rows' range, which is no
/// wider. The suppressed rows fit the budget. The bound binds: k-only releases of the same
/// k have failing classes.
#[test]
fn local_releases_meet_tuple_diversity_on_random_tables() {
    use super::Cell;
    let algorithms = [
        LocalAlgorithm::Mondrian,
        LocalAlgorithm::Kaca,
        LocalAlgorithm::Iab,
    ];
    let (mut releases, mut binding) = (0, 0);
    for seed in 0..5u64 {
        let (qis, _, mut rows) = random_code_rows(seed);
        let levels = qis[0].levels.clone();
        // s ordered over 0..60, NULL in about one row in 10
        let mut rng = Rng(seed + 500);
        for row in &mut rows {
            row.sensitive = vec![(rng.below(10) != 0).then(|| rng.below(60) as u32)];
        }
        let sensitive = vec![SensitiveCodes {
            name: "s".into(),
            ordered: true,
        }];
        let freq = FrequencySet::from_codes(qis, sensitive, &rows).unwrap();
        let input_range = range_of(rows.iter().map(|r| &r.sensitive[0]));
        let leaf_of: BTreeMap<Vec<u32>, usize> = (0..freq.leaf_classes())
            .map(|m| ((0..3).map(|j| freq.leaf_codes()[j][m]).collect(), m))
            .collect();
        let row_leaf: Vec<usize> = rows.iter().map(|r| leaf_of[&r.qi]).collect();
        // the values of each class of a release, each repeated by its row count
        let class_values = |class_of: &[u32], classes: usize| {
            let mut values = vec![Vec::new(); classes];
            for (r, &leaf) in rows.iter().zip(&row_leaf) {
                let c = class_of[leaf];
                if c != SUPPRESSED {
                    values[c as usize]
                        .extend(std::iter::repeat_n(r.sensitive[0], r.count as usize));
                }
            }
            values
        };
        for (k, max_suppression, bound, suppression) in [
            (2, 0.1, 0.3, SuppressionMode::Drop),
            (3, 0.2, 0.6, SuppressionMode::Drop),
            (2, 0.1, 0.5, SuppressionMode::Mask),
        ] {
            let req = PrivacyRequirements {
                suppression,
                ..with_tuple_diversity(k, max_suppression, bound)
            };
            for algorithm in algorithms {
                let context = format!("seed {seed}, {algorithm}, k {k}, bound {bound}");
                if let Ok((k_release, _)) = anonymize(
                    &freq,
                    &k_only(k, max_suppression),
                    algorithm,
                    LocalOptions::default(),
                ) {
                    let values = class_values(&k_release.class_of, k_release.classes());
                    if values
                        .iter()
                        .any(|c| !c.is_empty() && spread(c.iter(), input_range) < bound)
                    {
                        binding += 1;
                    }
                }
                let Ok((release, _)) = anonymize(&freq, &req, algorithm, LocalOptions::default())
                else {
                    continue;
                };
                releases += 1;
                let total: u64 = rows.iter().map(|r| r.count).sum();
                let suppressed: u64 = rows
                    .iter()
                    .zip(&row_leaf)
                    .filter(|(_, leaf)| release.class_of[**leaf] == SUPPRESSED)
                    .map(|(r, _)| r.count)
                    .sum();
                let budget = (max_suppression * total as f64 + 1e-9).floor() as u64;
                assert!(
                    suppressed <= budget && suppressed < total,
                    "{context}: {suppressed} of {total} suppressed, budget {budget}"
                );
                let values = class_values(&release.class_of, release.classes());
                let published_range = range_of(values.iter().flatten());
                assert!(published_range <= input_range, "{context}");
                // classes with the same labels are one published class
                let covered = |cell: Cell| -> u8 {
                    match cell {
                        Cell::Top => u8::MAX,
                        Cell::Node { level, code } => (0..8)
                            .filter(|&v| levels[level as usize][v] == code)
                            .fold(0, |bits, v| bits | 1 << v),
                        other => panic!("{context}: {other:?} of a code QI"),
                    }
                };
                let mut published: BTreeMap<Vec<u8>, Vec<Option<u32>>> = BTreeMap::new();
                for (c, class) in values.iter().enumerate() {
                    assert!(
                        spread(class.iter(), input_range) >= bound * (1.0 - 1e-12),
                        "{context}: class {c} spans {} of the input's range",
                        spread(class.iter(), input_range)
                    );
                    let labels = release.cells_of(c).iter().map(|&c| covered(c)).collect();
                    published.entry(labels).or_default().extend(class);
                }
                for (labels, class) in &published {
                    let own = spread(class.iter(), published_range);
                    assert!(
                        own >= bound * (1.0 - 1e-12),
                        "{context}: published class {labels:?} spans {own} of the output's range"
                    );
                }
            }
        }
    }
    // 5 seeds × 3 policies × 3 algorithms
    assert!(releases >= 35, "only {releases} releases");
    assert!(binding >= 10, "the bound binds only {binding} times");
}

/// A bound outside (0, 1] and an attribute that is not ordered are refused, each message
/// naming the attribute.
#[test]
fn tuple_diversity_bad_bounds_and_unordered_attributes_are_refused() {
    for bad in [0.0, -0.2, 1.5, f64::NAN] {
        let req = SensitiveRequirement {
            tuple_diversity: Some(bad),
            ..SensitiveRequirement::unconstrained("income")
        };
        assert_eq!(
            req.validate(),
            Err(format!(
                "tuple_diversity of 'income': tuple_diversity is a share of the attribute's \
                 range in (0, 1], got {bad}"
            ))
        );
    }
    let (qis, sensitive, rows) = random_code_rows(1);
    assert!(!sensitive[0].ordered);
    let freq = FrequencySet::from_codes(qis, sensitive, &rows).unwrap();
    let err = search(
        &freq,
        &with_tuple_diversity(2, 0.0, 0.5),
        Algorithm::Optimal,
        Metric::Loss,
        &mut |_, _| {},
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "'s': tuple_diversity needs an ordered attribute (numeric, decimal, date or time)"
        ),
        "{err}"
    );
}
