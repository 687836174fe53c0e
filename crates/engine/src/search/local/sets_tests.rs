//! Set-based local recoding and weights against hand calculations and brute-force checks
//! recounted from the published labels (never from the algorithm's own cells).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::sets::{parse_set_label, set_label};
use super::{LocalAlgorithm, LocalOptions, SUPPRESSED, anonymize};
use crate::generalize::Hierarchy;
use crate::policy::{
    LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement, SetLabels,
};
use crate::rng::SplitMix64 as Rng;
use crate::search::FrequencySet;
use crate::search::release::LocalRecoding;

/// A frequency set of (job, age) with no hierarchies (set-based), disease sensitive.
async fn set_freq(
    jobs: &[Option<&str>],
    ages: &[Option<i64>],
    diseases: &[&str],
    labels: SetLabels,
) -> FrequencySet {
    let schema = Arc::new(Schema::new(vec![
        Field::new("job", DataType::Utf8, true),
        Field::new("age", DataType::Int64, true),
        Field::new("disease", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(jobs.to_vec())),
        Arc::new(Int64Array::from(ages.to_vec())),
        Arc::new(StringArray::from(diseases.to_vec())),
    ];
    let batch = RecordBatch::try_new(schema, columns).unwrap();
    let ctx = SessionContext::new();
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let qis = vec![
        ("job".to_string(), Arc::new(Hierarchy::set("job"))),
        ("age".to_string(), Arc::new(Hierarchy::set("age"))),
    ];
    let mut freq = FrequencySet::build(&ctx, "t", &qis, &["disease".to_string()])
        .await
        .unwrap();
    freq.set_generalization(&[true, true], labels);
    freq
}

fn k_only(k: u64) -> PrivacyRequirements {
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression: 0.0,
        sensitive: vec![],
    }
}

/// Per leaf class: per QI its raw value's text (NULL: None) and its published label.
type Published = Vec<(Vec<Option<String>>, Vec<Option<String>>)>;

fn published(freq: &FrequencySet, recoding: &LocalRecoding) -> Published {
    let d = freq.qis().len();
    let texts: Vec<ArrayRef> = freq
        .qis()
        .iter()
        .map(|qi| cast(qi.leaf_values().unwrap(), &DataType::Utf8).unwrap())
        .collect();
    let labels: Vec<ArrayRef> = recoding
        .class_labels()
        .iter()
        .map(|l| cast(l, &DataType::Utf8).unwrap())
        .collect();
    (0..freq.leaf_classes())
        .map(|m| {
            let class = recoding.class_of()[m] as usize;
            let text = |a: &ArrayRef, i: usize| {
                let a = a.as_string::<i32>();
                a.is_valid(i).then(|| a.value(i).to_string())
            };
            let raw = (0..d)
                .map(|q| text(&texts[q], freq.leaf_codes()[q][m] as usize))
                .collect();
            let label = (0..d).map(|q| text(&labels[q], class)).collect();
            (raw, label)
        })
        .collect()
}

/// Worked example. One categorical QI `job` (a ×2, b, c, d ×2), age NULL in every row (one
/// value, publishing NULL at cost 0), k = 2. Root {a, b, c, d}: cost 1 per row. Two orders
/// of the values are tried (sets::mondrian): by rows, most first (ties by value): a, d, b, c;
/// and by the mean rank of age (all equal, so value order): a, b, c, d.
/// - rows order: after a: 2·0 + 4·(2/3) = 2.67; after d: {a, d} 4·(1/3) + {b, c} 2·(1/3) = 2;
///   after b: {c} has 1 row < k.
/// - value order: after a: 2.67; after b: {a, b} 3·(1/3) + {c, d} 3·(1/3) = 2; after c:
///   {a, b, c} 4·(2/3) + {d} 0 = 2.67.
///
/// Both best cuts cost 2; the tie goes to the more balanced one, {a, b} | {c, d} (3 rows
/// each, against 4 | 2). Neither part has 2k rows: no further cut. Labels `{a, b}`, `{c, d}`;
/// Loss = (6·(1/3) + 6·0 for age) / (6·2) = 1/6.
#[tokio::test]
async fn set_mondrian_worked_example() {
    let jobs = [
        Some("a"),
        Some("a"),
        Some("b"),
        Some("c"),
        Some("d"),
        Some("d"),
    ];
    let freq = set_freq(&jobs, &[None; 6], &["x"; 6], SetLabels::default()).await;
    let (release, evaluation) = anonymize(
        &freq,
        &k_only(2),
        LocalAlgorithm::Mondrian,
        LocalOptions::default(),
    )
    .unwrap();
    assert!(
        (evaluation.loss - 1.0 / 6.0).abs() < 1e-12,
        "{}",
        evaluation.loss
    );
    assert_eq!(evaluation.classes, 2);
    let recoding = LocalRecoding::new(&freq, &release).unwrap();
    let labels: BTreeMap<String, String> = published(&freq, &recoding)
        .into_iter()
        .map(|(raw, label)| (raw[0].clone().unwrap(), label[0].clone().unwrap()))
        .collect();
    let expected: BTreeMap<String, String> = [
        ("a", "{a, b}"),
        ("b", "{a, b}"),
        ("c", "{c, d}"),
        ("d", "{c, d}"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(labels, expected);
}

/// Worked example, numbers: ages 20, 21, 30, 31, 40, 41 (one row each), k = 2, |D| = 6.
/// Root covers 6 values (cost 1). Thresholds (rows × (covered − 1)/5): after 21:
/// 2·0.2 + 4·0.6 = 2.8; after 30: 3·0.4 + 3·0.4 = 2.4; after 31: 2.8. So {20, 21, 30} |
/// {31, 40, 41}; both have 3 rows < 2k. Value-free labels end at the midpoints to the
/// neighbours: `(-inf, 30.5)` and `(30.5, inf)`; Loss = (6·0.4 + 0 for job) / 12 = 0.2.
#[tokio::test]
async fn set_mondrian_numbers_worked_example() {
    let ages = [20, 21, 30, 31, 40, 41].map(Some);
    let freq = set_freq(&[Some("j"); 6], &ages, &["x"; 6], SetLabels::default()).await;
    let (release, evaluation) = anonymize(
        &freq,
        &k_only(2),
        LocalAlgorithm::Mondrian,
        LocalOptions::default(),
    )
    .unwrap();
    assert!((evaluation.loss - 0.2).abs() < 1e-12, "{}", evaluation.loss);
    let recoding = LocalRecoding::new(&freq, &release).unwrap();
    let labels: BTreeMap<i64, String> = published(&freq, &recoding)
        .into_iter()
        .map(|(raw, label)| {
            (
                raw[1].clone().unwrap().parse().unwrap(),
                label[1].clone().unwrap(),
            )
        })
        .collect();
    for (age, label) in labels {
        let expected = if age <= 30 {
            "(-inf, 30.5)"
        } else {
            "(30.5, inf)"
        };
        assert_eq!(label, expected, "age {age}");
    }
}

#[test]
fn set_labels_escape_and_parse_back() {
    let values = ["a", "b, c", "{x}", "d\\e", "", "f,g"];
    let label = set_label(values);
    assert_eq!(label, "{a, b\\, c, \\{x\\}, d\\\\e, , f\\,g}");
    assert_eq!(parse_set_label(&label).unwrap(), values);
    assert_eq!(parse_set_label("{}").unwrap(), vec![String::new()]);
    for bad in ["a", "{a", "a}", "{a,b}", "{a}b}", "{a\\}"] {
        assert!(parse_set_label(bad).is_none(), "{bad}");
    }
}

/// Random tables: every published label covers its row's value, sets parse back to exactly
/// the class's values, classes (recounted over label tuples) hold k rows and distinct l
/// sensitive values.
#[tokio::test]
async fn set_mondrian_properties_on_random_tables() {
    const JOBS: [&str; 7] = ["a", "b, c", "{x}", "d\\e", "f", "g", "h"];
    for seed in 0..12u64 {
        let mut rng = Rng(seed);
        let n = 40 + rng.below(80) as usize;
        let jobs: Vec<Option<&str>> = (0..n)
            .map(|_| match rng.below(10) {
                0 => None,
                _ => Some(JOBS[rng.below(JOBS.len() as u64) as usize]),
            })
            .collect();
        let ages: Vec<Option<i64>> = (0..n)
            .map(|_| (rng.below(12) > 0).then(|| rng.below(30) as i64))
            .collect();
        let diseases: Vec<&str> = (0..n)
            .map(|_| ["flu", "cold", "hiv"][rng.below(3) as usize])
            .collect();
        let k = 2 + rng.below(4);
        let l = (seed % 2 == 0).then_some(2.0);
        let req = PrivacyRequirements {
            sensitive: vec![SensitiveRequirement {
                l: l.map(|l| LDiversity {
                    kind: LDiversityKind::Distinct,
                    l,
                    c: None,
                }),
                ..SensitiveRequirement::unconstrained("disease")
            }],
            ..k_only(k)
        };
        let freq = set_freq(&jobs, &ages, &diseases, SetLabels::default()).await;
        let Ok((release, _)) = anonymize(
            &freq,
            &req,
            LocalAlgorithm::Mondrian,
            LocalOptions::default(),
        ) else {
            continue;
        };
        let recoding = LocalRecoding::new(&freq, &release).unwrap();
        let rows = published(&freq, &recoding);
        // per published label tuple: rows, distinct diseases, and per QI the raw values
        let mut tuples: BTreeMap<Vec<Option<String>>, (u64, BTreeSet<String>)> = BTreeMap::new();
        let mut members: BTreeMap<Option<String>, BTreeSet<String>> = BTreeMap::new();
        let disease_of = |m: usize| {
            let codes = freq.histograms(0);
            let (mut c, mut n) = (Vec::new(), Vec::new());
            let (c, _) = codes.class(m, &mut c, &mut n);
            c.to_vec()
        };
        for (m, (raw, label)) in rows.iter().enumerate() {
            if release.class_of[m] == SUPPRESSED {
                continue;
            }
            let context = format!("seed {seed}, row {raw:?}, label {label:?}");
            // job: a set holding the value, `*`, or NULL for NULL
            match (&raw[0], label[0].as_deref()) {
                (_, Some("*")) => {}
                (None, None) => {}
                (Some(v), Some(set)) => {
                    let parsed = parse_set_label(set).unwrap_or_else(|| panic!("{context}"));
                    assert!(parsed.contains(v), "{context}");
                    assert_eq!(
                        set_label(parsed.iter().map(String::as_str)),
                        set,
                        "{context}"
                    );
                    members
                        .entry(Some(set.to_string()))
                        .or_default()
                        .insert(v.clone());
                }
                _ => panic!("{context}: NULL mismatch"),
            }
            // age: the value itself, an open interval around it, `*`, or NULL for NULL
            match (&raw[1], label[1].as_deref()) {
                (_, Some("*")) | (None, None) => {}
                (Some(v), Some(label)) if label == v => {}
                (Some(v), Some(label)) => {
                    let x: f64 = v.parse().unwrap();
                    let inner = label.strip_prefix('(').unwrap().strip_suffix(')').unwrap();
                    let (a, b) = inner.split_once(", ").unwrap();
                    let end = |s: &str| match s {
                        "-inf" => f64::NEG_INFINITY,
                        "inf" => f64::INFINITY,
                        s => s.parse().unwrap(),
                    };
                    assert!(end(a) < x && x < end(b), "{context}");
                    // no end is a value of the column
                    assert!(
                        ages.iter()
                            .flatten()
                            .all(|&y| y as f64 != end(a) && y as f64 != end(b))
                    );
                }
                _ => panic!("{context}: NULL mismatch"),
            }
            let entry = tuples.entry(label.clone()).or_default();
            entry.0 += freq.sizes()[m];
            for code in disease_of(m) {
                entry.1.insert(code.to_string());
            }
        }
        for (label, (rows, diseases)) in &tuples {
            assert!(*rows >= k, "seed {seed}: {label:?} has {rows} rows < {k}");
            if l.is_some() {
                assert!(
                    diseases.len() >= 2,
                    "seed {seed}: {label:?} is not 2-diverse"
                );
            }
        }
        // a set lists exactly the values of the rows publishing it
        for (set, values) in members {
            let parsed: BTreeSet<String> = parse_set_label(set.as_deref().unwrap())
                .unwrap()
                .into_iter()
                .collect();
            assert_eq!(parsed, values, "seed {seed}");
        }
    }
}

/// With no fallback, a set beyond the cap is an error naming the column; with `*` as the
/// fallback, it is published as `*`.
#[tokio::test]
async fn a_set_beyond_the_cap() {
    // four values, one row each, k = 4: one class {a, b, c, d}
    let jobs = [Some("a"), Some("b"), Some("c"), Some("d")];
    let capped = SetLabels {
        max_values: 3,
        fallback_to_top: false,
    };
    let freq = set_freq(&jobs, &[Some(1); 4], &["x"; 4], capped).await;
    let (release, _) = anonymize(
        &freq,
        &k_only(4),
        LocalAlgorithm::Mondrian,
        LocalOptions::default(),
    )
    .unwrap();
    let error = LocalRecoding::new(&freq, &release).unwrap_err().to_string();
    assert!(
        error.contains("quasi-identifier 'job'") && error.contains("max_set_values = 3"),
        "{error}"
    );
    let fallback = SetLabels {
        fallback_to_top: true,
        ..capped
    };
    let freq = set_freq(&jobs, &[Some(1); 4], &["x"; 4], fallback).await;
    let (release, evaluation) = anonymize(
        &freq,
        &k_only(4),
        LocalAlgorithm::Mondrian,
        LocalOptions::default(),
    )
    .unwrap();
    // job `*` (cost 1), age one value (0): Loss (4·1 + 0) / 8
    assert!((evaluation.loss - 0.5).abs() < 1e-12);
    let recoding = LocalRecoding::new(&freq, &release).unwrap();
    assert!(
        published(&freq, &recoding)
            .iter()
            .all(|(_, label)| label[0].as_deref() == Some("*"))
    );
}

/// Two QIs over 4 leaves each with a tree leaf / pairs / `*` (cell costs 0, 1/3, 1), a row
/// per pair, no sensitive attribute.
fn tree_freq(rows: &[(u32, u32)]) -> FrequencySet {
    let rows: Vec<(u32, u32, u64, u32)> = rows.iter().map(|&(a, b)| (a, b, 1, 0)).collect();
    super::tests::tree_freq(&rows, false)
}

/// The optimal search with weights equals a brute force over the 3 × 3 lattice whose Loss is
/// the weighted mean Σ w_q·L_q / Σ w_q, each L_q computed here from the tree's costs; raising
/// a QI's weight never raises its own Loss.
#[test]
fn weighted_optimal_search_equals_brute_force() {
    const COST: [f64; 3] = [0.0, 1.0 / 3.0, 1.0];
    let mut rng = Rng(7);
    for round in 0..20 {
        let rows: Vec<(u32, u32)> = (0..12)
            .map(|_| (rng.below(4) as u32, rng.below(4) as u32))
            .collect();
        let mut own_losses = Vec::new();
        for weights in [[1.0, 1.0], [1.0, 3.0], [3.0, 1.0], [0.5, 2.0]] {
            let mut freq = tree_freq(&rows);
            freq.set_weights(&weights).unwrap();
            // brute force: every node meeting k = 2 without suppression
            let mut best: Option<(f64, [usize; 2])> = None;
            for la in 0..3 {
                for lb in 0..3 {
                    let key = |&(a, b): &(u32, u32)| ([a, a / 2, 0][la], [b, b / 2, 0][lb]);
                    let mut sizes: BTreeMap<(u32, u32), u64> = BTreeMap::new();
                    for r in &rows {
                        *sizes.entry(key(r)).or_default() += 1;
                    }
                    if sizes.values().any(|&s| s < 2) {
                        continue;
                    }
                    let loss =
                        (weights[0] * COST[la] + weights[1] * COST[lb]) / (weights[0] + weights[1]);
                    if best.is_none_or(|(b, _)| loss < b - 1e-12) {
                        best = Some((loss, [la, lb]));
                    }
                }
            }
            let (expected, _) = best.unwrap();
            let solution = crate::search::search(
                &freq,
                &k_only(2),
                crate::search::Algorithm::Optimal,
                crate::search::Metric::Loss,
                &mut |_, _| {},
            )
            .unwrap()
            .into_solution()
            .unwrap();
            assert!(
                (solution.metric_value - expected).abs() < 1e-9,
                "round {round}, weights {weights:?}: {} against {expected}",
                solution.metric_value
            );
            own_losses.push(COST[solution.levels[1]]);
        }
        // b weighted 3 against 1: its Loss no higher than unweighted
        assert!(own_losses[1] <= own_losses[0] + 1e-12, "round {round}");
    }
}

/// Mondrian: on a table where the two QIs compete (k = 2), weighting one lowers its Loss.
#[tokio::test]
async fn weights_steer_mondrian() {
    // age and job vary independently: every class must widen one of them
    let mut rng = Rng(3);
    let n = 60;
    let jobs: Vec<Option<&str>> = (0..n)
        .map(|_| Some(["a", "b", "c", "d", "e", "f"][rng.below(6) as usize]))
        .collect();
    let ages: Vec<Option<i64>> = (0..n).map(|_| Some(rng.below(20) as i64)).collect();
    let per_qi = |freq: &FrequencySet, weights: [f64; 2]| {
        let mut freq = freq.clone();
        freq.set_weights(&weights).unwrap();
        let (release, _) = anonymize(
            &freq,
            &k_only(4),
            LocalAlgorithm::Mondrian,
            LocalOptions::default(),
        )
        .unwrap();
        let axes = super::axes(&freq).unwrap();
        // unweighted per-QI Loss: each cell's cost over the QI's factor
        (0..2)
            .map(|q| {
                let mut sum = 0.0;
                for (m, &c) in release.class_of.iter().enumerate() {
                    let cell = release.cells_of(c as usize)[q];
                    sum += freq.sizes()[m] as f64 * axes[q].cost(&freq.qis()[q], cell)
                        / freq.qis()[q].weight_factor();
                }
                sum / freq.rows() as f64
            })
            .collect::<Vec<f64>>()
    };
    let freq = set_freq(&jobs, &ages, &vec!["x"; n], SetLabels::default()).await;
    let even = per_qi(&freq, [1.0, 1.0]);
    let job_heavy = per_qi(&freq, [5.0, 1.0]);
    let age_heavy = per_qi(&freq, [1.0, 5.0]);
    assert!(
        job_heavy[0] < even[0],
        "job {} against {}",
        job_heavy[0],
        even[0]
    );
    assert!(
        age_heavy[1] < even[1],
        "age {} against {}",
        age_heavy[1],
        even[1]
    );
}

#[test]
fn a_weight_at_or_below_zero_is_refused() {
    let mut freq = tree_freq(&[(0, 0), (1, 1)]);
    for bad in [0.0, -1.0, f64::NAN] {
        let error = freq.set_weights(&[1.0, bad]).unwrap_err().to_string();
        assert!(
            error.contains("quasi-identifier 'b': weight must be a number above 0"),
            "{error}"
        );
    }
}
