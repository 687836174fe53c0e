//! Saved recodings: written from a release (published classes only, once each), read back,
//! refused when malformed, and applied to new data by hand.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

use super::matching::QiMatcher;
use super::*;
use crate::generalize::Hierarchy;
use crate::search::local::{Cell, LocalRelease};

/// age (buckets of 5 and 10) and sex (F/M) of `rows`, as a frequency set.
async fn freq_of(rows: &[(Option<i64>, &str)]) -> FrequencySet {
    let ctx = SessionContext::new();
    crate::register(&ctx).unwrap();
    let schema = Arc::new(Schema::new(vec![
        Field::new("age", DataType::Int64, true),
        Field::new("sex", DataType::Utf8, false),
    ]));
    let batch = RecordBatch::try_new(
        Arc::clone(&schema),
        vec![
            Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .unwrap();
    let table = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let qis = vec![
        (
            "age".to_string(),
            Arc::new(Hierarchy::interval_widths("age", &[5.0, 10.0]).unwrap()),
        ),
        (
            "sex".to_string(),
            Arc::new(Hierarchy::tree_from_rows("sex", &[vec!["F", "*"], vec!["M", "*"]]).unwrap()),
        ),
    ];
    FrequencySet::build(&ctx, "t", &qis, &[]).await.unwrap()
}

fn node(level: u32, label: Option<&str>) -> SavedCell {
    SavedCell::Node {
        level,
        label: label.map(str::to_string),
    }
}

fn interval(label: &str) -> SavedCell {
    SavedCell::Interval {
        label: label.to_string(),
    }
}

/// Four classes: ((29, 45), F), ([40, 45), *), (50, M), (NULL, *).
fn four_classes() -> SavedRecoding {
    SavedRecoding {
        format: FORMAT.to_string(),
        version: VERSION,
        algorithm: "mondrian".to_string(),
        local_labels: LocalLabels::ValueFree,
        quasi_identifiers: vec!["age".to_string(), "sex".to_string()],
        classes: vec![
            vec![interval("(29, 45)"), node(0, Some("F"))],
            vec![node(1, Some("[40, 45)")), SavedCell::All],
            vec![node(0, Some("50")), node(0, Some("M"))],
            vec![node(0, None), SavedCell::All],
        ],
    }
}

/// Each combination's (age, sex) and class (`None`: suppressed) in `recoding`.
fn classes_of(
    freq: &FrequencySet,
    recoding: &LocalRecoding,
) -> BTreeMap<(Option<String>, String), Option<u32>> {
    let text = |q: usize, leaf: u32| -> Option<String> {
        let values = cast(freq.qis()[q].leaf_values().unwrap(), &DataType::Utf8).unwrap();
        let s = values.as_string::<i32>();
        s.is_valid(leaf as usize)
            .then(|| s.value(leaf as usize).to_string())
    };
    (0..freq.leaf_classes())
        .map(|c| {
            let age = text(0, freq.leaf_codes()[0][c]);
            let sex = text(1, freq.leaf_codes()[1][c]).unwrap();
            let class = recoding.class_of()[c];
            (
                (age, sex),
                (class < recoding.classes() as u32).then_some(class),
            )
        })
        .collect()
}

/// By hand, against [`four_classes`]. The new input has 6 distinct ages (29, 31, 42, 45, 50,
/// NULL) and 2 sexes; a class's breadth sums the shares its cells cover: class 0 (29, 45) ×
/// F covers 31, 42 and F: 2/6 + 1/2 = 0.83; class 1 [40, 45) × * covers 42 and both sexes:
/// 1/6 + 1 = 1.17; class 2: 1/6 + 1/2 = 0.67; class 3 (NULL × *): 1/6 + 1 = 1.17.
/// - k = 1: 31 F → class 0 (the only one); 42 F is in classes 0 and 1: the narrower, 0;
///   42 M is not F → 1; 50 M → 2 (no interval holds 50); NULL M → 3; 50 F, and 29 F and
///   45 F (the open interval's ends, outside it; 45 is in [45, 50)) → no class: 2 + 1 + 1 = 4
///   rows uncovered. The labels are the file's, `*` for the suppressed.
/// - k = 4: classes 0 (3 rows), 1 (2), 2 (1), 3 (1) are all below k, dissolved in file order:
///   class 0 hands 42 F on to class 1 (31 F has no other class and stays); class 1, now 3
///   rows, is dissolved too, and no class is left for its rows; 2 and 3 likewise. So only
///   42 F moves (to class 1); publishing then suppresses the classes below k.
#[tokio::test]
async fn new_rows_join_the_narrowest_class_covering_them() {
    let rows = [
        (Some(31), "F"),
        (Some(31), "F"),
        (Some(42), "F"),
        (Some(42), "M"),
        (Some(42), "M"),
        (Some(50), "M"),
        (Some(50), "F"),
        (Some(50), "F"),
        (None, "M"),
        (Some(29), "F"),
        (Some(45), "F"),
    ];
    let freq = freq_of(&rows).await;
    let saved = four_classes();
    let (recoding, uncovered) = saved.recoding_for("test.json", &freq, 1).unwrap();
    assert_eq!(uncovered, 4);
    assert_eq!(recoding.suppressed_rows(), 4);
    assert_eq!(recoding.classes(), 4);
    let s = |x: &str| x.to_string();
    let mut want = BTreeMap::from([
        ((Some(s("31")), s("F")), Some(0)),
        ((Some(s("42")), s("F")), Some(0)),
        ((Some(s("42")), s("M")), Some(1)),
        ((Some(s("50")), s("M")), Some(2)),
        ((Some(s("50")), s("F")), None),
        ((None, s("M")), Some(3)),
        ((Some(s("29")), s("F")), None),
        ((Some(s("45")), s("F")), None),
    ]);
    assert_eq!(classes_of(&freq, &recoding), want);
    let ages: Vec<Option<&str>> = recoding.class_labels()[0].as_string_view().iter().collect();
    assert_eq!(
        ages,
        [
            Some("(29, 45)"),
            Some("[40, 45)"),
            Some("50"),
            None,
            Some("*")
        ]
    );
    let sexes: Vec<Option<&str>> = recoding.class_labels()[1].as_string_view().iter().collect();
    assert_eq!(
        sexes,
        [Some("F"), Some("*"), Some("M"), Some("*"), Some("*")]
    );

    let (recoding, uncovered) = saved.recoding_for("test.json", &freq, 4).unwrap();
    assert_eq!(uncovered, 4);
    want.insert((Some(s("42")), s("F")), Some(1));
    assert_eq!(classes_of(&freq, &recoding), want);

    // the lists' lengths counted per cell are those of the lists built leaf by leaf
    for (q, qi) in freq.qis().iter().enumerate() {
        let m = QiMatcher::new("test.json", qi, saved.classes.iter().map(|c| &c[q])).unwrap();
        let lists = m.candidates(&[0.0; 4]);
        let built: Vec<u64> = lists
            .start
            .windows(2)
            .map(|w| (w[1] - w[0]) as u64)
            .collect();
        assert_eq!(m.list_lengths(), built, "QI {q}");
    }
}

/// A release saved: its classes in order with their cells; a class the publish suppressed
/// left out; two classes of one label tuple written once; and the text read back equal.
#[tokio::test]
async fn a_release_is_saved_as_its_published_classes() {
    let rows = [
        (Some(31), "F"),
        (Some(33), "F"),
        (Some(42), "M"),
        (Some(44), "M"),
        (Some(50), "F"),
        (Some(50), "M"),
    ];
    let freq = freq_of(&rows).await;
    // classes by hand on the leaf classes, whatever their numbering: 31 and 33 F → [30, 35)
    // (level 1) and F; 42 and 44 M → ages 42 … 44 as an interval, M; 50 F and 50 M → 50 and *
    // (two classes of one label tuple, written once); class 3 is the suppressed one
    let text = |q: usize, leaf: u32| -> String {
        let v = cast(freq.qis()[q].leaf_values().unwrap(), &DataType::Utf8).unwrap();
        v.as_string::<i32>().value(leaf as usize).to_string()
    };
    let axis = crate::search::local::axes(&freq).unwrap();
    let (mut groups, mut cells) = (vec![Vec::new(); 4], Vec::new());
    for c in 0..freq.leaf_classes() {
        let (age, sex) = (
            text(0, freq.leaf_codes()[0][c]),
            text(1, freq.leaf_codes()[1][c]),
        );
        let g = match (age.as_str(), sex.as_str()) {
            ("31" | "33", _) => 0,
            ("42" | "44", _) => 1,
            ("50", "F") => 2,
            _ => 3,
        };
        groups[g].push(c as u32);
    }
    let map = |q: usize, level: usize, leaf: u32| freq.qis()[q].leaf_map(level)[leaf as usize];
    let leaf = |g: usize, q: usize| freq.leaf_codes()[q][groups[g][0] as usize];
    let rank = |g: usize, i: usize| {
        axis[0].rank_of_leaf()[freq.leaf_codes()[0][groups[g][i] as usize] as usize]
    };
    cells.extend([
        Cell::Node {
            level: 1,
            code: map(0, 1, leaf(0, 0)),
        },
        Cell::Node {
            level: 0,
            code: map(1, 0, leaf(0, 1)),
        },
        Cell::Interval {
            lo: rank(1, 0).min(rank(1, 1)),
            hi: rank(1, 0).max(rank(1, 1)),
        },
        Cell::Node {
            level: 0,
            code: map(1, 0, leaf(1, 1)),
        },
        Cell::Node {
            level: 0,
            code: map(0, 0, leaf(2, 0)),
        },
        Cell::Top,
        Cell::Node {
            level: 0,
            code: map(0, 0, leaf(3, 0)),
        },
        Cell::Top,
    ]);
    let mut class_of = vec![crate::search::local::SUPPRESSED; freq.leaf_classes()];
    for (g, members) in groups.iter().enumerate() {
        for &m in members {
            class_of[m as usize] = g as u32;
        }
    }
    let release = LocalRelease {
        class_of,
        cells,
        width: 2,
    };
    let recoding = LocalRecoding::new(&freq, &release).unwrap();
    // the publish suppressed class 0: its label tuple in a failing-classes batch
    let failing = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("age", DataType::Utf8View, true),
            Field::new("sex", DataType::Utf8View, true),
        ])),
        vec![
            cast(
                &(Arc::new(StringArray::from(vec!["[30, 35)"])) as ArrayRef),
                &DataType::Utf8View,
            )
            .unwrap(),
            cast(
                &(Arc::new(StringArray::from(vec!["F"])) as ArrayRef),
                &DataType::Utf8View,
            )
            .unwrap(),
        ],
    )
    .unwrap();
    let saved = SavedRecoding::of_release(
        &recoding,
        "mondrian",
        LocalLabels::ValueFree,
        Some(&[failing]),
    )
    .unwrap();
    // 42 … 44 with buckets of 5: (39, 45)
    assert_eq!(
        saved.classes,
        vec![
            vec![interval("(39, 45)"), node(0, Some("M"))],
            vec![node(0, Some("50")), SavedCell::All],
        ]
    );
    let text = saved.to_json().unwrap();
    assert!(text.contains("\"cell\": \"interval\""), "{text}");
    assert_eq!(SavedRecoding::from_json("x.json", &text).unwrap(), saved);
}

/// Files that are not recodings, of another version, or of ragged classes are refused with
/// one message naming the file.
#[test]
fn malformed_files_are_refused() {
    let e = SavedRecoding::from_json("r.json", "{}")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("r.json") && e.contains("not a local recoding file"),
        "{e}"
    );
    let mut other = four_classes();
    other.version = 2;
    let e = SavedRecoding::from_json("r.json", &other.to_json().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("version 1"), "{e}");
    let mut ragged = four_classes();
    ragged.classes[1].pop();
    let e = SavedRecoding::from_json("r.json", &ragged.to_json().unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("class 1 has 1 cells for 2"), "{e}");
}

/// Another policy's quasi-identifiers, or an interval that is not one of the column's type,
/// are refused naming the file and the column, never a value.
#[tokio::test]
async fn a_file_for_other_columns_is_refused() {
    let freq = freq_of(&[(Some(31), "F"), (Some(32), "F")]).await;
    let mut other = four_classes();
    other.quasi_identifiers = vec!["sex".to_string(), "age".to_string()];
    let e = other
        .recoding_for("r.json", &freq, 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("r.json") && e.contains("sex, age"), "{e}");
    let mut wrong = four_classes();
    wrong.classes[0][0] = interval("(a, 45)");
    let e = wrong
        .recoding_for("r.json", &freq, 2)
        .unwrap_err()
        .to_string();
    assert!(e.contains("'age'") && e.contains("not an interval"), "{e}");
}
