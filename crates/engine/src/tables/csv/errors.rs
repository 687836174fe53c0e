//! Errors of reading CSV files: each names the file, the file's own line (where the record
//! starts, also when quoted values hold line breaks) and the column, never the value.

use std::io::BufRead;

use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::error::{DataFusionError, Result};

use super::super::redact;
use crate::failure::FailureKind;
use crate::storage::{Location, StoreOptions};

use super::candidates::Candidates;
use super::{
    BadValues, ColumnType, CsvFile, CsvOptions, Fault, Source, csv_files_in, failed_casts,
    files_of, read_file,
};

/// A value of data record `record` (from 0) in `column` that does not convert to `ty`: the
/// file, its line and the column, not the value. A value that cannot be used as given, so
/// [`FailureKind::Invalid`] (Python's `ValueError`).
pub(super) fn value_error(
    file: &CsvFile,
    record: usize,
    column: &str,
    ty: ColumnType,
) -> DataFusionError {
    let line = file
        .line_of_record(record + 1)
        .map_or_else(|| "a line".to_string(), |l| format!("line {l}"));
    FailureKind::Invalid.error(format!(
        "{}: {line}, column '{column}': a value is not a valid {} (the policy gives the column \
         type = \"{}\"; the value is not shown; bad_values = \"null\" reads such values as NULL)",
        file.name,
        ty.data_type(),
        ty.name()
    ))
}

/// An error of arrow's CSV reader over `file` (columns `names`), reworded to name the file,
/// the file's own line and the column, without any value.
///
/// Arrow counts records, not lines: a parse error's "at line L" is record L counting the
/// header as record 0, a field-count error's "for line N" is record N counting it as 1.
pub(super) fn read_error(file: &CsvFile, names: &[String], error: ArrowError) -> DataFusionError {
    let message = match error {
        ArrowError::ParseError(m) | ArrowError::CsvError(m) => {
            let m = replace_number(&m, "at line ", |record| file.line_of_record(record));
            let m = replace_number(&m, "fields for line ", |record| {
                file.line_of_record(record.checked_sub(1)?)
            });
            describe_csv_message(&m, names)
        }
        other => redact(&other.to_string()),
    };
    DataFusionError::Execution(format!("{}: {message}", file.name))
}

/// `text` with the number after the first `marker` replaced by `f` of it (left as it is when
/// `f` gives nothing).
pub(super) fn replace_number(
    text: &str,
    marker: &str,
    f: impl Fn(usize) -> Option<usize>,
) -> String {
    let replaced = text.split_once(marker).and_then(|(before, rest)| {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        let number = f(rest[..digits].parse::<usize>().ok()?)?;
        Some(format!("{before}{marker}{number}{}", &rest[digits..]))
    });
    replaced.unwrap_or_else(|| text.to_string())
}

/// The line (from 1) where record `record` of a CSV text starts, the header being record 0,
/// as arrow's reader splits records: `"` quotes a field (a doubled `"` inside stands for
/// one) and may hold delimiters and line breaks; `\n`, `\r` or `\r\n` ends a record outside
/// quotes; empty lines are skipped.
pub(super) fn record_start_line(
    reader: impl BufRead,
    delimiter: u8,
    record: usize,
) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        RecordStart,
        FieldStart,
        Unquoted,
        Quoted,
        QuoteInQuoted,
    }
    let mut state = State::RecordStart;
    let (mut line, mut current) = (1, 0);
    for byte in reader.bytes() {
        let byte = byte.ok()?;
        // a byte may end one state and be read again in the next
        loop {
            match state {
                State::RecordStart => match byte {
                    b'\n' => line += 1,
                    b'\r' => {}
                    _ => {
                        if current == record {
                            return Some(line);
                        }
                        state = State::FieldStart;
                        continue;
                    }
                },
                State::FieldStart if byte == b'"' => state = State::Quoted,
                State::FieldStart | State::Unquoted => match byte {
                    b'\n' | b'\r' => {
                        if byte == b'\n' {
                            line += 1;
                        }
                        current += 1;
                        state = State::RecordStart;
                    }
                    b if b == delimiter => state = State::FieldStart,
                    _ => state = State::Unquoted,
                },
                State::Quoted => match byte {
                    b'"' => state = State::QuoteInQuoted,
                    b'\n' => line += 1,
                    _ => {}
                },
                State::QuoteInQuoted if byte == b'"' => state = State::Quoted,
                State::QuoteInQuoted => {
                    state = State::Unquoted;
                    continue;
                }
            }
            break;
        }
    }
    None
}

/// Reads the CSV file or directory `path` from start to end as the table registered from it
/// is read (with `schema`, the table's schema; columns `options` gives a type read as text
/// and converted) and reports the first record that does not fit: a wrong number of fields,
/// or a value that does not parse as its column's type. The error names the file, the line
/// and the column, but not the value.
///
/// The types were inferred from the whole file when it was registered, so this finds
/// something only when the file changed since; a URL is not read again.
pub fn check_csv(path: &str, schema: SchemaRef, options: &CsvOptions) -> Result<()> {
    let location = Location::parse(path)?;
    let paths = match &location {
        Location::Url(_) => return Ok(()),
        Location::Local(dir) if dir.is_dir() => csv_files_in(dir)?.unwrap_or_default(),
        Location::Local(file) => vec![file.clone()],
    };
    for path in paths {
        let file = CsvFile::new(&Location::Local(path.clone()), Source::Local(path))?;
        let names = file.header()?;
        let mut types = Vec::with_capacity(names.len());
        let mut forced = Vec::with_capacity(names.len());
        for name in &names {
            let ty = options.types.get(name).copied();
            let converted = ty.filter(|ty| *ty != ColumnType::Utf8);
            forced.push(converted);
            types.push(match (converted, schema.field_with_name(name)) {
                (Some(_), _) | (None, Err(_)) => DataType::Utf8,
                (None, Ok(field)) => field.data_type().clone(),
            });
        }
        read_file(&file, &names, &types, |first_record, batch| {
            for (i, values) in batch.columns().iter().enumerate() {
                if let (Some(ty), BadValues::Error) = (forced[i], options.bad_values)
                    && let Some(&row) = failed_casts(values, ty)?.first()
                {
                    return Err(Fault::Value {
                        record: first_record + row,
                        column: i,
                        ty,
                    });
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Where the type a CSV column was inferred as stopped being one `accepts` takes: the file,
/// its line, and the type the values before it read as (see [`locate_type_change`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeChange {
    /// The file, as named in messages.
    pub file: String,
    /// The file's own line (from 1) of the record holding the value.
    pub line: Option<usize>,
    /// The type the column's values before it read as; `None` when it is the column's first
    /// value.
    pub before: Option<DataType>,
    /// The type the column is read as from this value on.
    pub after: DataType,
}

impl TypeChange {
    /// `visits.csv: line 5, column 'visit_date': a value is not a Date32 like the values
    /// before it, so the column is inferred as text (Utf8)` — no value shown.
    pub fn describe(&self, column: &str) -> String {
        let line = self
            .line
            .map_or_else(|| "a line".to_string(), |l| format!("line {l}"));
        let what = match &self.before {
            Some(before) => format!("a value is not a {before} like the values before it"),
            None => "the column's first value".to_string(),
        };
        format!(
            "{}: {line}, column '{column}': {what} (the value is not shown), so the column is \
             inferred as {}",
            self.file,
            describe_type(&self.after)
        )
    }
}

/// `text (Utf8)` or the type itself.
fn describe_type(data_type: &DataType) -> String {
    match data_type {
        DataType::Utf8 => "text (Utf8)".to_string(),
        other => other.to_string(),
    }
}

/// Reads the CSV table at `location` as its registration inferred its column `column`, value
/// by value in file order, and finds the first value after which the inferred type is no
/// longer one `accepts` takes (a hierarchy's column types, say): `None` when there is none
/// (or no such column). For the message of a column whose inferred type does not fit; a whole
/// pass over the files.
pub async fn locate_type_change(
    location: &Location,
    store: &StoreOptions,
    column: &str,
    accepts: impl Fn(&DataType) -> bool + Send + 'static,
) -> Result<Option<TypeChange>> {
    let files = files_of(location, store).await?;
    let column = column.to_string();
    tokio::task::spawn_blocking(move || first_type_change(&files, &column, &accepts))
        .await
        .map_err(|e| DataFusionError::Execution(format!("reading {location} failed: {e}")))?
}

/// [`locate_type_change`] over `files`, read one after the other.
fn first_type_change(
    files: &[CsvFile],
    column: &str,
    accepts: &dyn Fn(&DataType) -> bool,
) -> Result<Option<TypeChange>> {
    let mut candidates = Candidates::default();
    let mut seen = false;
    for file in files {
        let names = file.header()?;
        let Some(index) = names.iter().position(|name| name == column) else {
            return Ok(None);
        };
        let text = vec![DataType::Utf8; names.len()];
        let mut found = None;
        read_file(file, &names, &text, |first_record, batch| {
            let values = batch.column(index).as_string::<i32>();
            for (row, value) in values.iter().enumerate() {
                let Some(value) = value else { continue };
                let before = seen.then(|| candidates.data_type());
                candidates.add(value);
                seen = true;
                let after = candidates.data_type();
                if !accepts(&after) {
                    found = Some((first_record + row, before, after));
                    return Err(Fault::Found);
                }
            }
            Ok(())
        })?;
        if let Some((record, before, after)) = found {
            return Ok(Some(TypeChange {
                file: file.name.clone(),
                line: file.line_of_record(record + 1),
                before,
                after,
            }));
        }
    }
    Ok(None)
}

/// Arrow's CSV messages, reworded without the values they quote (arrow-csv 59):
/// - `Error while parsing value '<v>' as type '<T>' for column <c> at line <l>. Row data: '<row>'`
/// - `Error parsing column <c> at line <l>: <detail with the value>`
/// - `incorrect number of fields for line <l>, expected <e> got <g>`
/// - `Encountered unequal lengths between records on CSV file. Expected <e> records, found <g>
///   records at line <l>` (schema inference)
pub(super) fn describe_csv_message(message: &str, names: &[String]) -> String {
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
             when the table was registered: has the file changed since? The value is not shown)",
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
pub(super) fn number_after(text: &str, marker: &str) -> Option<usize> {
    let (_, rest) = text.split_once(marker)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
