//! Registering tables from paths: a Parquet file, a directory of Parquet files, or a CSV file.
//!
//! Error messages name the table, the path and (for CSV) the line and column at fault, never a
//! value of the data: the data are what this crate protects.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::csv::ReaderBuilder;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::options::ReadOptions;
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

use crate::storage::{self, Location, StoreOptions};

/// Splits a `NAME=PATH` table argument (as given to `anon sql --table`).
pub fn parse_table_arg(arg: &str) -> Result<(String, String)> {
    parse_name_path("--table", arg)
}

/// Splits a `NAME=PATH` argument of command-line option `option` (named in the error) at its
/// first `=`, so paths may contain `=`.
pub fn parse_name_path(option: &str, arg: &str) -> Result<(String, String)> {
    match arg.split_once('=') {
        Some((name, path)) if !name.trim().is_empty() && !path.is_empty() => {
            Ok((name.trim().to_string(), path.to_string()))
        }
        _ => Err(DataFusionError::Plan(format!(
            "{option} expects NAME=PATH, got '{arg}'"
        ))),
    }
}

/// Whether `path` is a glob pattern (`*`, `?` or `[`).
pub fn is_glob(path: &str) -> bool {
    path.contains(['*', '?', '['])
}

/// How a path is read, decided from what it is and its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFormat {
    /// A `.parquet` file or a directory of `.parquet` files.
    Parquet,
    /// A `.csv` (or `.tsv`) file with a header row; the delimiter is read off the header.
    Csv,
}

/// The format `path` is read as, or an error naming the path when it is missing or of an
/// unknown kind. A URL is judged by its extension alone (a URL without one is a prefix of
/// Parquet files).
pub fn table_format(path: &str) -> Result<TableFormat> {
    if is_glob(path) {
        // e.g. data/*.parquet: DataFusion lists the matching files itself
        return if path.to_ascii_lowercase().ends_with(".parquet") {
            Ok(TableFormat::Parquet)
        } else {
            Err(DataFusionError::Plan(format!(
                "{}: a glob must match Parquet files (end in .parquet); CSV is read one file at a time",
                Location::parse(path)?
            )))
        };
    }
    let location = Location::parse(path)?;
    let is_dir = match &location {
        Location::Local(local) => std::fs::metadata(local)
            .map_err(|e| DataFusionError::Plan(format!("cannot open {path}: {e}")))?
            .is_dir(),
        Location::Url(url) => url.path().ends_with('/') || location.extension().is_none(),
    };
    match location.extension().as_deref() {
        _ if is_dir => Ok(TableFormat::Parquet),
        Some("parquet") => Ok(TableFormat::Parquet),
        Some("csv" | "tsv") => Ok(TableFormat::Csv),
        _ => Err(DataFusionError::Plan(format!(
            "{location} is neither a .parquet file, a directory of Parquet files nor a .csv file"
        ))),
    }
}

/// The delimiter of a CSV file: tab for `.tsv`; otherwise read off the header line, `;` when
/// it has more `;` than `,` (the Adult data and ARX's files), else `,`.
fn csv_delimiter(path: &str) -> Result<u8> {
    if path.to_ascii_lowercase().ends_with(".tsv") {
        return Ok(b'\t');
    }
    let header = match Location::parse(path)? {
        Location::Local(local) => {
            let cannot_read =
                |e: std::io::Error| DataFusionError::Plan(format!("cannot read {path}: {e}"));
            let file = File::open(local).map_err(cannot_read)?;
            let mut header = String::new();
            BufReader::new(file)
                .read_line(&mut header)
                .map_err(cannot_read)?;
            header
        }
        // the header of an object: its first line, whatever its length
        remote => storage::read_text_blocking(&remote, &StoreOptions::default())?
            .lines()
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    if header.trim().is_empty() {
        return Err(DataFusionError::Plan(format!(
            "{}: line 1 should be a header row naming the columns, but it is empty",
            Location::parse(path)?
        )));
    }
    let semicolons = header.matches(';').count();
    let commas = header.matches(',').count();
    Ok(if semicolons > commas { b';' } else { b',' })
}

/// Registers `path` (a path or a URL) as table `name` on `ctx`; see [`register_location`].
pub async fn register_path(ctx: &SessionContext, name: &str, path: &str) -> Result<()> {
    register_location(ctx, name, &Location::parse(path)?, &StoreOptions::default()).await
}

/// Registers `location` as table `name` on `ctx`: a Parquet file, a directory (or prefix) of
/// Parquet files, a glob of them, or a CSV file with a header row (`,`- or `;`-separated,
/// detected from the header line). A prefix holding this crate's `_SUCCESS` manifest is read
/// as the files the manifest lists (see [`crate::publish::staged`]). Column types of a CSV
/// file are inferred from its first rows; see [`check_csv`] to locate a later record that
/// does not fit them.
pub async fn register_location(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
) -> Result<()> {
    let in_table =
        |e: DataFusionError| DataFusionError::Plan(format!("table '{name}': {}", e.message()));
    storage::register_store(ctx, location, options).map_err(in_table)?;
    let path = location.datafusion_path();
    match table_format(&path).map_err(in_table)? {
        TableFormat::Parquet if location.is_url() && is_glob(&path) => {
            // DataFusion reads globs in local paths only: list the prefix, match the rest
            let split = path[..path.find(['*', '?', '[']).unwrap_or(0)]
                .rfind('/')
                .map_or(0, |i| i + 1);
            let (prefix, pattern) = path.split_at(split);
            let url = ListingTableUrl::parse(prefix)
                .and_then(|url| url.with_glob(pattern))
                .map_err(in_table)?;
            register_parquet_urls(ctx, name, vec![url])
                .await
                .map_err(in_table)
        }
        TableFormat::Parquet if location.is_url() => {
            register_parquet_url(ctx, name, location, options)
                .await
                .map_err(in_table)
        }
        TableFormat::Parquet => ctx
            .register_parquet(name, &path, ParquetReadOptions::default())
            .await
            .map_err(in_table),
        TableFormat::Csv => {
            let delimiter = csv_delimiter(&path).map_err(in_table)?;
            ctx.register_csv(
                name,
                &path,
                CsvReadOptions::new()
                    .delimiter(delimiter)
                    .has_header(true)
                    // DataFusion's default "csv" would skip e.g. `data.CSV`
                    .file_extension(&extension_of(&path)),
            )
            .await
            .map_err(|e| csv_error(&location.to_string(), &schema_names(None), e))
        }
    }
}

/// A Parquet object or prefix in a bucket: a prefix with a manifest is read as the files it
/// lists; one without must hold Parquet files.
async fn register_parquet_url(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
) -> Result<()> {
    if crate::publish::is_parquet_file(location) {
        if !storage::exists(location, options).await? {
            return Err(DataFusionError::Plan(format!("{location}: not found")));
        }
        return ctx
            .register_parquet(
                name,
                location.datafusion_path(),
                ParquetReadOptions::default(),
            )
            .await;
    }
    let prefix = location.as_prefix();
    let files = match crate::publish::staged::manifest_files(&prefix, options).await? {
        Some(files) => files,
        None => {
            let listed = storage::list(&prefix, options).await?;
            if !listed
                .iter()
                .any(|o| o.location.as_ref().ends_with(".parquet"))
            {
                return Err(DataFusionError::Plan(format!(
                    "{prefix}: no Parquet files under this prefix"
                )));
            }
            return ctx
                .register_parquet(
                    name,
                    prefix.datafusion_path(),
                    ParquetReadOptions::default(),
                )
                .await;
        }
    };
    let urls = files
        .iter()
        .map(|file| ListingTableUrl::parse(prefix.join(file)?.datafusion_path()))
        .collect::<Result<Vec<_>>>()?;
    register_parquet_urls(ctx, name, urls).await
}

/// Registers the Parquet files at `urls` (files, prefixes or globs) as one table.
async fn register_parquet_urls(
    ctx: &SessionContext,
    name: &str,
    urls: Vec<ListingTableUrl>,
) -> Result<()> {
    let listing_options = ParquetReadOptions::default()
        .to_listing_options(&ctx.copied_config(), ctx.copied_table_options());
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(listing_options)
        .infer_schema(&ctx.state())
        .await?;
    ctx.register_table(name, Arc::new(ListingTable::try_new(config)?))?;
    Ok(())
}

/// The extension of `path` with its dot, as the listing table expects (`.csv`).
fn extension_of(path: &str) -> String {
    Path::new(path)
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default()
}

fn schema_names(schema: Option<&SchemaRef>) -> Vec<String> {
    schema
        .map(|s| s.fields().iter().map(|f| f.name().clone()).collect())
        .unwrap_or_default()
}

/// Reads the CSV file `path` from start to end with `schema` (the schema the table was
/// registered with) and reports the first record that does not fit it: a wrong number of
/// fields, or a value that does not parse as its column's type. The error names the file, the
/// line and the column, but not the value.
///
/// A query over a large CSV file reads it in parallel ranges, so the line numbers in its
/// errors are relative to a range; this sequential pass gives the file's own line numbers.
pub fn check_csv(path: &str, schema: SchemaRef) -> Result<()> {
    let delimiter = csv_delimiter(path)?;
    let file =
        File::open(path).map_err(|e| DataFusionError::Plan(format!("cannot read {path}: {e}")))?;
    let names = schema_names(Some(&schema));
    let reader = ReaderBuilder::new(schema)
        .with_header(true)
        .with_delimiter(delimiter)
        .build(file)
        .map_err(|e| csv_error(path, &names, e.into()))?;
    for batch in reader {
        batch.map_err(|e| {
            // arrow's value parser counts records from 1 after the header (its field-count
            // check counts the header too); files count lines from 1 including it
            csv_error(path, &names, shift_parse_lines(e, 1).into())
        })?;
    }
    Ok(())
}

/// A value parse error of arrow's CSV reader with its line number ("at line N") increased by
/// `by`.
fn shift_parse_lines(error: ArrowError, by: usize) -> ArrowError {
    const MARKER: &str = "at line ";
    match error {
        ArrowError::ParseError(message) => {
            let shifted = message.split_once(MARKER).and_then(|(before, rest)| {
                let digits = rest.chars().take_while(char::is_ascii_digit).count();
                let line = rest[..digits].parse::<usize>().ok()?;
                Some(format!("{before}{MARKER}{}{}", line + by, &rest[digits..]))
            });
            ArrowError::ParseError(shifted.unwrap_or(message))
        }
        other => other,
    }
}

/// Rewrites an error from reading CSV file `path` into one naming the file, the line and the
/// column (from `names`, the file's columns in order), with any data value removed.
pub fn csv_error(path: &str, names: &[String], error: DataFusionError) -> DataFusionError {
    let message = match error.find_root() {
        DataFusionError::ArrowError(arrow, _) => match arrow.as_ref() {
            ArrowError::ParseError(m) | ArrowError::CsvError(m) => describe_csv_message(m, names),
            other => redact(&other.to_string()),
        },
        other => redact(&other.message()),
    };
    DataFusionError::Execution(format!("{path}: {message}"))
}

/// Arrow's CSV messages, reworded without the values they quote (arrow-csv 59):
/// - `Error while parsing value '<v>' as type '<T>' for column <c> at line <l>. Row data: '<row>'`
/// - `Error parsing column <c> at line <l>: <detail with the value>`
/// - `incorrect number of fields for line <l>, expected <e> got <g>`
/// - `Encountered unequal lengths between records on CSV file. Expected <e> records, found <g>
///   records at line <l>` (schema inference)
fn describe_csv_message(message: &str, names: &[String]) -> String {
    let column = |index: Option<usize>| match index.and_then(|i| names.get(i).map(|n| (i, n))) {
        Some((_, name)) => format!("column '{name}'"),
        None => match index {
            Some(i) => format!("column {}", i + 1),
            None => "a column".to_string(),
        },
    };
    let line = number_after(message, "at line ");
    let line = line.map_or_else(|| "a line".to_string(), |l| format!("line {l}"));
    if message.starts_with("Error while parsing value") {
        let data_type = message
            .split_once("' as type '")
            .and_then(|(_, rest)| rest.split_once('\''))
            .map_or("the column's type", |(t, _)| t);
        let index = number_after(message, "for column ");
        format!(
            "{line}, {}: a value is not a valid {data_type} (the column's type was inferred \
             from the first rows; the value is not shown)",
            column(index)
        )
    } else if message.starts_with("Error parsing column") {
        let index = number_after(message, "Error parsing column ");
        format!(
            "{line}, {}: a value does not parse as the column's type (the value is not shown)",
            column(index)
        )
    } else if let (Some(l), Some(expected), Some(got)) = (
        number_after(message, "fields for line "),
        number_after(message, "expected "),
        number_after(message, "got "),
    ) {
        format!("line {l} has {got} fields, the header has {expected}")
    } else if let (Some(expected), Some(got)) = (
        number_after(message, "Expected "),
        number_after(message, "found "),
    ) {
        format!("{line} has {got} fields, the header has {expected}")
    } else {
        redact(message)
    }
}

/// The decimal number right after the first `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<usize> {
    let (_, rest) = text.split_once(marker)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Replaces every single-quoted part of `message` (where Arrow and DataFusion quote values)
/// with `'…'`, and drops a trailing `Row data: ...`, so no data value is shown.
pub fn redact(message: &str) -> String {
    let message = message
        .split_once("Row data:")
        .map_or(message, |(before, _)| before)
        .trim_end();
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for ch in message.chars() {
        if ch == '\'' {
            if quoted {
                out.push_str("…'");
            } else {
                out.push('\'');
            }
            quoted = !quoted;
        } else if !quoted {
            out.push(ch);
        }
    }
    if quoted {
        out.push_str("…'");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use std::io::Write;
    use std::sync::Arc;

    #[test]
    fn table_arguments() {
        assert_eq!(
            parse_table_arg("t=a/b.parquet").unwrap(),
            ("t".to_string(), "a/b.parquet".to_string())
        );
        // only the first '=' splits: paths may contain '='
        assert_eq!(parse_table_arg("t=a=b.csv").unwrap().1, "a=b.csv");
        assert!(parse_table_arg("no-equals").is_err());
        assert!(parse_table_arg("=x").is_err());
        assert!(parse_table_arg("x=").is_err());
        let error = parse_name_path("--hierarchy", "education").unwrap_err();
        assert!(error.to_string().contains("--hierarchy expects NAME=PATH"));
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact("Cast error: Cannot cast string 'Male' to value of Int32 type"),
            "Cast error: Cannot cast string '…' to value of Int32 type"
        );
        assert_eq!(redact("a 'b"), "a '…'");
        assert_eq!(redact("x. Row data: '[1, secret]'"), "x.");
    }

    #[test]
    fn csv_messages_lose_their_values() {
        let names = vec!["a".to_string(), "b".to_string()];
        let parse = "Error while parsing value 'secret' as type 'Int64' for column 1 at line \
                     1203. Row data: '[7,secret]'";
        let described = describe_csv_message(parse, &names);
        assert!(!described.contains("secret"), "{described}");
        assert!(described.starts_with("line 1203, column 'b': a value is not a valid Int64"));
        assert_eq!(
            describe_csv_message(
                "incorrect number of fields for line 4, expected 2 got 3",
                &names
            ),
            "line 4 has 3 fields, the header has 2"
        );
    }

    fn write_file(dir: &Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        File::create(&path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        path.to_string_lossy().into_owned()
    }

    #[tokio::test]
    async fn csv_delimiters_and_crlf() {
        let dir = tempfile::tempdir().unwrap();
        // Adult's style: `;`-separated, CRLF line ends, commas inside values
        let semicolons = write_file(dir.path(), "s.csv", "a;b;c\r\n1;x,y;p\r\n2;z;q\r\n");
        let commas = write_file(dir.path(), "c.csv", "a,b\n1,x\n");
        let ctx = SessionContext::new();
        register_path(&ctx, "s", &semicolons).await.unwrap();
        register_path(&ctx, "c", &commas).await.unwrap();
        let s = ctx.table("s").await.unwrap();
        let names: Vec<_> = s
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(s.count().await.unwrap(), 2);
        assert_eq!(ctx.table("c").await.unwrap().count().await.unwrap(), 1);
    }

    #[tokio::test]
    async fn errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = SessionContext::new();
        let missing = dir.path().join("missing.parquet");
        let error = register_path(&ctx, "t", &missing.to_string_lossy())
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("missing.parquet"), "{error}");
        let text = write_file(dir.path(), "notes.txt", "a\n");
        let error = register_path(&ctx, "t", &text)
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("notes.txt"), "{error}");
        let empty = write_file(dir.path(), "empty.csv", "");
        let error = register_path(&ctx, "t", &empty)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("empty.csv") && error.contains("header"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn check_csv_finds_the_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        // the bad value comes after the rows schema inference looks at
        let mut text = String::from("id;age\n");
        for i in 0..1500 {
            text.push_str(&format!("{i};{}\n", i % 90));
        }
        text.push_str("1500;secret\n");
        let path = write_file(dir.path(), "late.csv", &text);
        let ctx = SessionContext::new();
        register_path(&ctx, "t", &path).await.unwrap();
        let schema = ctx.table("t").await.unwrap().schema().inner().clone();
        let error = check_csv(&path, schema).unwrap_err().to_string();
        assert!(!error.contains("secret"), "{error}");
        assert!(error.contains("late.csv"), "{error}");
        assert!(error.contains("line 1502, column 'age'"), "{error}");

        let path = write_file(dir.path(), "fields.csv", "a,b\n1,2\n3,4\n5,6,7\n");
        let schema = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
        ]));
        let error = check_csv(&path, schema).unwrap_err().to_string();
        assert!(
            error.contains("fields.csv: line 4 has 3 fields, the header has 2"),
            "{error}"
        );
    }
}
