//! Printing query results on stdout as a table, CSV or JSON lines.

use std::io::{BufWriter, ErrorKind, Write};

use clap::ValueEnum;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::error::{DataFusionError, Result};

/// How `anon sql` prints its result.
#[derive(ValueEnum, Clone, Copy, Debug, Default)]
pub enum Format {
    /// An aligned text table.
    #[default]
    Table,
    /// A header row, then one comma-separated line per row.
    Csv,
    /// One JSON object per row and line.
    Json,
}

/// Prints `batches` (of `schema`) to stdout in `format`. An empty result still prints its
/// header (table and CSV). A closed stdout (`anon sql ... | head`) ends the output quietly.
pub fn print(schema: SchemaRef, batches: &[RecordBatch], format: Format) -> Result<()> {
    // with no batch the writers would not know the columns: give them an empty one
    let empty = [RecordBatch::new_empty(schema)];
    let batches = if batches.is_empty() { &empty } else { batches };
    let mut out = BufWriter::new(std::io::stdout().lock());
    let written = match format {
        Format::Table => pretty_format_batches(batches)
            .and_then(|table| writeln!(out, "{table}").map_err(ArrowError::from)),
        Format::Csv => {
            let mut writer = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut out);
            batches.iter().try_for_each(|batch| writer.write(batch))
        }
        Format::Json => {
            // every key on every line: a NULL is `null`, not a missing key
            let mut writer = datafusion::arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, datafusion::arrow::json::writer::LineDelimited>(&mut out);
            batches
                .iter()
                .try_for_each(|batch| writer.write(batch))
                .and_then(|()| writer.finish())
        }
    }
    .and_then(|()| out.flush().map_err(ArrowError::from));
    match written {
        Err(ArrowError::IoError(_, e)) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(ArrowError::CsvError(m)) if m.contains("Broken pipe") => Ok(()),
        other => other.map_err(|e| DataFusionError::Execution(format!("cannot print: {e}"))),
    }
}
