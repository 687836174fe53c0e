//! Mondrian and the local release model against hand calculations and a brute-force reference
//! that works on the raw rows (never on the frequency set the algorithm uses).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::mondrian::{
    EXHAUSTIVE_CHILDREN, MondrianOptions, Refinement, mondrian, mondrian_folding_each_record,
    mondrian_with,
};
use super::{Cell, LocalLabels, LocalRelease, SUPPRESSED, evaluate};
use crate::generalize::{Hierarchy, TOP_LABEL};
use crate::policy::{
    LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement, SuppressionMode,
    TCloseness, TClosenessKind,
};
use crate::provider::{ColumnTreatment, Generalization, GeneralizedTable};
use crate::rng::SplitMix64 as Rng;
use crate::search::release::{LocalRecoding, Release};
use crate::search::{FrequencyRow, FrequencySet, QiCodes, SensitiveCodes};

/// A random frequency set from codes (for KACA's and IAB's unit tests): 3 QIs of 8 leaves
/// with hierarchies leaf / pairs / quads / *, one sensitive attribute of 4 values, 300 rows.
pub(super) fn random_code_rows(
    seed: u64,
) -> (Vec<QiCodes>, Vec<SensitiveCodes>, Vec<FrequencyRow>) {
    let levels = vec![
        (0..8).collect::<Vec<u32>>(),
        (0..8).map(|v| v / 2).collect(),
        (0..8).map(|v| v / 4).collect(),
        vec![0; 8],
    ];
    let qis = ["a", "b", "c"]
        .iter()
        .map(|n| QiCodes {
            name: (*n).into(),
            levels: levels.clone(),
        })
        .collect();
    let mut rng = Rng(seed);
    let rows: Vec<FrequencyRow> = (0..300)
        .map(|_| FrequencyRow {
            qi: (0..3).map(|_| rng.below(8) as u32).collect(),
            sensitive: vec![Some(rng.below(4) as u32)],
            count: 1 + rng.below(2),
        })
        .collect();
    let sensitive = vec![SensitiveCodes {
        name: "s".into(),
        ordered: false,
    }];
    (qis, sensitive, rows)
}

/// Frequency rows of two QIs, no sensitive attribute: `(leaf a, leaf b, count)`.
pub(super) fn two_qi_rows(cells: &[(u32, u32, u64)]) -> Vec<FrequencyRow> {
    cells
        .iter()
        .map(|&(a, b, count)| FrequencyRow {
            qi: vec![a, b],
            sensitive: vec![],
            count,
        })
        .collect()
}

/// k and a suppression limit, nothing else.
pub(super) fn k_only(k: u64, max_suppression: f64) -> PrivacyRequirements {
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression,
        sensitive: vec![],
    }
}

/// Two QIs `a` and `b` over 4 leaves each, with the tree leaf / pairs / `*` (cell costs 0,
/// 1/3, 1), from `(a, b, rows, sensitive value)` rows; with `sensitive`, one sensitive
/// attribute `s` holding the values, else none (the values are ignored).
pub(super) fn tree_freq(rows: &[(u32, u32, u64, u32)], sensitive: bool) -> FrequencySet {
    let levels = vec![
        (0..4).collect::<Vec<u32>>(),
        vec![0, 0, 1, 1],
        vec![0, 0, 0, 0],
    ];
    let qis = ["a", "b"]
        .iter()
        .map(|n| QiCodes {
            name: n.to_string(),
            levels: levels.clone(),
        })
        .collect();
    let rows: Vec<FrequencyRow> = rows
        .iter()
        .map(|&(a, b, count, s)| FrequencyRow {
            qi: vec![a, b],
            sensitive: if sensitive { vec![Some(s)] } else { vec![] },
            count,
        })
        .collect();
    let attributes = if sensitive {
        vec![SensitiveCodes {
            name: "s".into(),
            ordered: false,
        }]
    } else {
        vec![]
    };
    FrequencySet::from_codes(qis, attributes, &rows).unwrap()
}

/// [`random_code_rows`] as a frequency set.
pub(super) fn random_code_freq(seed: u64) -> FrequencySet {
    let (qis, sensitive, rows) = random_code_rows(seed);
    FrequencySet::from_codes(qis, sensitive, &rows).unwrap()
}

/// One raw row: zip (mask), age (ordered), sex (tree), disease (sensitive).
#[derive(Debug, Clone, PartialEq)]
struct Row {
    zip: Option<String>,
    age: Option<i64>,
    sex: String,
    disease: Option<String>,
}

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("zip", DataType::Utf8, true),
        Field::new("age", DataType::Int64, true),
        Field::new("sex", DataType::Utf8, false),
        Field::new("disease", DataType::Utf8, true),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from_iter(rows.iter().map(|r| r.zip.clone()))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.age))),
        Arc::new(StringArray::from_iter_values(
            rows.iter().map(|r| r.sex.clone()),
        )),
        Arc::new(StringArray::from_iter(
            rows.iter().map(|r| r.disease.clone()),
        )),
    ];
    RecordBatch::try_new(schema, columns).unwrap()
}

fn session(rows: &[Row]) -> SessionContext {
    // one partition: the recoded rows come back in input order
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1));
    crate::register(&ctx).unwrap();
    let b = batch(rows);
    let table = MemTable::try_new(b.schema(), vec![vec![b]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    ctx
}

fn hierarchies(age_widths: &[f64]) -> Vec<(String, Arc<Hierarchy>)> {
    vec![
        ("zip".to_string(), Arc::new(Hierarchy::mask("zip", 3))),
        (
            "age".to_string(),
            Arc::new(Hierarchy::interval_widths("age", age_widths).unwrap()),
        ),
        (
            "sex".to_string(),
            Arc::new(Hierarchy::tree_from_rows("sex", &[vec!["F", "*"], vec!["M", "*"]]).unwrap()),
        ),
    ]
}

fn requirements(k: u64, l: Option<f64>, t: Option<f64>) -> PrivacyRequirements {
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression: 0.0,
        sensitive: vec![SensitiveRequirement {
            attribute: "disease".to_string(),
            l: l.map(|l| LDiversity {
                kind: LDiversityKind::Distinct,
                l,
                c: None,
            }),
            t: t.map(|t| TCloseness {
                kind: TClosenessKind::Equal,
                t,
            }),
            ..Default::default()
        }],
    }
}

/// The labels of every row the release keeps, in input order, as the GeneralizedTable of table
/// `t` recodes them (rows of suppressed combinations dropped), the `kept` columns carried along.
pub(super) async fn published_labels(
    ctx: &SessionContext,
    qis: &[(String, Arc<Hierarchy>)],
    freq: &FrequencySet,
    release: &LocalRelease,
    req: &PrivacyRequirements,
    kept: &[&str],
) -> Vec<Vec<Option<String>>> {
    let recoding = LocalRecoding::new(freq, release).unwrap();
    let mut columns: Vec<(String, ColumnTreatment)> = qis
        .iter()
        .map(|(n, h)| (n.clone(), ColumnTreatment::QuasiIdentifier(Arc::clone(h))))
        .collect();
    columns.extend(kept.iter().map(|k| (k.to_string(), ColumnTreatment::Keep)));
    let generalization = Generalization {
        columns,
        release: Release::Local(Arc::new(recoding)),
        requirements: req.clone(),
        suppression: SuppressionMode::Drop,
        population: None,
    };
    let inner = ctx.table_provider("t").await.unwrap();
    let table = GeneralizedTable::try_new("t", inner, generalization).unwrap();
    let batches = ctx
        .execute_logical_plan(table.recoded_plan().clone())
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let mut out = Vec::new();
    for b in &batches {
        let cols: Vec<ArrayRef> = (0..qis.len())
            .map(|i| cast(b.column(i), &DataType::Utf8).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            out.push(
                cols.iter()
                    .map(|c| {
                        let s = c.as_string::<i32>();
                        s.is_valid(r).then(|| s.value(r).to_string())
                    })
                    .collect(),
            );
        }
    }
    out
}

/// Every level's label of one raw value (index = level).
fn level_labels(h: &Hierarchy, value: ArrayRef) -> Vec<Option<String>> {
    (0..h.height())
        .map(|level| {
            let labels = cast(&h.generalize(&value, level).unwrap(), &DataType::Utf8).unwrap();
            let s = labels.as_string::<i32>();
            s.is_valid(0).then(|| s.value(0).to_string())
        })
        .collect()
}

fn zip_array(v: &Option<String>) -> ArrayRef {
    Arc::new(StringArray::from(vec![v.clone()]))
}

fn age_array(v: Option<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(vec![v]))
}

fn sex_array(v: &str) -> ArrayRef {
    Arc::new(StringArray::from(vec![v]))
}

/// Whether `label` covers the raw value whose every level's label is `levels` (an ordered
/// value also as a number, for `[lo, hi]` and the value-free `(lo, hi)`).
fn covers(label: &Option<String>, levels: &[Option<String>], number: Option<i64>) -> bool {
    match label {
        None => levels[0].is_none(),
        Some(l) if l == TOP_LABEL => true,
        Some(l) => {
            let closed = l.strip_prefix('[').and_then(|s| s.strip_suffix(']'));
            let open = l.strip_prefix('(').and_then(|s| s.strip_suffix(')'));
            if let (Some(inner), Some(x)) = (closed.or(open), number)
                && let Some((lo, hi)) = inner.split_once(", ")
                && let (Ok(lo), Ok(hi)) = (lo.parse::<i64>(), hi.parse::<i64>())
            {
                return if open.is_some() {
                    lo < x && x < hi
                } else {
                    lo < hi && lo <= x && x <= hi
                };
            }
            levels.iter().any(|x| x.as_deref() == Some(l.as_str()))
        }
    }
}

/// The whole input's share of each disease (NULL a category), for t.
fn distribution(rows: &[&Row]) -> BTreeMap<Option<String>, f64> {
    let mut counts: BTreeMap<Option<String>, f64> = BTreeMap::new();
    for r in rows {
        *counts.entry(r.disease.clone()).or_default() += 1.0;
    }
    let n = rows.len() as f64;
    counts.values_mut().for_each(|c| *c /= n);
    counts
}

/// Whether a group of rows meets k, distinct l and equal-distance t against `table`.
fn meets(
    rows: &[&Row],
    k: u64,
    l: Option<f64>,
    t: Option<f64>,
    table: &BTreeMap<Option<String>, f64>,
) -> bool {
    if (rows.len() as u64) < k || rows.is_empty() {
        return false;
    }
    if let Some(l) = l {
        let distinct: BTreeSet<&String> = rows.iter().filter_map(|r| r.disease.as_ref()).collect();
        let measured = if distinct.is_empty() {
            1.0
        } else {
            distinct.len() as f64
        };
        if measured < l {
            return false;
        }
    }
    if let Some(t) = t {
        let class = distribution(rows);
        let emd: f64 = table
            .iter()
            .map(|(v, p)| (class.get(v).copied().unwrap_or(0.0) - p).abs())
            .sum::<f64>()
            / 2.0;
        if emd > t + 1e-9 {
            return false;
        }
    }
    true
}

fn random_rows(rng: &mut Rng, n: usize) -> Vec<Row> {
    (0..n)
        .map(|_| Row {
            zip: (rng.below(12) != 0)
                .then(|| format!("{}{}{}", 1 + rng.below(2), rng.below(3), rng.below(4))),
            age: (rng.below(15) != 0).then(|| 20 + rng.below(40) as i64),
            sex: if rng.below(2) == 0 { "F" } else { "M" }.to_string(),
            disease: (rng.below(10) != 0)
                .then(|| ["flu", "cold", "hiv", "none"][rng.below(4) as usize].to_string()),
        })
        .collect()
}

/// The leaf class (raw combination) of each row, from the frequency set's raw values.
fn leaf_class_of_rows(freq: &FrequencySet, rows: &[Row]) -> Vec<usize> {
    let text = |q: usize, leaf: u32| -> Option<String> {
        let v = cast(freq.qis()[q].leaf_values().unwrap(), &DataType::Utf8).unwrap();
        let s = v.as_string::<i32>();
        s.is_valid(leaf as usize)
            .then(|| s.value(leaf as usize).to_string())
    };
    let mut index = BTreeMap::new();
    for c in 0..freq.leaf_classes() {
        let key: Vec<Option<String>> = (0..3).map(|q| text(q, freq.leaf_codes()[q][c])).collect();
        index.insert(key, c);
    }
    rows.iter()
        .map(|r| {
            let key = vec![
                r.zip.clone(),
                r.age.map(|a| a.to_string()),
                Some(r.sex.clone()),
            ];
            index[&key]
        })
        .collect()
}

/// Brute force: no allowable threshold on age and no allowable two-group split of the lowest
/// common node's children on zip and sex remains in `region`.
fn assert_no_allowable_cut(
    region: &[&Row],
    qis: &[(String, Arc<Hierarchy>)],
    k: u64,
    l: Option<f64>,
    t: Option<f64>,
    table: &BTreeMap<Option<String>, f64>,
    context: &str,
) {
    // age: every threshold between two distinct values (NULL smallest)
    let mut ages: Vec<Option<i64>> = region.iter().map(|r| r.age).collect();
    ages.sort();
    ages.dedup();
    for threshold in &ages[..ages.len().saturating_sub(1)] {
        let (left, right): (Vec<&Row>, Vec<&Row>) =
            region.iter().partition(|r| r.age <= *threshold);
        assert!(
            !(meets(&left, k, l, t, table) && meets(&right, k, l, t, table)),
            "{context}: an allowable age cut at {threshold:?} remains"
        );
    }
    // zip and sex: the lowest common node, split into its children
    for (q, (name, h)) in qis.iter().enumerate() {
        if name == "age" {
            continue;
        }
        let labels: Vec<Vec<Option<String>>> = region
            .iter()
            .map(|r| match q {
                0 => level_labels(h, zip_array(&r.zip)),
                _ => level_labels(h, sex_array(&r.sex)),
            })
            .collect();
        let common =
            (0..h.height()).find(|&level| labels.iter().all(|x| x[level] == labels[0][level]));
        let child_level = match common {
            Some(0) => continue,
            Some(level) => level - 1,
            None => h.height() - 1,
        };
        let children: BTreeSet<Option<String>> =
            labels.iter().map(|x| x[child_level].clone()).collect();
        let children: Vec<Option<String>> = children.into_iter().collect();
        assert!(children.len() <= EXHAUSTIVE_CHILDREN);
        for mask in 1u32..(1 << (children.len() - 1)) {
            let in_left = |x: &Vec<Option<String>>| {
                let i = children.iter().position(|c| *c == x[child_level]).unwrap();
                mask & (1 << i) != 0
            };
            let left: Vec<&Row> = region
                .iter()
                .zip(&labels)
                .filter(|(_, x)| in_left(x))
                .map(|(r, _)| *r)
                .collect();
            let right: Vec<&Row> = region
                .iter()
                .zip(&labels)
                .filter(|(_, x)| !in_left(x))
                .map(|(r, _)| *r)
                .collect();
            assert!(
                !(meets(&left, k, l, t, table) && meets(&right, k, l, t, table)),
                "{context}: an allowable split of {name} remains"
            );
        }
    }
}

/// The checks every local release must pass, on the raw rows: every row in exactly one class
/// or suppressed (within the budget), written + suppressed = input, every written row's
/// labels covering its raw values, every published class (rows with equal labels) meeting
/// the policy. Returns each row's class.
#[allow(clippy::too_many_arguments)]
async fn check_published(
    ctx: &SessionContext,
    qis: &[(String, Arc<Hierarchy>)],
    freq: &FrequencySet,
    rows: &[Row],
    req: &PrivacyRequirements,
    release: &LocalRelease,
    table: &BTreeMap<Option<String>, f64>,
    context: &str,
) -> Vec<u32> {
    let (k, l, t) = (
        req.k,
        req.sensitive[0].l.map(|l| l.l),
        req.sensitive[0].t.map(|t| t.t),
    );
    // the release is a function of the raw combination: one class (or suppressed) per row
    let leaf_of_row = leaf_class_of_rows(freq, rows);
    let class_of_row: Vec<u32> = leaf_of_row.iter().map(|&c| release.class_of[c]).collect();
    let suppressed = class_of_row.iter().filter(|&&c| c == SUPPRESSED).count();
    let budget = (req.max_suppression * rows.len() as f64 + 1e-9).floor() as usize;
    assert!(
        suppressed <= budget,
        "{context}: {suppressed} suppressed, budget {budget}"
    );
    assert!(suppressed < rows.len(), "{context}: everything suppressed");

    let labels = published_labels(ctx, qis, freq, release, req, &["disease"]).await;
    assert_eq!(
        labels.len() + suppressed,
        rows.len(),
        "{context}: written + suppressed"
    );
    let kept: Vec<&Row> = rows
        .iter()
        .zip(&class_of_row)
        .filter(|(_, c)| **c != SUPPRESSED)
        .map(|(r, _)| r)
        .collect();
    for (row, published) in kept.iter().zip(&labels) {
        let zip_levels = level_labels(&qis[0].1, zip_array(&row.zip));
        let age_levels = level_labels(&qis[1].1, age_array(row.age));
        let sex_levels = level_labels(&qis[2].1, sex_array(&row.sex));
        assert!(
            covers(&published[0], &zip_levels, None),
            "{context}: zip {row:?} {published:?}"
        );
        assert!(
            covers(&published[1], &age_levels, row.age),
            "{context}: age {row:?} {published:?}"
        );
        assert!(
            covers(&published[2], &sex_levels, None),
            "{context}: sex {row:?} {published:?}"
        );
    }
    let mut published: BTreeMap<&Vec<Option<String>>, Vec<&Row>> = BTreeMap::new();
    for (row, l) in kept.iter().zip(&labels) {
        published.entry(l).or_default().push(row);
    }
    for (key, members) in &published {
        assert!(meets(members, k, l, t, table), "{context}: class {key:?}");
    }
    class_of_row
}

/// KACA and IAB on random small tables, with and without a suppression budget: the checks of
/// [`check_published`] on the raw rows.
#[tokio::test]
async fn kaca_and_iab_properties_on_random_tables() {
    use super::{LocalAlgorithm, LocalOptions, anonymize};
    let mut rng = Rng(11);
    let mut releases = 0;
    for case in 0..40 {
        let n = 12 + rng.below(60) as usize;
        let rows = random_rows(&mut rng, n);
        let k = 2 + rng.below(3);
        let l = (rng.below(3) == 0).then_some(2.0);
        let t = (rng.below(4) == 0).then_some(0.5);
        let mut req = requirements(k, l, t);
        req.max_suppression = [0.0, 0.1][rng.below(2) as usize];
        let ctx = session(&rows);
        let qis = hierarchies(&[5.0, 10.0]);
        let freq = FrequencySet::build(&ctx, "t", &qis, &["disease".to_string()])
            .await
            .unwrap();
        let all: Vec<&Row> = rows.iter().collect();
        let table = distribution(&all);
        for algorithm in [LocalAlgorithm::Kaca, LocalAlgorithm::Iab] {
            let context = format!(
                "case {case} {algorithm}: n = {n}, k = {k}, l = {l:?}, t = {t:?}, \
                 suppression {}",
                req.max_suppression
            );
            let options = LocalOptions {
                seed: case,
                ..LocalOptions::default()
            };
            match anonymize(&freq, &req, algorithm, options) {
                Ok((release, _)) => {
                    releases += 1;
                    check_published(&ctx, &qis, &freq, &rows, &req, &release, &table, &context)
                        .await;
                }
                // refused: only when even the whole table fails beyond the budget
                Err(_) => assert!(!meets(&all, k, l, t, &table), "{context}: refused"),
            }
        }
    }
    assert!(releases >= 40, "only {releases} releases");
}

/// Random small tables: every row covered by its labels, in exactly one class, every
/// published class meeting the policy, written + suppressed = input, and no allowable cut left
/// in any region (strictness), all checked on the raw rows.
#[tokio::test]
async fn mondrian_properties_on_random_tables() {
    let mut rng = Rng(7);
    let mut releases = 0;
    let mut lower = 0;
    for case in 0..60 {
        let n = 12 + rng.below(70) as usize;
        let rows = random_rows(&mut rng, n);
        let k = 2 + rng.below(3);
        let l = (rng.below(3) == 0).then_some(2.0);
        let t = (rng.below(3) == 0).then_some(0.5);
        let context = format!("case {case}: n = {n}, k = {k}, l = {l:?}, t = {t:?}");
        let ctx = session(&rows);
        let qis = hierarchies(&[5.0, 10.0]);
        let freq = FrequencySet::build(&ctx, "t", &qis, &["disease".to_string()])
            .await
            .unwrap();
        let req = requirements(k, l, t);
        // the default cuts (loss-scored thresholds) and the paper's choices are both strict
        // without the refinement
        let options = [MondrianOptions::greedy(), MondrianOptions::paper()][case % 2];
        let release = mondrian_with(&freq, &req, options).unwrap();
        // the cut costs folded run by run (the default) give the classes that folding each
        // record gives, with the refinement too
        let reference = mondrian_folding_each_record(&freq, &req, options).unwrap();
        assert_eq!(release.class_of, reference.class_of, "{context}");
        assert_eq!(release.cells, reference.cells, "{context}");
        let refined = mondrian(&freq, &req).unwrap();
        let reference =
            mondrian_folding_each_record(&freq, &req, MondrianOptions::default()).unwrap();
        assert_eq!(refined.class_of, reference.class_of, "{context}");
        assert_eq!(refined.cells, reference.cells, "{context}");
        let all: Vec<&Row> = rows.iter().collect();
        let table = distribution(&all);
        let evaluation = evaluate(&freq, &req, &release).unwrap();
        if !meets(&all, k, l, t, &table) {
            // the whole table fails: nothing can be published
            assert!(
                release.class_of.iter().all(|&c| c == SUPPRESSED),
                "{context}"
            );
            assert!(!evaluation.satisfies, "{context}");
            continue;
        }
        releases += 1;
        assert!(evaluation.satisfies, "{context}");
        assert_eq!(
            evaluation.suppressed_rows, 0,
            "{context}: Mondrian suppresses nothing"
        );

        let class_of_row =
            check_published(&ctx, &qis, &freq, &rows, &req, &release, &table, &context).await;
        assert!(class_of_row.iter().all(|&c| c != SUPPRESSED), "{context}");

        // the refinement: the same checks on the raw rows, and never a higher Loss than the
        // greedy cuts it refines (the rollout tries the greedy cut first, a move or a cut
        // only lowers the Loss)
        if case % 2 == 0 {
            let refined_class_of =
                check_published(&ctx, &qis, &freq, &rows, &req, &refined, &table, &context).await;
            assert!(
                refined_class_of.iter().all(|&c| c != SUPPRESSED),
                "{context}"
            );
            let refined_loss = evaluate(&freq, &req, &refined).unwrap().loss;
            assert!(
                refined_loss <= evaluation.loss + 1e-12,
                "{context}: refined {refined_loss} > greedy {}",
                evaluation.loss
            );
            if refined_loss < evaluation.loss - 1e-12 {
                lower += 1;
            }
        }

        // strictness, region by region
        let mut regions: BTreeMap<u32, Vec<&Row>> = BTreeMap::new();
        for (row, &c) in rows.iter().zip(&class_of_row) {
            regions.entry(c).or_default().push(row);
        }
        for (c, region) in &regions {
            assert_no_allowable_cut(
                region,
                &qis,
                k,
                l,
                t,
                &table,
                &format!("{context}, class {c}"),
            );
        }
    }
    assert!(releases >= 30, "only {releases} cases published something");
    // the refinement found a cheaper release in a fair share of the tables
    assert!(lower >= 5, "the refinement lowered the Loss {lower} times");
    println!("the refinement lowered the Loss in {lower} of the greedy releases");
}

/// Ten rows, k = 2, by hand, with the paper's choices (widest range, median threshold), and
/// the exact `[min, max]` labels (`local_labels = "exact"`). age has an interval hierarchy
/// ([x, x+10), then `*`), so it is ordered: |D| = its 10 distinct values. sex is a tree F/M →
/// `*`.
///
/// Root: age [21, 41] costs (10−1)/9 = 1, sex `*` costs 1: a tie, age comes first. Median
/// cut of 10 rows: 5 left {21, 22, 23, 24, 31}, 5 right {32, 33, 35, 40, 41}.
/// - Left: age [21, 31] costs 4/9 < sex `*` 1: sex first, F {21, 22, 31} and M {23, 24} both
///   ≥ 2. F: no age threshold leaves 2 on both sides (2 | 1) → class ([21, 31], F). M: 1 | 1 →
///   ([23, 24], M).
/// - Right: sex first, F {32, 40} and M {33, 35, 41}. F: 1 | 1 → ([32, 40], F). M: 2 | 1 →
///   ([33, 41], M).
///
/// Loss: age cells cover 5, 2, 4 and 4 of the 10 values: (3·4 + 2·1 + 2·3 + 3·3)/9 = 29/9 over
/// 10 rows × 2 QIs: 29/180; sex cells cost 0.
#[tokio::test]
async fn mondrian_ten_rows_k2_by_hand() {
    let data = [
        (21, "F"),
        (22, "F"),
        (23, "M"),
        (24, "M"),
        (31, "F"),
        (32, "F"),
        (33, "M"),
        (35, "M"),
        (40, "F"),
        (41, "M"),
    ];
    let rows: Vec<Row> = data
        .iter()
        .map(|&(age, sex)| Row {
            zip: Some("123".into()),
            age: Some(age),
            sex: sex.into(),
            disease: Some("flu".into()),
        })
        .collect();
    let ctx = session(&rows);
    let qis: Vec<(String, Arc<Hierarchy>)> = hierarchies(&[10.0]).into_iter().skip(1).collect();
    let mut freq = FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap();
    freq.set_local_labels(LocalLabels::Exact);
    let req = PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 2,
        max_suppression: 0.0,
        sensitive: vec![],
    };
    let release = mondrian_with(&freq, &req, MondrianOptions::paper()).unwrap();
    let evaluation = evaluate(&freq, &req, &release).unwrap();
    assert!(
        (evaluation.loss - 29.0 / 180.0).abs() < 1e-12,
        "{}",
        evaluation.loss
    );
    assert_eq!(evaluation.classes, 4);
    assert_eq!(evaluation.min_class_size, Some(2));
    let labels = published_labels(&ctx, &qis, &freq, &release, &req, &["disease"]).await;
    let expected = [
        ("[21, 31]", "F"),
        ("[21, 31]", "F"),
        ("[23, 24]", "M"),
        ("[23, 24]", "M"),
        ("[21, 31]", "F"),
        ("[32, 40]", "F"),
        ("[33, 41]", "M"),
        ("[33, 41]", "M"),
        ("[32, 40]", "F"),
        ("[33, 41]", "M"),
    ];
    let got: Vec<(String, String)> = labels
        .iter()
        .map(|l| (l[0].clone().unwrap(), l[1].clone().unwrap()))
        .collect();
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, s)| (a.to_string(), s.to_string()))
        .collect();
    assert_eq!(got, expected);
}

/// The ten rows of [`mondrian_ten_rows_k2_by_hand`] with value-free labels (the default), by
/// hand. The grid is age's [x, x+10) buckets: an age class within one bucket publishes it
/// (`[20, 30)` covers 4 of the 10 values: 3/9), one across buckets the open interval from
/// the integer before its first bucket to the end of its last.
///
/// Root: age (19, 50) covers all 10 values (cost 1), sex `*` 1: age first, the median cut
/// 21 22 23 24 31 | 32 33 35 40 41 (the median rule does not look at costs).
/// - Left: age (19, 40) covers 21 … 35, 8 values: 7/9 < sex 1: sex first, F {21, 22, 31}
///   and M {23, 24}. F: no age cut leaves 2 | 2 → ((19, 40), F). M: both in [20, 30), 1 | 1
///   → ([20, 30), M).
/// - Right: age (29, 50) covers 31 … 41, 6 values: 5/9 < 1: sex first, F {32, 40} and M
///   {33, 35, 41}; neither has an age cut → ((29, 50), F) and ((29, 50), M).
///
/// Loss: (3·7 + 2·3 + 2·5 + 3·5)/9 = 52/9 over 10 rows × 2 QIs: 52/180 (the exact labels'
/// 29/180 published members' values as ends).
#[tokio::test]
async fn mondrian_ten_rows_k2_value_free_by_hand() {
    let data = [
        (21, "F"),
        (22, "F"),
        (23, "M"),
        (24, "M"),
        (31, "F"),
        (32, "F"),
        (33, "M"),
        (35, "M"),
        (40, "F"),
        (41, "M"),
    ];
    let rows: Vec<Row> = data
        .iter()
        .map(|&(age, sex)| Row {
            zip: Some("123".into()),
            age: Some(age),
            sex: sex.into(),
            disease: Some("flu".into()),
        })
        .collect();
    let ctx = session(&rows);
    let qis: Vec<(String, Arc<Hierarchy>)> = hierarchies(&[10.0]).into_iter().skip(1).collect();
    let freq = FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap();
    let req = PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 2,
        max_suppression: 0.0,
        sensitive: vec![],
    };
    let release = mondrian_with(&freq, &req, MondrianOptions::paper()).unwrap();
    let evaluation = evaluate(&freq, &req, &release).unwrap();
    assert!(
        (evaluation.loss - 52.0 / 180.0).abs() < 1e-12,
        "{}",
        evaluation.loss
    );
    assert_eq!(evaluation.classes, 4);
    assert_eq!(evaluation.min_class_size, Some(2));
    let labels = published_labels(&ctx, &qis, &freq, &release, &req, &["disease"]).await;
    let expected = [
        ("(19, 40)", "F"),
        ("(19, 40)", "F"),
        ("[20, 30)", "M"),
        ("[20, 30)", "M"),
        ("(19, 40)", "F"),
        ("(29, 50)", "F"),
        ("(29, 50)", "M"),
        ("(29, 50)", "M"),
        ("(29, 50)", "F"),
        ("(29, 50)", "M"),
    ];
    let got: Vec<(String, String)> = labels
        .iter()
        .map(|l| (l[0].clone().unwrap(), l[1].clone().unwrap()))
        .collect();
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(a, s)| (a.to_string(), s.to_string()))
        .collect();
    assert_eq!(got, expected);
}

/// A single value publishes itself, NULLs alone publish NULL, NULL mixed with values `*`.
#[tokio::test]
async fn interval_cells_of_single_values_and_nulls() {
    let rows: Vec<Row> = [Some(30), Some(30), None, None, Some(31), Some(35)]
        .iter()
        .map(|&age| Row {
            zip: Some("123".into()),
            age,
            sex: "F".into(),
            disease: None,
        })
        .collect();
    let ctx = session(&rows);
    let qis: Vec<(String, Arc<Hierarchy>)> = hierarchies(&[10.0])[1..2].to_vec();
    let freq = FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap();
    let req = PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 2,
        max_suppression: 0.0,
        sensitive: vec![],
    };
    // by hand: NULL | 30 30 31 35 costs least (NULL 0, the rest in [30, 40): 4 rows × 1) of
    // the allowable cuts (NULL 30 30 | 31 35 costs 4 × 1 (`*`) + 2 × 1); then 30 30 | 31 35
    // (2 | 2): 31 and 35 share the grid's bucket [30, 40), which they publish (value-free);
    // the exact labels publish their ends [31, 35]
    let release = mondrian(&freq, &req).unwrap();
    let labels = published_labels(&ctx, &qis, &freq, &release, &req, &["disease"]).await;
    let got: Vec<Option<String>> = labels.into_iter().map(|mut l| l.remove(0)).collect();
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        got,
        vec![s("30"), s("30"), None, None, s("[30, 40)"), s("[30, 40)")]
    );
    let mut exact = freq.clone();
    exact.set_local_labels(LocalLabels::Exact);
    let release = mondrian(&exact, &req).unwrap();
    let labels = published_labels(&ctx, &qis, &exact, &release, &req, &["disease"]).await;
    let got: Vec<Option<String>> = labels.into_iter().map(|mut l| l.remove(0)).collect();
    assert_eq!(
        got,
        vec![s("30"), s("30"), None, None, s("[31, 35]"), s("[31, 35]")]
    );
    // k = 3: NULL (2 rows) can no longer stand alone, so the one class mixes NULL and values
    let req3 = PrivacyRequirements { k: 3, ..req };
    let release = mondrian(&freq, &req3).unwrap();
    let labels = published_labels(&ctx, &qis, &freq, &release, &req3, &["disease"]).await;
    let tops = labels
        .iter()
        .filter(|l| l[0].as_deref() == Some(TOP_LABEL))
        .count();
    // NULL NULL | 30 30 31 35 fails (2 rows left); NULL NULL 30 30 | 31 35 too: one class
    assert_eq!(tops, 6);
}

/// Per-QI Loss of Mondrian on Adult, for BENCHMARKS.md (run by hand:
/// `cargo test --lib adult_breakdown -- --ignored --nocapture`): the choices of "How Mondrian
/// got there", or with `KNOBS="zone,pilot,width,rounds,recuts;…"` the greedy cuts and those
/// refinements; `POLICY=path` runs another policy's table under its k and suppression. CPU
/// time is the process's (Linux `/proc/self/stat`, 10 ms ticks).
#[tokio::test]
#[ignore]
async fn adult_breakdown() {
    use super::axes;
    use super::mondrian::{Dimension, Threshold};
    let adult = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/adult/policy.toml"
    );
    let policy_path = std::env::var("POLICY").unwrap_or(adult.to_string());
    let mut policy = crate::policy::Policy::from_file(&policy_path).unwrap();
    let ctx = SessionContext::new();
    policy.register_with(&ctx, false).await.unwrap();
    let freq = FrequencySet::build(&ctx, policy.table_name(), &policy.quasi_identifiers(), &[])
        .await
        .unwrap();
    println!("{} leaf classes, {} rows", freq.leaf_classes(), freq.rows());
    let axes = axes(&freq).unwrap();
    // the choices of "How Mondrian got there", or the refinements given as
    // `KNOBS="zone,pilot,width,rounds,recuts;…"` (a table's own policy with `POLICY=path`)
    let greedy = |dimension, threshold| MondrianOptions {
        dimension,
        threshold,
        refine: None,
    };
    let mut choices = Vec::new();
    let rates: &[f64] = if std::env::var("POLICY").is_ok() {
        &[-1.0]
    } else {
        &[0.0, 0.02]
    };
    for &rate in rates {
        match std::env::var("KNOBS") {
            Ok(knobs) => {
                choices.push((MondrianOptions::greedy(), rate));
                for knob in knobs.split(';') {
                    let v: Vec<u64> = knob.split(',').map(|x| x.parse().unwrap()).collect();
                    let refine = Refinement {
                        zone_rows: v[0],
                        pilot_rows: v[1],
                        pilot_width: v[2] as usize,
                        rounds: v[3] as usize,
                        recuts: v[4] as usize,
                    };
                    choices.push((
                        MondrianOptions {
                            refine: Some(refine),
                            ..MondrianOptions::default()
                        },
                        rate,
                    ));
                }
            }
            Err(_) => {
                choices.push((MondrianOptions::paper(), rate));
                choices.push((greedy(Dimension::Loss, Threshold::Median), rate));
                choices.push((greedy(Dimension::Range, Threshold::Loss), rate));
                choices.push((greedy(Dimension::Loss, Threshold::Loss), rate));
                choices.push((MondrianOptions::default(), rate));
            }
        }
    }
    for (choice, rate) in choices {
        let req = if rate < 0.0 {
            // the policy's k and suppression (no sensitive attribute is read)
            k_only(
                policy.requirements().k,
                policy.requirements().max_suppression,
            )
        } else {
            PrivacyRequirements {
                suppression: Default::default(),
                population: None,
                k: 5,
                max_suppression: rate,
                sensitive: vec![],
            }
        };
        let cpu = || {
            let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
            let fields: Vec<&str> = stat
                .rsplit(')')
                .next()
                .unwrap()
                .split_whitespace()
                .collect();
            fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
        };
        let (start, cpu_start) = (std::time::Instant::now(), cpu());
        let release = mondrian_with(&freq, &req, choice).unwrap();
        let took = start.elapsed();
        println!("cpu {} ms", (cpu() - cpu_start) * 10);
        let e = evaluate(&freq, &req, &release).unwrap();
        let mut per_qi = vec![0.0; freq.qis().len()];
        for (leaf, &c) in release.class_of.iter().enumerate() {
            let n = freq.sizes()[leaf] as f64;
            for (q, cost) in per_qi.iter_mut().enumerate() {
                *cost += n * if c == SUPPRESSED {
                    1.0
                } else {
                    axes[q].cost(&freq.qis()[q], release.cells_of(c as usize)[q])
                };
            }
        }
        let parts: Vec<String> = per_qi
            .iter()
            .zip(freq.qi_names())
            .map(|(c, n)| format!("{n} {:.4}", c / freq.rows() as f64))
            .collect();
        println!(
            "{choice:?} {rate}: loss {:.4}, {} classes, {} suppressed, {:?}; {}",
            e.loss,
            e.classes,
            e.suppressed_rows,
            took,
            parts.join(", ")
        );
    }
}

/// KACA and IAB refuse frequency sets beyond their limit, naming it; Mondrian has none.
#[test]
fn pairwise_algorithms_refuse_large_frequency_sets() {
    use super::{LocalAlgorithm, LocalOptions, anonymize};
    let freq = random_code_freq(1);
    let req = PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k: 2,
        max_suppression: 0.0,
        sensitive: vec![],
    };
    let options = LocalOptions {
        max_combinations: 10,
        ..LocalOptions::default()
    };
    assert!(freq.leaf_classes() > 10);
    for algorithm in [LocalAlgorithm::Kaca, LocalAlgorithm::Iab] {
        let e = anonymize(&freq, &req, algorithm, options)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("{} distinct", freq.leaf_classes())),
            "{e}"
        );
        assert!(e.contains("limit of 10") && e.contains("mondrian"), "{e}");
    }
    assert!(anonymize(&freq, &req, LocalAlgorithm::Mondrian, options).is_ok());
}

/// k-map and δ-presence with every local algorithm on random frequency sets (3 QIs of 8
/// leaves, leaf / pairs / quads / *), against a population of the sample's rows plus as many
/// again drawn uniformly. Every published class is checked on the raw population: a
/// population row counts for a class when, at the lowest level where all the class's
/// members share a node, it has that node for every QI (the class's label covers it).
#[test]
fn local_releases_meet_population_requirements_on_random_tables() {
    use super::{LocalAlgorithm, LocalOptions, anonymize};
    use crate::policy::{DeltaPresence, PopulationRequirement};
    use crate::search::population::PopulationCounts;
    let mut releases = 0;
    for seed in 0..6u64 {
        let (qis, sensitive, rows) = random_code_rows(seed);
        let levels = qis[0].levels.clone();
        let mut freq = FrequencySet::from_codes(qis, sensitive, &rows).unwrap();
        let mut rng = Rng(seed + 100);
        let mut population: Vec<(Vec<u32>, u64)> =
            rows.iter().map(|r| (r.qi.clone(), r.count)).collect();
        for _ in 0..rows.len() {
            population.push(((0..3).map(|_| rng.below(8) as u32).collect(), 1));
        }
        freq.set_population(PopulationCounts::from_leaf_codes(freq.qis(), &population).unwrap());
        // δ_min 0.35 is judged only once a class's cells are known (the population doubles
        // the sample, so classes sit near δ = 0.5 and some fall below)
        for (k_map, delta) in [
            (Some(12), None),
            (None, Some((0.0, 0.7))),
            (Some(8), Some((0.0, 0.8))),
            (None, Some((0.35, 1.0))),
        ] {
            let requirement = PopulationRequirement {
                k_map,
                delta_presence: delta.map(|(min, max)| DeltaPresence { min, max }),
            };
            let req = PrivacyRequirements {
                suppression: Default::default(),
                population: Some(requirement),
                ..k_only(2, 0.3)
            };
            for algorithm in [
                LocalAlgorithm::Mondrian,
                LocalAlgorithm::Kaca,
                LocalAlgorithm::Iab,
            ] {
                let context = format!("seed {seed}, {algorithm}, {k_map:?}, {delta:?}");
                let Ok((release, _)) = anonymize(&freq, &req, algorithm, LocalOptions::default())
                else {
                    continue;
                };
                releases += 1;
                let (leaf_codes, sizes) = (freq.leaf_codes(), freq.sizes());
                for c in 0..release.classes() {
                    // the class's leaf classes (distinct QI combinations)
                    let members: Vec<usize> = (0..release.class_of.len())
                        .filter(|&m| release.class_of[m] == c as u32)
                        .collect();
                    if members.is_empty() {
                        continue;
                    }
                    let size: u64 = members.iter().map(|&m| sizes[m]).sum();
                    let leaf = |j: usize, m: usize| leaf_codes[j][m] as usize;
                    // per QI: the lowest level where every member has the same node
                    let nodes: Vec<(usize, u32)> = (0..3)
                        .map(|j| {
                            let level = (0..levels.len())
                                .find(|&l| {
                                    let first = levels[l][leaf(j, members[0])];
                                    members.iter().all(|&m| levels[l][leaf(j, m)] == first)
                                })
                                .unwrap();
                            (level, levels[level][leaf(j, members[0])])
                        })
                        .collect();
                    let covered: u64 = population
                        .iter()
                        .filter(|(leaves, _)| {
                            (0..3).all(|j| levels[nodes[j].0][leaves[j] as usize] == nodes[j].1)
                        })
                        .map(|(_, n)| n)
                        .sum();
                    if let Some(k) = k_map {
                        assert!(covered >= k, "{context}: class {c} covers {covered}");
                    }
                    if let Some((min, max)) = delta {
                        assert!(
                            size as f64 <= max * covered as f64 + 1e-9
                                && size as f64 >= min * covered as f64 - 1e-9,
                            "{context}: class {c} δ = {size}/{covered}"
                        );
                    }
                }
            }
        }
    }
    assert!(releases >= 30, "only {releases} releases");
}

/// Raw rows for the attribute-disclosure tests: the QIs of [`random_code_rows`] (3 QIs of 8
/// leaves), a sensitive `s` of 4 values with a NULL in about one row in 10, and a person id
/// `pid`. About 120 persons have 1 to 4 rows each; two rows in three of a person share the
/// person's own QI combination (so a class of many rows can hold few persons), and one id in
/// 25 is NULL (a row whose person is unknown).
fn person_code_rows(seed: u64) -> (Vec<QiCodes>, Vec<SensitiveCodes>, Vec<FrequencyRow>) {
    let (qis, _, _) = random_code_rows(seed);
    let mut rng = Rng(seed + 1000);
    let mut rows = Vec::new();
    let mut person = 0u32;
    while rows.len() < 300 {
        let home: Vec<u32> = (0..3).map(|_| rng.below(8) as u32).collect();
        for _ in 0..1 + rng.below(4) {
            let qi = if rng.below(3) == 0 {
                (0..3).map(|_| rng.below(8) as u32).collect()
            } else {
                home.clone()
            };
            let s = (rng.below(10) != 0).then(|| rng.below(4) as u32);
            let pid = (rng.below(25) != 0).then_some(person);
            rows.push(FrequencyRow {
                qi,
                sensitive: vec![s, pid],
                count: 1,
            });
        }
        person += 1;
    }
    let sensitive = ["s", "pid"]
        .iter()
        .map(|n| SensitiveCodes {
            name: (*n).into(),
            ordered: false,
        })
        .collect();
    (qis, sensitive, rows)
}

/// The counts of each value (`None` = NULL) of sensitive attribute `s` over `rows`.
fn value_counts<'a>(
    rows: impl Iterator<Item = &'a FrequencyRow>,
    s: usize,
) -> BTreeMap<Option<u32>, f64> {
    let mut counts = BTreeMap::new();
    for r in rows {
        *counts.entry(r.sensitive[s]).or_default() += r.count as f64;
    }
    counts
}

/// α of (α,k)-anonymity from its definition (docs/definitions.md): the largest share of a
/// value, NULLs counted as copies of the most frequent value; 1 for a class of NULLs only.
fn alpha_of(class: &BTreeMap<Option<u32>, f64>) -> f64 {
    let size: f64 = class.values().sum();
    let nulls = class.get(&None).copied().unwrap_or(0.0);
    let largest = class
        .iter()
        .filter(|(v, _)| v.is_some())
        .map(|(_, &n)| n)
        .fold(0.0, f64::max);
    if largest == 0.0 {
        1.0
    } else {
        (largest + nulls) / size
    }
}

/// Each value's (p_E, p_T) over the values of the table T (NULL a category; p_E 0 for a value
/// the class lacks).
fn shares(
    class: &BTreeMap<Option<u32>, f64>,
    table: &BTreeMap<Option<u32>, f64>,
) -> Vec<(f64, f64)> {
    let (size, n): (f64, f64) = (class.values().sum(), table.values().sum());
    table
        .iter()
        .map(|(v, &t)| (class.get(v).copied().unwrap_or(0.0) / size, t / n))
        .collect()
}

/// Basic β-likeness: the largest (p_E − p_T)/p_T over values with p_E > p_T, 0 if none.
fn beta_of(class: &BTreeMap<Option<u32>, f64>, table: &BTreeMap<Option<u32>, f64>) -> f64 {
    shares(class, table)
        .into_iter()
        .filter(|(pe, pt)| pe > pt)
        .map(|(pe, pt)| (pe - pt) / pt)
        .fold(0.0, f64::max)
}

/// Enhanced β-likeness with bound β: every value's gain (p_E − p_T)/p_T is at most
/// min(β, −ln p_T).
fn meets_enhanced_beta(
    class: &BTreeMap<Option<u32>, f64>,
    table: &BTreeMap<Option<u32>, f64>,
    beta: f64,
) -> bool {
    shares(class, table)
        .into_iter()
        .all(|(pe, pt)| (pe - pt) / pt <= beta.min(-pt.ln()) + 1e-9)
}

/// δ-disclosure: max over the values of T of |ln(p_E/p_T)|, +∞ when E lacks one.
fn delta_of(class: &BTreeMap<Option<u32>, f64>, table: &BTreeMap<Option<u32>, f64>) -> f64 {
    shares(class, table)
        .into_iter()
        .map(|(pe, pt)| {
            if pe == 0.0 {
                f64::INFINITY
            } else {
                (pe / pt).ln().abs()
            }
        })
        .fold(0.0, f64::max)
}

/// Distinct persons: the non-NULL ids; a NULL id may be any person of the class, so it adds
/// none, except that a class of NULL ids only is one person.
fn persons_of(class: &BTreeMap<Option<u32>, f64>) -> usize {
    let known = class.keys().filter(|v| v.is_some()).count();
    if known == 0 && class.contains_key(&None) {
        1
    } else {
        known
    }
}

/// Why a class (per sensitive attribute, its value counts) fails `req`, if it does: k rows,
/// then every bound of `s` and `pid` from the definitions above.
fn disclosure_failure(
    class: &[BTreeMap<Option<u32>, f64>; 2],
    table: &BTreeMap<Option<u32>, f64>,
    req: &PrivacyRequirements,
) -> Option<String> {
    let size: f64 = class[0].values().sum();
    if size < req.k as f64 {
        return Some(format!("{size} rows"));
    }
    for requirement in &req.sensitive {
        if requirement.attribute == "pid" {
            let persons = persons_of(&class[1]);
            if let Some(k) = requirement.persons
                && (persons as u64) < k
            {
                return Some(format!("{persons} persons"));
            }
            continue;
        }
        let s = &class[0];
        if let Some(alpha) = requirement.alpha
            && alpha_of(s) > alpha + 1e-9
        {
            return Some(format!("α {}", alpha_of(s)));
        }
        if let Some(beta) = requirement.beta {
            if beta.enhanced {
                if !meets_enhanced_beta(s, table, beta.beta) {
                    return Some(format!("enhanced β (basic {})", beta_of(s, table)));
                }
            } else if beta_of(s, table) > beta.beta + 1e-9 {
                return Some(format!("β {}", beta_of(s, table)));
            }
        }
        // strict, as Brickell & Shmatikov define it
        if let Some(delta) = requirement.delta
            && delta_of(s, table) >= delta
        {
            return Some(format!("δ {}", delta_of(s, table)));
        }
    }
    None
}

/// α, basic and enhanced β, δ-disclosure and k over persons with every local algorithm on
/// random frequency sets of two sensitive attributes ([`person_code_rows`]). Every published
/// class is checked on the raw rows against the definitions (docs/definitions.md), p_T the
/// whole input's distribution: each class of the release, and each group of classes with
/// the same labels (one published class); the rows the release suppresses fit the budget,
/// and every kept row's labels cover it. Each requirement must bind somewhere: the k-only
/// release of the same k and budget has a failing class for at least one seed and algorithm.
#[test]
fn local_releases_meet_attribute_disclosure_and_person_requirements_on_random_tables() {
    use super::{LocalAlgorithm, LocalOptions, anonymize};
    use crate::policy::BetaLikeness;
    let on_s =
        |alpha: Option<f64>, beta: Option<(f64, bool)>, delta: Option<f64>| SensitiveRequirement {
            alpha,
            beta: beta.map(|(beta, enhanced)| BetaLikeness { beta, enhanced }),
            delta,
            ..SensitiveRequirement::unconstrained("s")
        };
    let persons = |k: u64| SensitiveRequirement {
        persons: Some(k),
        ..SensitiveRequirement::unconstrained("pid")
    };
    // (name, k, max_suppression, requirements)
    let cases: Vec<(&str, u64, f64, Vec<SensitiveRequirement>)> = vec![
        ("α 0.5", 2, 0.1, vec![on_s(Some(0.5), None, None)]),
        ("β 1", 2, 0.1, vec![on_s(None, Some((1.0, false)), None)]),
        (
            "enhanced β 1",
            2,
            0.1,
            vec![on_s(None, Some((1.0, true)), None)],
        ),
        ("δ 1.2", 2, 0.2, vec![on_s(None, None, Some(1.2))]),
        (
            "α 0.6, enhanced β 1.5, δ 1.5",
            3,
            0.2,
            vec![on_s(Some(0.6), Some((1.5, true)), Some(1.5))],
        ),
        ("k_persons 3", 2, 0.1, vec![persons(3)]),
        (
            "k_persons 3, α 0.6",
            2,
            0.2,
            vec![on_s(Some(0.6), None, None), persons(3)],
        ),
    ];
    let algorithms = [
        LocalAlgorithm::Mondrian,
        LocalAlgorithm::Kaca,
        LocalAlgorithm::Iab,
    ];
    let mut releases = 0;
    let mut binding = vec![0; cases.len()];
    for seed in 0..6u64 {
        let (qis, sensitive, rows) = person_code_rows(seed);
        let levels = qis[0].levels.clone();
        let freq = FrequencySet::from_codes(qis, sensitive, &rows).unwrap();
        let table = value_counts(rows.iter(), 0);
        // the leaf class of each raw row
        let leaf_of: BTreeMap<Vec<u32>, usize> = (0..freq.leaf_classes())
            .map(|m| ((0..3).map(|j| freq.leaf_codes()[j][m]).collect(), m))
            .collect();
        let row_leaf: Vec<usize> = rows.iter().map(|r| leaf_of[&r.qi]).collect();
        // per class of `release`, its value counts of s and of pid over the raw rows
        let class_counts = |class_of: &[u32], classes: usize| {
            let mut counts = vec![[BTreeMap::new(), BTreeMap::new()]; classes];
            for (r, &leaf) in rows.iter().zip(&row_leaf) {
                let c = class_of[leaf];
                if c != SUPPRESSED {
                    for (counts, &value) in counts[c as usize].iter_mut().zip(&r.sensitive) {
                        *counts.entry(value).or_insert(0.0) += r.count as f64;
                    }
                }
            }
            counts
        };
        for (case, (name, k, max_suppression, sensitive)) in cases.iter().enumerate() {
            let req = PrivacyRequirements {
                suppression: Default::default(),
                sensitive: sensitive.clone(),
                ..k_only(*k, *max_suppression)
            };
            for algorithm in algorithms {
                let context = format!("seed {seed}, {algorithm}, {name}");
                // the requirement binds when the k-only release has a class failing it
                if let Ok((k_release, _)) = anonymize(
                    &freq,
                    &k_only(*k, *max_suppression),
                    algorithm,
                    LocalOptions::default(),
                ) {
                    let counts = class_counts(&k_release.class_of, k_release.classes());
                    if counts
                        .iter()
                        .filter(|c| !c[0].is_empty())
                        .any(|c| disclosure_failure(c, &table, &req).is_some())
                    {
                        binding[case] += 1;
                    }
                }
                let Ok((release, _)) = anonymize(&freq, &req, algorithm, LocalOptions::default())
                else {
                    continue;
                };
                releases += 1;
                let suppressed: u64 = rows
                    .iter()
                    .zip(&row_leaf)
                    .filter(|(_, leaf)| release.class_of[**leaf] == SUPPRESSED)
                    .map(|(r, _)| r.count)
                    .sum();
                let total: u64 = rows.iter().map(|r| r.count).sum();
                let budget = (max_suppression * total as f64 + 1e-9).floor() as u64;
                assert!(
                    suppressed <= budget && suppressed < total,
                    "{context}: {suppressed} of {total} rows suppressed, budget {budget}"
                );
                // the leaves each class's cell of QI j covers (a bit per leaf)
                let covered = |cell: Cell| -> u8 {
                    match cell {
                        Cell::Top => u8::MAX,
                        Cell::Node { level, code } => (0..8)
                            .filter(|&v| levels[level as usize][v] == code)
                            .fold(0, |bits, v| bits | 1 << v),
                        Cell::Interval { .. } => panic!("{context}: an interval of a code QI"),
                        Cell::Set { .. } => panic!("{context}: a set of a code QI"),
                    }
                };
                for (leaf, &c) in release.class_of.iter().enumerate() {
                    if c != SUPPRESSED {
                        for (j, &cell) in release.cells_of(c as usize).iter().enumerate() {
                            let value = freq.leaf_codes()[j][leaf];
                            assert!(
                                covered(cell) & (1 << value) != 0,
                                "{context}: class {c} does not cover leaf {value} of QI {j}"
                            );
                        }
                    }
                }
                let counts = class_counts(&release.class_of, release.classes());
                for (c, class) in counts.iter().enumerate() {
                    if let Some(why) = disclosure_failure(class, &table, &req) {
                        panic!("{context}: class {c} fails: {why}");
                    }
                }
                // classes with the same labels are one published class
                let mut published: BTreeMap<Vec<u8>, [BTreeMap<Option<u32>, f64>; 2]> =
                    BTreeMap::new();
                for (c, class) in counts.iter().enumerate() {
                    let labels = release
                        .cells_of(c)
                        .iter()
                        .map(|&cell| covered(cell))
                        .collect();
                    let merged = published.entry(labels).or_default();
                    for (merged, class) in merged.iter_mut().zip(class) {
                        for (&v, &n) in class {
                            *merged.entry(v).or_insert(0.0) += n;
                        }
                    }
                }
                for (labels, class) in &published {
                    if let Some(why) = disclosure_failure(class, &table, &req) {
                        panic!("{context}: published class {labels:?} fails: {why}");
                    }
                }
            }
        }
    }
    // 6 seeds × 7 policies × 3 algorithms: at the time of writing every one is released
    assert!(releases >= 120, "only {releases} releases");
    for (case, n) in binding.iter().enumerate() {
        assert!(*n >= 6, "{}: binds only {n} times", cases[case].0);
    }
}

/// The recoding's two combination indexes — label codes in the table itself, or classes and
/// their label records — give every row the same labels and suppressed flag (releases of
/// k = 2 and 4, outliers trimmed within 30 %).
#[tokio::test]
async fn both_combination_indexes_recode_alike() {
    use crate::local_recode::{
        CLASS_KEY_FIELD, LocalRecodeFunction, SUPPRESSED_FIELD, label_field_name,
    };
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::UInt32Type;
    let mut rng = Rng(41);
    for k in [2, 4] {
        let rows = random_rows(&mut rng, 300);
        let ctx = session(&rows);
        let qis = hierarchies(&[5.0, 10.0, 20.0]);
        let freq = FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap();
        let mut req = k_only(k, 0.3);
        req.sensitive.clear();
        let release = mondrian(&freq, &req).unwrap();
        let recoding = Arc::new(LocalRecoding::new(&freq, &release).unwrap());
        let b = batch(&rows);
        let columns: Vec<ArrayRef> = b.columns()[..3].to_vec();
        let types: Vec<DataType> = columns.iter().map(|c| c.data_type().clone()).collect();
        let by_labels = LocalRecodeFunction::try_new(Arc::clone(&recoding), &types).unwrap();
        let by_class = LocalRecodeFunction::try_new_by_class(recoding, &types).unwrap();
        assert!(by_labels.indexes_labels() && !by_class.indexes_labels());
        let (labels, suppressed) = by_labels.labelled(&columns, rows.len()).unwrap();
        let (labels_by_class, suppressed_by_class) =
            by_class.labelled(&columns, rows.len()).unwrap();
        assert_eq!(labels, labels_by_class, "k = {k}");
        assert_eq!(suppressed, suppressed_by_class, "k = {k}");
        // publishing's path: class keys only, labels made from them later, must give every
        // row the labels and suppressed flag the labelling function gives it
        for lookup in [&by_labels, &by_class] {
            let labelled = lookup.recoded(&columns, rows.len()).unwrap();
            let keyed = lookup.class_keys().recoded(&columns, rows.len()).unwrap();
            assert_eq!(keyed.num_columns(), 2, "suppressed flag and class key only");
            let keys = keyed.column_by_name(CLASS_KEY_FIELD).unwrap();
            assert_eq!(keys, labelled.column_by_name(CLASS_KEY_FIELD).unwrap());
            let suppressed_field = keyed.column_by_name(SUPPRESSED_FIELD).unwrap();
            assert_eq!(
                suppressed_field,
                labelled.column_by_name(SUPPRESSED_FIELD).unwrap()
            );
            let made = lookup
                .labels_of_keys(keys.as_primitive::<UInt32Type>().values())
                .unwrap();
            for (q, made) in made.iter().enumerate() {
                let given = labelled.column_by_name(&label_field_name(q)).unwrap();
                // compared as strings: the views may differ, the labels may not
                let as_text = |a: &ArrayRef| -> Vec<Option<String>> {
                    a.as_string_view()
                        .iter()
                        .map(|v| v.map(String::from))
                        .collect()
                };
                assert_eq!(as_text(made), as_text(given), "k = {k}, QI {q}");
            }
        }
        // on a cluster each function travels as itself, the class-key one too: the
        // Ballista crate's `a_local_recoding_survives_the_cluster_codec`
    }
}

/// Mondrian's progress: the last report is every row placed, of the table's rows, and the
/// reports never go back; the release is the one without progress.
#[test]
fn mondrian_reports_the_rows_placed() {
    use super::mondrian::mondrian_with_progress;
    let freq = random_code_freq(3);
    let req = k_only(4, 0.0);
    let mut reports = Vec::new();
    let release = mondrian_with_progress(&freq, &req, true, &mut |done, total| {
        reports.push((done, total))
    })
    .unwrap();
    assert_eq!(release, mondrian(&freq, &req).unwrap());
    let n = freq.rows() as usize;
    assert_eq!(reports.last(), Some(&(n, n)));
    assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0), "{reports:?}");
    assert!(
        reports
            .iter()
            .all(|&(done, total)| done <= total && total == n)
    );
}
