//! A release committed to a Delta table in one commit (the engine's `delta` feature; reading
//! is [`crate::tables::delta`]): the checks before anything is read
//! ([`check_target`]), and the commit of the verified files ([`commit`]).
//!
//! The table's version is read once, before the input ([`DeltaTarget`]), and the commit is
//! made against it and tried once: if another writer committed in between, this publish fails
//! (a commit conflict) and its files are removed, so two publishes to one table at once give
//! one new version and one clear error, never a version that mixes them or silently replaces
//! the other's.
//!
//! The data files of a release sit under the table root in a directory of their own,
//! `anon-<pid>-<nanoseconds>/` (`anon-<host>-<pid>-<nanoseconds>/` in a bucket): written and
//! verified there, referenced by no version until the commit. A killed run leaves such a
//! directory behind, which no version references; the next publish to the table removes it
//! ([`remove_unreferenced_staging`]), as does Delta's `VACUUM`.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::parquet::file::metadata::ParquetMetaDataReader;
use deltalake_core::kernel::engine::arrow_conversion::TryFromArrow;
use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties, TableReference};
use deltalake_core::kernel::{Action, Add, MetadataExt, StructType};
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, DeltaTableError};
use futures::TryStreamExt;
use object_store::ObjectStore;
use serde_json::Value;

use crate::errors::{FailureKind, Opt, UsageError};
use crate::storage::{self, Location, StoreOptions};
use crate::tables::TableVersion;
use crate::tables::delta::{DELTA_LOG, delta_error, is_delta_table, log_store, not_a_table, open};

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
    /// The columns partitioning the table as published (`[output] partition_by`).
    pub partition_by: Vec<String>,
}

impl DeltaTarget {
    /// The version the commit is made against (`None`: a new table).
    pub fn read_version(&self) -> Option<i64> {
        self.read
            .as_ref()
            .and_then(|t| t.version())
            .map(|v| v as i64)
    }
}

/// Refuses a Delta output that cannot be written as asked, before anything is read: a table
/// that exists without `--overwrite`/`--append`, a path that holds something else, an append
/// to no table or to a table partitioned otherwise than by `partition_by`. Reads the table's
/// version for the commit.
pub async fn check_target(
    location: &Location,
    options: &StoreOptions,
    overwrite: bool,
    append: bool,
    partition_by: &[String],
) -> Result<DeltaTarget> {
    let refuse =
        |why: String| DataFusionError::Plan(format!("output Delta table {location}: {why}"));
    if overwrite && append {
        return Err(UsageError::new()
            .opt(Opt::Overwrite)
            .text(" and ")
            .opt(Opt::Append)
            .text(" exclude each other; give one")
            .into());
    }
    let is_table = is_delta_table(location, options).await?;
    let exists = is_table || holds_anything(location, options).await?;
    let mode = match (is_table, exists) {
        (true, _) if append => WriteMode::Append,
        (true, _) if overwrite => WriteMode::Overwrite,
        (true, _) => {
            // the shell names the options that replace or add to its rows
            return Err(UsageError::new()
                .text(format!("output Delta table {location}: exists; pass "))
                .opt(Opt::Overwrite)
                .text(" to publish a new version replacing its rows, or ")
                .opt(Opt::Append)
                .text(" to add this release's rows")
                .kind(FailureKind::AlreadyExists)
                .into());
        }
        (false, _) if append => return Err(not_a_table(location)),
        (false, true) if !holds_only_releases(location, options).await? => {
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
            match std::path::absolute(path)
                .ok()
                .and_then(|p| p.parent().map(|p| p.to_path_buf()))
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
    if let (Some(table), WriteMode::Append) = (&read, mode) {
        let snapshot = table.snapshot().map_err(|e| delta_error(location, e))?;
        let theirs = snapshot.metadata().partition_columns();
        if theirs != partition_by {
            return Err(append_refused(
                location,
                format!(
                    "it is partitioned by {}, this release by {} (output.partition_by); every \
                     version of a table has the same partition columns",
                    column_list(theirs),
                    column_list(partition_by)
                ),
            ));
        }
    }
    Ok(DeltaTarget {
        location: location.clone(),
        mode,
        read,
        partition_by: partition_by.to_vec(),
    })
}

/// `[a, b]` as `a, b`, or `no column`.
fn column_list(columns: &[String]) -> String {
    if columns.is_empty() {
        "no column".to_string()
    } else {
        columns.join(", ")
    }
}

/// Whether anything is at `location` (a table is a directory, or a prefix: listed, never
/// asked for as an object, which some S3-compatible servers answer with an error when the
/// prefix is a directory on their disk).
async fn holds_anything(location: &Location, options: &StoreOptions) -> Result<bool> {
    match location {
        Location::Local(path) => Ok(path.exists()),
        Location::Url(_) => Ok(!storage::list(location, options).await?.is_empty()),
    }
}

/// Whether `location` holds nothing but release directories ([`DATA_DIR_MARK`]): empty, or
/// left by a killed first publish (removed by the next, see [`remove_unreferenced_staging`]).
async fn holds_only_releases(location: &Location, options: &StoreOptions) -> Result<bool> {
    if location.as_local().is_some_and(|p| p.is_file()) {
        return Ok(false);
    }
    let names = storage::names_in(location, options).await?;
    Ok(names.iter().all(|name| name.starts_with(DATA_DIR_MARK)))
}

/// Refuses an append whose release cannot share the table: other columns or types, or labels
/// that are not those of the table's last release (both must be full-domain releases of the
/// same levels of the same quasi-identifiers, recorded in their `commitInfo`).
pub async fn check_append(target: &DeltaTarget, schema: &SchemaRef, info: &Value) -> Result<()> {
    let location = &target.location;
    let Some(table) = &target.read else {
        return Err(not_a_table(location));
    };
    let refuse = |why: String| append_refused(location, why);
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
        && theirs
            .fields()
            .iter()
            .zip(schema.fields())
            .all(|(a, b)| a.name() == b.name() && same_type(a.data_type(), b.data_type()));
    if !same_columns {
        return Err(refuse(format!(
            "its columns ({}) are not this release's ({})",
            describe(&theirs),
            describe(schema)
        )));
    }
    let method = info
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let recorded = check_append_method(target, method).await?;
    let labels = |v: &Value| (v.get("method").cloned(), v.get("levels").cloned());
    if method == "full-domain" && labels(info) != labels(&recorded) {
        return Err(refuse(format!(
            "its labels are those of levels {}, this release's are levels {}",
            recorded.get("levels").cloned().unwrap_or(Value::Null),
            info.get("levels").cloned().unwrap_or(Value::Null)
        )));
    }
    Ok(())
}

/// Refuses, before anything is read, an append of a release made by `method` (as a commit
/// records it: `full-domain`, `local`, `cloaking`, `perturbation`) that the table's last
/// version cannot take; returns what that version recorded.
///
/// - A full-domain release appends to a full-domain release (whose labels must then be the
///   same, [`check_append`]): every version's classes are then classes of the table.
/// - A cloaked or perturbed release appends to a release of the same method: a period added
///   to a series. Each release is verified on its own (every label of k subjects, every
///   microaggregation group of k records) and its pseudonyms are keyed for it alone, so no
///   release links to another through them.
/// - A local recoding appends to nothing: its labels are its own classes' boxes, which another
///   version's rows could fall into and thin out.
pub async fn check_append_method(target: &DeltaTarget, method: &str) -> Result<Value> {
    let location = &target.location;
    let Some(table) = &target.read else {
        return Err(not_a_table(location));
    };
    let refuse = |why: String| append_refused(location, why);
    let last: Vec<_> = table
        .history(Some(1))
        .try_collect()
        .await
        .map_err(|e| delta_error(location, e))?;
    let Some(recorded) = last
        .first()
        .and_then(|c| c.info.get(COMMIT_INFO_KEY))
        .cloned()
    else {
        return Err(refuse(
            "its last version was not published by this tool, so its labels are unknown"
                .to_string(),
        ));
    };
    let theirs = recorded
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let appendable = matches!(method, "full-domain" | "cloaking" | "perturbation");
    if !appendable || theirs != method {
        return Err(refuse(format!(
            "a release appends to a release of the same method: full-domain (whose labels are \
             the same in every version), cloaking or perturbation (each period verified on its \
             own); this release is {method}, the table's last version {theirs}"
        )));
    }
    Ok(recorded)
}

/// The refusal of an append to `location`, saying `why`.
fn append_refused(location: &Location, why: String) -> DataFusionError {
    DataFusionError::Plan(format!(
        "cannot append to Delta table {location}: {why}; nothing was committed"
    ))
}

/// Arrow types that Delta stores as the same type (Delta has one string and one binary type,
/// and timestamps in microseconds).
fn same_type(
    a: &datafusion::arrow::datatypes::DataType,
    b: &datafusion::arrow::datatypes::DataType,
) -> bool {
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
        super::runs::run_id(table)
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
    crate::interrupt::hook_pause("before-commit");
    // the last moment a stop asked for keeps the release out of the table
    crate::interrupt::check()?;
    let adds = add_actions(location, options, data, &target.partition_by).await?;
    let properties = CommitProperties::default()
        .with_max_retries(0)
        .with_metadata([(COMMIT_INFO_KEY.to_string(), info)]);
    let delta_schema = StructType::try_from_arrow(schema.as_ref()).map_err(|e| {
        DataFusionError::Plan(format!(
            "Delta table {location}: the release's columns have no Delta type: {e}"
        ))
    })?;
    let log_store = log_store(location, options)?;
    let committed = match (&target.read, target.mode) {
        (None, _) => DeltaTable::new(log_store)
            .create()
            .with_columns(delta_schema.fields().cloned())
            .with_partition_columns(target.partition_by.iter().cloned())
            .with_save_mode(SaveMode::ErrorIfExists)
            .with_actions(adds.into_iter().map(Action::Add))
            .with_commit_properties(properties)
            .await
            .map(|created| created.version().unwrap_or(0)),
        (Some(table), mode) => {
            let snapshot = table.snapshot().map_err(|e| delta_error(location, e))?;
            let mut actions = Vec::new();
            let save_mode = if mode == WriteMode::Append {
                SaveMode::Append
            } else {
                let current = snapshot.snapshot().schema();
                let metadata = snapshot.metadata();
                let repartitioned = metadata.partition_columns() != target.partition_by;
                if current.as_ref() != &delta_schema || repartitioned {
                    let cannot = |e: String| {
                        DataFusionError::Execution(format!(
                            "Delta table {location}: cannot change its columns: {e}"
                        ))
                    };
                    let metadata = if repartitioned {
                        // the kernel's Metadata has no setter for the partition columns
                        deltalake_core::kernel::new_metadata(
                            &delta_schema,
                            target.partition_by.iter(),
                            metadata.configuration().clone(),
                        )
                        .and_then(|m| m.with_table_id(metadata.id().to_string()))
                        .map_err(|e| cannot(e.to_string()))?
                    } else {
                        metadata
                            .clone()
                            .with_schema(&delta_schema)
                            .map_err(|e| cannot(e.to_string()))?
                    };
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
                partition_by: (!target.partition_by.is_empty())
                    .then(|| target.partition_by.clone()),
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
                .map(|committed| committed.version())
        }
    };
    let version = match committed {
        Ok(version) => version,
        Err(error) => {
            let raced = another_writer_committed(target, options).await;
            return Err(commit_error(location, error, raced));
        }
    };
    crate::interrupt::hook_pause("after-commit");
    Ok(version as i64)
}

/// Whether the table has a version this run did not read: another writer committed since
/// (a new table where there was none, or a later version). Any doubt (an unreadable log) says
/// no: the commit's own error is then reported.
async fn another_writer_committed(target: &DeltaTarget, options: &StoreOptions) -> bool {
    let Ok(latest) = open(&target.location, options, &TableVersion::Latest).await else {
        return false;
    };
    match (target.read_version(), latest.version()) {
        (None, Some(_)) => true,
        (Some(read), Some(now)) => now as i64 > read,
        _ => false,
    }
}

/// A failed commit in a few words; a lost race (the error says so, or `raced`: another
/// writer's version is in the log) as a commit conflict.
fn commit_error(location: &Location, error: DeltaTableError, raced: bool) -> DataFusionError {
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
            _ if raced => conflict,
            _ => delta_error(location, error),
        },
        DeltaTableError::ObjectStore {
            source: object_store::Error::NotImplemented { .. },
        } => not_atomic(location),
        _ if raced => conflict,
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
/// its footer; no other statistic, so the log holds no value of the data beyond the partition
/// values, which name the `<column>=<value>/` directories a file is in when the table is
/// partitioned by `partition_by`: insensitive columns, published as they are).
async fn add_actions(
    table: &Location,
    options: &StoreOptions,
    data: &Location,
    partition_by: &[String],
) -> Result<Vec<Add>> {
    let (store, files) = data_files(options, data).await?;
    let directory = data
        .file_name()
        .ok_or_else(|| DataFusionError::Internal(format!("{data}: no directory name")))?;
    let now = chrono::Utc::now().timestamp_millis();
    let mut adds = Vec::with_capacity(files.len());
    for (path, name, size) in files {
        let unreadable = |why: String| {
            DataFusionError::Execution(format!(
                "Delta table {table}: cannot read the footer of the written file \
                 {directory}/{name}: {why}"
            ))
        };
        let rows = footer_rows(store.as_ref(), &path, size)
            .await
            .map_err(unreadable)?;
        let partition_values = partition_values(&name, partition_by).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "Delta table {table}: the written file {directory}/{name} is not under one \
                 directory per partition column ({})",
                partition_by.join(", ")
            ))
        })?;
        adds.push(Add {
            path: format!("{directory}/{name}"),
            partition_values,
            size: size as i64,
            modification_time: now,
            data_change: true,
            stats: Some(format!("{{\"numRecords\":{rows}}}")),
            ..Default::default()
        });
    }
    Ok(adds)
}

/// The partition values of the file at `relative` (under its release directory): one
/// `<column>=<value>` directory per column of `partition_by`, in order, then the file's name;
/// `None` when the path has another shape.
fn partition_values(
    relative: &str,
    partition_by: &[String],
) -> Option<HashMap<String, Option<String>>> {
    let segments: Vec<&str> = relative.split('/').collect();
    let (_file, directories) = segments.split_last()?;
    if directories.len() != partition_by.len() {
        return None;
    }
    directories
        .iter()
        .zip(partition_by)
        .map(|(segment, column)| {
            let value = segment.strip_prefix(column.as_str())?.strip_prefix('=')?;
            Some((column.clone(), Some(value.to_string())))
        })
        .collect()
}

/// The most partitions a release may have: a partition is a directory of files, and a column
/// with more distinct values is not a period or a region but nearly a row key.
pub const MAX_PARTITIONS: usize = 10_000;

/// A release's rows per partition: the values of `columns`, as the partition directories and
/// the log spell them, to their rows.
pub(crate) type PartitionRows = std::collections::BTreeMap<Vec<String>, i64>;

/// The rows per partition of `columns` of the verified release staged at `staging` for the
/// table `table`, counted by a query. Refuses, naming the column and never a value, a column
/// missing or of a type this partitioning does not write (strings, booleans, dates, signed
/// integers), a NULL or empty value (Delta reads an empty partition value as NULL), a value
/// that is no plain path segment, and more than [`MAX_PARTITIONS`] partitions.
pub(crate) async fn partition_census(
    ctx: &datafusion::prelude::SessionContext,
    staging: &Location,
    table: &Location,
    columns: &[String],
) -> Result<PartitionRows> {
    use datafusion::arrow::datatypes::DataType;
    use datafusion::arrow::util::display::array_value_to_string;
    use datafusion::functions_aggregate::expr_fn::count;
    use datafusion::prelude::{col, lit};
    let refuse = |why: String| {
        DataFusionError::Plan(format!(
            "Delta table {table}: output.partition_by: {why}; nothing was committed"
        ))
    };
    let reader = datafusion::prelude::SessionContext::new_with_config_rt(
        ctx.copied_config(),
        ctx.runtime_env(),
    );
    let name = super::verify::register_written(&reader, staging, "partitions").await?;
    let frame = reader.table(name.as_str()).await?;
    for column in columns {
        let Ok(field) = frame.schema().field_with_unqualified_name(column) else {
            return Err(refuse(format!("'{column}' is not a column of the release")));
        };
        let partitionable = match field.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
            DataType::Dictionary(_, value) => value.as_ref() == &DataType::Utf8,
            DataType::Boolean | DataType::Date32 => true,
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => true,
            _ => false,
        };
        if !partitionable {
            return Err(refuse(format!(
                "'{column}' is {}; a partition column is a string, boolean, date or signed \
                 integer",
                field.data_type()
            )));
        }
    }
    let groups: Vec<_> = columns.iter().map(|c| col(format!("\"{c}\""))).collect();
    let batches = frame
        .aggregate(groups, vec![count(lit(1)).alias("rows")])?
        .collect()
        .await?;
    let mut census = PartitionRows::new();
    for batch in &batches {
        let rows = batch
            .column(columns.len())
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .ok_or_else(|| DataFusionError::Internal("count(*) is not Int64".to_string()))?;
        for row in 0..batch.num_rows() {
            let mut key = Vec::with_capacity(columns.len());
            for (i, column) in columns.iter().enumerate() {
                let array = batch.column(i);
                if array.is_null(row) {
                    return Err(refuse(format!(
                        "'{column}' is NULL in some rows, and a partition value must not be"
                    )));
                }
                let value = array_value_to_string(array, row)?;
                if value.is_empty() {
                    return Err(refuse(format!(
                        "'{column}' is empty in some rows, which Delta reads as NULL"
                    )));
                }
                let segment = format!("{column}={value}");
                if object_store::path::PathPart::from(segment.as_str()).as_ref() != segment {
                    return Err(refuse(format!(
                        "'{column}' holds a value that is no plain directory name (a '/', '%', \
                         '.' alone or a control character)"
                    )));
                }
                key.push(value);
            }
            census.insert(key, rows.value(row));
        }
        if census.len() > MAX_PARTITIONS {
            return Err(refuse(format!(
                "{} has more than {MAX_PARTITIONS} distinct values: partition by a coarser \
                 column (a month, a region)",
                columns.join(", ")
            )));
        }
    }
    Ok(census)
}

/// The rows per partition of the partitioned Parquet files under `data` (from their footers),
/// keyed by the values their `<column>=<value>/` directories name.
pub(crate) async fn partition_rows(
    options: &StoreOptions,
    data: &Location,
    columns: &[String],
) -> Result<PartitionRows> {
    let (store, files) = data_files(options, data).await?;
    let mut counted = PartitionRows::new();
    for (path, relative, size) in files {
        let malformed = || {
            DataFusionError::Internal(format!(
                "{data}: the written file {relative} is not under one directory per partition \
                 column"
            ))
        };
        let values = partition_values(&relative, columns).ok_or_else(malformed)?;
        let key: Option<Vec<String>> = columns.iter().map(|c| values[c].clone()).collect();
        let rows = footer_rows(store.as_ref(), &path, size)
            .await
            .map_err(|why| DataFusionError::Execution(format!("{data}/{relative}: {why}")))?;
        *counted.entry(key.ok_or_else(malformed)?).or_default() += rows;
    }
    Ok(counted)
}

/// The rows of the Parquet file at `path` (`size` bytes), from its footer alone.
async fn footer_rows(
    store: &dyn ObjectStore,
    path: &object_store::path::Path,
    size: u64,
) -> std::result::Result<i64, String> {
    use object_store::ObjectStoreExt;
    // the last 8 bytes: the footer's length (little-endian u32) and `PAR1`
    if size < 12 {
        return Err("too short for a Parquet file".into());
    }
    let tail = store
        .get_range(path, size - 8..size)
        .await
        .map_err(|e| storage::describe_store_error(&e))?;
    let length = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if length + 8 > size {
        return Err("its footer length is past its start".into());
    }
    let footer = store
        .get_range(path, size - 8 - length..size - 8)
        .await
        .map_err(|e| storage::describe_store_error(&e))?;
    let metadata = ParquetMetaDataReader::decode_metadata(&footer).map_err(|e| e.to_string())?;
    Ok(metadata.file_metadata().num_rows())
}

/// The Parquet files under the directory `data`: their object paths in the store returned,
/// paths under `data` (`part-0.parquet`, or `month=2026-01/part-0.parquet` in a partitioned
/// release) and sizes.
async fn data_files(
    options: &StoreOptions,
    data: &Location,
) -> Result<(
    Arc<dyn ObjectStore>,
    Vec<(object_store::path::Path, String, u64)>,
)> {
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
            let name = meta.location.filename()?;
            if !name.ends_with(".parquet") || name.starts_with('.') {
                return None;
            }
            let relative = meta
                .location
                .prefix_match(&prefix)?
                .map(|part| part.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/");
            Some((meta.location, relative, meta.size))
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
/// this machine left behind: their process is gone and no version of the table in its log
/// references them. Says so on stderr.
pub async fn remove_unreferenced_staging(
    target: &DeltaTarget,
    options: &StoreOptions,
) -> Result<()> {
    let location = &target.location;
    if !holds_anything(location, options).await? {
        return Ok(());
    }
    // the runs that are gone first, then the log: a run's commit, if any, came before it ended
    let gone: Vec<String> = storage::names_in(location, options)
        .await?
        .into_iter()
        .filter(|name| {
            // anon-<host>-<pid>-<nanos> (a bucket) or anon-<pid>-<nanos> (a local disk)
            name.strip_prefix(DATA_DIR_MARK)
                .and_then(|run| run.rsplit_once('-'))
                .is_some_and(|(run, _nanos)| super::runs::run_is_gone(run))
        })
        .collect();
    if gone.is_empty() {
        return Ok(());
    }
    let referenced = referenced_directories(location, options).await?;
    for name in gone {
        if referenced.contains(&name) {
            continue;
        }
        let directory = location.join(&name)?;
        storage::remove(&directory, options).await?;
        eprintln!(
            "note: removed {directory}, the uncommitted files of an earlier run that did not \
             finish (no version of the table references them)"
        );
    }
    Ok(())
}

/// Whether any version of the table references a file in the directory `data`: after a
/// failed commit, whether it was committed all the same (then its files must stay). Any doubt
/// (an unreadable log) keeps them.
pub async fn references(target: &DeltaTarget, options: &StoreOptions, data: &Location) -> bool {
    let Some(name) = data.file_name() else {
        return true;
    };
    referenced_directories(&target.location, options)
        .await
        .map_or(true, |referenced| referenced.contains(&name))
}

/// The first path segment (a release directory) of every file an `add` of the log adds, in
/// any version still in the log, and of the latest version's files (a checkpoint may stand for
/// log entries that were cleaned up): what time travel can still read.
async fn referenced_directories(
    table: &Location,
    options: &StoreOptions,
) -> Result<std::collections::HashSet<String>> {
    let mut referenced = std::collections::HashSet::new();
    if !is_delta_table(table, options).await? {
        return Ok(referenced);
    }
    let log = table.join(DELTA_LOG)?;
    let entries: Vec<Location> = match &log {
        Location::Local(path) => std::fs::read_dir(path)
            .map_err(|e| DataFusionError::Execution(format!("cannot list {log}: {e}")))?
            .filter_map(|e| e.ok())
            .map(|e| Location::Local(e.path()))
            .collect(),
        Location::Url(_) => {
            let base = log.as_prefix();
            let mut entries = Vec::new();
            for meta in storage::list(&log, options).await? {
                if let Some(file) = meta.location.filename() {
                    entries.push(base.join(file)?);
                }
            }
            entries
        }
    };
    let first_segment = |path: &str| path.split('/').next().unwrap_or_default().to_string();
    for entry in entries {
        let file = entry.file_name().unwrap_or_default();
        if !file.ends_with(".json") || file.starts_with('.') {
            continue;
        }
        let bytes = storage::read_bytes(&entry, options).await?;
        for line in String::from_utf8_lossy(&bytes).lines() {
            let Ok(action) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            if let Some(path) = action
                .get("add")
                .and_then(|add| add.get("path"))
                .and_then(Value::as_str)
            {
                referenced.insert(first_segment(path));
            }
        }
    }
    let latest = open(table, options, &TableVersion::Latest).await?;
    let snapshot = latest.snapshot().map_err(|e| delta_error(table, e))?;
    let files: Vec<String> = snapshot
        .snapshot()
        .file_views(&latest.log_store(), None)
        .map_ok(|f| first_segment(&f.path()))
        .try_collect()
        .await
        .map_err(|e| delta_error(table, e))?;
    referenced.extend(files);
    Ok(referenced)
}
