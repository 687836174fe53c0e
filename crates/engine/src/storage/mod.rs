//! Object storage: every path a command or a policy takes may be a URL (`s3://`, `gs://`,
//! `az://`/`abfss://`, `http(s)://` for reading, `file://`), read and written with
//! [`object_store`], the crate DataFusion itself uses.
//!
//! - **Configuration** comes from the standard environment variables of each cloud
//!   (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`,
//!   `AWS_ALLOW_HTTP`, `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_NAME`, …), plus a
//!   policy's optional `[storage]` keys, which are never secret ([`StoreOptions`]).
//! - **No secret is ever shown**: a URL is displayed without user, password or query
//!   ([`Location`]'s `Display`), and every error passes through [`describe_store_error`] and
//!   [`redact_credentials`].
//! - **Publishing to a bucket** is staged and verified like a local publish, then committed
//!   as described in [`crate::publish::staged`]: readers of a directory output require its
//!   `_SUCCESS` manifest and read the files it lists.

#[cfg(feature = "remote")]
mod connect;
mod location;
pub mod manifest;
mod staged_file;
mod stores;

use std::sync::Arc;

use crate::failure::{FailureKind, io_error};
use bytes::Bytes;
use datafusion::error::{DataFusionError, Result};
use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

#[cfg(feature = "remote")]
pub use connect::CONNECT_ATTEMPTS;
pub use location::Location;
pub use staged_file::StagedFile;
pub use stores::{LakeStoreRegistry, StoreOptions, bind_store, register_store, store_for};

/// Environment variables whose values are credentials: never shown in a message.
const CREDENTIAL_VARIABLES: &[&str] = &[
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SESSION_TOKEN",
    "AWS_TOKEN",
    "GOOGLE_SERVICE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_ACCESS_KEY",
    "AZURE_STORAGE_SAS_KEY",
    "AZURE_STORAGE_TOKEN",
    "AZURE_CLIENT_SECRET",
];

/// `text` with the value of every credential variable set in the environment replaced by
/// `***`: the last line of defence, applied to every error the CLI prints.
pub fn redact_credentials(text: &str) -> String {
    let mut redacted = text.to_string();
    for variable in CREDENTIAL_VARIABLES {
        if let Ok(value) = std::env::var(variable)
            && value.len() >= 4
        {
            redacted = redacted.replace(&value, "***");
        }
    }
    redacted
}

/// An object-store error in a few plain words: what went wrong, not the request, the
/// response body or a credential.
pub fn describe_store_error(error: &object_store::Error) -> String {
    use object_store::Error;
    #[cfg(feature = "remote")]
    if let Some(unreachable) = find_source::<connect::Unreachable>(error) {
        return redact_credentials(&unreachable.to_string());
    }
    let text = match error {
        Error::NotFound { .. } => "not found".to_string(),
        Error::PermissionDenied { .. } => {
            "access denied (check the credentials in the environment)".to_string()
        }
        Error::Unauthenticated { .. } => {
            "the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or \
             your cloud's equivalents)"
                .to_string()
        }
        Error::AlreadyExists { .. } => "already exists".to_string(),
        other => {
            let full = other.to_string();
            let lower = full.to_ascii_lowercase();
            if lower.contains("nosuchbucket") || lower.contains("bucket does not exist") {
                "the bucket does not exist".to_string()
            } else if lower.contains("signaturedoesnotmatch")
                || lower.contains("invalidaccesskeyid")
                || lower.contains("403")
            {
                "the credentials were refused (check AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY or \
                 your cloud's equivalents)"
                    .to_string()
            } else if lower.contains("connect") || lower.contains("dns") || is_connect_error(other)
            {
                "cannot reach the object store (check the endpoint)".to_string()
            } else if let Some((_, status)) = full.split_once("status code: ") {
                // the status, without the request and the response body object_store adds
                let status = status.split(':').next().unwrap_or(status).trim();
                format!("the object store answered {status}")
            } else {
                full.lines().next().unwrap_or_default().to_string()
            }
        }
    };
    redact_credentials(&text)
}

/// Whether the HTTP client of a remote store failed to connect.
#[cfg(feature = "remote")]
fn is_connect_error(error: &(dyn std::error::Error + 'static)) -> bool {
    find_source::<object_store::client::HttpError>(error)
        .is_some_and(|e| e.kind() == object_store::client::HttpErrorKind::Connect)
}

/// Without a remote store there is no HTTP client to fail.
#[cfg(not(feature = "remote"))]
fn is_connect_error(_: &(dyn std::error::Error + 'static)) -> bool {
    false
}

#[cfg(feature = "remote")]
/// The first error of type `T` in `error`'s chain of sources (itself included).
fn find_source<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut current = Some(error);
    while let Some(e) = current {
        if let Some(found) = e.downcast_ref::<T>() {
            return Some(found);
        }
        current = e.source();
    }
    None
}

/// An object-store failure on `location`, as a DataFusion error naming the URL.
pub fn store_error(location: &Location, error: &object_store::Error) -> DataFusionError {
    let message = format!("{location}: {}", describe_store_error(error));
    match error {
        object_store::Error::NotFound { .. } => FailureKind::NotFound.error(message),
        object_store::Error::AlreadyExists { .. } => FailureKind::AlreadyExists.error(message),
        _ => DataFusionError::Execution(message),
    }
}

/// The store and the object path of a URL location.
pub(crate) fn object_of(
    location: &Location,
    options: &StoreOptions,
) -> Result<Option<(Arc<dyn ObjectStore>, ObjectPath)>> {
    let Location::Url(url) = location else {
        return Ok(None);
    };
    Ok(Some((
        store_for(url, options)?,
        object_path(location, url)?,
    )))
}

/// The whole content of the file or object at `location`.
pub async fn read_bytes(location: &Location, options: &StoreOptions) -> Result<Bytes> {
    match object_of(location, options)? {
        None => {
            let path = location.as_local().unwrap_or(std::path::Path::new(""));
            std::fs::read(path)
                .map(Bytes::from)
                .map_err(|e| DataFusionError::Plan(format!("cannot read {location}: {e}")))
        }
        Some((store, path)) => {
            let result = store
                .get(&path)
                .await
                .map_err(|e| store_error(location, &e))?;
            result.bytes().await.map_err(|e| store_error(location, &e))
        }
    }
}

/// The text of the file or object at `location` (UTF-8), from synchronous code: a URL is
/// read on a thread of its own with a runtime of its own (and a store client of its own, whose
/// connections die with that runtime).
pub fn read_text_blocking(location: &Location, options: &StoreOptions) -> Result<String> {
    let bytes = match location {
        Location::Local(path) => {
            std::fs::read(path).map_err(|e| io_error(format!("cannot read {location}: {e}"), &e))?
        }
        Location::Url(url) => {
            let store = stores::build_store_uncached(url, options)?;
            let path = object_path(location, url)?;
            on_own_runtime(location, async {
                let result = store
                    .get(&path)
                    .await
                    .map_err(|e| store_error(location, &e))?;
                result.bytes().await.map_err(|e| store_error(location, &e))
            })?
            .to_vec()
        }
    };
    String::from_utf8(bytes)
        .map_err(|_| DataFusionError::Plan(format!("{location}: not UTF-8 text")))
}

/// [`remove`] from synchronous code (a `Drop`), on a runtime of its own like
/// [`read_text_blocking`].
pub(crate) fn remove_blocking(location: &Location, options: &StoreOptions) -> Result<()> {
    match location {
        Location::Local(path) => remove_path(path)
            .map_err(|e| DataFusionError::Execution(format!("cannot remove {location}: {e}"))),
        Location::Url(url) => {
            let store = stores::build_store_uncached(url, options)?;
            let path = object_path(location, url)?;
            on_own_runtime(location, remove_objects(location, store.as_ref(), &path))
        }
    }
}

/// Runs `work` to completion on a thread with a current-thread runtime of its own: callable
/// from synchronous code whether or not a runtime is running (blocking inside one would
/// stall it). Stores used here must be built for it ([`stores::build_store_uncached`]): their
/// connections die with this runtime.
fn on_own_runtime<T: Send>(
    location: &Location,
    work: impl std::future::Future<Output = Result<T>> + Send,
) -> Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| DataFusionError::Execution(e.to_string()))?
                    .block_on(work)
            })
            .join()
            .map_err(|_| DataFusionError::Internal(format!("work on {location} panicked")))?
    })
}

/// Whether anything is at `location`: a file or directory, an object, or objects under the
/// prefix.
pub async fn exists(location: &Location, options: &StoreOptions) -> Result<bool> {
    match object_of(location, options)? {
        None => Ok(location.as_local().is_some_and(std::path::Path::exists)),
        Some((store, path)) => {
            match store.head(&path).await {
                Ok(_) => return Ok(true),
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_error(location, &e)),
            }
            let first = store
                .list(Some(&path))
                .try_next()
                .await
                .map_err(|e| store_error(location, &e))?;
            Ok(first.is_some())
        }
    }
}

/// Writes `bytes` to `location` as one whole ([`StagedFile`]): locally through a hidden
/// temporary file renamed over the target, in a bucket with one PUT (which S3 makes visible
/// only when complete).
pub async fn put(location: &Location, options: &StoreOptions, bytes: Bytes) -> Result<()> {
    let mut staged = StagedFile::create(location, options)?;
    staged.write(bytes).await?;
    staged.commit().await
}

/// The names directly in the directory `parent` (files, subdirectories, or objects and
/// common prefixes in a bucket).
pub(crate) async fn names_in(parent: &Location, options: &StoreOptions) -> Result<Vec<String>> {
    match parent {
        Location::Local(path) => {
            let directory = if path.as_os_str().is_empty() {
                std::path::Path::new(".")
            } else {
                path.as_path()
            };
            let Ok(entries) = std::fs::read_dir(directory) else {
                return Ok(Vec::new());
            };
            Ok(entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect())
        }
        Location::Url(_) => {
            let (store, prefix) = object_of(parent, options)?.ok_or_else(|| {
                DataFusionError::Internal(format!("{parent} is not an object-store URL"))
            })?;
            let prefix = (!prefix.as_ref().is_empty()).then_some(prefix);
            let listing = store
                .list_with_delimiter(prefix.as_ref())
                .await
                .map_err(|e| store_error(parent, &e))?;
            Ok(listing
                .common_prefixes
                .iter()
                .chain(listing.objects.iter().map(|o| &o.location))
                .filter_map(|p| p.filename().map(str::to_string))
                .collect())
        }
    }
}

/// The objects under the prefix `location` (a URL), with their sizes.
pub(crate) async fn list(
    location: &Location,
    options: &StoreOptions,
) -> Result<Vec<object_store::ObjectMeta>> {
    list_showing(location, location, options).await
}

/// [`list`], its errors naming `shown` (what the user gave: a table rather than the log
/// under it that is listed).
pub(crate) async fn list_showing(
    location: &Location,
    shown: &Location,
    options: &StoreOptions,
) -> Result<Vec<object_store::ObjectMeta>> {
    match object_of(&location.as_prefix(), options)? {
        None => Ok(Vec::new()),
        Some((store, path)) => store
            .list(Some(&path))
            .try_collect()
            .await
            .map_err(|e| store_error(shown, &e)),
    }
}

/// Removes `location`: a local file or directory, or every object at and under a URL.
pub async fn remove(location: &Location, options: &StoreOptions) -> Result<()> {
    match object_of(location, options)? {
        None => remove_local(location),
        Some((store, path)) => remove_objects(location, store.as_ref(), &path).await,
    }
}

fn remove_local(location: &Location) -> Result<()> {
    let path = location.as_local().unwrap_or(std::path::Path::new(""));
    remove_path(path)
        .map_err(|e| DataFusionError::Execution(format!("cannot remove {location}: {e}")))
}

/// Removes a local file or directory; nothing there is fine.
pub(crate) fn remove_path(path: &std::path::Path) -> std::io::Result<()> {
    if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else if path.exists() {
        std::fs::remove_file(path)
    } else {
        Ok(())
    }
}

async fn remove_objects(
    location: &Location,
    store: &dyn ObjectStore,
    path: &ObjectPath,
) -> Result<()> {
    let not_found_is_fine = |result: object_store::Result<()>| match result {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(store_error(location, &e)),
    };
    // list(Some("a/b")) lists the objects under "a/b/"
    let under: Vec<ObjectPath> = store
        .list(Some(path))
        .map_ok(|meta| meta.location)
        .try_collect()
        .await
        .map_err(|e| store_error(location, &e))?;
    if under.is_empty() {
        // an object at the path itself; a prefix is not one (some servers keep prefixes as
        // directories and refuse to delete them as objects)
        match store.head(path).await {
            Ok(_) => not_found_is_fine(store.delete(path).await)?,
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(store_error(location, &e)),
        }
    }
    for object in under {
        not_found_is_fine(store.delete(&object).await)?;
    }
    Ok(())
}

fn object_path(location: &Location, url: &url::Url) -> Result<ObjectPath> {
    ObjectPath::from_url_path(url.path())
        .map_err(|e| DataFusionError::Plan(format!("{location}: not a valid object path: {e}")))
}
