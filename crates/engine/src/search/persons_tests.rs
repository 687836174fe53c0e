//! k over persons with every algorithm (optimal, Mondrian, KACA, IAB) on random 1:M tables,
//! checked on the raw rows: every published class is recounted from the rows (distinct
//! person ids, a NULL id adding none and a class of NULL ids only counting one), never from
//! the frequency set the algorithms use. And exactness against the histogram path: the same
//! requirement with a vacuous extra bound on the person id (distinct l ≥ 1, met by any
//! non-empty class) is judged on a histogram over every person, the way every attribute was
//! judged before person counting ([`super::persons`]); both must choose the same release.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::local::{LocalAlgorithm, LocalOptions, SUPPRESSED, anonymize};
use super::{Algorithm, FrequencySet, Metric, search};
use crate::generalize::Hierarchy;
use crate::policy::{LDiversity, LDiversityKind, PrivacyRequirements, SensitiveRequirement};
use crate::rng::SplitMix64;

/// One raw row of a 1:M table.
#[derive(Debug, Clone)]
struct Row {
    pid: Option<i64>,
    age: i64,
    zip: String,
    sex: &'static str,
    s: String,
}

/// A random 1:M table: `persons` persons with 1 to 6 rows each. A person has home
/// quasi-identifiers; each of its rows moves away from them with probability `spread`
/// (0: every person in one leaf class). One row in 15 has a NULL person id.
fn random_rows(seed: u64, persons: u64, spread: f64) -> Vec<Row> {
    let mut rng = SplitMix64(seed);
    let mut rows = Vec::new();
    let zip = |rng: &mut SplitMix64| format!("1{}{}", rng.below(3), rng.below(4));
    let sex = |rng: &mut SplitMix64| if rng.below(2) == 0 { "F" } else { "M" };
    for person in 0..persons as i64 {
        let (age, home_zip, home_sex) = (20 + rng.below(30) as i64, zip(&mut rng), sex(&mut rng));
        for _ in 0..1 + rng.below(6) {
            let moved = rng.unit() < spread;
            rows.push(Row {
                pid: (rng.below(15) != 0).then_some(person),
                age: if moved && rng.below(2) == 0 {
                    20 + rng.below(30) as i64
                } else {
                    age
                },
                zip: if moved {
                    zip(&mut rng)
                } else {
                    home_zip.clone()
                },
                sex: if moved && rng.below(3) == 0 {
                    sex(&mut rng)
                } else {
                    home_sex
                },
                s: format!("v{}", rng.below(4)),
            });
        }
    }
    rows
}

async fn frequency_set(rows: &[Row]) -> FrequencySet {
    let schema = Arc::new(Schema::new(vec![
        Field::new("pid", DataType::Int64, true),
        Field::new("age", DataType::Int64, false),
        Field::new("zip", DataType::Utf8, false),
        Field::new("sex", DataType::Utf8, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.pid))),
        Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.age))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.zip))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.sex))),
        Arc::new(StringArray::from_iter_values(rows.iter().map(|r| &r.s))),
    ];
    let batch = RecordBatch::try_new(Arc::clone(&schema), columns).unwrap();
    let ctx = SessionContext::new();
    crate::register(&ctx).unwrap();
    let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let qis = vec![
        (
            "age".to_string(),
            Arc::new(Hierarchy::interval_widths("age", &[5.0, 10.0, 20.0]).unwrap()),
        ),
        ("zip".to_string(), Arc::new(Hierarchy::mask("zip", 3))),
        (
            "sex".to_string(),
            Arc::new(Hierarchy::tree_from_rows("sex", &[vec!["F", "*"], vec!["M", "*"]]).unwrap()),
        ),
    ];
    FrequencySet::build(&ctx, "t", &qis, &["s".into(), "pid".into()])
        .await
        .unwrap()
}

/// The leaf class of every raw row, from the raw values (matched to the leaf values).
fn leaf_class_of_rows(freq: &FrequencySet, rows: &[Row]) -> Vec<usize> {
    let leaf_of_value: Vec<BTreeMap<String, u32>> = freq
        .qis()
        .iter()
        .map(|qi| {
            let values = qi.leaf_values().unwrap();
            (0..values.len())
                .map(|leaf| {
                    let value = ScalarValue::try_from_array(values, leaf).unwrap();
                    (value.to_string(), leaf as u32)
                })
                .collect()
        })
        .collect();
    let leaf_class: BTreeMap<Vec<u32>, usize> = (0..freq.leaf_classes())
        .map(|m| ((0..3).map(|j| freq.leaf_codes()[j][m]).collect(), m))
        .collect();
    rows.iter()
        .map(|r| {
            let values = [r.age.to_string(), r.zip.clone(), r.sex.to_string()];
            let leaves: Vec<u32> = values
                .iter()
                .zip(&leaf_of_value)
                .map(|(v, map)| map[v])
                .collect();
            leaf_class[&leaves]
        })
        .collect()
}

/// The raw rows of one published class.
#[derive(Default)]
struct RawClass {
    rows: u64,
    ids: BTreeSet<Option<i64>>,
    values: BTreeSet<String>,
}

impl RawClass {
    fn add(&mut self, row: &Row) {
        self.rows += 1;
        self.ids.insert(row.pid);
        self.values.insert(row.s.clone());
    }

    /// persons(E) by its definition (docs/definitions.md).
    fn persons(&self) -> u64 {
        let known = self.ids.iter().filter(|p| p.is_some()).count() as u64;
        if known == 0 && self.ids.contains(&None) {
            1
        } else {
            known
        }
    }
}

/// `k_persons` on `pid`; with `via_histogram` also distinct l ≥ 1 on it (vacuous: any
/// non-empty class has it), which judges it on a histogram of every person.
fn person_requirement(k_persons: u64, via_histogram: bool) -> SensitiveRequirement {
    SensitiveRequirement {
        persons: Some(k_persons),
        l: via_histogram.then_some(LDiversity {
            kind: LDiversityKind::Distinct,
            l: 1.0,
            c: None,
        }),
        ..SensitiveRequirement::unconstrained("pid")
    }
}

/// The cases: (k, k_persons, max_suppression, distinct l on `s`).
const CASES: [(u64, u64, f64, Option<f64>); 4] = [
    (2, 3, 0.0, None),
    (1, 4, 0.1, None),
    (3, 5, 0.05, None),
    (2, 3, 0.1, Some(2.0)),
];

fn requirements(case: usize, via_histogram: bool) -> PrivacyRequirements {
    let (k, k_persons, max_suppression, l) = CASES[case];
    let mut sensitive = vec![person_requirement(k_persons, via_histogram)];
    if let Some(l) = l {
        sensitive.push(SensitiveRequirement {
            l: Some(LDiversity {
                kind: LDiversityKind::Distinct,
                l,
                c: None,
            }),
            ..SensitiveRequirement::unconstrained("s")
        });
    }
    PrivacyRequirements {
        suppression: Default::default(),
        population: None,
        k,
        max_suppression,
        sensitive,
    }
}

/// Whether a class of raw rows meets case `case` (k rows, k persons, l values of `s`).
fn meets(class: &RawClass, case: usize) -> bool {
    let (k, k_persons, _, l) = CASES[case];
    class.rows >= k
        && class.persons() >= k_persons
        && l.is_none_or(|l| class.values.len() as f64 >= l)
}

/// Every local algorithm and the optimal search on random 1:M tables of three shapes
/// (persons in one leaf class each, some spread over several, most spread), each case of
/// [`CASES`]: the releases are those of the histogram path, and every class kept meets the
/// requirements on the raw rows, the suppressed rows (counted on the raw rows) are those the
/// evaluation reports and fit the budget, and the reported smallest persons is the raw
/// rows' smallest.
#[tokio::test]
async fn every_algorithm_counts_persons_exactly_on_random_tables() {
    let mut checked = 0;
    let mut multi_leaf_tables = 0;
    for seed in 0..12u64 {
        let spread = [0.0, 0.3, 0.9][seed as usize % 3];
        let rows = random_rows(seed, 40 + 10 * seed, spread);
        let freq = frequency_set(&rows).await;
        let leaf_of_row = leaf_class_of_rows(&freq, &rows);
        let pid = freq.sensitive_index("pid").unwrap();
        if freq.leaf_persons(pid).multi_persons() > 0 {
            multi_leaf_tables += 1;
        }
        let n = rows.len() as u64;
        for case in 0..CASES.len() {
            let (requirements, reference) = (requirements(case, false), requirements(case, true));
            let budget = requirements.max_suppressed_rows(n);
            let context = format!("seed {seed}, case {case}");
            for algorithm in [
                LocalAlgorithm::Mondrian,
                LocalAlgorithm::Kaca,
                LocalAlgorithm::Iab,
            ] {
                let context = format!("{context}, {algorithm}");
                let options = LocalOptions::default();
                let found = anonymize(&freq, &requirements, algorithm, options);
                let expected = anonymize(&freq, &reference, algorithm, options);
                let (release, evaluation) = match (found, expected) {
                    (Ok(found), Ok(expected)) => {
                        assert_eq!(found.0, expected.0, "{context}: another release");
                        found
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(a.to_string(), b.to_string(), "{context}");
                        continue;
                    }
                    (a, b) => panic!("{context}: {:?} against {:?}", a.err(), b.err()),
                };
                let mut classes: Vec<RawClass> = (0..release.classes())
                    .map(|_| RawClass::default())
                    .collect();
                let mut suppressed = 0;
                for (row, &leaf) in rows.iter().zip(&leaf_of_row) {
                    match release.class_of[leaf] {
                        SUPPRESSED => suppressed += 1,
                        c => classes[c as usize].add(row),
                    }
                }
                for (c, class) in classes.iter().enumerate() {
                    assert!(
                        meets(class, case),
                        "{context}: class {c} has {} rows of {} persons",
                        class.rows,
                        class.persons()
                    );
                }
                assert_eq!(evaluation.suppressed_rows, suppressed, "{context}");
                assert!(suppressed <= budget, "{context}");
                let smallest = classes.iter().map(RawClass::persons).min();
                let reported = evaluation.sensitive[0].get("persons");
                assert_eq!(reported, smallest.map(|p| p as f64), "{context}");
                checked += 1;
            }
            // the optimal search: the classes of the chosen node, failing ones suppressed
            let outcome = search(
                &freq,
                &requirements,
                Algorithm::Optimal,
                Metric::Loss,
                &mut |_, _| {},
            )
            .unwrap();
            let expected = search(
                &freq,
                &reference,
                Algorithm::Optimal,
                Metric::Loss,
                &mut |_, _| {},
            )
            .unwrap();
            let (Some(solution), Some(reference)) = (outcome.solution, expected.solution) else {
                assert_eq!(outcome.failure, expected.failure, "{context}, optimal");
                continue;
            };
            assert_eq!(solution.levels, reference.levels, "{context}, optimal");
            let mut classes: BTreeMap<Vec<u32>, RawClass> = BTreeMap::new();
            for (row, &leaf) in rows.iter().zip(&leaf_of_row) {
                let key = freq
                    .qis()
                    .iter()
                    .zip(&solution.levels)
                    .enumerate()
                    .map(|(j, (qi, &level))| {
                        qi.leaf_map(level)[freq.leaf_codes()[j][leaf] as usize]
                    })
                    .collect();
                classes.entry(key).or_default().add(row);
            }
            let suppressed: u64 = classes
                .values()
                .filter(|class| !meets(class, case))
                .map(|class| class.rows)
                .sum();
            assert_eq!(
                solution.evaluation.suppressed_rows, suppressed,
                "{context}, optimal"
            );
            assert!(suppressed <= budget, "{context}, optimal");
            let smallest = classes
                .values()
                .filter(|class| meets(class, case))
                .map(RawClass::persons)
                .min();
            assert_eq!(
                solution.evaluation.sensitive[0].get("persons"),
                smallest.map(|p| p as f64),
                "{context}, optimal"
            );
            checked += 1;
        }
    }
    assert!(checked >= 150, "only {checked} releases checked");
    // two tables in three have persons in several leaf classes
    assert!(multi_leaf_tables >= 8, "{multi_leaf_tables}");
}
