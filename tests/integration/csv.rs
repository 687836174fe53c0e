//! CSV input that never loses data: values whose text a number or date type would not print
//! back survive a CSV → Parquet publish unchanged, quoted line breaks are read in large files,
//! a bad value under a policy's `type` is one error (file, the file's own line, column, no
//! value) from every command or NULL with `bad_values = "null"`, and a directory of CSV files
//! is one table. Expected values come from the generated input text, never from `anon`.

use std::path::Path;

use datafusion::arrow::array::{Array, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use crate::{Scratch, anon, stderr};

/// Every row of `sql` over the Parquet file `path` (as table `out`), each value as text
/// (`NULL` for NULL).
async fn parquet_rows(path: &Path, sql: &str) -> Vec<Vec<String>> {
    let ctx = SessionContext::new();
    ctx.register_parquet("out", path.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    rows_of(&batches)
}

fn rows_of(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for batch in batches {
        for row in 0..batch.num_rows() {
            rows.push(
                batch
                    .columns()
                    .iter()
                    .map(|column| {
                        let text =
                            datafusion::arrow::compute::cast(column, &DataType::Utf8).unwrap();
                        let text = text.as_string::<i32>();
                        if text.is_null(row) {
                            "NULL".to_string()
                        } else {
                            text.value(row).to_string()
                        }
                    })
                    .collect(),
            );
        }
    }
    rows
}

/// The one value `anon sql --format csv` prints (without its header line).
fn sql_value(args: &[&str]) -> String {
    let mut all = vec!["sql", "--format", "csv"];
    all.extend_from_slice(args);
    let output = anon(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    lines[1].to_string()
}

// ------------------------------------------------------------------ no information lost

/// The values of the columns a number or date type would change, per row: leading-zero ZIP
/// codes, dates in two formats, thousands separators, `+` codes, trailing zeros.
const ZIPS: [&str; 4] = ["02134", "10001", "02139", "00501"];
const VISITS: [&str; 4] = ["2020-01-02", "02/01/2020", "2021-12-31", "31/12/2021"];
const AMOUNTS: [&str; 4] = ["1,234", "987", "12,000", "5"];
const PHONES: [&str; 4] = ["+4930", "+4989", "030", "+1212"];
const PRICES: [&str; 4] = ["1.50", "2.5", "3.0", "10"];

#[tokio::test]
async fn values_survive_a_csv_to_parquet_publish_unchanged() {
    let s = Scratch::new();
    // site: one value, the quasi-identifier (a class of 4 rows, so k = 2 holds with nothing
    // generalized or suppressed); the columns under test are published as they are
    let mut csv = String::from("row,zip,visit,amount,phone,price,visits,site\n");
    for (i, ((((zip, visit), amount), phone), price)) in ZIPS
        .iter()
        .zip(VISITS)
        .zip(AMOUNTS)
        .zip(PHONES)
        .zip(PRICES)
        .enumerate()
    {
        // amounts with a comma must be quoted; visits is a plain integer column
        csv.push_str(&format!(
            "{i},{zip},{visit},\"{amount}\",{phone},{price},{},A\n",
            i * 7
        ));
    }
    s.write("people.csv", &csv);
    let policy = s.write(
        "policy.toml",
        r#"[input]
path = "people.csv"
[privacy]
k = 2
[attributes]
row = { role = "insensitive" }
zip = { role = "insensitive" }
visit = { role = "insensitive" }
amount = { role = "insensitive" }
phone = { role = "insensitive" }
price = { role = "insensitive" }
visits = { role = "insensitive" }
site = { role = "quasi_identifier", hierarchy = { kind = "mask" } }
[transformation]
site = 0
"#,
    );
    let out = s.path("out.parquet");
    let output = anon(&["apply", "--policy", &policy, "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));

    let rows = parquet_rows(
        &out,
        "SELECT row, zip, visit, amount, phone, price, visits FROM out ORDER BY row",
    )
    .await;
    assert_eq!(rows.len(), 4);
    for (i, row) in rows.iter().enumerate() {
        let expected = [
            i.to_string(),
            ZIPS[i].to_string(),
            VISITS[i].to_string(),
            AMOUNTS[i].to_string(),
            PHONES[i].to_string(),
            PRICES[i].to_string(),
            (i * 7).to_string(),
        ];
        assert_eq!(row, &expected, "row {i}");
    }
    // the text columns are text, the integer columns integers
    let types = parquet_rows(
        &out,
        "SELECT arrow_typeof(zip), arrow_typeof(visit), arrow_typeof(price), \
         arrow_typeof(row), arrow_typeof(visits) FROM out LIMIT 1",
    )
    .await;
    let types = &types[0];
    for text in &types[..3] {
        assert!(text.contains("Utf8"), "{types:?}");
    }
    assert_eq!(&types[3..], ["Int64", "Int64"]);
}

// ------------------------------------------------------------------ quoted line breaks

/// A note of record `i`: line breaks, a delimiter and a doubled quote inside quotes.
fn note(i: usize) -> String {
    format!("visit {i}, first line\nsecond line of {i}\n\"quoted\" third")
}

#[test]
fn quoted_line_breaks_in_a_large_file_are_read() {
    let s = Scratch::new();
    let records = 1500;
    let mut csv = String::from("id,zip,note\n");
    for i in 1..=records {
        csv.push_str(&format!(
            "{i},{:05},\"{}\"\n",
            i % 97,
            note(i).replace('"', "\"\"")
        ));
    }
    assert!(csv.len() > 64 * 1024, "{} bytes", csv.len());
    let path = s.write("visits.csv", &csv);
    let table = format!("v={path}");
    // 1 + 2 + … + n = n(n+1)/2
    assert_eq!(
        sql_value(&["--table", &table, "SELECT count(*), sum(id) FROM v"]),
        format!("{records},{}", records * (records + 1) / 2)
    );
    // the note of record 777 as written, line breaks, comma and quotes
    let output = anon(&[
        "sql",
        "--table",
        &table,
        "SELECT note = 'visit 777, first line' || chr(10) || 'second line of 777' || chr(10) \
         || '\"quoted\" third' AS same FROM v WHERE id = 777",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("true"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // the zip column of leading zeros is text, the ids integers
    assert_eq!(
        sql_value(&[
            "--table",
            &table,
            "SELECT arrow_typeof(zip), arrow_typeof(id), min(zip) FROM v GROUP BY 1, 2"
        ]),
        "Utf8,Int64,00000"
    );
}

// ------------------------------------------------------------------ one error path

/// visits.csv: 200 records over two lines each (a quoted note with a line break); record
/// `bad` (from 1) has a birth date that is not a date, record 10's is empty.
fn visits(s: &Scratch, bad: usize) -> String {
    let mut csv = String::from("id,zip,birth_date,note\n");
    for i in 1..=200 {
        let birth = match i {
            _ if i == bad => "not-a-date-XYZ".to_string(),
            10 => String::new(),
            _ => format!("19{:02}-0{}-1{}", 30 + i % 60, 1 + i % 9, i % 10),
        };
        csv.push_str(&format!(
            "{i},{:05},{birth},\"note {i}\nmore\"\n",
            2100 + i % 5
        ));
    }
    s.write("visits.csv", &csv)
}

fn visits_policy(s: &Scratch, bad_values: Option<&str>) -> String {
    let bad_values = bad_values.map_or(String::new(), |b| format!("bad_values = \"{b}\"\n"));
    s.write(
        "policy.toml",
        &format!(
            r#"[input]
path = "visits.csv"
{bad_values}[privacy]
k = 2
[attributes]
id = {{ role = "insensitive" }}
zip = {{ role = "quasi_identifier", hierarchy = {{ kind = "mask" }} }}
birth_date = {{ role = "insensitive", type = "date" }}
note = {{ role = "identifier" }}
[transformation]
zip = 0
"#
        ),
    )
}

#[test]
fn a_bad_value_is_one_error_from_every_command() {
    let s = Scratch::new();
    let input = visits(&s, 123);
    let policy = visits_policy(&s, None);
    let out = s.path("out.parquet");
    let out = out.to_str().unwrap();
    let commands: [Vec<&str>; 4] = [
        vec!["sql", "--policy", &policy, "SELECT count(*) FROM visits"],
        vec!["profile", &input, "--policy", &policy],
        vec!["apply", "--policy", &policy, "--out", out],
        vec!["anonymize", "--policy", &policy, "--out", out],
    ];
    // record 123 starts after the header and 122 records of two lines each
    let line = 1 + 122 * 2 + 1;
    let expected =
        format!("error: {input}: line {line}, column 'birth_date': a value is not a valid Date32");
    let mut errors = Vec::new();
    for command in &commands {
        let output = anon(command);
        assert!(!output.status.success(), "{command:?}");
        let error = stderr(&output);
        assert!(error.starts_with(&expected), "{command:?}: {error}");
        assert_eq!(error.lines().count(), 1, "{command:?}: {error}");
        assert!(!error.contains("XYZ"), "{command:?}: {error}");
        errors.push(error);
    }
    assert!(errors.iter().all(|e| e == &errors[0]), "{errors:#?}");
    assert!(!s.path("out.parquet").exists());
}

/// A date column with one value that is not a date, under a date hierarchy and no `type`:
/// inferred as text, which the hierarchy does not fit. The error names the file, the line of
/// that value (not the value), the type the values before it had and the type inferred, and
/// how to read it as a date; the same from every command.
#[test]
fn an_inferred_type_that_a_hierarchy_does_not_fit_names_the_line() {
    let s = Scratch::new();
    let input = visits(&s, 123);
    let policy = s.write(
        "policy.toml",
        r#"[input]
path = "visits.csv"
[privacy]
k = 2
[attributes]
id = { role = "insensitive" }
zip = { role = "insensitive" }
birth_date = { role = "quasi_identifier", hierarchy = { kind = "date", units = ["year"] } }
note = { role = "identifier" }
[transformation]
birth_date = 1
"#,
    );
    let out = s.path("out.parquet");
    let out = out.to_str().unwrap();
    // record 123 starts after the header and 122 records of two lines each
    let line = 1 + 122 * 2 + 1;
    let expected = format!(
        "error: policy {policy}: {input}: line {line}, column 'birth_date': a value is not a \
         Date32 like the values before it (the value is not shown), so the column is inferred \
         as text (Utf8), and hierarchy 'birth_date' (date) does not fit column 'birth_date' of \
         type Utf8: it needs a Date32, Date64 or Timestamp column; correct the value, or give \
         the attribute type = \"date\""
    );
    for command in [
        vec!["apply", "--policy", &policy, "--out", out],
        vec!["sql", "--policy", &policy, "SELECT count(*) FROM visits"],
    ] {
        let output = anon(&command);
        assert!(!output.status.success(), "{command:?}");
        let error = stderr(&output);
        assert!(error.starts_with(&expected), "{command:?}: {error}");
        assert_eq!(error.lines().count(), 1, "{command:?}: {error}");
        assert!(!error.contains("XYZ"), "{command:?}: {error}");
    }
    assert!(!s.path("out.parquet").exists());
}

#[tokio::test]
async fn bad_values_null_reads_them_as_null_with_a_count() {
    let s = Scratch::new();
    let input = visits(&s, 123);
    let policy = visits_policy(&s, Some("null"));
    let out = s.path("out.parquet");
    let output = anon(&["apply", "--policy", &policy, "--out", out.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let note =
        format!("note: {input}: 1 value of column 'birth_date' is not a valid date; read as NULL");
    assert!(stderr(&output).contains(&note), "{}", stderr(&output));
    // 200 rows: record 10's empty cell and record 123's bad value are NULL
    let rows = parquet_rows(
        &out,
        "SELECT count(*), count(birth_date), arrow_typeof(min(birth_date)), \
         min(id) FILTER (WHERE birth_date IS NULL), max(id) FILTER (WHERE birth_date IS NULL) \
         FROM out",
    )
    .await;
    assert_eq!(rows, [["200", "198", "Date32", "10", "123"]]);

    // the command-line flag overrides the policy's error
    let policy = visits_policy(&s, None);
    let output = anon(&[
        "sql",
        "--format",
        "csv",
        "--policy",
        &policy,
        "--bad-values",
        "null",
        "SELECT count(birth_date) FROM visits",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains(&note), "{}", stderr(&output));
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "count(visits.birth_date)\n198\n"
    );
}

#[test]
fn a_type_for_parquet_input_must_match() {
    let s = Scratch::new();
    let schema = std::sync::Arc::new(Schema::new(vec![
        Field::new("zip", DataType::Utf8, false),
        Field::new("age", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            std::sync::Arc::new(datafusion::arrow::array::StringArray::from(vec!["02134"])),
            std::sync::Arc::new(datafusion::arrow::array::Int64Array::from(vec![30])),
        ],
    )
    .unwrap();
    let file = std::fs::File::create(s.path("people.parquet")).unwrap();
    let mut writer = ArrowWriter::try_new(file, schema, None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let policy = |age_type: &str| {
        s.write(
            "policy.toml",
            &format!(
                "[input]\npath = \"people.parquet\"\n[privacy]\nk = 2\n[attributes]\n\
                 zip = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"mask\" }}, \
                 type = \"utf8\" }}\nage = {{ role = \"insensitive\", type = \"{age_type}\" }}\n"
            ),
        )
    };
    let output = anon(&["sql", "--policy", &policy("date"), "SELECT 1"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("attribute 'age' has type = \"date\", but it is Int64"),
        "{error}"
    );
    // the types it has are accepted
    let output = anon(&["sql", "--policy", &policy("int64"), "SELECT 1"]);
    assert!(output.status.success(), "{}", stderr(&output));
}

// ------------------------------------------------------------------ directories

#[test]
fn a_directory_of_csv_files_is_one_table() {
    let s = Scratch::new();
    s.write("parts/2020.csv", "zip,n\n02134,1\n47677,2\n");
    s.write("parts/2021.csv", "zip,n\n47678,3\n");
    let dir = format!("t={}/", s.path("parts").display());
    // 3 rows, 1 + 2 + 3; a.csv's leading zero keeps zip text in both files
    assert_eq!(
        sql_value(&[
            "--table",
            &dir,
            "SELECT count(*), sum(n), min(zip), arrow_typeof(min(zip)) FROM t"
        ]),
        "3,6,02134,Utf8"
    );
    // a file whose header differs is named
    s.write("parts/2022.csv", "zip,m\n1,2\n");
    let output = anon(&["sql", "--table", &dir, "SELECT count(*) FROM t"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("2022.csv: its header row differs from that of"),
        "{error}"
    );
}
