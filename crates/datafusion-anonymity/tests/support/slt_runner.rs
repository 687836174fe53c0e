//! The sqllogictest connection of the `.slt` files, shared by two test binaries: the SQL
//! crate's (`crates/datafusion-anonymity/tests/slt/`, contexts with the crate's functions) and
//! the engine's (`sql/`, whose files also register policies with a `REGISTER POLICY 'file'`
//! directive the engine supplies). Each binary lists its files and uses part of this module.
//!
//! Output format: floats are printed with `format!("{:.4}")` (`-0.0000` becomes `0.0000`,
//! NaN is `NaN`, infinities `inf`/`-inf`), NULL as `NULL`, everything else through Arrow's
//! display formatter (strings as is, decimals with their scale, dates as `YYYY-MM-DD`).
//! Column type letters are checked strictly (see [`ColType`]).
//!
//! `control substitution on` in a file enables `$__TEST_DIR__`, a temporary directory per file
//! (used to write and read back Parquet fixtures).

#![allow(dead_code)]

use std::path::Path;

use futures::future::BoxFuture;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, Float32Array, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use sqllogictest::{AsyncDB, ColumnType, DBOutput};

/// A statement the harness runs itself instead of SQL (e.g. `REGISTER POLICY 'file.toml'`):
/// `None` when `sql` is not one, else the future that runs it on the context.
pub type Directive =
    fn(&str, &SessionContext) -> Option<BoxFuture<'static, Result<(), DataFusionError>>>;

/// A sqllogictest connection: one `SessionContext` with the anonymity functions registered.
pub struct AnonDb {
    ctx: SessionContext,
    directive: Option<Directive>,
}

impl AnonDb {
    /// A connection over `ctx` (which has the functions registered), e.g. a cluster client.
    pub fn with_context(ctx: SessionContext) -> Self {
        Self {
            ctx,
            directive: None,
        }
    }

    /// Runs the statements `directive` recognises itself.
    pub fn with_directive(mut self, directive: Directive) -> Self {
        self.directive = Some(directive);
        self
    }
}

fn format_float(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        let s = format!("{v:.4}");
        if s == "-0.0000" {
            "0.0000".to_string()
        } else {
            s
        }
    }
}

/// Column type letters of the `.slt` files, checked strictly for every query:
/// `I` integers, `R` floats and decimals, `T` strings, `B` booleans, `D` dates, times and
/// timestamps, `?` anything else. Dictionary columns take their value type's letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColType {
    Integer,
    Float,
    Text,
    Boolean,
    Temporal,
    Any,
}

impl ColumnType for ColType {
    fn from_char(value: char) -> Option<Self> {
        Some(match value {
            'I' => Self::Integer,
            'R' => Self::Float,
            'T' => Self::Text,
            'B' => Self::Boolean,
            'D' => Self::Temporal,
            _ => Self::Any,
        })
    }

    fn to_char(&self) -> char {
        match self {
            Self::Integer => 'I',
            Self::Float => 'R',
            Self::Text => 'T',
            Self::Boolean => 'B',
            Self::Temporal => 'D',
            Self::Any => '?',
        }
    }
}

fn column_type(dt: &DataType) -> ColType {
    match dt {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => ColType::Integer,
        DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => ColType::Float,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => ColType::Text,
        DataType::Boolean => ColType::Boolean,
        DataType::Date32
        | DataType::Date64
        | DataType::Time32(_)
        | DataType::Time64(_)
        | DataType::Timestamp(_, _) => ColType::Temporal,
        DataType::Dictionary(_, value) => column_type(value),
        _ => ColType::Any,
    }
}

fn format_column(col: &ArrayRef) -> Result<Vec<String>, DataFusionError> {
    let mut out = Vec::with_capacity(col.len());
    match col.data_type() {
        DataType::Float64 => {
            let a = col.as_any().downcast_ref::<Float64Array>().unwrap();
            for i in 0..a.len() {
                out.push(if a.is_null(i) {
                    "NULL".to_string()
                } else {
                    format_float(a.value(i))
                });
            }
        }
        DataType::Float32 => {
            let a = col.as_any().downcast_ref::<Float32Array>().unwrap();
            for i in 0..a.len() {
                out.push(if a.is_null(i) {
                    "NULL".to_string()
                } else {
                    format_float(a.value(i) as f64)
                });
            }
        }
        _ => {
            let opts = FormatOptions::default().with_null("NULL");
            let f = ArrayFormatter::try_new(col.as_ref(), &opts)?;
            for i in 0..col.len() {
                out.push(f.value(i).to_string());
            }
        }
    }
    Ok(out)
}

fn batches_to_rows(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, DataFusionError> {
    let mut rows = Vec::new();
    for batch in batches {
        let cols = batch
            .columns()
            .iter()
            .map(format_column)
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..batch.num_rows() {
            rows.push(cols.iter().map(|c| c[r].clone()).collect());
        }
    }
    Ok(rows)
}

fn is_statement(sql: &str) -> bool {
    let first = sql
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    matches!(first.as_str(), "CREATE" | "DROP" | "INSERT" | "SET")
}

#[async_trait]
impl AsyncDB for AnonDb {
    type Error = DataFusionError;
    type ColumnType = ColType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<ColType>, DataFusionError> {
        if let Some(run) = self
            .directive
            .and_then(|directive| directive(sql, &self.ctx))
        {
            run.await?;
            return Ok(DBOutput::StatementComplete(0));
        }
        let df = self.ctx.sql(sql).await?;
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await?;
        if is_statement(sql) {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        Ok(DBOutput::Rows {
            types,
            rows: batches_to_rows(&batches)?,
        })
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "datafusion-anonymity"
    }

    async fn sleep(dur: std::time::Duration) {
        tokio::time::sleep(dur).await;
    }
}

/// Runs the `.slt` file at `file` with connections from `connect`, checking column types
/// strictly; a failure names the file and line.
pub async fn run_file<F>(file: &Path, connect: F)
where
    F: Fn() -> std::pin::Pin<
            Box<dyn std::future::Future<Output = Result<AnonDb, DataFusionError>> + Send>,
        > + Send
        + Sync
        + 'static,
{
    let mut runner = sqllogictest::Runner::new(connect);
    runner.with_column_validator(sqllogictest::strict_column_validator);
    if let Err(e) = runner.run_file_async(file).await {
        panic!("{}:\n{}", file.display(), e.display(false));
    }
}

/// The `.slt` files in `dir` by stem, sorted, to check that a binary's list misses none.
pub fn files_in(dir: &Path) -> Vec<String> {
    let mut on_disk: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .map(|p| p.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    on_disk
}

/// One test per `.slt` file named, each `run_slt(name)` of the invoking module (so
/// `cargo test … slt::diversity` runs one file and a failure names its file and line), and
/// `every_slt_file_runs`: every `.slt` file in `$dir` has a test (none is silently skipped),
/// and every test has a file.
macro_rules! slt_files {
    ($dir:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                run_slt(stringify!($name)).await;
            }
        )*

        #[test]
        fn every_slt_file_runs() {
            let mut listed: Vec<String> = [$(stringify!($name)),*].map(String::from).to_vec();
            listed.sort();
            let dir = $dir;
            assert_eq!(
                $crate::slt_runner::files_in(&dir),
                listed,
                "the .slt files in {} and the slt_files! list differ",
                dir.display()
            );
        }
    };
}
pub(crate) use slt_files;
