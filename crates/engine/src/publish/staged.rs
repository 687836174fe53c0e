//! Staged outputs: written next to their target, verified there, and only then put in place,
//! so that a reader never sees a partial or unverified output.
//!
//! **On a local disk** the output is written to the hidden sibling
//! `.<name>.anon-tmp-<pid>[.parquet]` and renamed into place:
//! - a file replaces the old one with one `rename` over it (atomic);
//! - a directory that does not exist yet is renamed into place (atomic); one that exists is
//!   swapped with the new one by `renameat2(RENAME_EXCHANGE)` (atomic, Linux), after which the
//!   old one, now at the staging name, is removed.
//!
//! A run killed at any point leaves the target as it was (old or new, never partial) and at
//! most its staging sibling, which the next run to the same target removes (saying so on
//! stderr) once the process that made it is gone.
//!
//! **In a bucket** there is no rename. The output is staged under the hidden sibling prefix
//! `.<name>.anon-tmp-<host>-<pid>`, verified there, then copied into place:
//! - a single `.parquet` object is copied over the target in one server-side copy, which S3
//!   makes visible only when complete: a reader sees the old object or the new one;
//! - a directory (prefix) gets its files copied in, then the manifest `_SUCCESS` is written
//!   **last**, listing the files of this output, and finally the objects the manifest does not
//!   list (an older output's) are deleted. **Readers must require `_SUCCESS` and read the files
//!   it lists** (`anon` itself does): until it is written the new files are not the output, and
//!   an older output's files stay valid until the manifest that replaces theirs is written.
//!   When a new file would overwrite an older output's file of the same name, the old manifest
//!   is deleted first, so that no reader takes a half-copied mix for the old output.
//!
//! A failed or refused publish removes its staging; a killed one leaves it to the next run.

use std::path::Path;

use bytes::Bytes;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::datatypes::UInt64Type;
use datafusion::dataframe::{DataFrame, DataFrameWriteOptions};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use datafusion::prelude::SessionContext;
use object_store::ObjectStoreExt;
use object_store::path::Path as ObjectPath;

use crate::storage::{self, Location, StoreOptions};

pub use crate::storage::manifest::{MANIFEST, MANIFEST_FORMAT, Manifest, is_parquet_file};

/// The name part that marks staging: `.<name>.anon-tmp-…`.
const STAGING_MARK: &str = ".anon-tmp-";
/// After the run's part: the staging of the output as published, when it differs from the
/// staging verified (see [`StagedOutput::without_column`]).
const PUBLISHED_MARK: &str = ".p";
/// After the run's part: the staging of the output with synthetic records added
/// ([`super::synthetic`]).
pub(crate) const SYNTHETIC_MARK: &str = ".y";
/// After the run's part: the staging of a Delta release partitioned into directories
/// ([`StagedOutput::partitioned`]).
#[cfg(feature = "delta")]
const PARTITIONED_MARK: &str = ".q";
/// Left over by versions that moved an old output aside before moving the new one in.
const OLD_MARK: &str = ".anon-old-";

/// An output written to a staging location next to its target; see the module docs.
/// Dropping it without [`StagedOutput::commit`] removes the staging.
#[derive(Debug)]
pub struct StagedOutput {
    staging: Location,
    target: Location,
    options: StoreOptions,
    single_file: bool,
    committed: bool,
    /// Staged inside the target directory (a Delta table's release directory, see
    /// [`crate::tables::delta::commit`]) rather than next to it.
    in_table: bool,
    /// The local target directory did not exist before this staging created it: removed with
    /// the staging when nothing is committed.
    created_target: bool,
    /// The columns written.
    schema: Option<datafusion::arrow::datatypes::SchemaRef>,
    /// Rows the Parquet writer reports written.
    pub rows_written: u64,
    /// Columns the next write partitions the files by, as `<column>=<value>/` directories
    /// (a partitioned Delta release, [`StagedOutput::partitioned`]).
    partition_by: Vec<String>,
}

impl StagedOutput {
    /// Writes `data` as Parquet to the staging of `target`: one file when `target` ends in
    /// `.parquet`, else a directory of files (one per output partition).
    pub async fn write(data: DataFrame, target: &Location, options: &StoreOptions) -> Result<Self> {
        let single_file = is_parquet_file(target);
        let mut staged = Self::create(target, options, single_file).await?;
        staged.write_rows(data).await?;
        Ok(staged)
    }

    /// Writes `data` for `output`: Parquet staged beside its target ([`Self::write`]), or a
    /// release directory of the Delta table ([`Self::write_delta`]), an append first checked
    /// against the table's columns and last release (`published`: the columns the release
    /// publishes, which may be fewer than `data`'s).
    #[cfg_attr(not(feature = "delta"), allow(unused_variables))]
    pub async fn write_for(
        data: DataFrame,
        output: &super::Output,
        options: &StoreOptions,
        published: impl FnOnce(&DataFrame) -> datafusion::arrow::datatypes::SchemaRef,
    ) -> Result<Self> {
        match output {
            super::Output::Files { location, .. } => Self::write(data, location, options).await,
            #[cfg(feature = "delta")]
            super::Output::Delta { target, info } => {
                if target.mode == crate::publish::delta::WriteMode::Append {
                    crate::publish::delta::check_append(target, &published(&data), info).await?;
                }
                Self::write_delta(data, target, options).await
            }
        }
    }

    /// Puts the verified output in place for `output`: moves the files ([`Self::commit`]), or
    /// commits them as a new version of the Delta table ([`Self::commit_delta`]), whose
    /// `commitInfo` gets the release's `figures`. Where the release went, and the version.
    #[cfg_attr(not(feature = "delta"), allow(unused_variables))]
    pub async fn commit_for(
        self,
        ctx: &SessionContext,
        output: &super::Output,
        figures: impl FnOnce() -> serde_json::Value,
    ) -> Result<(String, Option<i64>)> {
        match output {
            super::Output::Files { .. } => Ok((self.commit().await?.to_string(), None)),
            #[cfg(feature = "delta")]
            super::Output::Delta { target, info } => {
                let mut info = info.clone();
                info["figures"] = figures();
                let staged = if target.partition_by.is_empty() {
                    self
                } else {
                    self.partitioned(ctx, &target.partition_by).await?
                };
                let version = staged.commit_delta(target, info).await?;
                Ok((target.location.to_string(), Some(version)))
            }
        }
    }

    /// Writes `data` as Parquet files into a release directory of its own under the Delta
    /// table `target` (created if need be), referenced by no version until
    /// [`StagedOutput::commit_delta`].
    #[cfg(feature = "delta")]
    pub async fn write_delta(
        data: DataFrame,
        target: &crate::publish::delta::DeltaTarget,
        options: &StoreOptions,
    ) -> Result<Self> {
        let table = &target.location;
        crate::publish::delta::remove_unreferenced_staging(target, options).await?;
        let created_target = table.as_local().is_some_and(|p| !p.exists());
        let staging = crate::publish::delta::release_directory(table)?;
        let mut staged = Self::empty(staging, table, options, false).await?;
        staged.in_table = true;
        staged.created_target = created_target;
        staged.write_rows(data).await?;
        Ok(staged)
    }

    /// Commits the verified files as one new version of the Delta table `target`, recording
    /// `info` in its `commitInfo` (see [`crate::publish::delta::commit`]); the version. A
    /// failed commit removes the files, unless the table references them all the same.
    #[cfg(feature = "delta")]
    pub async fn commit_delta(
        mut self,
        target: &crate::publish::delta::DeltaTarget,
        info: serde_json::Value,
    ) -> Result<i64> {
        let schema = self.schema.clone().ok_or_else(|| {
            DataFusionError::Internal(format!("{}: no columns were written", self.staging))
        })?;
        match crate::publish::delta::commit(target, &self.options, &self.staging, &schema, info)
            .await
        {
            Ok(version) => {
                self.committed = true;
                Ok(version)
            }
            Err(e) => {
                // an error after the log entry was written (a lost response) must keep the
                // files the new version references
                if crate::publish::delta::references(target, &self.options, &self.staging).await {
                    self.committed = true;
                }
                Err(e)
            }
        }
    }

    /// Writes `data` into the staging, recording the rows the writer reports. The staging's
    /// store is bound to `data`'s runtime first, so the files go where the checks, the
    /// read-back and the commit go (the policy's `[storage]`), whatever the environment names.
    async fn write_rows(&mut self, data: DataFrame) -> Result<()> {
        self.bind(&data.task_ctx().runtime_env())?;
        self.schema = Some(std::sync::Arc::new(data.schema().as_arrow().clone()));
        let mut location = self.staging.datafusion_path();
        if !self.single_file {
            location.push('/');
        }
        let counts = data
            .write_parquet(
                &location,
                DataFrameWriteOptions::new()
                    .with_single_file_output(self.single_file)
                    .with_partition_by(self.partition_by.clone()),
                None,
            )
            .await?;
        self.rows_written = counts
            .iter()
            .filter_map(|b| b.column(0).as_primitive_opt::<UInt64Type>())
            .flat_map(|c| c.iter().flatten())
            .sum();
        Ok(())
    }

    /// Binds the staging's store, with this output's options, to `runtime`: a writer of
    /// its own into [`StagedOutput::staging`] calls it before writing; the reads of the
    /// staging ([`super::verify`]) then go through the same store.
    pub fn bind(&self, runtime: &datafusion::execution::runtime_env::RuntimeEnv) -> Result<()> {
        storage::bind_store(runtime, &self.staging, &self.options)
    }

    /// A staging directory for an output of several files, which the caller writes into
    /// [`StagedOutput::staging`]; committed and cleaned up like [`StagedOutput::write`]'s.
    pub async fn directory(target: &Location, options: &StoreOptions) -> Result<Self> {
        Self::create(target, options, false).await
    }

    async fn create(target: &Location, options: &StoreOptions, single_file: bool) -> Result<Self> {
        remove_stale_staging(target, options).await?;
        let staging = staging_of(target, single_file, "")?;
        Self::empty(staging, target, options, single_file).await
    }

    /// A staging at `staging`, emptied (and created, for a local directory).
    async fn empty(
        staging: Location,
        target: &Location,
        options: &StoreOptions,
        single_file: bool,
    ) -> Result<Self> {
        storage::remove(&staging, options).await?;
        if let Location::Local(path) = &staging
            && !single_file
        {
            std::fs::create_dir_all(path)
                .map_err(|e| DataFusionError::Execution(format!("cannot create {staging}: {e}")))?;
        }
        Ok(Self {
            staging,
            target: target.clone(),
            options: options.clone(),
            single_file,
            committed: false,
            in_table: false,
            created_target: false,
            schema: None,
            rows_written: 0,
            partition_by: Vec::new(),
        })
    }

    /// The same output without `column`, for a column that is verified on the written files
    /// but not published (the person pseudonyms, [`crate::pseudonym`]): the staged files read
    /// back in order (one partition) and written again, without it, to a second staging next
    /// to the first, `.<name>.anon-tmp-<run>.p[.parquet]`; the first is removed. The rows
    /// written must be the rows read, or nothing is published.
    pub async fn without_column(self, ctx: &SessionContext, column: &str) -> Result<Self> {
        let verified = self.rows_written;
        let stripped = self
            .rewritten(ctx, PUBLISHED_MARK, |_, frame| {
                let kept: Vec<Expr> = frame
                    .schema()
                    .columns()
                    .into_iter()
                    .filter(|c| c.name != column)
                    .map(Expr::Column)
                    .collect();
                frame.select(kept)
            })
            .await?;
        if stripped.rows_written != verified {
            return Err(DataFusionError::Execution(format!(
                "{} rows were written without the person column where {verified} were verified, \
                 so the output was not published",
                stripped.rows_written
            )));
        }
        Ok(stripped)
    }

    /// The staged rows read back in order (one partition, so the same staged rows give the
    /// same bytes) as the table `<name>` of a reader context, passed with it to `rewrite`,
    /// and what it returns written to a second staging next to the first (`mark` after the
    /// run's part); the first is removed. The caller checks the rows written.
    pub(crate) async fn rewritten(
        mut self,
        ctx: &SessionContext,
        mark: &str,
        rewrite: impl FnOnce(&SessionContext, DataFrame) -> Result<DataFrame>,
    ) -> Result<Self> {
        let staging = if self.in_table {
            let name = self.staging.file_name().unwrap_or_default();
            self.target.join(&format!("{name}{mark}"))?
        } else {
            staging_of(&self.target, self.single_file, mark)?
        };
        let mut second =
            Self::empty(staging, &self.target, &self.options, self.single_file).await?;
        second.in_table = self.in_table;
        second.partition_by = std::mem::take(&mut self.partition_by);
        // the table directory is removed (when this run made it) by the last staging's drop
        second.created_target = std::mem::take(&mut self.created_target);
        let reader = SessionContext::new_with_config_rt(
            ctx.copied_config().with_target_partitions(1),
            ctx.runtime_env(),
        );
        let table = super::verify::register_written(&reader, &self.staging, "rewrite").await?;
        let frame = reader.table(table.as_str()).await?;
        second.write_rows(rewrite(&reader, frame)?).await?;
        // `self` dropped here: its staging is removed
        Ok(second)
    }

    /// The verified release rewritten into one `<column>=<value>/` directory per partition of
    /// `columns` (the Delta table's partition columns; their values then live in the log, not
    /// in the files), as a second staging next to the first (`.q`). Refused, naming the
    /// column and never a value, when a partition column is missing, of a type Delta cannot
    /// partition by here, NULL or empty (Delta reads an empty partition value as NULL), or a
    /// value that is not a plain path segment; or when there are more than
    /// [`super::delta::MAX_PARTITIONS`]. Each partition's rows, counted from the written files' footers,
    /// must be the rows of that partition counted on the verified release, or nothing is
    /// published.
    #[cfg(feature = "delta")]
    pub(crate) async fn partitioned(
        mut self,
        ctx: &SessionContext,
        columns: &[String],
    ) -> Result<Self> {
        let census =
            super::delta::partition_census(ctx, &self.staging, &self.target, columns).await?;
        self.partition_by = columns.to_vec();
        let verified = self.rows_written;
        let partitioned = self
            .rewritten(ctx, PARTITIONED_MARK, |_, frame| Ok(frame))
            .await?;
        let written =
            super::delta::partition_rows(&partitioned.options, &partitioned.staging, columns)
                .await?;
        if partitioned.rows_written != verified || written != census {
            return Err(DataFusionError::Execution(format!(
                "{}: the partitioned files do not hold the verified rows partition by partition \
                 ({} rows written, {verified} verified), so the release was not published",
                partitioned.target, partitioned.rows_written
            )));
        }
        Ok(partitioned)
    }

    /// Where the data are until committed.
    pub fn staging(&self) -> &Location {
        &self.staging
    }

    /// Puts the output in place (replacing what is there, which
    /// [`super::check_output`] allowed only with `--overwrite`); see the module docs.
    pub async fn commit(mut self) -> Result<Location> {
        crate::interrupt::check()?;
        match (&self.staging, &self.target) {
            (Location::Local(staging), Location::Local(target)) => {
                commit_local(staging, target, self.single_file)?
            }
            _ if self.single_file => {
                let (store, from) = object(&self.staging, &self.options)?;
                let (_, to) = object(&self.target, &self.options)?;
                store
                    .copy(&from, &to)
                    .await
                    .map_err(|e| storage::store_error(&self.target, &e))?;
            }
            _ => commit_prefix(&self.staging, &self.target, &self.options).await?,
        }
        self.committed = true;
        // the output is in place: a leftover staging copy is only clutter now
        if let Err(e) = storage::remove(&self.staging, &self.options).await {
            eprintln!("warning: {}; remove it by hand", e.message());
        }
        Ok(self.target.clone())
    }
}

impl Drop for StagedOutput {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        // no async drop: a bucket's staging is removed on a runtime of its own
        let _ = storage::remove_blocking(&self.staging, &self.options);
        crate::interrupt::dropped(&self.staging, &self.options);
        if self.created_target
            && let Location::Local(path) = &self.target
        {
            // only when empty: the table directory this run made for nothing
            let _ = std::fs::remove_dir(path);
        }
    }
}

/// The staging of `target`: `.<name>.anon-tmp-<run><mark>[.parquet]`.
fn staging_of(target: &Location, single_file: bool, mark: &str) -> Result<Location> {
    let name = target.file_name().ok_or_else(|| {
        DataFusionError::Plan(format!("output {target}: not a file or directory name"))
    })?;
    let suffix = if single_file { ".parquet" } else { "" };
    Ok(target.sibling(&format!(
        ".{name}{STAGING_MARK}{}{mark}{suffix}",
        super::runs::run_id(target)
    )))
}

/// Removes the staging an earlier, killed run to `target` left behind, when the process that
/// made it is gone (on this machine); says so on stderr. Staging of another machine in a
/// bucket is left alone and reported.
pub(crate) async fn remove_stale_staging(target: &Location, options: &StoreOptions) -> Result<()> {
    let Some(name) = target.file_name() else {
        return Ok(());
    };
    let parent = target.parent();
    let stale_prefixes = [
        format!(".{name}{STAGING_MARK}"),
        format!(".{name}{OLD_MARK}"),
    ];
    for sibling in storage::names_in(&parent, options).await? {
        let Some(run) = stale_prefixes
            .iter()
            .find_map(|prefix| sibling.strip_prefix(prefix.as_str()))
        else {
            continue;
        };
        // object_store writes a local file through `<name>#<n>` and renames it when complete
        let run = run.split('#').next().unwrap_or(run);
        let run = run.strip_suffix(".parquet").unwrap_or(run);
        let run = run.strip_suffix(PUBLISHED_MARK).unwrap_or(run);
        let run = run.strip_suffix(SYNTHETIC_MARK).unwrap_or(run);
        let (host, pid) = match run.rsplit_once('-') {
            Some((host, pid)) => (Some(host), pid),
            None => (None, run),
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let ours = host.is_none_or(|h| h == super::runs::host_name());
        let location = parent.join(&sibling)?;
        if ours && !super::runs::process_alive(pid) {
            storage::remove(&location, options).await?;
            eprintln!(
                "note: removed {location}, the unverified staging of an earlier run (process \
                 {pid}) that did not finish"
            );
        } else if !ours {
            eprintln!("note: {location} is the staging of a run on another machine; left in place");
        }
    }
    Ok(())
}

fn object(
    location: &Location,
    options: &StoreOptions,
) -> Result<(std::sync::Arc<dyn object_store::ObjectStore>, ObjectPath)> {
    storage::object_of(location, options)?
        .ok_or_else(|| DataFusionError::Internal(format!("{location} is not an object-store URL")))
}

fn commit_local(staging: &Path, target: &Path, single_file: bool) -> Result<()> {
    let io = |what: &str, e: std::io::Error| {
        DataFusionError::Execution(format!("cannot {what} {}: {e}", target.display()))
    };
    if single_file || !target.exists() {
        // rename over a file, or into a free name, is atomic
        if target.is_dir() {
            return exchange(staging, target).map_err(|e| io("replace", e));
        }
        return std::fs::rename(staging, target).map_err(|e| io("move the output into", e));
    }
    exchange(staging, target).map_err(|e| io("replace", e))
}

/// Swaps `a` and `b` in one step (Linux `renameat2(RENAME_EXCHANGE)`); the caller removes
/// what is left at `a`, the old output.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let a = CString::new(a.as_os_str().as_bytes())?;
    let b = CString::new(b.as_os_str().as_bytes())?;
    // SAFETY: both are valid NUL-terminated paths that outlive the call
    let result = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Without an atomic exchange: the old output is moved aside, then the new one in; a kill in
/// between leaves the old one at `.<name>.anon-old-<pid>`, which the next run removes.
#[cfg(not(target_os = "linux"))]
fn exchange(staging: &Path, target: &Path) -> std::io::Result<()> {
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let aside = target.with_file_name(format!(".{name}{OLD_MARK}{}", std::process::id()));
    std::fs::rename(target, &aside)?;
    if let Err(e) = std::fs::rename(staging, target) {
        let _ = std::fs::rename(&aside, target);
        return Err(e);
    }
    std::fs::rename(&aside, staging)
}

/// Copies the staged files under the target prefix, writes the manifest, then deletes what
/// the manifest does not list; see the module docs.
async fn commit_prefix(
    staging: &Location,
    target: &Location,
    options: &StoreOptions,
) -> Result<()> {
    let (store, staging_path) = object(staging, options)?;
    let (_, target_path) = object(&target.as_prefix(), options)?;
    let staged = storage::list(staging, options).await?;
    let existing = storage::list(target, options).await?;
    let relative = |path: &ObjectPath, base: &ObjectPath| {
        path.prefix_match(base).map(|parts| {
            parts
                .map(|p| p.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/")
        })
    };
    let files: Vec<String> = staged
        .iter()
        .filter_map(|meta| relative(&meta.location, &staging_path))
        .collect();
    let old: Vec<String> = existing
        .iter()
        .filter_map(|meta| relative(&meta.location, &target_path))
        .collect();
    let manifest_path = target_path.clone().join(MANIFEST);
    let shown = |file: &str| {
        target
            .as_prefix()
            .join(file)
            .unwrap_or_else(|_| target.clone())
    };
    if files.iter().any(|f| old.contains(f)) {
        // a new file replaces an old one of the same name: the old manifest would vouch for
        // a mix while they are copied
        match store.delete(&manifest_path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(storage::store_error(&shown(MANIFEST), &e)),
        }
    }
    for file in &files {
        let from = ObjectPath::from(format!("{staging_path}/{file}"));
        let to = ObjectPath::from(format!("{target_path}/{file}"));
        store
            .copy(&from, &to)
            .await
            .map_err(|e| storage::store_error(&shown(file), &e))?;
    }
    let manifest = Manifest {
        format: MANIFEST_FORMAT.to_string(),
        files: files.clone(),
    };
    let text = serde_json::to_vec_pretty(&manifest)
        .map_err(|e| DataFusionError::Internal(e.to_string()))?;
    store
        .put(&manifest_path, Bytes::from(text).into())
        .await
        .map_err(|e| storage::store_error(&shown(MANIFEST), &e))?;
    for file in old {
        if file != MANIFEST && !files.contains(&file) {
            let path = ObjectPath::from(format!("{target_path}/{file}"));
            match store.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(storage::store_error(&shown(&file), &e)),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exchange_swaps_two_directories_in_one_step() {
        let dir = tempfile::tempdir().unwrap();
        let (new, old) = (dir.path().join(".out.anon-tmp-1"), dir.path().join("out"));
        std::fs::create_dir(&new).unwrap();
        std::fs::create_dir(&old).unwrap();
        std::fs::write(new.join("new.parquet"), b"new").unwrap();
        std::fs::write(old.join("old.parquet"), b"old").unwrap();
        commit_local(&new, &old, false).unwrap();
        // the target holds the new output, the staging name the old one
        assert_eq!(std::fs::read(old.join("new.parquet")).unwrap(), b"new");
        assert!(!old.join("old.parquet").exists());
        assert_eq!(std::fs::read(new.join("old.parquet")).unwrap(), b"old");
    }
}
