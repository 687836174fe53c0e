//! Registering tables from paths: a Parquet file, a directory of Parquet files, a CSV file or
//! a directory of CSV files (see [`csv`] for how CSV is read without losing information).
//!
//! Error messages name the table, the path and (for CSV) the line and column at fault, never a
//! value of the data: the data are what this crate protects.

pub mod csv;
#[cfg(feature = "delta")]
pub mod delta;

use std::sync::Arc;

use datafusion::datasource::listing::{ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::options::ReadOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

use crate::failure::{io_error, prefixed};
use crate::storage::{self, Location, StoreOptions};

pub use csv::{BadValues, ColumnType, CsvOptions, check_csv};

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
    /// A `.csv` (or `.tsv`) file with a header row, or a directory of them; the delimiter is
    /// read off the header.
    Csv,
}

/// The format `path` is read as, or an error naming the path when it is missing or of an
/// unknown kind. A local directory is CSV when it holds only CSV files (see
/// [`csv::csv_files_in`]), else Parquet. A URL is judged by its extension alone (a URL without
/// one is a prefix of Parquet files).
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
            .map_err(|e| io_error(format!("cannot open {path}: {e}"), &e))?
            .is_dir(),
        Location::Url(url) => url.path().ends_with('/') || location.extension().is_none(),
    };
    match location.extension().as_deref() {
        _ if is_dir => match &location {
            Location::Local(dir) if csv::csv_files_in(dir)?.is_some() => Ok(TableFormat::Csv),
            _ => Ok(TableFormat::Parquet),
        },
        Some("parquet") => Ok(TableFormat::Parquet),
        Some("csv" | "tsv") => Ok(TableFormat::Csv),
        _ => Err(DataFusionError::Plan(format!(
            "{location} is neither a .parquet file, a directory of Parquet files, a .csv file \
             nor a directory of .csv files"
        ))),
    }
}

/// Which version of a Delta table to read (`[input] version` / `timestamp`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TableVersion {
    /// The latest.
    #[default]
    Latest,
    /// Version N.
    Version(i64),
    /// The version current at an RFC 3339 time.
    Timestamp(String),
}

/// How an input is read beyond its path: as a Delta table (required, or detected by its
/// `_delta_log`), and at which version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputRead {
    /// `[input] format = "delta"`: the path must be a Delta table.
    pub delta: bool,
    /// The version of a Delta table to read.
    pub version: TableVersion,
}

/// Registers `location` as table `name` like [`register_location_with`], reading a Delta
/// table (a directory or prefix holding `_delta_log/`, or any path when `read.delta`) at
/// `read.version`; returns the Delta version read (`None` for other formats).
pub async fn register_input(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
    csv_options: &CsvOptions,
    read: &InputRead,
) -> Result<Option<i64>> {
    let in_table = |e: DataFusionError| prefixed(&format!("table '{name}': "), e);
    #[cfg(feature = "delta")]
    {
        let is_delta = !is_glob(&location.datafusion_path())
            && crate::tables::delta::is_delta_table(location, options)
                .await
                .map_err(in_table)?;
        if is_delta || read.delta {
            storage::register_store(ctx, location, options).map_err(in_table)?;
            return crate::tables::delta::register(ctx, name, location, options, &read.version)
                .await
                .map(Some)
                .map_err(in_table);
        }
    }
    #[cfg(not(feature = "delta"))]
    if read.delta {
        return Err(in_table(DataFusionError::Plan(format!(
            "{location}: reading a Delta table needs the engine's `delta` feature, which this \
             build lacks"
        ))));
    }
    if read.version != TableVersion::Latest {
        return Err(in_table(DataFusionError::Plan(format!(
            "{location} is not a Delta table (no _delta_log/ directory), so [input] version and \
             timestamp do not apply"
        ))));
    }
    register_location_with(ctx, name, location, options, csv_options).await?;
    Ok(None)
}

/// Registers `path` (a path or a URL) as table `name` on `ctx`; see [`register_location`].
pub async fn register_path(ctx: &SessionContext, name: &str, path: &str) -> Result<()> {
    register_path_with(ctx, name, path, &CsvOptions::default()).await
}

/// [`register_path`] with CSV options (column types, bad values), which apply when `path`
/// is CSV.
pub async fn register_path_with(
    ctx: &SessionContext,
    name: &str,
    path: &str,
    csv_options: &CsvOptions,
) -> Result<()> {
    let location = Location::parse(path)?;
    register_input(
        ctx,
        name,
        &location,
        &StoreOptions::default(),
        csv_options,
        &InputRead::default(),
    )
    .await
    .map(|_| ())
}

/// Registers `location` as table `name` on `ctx`; see [`register_location_with`].
pub async fn register_location(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
) -> Result<()> {
    register_location_with(ctx, name, location, options, &CsvOptions::default()).await
}

/// Registers `location` as table `name` on `ctx`: a Parquet file, a directory (or prefix) of
/// Parquet files, a glob of them, or a CSV file with a header row (`,`- or `;`-separated,
/// detected from the header line) or a directory (or bucket prefix) of them. A prefix holding this crate's
/// `_SUCCESS` manifest is read as the files the manifest lists (see
/// [`crate::publish::staged`]). A CSV table is read whole first, to infer its column types
/// from every value and to convert the columns `csv_options` gives a type (see [`csv`]).
pub async fn register_location_with(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
    csv_options: &CsvOptions,
) -> Result<()> {
    let in_table = |e: DataFusionError| prefixed(&format!("table '{name}': "), e);
    storage::register_store(ctx, location, options).map_err(in_table)?;
    let path = location.datafusion_path();
    let format = match table_format(&path).map_err(in_table)? {
        // a prefix in a bucket cannot be told apart by its name: by the files it holds
        TableFormat::Parquet
            if location.is_url()
                && !is_glob(&path)
                && !crate::storage::manifest::is_parquet_file(location)
                && holds_csv_only(location, options).await.map_err(in_table)? =>
        {
            TableFormat::Csv
        }
        format => format,
    };
    match format {
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
        // the messages of CSV reading name the file (and the line) themselves
        TableFormat::Csv => csv::register(ctx, name, location, options, csv_options).await,
    }
}

/// Whether the bucket prefix `location` holds CSV (or TSV) files and no Parquet file.
async fn holds_csv_only(location: &Location, options: &StoreOptions) -> Result<bool> {
    let listed = storage::list(&location.as_prefix(), options).await?;
    let ends = |suffixes: &[&str]| {
        listed.iter().any(|o| {
            let name = o.location.as_ref().to_ascii_lowercase();
            suffixes.iter().any(|s| name.ends_with(s))
        })
    };
    Ok(!ends(&[".parquet"]) && ends(&[".csv", ".tsv"]))
}

/// A Parquet object or prefix in a bucket: a prefix with a manifest is read as the files it
/// lists; one without must hold Parquet files.
async fn register_parquet_url(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
) -> Result<()> {
    if crate::storage::manifest::is_parquet_file(location) {
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
    let files = match crate::storage::manifest::manifest_files(&prefix, options).await? {
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
    use std::fs::File;
    use std::io::Write;
    use std::path::Path;

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
}
