//! Delta Lake tables in and out, through delta-rs (`deltalake-core`, built on this workspace's
//! DataFusion): behind the engine's `delta` feature.
//!
//! - **Reading** ([`register`]): a directory or bucket prefix holding `_delta_log/` is read as
//!   the Delta table it is, at its latest version or at the version a policy pins
//!   (`[input] version = N` or `timestamp = "…"`); the version read goes in the report.
//! - **Publishing** ([`crate::publish::delta`]): the release's Parquet files are written under the table's
//!   root and verified there like any staged output ([`crate::publish::staged`]); only then
//!   are they committed, in **one** commit of the Delta log, whose `commitInfo` records what
//!   was done (see `crate::jobs::output::release_info`), never a value or the row-order seed. Until that
//!   commit the files are not part of any version: a reader sees the previous version or the
//!   new, complete one.
//!
//! **Commits are atomic because the log's next version file is created with a put that fails
//! when the file exists** (`PutMode::Create`): `link`/`renameat2(RENAME_NOREPLACE)` on a local
//! disk, `If-None-Match: *` on S3 (AWS S3 since 2024, MinIO, R2; `object_store`'s default
//! `AWS_CONDITIONAL_PUT=etag`), the generation precondition on GCS and `If-None-Match` on
//! Azure. A store that cannot do it (`AWS_CONDITIONAL_PUT=disabled`, or an S3-compatible
//! server without conditional writes) makes the publish fail before the commit, committing
//! nothing: two writers could otherwise both write the same version. No lock table
//! (DynamoDB) is used or needed. Every commit is tried once: a commit that loses the race to
//! another writer fails with an error naming the table and the version, and removes its files.

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;
use deltalake_core::logstore::{LogStoreRef, StorageConfig, default_logstore};
use deltalake_core::{DeltaTable, DeltaTableError};
use object_store::ObjectStore;
use object_store::prefix::PrefixStore;
use url::Url;

use crate::storage::{self, Location, StoreOptions};
use crate::tables::TableVersion;

/// The directory of a Delta table's log.
pub const DELTA_LOG: &str = "_delta_log";

/// Whether `location` (a directory or a bucket prefix) is a Delta table: it holds
/// `_delta_log/` with at least one entry.
pub async fn is_delta_table(location: &Location, options: &StoreOptions) -> Result<bool> {
    match location {
        Location::Local(path) => Ok(path.join(DELTA_LOG).is_dir()),
        Location::Url(_) => {
            let log = location.as_prefix().join(DELTA_LOG)?;
            // an error (a missing bucket) names the path the user gave, not its log: the
            // output may be meant as Parquet
            Ok(!storage::list_showing(&log, location, options)
                .await?
                .is_empty())
        }
    }
}

/// The URL delta-rs knows the table by (a directory URL: ending in `/`).
fn table_url(location: &Location) -> Result<Url> {
    let url = match location {
        Location::Local(path) => {
            let absolute = std::path::absolute(path).map_err(|e| {
                DataFusionError::Plan(format!("{location}: cannot resolve the path: {e}"))
            })?;
            Url::from_directory_path(&absolute).map_err(|()| {
                DataFusionError::Plan(format!("{location}: not a valid table directory"))
            })?
        }
        Location::Url(url) => {
            let mut url = url.clone();
            if !url.path().ends_with('/') {
                url.set_path(&format!("{}/", url.path()));
            }
            url
        }
    };
    Ok(url)
}

/// The log store of the table at `location`: delta-rs's default log store (commits by
/// conditional put, see the module docs) over this crate's object store for the URL (the same
/// client, credentials and endpoint as every other read and write), or the local file system.
pub(crate) fn log_store(location: &Location, options: &StoreOptions) -> Result<LogStoreRef> {
    let url = table_url(location)?;
    let root: Arc<dyn ObjectStore> = match location {
        Location::Local(_) => Arc::new(object_store::local::LocalFileSystem::new()),
        Location::Url(bucket) => storage::store_for(bucket, options)?,
    };
    let prefix = object_store::path::Path::from_url_path(url.path())
        .map_err(|e| DataFusionError::Plan(format!("{location}: not a valid object path: {e}")))?;
    let prefixed: Arc<dyn ObjectStore> = Arc::new(PrefixStore::new(Arc::clone(&root), prefix));
    Ok(default_logstore(
        prefixed,
        root,
        &url,
        &StorageConfig::default(),
    ))
}

/// The Delta table at `location`, loaded at `version`; an error naming the table when it is
/// not one or the version does not exist.
pub async fn open(
    location: &Location,
    options: &StoreOptions,
    version: &TableVersion,
) -> Result<DeltaTable> {
    if !is_delta_table(location, options).await? {
        return Err(not_a_table(location));
    }
    let mut table = DeltaTable::new(log_store(location, options)?);
    match version {
        TableVersion::Latest => table.load().await,
        TableVersion::Version(v) => {
            table.load().await.map_err(|e| delta_error(location, e))?;
            let latest = table.version().unwrap_or_default();
            let wanted = u64::try_from(*v).unwrap_or(u64::MAX);
            if wanted > latest {
                return Err(DataFusionError::Plan(format!(
                    "Delta table {location}: version {v} does not exist (the latest is {latest})"
                )));
            }
            table.load_version(wanted).await
        }
        TableVersion::Timestamp(text) => {
            let at = chrono_parse(location, text)?;
            table
                .load_with_datetime(at)
                .await
                .map_err(|e| delta_error(location, e))?;
            // delta-rs falls back on the first version for a time before it: no table then
            let version = table.version().unwrap_or_default();
            let committed = table
                .snapshot()
                .ok()
                .and_then(|s| s.version_timestamp(version));
            if committed.is_some_and(|millis| millis > at.timestamp_millis()) {
                return Err(DataFusionError::Plan(format!(
                    "Delta table {location}: no version was committed at or before {text}"
                )));
            }
            Ok(())
        }
    }
    .map_err(|e| delta_error(location, e))?;
    Ok(table)
}

/// An RFC 3339 timestamp (`2026-11-27T10:00:00Z`) of `[input] timestamp`.
fn chrono_parse(location: &Location, text: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    let parsed = chrono::DateTime::parse_from_rfc3339(text);
    parsed.map(|t| t.with_timezone(&chrono::Utc)).map_err(|_| {
        DataFusionError::Plan(format!(
            "Delta table {location}: timestamp '{text}' is not an RFC 3339 time such as \
             2026-11-27T10:00:00Z"
        ))
    })
}

/// The error of a path that is not a Delta table where one is required.
pub(crate) fn not_a_table(location: &Location) -> DataFusionError {
    DataFusionError::Plan(format!(
        "{location} is not a Delta table (no {DELTA_LOG}/ directory)"
    ))
}

/// A delta-rs error on the table at `location`, in a few words naming it: never a request,
/// a credential or a value (delta-rs's messages name files and versions only).
pub(crate) fn delta_error(location: &Location, error: DeltaTableError) -> DataFusionError {
    let text = match &error {
        DeltaTableError::NotATable(_) => return not_a_table(location),
        DeltaTableError::InvalidVersion(v) => format!("version {v} does not exist"),
        DeltaTableError::VersionAlreadyExists(v) => format!(
            "commit conflict: another writer committed version {v} first; nothing was committed"
        ),
        DeltaTableError::ObjectStore { source } => storage::describe_store_error(source),
        DeltaTableError::Transaction { source } => match source {
            deltalake_core::kernel::transaction::TransactionError::VersionAlreadyExists(v) => {
                format!(
                    "commit conflict: another writer committed version {v} first; nothing was \
                     committed"
                )
            }
            deltalake_core::kernel::transaction::TransactionError::ObjectStore { source } => {
                storage::describe_store_error(source)
            }
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    let first_line = text.lines().next().unwrap_or_default().to_string();
    DataFusionError::Execution(storage::redact_credentials(&format!(
        "Delta table {location}: {first_line}"
    )))
}

/// Registers the Delta table at `location`, at `version`, as table `name` on `ctx`; returns
/// the version read.
pub async fn register(
    ctx: &SessionContext,
    name: &str,
    location: &Location,
    options: &StoreOptions,
    version: &TableVersion,
) -> Result<i64> {
    let table = open(location, options, version).await?;
    let read = table.version().map_or(0, |v| v as i64);
    table
        .update_datafusion_session(&ctx.state())
        .map_err(|e| delta_error(location, e))?;
    let provider = table
        .table_provider()
        .await
        .map_err(|e| DataFusionError::Plan(format!("Delta table {location}: {}", e.message())))?;
    ctx.register_table(name, provider)?;
    Ok(read)
}
