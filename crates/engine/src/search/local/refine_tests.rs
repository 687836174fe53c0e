//! Mondrian's refinement of small regions ([`super::mondrian::Refinement`]) against hand
//! calculations: each rule (rollout cuts, relocation, cutting again) on a table where it
//! alone finds the cheaper partition, and the policy blocking a move.
//!
//! The tables have two QIs `a` and `b` over 4 leaves each with the tree leaf / pairs {0, 1},
//! {2, 3} / `*`, so a cell costs 0 (one leaf), 1/3 (a pair) or 1 (`*`); Loss is the mean over
//! the n × 2 cells.

use super::mondrian::{MondrianOptions, Refinement, mondrian_with, refine_given_classes};
use super::{LocalRelease, evaluate};
use crate::policy::{LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement};
use crate::search::FrequencySet;

/// `(a, b, rows, sensitive value)` rows with one sensitive attribute `s`.
fn tree_freq(rows: &[(u32, u32, u64, u32)]) -> FrequencySet {
    super::tests::tree_freq(rows, true)
}

/// k, and distinct l on `s` when given; nothing suppressed.
fn policy(k: u64, l: Option<f64>) -> PrivacyRequirements {
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression: 0.0,
        sensitive: vec![SensitiveRequirement {
            attribute: "s".to_string(),
            l: l.map(|l| LDiversity {
                kind: LDiversityKind::Distinct,
                l,
                c: None,
            }),
            ..Default::default()
        }],
    }
}

/// The leaf class of combination (a, b).
fn leaf(freq: &FrequencySet, a: u32, b: u32) -> usize {
    (0..freq.leaf_classes())
        .find(|&m| freq.leaf_codes()[0][m] == a && freq.leaf_codes()[1][m] == b)
        .unwrap()
}

/// The release's classes as sorted lists of (a, b).
fn classes(freq: &FrequencySet, release: &LocalRelease) -> Vec<Vec<(u32, u32)>> {
    let mut out = vec![Vec::new(); release.classes()];
    for (m, &c) in release.class_of.iter().enumerate() {
        out[c as usize].push((freq.leaf_codes()[0][m], freq.leaf_codes()[1][m]));
    }
    out.iter_mut().for_each(|c| c.sort());
    out.sort();
    out
}

fn loss(freq: &FrequencySet, req: &PrivacyRequirements, release: &LocalRelease) -> f64 {
    let e = evaluate(freq, req, release).unwrap();
    assert!(e.satisfies);
    e.loss
}

fn refined(refine: Refinement) -> MondrianOptions {
    MondrianOptions {
        refine: Some(refine),
        ..MondrianOptions::default()
    }
}

/// k = 2, rows (a, b) = (0, 0), (2, 0), (1, 2), (3, 2). Both root cells are `*` (1): a tie,
/// so the greedy rule cuts a first, into the pairs {(0,0), (1,2)} and {(2,0), (3,2)}: a pair
/// (1/3) and b `*` (1) in each, which 2 rows cannot cut further: Σ = 4 · 4/3 = 16/3, Loss
/// 16/3 / 8 = 2/3. Cutting b first gives {(0,0), (2,0)} and {(1,2), (3,2)}: b one leaf (0),
/// a `*` (1): Σ = 4, Loss 1/2. The rollout completes both and takes b; without it
/// (`pilot_rows = 0`) the refinement keeps a's classes (classes of k rows: no move, no cut).
#[test]
fn rollout_cuts_the_qi_whose_completion_costs_least() {
    let freq = tree_freq(&[(0, 0, 1, 0), (2, 0, 1, 0), (1, 2, 1, 0), (3, 2, 1, 0)]);
    let req = policy(2, None);
    let greedy = mondrian_with(&freq, &req, MondrianOptions::greedy()).unwrap();
    assert!((loss(&freq, &req, &greedy) - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(
        classes(&freq, &greedy),
        vec![vec![(0, 0), (1, 2)], vec![(2, 0), (3, 2)]]
    );
    let no_rollout = Refinement {
        pilot_rows: 0,
        ..Refinement::default()
    };
    let release = mondrian_with(&freq, &req, refined(no_rollout)).unwrap();
    assert!((loss(&freq, &req, &release) - 2.0 / 3.0).abs() < 1e-12);
    let release = mondrian_with(&freq, &req, MondrianOptions::default()).unwrap();
    assert!((loss(&freq, &req, &release) - 0.5).abs() < 1e-12);
    assert_eq!(
        classes(&freq, &release),
        vec![vec![(0, 0), (2, 0)], vec![(1, 2), (3, 2)]]
    );
}

/// k = 2; classes A = {(0,0), (1,0), (2,0)} (a `*` 1, b a leaf 0: Σ 3) and
/// B = {(2,1), (3,1)} (a pair 1/3: Σ 2/3), Σ 11/3 over 5 × 2 cells: Loss 11/30.
///
/// Moving (2,0) to B: A keeps {(0,0), (1,0)} (a pair: Σ 2/3, a gain of 7/3) and B becomes
/// a pair and b pair {0, 1} (Σ 3 · 2/3 = 2, a loss of 4/3): the zone's Σ falls by 1 to 8/3,
/// Loss 4/15. No other move gains: (0,0) or (1,0) out of A leaves a `*` (Σ 2) and makes B's a
/// `*`; B's members cannot leave a class of k rows; then A has k rows and (2,0) back in A
/// undoes the gain. With `rounds = 0` nothing moves.
///
/// With distinct l = 2 on `s` and (0,0), (1,0) both of value 0, A without (2,0) would hold
/// one value: the move is refused and the classes stay.
#[test]
fn relocation_moves_a_record_where_the_loss_falls() {
    let freq = tree_freq(&[
        (0, 0, 1, 0),
        (1, 0, 1, 0),
        (2, 0, 1, 1),
        (2, 1, 1, 0),
        (3, 1, 1, 1),
    ]);
    let given = vec![
        vec![leaf(&freq, 0, 0), leaf(&freq, 1, 0), leaf(&freq, 2, 0)],
        vec![leaf(&freq, 2, 1), leaf(&freq, 3, 1)],
    ];
    let req = policy(2, None);
    let moved = refine_given_classes(&freq, &req, Refinement::default(), &given).unwrap();
    assert!((loss(&freq, &req, &moved) - 4.0 / 15.0).abs() < 1e-12);
    assert_eq!(
        classes(&freq, &moved),
        vec![vec![(0, 0), (1, 0)], vec![(2, 0), (2, 1), (3, 1)]]
    );
    let still = Refinement {
        rounds: 0,
        ..Refinement::default()
    };
    let kept = refine_given_classes(&freq, &req, still, &given).unwrap();
    assert!((loss(&freq, &req, &kept) - 11.0 / 30.0).abs() < 1e-12);

    let diverse = policy(2, Some(2.0));
    let refused = refine_given_classes(&freq, &diverse, Refinement::default(), &given).unwrap();
    assert!((loss(&freq, &diverse, &refused) - 11.0 / 30.0).abs() < 1e-12);
    assert_eq!(
        classes(&freq, &refused),
        vec![vec![(0, 0), (1, 0), (2, 0)], vec![(2, 1), (3, 1)]]
    );
}

/// k = 2; classes C1 = {(0,0), (1,0), (3,3)} (a `*`, b `*`: Σ 3 · 2 = 6) and
/// C2 = {(2,2) × 2 rows, (3,2)} (a pair, b a leaf: Σ 3 · 1/3 = 1): Σ 7 over 6 × 2 cells,
/// Loss 7/12.
///
/// Relocation moves (3,3) to C2: C1 keeps {(0,0), (1,0)} (Σ 2/3, a gain of 16/3), C2 becomes
/// a pair and b pair (Σ 4 · 2/3 = 8/3, a loss of 5/3); nothing else gains (moving any other
/// member out leaves a `*` behind or makes the other class `*`). Σ 10/3, Loss 5/18.
///
/// C2 now holds 4 rows (2k) and a cuts it: {(2,2) × 2} (Σ 0) and {(3,2), (3,3)} (a leaf, b
/// pair: Σ 2/3). Σ 2/3 + 0 + 2/3 = 4/3, Loss 1/9; classes of k rows, so no further move.
#[test]
fn classes_are_cut_again_after_relocation() {
    let freq = tree_freq(&[
        (0, 0, 1, 0),
        (1, 0, 1, 0),
        (3, 3, 1, 0),
        (2, 2, 2, 0),
        (3, 2, 1, 0),
    ]);
    let given = vec![
        vec![leaf(&freq, 0, 0), leaf(&freq, 1, 0), leaf(&freq, 3, 3)],
        vec![leaf(&freq, 2, 2), leaf(&freq, 3, 2)],
    ];
    let req = policy(2, None);
    let case = |rounds, recuts| {
        let refine = Refinement {
            rounds,
            recuts,
            ..Refinement::default()
        };
        refine_given_classes(&freq, &req, refine, &given).unwrap()
    };
    assert!((loss(&freq, &req, &case(0, 0)) - 7.0 / 12.0).abs() < 1e-12);
    assert!((loss(&freq, &req, &case(20, 0)) - 5.0 / 18.0).abs() < 1e-12);
    let recut = case(20, 1);
    assert!((loss(&freq, &req, &recut) - 1.0 / 9.0).abs() < 1e-12);
    assert_eq!(
        classes(&freq, &recut),
        vec![vec![(0, 0), (1, 0)], vec![(2, 2)], vec![(3, 2), (3, 3)]]
    );
}
