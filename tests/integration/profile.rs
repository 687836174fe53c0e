//! `anon profile` and `datafusion_anonymity_engine::profile`: hand-checked figures on small tables
//! (the worked example of docs/definitions.md, the IAB leakage example, the WHD values 0.6 /
//! 0.3431 / 1, a population example, a utility example), a comparison with the SQL functions
//! and a brute-force reference on random data, and the command line: JSON keys, HTML
//! self-containment, bad input.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::process::Command;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use datafusion::arrow::datatypes::DataType;
use datafusion::prelude::SessionContext;
use datafusion_anonymity::generalize::Hierarchy;
use datafusion_anonymity_engine::profile::{Profile, ProfileOptions, ProfileProgress, profile};

use crate::tables::{batch, ints, strings};

const TOL: f64 = 1e-9;

fn close(actual: f64, expected: f64, tol: f64, what: &str) {
    assert!(
        (actual - expected).abs() <= tol,
        "{what}: {actual} but expected {expected}"
    );
}

fn opt_strings(values: &[Option<&str>]) -> ArrayRef {
    Arc::new(StringArray::from(values.to_vec()))
}

fn context(tables: Vec<(&str, RecordBatch)>) -> SessionContext {
    let ctx = SessionContext::new();
    datafusion_anonymity_engine::register(&ctx).unwrap();
    for (name, batch) in tables {
        ctx.register_batch(name, batch).unwrap();
    }
    ctx
}

fn options(table: &str, qis: &[&str], sensitive: &[&str]) -> ProfileOptions {
    let mut options = ProfileOptions::new(table, qis.iter().map(|s| s.to_string()).collect());
    options.sensitive = sensitive.iter().map(|s| s.to_string()).collect();
    options
}

async fn run(ctx: &SessionContext, options: &ProfileOptions) -> Profile {
    profile(ctx, options).await.unwrap()
}

/// The 9-row table of Li et al. 2007 (docs/definitions.md), generalized into three 3-anonymous
/// classes: zip 476** / 4790*, age 2* / 3* / >=40.
fn worked_example() -> RecordBatch {
    batch(vec![
        (
            "zip",
            strings(&[
                "476**", "476**", "476**", "4790*", "4790*", "4790*", "476**", "476**", "476**",
            ]),
        ),
        (
            "age",
            strings(&["2*", "2*", "2*", ">=40", ">=40", ">=40", "3*", "3*", "3*"]),
        ),
        ("salary", ints(&[3, 4, 5, 6, 11, 8, 7, 9, 10])),
        (
            "disease",
            strings(&[
                "gastric ulcer",
                "gastritis",
                "stomach cancer",
                "gastritis",
                "flu",
                "bronchitis",
                "bronchitis",
                "pneumonia",
                "stomach cancer",
            ]),
        ),
    ])
}

#[tokio::test]
async fn worked_example_of_the_definitions() {
    let ctx = context(vec![("patients", worked_example())]);
    let p = run(
        &ctx,
        &options("patients", &["zip", "age"], &["disease", "salary"]),
    )
    .await;
    assert_eq!(p.rows, 9);
    let a = &p.anonymity;
    assert_eq!((a.classes, a.k, a.sample_uniques), (3, 3, 0));
    // class sizes: three classes of 3 rows
    let sizes: Vec<(u64, u64)> = a.class_sizes.iter().map(|b| (b.classes, b.rows)).collect();
    assert_eq!(sizes, vec![(0, 0), (0, 0), (3, 9), (0, 0), (0, 0)]);

    let d = &a.sensitive[0];
    assert_eq!(d.attribute, "disease");
    assert!(!d.ordered);
    assert_eq!(d.distinct_values, 6);
    // three distinct diseases per class, once each: l = 3, exp(ln 3) = 3, recursive 3
    assert_eq!((d.l_distinct, d.l_recursive), (3, 3));
    close(d.l_entropy, 3.0, 1e-12, "entropy l");
    close(d.t_equal, 4.0 / 9.0, 1e-12, "t");
    assert_eq!(d.t_ordered, None);
    // α: 1/3. β: a value of p_T = 1/9 at 1/3 in its class: (1/3 − 1/9)/(1/9) = 2
    close(d.alpha, 1.0 / 3.0, 1e-12, "alpha");
    close(d.beta, 2.0, 1e-12, "beta");
    // caps −ln(1/9) = 2.197 > 2 and −ln(2/9) = 1.504 > 0.5: enhanced β = 2
    assert_eq!(d.beta_enhanced_classes_over_cap, 0);
    close(d.beta_enhanced.unwrap(), 2.0, 1e-12, "enhanced beta");
    // δ: |ln((1/3)/(1/9))| = ln 3; every class lacks 3 of the 6 diseases
    close(d.delta, 3f64.ln(), 1e-12, "delta");
    assert_eq!(d.delta_classes_missing_values, 3);
    assert_eq!(d.tuple_diversity, None);

    let s = &a.sensitive[1];
    assert!(s.ordered);
    // ordered t: 0.375 (class {3,4,5}), 0.2361, 0.1667 → max 0.375
    close(s.t_ordered.unwrap(), 0.375, 1e-12, "t ordered");
    // tuple diversity: ranges 5-3 = 2, 10-7 = 3, 11-6 = 5 of the table's 11-3 = 8 → 0.25
    close(s.tuple_diversity.unwrap(), 0.25, 1e-12, "tuple diversity");
    // each salary once: p_T = 1/9, p_E = 1/3
    close(s.beta, 2.0, 1e-12, "beta salary");
    assert_eq!(s.delta_classes_missing_values, 3);

    // risk: 1/3 everywhere; 3 classes / 9 rows
    let r = &p.risk;
    close(r.prosecutor_max, 1.0 / 3.0, 1e-12, "max risk");
    close(r.prosecutor_average, 1.0 / 3.0, 1e-12, "average risk");
    close(r.marketer, 1.0 / 3.0, 1e-12, "marketer");
    let over: Vec<u64> = r.thresholds.iter().map(|t| t.rows).collect();
    assert_eq!(over, vec![9, 9, 9]);
    let distribution: Vec<u64> = r.distribution.iter().map(|b| b.rows).collect();
    // 1/3 lies in (0.2, 0.5]
    assert_eq!(distribution, vec![0, 9, 0, 0, 0]);

    // leakage: the classes 3 × 1/6 = 0.5 (docs/definitions.md); age: three values of 3 rows,
    // log2 3 / log2 9 = 0.5; zip: 6 and 3 rows, H = 0.9183 bits / 3.1699 = 0.2897
    close(p.leakage.quasi_identifiers, 0.5, 1e-12, "QI leakage");
    let ranking: Vec<(&str, f64)> = p
        .leakage
        .attributes
        .iter()
        .map(|l| (l.attribute.as_str(), l.leakage))
        .collect();
    assert_eq!(ranking.len(), 2, "sensitive attributes are not ranked");
    assert_eq!(ranking[0].0, "age");
    close(ranking[0].1, 0.5, 1e-12, "age leakage");
    assert_eq!(ranking[1].0, "zip");
    let h = -(2.0 / 3.0 * (2f64 / 3.0).log2() + 1.0 / 3.0 * (1f64 / 3.0).log2());
    close(ranking[1].1, h / 9f64.log2(), 1e-12, "zip leakage");
    assert!(p.utility.is_none() && p.risky_classes.is_none());
}

#[tokio::test]
async fn iab_leakage_example() {
    // 60 people, 27 F and 33 M: learning Sex gives ΔS/S0 = 0.168 (docs/definitions.md);
    // a unique id 1
    let sex: Vec<&str> = (0..60).map(|i| if i < 27 { "F" } else { "M" }).collect();
    let id: Vec<i64> = (0..60).collect();
    let ctx = context(vec![(
        "people",
        batch(vec![("sex", strings(&sex)), ("id", ints(&id))]),
    )]);
    let p = run(&ctx, &options("people", &["sex"], &[])).await;
    let ranking = &p.leakage.attributes;
    assert_eq!(ranking[0].attribute, "id");
    close(ranking[0].leakage, 1.0, 1e-12, "id");
    assert_eq!(ranking[1].attribute, "sex");
    assert!(ranking[1].quasi_identifier && !ranking[0].quasi_identifier);
    close(ranking[1].leakage, 0.168, 5e-4, "sex");
    assert_eq!(ranking[1].distinct_values, 2);
    // the classes are the sex values
    close(
        p.leakage.quasi_identifiers,
        ranking[1].leakage,
        1e-12,
        "classes",
    );
    // no sensitive attribute: no such figures
    assert!(p.anonymity.sensitive.is_empty());
    assert_eq!(p.anonymity.k, 27);
}

#[tokio::test]
async fn person_id_counts_persons_and_raises_risk() {
    // class A: 3 rows of 2 persons (one repeated); class B: 2 rows, one with a NULL person
    let ctx = context(vec![(
        "visits",
        batch(vec![
            ("zip", strings(&["A", "A", "A", "B", "B"])),
            (
                "pid",
                Arc::new(Int64Array::from(vec![
                    Some(1),
                    Some(1),
                    Some(2),
                    Some(3),
                    None,
                ])),
            ),
        ]),
    )]);
    let mut o = options("visits", &["zip"], &[]);
    o.person_id = Some("pid".into());
    let p = run(&ctx, &o).await;
    // persons: A = 2; B = 1 (3 and a NULL, who may be person 3)
    assert_eq!(p.anonymity.k, 2);
    assert_eq!(p.anonymity.k_persons, Some(1));
    // risk from persons: 1/2 for A's 3 rows, 1 for B's 2 rows; average (3/2 + 2)/5 = 0.7
    close(p.risk.prosecutor_max, 1.0, 1e-12, "max");
    close(p.risk.prosecutor_average, 0.7, 1e-12, "average");
    // the person id is a direct identifier, not ranked
    assert!(p.leakage.attributes.iter().all(|l| l.attribute != "pid"));
}

#[tokio::test]
async fn population_k_map_journalist_and_marketer_risk() {
    // sample classes (zip, sex): A/F ×2, A/M ×1, B/F ×1 (n = 4)
    let sample = batch(vec![
        (
            "zip",
            Arc::new(Int32Array::from(vec![1, 1, 1, 2])) as ArrayRef,
        ),
        ("sex", strings(&["F", "F", "M", "F"])),
    ]);
    // population: A/F ×10, A/M ×4, B/F ×2, B/M ×5, C/F ×7 (28 rows; zip as Int64 elsewhere)
    let mut zips = Vec::new();
    let mut sexes = Vec::new();
    for (zip, sex, count) in [
        (1, "F", 10),
        (1, "M", 4),
        (2, "F", 2),
        (2, "M", 5),
        (3, "F", 7),
    ] {
        for _ in 0..count {
            zips.push(zip as i64);
            sexes.push(sex);
        }
    }
    let population = batch(vec![("zip", ints(&zips)), ("sex", strings(&sexes))]);
    let ctx = context(vec![("sample", sample), ("population", population)]);
    let mut o = options("sample", &["zip", "sex"], &[]);
    o.population = Some("population".into());
    let p = run(&ctx, &o).await;
    let pop = p.risk.population.as_ref().unwrap();
    assert_eq!(pop.rows, 28);
    // F_E: A/F 10, A/M 4, B/F 2 → k-map 2, journalist 1/2
    assert_eq!(pop.k_map, 2);
    close(pop.journalist, 0.5, 1e-12, "journalist");
    // marketer (1/n) Σ |E|/F_E = (2/10 + 1/4 + 1/2)/4 = 0.2375
    close(pop.marketer, 0.2375, 1e-12, "marketer");
    assert_eq!(pop.classes_not_covered, 0);
    // journalist risk per row: 0.1 (A/F ×2), 0.25 (A/M), 0.5 (B/F) → > 0.2: 2, > 0.1: 2, > 0.05: 4
    let over: Vec<u64> = pop.thresholds.iter().map(|t| t.rows).collect();
    assert_eq!(over, vec![2, 2, 4]);
    // against the sample itself: k = 1 (A/M, B/F)
    assert_eq!(p.anonymity.k, 1);
    close(
        p.risk.prosecutor_average,
        3.0 / 4.0,
        1e-12,
        "sample average risk",
    );
}

#[tokio::test]
async fn population_not_covering_the_sample_is_reported() {
    let sample = batch(vec![("zip", strings(&["A", "A", "B"]))]);
    // A once (fewer than the sample's 2), B absent
    let population = batch(vec![("zip", strings(&["A", "C"]))]);
    let ctx = context(vec![("sample", sample), ("population", population)]);
    let mut o = options("sample", &["zip"], &[]);
    o.population = Some("population".into());
    let p = run(&ctx, &o).await;
    let pop = p.risk.population.unwrap();
    assert_eq!(pop.k_map, 0);
    assert_eq!(pop.classes_not_covered, 2);
    // never below the worst case: F_E = 1 and 0 both give risk 1
    close(pop.journalist, 1.0, 1e-12, "journalist");
    close(pop.marketer, 1.0, 1e-12, "marketer");
}

/// Birth date D/M/Y → M/Y → Y → 10Y → C/T/G/P → * (h = 6) and gender M/F → * (h = 2).
fn birth_and_gender_hierarchies() -> HashMap<String, Arc<Hierarchy>> {
    let born = Hierarchy::tree_from_rows(
        "born",
        &[
            vec!["1990-05-17", "1990-05", "1990", "1990s", "20C", "*"],
            vec!["1991-02-01", "1991-02", "1991", "1990s", "20C", "*"],
            vec!["2003-07-04", "2003-07", "2003", "2000s", "21C", "*"],
            vec!["2005-01-01", "2005-01", "2005", "2000s", "21C", "*"],
        ],
    )
    .unwrap();
    let sex = Hierarchy::tree_from_rows("sex", &[vec!["M", "*"], vec!["F", "*"]]).unwrap();
    HashMap::from([
        ("born".to_string(), Arc::new(born)),
        ("sex".to_string(), Arc::new(sex)),
    ])
}

#[tokio::test]
async fn weighted_hierarchical_distance_examples() {
    let original = batch(vec![
        (
            "born",
            strings(&["1990-05-17", "1991-02-01", "2003-07-04", "2005-01-01"]),
        ),
        ("sex", strings(&["M", "F", "F", "M"])),
    ]);
    // every date to its decade (10Y, level 3), every gender to *
    let anonymized = batch(vec![
        ("born", strings(&["1990s", "1990s", "2000s", "2000s"])),
        ("sex", strings(&["*", "*", "*", "*"])),
    ]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["born", "sex"], &[]);
    o.original = Some("orig".into());
    o.by_position = true;
    o.hierarchies = birth_and_gender_hierarchies();
    let u = run(&ctx, &o).await.utility.unwrap();
    let born = &u.attributes[0];
    assert_eq!(born.hierarchy.as_deref(), Some("born"));
    // docs/definitions.md: D/M/Y → 10Y = WHD(6,3) = 3/5 = 0.6 uniform, 0.3431 with β = 1
    close(born.whd_uniform.unwrap(), 0.6, 1e-12, "born uniform");
    close(born.whd_beta1.unwrap(), 0.3431, 5e-5, "born beta1");
    // gender M/F → * = WHD(2,1) = 1
    let sex = &u.attributes[1];
    close(sex.whd_uniform.unwrap(), 1.0, 1e-12, "sex uniform");
    close(sex.whd_beta1.unwrap(), 1.0, 1e-12, "sex beta1");
    // table: mean over the cells of both
    close(u.whd_uniform.unwrap(), 0.8, 1e-12, "uniform");
    close(
        u.whd_beta1.unwrap(),
        (0.78333333333 / 2.28333333333 + 1.0) / 2.0,
        1e-9,
        "beta1",
    );
    // loss: a decade covers 2 of the 4 leaves: (2 − 1)/(4 − 1) = 1/3; * costs 1
    close(born.loss, 1.0 / 3.0, 1e-12, "born loss");
    close(sex.loss, 1.0, 1e-12, "sex loss");
    close(u.loss_metric, 2.0 / 3.0, 1e-12, "loss");
    close(u.modification_rate, 1.0, 1e-12, "modification");
    // every row has sex = *, but born is kept: no row is suppressed
    assert_eq!(u.suppressed_rows, 0);
}

/// A NULL quasi-identifier published as `*` is generalized to the top like any value: its cell
/// costs 1 (docs/definitions.md, Loss), not the 0 of a leaf.
#[tokio::test]
async fn a_null_published_as_the_top_costs_one() {
    let original = batch(vec![(
        "sex",
        Arc::new(StringArray::from(vec![Some("M"), None, Some("F"), None])) as ArrayRef,
    )]);
    // rows 0 and 1 masked to *, row 2 kept, row 3 a NULL kept as NULL
    let anonymized = batch(vec![(
        "sex",
        Arc::new(StringArray::from(vec![
            Some("*"),
            Some("*"),
            Some("F"),
            None,
        ])) as ArrayRef,
    )]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["sex"], &[]);
    o.original = Some("orig".into());
    o.by_position = true;
    o.hierarchies = birth_and_gender_hierarchies();
    o.hierarchies.remove("born");
    let u = run(&ctx, &o).await.utility.unwrap();
    // cells: M → * costs 1, NULL → * costs 1, F kept 0, NULL kept 0: (1 + 1 + 0 + 0)/4
    close(u.attributes[0].loss, 0.5, 1e-12, "sex loss");
}

/// A local release's interval labels, with a hierarchy: ages 30, 32, 34, 40, 41, 50 published
/// as [30, 34] ×3, [40, 41] ×2 and 50. The interval hierarchy ([x, x+10), then *) counts
/// intervals in the column's 6 distinct values: [30, 34] covers 3 → (3 − 1)/(6 − 1) = 0.4,
/// [40, 41] covers 2 → 0.2, 50 is itself → 0. Loss (3·0.4 + 2·0.2)/6 = 4/15. WHD counts
/// levels: both intervals sit inside one level-1 node ([30, 40), [40, 50)), so 1/2 each of
/// height 3 (uniform); 50 costs 0 → 5/12. Modified: 5 of 6 cells.
#[tokio::test]
async fn interval_labels_of_local_recoding() {
    let original = batch(vec![("age", ints(&[30, 32, 34, 40, 41, 50]))]);
    let anonymized = batch(vec![(
        "age",
        strings(&[
            "[30, 34]", "[30, 34]", "[30, 34]", "[40, 41]", "[40, 41]", "50",
        ]),
    )]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["age"], &[]);
    o.original = Some("orig".into());
    o.by_position = true;
    o.hierarchies = HashMap::from([(
        "age".to_string(),
        Arc::new(Hierarchy::interval_widths("age", &[10.0]).unwrap()),
    )]);
    let u = run(&ctx, &o).await.utility.unwrap();
    close(u.attributes[0].loss, 4.0 / 15.0, 1e-12, "loss");
    close(
        u.attributes[0].whd_uniform.unwrap(),
        5.0 / 12.0,
        1e-12,
        "whd",
    );
    close(u.modification_rate, 5.0 / 6.0, 1e-12, "modified");

    // an interval that does not hold its row's value is not a generalization of it
    let wrong = batch(vec![(
        "age",
        strings(&[
            "[30, 34]", "[30, 34]", "[30, 34]", "[40, 41]", "[42, 45]", "50",
        ]),
    )]);
    let original = batch(vec![("age", ints(&[30, 32, 34, 40, 41, 50]))]);
    let ctx = context(vec![("anon", wrong), ("orig", original)]);
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("'age'") && e.contains("hierarchy"), "{e}");
}

/// The value-free labels of the same classes: `(29, 40)` holds 30, 32, 34 (ends 29 and 40 are
/// no member's value) and covers the same 3 of the 6 domain values as `[30, 34]`; `(39, 50)`
/// holds 40 and 41 like `[40, 41]`. Hence the figures of [`interval_labels_of_local_recoding`]:
/// Loss 4/15; WHD from the outermost domain values inside (30 and 34, 40 and 41), each pair
/// in one level-1 node: 5/12. An open interval that does not hold its value is refused.
#[tokio::test]
async fn open_interval_labels_of_local_recoding() {
    let original = batch(vec![("age", ints(&[30, 32, 34, 40, 41, 50]))]);
    let anonymized = batch(vec![(
        "age",
        strings(&[
            "(29, 40)", "(29, 40)", "(29, 40)", "(39, 50)", "(39, 50)", "50",
        ]),
    )]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["age"], &[]);
    o.original = Some("orig".into());
    o.by_position = true;
    o.hierarchies = HashMap::from([(
        "age".to_string(),
        Arc::new(Hierarchy::interval_widths("age", &[10.0]).unwrap()),
    )]);
    let u = run(&ctx, &o).await.utility.unwrap();
    close(u.attributes[0].loss, 4.0 / 15.0, 1e-12, "loss");
    close(
        u.attributes[0].whd_uniform.unwrap(),
        5.0 / 12.0,
        1e-12,
        "whd",
    );
    close(u.modification_rate, 5.0 / 6.0, 1e-12, "modified");

    // 41 is an end of (41, 45), not inside it
    let wrong = batch(vec![(
        "age",
        strings(&[
            "(29, 40)", "(29, 40)", "(29, 40)", "(39, 50)", "(41, 45)", "50",
        ]),
    )]);
    let original = batch(vec![("age", ints(&[30, 32, 34, 40, 41, 50]))]);
    let ctx = context(vec![("anon", wrong), ("orig", original)]);
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("'age'") && e.contains("hierarchy"), "{e}");
}

#[tokio::test]
async fn generalization_outside_the_hierarchy_is_an_error() {
    let original = batch(vec![("sex", strings(&["M", "F"]))]);
    let anonymized = batch(vec![("sex", strings(&["person", "person"]))]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["sex"], &[]);
    o.original = Some("orig".into());
    o.by_position = true;
    o.hierarchies = HashMap::from([(
        "sex".to_string(),
        Arc::new(Hierarchy::tree_from_rows("sex", &[vec!["M", "*"], vec!["F", "*"]]).unwrap()),
    )]);
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("'sex'") && e.contains("hierarchy"), "{e}");
    assert!(!e.contains("person"), "no data value in errors: {e}");
}

/// Original: age 25, 27, 35, 38; zip 13053, 13068, 13053, 13068; disease flu, flu, hiv, flu.
/// Anonymized: age [20, 30) ×2, [30, 40) ×2; zip 130** ×4.
fn utility_example() -> (RecordBatch, RecordBatch) {
    let original = batch(vec![
        ("age", ints(&[25, 27, 35, 38])),
        ("zip", strings(&["13053", "13068", "13053", "13068"])),
        ("disease", strings(&["flu", "flu", "hiv", "flu"])),
    ]);
    let anonymized = batch(vec![
        (
            "age",
            strings(&["[20, 30)", "[20, 30)", "[30, 40)", "[30, 40)"]),
        ),
        ("zip", strings(&["130**", "130**", "130**", "130**"])),
        ("disease", strings(&["flu", "flu", "hiv", "flu"])),
    ]);
    (original, anonymized)
}

#[tokio::test]
async fn utility_hand_example() {
    let (original, anonymized) = utility_example();
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["age", "zip"], &["disease"]);
    o.original = Some("orig".into());
    o.by_position = true;
    let u = run(&ctx, &o).await.utility.unwrap();
    assert_eq!(u.matched_by, "position (checked on disease)");
    // NCP: classes (ncp(age, zip)) (2/13 + 1)/2 and (3/13 + 1)/2, 2 rows each → 31/52
    close(u.ncp, 31.0 / 52.0, 1e-12, "ncp");
    // LM: age [20,30) stands for 25..27: 2/13, [30,40) for 35..38: 3/13 → 5/26;
    // zip 130** stands for both zips: (2 − 1)/(2 − 1) = 1 → (5/26 + 1)/2 = 31/52
    close(u.attributes[0].loss, 5.0 / 26.0, 1e-12, "age loss");
    close(u.attributes[1].loss, 1.0, 1e-12, "zip loss");
    close(u.loss_metric, 31.0 / 52.0, 1e-12, "loss");
    // DM 2² + 2²; AECS 4/(2·2); CM: {hiv, flu} has one row off its majority → 1/4
    close(u.discernibility, 8.0, 1e-12, "dm");
    close(u.aecs.unwrap(), 1.0, 1e-12, "aecs");
    close(u.classification_metric.unwrap(), 0.25, 1e-12, "cm");
    close(u.modification_rate, 1.0, 1e-12, "modified");
    assert_eq!(u.whd_uniform, None);
    // monotone entropy loss: age cells Pr(S) = 1/2, H = 1 bit → 0.5; zip Pr(S) = 1, H = 1 → 1
    close(u.attributes[0].monotone_entropy_loss, 0.5, 1e-12, "me age");
    close(u.monotone_entropy_loss, 0.75, 1e-12, "me");
    // MI loss: −log2(1/2) for every age cell, −log2(2/4) for every zip cell
    close(u.mutual_information_loss, 1.0, 1e-12, "mi");
    // PMI, age: [20,30) rows (flu): log2(1/(3/4)) each; [30,40): hiv log2((1/2)/(1/4)) = 1,
    // flu log2((1/2)/(3/4)); zip stands for everything: 0. Mean over 4 rows, then attributes.
    let age = (2.0 * (4f64 / 3.0).log2() + 1.0 + (2f64 / 3.0).log2()) / 4.0;
    close(
        u.attributes[0].private_mutual_information_utility.unwrap(),
        age,
        1e-12,
        "pmi age",
    );
    close(
        u.private_mutual_information_utility.unwrap(),
        age / 2.0,
        1e-12,
        "pmi",
    );
    assert_eq!(u.query_accuracy.queries, 1000);
}

#[tokio::test]
async fn utility_of_an_unchanged_table_is_perfect() {
    let (original, _) = utility_example();
    let ctx = context(vec![("a", original.clone()), ("b", original)]);
    let mut o = options("a", &["age", "zip"], &["disease"]);
    o.original = Some("b".into());
    o.by_position = true;
    let u = run(&ctx, &o).await.utility.unwrap();
    for (value, what) in [
        (u.ncp, "ncp"),
        (u.loss_metric, "loss"),
        (u.modification_rate, "modified"),
        (u.monotone_entropy_loss, "me"),
        (u.mutual_information_loss, "mi"),
        (u.query_accuracy.mean_relative_error, "query error"),
    ] {
        close(value, 0.0, TOL, what);
    }
}

#[tokio::test]
async fn query_accuracy_uniform_spread() {
    // 10 distinct ages once each, all generalized to *: a range of L values truly holds L rows
    // and is estimated at 10 · L/10 — exact for every query
    let ages: Vec<i64> = (1..=10).collect();
    let original = batch(vec![("age", ints(&ages))]);
    let anonymized = batch(vec![("age", strings(&["*"; 10]))]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let mut o = options("anon", &["age"], &[]);
    o.original = Some("orig".into());
    o.by_position = true;
    let u = run(&ctx, &o).await.utility.unwrap();
    close(u.query_accuracy.mean_relative_error, 0.0, 1e-12, "uniform");
    // all rows suppressed: DM = n·n, no AECS, loss 1
    assert_eq!(u.suppressed_rows, 10);
    close(u.discernibility, 100.0, 1e-12, "dm");
    assert_eq!(u.aecs, None);
    close(u.loss_metric, 1.0, 1e-12, "loss");

    // ages 1, 1, 1, 2 under *: ranges hold one value (⌈2/2⌉ = 1); value 1: true 3, estimate
    // 4/2 → error 1/3 (3 rows of 4); value 2: true 1, estimate 2 → error 1
    let original = batch(vec![("age", ints(&[1, 1, 1, 2]))]);
    let anonymized = batch(vec![("age", strings(&["*"; 4]))]);
    let ctx = context(vec![("anon", anonymized), ("orig", original)]);
    let u = run(&ctx, &o).await.utility.unwrap();
    close(
        u.query_accuracy.median_relative_error,
        1.0 / 3.0,
        1e-12,
        "median",
    );
    // expected mean 3/4 · 1/3 + 1/4 · 1 = 0.5; 1000 draws: standard deviation 0.009
    close(u.query_accuracy.mean_relative_error, 0.5, 0.05, "mean");
}

#[tokio::test]
async fn rows_matched_by_key() {
    let (original, anonymized) = utility_example();
    // the original in another order, with a key
    let keyed_original = batch(vec![
        ("id", ints(&[40, 10, 30, 20])),
        ("age", ints(&[38, 25, 35, 27])),
        ("zip", strings(&["13068", "13053", "13053", "13068"])),
    ]);
    let keyed_anonymized = batch(vec![
        ("id", ints(&[10, 20, 30, 40])),
        ("age", anonymized.column(0).clone()),
        ("zip", anonymized.column(1).clone()),
        ("disease", anonymized.column(2).clone()),
    ]);
    let ctx = context(vec![
        ("anon", keyed_anonymized.clone()),
        ("orig", keyed_original),
        ("plain_anon", anonymized),
        ("plain_orig", original),
    ]);
    let mut o = options("anon", &["age", "zip"], &["disease"]);
    o.original = Some("orig".into());
    o.key = Some("id".into());
    let by_key = run(&ctx, &o).await.utility.unwrap();
    assert_eq!(by_key.matched_by, "key id");
    let mut o = options("plain_anon", &["age", "zip"], &["disease"]);
    o.original = Some("plain_orig".into());
    o.by_position = true;
    let by_position = run(&ctx, &o).await.utility.unwrap();
    close(by_key.ncp, by_position.ncp, 1e-12, "ncp");
    close(by_key.loss_metric, by_position.loss_metric, 1e-12, "loss");
    close(
        by_key.private_mutual_information_utility.unwrap(),
        by_position.private_mutual_information_utility.unwrap(),
        1e-12,
        "pmi",
    );

    // a key repeated in the input
    let duplicate = batch(vec![
        ("id", ints(&[10, 10, 30, 40])),
        ("age", keyed_anonymized.column(1).clone()),
        ("zip", keyed_anonymized.column(2).clone()),
    ]);
    let ctx2 = context(vec![("anon", duplicate)]);
    ctx2.register_table("orig", ctx.table_provider("orig").await.unwrap())
        .unwrap();
    let mut o = options("anon", &["age", "zip"], &[]);
    o.original = Some("orig".into());
    o.key = Some("id".into());
    let e = profile(&ctx2, &o).await.unwrap_err().to_string();
    assert!(e.contains("key 'id' is not unique"), "{e}");
}

// ------------------------------------------------- comparison with SQL and brute force

use crate::reference::Rng;

async fn sql_f64(ctx: &SessionContext, sql: &str) -> f64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let column =
        datafusion::arrow::compute::cast(batches[0].column(0), &DataType::Float64).unwrap();
    column
        .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
        .value(0)
}

#[tokio::test]
async fn random_tables_match_sql_functions_and_brute_force() {
    for seed in [1u64, 2, 3] {
        let mut rng = Rng(seed);
        let rows = 400;
        let mut g1 = Vec::new();
        let mut g2 = Vec::new();
        let mut s = Vec::new();
        let mut x = Vec::new();
        let mut pid = Vec::new();
        // more values than the filtered-count path takes: a frequency set of its own
        let mut h = Vec::new();
        let diseases = ["a", "b", "c", "d", "e"];
        for _ in 0..rows {
            g1.push(rng.below(5) as i64);
            g2.push(["p", "q", "r"][rng.below(3) as usize]);
            // skewed, with NULLs
            let r = rng.below(20);
            s.push(if r == 0 {
                None
            } else {
                Some(diseases[(r as usize * r as usize) % 5])
            });
            x.push(if rng.below(15) == 0 {
                None
            } else {
                Some((rng.below(40) as f64) / 4.0)
            });
            pid.push(rng.below(300) as i64);
            h.push(rng.below(150) as i64);
        }
        let table = batch(vec![
            ("g1", ints(&g1)),
            ("g2", strings(&g2)),
            ("s", opt_strings(&s)),
            ("x", Arc::new(Float64Array::from(x.clone())) as ArrayRef),
            ("pid", ints(&pid)),
            ("h", ints(&h)),
        ]);
        let ctx = context(vec![("t", table)]);
        let mut o = options("t", &["g1", "g2"], &["s", "x", "h"]);
        o.person_id = Some("pid".into());
        let p = run(&ctx, &o).await;

        // the SQL functions (an independent implementation of the per-class figures)
        let inner = "FROM t GROUP BY g1, g2";
        let q = |select: &str| {
            format!(
                "SELECT {select} FROM (SELECT k_anonymity() AS k, \
            k_anonymity(pid) AS kp, l_diversity(s) AS l, entropy_l_diversity(s) AS el, \
            recursive_cl_diversity(s, 2) AS rl, t_closeness(s) AS t, \
            t_closeness(x) AS tx, t_closeness_ordered(x) AS tox, l_diversity(x) AS lx {inner})"
            )
        };
        let a = &p.anonymity;
        assert_eq!(a.k as f64, sql_f64(&ctx, &q("min(k)")).await, "k");
        assert_eq!(a.classes as f64, sql_f64(&ctx, &q("count(*)")).await);
        assert_eq!(
            a.k_persons.unwrap() as f64,
            sql_f64(&ctx, &q("min(kp)")).await
        );
        let (sf, xf) = (&a.sensitive[0], &a.sensitive[1]);
        assert_eq!(sf.l_distinct as f64, sql_f64(&ctx, &q("min(l)")).await, "l");
        close(sf.l_entropy, sql_f64(&ctx, &q("min(el)")).await, TOL, "el");
        assert_eq!(
            sf.l_recursive as f64,
            sql_f64(&ctx, &q("min(rl)")).await,
            "rl"
        );
        close(sf.t_equal, sql_f64(&ctx, &q("max(t)")).await, TOL, "t");
        close(xf.t_equal, sql_f64(&ctx, &q("max(tx)")).await, TOL, "t x");
        close(
            xf.t_ordered.unwrap(),
            sql_f64(&ctx, &q("max(tox)")).await,
            TOL,
            "t ordered",
        );
        assert_eq!(
            xf.l_distinct as f64,
            sql_f64(&ctx, &q("min(lx)")).await,
            "l x"
        );
        let leak = sql_f64(
            &ctx,
            &format!("SELECT sum(e) FROM (SELECT entropy_leakage() AS e {inner})"),
        )
        .await;
        close(p.leakage.quasi_identifiers, leak, TOL, "leakage");

        // brute force: α, β, δ and tuple diversity straight from the definitions
        let mut classes: BTreeMap<(i64, &str), Vec<usize>> = BTreeMap::new();
        for i in 0..rows {
            classes.entry((g1[i], g2[i])).or_default().push(i);
        }
        let n = rows as f64;
        // s: NULL its own category for β and δ, joins the most frequent value for α
        let mut table_s: HashMap<Option<&str>, f64> = HashMap::new();
        for v in &s {
            *table_s.entry(*v).or_default() += 1.0 / n;
        }
        let (mut alpha, mut beta, mut delta, mut missing, mut over_cap) =
            (0f64, 0f64, 0f64, 0u64, 0u64);
        for members in classes.values() {
            let size = members.len() as f64;
            let mut counts: HashMap<Option<&str>, f64> = HashMap::new();
            for &i in members {
                *counts.entry(s[i]).or_default() += 1.0;
            }
            let nulls = counts.get(&None).copied().unwrap_or(0.0);
            let top = counts
                .iter()
                .filter(|(v, _)| v.is_some())
                .map(|(_, &c)| c)
                .fold(0.0, f64::max);
            alpha = alpha.max(if top == 0.0 {
                1.0
            } else {
                (top + nulls) / size
            });
            let mut class_over = false;
            for (v, &c) in &counts {
                let (pe, pt) = (c / size, table_s[v]);
                if pe > pt {
                    beta = beta.max((pe - pt) / pt);
                    class_over |= (pe - pt) / pt > -pt.ln();
                }
                delta = delta.max((pe / pt).ln().abs());
            }
            over_cap += class_over as u64;
            missing += (counts.len() < table_s.len()) as u64;
        }
        close(sf.alpha, alpha, TOL, "alpha");
        close(sf.beta, beta, TOL, "beta");
        close(sf.delta, delta, TOL, "delta");
        assert_eq!(sf.delta_classes_missing_values, missing);
        assert_eq!(sf.beta_enhanced_classes_over_cap, over_cap);
        assert_eq!(sf.beta_enhanced.is_some(), over_cap == 0);
        // tuple diversity of x: NULLs ignored
        let values: Vec<f64> = x.iter().flatten().copied().collect();
        let range = values.iter().copied().fold(f64::NEG_INFINITY, f64::max)
            - values.iter().copied().fold(f64::INFINITY, f64::min);
        let mut tuple = f64::INFINITY;
        for members in classes.values() {
            let xs: Vec<f64> = members.iter().filter_map(|&i| x[i]).collect();
            let spread = if xs.len() < 2 {
                0.0
            } else {
                xs.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                    - xs.iter().copied().fold(f64::INFINITY, f64::min)
            };
            tuple = tuple.min(spread / range);
        }
        close(xf.tuple_diversity.unwrap(), tuple, TOL, "tuple diversity");

        // risk from persons (person id given): 1/persons of each class
        let mut average = 0.0;
        let mut max: f64 = 0.0;
        for members in classes.values() {
            let persons: BTreeSet<i64> = members.iter().map(|&i| pid[i]).collect();
            let risk = 1.0 / persons.len() as f64;
            max = max.max(risk);
            average += risk * members.len() as f64 / n;
        }
        close(p.risk.prosecutor_max, max, TOL, "max risk");
        close(p.risk.prosecutor_average, average, TOL, "average risk");
    }
}

// ------------------------------------- homogeneity and background-knowledge attacks

/// (classes, rows) of each background-knowledge figure, in increasing m.
fn background(
    figures: &datafusion_anonymity_engine::profile::SensitiveFigures,
) -> Vec<(u64, u64, u64)> {
    figures
        .background_knowledge
        .iter()
        .map(|b| (b.ruled_out, b.classes, b.rows))
        .collect()
}

#[tokio::test]
async fn homogeneity_and_background_knowledge_by_hand() {
    // three classes of 3, 4 and 5 rows with 1, 2 and 3 distinct diseases:
    //   A (3 rows): flu flu flu                     d = 1
    //   B (4 rows): flu flu hiv hiv                 d = 2
    //   C (5 rows): flu hiv hiv cancer cancer       d = 3
    // homogeneity (d = 1): class A, 3 rows
    // m = 1 value ruled out (d ≤ 2): A and B, 3 + 4 = 7 rows
    // m = 2 values ruled out (d ≤ 3): A, B and C, 3 + 4 + 5 = 12 rows
    let zip = ["A", "A", "A", "B", "B", "B", "B", "C", "C", "C", "C", "C"];
    let disease = [
        "flu", "flu", "flu", "flu", "flu", "hiv", "hiv", "flu", "hiv", "hiv", "cancer", "cancer",
    ];
    let table = batch(vec![("zip", strings(&zip)), ("disease", strings(&disease))]);
    let ctx = context(vec![("t", table)]);
    let mut o = options("t", &["zip"], &["disease"]);
    o.background_values = 2;
    let p = run(&ctx, &o).await;
    let d = &p.anonymity.sensitive[0];
    assert_eq!((d.homogeneity.classes, d.homogeneity.rows), (1, 3));
    assert_eq!(background(d), vec![(1, 2, 7), (2, 3, 12)]);
    // homogeneous classes are those of l = 1
    assert_eq!(d.l_distinct, 1);

    // the default M = 3: m = 3 (d ≤ 4) adds nothing, still 12 rows in 3 classes
    let p = run(&ctx, &options("t", &["zip"], &["disease"])).await;
    assert_eq!(
        background(&p.anonymity.sensitive[0]),
        vec![(1, 2, 7), (2, 3, 12), (3, 3, 12)]
    );

    // M = 0: homogeneity only; M above the limit is refused
    o.background_values = 0;
    let p = run(&ctx, &o).await;
    assert!(p.anonymity.sensitive[0].background_knowledge.is_empty());
    assert_eq!(p.anonymity.sensitive[0].homogeneity.rows, 3);
    o.background_values = 101;
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("at most 100 values"), "{e}");

    // the table function has the same figures as columns
    let batches = ctx
        .sql(
            "SELECT disease_homogeneous_rows, disease_homogeneous_classes, \
             disease_background_1_rows, disease_background_1_classes, \
             disease_background_2_rows, disease_background_3_rows \
             FROM anonymity_profile('t', 'zip', 'disease')",
        )
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let row: Vec<u64> = batches[0]
        .columns()
        .iter()
        .map(|c| {
            c.as_primitive::<datafusion::arrow::datatypes::UInt64Type>()
                .value(0)
        })
        .collect();
    assert_eq!(row, vec![3, 1, 7, 2, 12, 12]);
}

#[tokio::test]
async fn attacks_count_nulls_as_copies_of_the_class_value() {
    // NULLs may hide copies of the class's value: they never add a distinct value
    //   A (3 rows): flu NULL NULL    d = 1 (homogeneous: the NULLs may be flu)
    //   B (2 rows): NULL NULL        d = 1 (all NULL: homogeneous)
    //   C (3 rows): flu hiv NULL     d = 2
    //   D (4 rows): flu hiv cancer NULL   d = 3
    // homogeneity: A and B, 3 + 2 = 5 rows; m = 1: + C, 8 rows; m = 2: + D, 12 rows
    let zip = ["A", "A", "A", "B", "B", "C", "C", "C", "D", "D", "D", "D"];
    let disease = [
        Some("flu"),
        None,
        None,
        None,
        None,
        Some("flu"),
        Some("hiv"),
        None,
        Some("flu"),
        Some("hiv"),
        Some("cancer"),
        None,
    ];
    let table = batch(vec![
        ("zip", strings(&zip)),
        ("disease", opt_strings(&disease)),
    ]);
    let ctx = context(vec![("t", table)]);
    let p = run(&ctx, &options("t", &["zip"], &["disease"])).await;
    let d = &p.anonymity.sensitive[0];
    assert_eq!((d.homogeneity.classes, d.homogeneity.rows), (2, 5));
    assert_eq!(background(d), vec![(1, 3, 8), (2, 4, 12), (3, 4, 12)]);
}

#[tokio::test]
async fn attacks_match_brute_force_on_random_data() {
    for seed in [11u64, 12, 13] {
        let mut rng = Rng(seed);
        let rows = 500;
        let (mut zip, mut few, mut many) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rows {
            // 90 classes of about 5 rows: d from 1 to 5 or so
            let class = rng.below(90) as i64;
            zip.push(class);
            // few values (the histogram path of the class aggregation), skewed, some NULLs
            let r = rng.below(12);
            few.push(match r {
                0 => None,
                1..=6 => Some("a"),
                7..=9 => Some("b"),
                10 => Some("c"),
                _ => Some("d"),
            });
            // many values over the table (a frequency set of its own) but few per class
            many.push(if rng.below(15) == 0 {
                None
            } else {
                Some((class * 7) % 120 + rng.below(3) as i64)
            });
        }
        let table = batch(vec![
            ("zip", ints(&zip)),
            ("few", opt_strings(&few)),
            ("many", Arc::new(Int64Array::from(many.clone())) as ArrayRef),
        ]);
        let ctx = context(vec![("t", table)]);
        let mut o = options("t", &["zip"], &["few", "many"]);
        o.background_values = 4;
        let p = run(&ctx, &o).await;
        assert!(
            p.anonymity.sensitive[1].distinct_values > 64,
            "many takes a frequency set"
        );

        // brute force: per class the distinct non-NULL values (NULLs could be copies of
        // any of them), an all-NULL class counting 1; a class is exposed at m values ruled
        // out when d ≤ m + 1
        fn expected<V: Ord + Copy>(
            zip: &[i64],
            values: &[Option<V>],
            max_m: u64,
        ) -> Vec<(u64, u64)> {
            let mut classes: BTreeMap<i64, (u64, BTreeSet<V>)> = BTreeMap::new();
            for (z, v) in zip.iter().zip(values) {
                let class = classes.entry(*z).or_default();
                class.0 += 1;
                if let Some(v) = v {
                    class.1.insert(*v);
                }
            }
            (0..=max_m)
                .map(|m| {
                    let exposed = classes
                        .values()
                        .filter(|(_, distinct)| distinct.len().max(1) as u64 <= m + 1);
                    (
                        exposed.clone().count() as u64,
                        exposed.map(|(rows, _)| rows).sum(),
                    )
                })
                .collect()
        }
        for (figures, want) in [
            (&p.anonymity.sensitive[0], expected(&zip, &few, 4)),
            (&p.anonymity.sensitive[1], expected(&zip, &many, 4)),
        ] {
            let mut got = vec![(figures.homogeneity.classes, figures.homogeneity.rows)];
            got.extend(
                figures
                    .background_knowledge
                    .iter()
                    .map(|b| (b.classes, b.rows)),
            );
            assert_eq!(got, want, "{} (seed {seed})", figures.attribute);
            let m: Vec<u64> = figures
                .background_knowledge
                .iter()
                .map(|b| b.ruled_out)
                .collect();
            assert_eq!(m, vec![1, 2, 3, 4]);
            // not vacuous: some classes exposed, not all of them at once
            assert!(want[0].0 > 0 && want[0].1 < rows as u64, "{want:?}");
            assert!(want.windows(2).any(|w| w[1].1 > w[0].1), "{want:?}");
        }
    }
}

#[tokio::test]
async fn bad_options_are_clear_errors() {
    let ctx = context(vec![("patients", worked_example())]);
    let e = profile(&ctx, &options("patients", &["zip", "height"], &[]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("quasi-identifier 'height' is not a column of 'patients'"),
        "{e}"
    );
    let e = profile(&ctx, &options("patients", &["zip"], &["zip"]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("both as a quasi-identifier and as a sensitive"),
        "{e}"
    );
    let e = profile(&ctx, &options("nowhere", &["zip"], &[]))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("'nowhere' is not registered"), "{e}");
    let empty = batch(vec![("zip", strings(&[]))]);
    let ctx = context(vec![("empty", empty)]);
    let e = profile(&ctx, &options("empty", &["zip"], &[]))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("has no rows"), "{e}");
}

// ---------------------------------------------------------------- command line

fn anon() -> Command {
    Command::new(env!("CARGO_BIN_EXE_anon"))
}

fn adult() -> String {
    format!(
        "{}/examples/adult/adult.parquet",
        env!("CARGO_MANIFEST_DIR")
    )
}

/// Runs `anon` with `args`: (exit code, stdout, stderr).
fn run_anon(args: &[&str]) -> (i32, String, String) {
    let output = anon().args(args).output().expect("anon runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn keys(value: &serde_json::Value) -> BTreeSet<String> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// Writes `batch` as a CSV file.
fn write_csv(path: &std::path::Path, batch: &RecordBatch) {
    let file = std::fs::File::create(path).unwrap();
    let mut writer = datafusion::arrow::csv::WriterBuilder::new()
        .with_header(true)
        .build(file);
    writer.write(batch).unwrap();
}

#[test]
fn cli_json_keys_are_stable() {
    let dir = tempfile::tempdir().unwrap();
    // the Adult data as its own population and original: every section is filled
    let adult = adult();
    let (code, out, err) = run_anon(&[
        "profile",
        &adult,
        "--qi",
        "sex,age,race",
        "--sensitive",
        "salary-class,education",
        "--population",
        &adult,
        "--original",
        &adult,
        "--by-position",
        "--format",
        "json",
        "--queries",
        "50",
        "--background-values",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        keys(&json),
        set(&[
            "input",
            "rows",
            "quasi_identifiers",
            "sensitive_attributes",
            "person_id",
            "anonymity",
            "risk",
            "leakage",
            "utility",
            "relink",
            "risky_classes",
            "fingerprint_attack",
        ])
    );
    assert_eq!(json["rows"], 30162);
    assert!(json["risky_classes"].is_null(), "values only on request");
    assert!(
        json["fingerprint_attack"].is_null(),
        "only with --fingerprint-st"
    );
    let anonymity = &json["anonymity"];
    assert_eq!(
        keys(anonymity),
        set(&[
            "classes",
            "k",
            "k_persons",
            "sample_uniques",
            "class_sizes",
            "sensitive"
        ])
    );
    assert_eq!(
        keys(&anonymity["class_sizes"][0]),
        set(&["size", "min", "max", "classes", "rows"])
    );
    assert_eq!(
        keys(&anonymity["sensitive"][0]),
        set(&[
            "attribute",
            "ordered",
            "distinct_values",
            "l_distinct",
            "l_entropy",
            "l_recursive",
            "recursive_c",
            "t_equal",
            "t_ordered",
            "alpha",
            "beta",
            "beta_enhanced",
            "beta_enhanced_classes_over_cap",
            "delta",
            "delta_classes_missing_values",
            "tuple_diversity",
            "homogeneity",
            "background_knowledge",
        ])
    );
    let salary = &anonymity["sensitive"][0];
    assert_eq!(keys(&salary["homogeneity"]), set(&["classes", "rows"]));
    // --background-values 2: m = 1 and 2
    let background = salary["background_knowledge"].as_array().unwrap();
    assert_eq!(background.len(), 2);
    assert_eq!(keys(&background[0]), set(&["ruled_out", "classes", "rows"]));
    assert_eq!(
        (
            background[0]["ruled_out"].as_u64(),
            background[1]["ruled_out"].as_u64()
        ),
        (Some(1), Some(2))
    );
    // salary-class has two values: every row is certain once one value is ruled out
    assert_eq!(background[0]["rows"], 30162);
    assert_eq!(background[0]["classes"], anonymity["classes"]);
    let risk = &json["risk"];
    assert_eq!(
        keys(risk),
        set(&[
            "prosecutor_max",
            "prosecutor_average",
            "marketer",
            "thresholds",
            "distribution",
            "population",
        ])
    );
    assert_eq!(
        keys(&risk["thresholds"][0]),
        set(&["threshold", "rows", "share"])
    );
    assert_eq!(
        keys(&risk["distribution"][0]),
        set(&["min", "max", "classes", "rows", "share"])
    );
    assert_eq!(
        keys(&risk["population"]),
        set(&[
            "population",
            "rows",
            "k_map",
            "journalist",
            "marketer",
            "classes_not_covered",
            "thresholds",
        ])
    );
    // the sample is its own population: k-map = k
    assert_eq!(risk["population"]["k_map"], anonymity["k"]);
    assert_eq!(
        keys(&json["leakage"]),
        set(&["attributes", "quasi_identifiers"])
    );
    assert_eq!(
        keys(&json["leakage"]["attributes"][0]),
        set(&[
            "attribute",
            "quasi_identifier",
            "distinct_values",
            "leakage"
        ])
    );
    let utility = &json["utility"];
    assert_eq!(
        keys(utility),
        set(&[
            "original",
            "matched_by",
            "suppressed_rows",
            "ncp",
            "loss_metric",
            "discernibility",
            "aecs",
            "classification_metric",
            "modification_rate",
            "whd_uniform",
            "whd_beta1",
            "monotone_entropy_loss",
            "mutual_information_loss",
            "private_mutual_information_utility",
            "query_accuracy",
            "attributes",
        ])
    );
    assert_eq!(
        keys(&utility["query_accuracy"]),
        set(&[
            "queries",
            "seed",
            "mean_relative_error",
            "median_relative_error"
        ])
    );
    assert_eq!(
        keys(&utility["attributes"][0]),
        set(&[
            "attribute",
            "hierarchy",
            "loss",
            "modification_rate",
            "whd_uniform",
            "whd_beta1",
            "monotone_entropy_loss",
            "mutual_information_loss",
            "private_mutual_information_utility",
        ])
    );
    // the table against itself loses nothing
    assert_eq!(utility["loss_metric"], 0.0);

    // --out writes the same report to a file
    let path = dir.path().join("report.json");
    let (code, _, err) = run_anon(&[
        "profile",
        &adult,
        "--qi",
        "sex,age",
        "--format",
        "json",
        "--out",
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        written["quasi_identifiers"],
        serde_json::json!(["sex", "age"])
    );
}

/// Every `src="…"` and `href="…"` value of `html`.
fn links(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attribute in ["src=", "href=", "SRC=", "HREF="] {
        let mut rest = html;
        while let Some(at) = rest.find(attribute) {
            rest = &rest[at + attribute.len()..];
            let value: String = rest
                .trim_start_matches(['"', '\''])
                .chars()
                .take_while(|c| !matches!(c, '"' | '\'' | ' ' | '>'))
                .collect();
            found.push(value);
        }
    }
    found
}

#[test]
fn cli_html_is_self_contained_and_hides_values() {
    let dir = tempfile::tempdir().unwrap();
    // a table whose rare class holds a recognizable value
    let table = batch(vec![
        ("zip", strings(&["11111", "11111", "11111", "99876"])),
        ("disease", strings(&["flu", "hiv", "flu", "flu"])),
        ("<i>note</i>", strings(&["x", "y", "z", "w"])),
    ]);
    let csv = dir.path().join("t.csv");
    write_csv(&csv, &table);
    let html_path = dir.path().join("report.html");
    let args = |show: bool| {
        let mut args = vec![
            "profile".to_string(),
            csv.to_string_lossy().into_owned(),
            "--qi".into(),
            "zip".into(),
            "--sensitive".into(),
            "disease".into(),
            "--format".into(),
            "html".into(),
            "--out".into(),
            html_path.to_string_lossy().into_owned(),
        ];
        if show {
            args.push("--show-values".into());
        }
        args
    };
    let hidden = args(false);
    let (code, _, err) = run_anon(&hidden.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for link in links(&html) {
        assert!(
            !link.to_ascii_lowercase().contains("http"),
            "external link {link}"
        );
    }
    assert!(!html.contains("<script") && !html.contains("<link") && !html.contains("@import"));
    assert!(!html.contains("url("), "no fetched resource in CSS");
    // the charts are there
    assert!(html.contains("Rows by class size") && html.contains("<svg"));
    assert!(html.contains("Rows by re-identification risk"));
    assert!(html.contains("Leakage by attribute"));
    // the attacks: class 99876 (flu alone) is homogeneous, 1 of 4 rows; ruling out one value
    // exposes class 11111 (flu, hiv) too: 4 rows
    assert!(html.contains(
        "<tr><td>homogeneous rows</td><td class=\"v\">1</td><td class=\"e\">rows in classes of one sensitive value"
    ), "{html}");
    assert!(html.contains("<tr><td>rows certain, 1 value ruled out</td><td class=\"v\">4</td>"));
    assert!(html.contains("; 100.00% of all rows, 2 classes"));
    // no quasi-identifier value without --show-values; column names escaped
    assert!(!html.contains("99876") && !html.contains("11111"));
    assert!(!html.contains("<i>") && html.contains("&lt;i&gt;note"));

    let shown = args(true);
    let (code, _, err) = run_anon(&shown.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{err}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("99876"), "values shown on request");
    for link in links(&html) {
        assert!(
            !link.to_ascii_lowercase().contains("http"),
            "external link {link}"
        );
    }
}

#[test]
fn cli_text_report() {
    let (code, out, err) = run_anon(&[
        "profile",
        &adult(),
        "--qi",
        "sex,age,race",
        "--sensitive",
        "salary-class",
    ]);
    assert_eq!(code, 0, "{err}");
    for expected in [
        "ANONYMITY",
        "k (rows)",
        "l (distinct)",
        "t (equal distance)",
        "RISK",
        "prosecutor risk, max",
        "LEAKAGE RANKING",
        "30,162 rows",
        "homogeneous rows",
        "rows certain, 1 value ruled out",
        "rows certain, 3 values ruled out",
    ] {
        assert!(out.contains(expected), "missing {expected}:\n{out}");
    }
    assert!(!out.contains("UTILITY"));
}

#[test]
fn cli_bad_input_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let adult = adult();
    // a QI missing from the table
    let (code, _, err) = run_anon(&["profile", &adult, "--qi", "sex,height"]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: quasi-identifier 'height' is not a column of"),
        "{err}"
    );
    // a population without the QIs
    let population = dir.path().join("population.csv");
    write_csv(
        &population,
        &batch(vec![("sex", strings(&["Male"])), ("zip", strings(&["1"]))]),
    );
    let (code, _, err) = run_anon(&[
        "profile",
        &adult,
        "--qi",
        "sex,age",
        "--population",
        population.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("quasi-identifier 'age' is not a column of population"),
        "{err}"
    );
    // an original with a different row count
    let original = dir.path().join("original.csv");
    write_csv(
        &original,
        &batch(vec![
            ("sex", strings(&["Male", "Female"])),
            ("age", ints(&[30, 40])),
        ]),
    );
    let (code, _, err) = run_anon(&[
        "profile",
        &adult,
        "--qi",
        "sex,age",
        "--original",
        original.to_str().unwrap(),
        "--by-position",
    ]);
    assert_eq!(code, 1);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("has 2 rows but the input"), "{err}");
    assert!(err.contains("30162"), "{err}");
    // a missing input file
    let (code, _, err) = run_anon(&["profile", "/nonexistent/x.parquet", "--qi", "a"]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/x.parquet"), "{err}");
    // --key without --original is a command-line error
    let (code, _, _) = run_anon(&["profile", &adult, "--qi", "sex", "--key", "id"]);
    assert_eq!(code, 2);
}

#[test]
fn cli_policy_gives_qis_sensitive_and_hierarchies() {
    let dir = tempfile::tempdir().unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let original = format!("{root}/sql/data/li2007.csv");
    // sql/policies/li2007_mask.toml with the id kept (anon apply does not keep the row order,
    // so rows are matched by key)
    let text = std::fs::read_to_string(format!("{root}/sql/policies/li2007_mask.toml"))
        .unwrap()
        .replace("../data/li2007.csv", &original)
        .replace(
            "id = { role = \"identifier\" }",
            "id = { role = \"insensitive\" }",
        );
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, text).unwrap();
    let policy = policy.to_string_lossy().into_owned();
    let anonymized = dir.path().join("anon.parquet");
    let (code, _, err) = run_anon(&[
        "apply",
        "--policy",
        &policy,
        "--out",
        anonymized.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run_anon(&[
        "profile",
        anonymized.to_str().unwrap(),
        "--policy",
        &policy,
        "--original",
        &original,
        "--key",
        "id",
        "--format",
        "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    // from the policy: QIs zip (mask, from the data: 5 characters, height 6) and age
    // (interval widths 10, 20: height 4); sensitive disease
    assert_eq!(json["quasi_identifiers"], serde_json::json!(["zip", "age"]));
    assert_eq!(json["sensitive_attributes"], serde_json::json!(["disease"]));
    // zip masked 2, age in decades: classes 476**/[20,30) and 476**/[30,40) of 3 rows keep
    // their values; 479** (ages 43, 52, 47) falls below k = 3 and is masked to *
    let u = &json["utility"];
    assert_eq!(u["matched_by"], "key id");
    assert_eq!(u["suppressed_rows"], 3);
    let f = |v: &serde_json::Value| v.as_f64().unwrap();
    let zip = &u["attributes"][0];
    let age = &u["attributes"][1];
    // WHD zip: 6 cells at level 2 of 6 (uniform 2/5; β = 1: (1/4 + 1/5)/(1 + 1/2 + 1/3 + 1/4
    // + 1/5)), 3 at the top (1)
    let beta1 = (0.25 + 0.2) / (1.0 + 0.5 + 1.0 / 3.0 + 0.25 + 0.2);
    close(
        f(&zip["whd_uniform"]),
        (6.0 * 0.4 + 3.0) / 9.0,
        1e-12,
        "whd zip",
    );
    close(
        f(&zip["whd_beta1"]),
        (6.0 * beta1 + 3.0) / 9.0,
        1e-12,
        "whd zip b1",
    );
    // age: 6 cells at level 1 of 4 (1/3; β = 1: (1/3)/(1 + 1/2 + 1/3)), 3 at the top
    let beta1 = (1.0 / 3.0) / (1.0 + 0.5 + 1.0 / 3.0);
    close(
        f(&age["whd_uniform"]),
        (6.0 / 3.0 + 3.0) / 9.0,
        1e-12,
        "whd age",
    );
    close(
        f(&age["whd_beta1"]),
        (6.0 * beta1 + 3.0) / 9.0,
        1e-12,
        "whd age b1",
    );
    // loss: 476** covers 6 of the 9 zips: 5/8; each decade 3 of the 9 ages: 2/8; * costs 1
    close(
        f(&zip["loss"]),
        (6.0 * 5.0 / 8.0 + 3.0) / 9.0,
        1e-12,
        "loss zip",
    );
    close(
        f(&age["loss"]),
        (6.0 * 2.0 / 8.0 + 3.0) / 9.0,
        1e-12,
        "loss age",
    );
    close(f(&u["loss_metric"]), (0.75 + 0.5) / 2.0, 1e-12, "loss");
    // DM: two classes of 3 and 3 suppressed rows costing n = 9 each
    close(f(&u["discernibility"]), 9.0 + 9.0 + 27.0, 1e-12, "dm");
    assert_eq!(zip["hierarchy"], "zip");
}

// ------------------------------------------------- rows matched by position or by key

/// `utility_example` with an id, the release shuffled (rows 3, 1, 4, 2 of the original).
fn shuffled_example() -> (RecordBatch, RecordBatch) {
    let (original, anonymized) = utility_example();
    let keyed_original = batch(vec![
        ("id", ints(&[10, 20, 30, 40])),
        ("age", original.column(0).clone()),
        ("zip", original.column(1).clone()),
        ("disease", original.column(2).clone()),
    ]);
    let order = datafusion::arrow::array::UInt32Array::from(vec![2, 0, 3, 1]);
    let take = |a: &ArrayRef| datafusion::arrow::compute::take(a, &order, None).unwrap();
    let shuffled = batch(vec![
        ("id", take(&keyed_original.column(0).clone())),
        ("age", take(anonymized.column(0))),
        ("zip", take(anonymized.column(1))),
        ("disease", take(anonymized.column(2))),
    ]);
    (keyed_original, shuffled)
}

#[tokio::test]
async fn a_shuffled_release_is_refused_by_position_and_measured_by_key() {
    let (original, shuffled) = shuffled_example();
    let ctx = context(vec![("anon", shuffled), ("orig", original)]);
    let mut o = options("anon", &["age", "zip"], &["disease"]);
    o.original = Some("orig".into());
    // neither a key nor --by-position: refused, saying which to use
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("--key") && e.contains("--by-position"), "{e}");
    // by position: the id (kept unchanged) differs at row 1 (30 against 10); no value shown
    o.by_position = true;
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("column 'id'") && e.contains("at row 1 "), "{e}");
    for value in ["30", "10", "flu", "hiv"] {
        assert!(!e.contains(value), "no data value in errors: {e}");
    }
    // both: refused
    o.key = Some("id".into());
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(e.contains("not both"), "{e}");
    // by key: the figures of `utility_hand_example` (the same pairs): NCP and loss 31/52,
    // classification metric 1/4
    o.by_position = false;
    let u = run(&ctx, &o).await.utility.unwrap();
    assert_eq!(u.matched_by, "key id");
    close(u.ncp, 31.0 / 52.0, 1e-12, "ncp");
    close(u.loss_metric, 31.0 / 52.0, 1e-12, "loss");
    close(u.classification_metric.unwrap(), 0.25, 1e-12, "cm");
}

#[tokio::test]
async fn by_position_checks_the_first_disagreeing_row() {
    // the disease of row 3 differs (rows 1 and 2 agree): named as column disease, row 3
    let (original, anonymized) = utility_example();
    let changed = batch(vec![
        ("age", anonymized.column(0).clone()),
        ("zip", anonymized.column(1).clone()),
        ("disease", strings(&["flu", "flu", "flu", "flu"])),
    ]);
    let ctx = context(vec![("anon", changed), ("orig", original)]);
    let mut o = options("anon", &["age", "zip"], &["disease"]);
    o.original = Some("orig".into());
    o.by_position = true;
    let e = profile(&ctx, &o).await.unwrap_err().to_string();
    assert!(
        e.contains("column 'disease'") && e.contains("at row 3 "),
        "{e}"
    );
}

/// Two releases of 8 rows (seed 004's Table 6 with a disease and an income): A generalizes
/// zip, B age. B in A's order but with rows 1–2 and 5–6 swapped: positions 1, 2, 5 and 6
/// disagree on (disease, income) — (flu, 10) against (flu, NULL) at 1 — the other 4 agree
/// (position 2's NULL income agrees with nothing but NULL). Every (disease, income) pair is
/// distinct, so by chance 8 · Σ_t (1/8)(1/8) = 1 position would agree.
#[test]
fn relink_counts_rows_joined_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.csv");
    let b = dir.path().join("b.csv");
    std::fs::write(
        &a,
        "zip,age,disease,income\n910**,42,flu,10\n910**,44,flu,\n277**,50,hiv,30\n\
         277**,52,cancer,40\n321**,20,flu,50\n321**,21,hiv,60\n676**,31,asthma,70\n\
         676**,32,flu,80\n",
    )
    .unwrap();
    std::fs::write(
        &b,
        "zip,age,disease,income\n91058,*,flu,\n91058,*,flu,10\n27785,*,hiv,30\n\
         27785,*,cancer,40\n32105,*,hiv,60\n32105,*,flu,50\n67676,*,asthma,70\n\
         67676,*,flu,80\n",
    )
    .unwrap();
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let (code, out, err) = run_anon(&[
        "profile", a, "--qi", "zip,age", "--relink", b, "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &json["relink"];
    assert_eq!(r["columns"], serde_json::json!(["disease", "income"]));
    assert_eq!(r["positions"], 8);
    assert_eq!(r["other_rows"], 8);
    assert_eq!(r["relinked"], 4);
    close(r["share"].as_f64().unwrap(), 0.5, 1e-12, "share");
    close(
        r["expected_by_chance"].as_f64().unwrap(),
        1.0,
        1e-12,
        "chance",
    );
    // against itself every row re-links
    let (code, out, err) = run_anon(&[
        "profile", a, "--qi", "zip,age", "--relink", a, "--format", "json",
    ]);
    assert_eq!(code, 0, "{err}");
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["relink"]["relinked"], 8);
    // text and HTML carry the figure
    for format in ["text", "html"] {
        let (code, out, err) = run_anon(&[
            "profile", a, "--qi", "zip,age", "--relink", b, "--format", format,
        ]);
        assert_eq!(code, 0, "{err}");
        assert!(
            out.contains("rows re-linked by position"),
            "{format}: {out}"
        );
        assert!(out.contains("50.0"), "{format}: {out}");
    }
    // nothing but quasi-identifiers in common: refused
    let (code, _, err) = run_anon(&[
        "profile",
        a,
        "--qi",
        "zip,age,disease,income",
        "--relink",
        b,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("nothing to re-link"), "{err}");
}

/// One rule colours the HTML report's risk red: above 0.2, the highest threshold counted. With
/// classes of 5 and 20 rows the max risk is 1/5 = 0.2 and the average 2/25 = 0.08: neither
/// card is red, and no bar of the risk distribution is (no row's risk exceeds 0.2).
#[tokio::test]
async fn html_risk_colours_follow_one_threshold() {
    let zips: Vec<&str> = std::iter::repeat_n("A", 5)
        .chain(std::iter::repeat_n("B", 20))
        .collect();
    let ctx = context(vec![("t", batch(vec![("zip", strings(&zips))]))]);
    let p = run(&ctx, &options("t", &["zip"], &[])).await;
    close(p.risk.prosecutor_max, 0.2, 1e-12, "max");
    close(p.risk.prosecutor_average, 0.08, 1e-12, "average");
    let html = datafusion_anonymity_engine::profile::render_html::render(&p);
    // the cards carry the figures' labels (src/profile/figures.rs)
    let card_of = |label: &str| {
        let end = html.find(&format!("{label}</div>")).unwrap();
        let start = html[..end].rfind("<div class=\"card").unwrap();
        html[start..end].to_string()
    };
    assert!(!card_of("prosecutor risk, max").contains("bad"));
    assert!(!card_of("prosecutor risk, average").contains("bad"));
    assert!(red_bars(&html).is_empty(), "red bars {:?}", red_bars(&html));

    // one class of 2 rows: risk 1/2 > 0.2, its card and its bar red
    let ctx = context(vec![("t", batch(vec![("zip", strings(&["A", "A"]))]))]);
    let p = run(&ctx, &options("t", &["zip"], &[])).await;
    let html = datafusion_anonymity_engine::profile::render_html::render(&p);
    let end = html.find("prosecutor risk, max</div>").unwrap();
    let start = html[..end].rfind("<div class=\"card").unwrap();
    assert!(html[start..end].contains("bad"));
    assert_eq!(red_bars(&html).len(), 1);
}

/// The visible red bars (non-zero width) of the risk distribution chart.
fn red_bars(html: &str) -> Vec<String> {
    let chart = &html[html.find("Rows by re-identification risk").unwrap()..];
    let chart = &chart[..chart.find("</svg>").unwrap()];
    chart
        .split("<rect")
        .skip(1)
        .filter(|rect| rect.contains("#c0392b") && !rect.contains("width=\"0.0\""))
        .map(str::to_string)
        .collect()
}

/// The profile's progress counters count every input row once per pass: the scans of the
/// sensitive attributes' values (run together, the furthest) and the class aggregation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profile_progress_counts_every_input_row() {
    let ctx = SessionContext::new();
    datafusion_anonymity_engine::register(&ctx).unwrap();
    ctx.register_parquet("adult", adult(), Default::default())
        .await
        .unwrap();
    for sensitive in [&["salary-class", "education"][..], &[]] {
        let progress = ProfileProgress::new();
        let mut options = options("adult", &["sex", "age", "race"], sensitive);
        options.progress = Some(Arc::clone(&progress));
        let report = profile(&ctx, &options).await.unwrap();
        assert_eq!(report.rows, 30162);
        assert_eq!(progress.classes.rows(), report.rows);
        let values = if sensitive.is_empty() { 0 } else { report.rows };
        assert_eq!(progress.values.rows(), values, "{sensitive:?}");
    }
}

/// `anon profile -q` prints nothing on stderr (the report alone, on stdout).
#[test]
fn profile_quiet_prints_nothing_on_stderr() {
    let policy = format!("{}/examples/adult/policy.toml", env!("CARGO_MANIFEST_DIR"));
    let (code, out, err) = run_anon(&["profile", &adult(), "--policy", &policy, "-q"]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.is_empty());
    assert_eq!(err, "");
}

/// Big counts are grouped by thousands in the text and HTML reports (not in JSON): 2,000 rows,
/// sex F and M alternating, profiled against themselves by key, form two classes of 1,000, so
/// the discernibility is 1,000² + 1,000² = 2,000,000 (by hand).
#[test]
fn discernibility_is_grouped_by_thousands_in_text_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("id,sex\n");
    for i in 0..2000 {
        text.push_str(&format!("{i},{}\n", if i % 2 == 0 { "F" } else { "M" }));
    }
    let path = dir.path().join("t.csv");
    std::fs::write(&path, text).unwrap();
    let path = path.display().to_string();
    let run = |format: &str| {
        let (code, out, err) = run_anon(&[
            "profile",
            &path,
            "--qi",
            "sex",
            "--original",
            &path,
            "--key",
            "id",
            "--format",
            format,
        ]);
        assert_eq!(code, 0, "{err}");
        out
    };
    let text = run("text");
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("discernibility"))
        .unwrap_or_else(|| panic!("no discernibility line: {text}"));
    assert!(line.contains(" 2,000,000 "), "{line}");
    let html = run("html");
    assert!(
        html.contains("<td>discernibility</td><td class=\"v\">2,000,000</td>"),
        "{html}"
    );
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    assert_eq!(json["utility"]["discernibility"], 2_000_000.0);
}
