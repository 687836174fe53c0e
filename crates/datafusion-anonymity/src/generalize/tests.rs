//! Hand-checked recodings with the Adult hierarchies (`examples/adult/hierarchies/`, the ARX
//! files byte for byte), the bad inputs of the issue, and the SQL functions end to end.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, Date32Array, Int64Array, StringArray, StringViewArray,
};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::{ParquetReadOptions, SessionContext, col};

use super::*;

fn adult_file(column: &str) -> String {
    format!(
        "{}/../../examples/adult/hierarchies/adult_hierarchy_{column}.csv",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn adult(column: &str) -> Hierarchy {
    Hierarchy::tree_from_csv_file(column, adult_file(column)).unwrap()
}

fn strings(a: &ArrayRef) -> Vec<Option<&str>> {
    assert_eq!(a.data_type(), &DataType::Utf8View);
    a.as_string_view().iter().collect()
}

/// The labels of one value at every level.
fn chain(h: &Hierarchy, value: ArrayRef) -> Vec<String> {
    (0..h.height())
        .map(|level| {
            let out = h.generalize(&value, level).unwrap();
            out.as_string_view().value(0).to_string()
        })
        .collect()
}

fn one(s: &str) -> ArrayRef {
    Arc::new(StringViewArray::from(vec![s]))
}

#[test]
fn adult_heights_match_the_files() {
    // fields per line of examples/adult/hierarchies/adult_hierarchy_<column>.csv (awk -F';'
    // '{print NF}'): sex 2, age 5, race 2, marital-status 3, education 4, native-country 3,
    // workclass 3, occupation 3, salary-class 2; leaves: the files' lines
    for (column, height, leaves) in [
        ("sex", 2, 2),
        ("age", 5, 100),
        ("race", 2, 5),
        ("marital-status", 3, 7),
        ("education", 4, 16),
        ("native-country", 3, 41),
        ("workclass", 3, 8),
        ("occupation", 3, 14),
        ("salary-class", 2, 2),
    ] {
        let h = adult(column);
        assert_eq!(h.height(), height, "{column}");
        assert_eq!(h.leaf_count(), Some(leaves), "{column}");
    }
}

#[test]
fn adult_age_39() {
    // line 39 of the file: 39;35-39;30-39;20-39;*  (age is Int64 in adult.parquet)
    let h = adult("age");
    let age: ArrayRef = Arc::new(Int64Array::from(vec![39]));
    assert_eq!(chain(&h, age), ["39", "35-39", "30-39", "20-39", "*"]);
    // and as text, and 90 (line 90: 90;85-89;80-89;80-99;*)
    assert_eq!(chain(&h, one("39"))[3], "20-39");
    let age: ArrayRef = Arc::new(Int64Array::from(vec![90]));
    assert_eq!(chain(&h, age), ["90", "85-89", "80-89", "80-99", "*"]);
}

#[test]
fn adult_education_marital_status_native_country() {
    // Bachelors;Undergraduate;Higher education;*
    assert_eq!(
        chain(&adult("education"), one("Bachelors")),
        ["Bachelors", "Undergraduate", "Higher education", "*"]
    );
    // Preschool;Primary School;Primary education;* (the last line)
    assert_eq!(
        chain(&adult("education"), one("Preschool")),
        ["Preschool", "Primary School", "Primary education", "*"]
    );
    // Married-civ-spouse;spouse present;*   Divorced;spouse not present;*
    let h = adult("marital-status");
    assert_eq!(
        chain(&h, one("Married-civ-spouse")),
        ["Married-civ-spouse", "spouse present", "*"]
    );
    assert_eq!(
        chain(&h, one("Divorced")),
        ["Divorced", "spouse not present", "*"]
    );
    // United-States;North America;*  and the last line, which has no line break:
    // Holand-Netherlands;Europe;*
    let h = adult("native-country");
    assert_eq!(
        chain(&h, one("United-States")),
        ["United-States", "North America", "*"]
    );
    assert_eq!(
        chain(&h, one("Holand-Netherlands")),
        ["Holand-Netherlands", "Europe", "*"]
    );
}

#[test]
fn adult_files_read_the_same_with_crlf_and_without_final_newline() {
    let text = std::fs::read_to_string(adult_file("education")).unwrap();
    let crlf = text.trim_end_matches('\n').replace('\n', "\r\n");
    assert!(crlf.contains("\r\n") && !crlf.ends_with('\n'));
    let a = Hierarchy::tree_from_csv_str("education", "education.csv", &text).unwrap();
    let b = Hierarchy::tree_from_csv_str("education", "education.csv", &crlf).unwrap();
    let values: ArrayRef = Arc::new(StringArray::from(vec!["Masters", "9th", "Preschool"]));
    for level in 0..a.height() {
        assert_eq!(
            strings(&a.generalize(&values, level).unwrap()),
            strings(&b.generalize(&values, level).unwrap())
        );
    }
    // no \r leaks into the labels
    assert_eq!(
        strings(&b.generalize(&values, 3).unwrap()),
        vec![Some("*"); 3]
    );
}

#[test]
fn adult_coverage_for_the_loss_metric() {
    // age 39 at level 3 is 20-39: 20 of the 100 leaves, loss (20 − 1)/(100 − 1)
    let h = adult("age");
    let ages: ArrayRef = Arc::new(Int64Array::from(vec![Some(39), None, Some(17)]));
    let c = h.coverage("age", &ages, 3).unwrap();
    assert_eq!(c.domain_size, 100);
    assert_eq!(
        c.leaves.iter().collect::<Vec<_>>(),
        vec![Some(20), None, Some(20)]
    );
    let loss = c.loss();
    assert!((loss.value(0) - 19.0 / 99.0).abs() < 1e-12);
    assert!(loss.is_null(1));
    // level 0 costs 0, the top 1
    assert_eq!(h.coverage("age", &ages, 0).unwrap().loss().value(0), 0.0);
    assert_eq!(h.coverage("age", &ages, 4).unwrap().loss().value(0), 1.0);
    // education: Higher education covers Bachelors, Some-college, Prof-school, Assoc-acdm,
    // Assoc-voc, Masters, Doctorate: 7 of 16 leaves → (7 − 1)/(16 − 1) = 0.4
    let c = adult("education")
        .coverage("education", &one("Bachelors"), 2)
        .unwrap();
    assert_eq!(c.leaves.value(0), 7);
    assert!((c.loss().value(0) - 0.4).abs() < 1e-12);
}

#[test]
fn coverage_of_data_driven_hierarchies() {
    // distinct zips 47677, 47602, 47678, 47905 (and a duplicate, a NULL): |D| = 4;
    // level 2 (476**, 476**, 476**, 479**) → 476** covers 3, 479** covers 1
    let zips: ArrayRef = Arc::new(StringArray::from(vec![
        Some("47677"),
        Some("47602"),
        Some("47678"),
        Some("47905"),
        Some("47677"),
        None,
    ]));
    let h = Hierarchy::mask_from_values("zip", &zips).unwrap();
    let c = h.coverage("zip", &zips, 2).unwrap();
    assert_eq!(c.domain_size, 4);
    assert_eq!(
        c.leaves.iter().collect::<Vec<_>>(),
        vec![Some(3), Some(3), Some(3), Some(1), Some(3), None]
    );
    // (3 − 1)/(4 − 1)
    assert!((c.loss().value(0) - 2.0 / 3.0).abs() < 1e-12);
    assert_eq!(c.loss().value(3), 0.0);
    // ages 22, 27, 29, 30, 36 in width-10 buckets: [20, 30) covers 3, [30, 40) covers 2
    let h = Hierarchy::interval_widths("age", &[10.0]).unwrap();
    let ages: ArrayRef = Arc::new(Int64Array::from(vec![22, 27, 29, 30, 36]));
    let c = h.coverage("age", &ages, 1).unwrap();
    assert_eq!(c.domain_size, 5);
    assert_eq!(
        c.leaves.iter().collect::<Vec<_>>(),
        vec![Some(3), Some(3), Some(3), Some(2), Some(2)]
    );
}

// ---- bad input: one clear error each

#[test]
fn level_above_the_height() {
    let h = adult("age");
    let ages: ArrayRef = Arc::new(Int64Array::from(vec![39]));
    let e = h.generalize(&ages, 7).unwrap_err().to_string();
    assert!(
        e.contains("level 7 > top level 4 of hierarchy 'age' (height 5: levels 0 to 4)"),
        "{e}"
    );
    let e = h.generalize(&ages, 5).unwrap_err().to_string();
    assert!(e.contains("level 5 > top level 4"), "{e}");
    let e = Hierarchy::mask("zip", 5)
        .generalize(&one("12345"), 6)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("level 6 > top level 5 of hierarchy 'zip'"),
        "{e}"
    );
}

#[test]
fn kind_does_not_fit_the_column() {
    let dates: ArrayRef = Arc::new(Date32Array::from(vec![19_797]));
    let text = one("x");
    let ints: ArrayRef = Arc::new(Int64Array::from(vec![1]));
    let binary: ArrayRef = Arc::new(BinaryArray::from(vec![&b"x"[..]]));
    let cases: [(Hierarchy, &ArrayRef, &str); 4] = [
        (
            Hierarchy::mask("zip", 5),
            &dates,
            "hierarchy 'zip' (mask) does not fit column '<unnamed>' of type Date32: it \
             needs a string or integer column",
        ),
        (
            Hierarchy::interval_widths("age", &[5.0]).unwrap(),
            &text,
            "hierarchy 'age' (interval) does not fit column '<unnamed>' of type Utf8View: it \
             needs a numeric column",
        ),
        (
            Hierarchy::date("born", &[DateUnit::Year]).unwrap(),
            &ints,
            "hierarchy 'born' (date) does not fit column '<unnamed>' of type Int64: it \
             needs a Date32, Date64 or Timestamp column",
        ),
        (
            adult("age"),
            &binary,
            "hierarchy 'age' (tree) does not fit column '<unnamed>' of type Binary: it \
             needs a string, numeric, date, timestamp or boolean column",
        ),
    ];
    for (h, values, want) in cases {
        let e = h.generalize(values, 1).unwrap_err().to_string();
        assert!(e.contains(want), "{e}\n  wanted: {want}");
    }
    let e = Hierarchy::mask("zip", 5)
        .check_column("admitted", &DataType::Date32)
        .unwrap_err()
        .to_string();
    assert!(e.contains("column 'admitted' of type Date32"), "{e}");
}

#[test]
fn data_values_missing_from_a_tree() {
    let h = adult("education");
    let values: ArrayRef = Arc::new(StringArray::from(vec![
        Some("Bachelors"),
        Some("PhD-secret"),
        Some("Kindergarten-secret"),
        Some("PhD-secret"),
        None,
    ]));
    let e = h
        .generalize_column("education", &values, 1)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column 'education': 2 distinct values are missing from hierarchy 'education'"),
        "{e}"
    );
    assert!(!e.contains("secret"), "{e}");
    let e = h.validate_values("edu", &values).unwrap_err().to_string();
    assert!(e.contains("column 'edu': 2 distinct values"), "{e}");
    let e = h.coverage("edu", &values, 1).unwrap_err().to_string();
    assert!(e.contains("column 'edu': 2 distinct values"), "{e}");
    // ages outside 1..100
    let ages: ArrayRef = Arc::new(Int64Array::from(vec![0, 39, 101, 0]));
    let e = adult("age")
        .generalize_column("age", &ages, 2)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column 'age': 2 distinct values are missing"),
        "{e}"
    );
}

#[test]
fn bad_hierarchy_files() {
    let e = Hierarchy::tree_from_csv_str("h", "h.csv", "")
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid hierarchy 'h': h.csv is empty"), "{e}");
    let e = Hierarchy::tree_from_csv_str("h", "h.csv", "a;x;*\r\nb;x;*\r\nc;*\r\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("h.csv, line 3: 2 fields, but line 1 has 3 (ragged hierarchy)"),
        "{e}"
    );
    // the same leaf under two parents: a leaf listed twice, whatever its parents
    let e = Hierarchy::tree_from_csv_str("h", "h.csv", "a;x;*\nb;x;*\na;y;*")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains(
            "h.csv, line 3: duplicate leaf (the same value as line 1) [rule: unique leaves]"
        ),
        "{e}"
    );
    // the leaves' parents x and y agree, but y sits under two level-2 groups
    let e = Hierarchy::tree_from_csv_str("h", "h.csv", "a;x;G;*\nb;y;G;*\nc;y;H;*")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("h.csv, line 3, level 1: a value has two different parents at level 2 (another at line 2)"),
        "{e}"
    );
    assert!(!e.contains("H;"), "{e}");
}

// ---- SQL

async fn session() -> SessionContext {
    let ctx = SessionContext::new();
    crate::register(&ctx).unwrap();
    for column in [
        "age",
        "education",
        "marital-status",
        "native-country",
        "sex",
    ] {
        register_hierarchy(&ctx, column, Arc::new(adult(column))).unwrap();
    }
    ctx
}

async fn rows(ctx: &SessionContext, sql: &str) -> Vec<Vec<String>> {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let mut out = Vec::new();
    for batch in &batches {
        let columns: Vec<ArrayRef> = batch
            .columns()
            .iter()
            .map(|c| datafusion::arrow::compute::cast(c, &DataType::Utf8).unwrap())
            .collect();
        for r in 0..batch.num_rows() {
            out.push(
                columns
                    .iter()
                    .map(|c| {
                        let c = c.as_string::<i32>();
                        if c.is_null(r) {
                            "NULL".to_string()
                        } else {
                            c.value(r).to_string()
                        }
                    })
                    .collect(),
            );
        }
    }
    out
}

async fn error(ctx: &SessionContext, sql: &str) -> String {
    match ctx.sql(sql).await {
        Err(e) => e.to_string(),
        Ok(df) => df.collect().await.unwrap_err().to_string(),
    }
}

#[tokio::test]
async fn sql_functions_over_the_adult_parquet() {
    let ctx = session().await;
    let path = format!(
        "{}/../../examples/adult/adult.parquet",
        env!("CARGO_MANIFEST_DIR")
    );
    ctx.register_parquet("adult", &path, ParquetReadOptions::default())
        .await
        .unwrap();
    // the first record: Male;39;White;Never-married;Bachelors;United-States;...
    let got = rows(
        &ctx,
        "SELECT generalize(age, 'age', 2), generalize(education, 'education', 1), \
         generalize(\"marital-status\", 'marital-status', 1), \
         generalize(\"native-country\", 'native-country', 1), generalize(sex, 'sex', 1), \
         mask(education, 3), bucket(age, 10) FROM adult LIMIT 1",
    )
    .await;
    assert_eq!(
        got,
        vec![vec![
            "30-39",
            "Undergraduate",
            "spouse not present",
            "North America",
            "*",
            "Bachel***",
            "[30, 40)"
        ]]
    );
    // every value of the data is in its hierarchy, at every level; the top is one class
    for (column, height) in [
        ("age", 5),
        ("education", 4),
        ("marital-status", 3),
        ("native-country", 3),
    ] {
        for level in 0..height {
            let got = rows(
                &ctx,
                &format!(
                    "SELECT count(*), count(DISTINCT generalize(\"{column}\", '{column}', {level})) \
                     FROM adult"
                ),
            )
            .await;
            assert_eq!(got[0][0], "30162", "{column}");
            if level == height - 1 {
                assert_eq!(got[0][1], "1", "{column}");
            }
        }
    }
    // education level 2 classes, counted by hand from the hierarchy's three groups
    let got = rows(
        &ctx,
        "SELECT generalize(education, 'education', 2) AS e FROM adult GROUP BY 1 ORDER BY 1",
    )
    .await;
    assert_eq!(
        got,
        vec![
            vec!["Higher education"],
            vec!["Primary education"],
            vec!["Secondary education"]
        ]
    );
}

#[tokio::test]
async fn sql_errors_at_planning() {
    let ctx = session().await;
    ctx.sql(
        "CREATE TABLE t(s VARCHAR, n BIGINT, d DATE) AS VALUES ('Male', 39, DATE '2024-03-15')",
    )
    .await
    .unwrap()
    .collect()
    .await
    .unwrap();
    let e = error(&ctx, "SELECT generalize(n, 'age', 7) FROM t").await;
    assert!(
        e.contains("level 7 > top level 4 of hierarchy 'age'"),
        "{e}"
    );
    let e = error(&ctx, "SELECT generalize(n, 'nope', 1) FROM t").await;
    assert!(
        e.contains("unknown hierarchy 'nope' (registered: age, education"),
        "{e}"
    );
    // a date is matched by its text (2024-03-15), which the age tree does not have
    let e = error(&ctx, "SELECT generalize(d, 'age', 1) FROM t").await;
    assert!(
        e.contains("column 'd': 1 distinct value is missing from hierarchy 'age'"),
        "{e}"
    );
    let e = error(&ctx, "SELECT generalize(s, 'age', 1) FROM t").await;
    assert!(
        e.contains("column 's': 1 distinct value is missing from hierarchy 'age'"),
        "{e}"
    );
    let e = error(&ctx, "SELECT generalize(s, 'sex', n) FROM t").await;
    assert!(
        e.contains("generalize: level must be a constant integer"),
        "{e}"
    );
    let e = error(&ctx, "SELECT mask(d, 1) FROM t").await;
    assert!(
        e.contains("mask: col must be a string or integer column, not Date32"),
        "{e}"
    );
    let e = error(&ctx, "SELECT bucket(s, 10) FROM t").await;
    assert!(
        e.contains("bucket: col must be a numeric column, not Utf8"),
        "{e}"
    );
    let e = error(&ctx, "SELECT bucket(n, 0) FROM t").await;
    assert!(e.contains("bucket: width must be a positive number"), "{e}");
    let e = error(&ctx, "SELECT generalize_date(n, 'year') FROM t").await;
    assert!(
        e.contains("generalize_date: col must be a Date32, Date64 or Timestamp"),
        "{e}"
    );
    let e = error(&ctx, "SELECT generalize_date(d, 'fortnight') FROM t").await;
    assert!(e.contains("unknown date unit 'fortnight'"), "{e}");
    let e = error(&ctx, "SELECT mask(s, -1) FROM t").await;
    assert!(e.contains("mask: level must not be negative"), "{e}");
}

#[tokio::test]
async fn registries_are_per_session_and_survive_reregistration() {
    let a = session().await;
    let b = SessionContext::new();
    crate::register(&b).unwrap();
    assert!(registered_hierarchy(&a, "age").is_some());
    assert!(registered_hierarchy(&b, "age").is_none());
    // registering the functions again keeps the hierarchies
    crate::register(&a).unwrap();
    assert!(registered_hierarchy(&a, "age").is_some());
    // register_hierarchy on a bare session registers the functions itself
    let c = SessionContext::new();
    register_hierarchy(&c, "zip", Arc::new(Hierarchy::mask("zip", 5))).unwrap();
    assert_eq!(
        rows(
            &c,
            "SELECT generalize('47677', 'zip', 2), generalize('47677', 'zip', 5)"
        )
        .await,
        vec![vec!["476**", "*****"]]
    );
    // a state cloned from the context shares the registry
    let state = a.state();
    assert!(hierarchy_registry(&state).is_some_and(|r| r.get("education").is_some()));
}

#[tokio::test]
async fn expressions_from_rust() {
    let ctx = session().await;
    let batch = RecordBatch::try_from_iter(vec![
        (
            "zip",
            Arc::new(StringViewArray::from(vec![Some("47677"), None])) as ArrayRef,
        ),
        (
            "age",
            Arc::new(Int64Array::from(vec![Some(39), None])) as ArrayRef,
        ),
        (
            "day",
            Arc::new(Date32Array::from(vec![Some(19_797), None])) as ArrayRef,
        ),
    ])
    .unwrap();
    let df = ctx
        .read_batch(batch)
        .unwrap()
        .select(vec![
            mask_expr(col("zip"), 2).alias("zip"),
            bucket_expr(col("age"), 5.0).alias("age5"),
            generalize_expr(&ctx, col("age"), "age", 1)
                .unwrap()
                .alias("age"),
            generalize_date_expr(col("day"), DateUnit::Quarter).alias("q"),
        ])
        .unwrap();
    let schema = df.schema().clone();
    for field in schema.fields() {
        assert_eq!(field.data_type(), &DataType::Utf8View);
    }
    let batches = df.collect().await.unwrap();
    let b = &batches[0];
    // 19797 days after 1970-01-01 is 2024-03-15 → 2024-Q1
    let got: Vec<Vec<Option<&str>>> = b
        .columns()
        .iter()
        .map(|c| c.as_string_view().iter().collect())
        .collect();
    assert_eq!(
        got,
        vec![
            vec![Some("476**"), None],
            vec![Some("[35, 40)"), None],
            vec![Some("35-39"), None],
            vec![Some("2024-Q1"), None],
        ]
    );
    let e = generalize_expr(&ctx, col("age"), "age", 9)
        .unwrap_err()
        .to_string();
    assert!(e.contains("level 9 > top level 4"), "{e}");
}

#[test]
fn level_meanings_say_what_is_published() {
    // mask of 5 characters: levels 0..=5, 5 is the top
    let zip = Hierarchy::mask("zip", 5);
    assert_eq!(zip.level_meaning(0), "as is");
    assert_eq!(zip.level_meaning(1), "last 1 character masked");
    assert_eq!(zip.level_meaning(3), "last 3 characters masked");
    assert_eq!(zip.level_meaning(5), ERASED);
    // widths [5, 10]: levels value, 5, 10, *
    let age = Hierarchy::interval_widths("age", &[5.0, 10.0]).unwrap();
    assert_eq!(age.level_meaning(2), "width 10");
    assert_eq!(age.level_meaning(3), ERASED);
    // units month, year: levels value, month, year, *
    let admitted = Hierarchy::date("admitted", &[DateUnit::Month, DateUnit::Year]).unwrap();
    assert_eq!(admitted.level_meaning(1), "month");
    assert_eq!(admitted.level_meaning(2), "year");
    let sex = Hierarchy::tree_from_rows("sex", &[vec!["F", "*"], vec!["M", "*"]]).unwrap();
    assert_eq!(sex.level_meaning(1), ERASED);
}
