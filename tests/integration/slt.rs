//! Runs every `sql/*.slt` file with the `sqllogictest` crate over a fresh `SessionContext`
//! (with [`datafusion_anonymity::register`]) per file.
//!
//! Output format: floats are printed with `format!("{:.4}")` (`-0.0000` becomes `0.0000`,
//! NaN is `NaN`, infinities `inf`/`-inf`), NULL as `NULL`, everything else through Arrow's
//! display formatter (strings as is).

use std::path::PathBuf;

use async_trait::async_trait;
use datafusion::arrow::array::{Array, ArrayRef, Float32Array, Float64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType};

/// A sqllogictest connection: one `SessionContext` with the anonymity functions registered.
pub struct AnonDb {
    ctx: SessionContext,
}

impl AnonDb {
    pub fn new() -> Result<Self, DataFusionError> {
        let ctx = SessionContext::new();
        datafusion_anonymity::register(&ctx)?;
        Ok(Self { ctx })
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

fn column_type(dt: &DataType) -> DefaultColumnType {
    match dt {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => DefaultColumnType::FloatingPoint,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => DefaultColumnType::Text,
        _ => DefaultColumnType::Any,
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
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
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

fn slt_files() -> Vec<PathBuf> {
    // `cargo test` sets CARGO_MANIFEST_DIR at run time too; prefer it over the compile-time value
    // so a test binary shared through a common target directory still reads this checkout's files.
    let root = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let dir = root.join("sql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    files
}

/// Runs every `sql/*.slt` file; each file gets its own `SessionContext`. All files run even when
/// some fail, and every failing file is reported with the runner's error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogictest_files() {
    let files = slt_files();
    assert!(!files.is_empty(), "no sql/*.slt files found");
    eprintln!("running {} slt files:", files.len());
    let mut failures = Vec::new();
    for file in &files {
        eprintln!("  {}", file.display());
        let mut runner = sqllogictest::Runner::new(|| async { AnonDb::new() });
        if let Err(e) = runner.run_file_async(file).await {
            failures.push(format!(
                "{}:\n{}",
                file.file_name().unwrap().to_string_lossy(),
                e.display(false)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} slt files failed:\n\n{}",
        failures.len(),
        files.len(),
        failures.join("\n\n")
    );
}
