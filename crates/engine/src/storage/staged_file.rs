//! One file or object written in parts and made visible whole ([`StagedFile`]): what
//! [`super::put`] does with one part, and what a writer that streams a large file does with
//! many (`anon hierarchy build`), so that a reader never sees a partial file and a failure
//! leaves nothing at the target.

use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;

use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use object_store::buffered::BufWriter;
use tokio::io::AsyncWrite;

use super::{Location, StoreOptions, object_of, store_error};

/// Parts kept in memory before a bucket upload turns multipart.
const STORE_BUFFER_BYTES: usize = 16 << 20;

/// A file being written: locally a hidden temporary file next to the target, renamed over it
/// by [`StagedFile::commit`]; in a bucket an upload (one PUT, or a multipart upload beyond
/// 16 MiB) completed by [`StagedFile::commit`], which is when S3 and its
/// peers make it visible. Dropped or [aborted](StagedFile::abort) before its commit, it
/// leaves nothing at the target (the local temporary file is removed).
pub struct StagedFile {
    location: Location,
    target: Target,
}

enum Target {
    Local {
        path: PathBuf,
        temporary: PathBuf,
        file: Option<std::fs::File>,
    },
    Store(Box<BufWriter>),
}

impl StagedFile {
    /// Starts writing `location` (registered stores are built from `options`).
    pub fn create(location: &Location, options: &StoreOptions) -> Result<Self> {
        let target = match object_of(location, options)? {
            None => {
                let path = location
                    .as_local()
                    .unwrap_or(std::path::Path::new(""))
                    .to_path_buf();
                let name = location.file_name().unwrap_or_default();
                let temporary =
                    path.with_file_name(format!(".{name}.anon-tmp-{}", std::process::id()));
                let file =
                    std::fs::File::create(&temporary).map_err(|e| write_error(location, &e))?;
                Target::Local {
                    path,
                    temporary,
                    file: Some(file),
                }
            }
            Some((store, path)) => Target::Store(Box::new(BufWriter::with_capacity(
                store,
                path,
                STORE_BUFFER_BYTES,
            ))),
        };
        Ok(Self {
            location: location.clone(),
            target,
        })
    }

    /// Appends `bytes`.
    pub async fn write(&mut self, bytes: Bytes) -> Result<()> {
        match &mut self.target {
            Target::Local { file, .. } => match file {
                Some(file) => file
                    .write_all(&bytes)
                    .map_err(|e| write_error(&self.location, &e)),
                None => Err(DataFusionError::Internal(format!(
                    "{} was already committed",
                    self.location
                ))),
            },
            Target::Store(writer) => writer
                .put(bytes)
                .await
                .map_err(|e| store_error(&self.location, &e)),
        }
    }

    /// Makes the file visible at its target, whole (replacing what was there).
    pub async fn commit(mut self) -> Result<()> {
        match &mut self.target {
            Target::Local {
                path,
                temporary,
                file,
            } => {
                let Some(mut open) = file.take() else {
                    return Ok(());
                };
                let done = open
                    .flush()
                    .and_then(|()| {
                        drop(open);
                        std::fs::rename(&*temporary, &*path)
                    })
                    .map_err(|e| write_error(&self.location, &e));
                if done.is_err() {
                    let _ = std::fs::remove_file(&*temporary);
                }
                done
            }
            Target::Store(writer) => {
                std::future::poll_fn(|cx| Pin::new(&mut **writer).poll_shutdown(cx))
                    .await
                    .map_err(|e| {
                        DataFusionError::Execution(format!(
                            "cannot write {}: {}",
                            self.location,
                            super::redact_credentials(&e.to_string())
                        ))
                    })
            }
        }
    }

    /// Gives up: nothing is left at the target (a multipart upload is aborted).
    pub async fn abort(mut self) -> Result<()> {
        match &mut self.target {
            // the temporary file goes with `self` (Drop)
            Target::Local { .. } => Ok(()),
            Target::Store(writer) => writer
                .abort()
                .await
                .map_err(|e| store_error(&self.location, &e)),
        }
    }
}

impl Drop for StagedFile {
    fn drop(&mut self) {
        if let Target::Local {
            temporary,
            file: Some(_),
            ..
        } = &self.target
        {
            let _ = std::fs::remove_file(temporary);
        }
    }
}

fn write_error(location: &Location, e: &std::io::Error) -> DataFusionError {
    DataFusionError::Execution(format!("cannot write {location}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn visible_whole_on_commit_and_never_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("h.csv");
        std::fs::write(&path, "old\n").unwrap();
        let location = Location::parse(path.to_str().unwrap()).unwrap();
        let options = StoreOptions::default();
        let mut staged = StagedFile::create(&location, &options).unwrap();
        staged.write(Bytes::from("a;*\n")).await.unwrap();
        staged.write(Bytes::from("b;*\n")).await.unwrap();
        // before the commit the old file is untouched (the parts are in a hidden file)
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(names(dir.path()).len(), 2);
        staged.commit().await.unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a;*\nb;*\n");
        assert_eq!(names(dir.path()), vec!["h.csv"]);
    }

    #[tokio::test]
    async fn dropped_or_aborted_it_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let location = Location::parse(dir.path().join("h.csv").to_str().unwrap()).unwrap();
        let options = StoreOptions::default();
        let mut staged = StagedFile::create(&location, &options).unwrap();
        staged.write(Bytes::from("a;*\n")).await.unwrap();
        drop(staged);
        assert!(names(dir.path()).is_empty());
        let mut staged = StagedFile::create(&location, &options).unwrap();
        staged.write(Bytes::from("a;*\n")).await.unwrap();
        staged.abort().await.unwrap();
        assert!(names(dir.path()).is_empty());
    }
}
