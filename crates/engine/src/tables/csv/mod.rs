//! Reading CSV files without losing information.
//!
//! DataFusion infers CSV column types from the first rows and reads `02134` as the integer
//! 2134: a ZIP code masked afterwards names a wrong region. Here a CSV file (or a directory of
//! them) is read once, sequentially, before it is registered, and a column is given a type
//! other than text only when every value of the column is the exact spelling of its value in
//! that type (see `Candidates`, candidates.rs); the table is then registered with that
//! explicit schema.
//!
//! A policy may name a column's type (`type = "date"`, [`ColumnType`]): such a column is read
//! as text and converted as SQL's `CAST` would. A value that does not convert is an error
//! naming the file, the line and the column (never the value), or with
//! [`BadValues::Null`] is read as NULL, counted on stderr.
//!
//! Every error of reading a CSV file goes through `read_error` (arrow's errors) or
//! `value_error` (a value that does not convert; both in errors.rs), which name the file's own
//! line: the line where the record starts, also when quoted values hold line breaks.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::compute::{CastOptions, cast_with_options};
use datafusion::arrow::csv::ReaderBuilder;
use datafusion::arrow::csv::reader::Format;
use datafusion::arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::arrow::error::ArrowError;
use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::options::ReadOptions;
use datafusion::logical_expr::{Expr, cast, try_cast};
use datafusion::prelude::{CsvReadOptions, SessionContext, ident};
use serde::Deserialize;

use crate::storage::{self, Location, StoreOptions};
use candidates::Candidates;
pub use errors::{TypeChange, check_csv, locate_type_change};
use errors::{read_error, record_start_line, value_error};

mod candidates;
mod errors;

/// A column type a policy may give a CSV column (`type = "..."` of an attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// 64-bit integers.
    Int64,
    /// 64-bit floating point numbers.
    Float64,
    /// Text, as written in the file.
    Utf8,
    /// Dates (`Date32`).
    Date,
    /// Timestamps without a time zone (`Timestamp(Microsecond)`).
    Timestamp,
    /// `true` / `false`.
    Bool,
}

impl ColumnType {
    /// The name in policy files.
    pub fn name(self) -> &'static str {
        match self {
            Self::Int64 => "int64",
            Self::Float64 => "float64",
            Self::Utf8 => "utf8",
            Self::Date => "date",
            Self::Timestamp => "timestamp",
            Self::Bool => "bool",
        }
    }

    /// The Arrow type a column of this type is read as.
    pub fn data_type(self) -> DataType {
        match self {
            Self::Int64 => DataType::Int64,
            Self::Float64 => DataType::Float64,
            Self::Utf8 => DataType::Utf8,
            Self::Date => DataType::Date32,
            Self::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            Self::Bool => DataType::Boolean,
        }
    }

    /// Whether a column of `data_type` already is of this type (any integer width for
    /// `int64`, any timestamp unit for `timestamp`, …): such a column needs no conversion, and
    /// a Parquet column of another type is refused.
    pub fn matches(self, data_type: &DataType) -> bool {
        match (self, data_type) {
            (_, DataType::Dictionary(_, value)) => self.matches(value),
            (Self::Int64, t) => t.is_integer(),
            (Self::Float64, t) => t.is_floating(),
            (Self::Utf8, t) => {
                matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
            }
            (Self::Date, t) => matches!(t, DataType::Date32 | DataType::Date64),
            (Self::Timestamp, t) => matches!(t, DataType::Timestamp(_, _)),
            (Self::Bool, t) => matches!(t, DataType::Boolean),
        }
    }

    /// The type whose columns `data_type` is read as (`date` for `Date32`), if any but text.
    pub fn of(data_type: &DataType) -> Option<Self> {
        [
            Self::Int64,
            Self::Float64,
            Self::Date,
            Self::Timestamp,
            Self::Bool,
        ]
        .into_iter()
        .find(|ty| ty.matches(data_type))
    }

    /// The kind of value, for notes ("is not a valid date").
    fn noun(self) -> &'static str {
        match self {
            Self::Int64 => "integer",
            Self::Float64 => "number",
            Self::Utf8 => "text",
            Self::Date => "date",
            Self::Timestamp => "timestamp",
            Self::Bool => "boolean",
        }
    }
}

/// What to do with a value that does not convert to the type a policy gives its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BadValues {
    /// Refuse the input, naming the file, the line and the column.
    #[default]
    Error,
    /// Read the value as NULL, and count such values on stderr.
    Null,
}

impl BadValues {
    /// `error` or `null`, as on the command line (`--bad-values`).
    pub fn parse(text: &str) -> Result<Self> {
        match text {
            "error" => Ok(Self::Error),
            "null" => Ok(Self::Null),
            other => Err(DataFusionError::Plan(format!(
                "bad values are handled by \"error\" or \"null\", not \"{other}\""
            ))),
        }
    }
}

/// How CSV files are read beyond what the file says: the types a policy gives columns, and
/// what becomes of values that do not convert to them.
#[derive(Debug, Clone, Default)]
pub struct CsvOptions {
    /// Column types by column name; names the file does not have are ignored.
    pub types: BTreeMap<String, ColumnType>,
    /// Values that do not convert: an error (the default) or NULL.
    pub bad_values: BadValues,
}

/// Where the bytes of one CSV file come from: a local file is read from disk (twice when an
/// error needs its line), an object is fetched once, whole.
#[derive(Debug, Clone)]
enum Source {
    Local(PathBuf),
    Bytes(Bytes),
}

impl Source {
    fn open(&self, name: &str) -> Result<Box<dyn Read + Send>> {
        Ok(match self {
            Self::Local(path) => Box::new(
                File::open(path)
                    .map_err(|e| DataFusionError::Plan(format!("cannot read {name}: {e}")))?,
            ),
            Self::Bytes(bytes) => Box::new(Cursor::new(bytes.clone())),
        })
    }
}

/// One CSV file of a table.
#[derive(Debug, Clone)]
struct CsvFile {
    /// As named in messages: the path or URL as given.
    name: String,
    /// Where DataFusion reads it from.
    url: String,
    source: Source,
    delimiter: u8,
}

impl CsvFile {
    /// The file at `location`, read from `source`, with the delimiter read off its header
    /// line.
    fn new(location: &Location, source: Source) -> Result<Self> {
        let name = location.to_string();
        let delimiter = delimiter_of(&name, &source)?;
        Ok(Self {
            name,
            url: location.datafusion_path(),
            source,
            delimiter,
        })
    }

    /// The column names of the header row.
    fn header(&self) -> Result<Vec<String>> {
        let (schema, _) = Format::default()
            .with_header(true)
            .with_delimiter(self.delimiter)
            .infer_schema(self.source.open(&self.name)?, Some(0))
            .map_err(|e| read_error(self, &[], e))?;
        Ok(schema.fields().iter().map(|f| f.name().clone()).collect())
    }

    /// The line (from 1) where record `record` starts, counting the header as record 0.
    fn line_of_record(&self, record: usize) -> Option<usize> {
        let reader = BufReader::new(self.source.open(&self.name).ok()?);
        record_start_line(reader, self.delimiter, record)
    }
}

/// The delimiter of a CSV file: tab for `.tsv`; otherwise read off the header line, `;` when
/// it has more `;` than `,` (the Adult data and ARX's files), else `,`.
fn delimiter_of(name: &str, source: &Source) -> Result<u8> {
    let mut header = String::new();
    BufReader::new(source.open(name)?)
        .read_line(&mut header)
        .map_err(|e| DataFusionError::Plan(format!("cannot read {name}: {e}")))?;
    if header.trim().is_empty() {
        return Err(DataFusionError::Plan(format!(
            "{name}: line 1 should be a header row naming the columns, but it is empty"
        )));
    }
    if name.to_ascii_lowercase().ends_with(".tsv") {
        return Ok(b'\t');
    }
    let semicolons = header.matches(';').count();
    let commas = header.matches(',').count();
    Ok(if semicolons > commas { b';' } else { b',' })
}

/// Whether `path` names a CSV file by its extension (`.csv` or `.tsv`, any case).
fn is_csv_name(path: &Path) -> bool {
    path.extension()
        .map(|e| e.to_ascii_lowercase())
        .is_some_and(|e| e == "csv" || e == "tsv")
}

/// The files of directory `dir` when they are all CSV files (`.csv` or `.tsv`), sorted by
/// name; `None` when the directory holds anything else (Parquet files, subdirectories) or
/// nothing. Hidden files and files starting with `_` (`_SUCCESS`) are not data.
pub fn csv_files_in(dir: &Path) -> Result<Option<Vec<PathBuf>>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| DataFusionError::Plan(format!("cannot read {}: {e}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries {
        let entry = entry
            .map_err(|e| DataFusionError::Plan(format!("cannot read {}: {e}", dir.display())))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.starts_with('_') {
            continue;
        }
        let path = entry.path();
        if path.is_dir() || !is_csv_name(&path) {
            return Ok(None);
        }
        files.push(path);
    }
    files.sort();
    Ok((!files.is_empty()).then_some(files))
}

/// The files of the CSV table at `location`: the file, every file of a local directory of
/// CSV files, or the object at a URL (fetched whole).
async fn files_of(location: &Location, store: &StoreOptions) -> Result<Vec<CsvFile>> {
    match location {
        Location::Local(path) if path.is_dir() => {
            let files = csv_files_in(path)?.ok_or_else(|| {
                DataFusionError::Plan(format!("{location}: not a directory of CSV files"))
            })?;
            files
                .into_iter()
                .map(|file| CsvFile::new(&Location::Local(file.clone()), Source::Local(file)))
                .collect()
        }
        Location::Local(path) => Ok(vec![CsvFile::new(location, Source::Local(path.clone()))?]),
        Location::Url(url) if url.path().ends_with('/') || location.extension().is_none() => {
            // a prefix: its CSV (and TSV) objects, in key order
            let prefix = location.as_prefix();
            let Location::Url(prefix_url) = &prefix else {
                return Err(DataFusionError::Internal("a URL prefix is a URL".into()));
            };
            let key = prefix_url.path().trim_start_matches('/').to_string();
            let mut names: Vec<String> = storage::list(&prefix, store)
                .await?
                .into_iter()
                .map(|o| o.location.as_ref().to_string())
                .filter(|name| {
                    let lower = name.to_ascii_lowercase();
                    lower.ends_with(".csv") || lower.ends_with(".tsv")
                })
                .collect();
            names.sort();
            if names.is_empty() {
                return Err(DataFusionError::Plan(format!(
                    "{prefix}: no CSV files under this prefix"
                )));
            }
            let mut files = Vec::with_capacity(names.len());
            for name in names {
                let file = prefix.join(name.strip_prefix(&key).unwrap_or(&name))?;
                let bytes = storage::read_bytes(&file, store).await?;
                files.push(CsvFile::new(&file, Source::Bytes(bytes))?);
            }
            Ok(files)
        }
        Location::Url(_) => {
            let bytes = storage::read_bytes(location, store).await?;
            Ok(vec![CsvFile::new(location, Source::Bytes(bytes))?])
        }
    }
}

/// Registers the CSV file or directory of CSV files at `location` as table `name`: reads it
/// once to infer every column's type (see `Candidates`) and to convert the columns whose
/// type `options` sets, then registers the files with that schema, quoted line breaks read
/// as part of their values. Columns converted to a type are read as text and cast in a view
/// (`try_cast` with [`BadValues::Null`], after a note on stderr counting the NULLs).
pub(super) async fn register(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    store: &StoreOptions,
    options: &CsvOptions,
) -> Result<()> {
    let files = files_of(location, store).await?;
    let urls = files
        .iter()
        .map(|file| match &file.source {
            Source::Local(path) => ListingTableUrl::parse(path.to_string_lossy()),
            Source::Bytes(_) => ListingTableUrl::parse(&file.url),
        })
        .collect::<Result<Vec<_>>>()?;
    let scan_options = options.clone();
    // a whole pass over the data: off the async threads
    let scan = tokio::task::spawn_blocking(move || infer(&files, &scan_options))
        .await
        .map_err(|e| DataFusionError::Execution(format!("reading {location} failed: {e}")))??;
    for note in &scan.notes {
        eprintln!("note: {note}");
    }
    let fields: Vec<Field> = scan
        .names
        .iter()
        .zip(&scan.file_types)
        .map(|(name, data_type)| Field::new(name, data_type.clone(), true))
        .collect();
    let file_schema = Arc::new(Schema::new(fields));
    let listing_options = CsvReadOptions::new()
        .delimiter(scan.delimiter)
        .has_header(true)
        // a record may span lines: no reading of byte ranges in parallel
        .newlines_in_values(true)
        // the files are listed one by one, whatever their extension's case
        .file_extension("")
        .to_listing_options(&ctx.copied_config(), ctx.copied_table_options());
    let config = ListingTableConfig::new_with_multi_paths(urls)
        .with_listing_options(listing_options)
        .with_schema(file_schema);
    let table = Arc::new(ListingTable::try_new(config)?);
    if scan.casts.iter().all(Option::is_none) {
        ctx.register_table(name, table)?;
        return Ok(());
    }
    let columns: Vec<Expr> = scan
        .names
        .iter()
        .zip(&scan.casts)
        .map(|(column, convert)| match convert {
            None => ident(column),
            // validated by the scan: a failing CAST means the file changed since
            Some(ty) if options.bad_values == BadValues::Error => {
                cast(ident(column), ty.data_type()).alias(column)
            }
            Some(ty) => try_cast(ident(column), ty.data_type()).alias(column),
        })
        .collect();
    let view = ctx.read_table(table)?.select(columns)?.into_view();
    ctx.register_table(name, view)?;
    Ok(())
}

/// What the pass over a CSV table found.
#[derive(Debug)]
struct Scan {
    names: Vec<String>,
    delimiter: u8,
    /// The type each column is read from the files as.
    file_types: Vec<DataType>,
    /// The type a column is then cast to (a policy's type the values are not spelled in).
    casts: Vec<Option<ColumnType>>,
    /// Counts of values read as NULL, one line per file and column.
    notes: Vec<String>,
}

/// One pass over `files` (one table): the header and delimiter of every file must match the
/// first's; each column's type is inferred, and values of columns `options` gives a type are
/// checked to convert.
fn infer(files: &[CsvFile], options: &CsvOptions) -> Result<Scan> {
    let Some(first) = files.first() else {
        return Err(DataFusionError::Plan("no CSV file to read".into()));
    };
    let names = first.header()?;
    let forced: Vec<Option<ColumnType>> = names
        .iter()
        .map(|name| options.types.get(name).copied())
        .collect();
    let mut candidates = vec![Candidates::default(); names.len()];
    let mut notes = Vec::new();
    let utf8 = vec![DataType::Utf8; names.len()];
    for file in files {
        if file.delimiter != first.delimiter || file.header()? != names {
            return Err(DataFusionError::Plan(format!(
                "{}: its header row differs from that of {} (the files of a directory are one \
                 table: they need the same columns, in the same order, with the same delimiter)",
                file.name, first.name
            )));
        }
        let mut bad = vec![0usize; names.len()];
        read_file(file, &names, &utf8, |first_record, batch| {
            for (i, values) in batch.columns().iter().enumerate() {
                candidates[i].update(values.as_string::<i32>());
                if let Some(ty) = forced[i].filter(|ty| *ty != ColumnType::Utf8) {
                    let failed = failed_casts(values, ty)?;
                    if let Some(&row) = failed.first()
                        && options.bad_values == BadValues::Error
                    {
                        return Err(Fault::Value {
                            record: first_record + row,
                            column: i,
                            ty,
                        });
                    }
                    bad[i] += failed.len();
                }
            }
            Ok(())
        })?;
        for (i, &count) in bad.iter().enumerate() {
            if let (Some(ty), true) = (forced[i], count > 0) {
                let (values, verb) = if count == 1 {
                    ("value", "is not a valid")
                } else {
                    ("values", "are not valid")
                };
                let noun = if count == 1 {
                    ty.noun().to_string()
                } else {
                    format!("{}s", ty.noun())
                };
                notes.push(format!(
                    "{}: {count} {values} of column '{}' {verb} {noun}; read as NULL",
                    file.name, names[i]
                ));
            }
        }
    }
    let mut file_types = Vec::with_capacity(names.len());
    let mut casts = Vec::with_capacity(names.len());
    for (inferred, ty) in candidates.iter().map(Candidates::data_type).zip(&forced) {
        match ty {
            Some(ty) if !ty.matches(&inferred) => {
                file_types.push(DataType::Utf8);
                casts.push((*ty != ColumnType::Utf8).then_some(*ty));
            }
            _ => {
                file_types.push(inferred);
                casts.push(None);
            }
        }
    }
    Ok(Scan {
        names,
        delimiter: first.delimiter,
        file_types,
        casts,
        notes,
    })
}

/// The rows (within `values`) holding a value that does not convert to `ty`.
fn failed_casts(values: &ArrayRef, ty: ColumnType) -> std::result::Result<Vec<usize>, Fault> {
    let options = CastOptions {
        safe: true,
        ..CastOptions::default()
    };
    let converted = cast_with_options(values, &ty.data_type(), &options).map_err(Fault::Arrow)?;
    Ok((0..values.len())
        .filter(|&row| values.is_valid(row) && converted.is_null(row))
        .collect())
}

/// Why reading a file stopped.
enum Fault {
    /// Arrow's reader failed (a record with the wrong number of fields, a value that does not
    /// parse as a column's type, bytes that are not UTF-8).
    Arrow(ArrowError),
    /// Data record `record` (from 0, after the header) holds in column `column` a value that
    /// does not convert to `ty`.
    Value {
        record: usize,
        column: usize,
        ty: ColumnType,
    },
    /// What the reading looked for is found: the rest of the file is not read.
    Found,
}

/// Reads `file` from start to end with columns of `types`, handing each batch with the index
/// of its first data record to `each`; a fault is turned into an error naming the file's line.
fn read_file(
    file: &CsvFile,
    names: &[String],
    types: &[DataType],
    mut each: impl FnMut(usize, &RecordBatch) -> std::result::Result<(), Fault>,
) -> Result<()> {
    let fields: Vec<Field> = names
        .iter()
        .zip(types)
        .map(|(name, data_type)| Field::new(name, data_type.clone(), true))
        .collect();
    let reader = ReaderBuilder::new(Arc::new(Schema::new(fields)))
        .with_header(true)
        .with_delimiter(file.delimiter)
        .build(file.source.open(&file.name)?)
        .map_err(|e| read_error(file, names, e))?;
    let mut records = 0;
    for batch in reader {
        let batch = batch.map_err(|e| read_error(file, names, e))?;
        match each(records, &batch) {
            Ok(()) => {}
            Err(Fault::Arrow(e)) => return Err(read_error(file, names, e)),
            Err(Fault::Value { record, column, ty }) => {
                return Err(value_error(file, record, &names[column], ty));
            }
            Err(Fault::Found) => return Ok(()),
        }
        records += batch.num_rows();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::StringArray;
    use errors::describe_csv_message;

    fn inferred(values: &[Option<&str>]) -> DataType {
        let mut candidates = Candidates::default();
        candidates.update(&StringArray::from(values.to_vec()));
        candidates.data_type()
    }

    fn all(values: &[&str]) -> DataType {
        inferred(&values.iter().map(|v| Some(*v)).collect::<Vec<_>>())
    }

    #[test]
    fn a_type_only_when_every_value_is_spelled_as_it() {
        assert_eq!(all(&["1", "-20", "300"]), DataType::Int64);
        assert_eq!(all(&["02134", "47677"]), DataType::Utf8);
        assert_eq!(all(&["+4930", "4930"]), DataType::Utf8);
        assert_eq!(all(&["-0", "1"]), DataType::Float64);
        assert_eq!(all(&[" 12", "13"]), DataType::Utf8);
        assert_eq!(all(&["1,234"]), DataType::Utf8);
        assert_eq!(all(&["99999999999999999999"]), DataType::Utf8);
        assert_eq!(all(&["1.5", "2"]), DataType::Float64);
        assert_eq!(all(&["1.5", "2.0"]), DataType::Float64);
        assert_eq!(all(&["1.50"]), DataType::Utf8);
        // 1 and 1.0 would print alike
        assert_eq!(all(&["1", "1.0"]), DataType::Utf8);
        assert_eq!(all(&["1e5"]), DataType::Utf8);
        assert_eq!(all(&["inf", "NaN"]), DataType::Utf8);
        assert_eq!(all(&["true", "false"]), DataType::Boolean);
        assert_eq!(all(&["TRUE", "false"]), DataType::Utf8);
        assert_eq!(all(&["2020-01-02", "1999-12-31"]), DataType::Date32);
        assert_eq!(all(&["2020-01-02", "02/01/2020"]), DataType::Utf8);
        assert_eq!(all(&["2020-02-30"]), DataType::Utf8);
        assert_eq!(all(&["2020-1-2"]), DataType::Utf8);
        assert_eq!(
            all(&["2020-01-02 10:00:00", "2020-01-03 11:30:59"]),
            DataType::Timestamp(TimeUnit::Second, None)
        );
        assert_eq!(
            all(&["2020-01-02T10:00:00.000", "2020-01-02T10:00:00.120"]),
            DataType::Timestamp(TimeUnit::Millisecond, None)
        );
        assert_eq!(
            all(&["2020-01-02T10:00:00", "2020-01-02 10:00:00"]),
            DataType::Utf8
        );
        assert_eq!(all(&["2020-01-02T10:00:00.5"]), DataType::Utf8);
        assert_eq!(all(&["2020-01-02T10:00:00Z"]), DataType::Utf8);
        assert_eq!(all(&["2020-01-02", "2020-01-02T00:00:00"]), DataType::Utf8);
        // NULLs narrow nothing; a column of NULLs is text
        assert_eq!(inferred(&[None, Some("7"), None]), DataType::Int64);
        assert_eq!(inferred(&[None, None]), DataType::Utf8);
    }

    #[test]
    fn lines_of_records() {
        let text = "a,b\n1,\"x\ny\"\n\n2,\"p\"\"\nq\"\r\n3,z";
        let line = |record| record_start_line(Cursor::new(text), b',', record);
        assert_eq!(line(0), Some(1));
        assert_eq!(line(1), Some(2));
        // record 1 spans lines 2-3, line 4 is empty
        assert_eq!(line(2), Some(5));
        assert_eq!(line(3), Some(7));
        assert_eq!(line(4), None);
        // a quote inside an unquoted field is a character
        let text = "a;b\n1;x\"y\n2;z\n";
        assert_eq!(record_start_line(Cursor::new(text), b';', 2), Some(3));
    }

    #[test]
    fn bad_values_and_types_by_name() {
        assert_eq!(BadValues::parse("null").unwrap(), BadValues::Null);
        assert!(BadValues::parse("skip").is_err());
        assert!(ColumnType::Int64.matches(&DataType::Int32));
        assert!(!ColumnType::Int64.matches(&DataType::Utf8));
        assert!(ColumnType::Timestamp.matches(&DataType::Timestamp(TimeUnit::Second, None)));
        assert!(ColumnType::Utf8.matches(&DataType::Dictionary(
            Box::new(DataType::Int32),
            Box::new(DataType::Utf8)
        )));
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
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    async fn types(ctx: &SessionContext, table: &str) -> Vec<DataType> {
        let frame = ctx.table(table).await.unwrap();
        let schema = frame.schema();
        schema
            .fields()
            .iter()
            .map(|f| f.data_type().clone())
            .collect()
    }

    async fn register_with(ctx: &SessionContext, path: &str, options: &CsvOptions) -> Result<()> {
        super::super::register_path_with(ctx, "t", path, options).await
    }

    #[tokio::test]
    async fn a_late_value_keeps_its_column_text() {
        let dir = tempfile::tempdir().unwrap();
        // DataFusion's inference would look at the first 1000 rows only
        let mut text = String::from("id;age\n");
        for i in 0..1500 {
            text.push_str(&format!("{i};{}\n", i % 90));
        }
        text.push_str("1500;unknown\n");
        let path = write_file(dir.path(), "late.csv", &text);
        let ctx = SessionContext::new();
        register_with(&ctx, &path, &CsvOptions::default())
            .await
            .unwrap();
        assert_eq!(types(&ctx, "t").await, [DataType::Int64, DataType::Utf8]);
        assert_eq!(ctx.table("t").await.unwrap().count().await.unwrap(), 1501);

        // a file read with a schema it no longer fits: the file's line, the column
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("age", DataType::Int64, true),
        ]));
        let error = check_csv(&path, schema, &CsvOptions::default())
            .unwrap_err()
            .to_string();
        assert!(!error.contains("unknown"), "{error}");
        assert!(
            error.contains("late.csv: line 1502, column 'age'"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn lines_are_the_files_own() {
        let dir = tempfile::tempdir().unwrap();
        // records 1 and 2 span two lines each, line 4 is empty: the short record is line 7
        let text = "a,b\n1,\"x\ny\"\n\n2,\"p\nq\"\n3\n";
        let path = write_file(dir.path(), "fields.csv", text);
        let ctx = SessionContext::new();
        let error = register_with(&ctx, &path, &CsvOptions::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("fields.csv: line 7 has 1 fields, the header has 2"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn policy_types_convert_or_fail_on_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let text = "id,born,zip\n1,2020-01-02,02134\n2,\"not\na date\",02135\n3,,10001\n";
        let path = write_file(dir.path(), "born.csv", text);
        let mut options = CsvOptions::default();
        options.types.insert("born".into(), ColumnType::Date);
        options.types.insert("zip".into(), ColumnType::Int64);
        let ctx = SessionContext::new();
        let error = register_with(&ctx, &path, &options)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(
                "born.csv: line 3, column 'born': a value is not a valid Date32 (the policy \
                 gives the column type = \"date\""
            ),
            "{error}"
        );
        assert!(
            !error.contains("not") || !error.contains("a date"),
            "{error}"
        );

        options.bad_values = BadValues::Null;
        let ctx = SessionContext::new();
        register_with(&ctx, &path, &options).await.unwrap();
        assert_eq!(
            types(&ctx, "t").await,
            [DataType::Int64, DataType::Date32, DataType::Int64]
        );
        // text asked for: the integers stay as written
        let mut text = options.clone();
        text.types.insert("id".into(), ColumnType::Utf8);
        let ctx_text = SessionContext::new();
        register_with(&ctx_text, &path, &text).await.unwrap();
        assert_eq!(types(&ctx_text, "t").await[0], DataType::Utf8);
        let batches = ctx
            .sql("SELECT count(born), sum(zip) FROM t")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let row = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
            .unwrap()
            .to_string();
        // one date of three converts; 2134 + 2135 + 10001
        assert!(row.contains("| 1 ") && row.contains("| 14270 "), "{row}");
    }

    #[tokio::test]
    async fn a_directory_of_csv_files_is_one_table() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("parts")).unwrap();
        write_file(dir.path(), "parts/a.csv", "zip,n\n02134,1\n");
        write_file(dir.path(), "parts/b.csv", "zip,n\n47677,2\n47678,3\n");
        let parts = dir.path().join("parts").to_string_lossy().into_owned();
        assert_eq!(
            super::super::table_format(&parts).unwrap(),
            super::super::TableFormat::Csv
        );
        let ctx = SessionContext::new();
        register_with(&ctx, &parts, &CsvOptions::default())
            .await
            .unwrap();
        // the leading zero of a.csv keeps zip text in both files
        assert_eq!(types(&ctx, "t").await, [DataType::Utf8, DataType::Int64]);
        assert_eq!(ctx.table("t").await.unwrap().count().await.unwrap(), 3);

        write_file(dir.path(), "parts/c.csv", "zip;n\n1;2\n");
        let error = register_with(&SessionContext::new(), &parts, &CsvOptions::default())
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("c.csv: its header row differs"), "{error}");
    }
}
