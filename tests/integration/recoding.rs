//! Reusable local recodings (`anon anonymize --recoding-out`, `anon apply --recoding`): month
//! 1 anonymized with Mondrian and its recoding saved; month 2 published with it, every label
//! from the file, its classes and suppressions recounted by brute force over the raw rows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use super::{anon, stderr};

const K: u64 = 5;

/// One raw row of a month: birth date (`YYYY-MM-DD`), zip, sex.
#[derive(Debug, Clone)]
struct Row {
    born: String,
    zip: &'static str,
    sex: &'static str,
}

/// splitmix64, for the generated months.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// `YYYY-MM-DD` of day `z` since 1970-01-01 (H. Hinnant's civil_from_days).
fn date(z: i64) -> String {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

const ZIPS: [&str; 8] = [
    "13053", "13068", "13210", "13211", "14850", "14853", "10001", "10002",
];

/// A month of `rows` patients born 1940 … 1999 (seeded), plus `future` born in 2031, whom no
/// class of an earlier month can cover.
fn month(seed: u64, rows: usize, future: usize) -> Vec<Row> {
    let mut rng = Rng(seed);
    let mut out: Vec<Row> = (0..rows)
        .map(|_| Row {
            born: date(-10_957 + rng.below(60 * 365) as i64),
            // skewed: low indexes are common
            zip: ZIPS[rng.below(8).min(rng.below(8)) as usize],
            sex: ["F", "M"][rng.below(2) as usize],
        })
        .collect();
    out.extend((0..future).map(|i| Row {
        born: date(22_280 + i as i64),
        zip: ZIPS[0],
        sex: "F",
    }));
    out
}

fn write_csv(path: &Path, rows: &[Row]) {
    let mut text = String::from("patient_id,born,zip,sex,diagnosis\n");
    for (i, r) in rows.iter().enumerate() {
        let diagnosis = ["flu", "cold", "asthma", "diabetes"][i % 4];
        text.push_str(&format!("{i},{},{},{},{diagnosis}\n", r.born, r.zip, r.sex));
    }
    std::fs::write(path, text).unwrap();
}

fn policy(dir: &Path, name: &str, input: &Path, privacy: &str) -> String {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            r#"name = "visits"
[input]
path = "{}"
[privacy]
k = {K}
{privacy}
[attributes]
patient_id = {{ role = "identifier" }}
born = {{ role = "quasi_identifier", hierarchy = {{ kind = "date", units = ["month", "year", "decade"] }} }}
zip = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask", length = 5 }} }}
sex = {{ role = "quasi_identifier", hierarchy = {{ kind = "tree", rows = [["F", "*"], ["M", "*"]] }} }}
diagnosis = {{ role = "sensitive" }}
"#,
            input.display()
        ),
    )
    .unwrap();
    path.display().to_string()
}

/// The written label tuples (born, zip, sex) with their rows.
async fn written_classes(path: &Path) -> BTreeMap<Vec<String>, u64> {
    let ctx = SessionContext::new();
    ctx.register_parquet(
        "t",
        path.display().to_string(),
        ParquetReadOptions::default(),
    )
    .await
    .unwrap();
    let sql = "SELECT born, zip, sex, count(*) FROM t GROUP BY born, zip, sex";
    let mut out = BTreeMap::new();
    for batch in ctx.sql(sql).await.unwrap().collect().await.unwrap() {
        let texts: Vec<_> = (0..3)
            .map(|i| cast(batch.column(i), &DataType::Utf8).unwrap())
            .collect();
        let counts = batch.column(3).as_primitive::<Int64Type>();
        for row in 0..batch.num_rows() {
            let tuple = texts
                .iter()
                .map(|c| {
                    let c = c.as_string::<i32>();
                    assert!(c.is_valid(row), "no NULLs generated");
                    c.value(row).to_string()
                })
                .collect();
            out.insert(tuple, counts.value(row) as u64);
        }
    }
    out
}

/// Whether a published label covers a raw value, read from the label alone: `*`; an open
/// `(a, b)` or closed `[a, b]` interval of dates (ISO dates compare as text); the date
/// hierarchy's month `YYYY-MM`, year `YYYY`, decade `YYY0s`; a masked zip `130**`; the value.
fn covers(label: &str, value: &str) -> bool {
    if label == "*" || label == value {
        return true;
    }
    if let Some(inner) = label.strip_prefix('(').and_then(|l| l.strip_suffix(')')) {
        let (a, b) = inner.split_once(", ").unwrap();
        return a < value && value < b;
    }
    if let Some(inner) = label.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
        let (a, b) = inner.split_once(", ").unwrap();
        return a <= value && value <= b;
    }
    if let Some(decade) = label.strip_suffix('s') {
        return value.len() == 10 && value[..3] == decade[..3];
    }
    if label.contains('*') {
        let kept = label.trim_end_matches('*');
        return label.len() == value.len() && value.starts_with(kept);
    }
    // a month or a year of a date
    value.len() == 10 && value.starts_with(label) && value.as_bytes()[label.len()] == b'-'
}

/// The file's classes: per class, its three labels.
fn file_classes(file: &serde_json::Value) -> Vec<Vec<String>> {
    assert_eq!(file["format"], "datafusion-anonymity local recoding");
    assert_eq!(
        file["quasi_identifiers"],
        serde_json::json!(["born", "zip", "sex"])
    );
    file["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|class| {
            class
                .as_array()
                .unwrap()
                .iter()
                .map(|cell| match cell["cell"].as_str().unwrap() {
                    "all" => "*".to_string(),
                    _ => cell["label"].as_str().unwrap().to_string(),
                })
                .collect()
        })
        .collect()
}

/// Month 1 (3,000 patients) anonymized by Mondrian at k = 5, its recoding saved: the file's
/// classes are exactly the label tuples month 1 published, and its born labels are value-free
/// (intervals on the month grid). Month 2 (3,000 other patients, 3 born in
/// 2031) published with the file: every written label tuple is one of the file's; by brute
/// force over the raw rows, each row joins its class by the documented rule (the narrowest
/// covering class, classes below k dissolved in file order), the rows of no class (the 2031
/// births at least) and of classes still below k are suppressed, and the written classes and
/// the report's counts are exactly those.
#[tokio::test]
async fn month_two_is_published_with_month_ones_classes() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = (dir.path().join("month1.csv"), dir.path().join("month2.csv"));
    let month1 = month(1, 3_000, 0);
    let month2 = month(2, 3_000, 3);
    write_csv(&first, &month1);
    write_csv(&second, &month2);
    let policy1 = policy(dir.path(), "month1.toml", &first, "max_suppression = 0.02");
    let (out1, report1, file) = (
        dir.path().join("month1.parquet"),
        dir.path().join("month1.json"),
        dir.path().join("recoding.json"),
    );
    let output = anon(&[
        "anonymize",
        "--quiet",
        "--policy",
        &policy1,
        "--algorithm",
        "mondrian",
        "--seed",
        "1",
        "--out",
        &out1.display().to_string(),
        "--report",
        &report1.display().to_string(),
        "--recoding-out",
        &file.display().to_string(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    // a recoding file is an output: not replaced without --overwrite, checked before anything
    let again = dir.path().join("again.parquet");
    let output = anon(&[
        "anonymize",
        "--quiet",
        "--policy",
        &policy1,
        "--algorithm",
        "mondrian",
        "--out",
        &again.display().to_string(),
        "--recoding-out",
        &file.display().to_string(),
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("recoding file") && message.contains("exists"),
        "{message}"
    );
    assert!(!again.exists());
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["algorithm"], "mondrian");
    assert_eq!(saved["local_labels"], "value_free");
    let classes = file_classes(&saved);
    let published: BTreeSet<Vec<String>> = written_classes(&out1).await.into_keys().collect();
    let in_file: BTreeSet<Vec<String>> = classes.iter().cloned().collect();
    assert_eq!(in_file.len(), classes.len(), "each label tuple once");
    assert_eq!(in_file, published, "the file holds what month 1 published");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report1).unwrap()).unwrap();
    assert_eq!(report["recoding_file"]["classes"], classes.len());
    // born intervals lie on the month grid: from a month's last day to a 1st, exclusive
    // (whoever is born on those days, they are not the class's members); no [min, max]
    let mut intervals = 0;
    for class in &classes {
        assert!(!class[0].starts_with('['), "{class:?}");
        if let Some(inner) = class[0].strip_prefix('(').and_then(|l| l.strip_suffix(')')) {
            intervals += 1;
            let (a, b) = inner.split_once(", ").unwrap();
            assert!(
                ["-28", "-29", "-30", "-31"].iter().any(|d| a.ends_with(d)) && b.ends_with("-01"),
                "{class:?}"
            );
        }
    }
    assert!(intervals > 10, "{intervals} born intervals");

    // month 2, with month 1's classes
    let policy2 = policy(dir.path(), "month2.toml", &second, "max_suppression = 0.9");
    let (out2, report2) = (
        dir.path().join("month2.parquet"),
        dir.path().join("month2.json"),
    );
    let output = anon(&[
        "apply",
        "--quiet",
        "--policy",
        &policy2,
        "--recoding",
        &file.display().to_string(),
        "--seed",
        "2",
        "--out",
        &out2.display().to_string(),
        "--report",
        &report2.display().to_string(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));

    // brute force over the raw rows, the documented rule: a class's breadth sums, over the
    // three QIs, the share of month 2's distinct values its label covers; each row joins the
    // narrowest covering class (ties: file order); then the first class (file order) holding
    // 1 … k − 1 rows is dissolved, its rows joining the narrowest covering class not
    // dissolved (or staying), until none is left
    let distinct: Vec<BTreeSet<&str>> = (0..3)
        .map(|q| {
            month2
                .iter()
                .map(|r| [r.born.as_str(), r.zip, r.sex][q])
                .collect()
        })
        .collect();
    let breadth: Vec<f64> = classes
        .iter()
        .map(|labels| {
            (0..3).fold(0.0, |sum, q| {
                let covered = distinct[q].iter().filter(|v| covers(&labels[q], v)).count();
                sum + covered as f64 / distinct[q].len() as f64
            })
        })
        .collect();
    let narrowest = |row: &Row, dissolved: &[bool]| -> Option<usize> {
        let values = [row.born.as_str(), row.zip, row.sex];
        (0..classes.len())
            .filter(|&c| !dissolved[c])
            .filter(|&c| classes[c].iter().zip(values).all(|(l, v)| covers(l, v)))
            .fold(None, |best: Option<usize>, c| match best {
                Some(b) if breadth[b] <= breadth[c] => Some(b),
                _ => Some(c),
            })
    };
    let mut dissolved = vec![false; classes.len()];
    let mut class_of: Vec<Option<usize>> =
        month2.iter().map(|r| narrowest(r, &dissolved)).collect();
    let uncovered = class_of.iter().filter(|c| c.is_none()).count() as u64;
    loop {
        let mut rows_in = vec![0u64; classes.len()];
        for c in class_of.iter().flatten() {
            rows_in[*c] += 1;
        }
        let Some(small) =
            (0..classes.len()).find(|&c| !dissolved[c] && rows_in[c] > 0 && rows_in[c] < K)
        else {
            break;
        };
        dissolved[small] = true;
        for (row, class) in month2.iter().zip(class_of.iter_mut()) {
            if *class == Some(small)
                && let Some(next) = narrowest(row, &dissolved)
            {
                *class = Some(next);
            }
        }
    }
    let mut rows_of: BTreeMap<usize, u64> = BTreeMap::new();
    for c in class_of.iter().flatten() {
        *rows_of.entry(*c).or_default() += 1;
    }
    let expected: BTreeMap<Vec<String>, u64> = rows_of
        .iter()
        .filter(|(_, n)| **n >= K)
        .map(|(&c, &n)| (classes[c].clone(), n))
        .collect();
    let below_k: u64 = rows_of.values().filter(|&&n| n < K).sum();
    assert!(below_k > 0, "some class is below k in month 2");
    let written = written_classes(&out2).await;
    assert_eq!(written, expected);
    assert!(written.keys().all(|tuple| in_file.contains(tuple)));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report2).unwrap()).unwrap();
    assert_eq!(report["recoding"], "local");
    assert_eq!(report["recoding_file"]["uncovered_rows"], uncovered);
    assert_eq!(report["recoding_file"]["classes"], classes.len());
    assert_eq!(report["publish"]["suppressed_rows"], uncovered + below_k);
    assert_eq!(report["publish"]["input_rows"], month2.len());
    let smallest = *expected.values().min().unwrap();
    assert!(smallest >= K);
    assert_eq!(report["publish"]["verification"]["k"], smallest);

    // without a suppression budget the same release is refused, and nothing is written
    let strict = policy(dir.path(), "strict.toml", &second, "max_suppression = 0.0");
    let out3 = dir.path().join("strict.parquet");
    let output = anon(&[
        "apply",
        "--quiet",
        "--policy",
        &strict,
        "--recoding",
        &file.display().to_string(),
        "--out",
        &out3.display().to_string(),
    ]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains(&format!("suppresses {}", uncovered + below_k))
            && message.contains("nothing written"),
        "{message}"
    );
    assert!(!out3.exists());
}

/// `--recoding-out` needs a local algorithm; `--recoding` a recoding file; `local_labels =
/// "exact"` publishes `[min, max]` born labels, whose ends are birth dates.
#[test]
fn recoding_files_and_exact_labels() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("month.csv");
    let rows = month(3, 600, 0);
    write_csv(&input, &rows);
    let exact = policy(
        dir.path(),
        "exact.toml",
        &input,
        "max_suppression = 0.05\nlocal_labels = \"exact\"",
    );
    let (out, file) = (dir.path().join("o.parquet"), dir.path().join("r.json"));
    let run = |extra: &[&str]| {
        let mut args = vec!["anonymize", "--quiet", "--policy", &exact];
        let out = out.display().to_string();
        args.extend(["--out", &out, "--overwrite"]);
        args.extend(extra);
        anon(&args)
    };
    let file_arg = file.display().to_string();
    let output = run(&["--recoding-out", &file_arg]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("--recoding-out is for local recoding"),
        "{}",
        stderr(&output)
    );
    assert!(!file.exists());
    let output = run(&["--algorithm", "mondrian", "--recoding-out", &file_arg]);
    assert!(output.status.success(), "{}", stderr(&output));
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["local_labels"], "exact");
    let births: BTreeSet<&str> = rows.iter().map(|r| r.born.as_str()).collect();
    let closed: Vec<Vec<String>> = file_classes(&saved)
        .into_iter()
        .filter(|c| c[0].starts_with('['))
        .collect();
    assert!(!closed.is_empty());
    for class in &closed {
        let (a, b) = class[0][1..class[0].len() - 1].split_once(", ").unwrap();
        assert!(births.contains(a) && births.contains(b), "{class:?}");
    }
    // a file that is not a recoding
    std::fs::write(&file, "{\"classes\": []}").unwrap();
    let output = anon(&[
        "apply",
        "--quiet",
        "--policy",
        &exact,
        "--recoding",
        &file_arg,
        "--out",
        &dir.path().join("again.parquet").display().to_string(),
    ]);
    assert!(!output.status.success());
    assert!(
        stderr(&output).contains("is not a local recoding file"),
        "{}",
        stderr(&output)
    );
}
