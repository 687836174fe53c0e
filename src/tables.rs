//! Registering tables from paths: a Parquet file, a directory of Parquet files, or a CSV file.

use std::io::{BufRead, BufReader};
use std::path::Path;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::{CsvReadOptions, ParquetReadOptions, SessionContext};

/// Splits a `NAME=PATH` command-line argument.
pub fn parse_table_arg(arg: &str) -> Result<(String, String)> {
    match arg.split_once('=') {
        Some((name, path)) if !name.is_empty() && !path.is_empty() => {
            Ok((name.to_string(), path.to_string()))
        }
        _ => Err(DataFusionError::Plan(format!(
            "--table expects NAME=PATH, got '{arg}'"
        ))),
    }
}

/// The delimiter of a CSV file, read off its header line: `;` when it has more `;` than `,`
/// (the Adult data and ARX's files), else `,`.
fn csv_delimiter(path: &Path) -> Result<u8> {
    let file = std::fs::File::open(path)
        .map_err(|e| DataFusionError::Plan(format!("cannot read {}: {e}", path.display())))?;
    let mut header = String::new();
    BufReader::new(file)
        .read_line(&mut header)
        .map_err(|e| DataFusionError::Plan(format!("cannot read {}: {e}", path.display())))?;
    let semicolons = header.matches(';').count();
    let commas = header.matches(',').count();
    Ok(if semicolons > commas { b';' } else { b',' })
}

/// Registers `path` as table `name` on `ctx`.
pub async fn register_path(ctx: &SessionContext, name: &str, path: &str) -> Result<()> {
    let location = Path::new(path);
    if !location.exists() {
        return Err(DataFusionError::Plan(format!(
            "table '{name}': {path} does not exist"
        )));
    }
    let extension = location
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if location.is_dir() || extension.as_deref() == Some("parquet") {
        ctx.register_parquet(name, path, ParquetReadOptions::default())
            .await
    } else if matches!(extension.as_deref(), Some("csv") | Some("tsv")) {
        let delimiter = if extension.as_deref() == Some("tsv") {
            b'\t'
        } else {
            csv_delimiter(location)?
        };
        ctx.register_csv(
            name,
            path,
            CsvReadOptions::new().delimiter(delimiter).has_header(true),
        )
        .await
    } else {
        Err(DataFusionError::Plan(format!(
            "table '{name}': {path} is neither a .parquet file, a directory of Parquet files \
             nor a .csv file"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_arguments() {
        assert_eq!(
            parse_table_arg("t=a/b.parquet").unwrap(),
            ("t".to_string(), "a/b.parquet".to_string())
        );
        assert!(parse_table_arg("no-equals").is_err());
        assert!(parse_table_arg("=x").is_err());
    }
}
