//! `anon hierarchy build` and `anon hierarchy check`: built files read back through the
//! policy loader; each level is a function of the one below; quantile levels hold their
//! target size (recounted from the rows); one failing file per rule, each error naming the
//! file, the line and the rule, the same from the check command and the policy loader; an
//! interval builder on a text column refused with nothing written; the bundled hierarchies
//! pass every rule.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::Int32Type;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use datafusion_anonymity_engine::policy::Policy;

use super::{anon, generate_patients, stderr};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).to_string()
}

/// `anon hierarchy build` of `column` of `table` to `out` with `flags`; its stdout.
fn build(table: &Path, column: &str, out: &Path, flags: &[&str]) -> String {
    let mut args = vec![
        "hierarchy",
        "build",
        "--table",
        table.to_str().unwrap(),
        "--column",
        column,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let output = anon(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output)
}

/// The rows of a hierarchy file written by the builder (no field there is quoted but `""`).
fn rows(file: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| l.split(';').map(str::to_string).collect())
        .collect()
}

/// Each label of each level has one parent at the next level (an independent recount).
fn assert_levels_nest(file: &Path) {
    let rows = rows(file);
    let height = rows[0].len();
    let leaves: HashSet<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(leaves.len(), rows.len(), "{}: a leaf twice", file.display());
    for level in 0..height - 1 {
        let mut parent: HashMap<&str, &str> = HashMap::new();
        for r in &rows {
            let previous = parent.insert(&r[level], &r[level + 1]);
            assert!(
                previous.is_none_or(|p| p == r[level + 1]),
                "{}: level {level} has a value with two parents",
                file.display()
            );
        }
    }
    let tops: HashSet<&str> = rows.iter().map(|r| r[height - 1].as_str()).collect();
    assert_eq!(tops, HashSet::from(["*"]));
}

#[tokio::test]
async fn built_hierarchies_read_back_through_the_policy_loader() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("patients.parquet");
    generate_patients(&table, 20_000, 7);
    let zip = dir.path().join("zip.csv");
    let age = dir.path().join("age.csv");
    let income = dir.path().join("income.csv");
    let education = dir.path().join("education.csv");
    let printed = build(&table, "zip", &zip, &["--kind", "prefix", "--keep", "3,1"]);
    assert!(
        printed.contains("a prefix hierarchy of column 'zip'"),
        "{printed}"
    );
    build(
        &table,
        "age",
        &age,
        &["--kind", "quantile", "--min-size", "300,2000,6000"],
    );
    build(
        &table,
        "income",
        &income,
        &["--kind", "interval", "--widths", "10000,50000"],
    );
    build(
        &table,
        "education",
        &education,
        &["--kind", "category", "--min-size", "1000,5000"],
    );
    for file in [&zip, &age, &income, &education] {
        assert_levels_nest(file);
    }
    // zip keeps 3 then 1 characters of five: 021** then 0****
    let zip_rows = rows(&zip);
    assert_eq!(zip_rows[0].len(), 4);
    let z = &zip_rows[0];
    assert_eq!(z[1], format!("{}**", &z[0][..3]));
    assert_eq!(z[2], format!("{}****", &z[0][..1]));

    // quantile levels: recount every row's label from the file; each class ≥ its target
    let label_of: HashMap<i32, Vec<String>> = rows(&age)
        .into_iter()
        .map(|r| (r[0].parse().unwrap(), r))
        .collect();
    let ctx = SessionContext::new();
    ctx.register_parquet("p", table.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let batches = ctx
        .sql("SELECT age FROM p")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let ages: Vec<i32> = batches
        .iter()
        .flat_map(|b| b.column(0).as_primitive::<Int32Type>().values().to_vec())
        .collect();
    assert_eq!(ages.len(), 20_000);
    for (level, target) in [(1, 300), (2, 2000), (3, 6000)] {
        let mut sizes: HashMap<&str, usize> = HashMap::new();
        for a in &ages {
            *sizes.entry(label_of[a][level].as_str()).or_default() += 1;
        }
        let smallest = sizes.values().min().unwrap();
        assert!(*smallest >= target, "level {level}: {smallest} < {target}");
    }

    // the policy loader reads all four and checks every value of each column is a leaf
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        r#"name = "patients"
[input]
path = "patients.parquet"
[privacy]
k = 5
[attributes]
patient_id = { role = "identifier" }
zip = { role = "quasi_identifier", hierarchy = { kind = "tree", file = "zip.csv" } }
age = { role = "quasi_identifier", hierarchy = { kind = "tree", file = "age.csv" } }
income = { role = "quasi_identifier", hierarchy = { kind = "tree", file = "income.csv" } }
education = { role = "quasi_identifier", hierarchy = { kind = "tree", file = "education.csv" } }
sex = { role = "insensitive" }
race = { role = "insensitive" }
marital_status = { role = "insensitive" }
disease = { role = "sensitive" }
[transformation]
zip = 1
age = 2
income = 1
education = 1
"#,
    )
    .unwrap();
    let mut loaded = Policy::from_file(&policy).unwrap();
    let ctx = SessionContext::new();
    loaded.register(&ctx).await.unwrap();
    let heights: Vec<usize> = loaded
        .quasi_identifiers()
        .iter()
        .map(|(_, h)| h.height())
        .collect();
    // zip 0, 3, 1, * = 4; age 0, three quantile levels, * = 5; income 0, two widths, * = 4;
    // education 0, two category levels (unless one merged everything), * ≤ 4
    assert_eq!(&heights[..3], &[4, 5, 4]);
    assert!((3..=4).contains(&heights[3]), "{heights:?}");
    // the generalized table at the fixed levels is readable: each class label is one of the file's
    let generalized = ctx
        .sql("SELECT count(DISTINCT zip), count(*) FROM patients_anon")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(generalized[0].num_rows(), 1);

    // an existing file is kept without --overwrite
    let again = anon(&[
        "hierarchy",
        "build",
        "--table",
        table.to_str().unwrap(),
        "--column",
        "zip",
        "--out",
        zip.to_str().unwrap(),
        "--kind",
        "prefix",
    ]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains("exists; give --overwrite to replace it"),
        "{}",
        stderr(&again)
    );
}

#[tokio::test]
async fn date_units_of_a_csv_date_column() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("visits.csv");
    // read as Date32 (every value is written as a date prints)
    std::fs::write(
        &table,
        "id,day\n1,2024-03-15\n2,2024-03-02\n3,2023-12-31\n4,\n",
    )
    .unwrap();
    let out = dir.path().join("day.csv");
    let printed = build(
        &table,
        "day",
        &out,
        &["--kind", "date", "--units", "month,year"],
    );
    // by hand: 3 distinct days (one NULL row, no leaf); months 2023-12, 2024-03; years 2
    assert!(
        printed.contains("3 leaves, 4 levels (3 rows, 1 NULL)"),
        "{printed}"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "2023-12-31;2023-12;2023;*\n2024-03-02;2024-03;2024;*\n2024-03-15;2024-03;2024;*\n"
    );
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[input]\npath = \"visits.csv\"\n[privacy]\nk = 2\n[attributes]\n\
         id = { role = \"identifier\" }\n\
         day = { role = \"quasi_identifier\", hierarchy = { kind = \"tree\", file = \"day.csv\" } }\n\
         [transformation]\nday = 1\n",
    )
    .unwrap();
    let mut loaded = Policy::from_file(&policy).unwrap();
    let ctx = SessionContext::new();
    loaded.register(&ctx).await.unwrap();
    let batches = ctx
        .sql("SELECT CAST(day AS VARCHAR) FROM visits_anon ORDER BY 1")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let months: Vec<Option<String>> = batches
        .iter()
        .flat_map(|b| {
            let a = datafusion::arrow::compute::cast(
                b.column(0),
                &datafusion::arrow::datatypes::DataType::Utf8,
            )
            .unwrap();
            a.as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect::<Vec<_>>()
        })
        .collect();
    // at the month level with k = 2: 2023-12 and the NULL day are classes of one row,
    // suppressed (dropped); the two 2024-03 rows are published
    assert_eq!(
        months,
        vec![Some("2024-03".to_string()), Some("2024-03".to_string())]
    );
}

#[test]
fn interval_on_a_text_column_is_refused_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("people.csv");
    std::fs::write(&table, "name,age\nann,31\nbob,45\n").unwrap();
    let out = dir.path().join("name.csv");
    let output = anon(&[
        "hierarchy",
        "build",
        "--table",
        table.to_str().unwrap(),
        "--column",
        "name",
        "--out",
        out.to_str().unwrap(),
        "--kind",
        "interval",
        "--widths",
        "10",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let err = stderr(&output);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("column 'name' of {} is Utf8", table.display()))
            && err.contains("kind interval needs a numeric column"),
        "{err}"
    );
    assert!(!out.exists());
    // a flag of another kind is refused too, before any reading
    let output = anon(&[
        "hierarchy",
        "build",
        "--table",
        table.to_str().unwrap(),
        "--column",
        "age",
        "--out",
        out.to_str().unwrap(),
        "--kind",
        "prefix",
        "--widths",
        "10",
    ]);
    assert!(
        stderr(&output).contains("widths does not apply to kind prefix"),
        "{}",
        stderr(&output)
    );
    assert!(!out.exists());
}

#[tokio::test]
async fn each_rule_fails_naming_the_file_the_line_and_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.csv");
    std::fs::write(&table, "id,c\n1,a\n2,b\n3,c\n").unwrap();
    // (rule, file text, what the error says: the file's line and the rule)
    let cases = [
        (
            "well-formed",
            "a;x;*\n\"b;x;*\nc;y;*\n",
            "line 2: a quoted field is not closed",
        ),
        ("not empty", "\n\n", "is empty (no lines)"),
        (
            "same levels",
            "a;x;*\nb;*\nc;y;*\n",
            "line 2: 2 fields, but line 1 has 3",
        ),
        (
            "labelled",
            "a;x;*\nb;;*\nc;y;*\n",
            "line 2, level 1: the label is empty",
        ),
        (
            "unique leaves",
            "a;x;*\nb;x;*\nc;y;*\nb;x;*\n",
            "line 4: duplicate leaf (the same value as line 2)",
        ),
        (
            "one parent",
            "a;x;G;*\nb;y;G;*\nc;y;H;*\n",
            "line 3, level 1: a value has two different parents at level 2 (another at line 2)",
        ),
        (
            "single top",
            "a;x;*\nb;x;*\nc;y;ALL\n",
            "line 3: the last level (2) differs from line 1's",
        ),
        (
            "covers the data",
            "a;x;*\nb;x;*\n",
            "1 distinct value is missing from hierarchy",
        ),
    ];
    for (rule, text, says) in cases {
        let name = format!("{}.csv", rule.replace(' ', "_"));
        let file = dir.path().join(&name);
        std::fs::write(&file, text).unwrap();
        let output = anon(&[
            "hierarchy",
            "check",
            file.to_str().unwrap(),
            "--column",
            "c",
            "--table",
            table.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(1), "{rule}");
        let err = stderr(&output);
        assert!(err.contains(&name), "{rule}: no file in {err}");
        assert!(err.contains(says), "{rule}: {err}");
        assert!(err.contains(&format!("[rule: {rule}]")), "{rule}: {err}");
        // the policy loader says the same
        let policy = dir.path().join("policy.toml");
        std::fs::write(
            &policy,
            format!(
                "[input]\npath = \"t.csv\"\n[privacy]\nk = 2\n[attributes]\n\
                 id = {{ role = \"identifier\" }}\n\
                 c = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", file = \"{name}\" }} }}\n"
            ),
        )
        .unwrap();
        let loaded = Policy::from_file(&policy);
        let e = match loaded {
            Err(e) => e.to_string(),
            Ok(mut p) => p
                .register(&SessionContext::new())
                .await
                .expect_err(rule)
                .to_string(),
        };
        assert!(e.contains(&name) && e.contains(says), "{rule}: {e}");
        assert!(e.contains(&format!("[rule: {rule}]")), "{rule}: {e}");
    }
}

#[test]
fn bundled_hierarchies_pass_every_rule() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/adult");
    let table = root.join("adult.parquet");
    for column in super::ADULT_QIS.into_iter().chain(["salary-class"]) {
        let file = root.join(format!("hierarchies/adult_hierarchy_{column}.csv"));
        let output = anon(&[
            "hierarchy",
            "check",
            file.to_str().unwrap(),
            "--column",
            column,
            "--table",
            table.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{column}: {}", stderr(&output));
        assert!(stdout(&output).contains("valid for column"), "{column}");
    }
}

/// A file of more leaves than the builder reads back through the policy loader
/// (`READ_BACK_LEAVES`, 10,000) is checked on its label arrays alone and streamed out: it
/// loads through the policy loader all the same, and its summary is the classes recounted by
/// hand.
#[tokio::test]
async fn a_large_hierarchy_is_streamed_and_loads() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("ids.csv");
    // ids 1 … 12000, one row each
    let mut text = String::from("id,v\n");
    for id in 1..=12_000 {
        text.push_str(&format!("{id},x\n"));
    }
    std::fs::write(&table, text).unwrap();
    let out = dir.path().join("id.csv");
    let printed = build(
        &table,
        "id",
        &out,
        &["--kind", "interval", "--widths", "1000,5000"],
    );
    // by hand: width 1000 gives [0, 1000) … [12000, 13000): 13 classes, the last holding
    // only 12000; width 5000 gives [0, 5000) 4999 ids, [5000, 10000) 5000, [10000, 15000)
    // 2001
    let levels: Vec<(usize, u64)> = printed
        .lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (classes, smallest) = (f.get(f.len().wrapping_sub(2))?, f.last()?);
            Some((classes.parse().ok()?, smallest.parse().ok()?))
        })
        .collect();
    assert_eq!(
        levels,
        vec![(12_000, 1), (13, 1), (3, 2001), (1, 12_000)],
        "{printed}"
    );
    assert_levels_nest(&out);
    let lines = rows(&out);
    assert_eq!(lines.len(), 12_000);
    assert_eq!(lines[999], vec!["1000", "[1000, 2000)", "[0, 5000)", "*"]);
    // the policy loader reads it, and every id is a leaf
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        "[input]\npath = \"ids.csv\"\n[privacy]\nk = 2\n[attributes]\n\
         v = { role = \"insensitive\" }\n\
         id = { role = \"quasi_identifier\", hierarchy = { kind = \"tree\", file = \"id.csv\" } }\n",
    )
    .unwrap();
    let mut loaded = Policy::from_file(&policy).unwrap();
    loaded.register(&SessionContext::new()).await.unwrap();
    assert_eq!(loaded.quasi_identifiers()[0].1.height(), 4);
    // only the file is there: no staged copy left behind
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, vec!["id.csv", "ids.csv", "policy.toml"]);
}

/// A CSV table of one column `c` whose category hierarchy with `--min-size 3,8` breaks the
/// `one parent` rule on line 6 + `extra` (see the test below): rows a, b, c 1 each; x 7;
/// y 100; the value `{a, b, c}` 10; then `extra` values z00000 … of 1 row each.
pub(super) fn colliding_categories(extra: usize) -> String {
    let mut text = String::from("c\na\nb\nc\n");
    text.push_str(&"x\n".repeat(7));
    text.push_str(&"y\n".repeat(100));
    text.push_str(&"\"{a, b, c}\"\n".repeat(10));
    for i in 0..extra {
        text.push_str(&format!("z{i:05}\n"));
    }
    text
}

/// A builder whose labels break a rule is refused by the check of its label arrays, before
/// anything is written, with the file, the line and the rule: the category builder does not
/// escape its group labels, so a value written `{a, b, c}` and the merged group of a, b and c
/// share a label at level 1, with different parents at level 2. The same with 10,000 more
/// values, beyond the file size read back through the policy loader.
#[test]
fn a_built_file_breaking_a_rule_is_refused_and_nothing_is_written() {
    for extra in [0, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let table = dir.path().join("t.csv");
        std::fs::write(&table, colliding_categories(extra)).unwrap();
        let out = dir.path().join("c.csv");
        let output = anon(&[
            "hierarchy",
            "build",
            "--table",
            table.to_str().unwrap(),
            "--column",
            "c",
            "--out",
            out.to_str().unwrap(),
            "--kind",
            "category",
            "--min-size",
            "3,8",
        ]);
        // by hand, with min size 3: a, b, c (1 row each, the rarest, first by label) merge
        // into {a, b, c}; the z values merge by threes after them; x, y and the value
        // {a, b, c} hold ≥ 3 rows and stay. With 8: the group {a, b, c} (3 rows) is the
        // rarest and merges with the next (x, 7 rows, or the first three z values), while
        // the value {a, b, c} (10 rows) stays {a, b, c}. The leaves in text order: a b c x y
        // z… then {a, b, c} ('{' sorts after 'z'), on line 6 + extra; line 1 (a) has the
        // label {a, b, c} with the other parent.
        assert_eq!(output.status.code(), Some(1), "{extra}");
        let err = stderr(&output);
        let says = format!(
            "c.csv, line {}, level 1: a value has two different parents at level 2 (another \
             at line 1) [rule: one parent]",
            6 + extra
        );
        assert!(err.contains(&says), "{extra}: {err}");
        assert!(!err.contains("{a, b, c}"), "{extra}: a value shown: {err}");
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, vec!["t.csv"], "{extra}");
    }
}
