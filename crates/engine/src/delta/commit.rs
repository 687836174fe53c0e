//! A release committed to a Delta table in one commit: the checks before anything is read
//! ([`check_target`]), and the commit of the verified files ([`commit`]).
//!
//! The table's version is read once, before the input ([`DeltaTarget`]), and the commit is
//! made against it and tried once: if another writer committed in between, this publish fails
//! (a commit conflict) and its files are removed, so two publishes to one table at once give
//! one new version and one clear error, never a version that mixes them or silently replaces
//! the other's.
//!
//! The data files of a release sit under the table root in a directory of their own,
//! `anon-<host>_<pid>-<nanoseconds>/`: written and verified there, referenced by no version until
//! the commit. A killed run leaves such a directory behind, which no version references; the
//! next publish to the table removes it ([`remove_unreferenced_staging`]), as does Delta's
//! `VACUUM`.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::arrow::async_reader::{AsyncFileReader, ParquetObjectReader};
use deltalake_core::kernel::engine::arrow_conversion::TryFromArrow;
use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties, TableReference};
use deltalake_core::kernel::{Action, Add, MetadataExt, StructType};
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, DeltaTableError};
use futures::TryStreamExt;
use object_store::ObjectStore;
use serde_json::Value;

use super::{delta_error, is_delta_table, not_a_table, open};
use crate::storage::{self, Location, StoreOptions};
use crate::tables::TableVersion;

/// The key of a release's record in `commitInfo`.
pub const COMMIT_INFO_KEY: &str = "anonymity";

/// The name part of a release's data directory under the table root.
pub const DATA_DIR_MARK: &str = "anon-";

/// How a release goes into its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriteMode {
    /// A new table (refused if one is there).
    Create,
    /// A new version replacing every row (`--overwrite`).
    Overwrite,
    /// A new version adding the release's rows to the table's (`--append`): only onto a
    /// release of the same full-domain transformation with the same columns.
    Append,
}

/// A Delta output, checked before anything is read: where, how, and the table as it was
/// then (the version the commit is made against).
#[derive(Debug, Clone)]
pub struct DeltaTarget {
    pub location: Location,
    pub mode: WriteMode,
    /// The table when checked (`None`: no table yet).
    read: Option<Arc<DeltaTable>>,
}

impl DeltaTarget {
    /// The version the commit is made against (`None`: a new table).
    pub fn read_version(&self) -> Option<i64> {
        self.read.as_ref().and_then(|t| t.version())
    }
}

/// Refuses a Delta output that cannot be written as asked, before anything is read: a table
/// that exists without `--overwrite`/`--append`, a path that holds something else, an append
/// to no table. Reads the table's version for the commit.
pub async fn check_target(
    location: &Location,
    options: &StoreOptions,
    overwrite: bool,
    append: bool,
) -> Result<DeltaTarget> {
    let refuse = |why: String| DataFusionError::Plan(format!("output Delta table {location}: {why}"));
    if overwrite && append {
        return Err(refuse(
            "--overwrite and --append exclude each other; give one".to_string(),
        ));
    }
    let is_table = is_delta_table(location, options).await?;
    let exists = storage::exists(location, options).await?;
    let mode = match (is_table, exists) {
        (true, _) if append => WriteMode::Append,
        (true, _) if overwrite => WriteMode::Overwrite,
        (true, _) => {
            return Err(refuse(
                "exists; pass --overwrite to publish a new version replacing its rows, or \
                 --append to add this release's rows"
                    .to_string(),
            ));
        }
        (false, _) if append => return Err(not_a_table(location)),
        (false, true) if !is_empty_dir(location) => {
            return Err(refuse(
                "exists and is not a Delta table; choose another path (a release replaces only \
                 a Delta table)"
                    .to_string(),
            ));
        }
        (false, _) => WriteMode::Create,
    };
    let read = if is_table {
        Some(Arc::new(
            open(location, options, &TableVersion::Latest).await?,
        ))
    } else {
        if let Location::Local(path) = location {
            match std::path::absolute(path).ok().and_then(|p| p.parent().map(|p| p.to_path_buf()))
            {
                Some(parent) if !parent.is_dir() => {
                    return Err(refuse(format!(
                        "its directory {} does not exist",
                        parent.display()
                    )));
                }
                _ => {}
            }
        }
        None
    };
    Ok(DeltaTarget {
        location: location.clone(),
        mode,
        read,
    })
}

fn is_empty_dir(location: &Location) -> bool {
    match location {
        Location::Local(path) => std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none()),
        Location::Url(_) => false,
    }
}

/// Refuses an append whose release cannot share the table: other columns or types, or labels
/// that are not those of the table's last release (both must be full-domain releases of the
/// same levels of the same quasi-identifiers, recorded in their `commitInfo`).
pub async fn check_append(target: &DeltaTarget, schema: &SchemaRef, info: &Value) -> Result<()> {
    let location = &target.location;
    let Some(table) = &target.read else {
        return Err(not_a_table(location));
    };
    let refuse = |why: String| {
        DataFusionError::Plan(format!(
            "cannot append to Delta table {location}: {why}; nothing was committed"
        ))
    };
    let snapshot = table.snapshot().map_err(|e| delta_error(location, e))?;
    let theirs = snapshot.snapshot().arrow_schema();
    let describe = |s: &datafusion::arrow::datatypes::Schema| {
        s.fields()
            .iter()
            .map(|f| format!("{} {}", f.name(), f.data_type()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let same_columns = theirs.fields().len() == schema.fields().len()
        && theirs.fields().iter().zip(schema.fields()).all(|(a, b)| {
            a.name() == b.name() && same_type(a.data_type(), b.data_type())
        });
    if !same_columns {
        return Err(refuse(format!(
            "its columns ({}) are not this release's ({})",
            describe(&theirs),
            describe(schema)
        )));
    }
    let last: Vec<_> = table
        .history(Some(1))
        .try_collect()
        .await
        .map_err(|e| delta_error(location, e))?;
    let recorded = last
        .first()
        .and_then(|c| c.info.get(COMMIT_INFO_KEY))
        .cloned();
    let Some(recorded) = recorded else {
        return Err(refuse(
            "its last version was not published by this tool, so its labels are unknown"
                .to_string(),
        ));
    };
    let labels = |v: &Value| (v.get("method").cloned(), v.get("levels").cloned());
    let full_domain = |v: &Value| v.get("method").and_then(Value::as_str) == Some("full-domain");
    if !full_domain(info) || !full_domain(&recorded) {
        return Err(refuse(
            "only a full-domain release appends to a full-domain release (a local recoding's \
             labels differ from class to class)"
                .to_string(),
        ));
    }
    if labels(info) != labels(&recorded) {
        return Err(refuse(format!(
            "its labels are those of levels {}, this release's are levels {}",
            recorded.get("levels").cloned().unwrap_or(Value::Null),
            info.get("levels").cloned().unwrap_or(Value::Null)
        )));
    }
    Ok(())
}

/// Arrow types that Delta stores as the same type (Delta has one string and one binary type,
/// and timestamps in microseconds).
fn same_type(a: &datafusion::arrow::datatypes::DataType, b: &datafusion::arrow::datatypes::DataType) -> bool {
    let delta = |t: &datafusion::arrow::datatypes::DataType| {
        datafusion::arrow::datatypes::Field::new("c", t.clone(), true)
    };
    match (
        deltalake_core::kernel::StructField::try_from_arrow(&delta(a)),
        deltalake_core::kernel::StructField::try_from_arrow(&delta(b)),
    ) {
        (Ok(x), Ok(y)) => x.data_type() == y.data_type(),
        _ => a == b,
    }
}

/// The data directory of a release of this run under the table root (not referenced by any
/// version until [`commit`]).
pub fn release_directory(table: &Location) -> Result<Location> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    table.join(&format!(
        "{DATA_DIR_MARK}{}-{nanos}",
        crate::publish::staged::run_id(table)
    ))
}

/// Commits the verified Parquet files under `data` (a directory under the table root) as one
/// new version of `target`, recording `info` in `commitInfo` under [`COMMIT_INFO_KEY`]; the
/// version committed.
pub async fn commit(
    target: &DeltaTarget,
    options: &StoreOptions,
    data: &Location,
    schema: &SchemaRef,
    info: Value,
) -> Result<i64> {
    let location = &target.location;
    hook_pause("before-commit");
    let adds = add_actions(location, options, data).await?;
    let properties = CommitProperties::default()
        .with_max_retries(0)
        .with_metadata([(COMMIT_INFO_KEY.to_string(), info)]);
    let delta_schema = StructType::try_from_arrow(schema.as_ref()).map_err(|e| {
        DataFusionError::Plan(format!(
            "Delta table {location}: the release's columns have no Delta type: {e}"
        ))
    })?;
    let log_store = super::log_store(location, options)?;
    let version = match (&target.read, target.mode) {
        (None, _) => {
            let created = DeltaTable::new(log_store)
                .create()
                .with_columns(delta_schema.fields().cloned())
                .with_save_mode(SaveMode::ErrorIfExists)
                .with_actions(adds.into_iter().map(Action::Add))
                .with_commit_properties(properties)
                .await
                .map_err(|e| commit_error(location, e))?;
            created.version().unwrap_or(0)
        }
        (Some(table), mode) => {
            let snapshot = table.snapshot().map_err(|e| delta_error(location, e))?;
            let mut actions = Vec::new();
            let save_mode = if mode == WriteMode::Append {
                SaveMode::Append
            } else {
                let current = snapshot.snapshot().schema();
                if current.as_ref() != &delta_schema {
                    let metadata = snapshot
                        .metadata()
                        .clone()
                        .with_schema(&delta_schema)
                        .map_err(|e| delta_error(location, e))?;
                    actions.push(Action::Metadata(metadata));
                }
                let removes: Vec<Action> = snapshot
                    .snapshot()
                    .file_views(&table.log_store(), None)
                    .map_ok(|f| Action::Remove(f.remove_action(true)))
                    .try_collect()
                    .await
                    .map_err(|e| delta_error(location, e))?;
                actions.extend(removes);
                SaveMode::Overwrite
            };
            actions.extend(adds.into_iter().map(Action::Add));
            let operation = DeltaOperation::Write {
                mode: save_mode,
                partition_by: None,
                predicate: None,
            };
            CommitBuilder::from(properties)
                .with_actions(actions)
                .build(
                    Some(snapshot as &dyn TableReference),
                    table.log_store(),
                    operation,
                )
                .await
                .map_err(|e| commit_error(location, e))?
                .version()
        }
    };
    hook_pause("after-commit");
    Ok(version)
}

/// A failed commit in a few words; a lost race as a commit conflict.
fn commit_error(location: &Location, error: DeltaTableError) -> DataFusionError {
    use deltalake_core::kernel::transaction::TransactionError;
    let conflict = DataFusionError::Execution(format!(
        "Delta table {location}: commit conflict: another writer committed to the table since \
         this run read it; nothing was committed (run again to publish onto the new version)"
    ));
    match &error {
        DeltaTableError::VersionAlreadyExists(_) => conflict,
        DeltaTableError::Transaction { source } => match source {
            TransactionError::VersionAlreadyExists(_)
            | TransactionError::MaxCommitAttempts(_)
            | TransactionError::CommitConflict(_) => conflict,
            TransactionError::ObjectStore {
                source: object_store::Error::NotImplemented { .. },
            } => not_atomic(location),
            _ => delta_error(location, error),
        },
        DeltaTableError::ObjectStore {
            source: object_store::Error::NotImplemented { .. },
        } => not_atomic(location),
        DeltaTableError::Generic(text) if text.contains("already exists") => conflict,
        _ if error.to_string().contains("already exists") => conflict,
        _ => delta_error(location, error),
    }
}

fn not_atomic(location: &Location) -> DataFusionError {
    DataFusionError::Execution(format!(
        "Delta table {location}: the object store cannot create a file only if it is absent \
         (conditional put), which an atomic Delta commit needs; nothing was committed (on S3, \
         unset AWS_CONDITIONAL_PUT=disabled: AWS S3, MinIO and R2 support it)"
    ))
}

/// One `add` action per Parquet file under `data`, with its size and its row count (read from
/// its footer; no other statistic, so the log holds no value of the data).
async fn add_actions(table: &Location, options: &StoreOptions, data: &Location) -> Result<Vec<Add>> {
    let (store, files) = data_files(options, data).await?;
    let directory = data
        .file_name()
        .ok_or_else(|| DataFusionError::Internal(format!("{data}: no directory name")))?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut adds = Vec::with_capacity(files.len());
    for (path, name, size) in files {
        let mut reader = ParquetObjectReader::new(Arc::clone(&store), path).with_file_size(size);
        let metadata = reader.get_metadata(None).await.map_err(|e| {
            DataFusionError::Execution(format!(
                "Delta table {table}: cannot read the footer of the written file {directory}/{name}: {e}"
            ))
        })?;
        let rows = metadata.file_metadata().num_rows();
        adds.push(Add {
            path: format!("{directory}/{name}"),
            partition_values: HashMap::new(),
            size: size as i64,
            modification_time: now,
            data_change: true,
            stats: Some(format!("{{\"numRecords\":{rows}}}")),
            ..Default::default()
        });
    }
    Ok(adds)
}

/// The Parquet files directly under the directory `data`: their object paths in the store
/// returned, names and sizes.
async fn data_files(
    options: &StoreOptions,
    data: &Location,
) -> Result<(Arc<dyn ObjectStore>, Vec<(object_store::path::Path, String, u64)>)> {
    let store: Arc<dyn ObjectStore> = match data {
        Location::Local(_) => Arc::new(object_store::local::LocalFileSystem::new()),
        Location::Url(url) => storage::store_for(url, options)?,
    };
    let prefix = match data {
        Location::Local(path) => {
            let absolute = std::path::absolute(path).map_err(|e| {
                DataFusionError::Execution(format!("{data}: cannot resolve the path: {e}"))
            })?;
            object_store::path::Path::from_absolute_path(&absolute)
                .map_err(|e| DataFusionError::Execution(format!("{data}: {e}")))?
        }
        Location::Url(url) => object_store::path::Path::from_url_path(url.path())
            .map_err(|e| DataFusionError::Execution(format!("{data}: {e}")))?,
    };
    let listed: Vec<_> = store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| storage::store_error(data, &e))?;
    let mut files: Vec<_> = listed
        .into_iter()
        .filter_map(|meta| {
            let name = meta.location.filename()?.to_string();
            (name.ends_with(".parquet") && !name.starts_with('.'))
                .then_some((meta.location, name, meta.size))
        })
        .collect();
    files.sort_by(|a, b| a.1.cmp(&b.1));
    if files.is_empty() {
        return Err(DataFusionError::Execution(format!(
            "{data}: no Parquet file was written; nothing was committed"
        )));
    }
    Ok((store, files))
}

/// Removes the data directories ([`DATA_DIR_MARK`]) under the table root that killed runs of
/// this machine left behind: their process is gone and no version of the table references
/// them. Says so on stderr.
pub async fn remove_unreferenced_staging(target: &DeltaTarget, options: &StoreOptions) -> Result<()> {
    let Some(table) = &target.read else {
        return Ok(());
    };
    let location = &target.location;
    let referenced: std::collections::HashSet<String> = table
        .snapshot()
        .map_err(|e| delta_error(location, e))?
        .snapshot()
        .file_views(&table.log_store(), None)
        .map_ok(|f| f.path().split('/').next().unwrap_or_default().to_string())
        .try_collect()
        .await
        .map_err(|e| delta_error(location, e))?;
    for name in crate::publish::staged::names_in(location, options).await? {
        let Some(run) = name.strip_prefix(DATA_DIR_MARK) else {
            continue;
        };
        if referenced.contains(&name) {
            continue;
        }
        // anon-<host>_<pid>-<nanos> (a bucket) or anon-<pid>-<nanos> (a local disk)
        let Some((run, _nanos)) = run.rsplit_once('-') else {
            continue;
        };
        if !crate::publish::staged::run_is_gone(run) {
            continue;
        }
        let directory = location.join(&name)?;
        // a version committed since this run read the table may reference it: look again
        let latest = open(location, options, &TableVersion::Latest).await?;
        let now_referenced = latest
            .get_file_uris()
            .map_err(|e| delta_error(location, e))?
            .any(|uri| uri.contains(&format!("/{name}/")));
        if now_referenced {
            continue;
        }
        storage::remove(&directory, options).await?;
        eprintln!(
            "note: removed {directory}, the uncommitted files of an earlier run that did not \
             finish (no version of the table references them)"
        );
    }
    Ok(())
}

/// Whether any file of the table's latest version lies in the directory `data`: after a
/// failed commit, whether it was committed all the same (then its files must stay).
pub async fn references(target: &DeltaTarget, options: &StoreOptions, data: &Location) -> bool {
    let Some(name) = data.file_name() else {
        return false;
    };
    match open(&target.location, options, &TableVersion::Latest).await {
        Ok(table) => table
            .get_file_uris()
            .map(|mut uris| uris.any(|uri| uri.contains(&format!("/{name}/"))))
            .unwrap_or(true),
        // not a table (a failed first commit) references nothing; other errors: keep the files
        Err(e) => !e.message().contains("is not a Delta table"),
    }
}

/// Test hook: with `ANON_TEST_PAUSE_AT=<point>` in the environment, prints
/// `paused at <point>` on stderr and sleeps `ANON_TEST_PAUSE_SECONDS` (default 60), so a test
/// can kill the process at a named point of a Delta publish (`after-write`: the files written,
/// not yet verified; `before-commit`: verified, not committed; `after-commit`: committed) or
/// make two publishes overlap.
pub fn hook_pause(point: &str) {
    if std::env::var("ANON_TEST_PAUSE_AT").is_ok_and(|p| p == point) {
        let seconds = std::env::var("ANON_TEST_PAUSE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(60);
        eprintln!("paused at {point}");
        std::thread::sleep(std::time::Duration::from_secs(seconds));
    }
}
