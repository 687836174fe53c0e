//! Value-free labels (issue 32): on random tables, no published end of an ordered label is a
//! value of its class, checked by brute force over the raw rows for Mondrian, KACA and IAB;
//! and small releases by hand.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Array, Float64Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Date32Type, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::mondrian::{MondrianOptions, mondrian_with};
use super::{LocalAlgorithm, LocalLabels, LocalOptions, LocalRelease, anonymize, evaluate};
use crate::generalize::{DateUnit, Hierarchy, TOP_LABEL};
use crate::policy::PrivacyRequirements;
use crate::rng::SplitMix64 as Rng;
use crate::search::FrequencySet;

/// One raw row: birth date (days since 1970), age, weight (kg, one decimal), a score of a
/// value tree, sex (not ordered).
#[derive(Debug, Clone)]
struct Row {
    born: Option<i32>,
    age: Option<i64>,
    weight: f64,
    score: i64,
    sex: &'static str,
}

/// The ordered quasi-identifiers, in column order.
const ORDERED: [&str; 4] = ["born", "age", "weight", "score"];

fn batch(rows: &[Row]) -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("born", DataType::Date32, true),
        Field::new("age", DataType::Int64, true),
        Field::new("weight", DataType::Float64, false),
        Field::new("score", DataType::Int64, false),
        Field::new("sex", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Date32Array::from_iter(rows.iter().map(|r| r.born))),
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.age))),
        Arc::new(Float64Array::from_iter_values(
            rows.iter().map(|r| r.weight),
        )),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.score))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.sex))),
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

/// born: day (skipped on dates), month, year; age: 5, 10, 20 years; weight: 5 and 10 kg (a
/// float: a class starting on a bucket's bound takes the bucket below); score 0 … 29: a
/// value tree of fives and tens; sex F/M.
fn hierarchies() -> Vec<(String, Arc<Hierarchy>)> {
    let score_rows: Vec<Vec<String>> = (0..30)
        .map(|v| {
            vec![
                v.to_string(),
                format!("five {}", v / 5),
                format!("ten {}", v / 10),
                "*".to_string(),
            ]
        })
        .collect();
    vec![
        (
            "born".into(),
            Arc::new(
                Hierarchy::date("born", &[DateUnit::Day, DateUnit::Month, DateUnit::Year]).unwrap(),
            ),
        ),
        (
            "age".into(),
            Arc::new(Hierarchy::interval_widths("age", &[5.0, 10.0, 20.0]).unwrap()),
        ),
        (
            "weight".into(),
            Arc::new(Hierarchy::interval_widths("weight", &[5.0, 10.0]).unwrap()),
        ),
        (
            "score".into(),
            Arc::new(Hierarchy::tree_from_rows("score", &score_rows).unwrap()),
        ),
        (
            "sex".into(),
            Arc::new(Hierarchy::tree_from_rows("sex", &[vec!["F", "*"], vec!["M", "*"]]).unwrap()),
        ),
    ]
}

fn random_rows(rng: &mut Rng, n: usize) -> Vec<Row> {
    (0..n)
        .map(|_| Row {
            // ten years of birth dates; month starts are common enough to meet a grid bound
            born: (rng.below(20) != 0).then(|| 3650 + rng.below(3650) as i32),
            age: (rng.below(25) != 0).then(|| 18 + rng.below(70) as i64),
            // whole kilos half the time, so values sit on the 5 kg bounds
            weight: if rng.below(2) == 0 {
                40.0 + rng.below(60) as f64
            } else {
                40.0 + rng.below(600) as f64 / 10.0
            },
            score: rng.below(30) as i64,
            sex: ["F", "M"][rng.below(2) as usize],
        })
        .collect()
}

/// Row `row`'s value of ordered QI `q` as a number (days for dates), and as an Arrow value.
fn value(row: &Row, q: usize) -> (Option<f64>, ArrayRef) {
    match q {
        0 => (
            row.born.map(f64::from),
            Arc::new(Date32Array::from(vec![row.born])),
        ),
        1 => (
            row.age.map(|a| a as f64),
            Arc::new(Int64Array::from(vec![row.age])),
        ),
        2 => (
            Some(row.weight),
            Arc::new(Float64Array::from(vec![row.weight])),
        ),
        _ => (
            Some(row.score as f64),
            Arc::new(Int64Array::from(vec![row.score])),
        ),
    }
}

/// An end of an interval label of QI `q`, read independently of the crate's reader: `-inf`,
/// `inf`, a date through Arrow's parser, else a number.
fn end(text: &str, q: usize) -> f64 {
    match text {
        "-inf" => f64::NEG_INFINITY,
        "inf" => f64::INFINITY,
        _ if q == 0 => {
            let t: ArrayRef = Arc::new(StringArray::from(vec![text]));
            let d = cast(&t, &DataType::Date32).unwrap();
            let d = d.as_primitive::<Date32Type>();
            assert!(d.is_valid(0), "not a date: {text}");
            f64::from(d.value(0))
        }
        _ => text
            .parse()
            .unwrap_or_else(|_| panic!("not a number: {text}")),
    }
}

/// What the checks saw: interval labels, hierarchy nodes of several values, and labels
/// with an end that is a member's value.
#[derive(Debug, Default)]
struct Seen {
    intervals: usize,
    nodes: usize,
    ends_on_members: usize,
}

/// The check on one published class (rows with one label tuple) and ordered QI `q`:
/// with two or more distinct values, an interval label `(a, b)` or `[a, b]` holds every value
/// and **no end equals a value of the class** (counted in `seen.ends_on_members`: a failure
/// of value-free labels); any other label is `*` or the hierarchy's own label of every member
/// at a level above the raw value (its bounds are the hierarchy's, fixed before the data are
/// seen). A class of one value may publish the value itself. NULLs: only NULL publishes NULL,
/// only `*` covers NULL with values.
fn check_class(
    label: &Option<String>,
    members: &[&Row],
    q: usize,
    hierarchy: &Hierarchy,
    seen: &mut Seen,
    context: &str,
) {
    let values: Vec<Option<f64>> = members.iter().map(|r| value(r, q).0).collect();
    let mut distinct: Vec<f64> = values.iter().flatten().copied().collect();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    let has_null = values.iter().any(Option::is_none);
    let Some(label) = label else {
        assert!(distinct.is_empty(), "{context}: NULL for values");
        return;
    };
    if label == TOP_LABEL {
        return;
    }
    assert!(!has_null, "{context}: {label} for NULL");
    if let Some(interval) = crate::generalize::parse_interval_label(label) {
        seen.intervals += 1;
        let (a, b) = (end(interval.lo, q), end(interval.hi, q));
        for &x in &distinct {
            let inside = if interval.open {
                a < x && x < b
            } else {
                a <= x && x <= b
            };
            assert!(inside, "{context}: {label} does not hold a member");
        }
        if distinct.len() > 1 && distinct.iter().any(|&x| x == a || x == b) {
            seen.ends_on_members += 1;
        }
        return;
    }
    // a hierarchy label: the same for every member at one level, above the value itself
    // when the class holds several values
    let lowest = if distinct.len() > 1 { 1 } else { 0 };
    let at = |row: &Row, level: usize| -> Option<String> {
        let labels = cast(
            &hierarchy.generalize(&value(row, q).1, level).unwrap(),
            &DataType::Utf8,
        )
        .unwrap();
        let s = labels.as_string::<i32>();
        s.is_valid(0).then(|| s.value(0).to_string())
    };
    let level = (lowest..hierarchy.top_level()).find(|&level| {
        members
            .iter()
            .all(|r| at(r, level).as_deref() == Some(label))
    });
    assert!(
        level.is_some(),
        "{context}: {label} is no hierarchy label of every member"
    );
    if distinct.len() > 1 {
        seen.nodes += 1;
    }
}

/// Every published class's ordered labels through [`check_class`].
async fn check_release(
    rows: &[Row],
    qis: &[(String, Arc<Hierarchy>)],
    freq: &FrequencySet,
    release: &LocalRelease,
    req: &PrivacyRequirements,
    seen: &mut Seen,
    context: &str,
) {
    let ctx = session(rows);
    let labels = super::tests::published_labels(&ctx, qis, freq, release, req, &[]).await;
    // the kept rows, in input order: those of combinations the release did not suppress
    let leaf = leaf_class_of_rows(freq, rows);
    let kept: Vec<&Row> = rows
        .iter()
        .zip(&leaf)
        .filter(|(_, c)| release.class_of[**c] != super::SUPPRESSED)
        .map(|(r, _)| r)
        .collect();
    assert_eq!(kept.len(), labels.len(), "{context}: kept rows");
    let mut classes: BTreeMap<&Vec<Option<String>>, Vec<&Row>> = BTreeMap::new();
    for (row, l) in kept.into_iter().zip(&labels) {
        classes.entry(l).or_default().push(row);
    }
    for (tuple, members) in &classes {
        assert!(
            members.len() as u64 >= req.k,
            "{context}: {tuple:?} below k"
        );
        for (q, name) in ORDERED.iter().enumerate() {
            check_class(
                &tuple[q],
                members,
                q,
                &qis[q].1,
                seen,
                &format!("{context}, {name}"),
            );
        }
    }
}

/// The leaf class (raw combination) of each row, matched on the frequency set's raw values
/// as text.
fn leaf_class_of_rows(freq: &FrequencySet, rows: &[Row]) -> Vec<usize> {
    let d = freq.qis().len();
    let texts: Vec<ArrayRef> = (0..d)
        .map(|q| cast(freq.qis()[q].leaf_values().unwrap(), &DataType::Utf8).unwrap())
        .collect();
    let text = |q: usize, leaf: u32| -> Option<String> {
        let s = texts[q].as_string::<i32>();
        s.is_valid(leaf as usize)
            .then(|| s.value(leaf as usize).to_string())
    };
    let mut index = BTreeMap::new();
    for c in 0..freq.leaf_classes() {
        let key: Vec<Option<String>> = (0..d).map(|q| text(q, freq.leaf_codes()[q][c])).collect();
        index.insert(key, c);
    }
    let one = batch(rows);
    let columns: Vec<ArrayRef> = (0..d)
        .map(|q| cast(one.column(q), &DataType::Utf8).unwrap())
        .collect();
    (0..rows.len())
        .map(|r| {
            let key: Vec<Option<String>> = columns
                .iter()
                .map(|c| {
                    let s = c.as_string::<i32>();
                    s.is_valid(r).then(|| s.value(r).to_string())
                })
                .collect();
            index[&key]
        })
        .collect()
}

fn k_only(k: u64, max_suppression: f64) -> PrivacyRequirements {
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression,
        sensitive: vec![],
    }
}

/// The required check: random tables (birth dates, integer ages, float weights, a
/// numeric value tree), Mondrian (both threshold rules), KACA and IAB at k = 2 … 5, with and
/// without suppression. No end of a published ordered label equals a value of its class's
/// rows unless the class holds one value, every label holds its class's values, and the
/// other labels are the hierarchy's own. The same check finds member values at the ends of
/// the exact `[min, max]` labels (it can fail).
#[tokio::test]
async fn no_label_end_is_a_member_value() {
    let qis = hierarchies();
    let mut rng = Rng(32);
    let mut seen = Seen::default();
    let mut exact = Seen::default();
    for case in 0..12 {
        let n = 150 + rng.below(250) as usize;
        let rows = random_rows(&mut rng, n);
        let k = 2 + rng.below(4);
        let req = k_only(k, [0.0, 0.05][case % 2]);
        let ctx = session(&rows);
        let mut freq = FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap();
        let context = format!("case {case}: n = {n}, k = {k}");
        let mondrian_options = [MondrianOptions::default(), MondrianOptions::paper()][case % 2];
        let release = mondrian_with(&freq, &req, mondrian_options).unwrap();
        let ctx_m = format!("{context}, mondrian");
        check_release(&rows, &qis, &freq, &release, &req, &mut seen, &ctx_m).await;
        for algorithm in [LocalAlgorithm::Kaca, LocalAlgorithm::Iab] {
            let options = LocalOptions {
                seed: case as u64,
                iab_expansions: 300,
                ..LocalOptions::default()
            };
            let context = format!("{context}, {algorithm}");
            match anonymize(&freq, &req, algorithm, options) {
                Ok((release, _)) => {
                    check_release(&rows, &qis, &freq, &release, &req, &mut seen, &context).await
                }
                Err(e) => assert!(e.to_string().contains("no release"), "{context}: {e}"),
            }
        }
        freq.set_local_labels(LocalLabels::Exact);
        let release = mondrian_with(&freq, &req, mondrian_options).unwrap();
        let context = format!("{context}, mondrian exact");
        check_release(&rows, &qis, &freq, &release, &req, &mut exact, &context).await;
    }
    assert_eq!(seen.ends_on_members, 0, "{seen:?}");
    assert!(seen.intervals >= 100 && seen.nodes >= 100, "{seen:?}");
    // [min, max]: both ends are members' values whenever the class holds two or more
    assert!(exact.ends_on_members >= 100, "{exact:?}");
    assert_eq!(exact.ends_on_members, exact.intervals, "{exact:?}");
}

/// Birth dates, k = 3, by hand (the trial's case). Five dates: 1980-03-14, 1980-03-20,
/// 1980-05-05, 1980-07-02, 1980-07-30, one class (no cut leaves 3 on both sides).
/// - value-free, month grid: March … July, published `(1980-02-29, 1980-08-01)`; |D| = 5
///   distinct dates, all inside: Loss (5 − 1)/(5 − 1) = 1;
/// - exact: `[1980-03-14, 1980-07-30]`, two members' birth dates.
///
/// With k = 2 the dates split after 1980-03-20 (2 | 3, the median) by the paper's rule:
/// March (`1980-03`, a month node: 2 dates of 5, (2 − 1)/4 = 0.25) and May … July
/// (`(1980-04-30, 1980-08-01)`, 3 dates, (3 − 1)/4 = 0.5); Loss (2·0.25 + 3·0.5)/5 = 0.4.
#[tokio::test]
async fn birth_dates_by_hand() {
    let dates = [
        "1980-03-14",
        "1980-03-20",
        "1980-05-05",
        "1980-07-02",
        "1980-07-30",
    ];
    let rows: Vec<Row> = dates
        .iter()
        .map(|d| Row {
            born: Some(end(d, 0) as i32),
            age: Some(40),
            weight: 70.0,
            score: 1,
            sex: "F",
        })
        .collect();
    let qis: Vec<(String, Arc<Hierarchy>)> = hierarchies().into_iter().take(1).collect();
    let ctx = session(&rows);
    let mut freq = FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap();
    let k3 = k_only(3, 0.0);
    let release = mondrian_with(&freq, &k3, MondrianOptions::paper()).unwrap();
    assert_eq!(
        born_labels(&ctx, &qis, &freq, &release, &k3).await,
        vec!["(1980-02-29, 1980-08-01)"; 5]
    );
    assert!((evaluate(&freq, &k3, &release).unwrap().loss - 1.0).abs() < 1e-12);
    let k2 = k_only(2, 0.0);
    let release = mondrian_with(&freq, &k2, MondrianOptions::paper()).unwrap();
    let mut want = vec!["1980-03"; 2];
    want.extend(vec!["(1980-04-30, 1980-08-01)"; 3]);
    assert_eq!(born_labels(&ctx, &qis, &freq, &release, &k2).await, want);
    assert!((evaluate(&freq, &k2, &release).unwrap().loss - 0.4).abs() < 1e-12);
    freq.set_local_labels(LocalLabels::Exact);
    let release = mondrian_with(&freq, &k3, MondrianOptions::paper()).unwrap();
    assert_eq!(
        born_labels(&ctx, &qis, &freq, &release, &k3).await,
        vec!["[1980-03-14, 1980-07-30]"; 5]
    );
}

/// The first QI's label of every kept row.
async fn born_labels(
    ctx: &SessionContext,
    qis: &[(String, Arc<Hierarchy>)],
    freq: &FrequencySet,
    release: &LocalRelease,
    req: &PrivacyRequirements,
) -> Vec<String> {
    super::tests::published_labels(ctx, qis, freq, release, req, &[])
        .await
        .into_iter()
        .map(|mut l| l.remove(0).unwrap())
        .collect()
}
