//! The manifest of a directory output (`_SUCCESS`, written last by publishing, see
//! `publish::staged`): the files it vouches for. Here, below both the tables that read outputs
//! and the publishing that writes them.

use datafusion::error::Result;
use serde::{Deserialize, Serialize};

use super::{Location, StoreOptions};

/// The manifest a directory output in a bucket gets last.
pub const MANIFEST: &str = "_SUCCESS";

/// What `_SUCCESS` holds: the files of the output, relative to its prefix.
#[derive(Debug, Serialize, Deserialize)]
pub struct Manifest {
    /// `datafusion-anonymity/1`.
    pub format: String,
    /// The output's files, relative to the output's prefix.
    pub files: Vec<String>,
}

/// The format `_SUCCESS` names, so a manifest of another tool is not taken for ours.
pub const MANIFEST_FORMAT: &str = "datafusion-anonymity/1";

/// The files a directory output's manifest lists (relative to `directory`), or `None` when
/// it has no manifest of this crate's.
pub async fn manifest_files(
    directory: &Location,
    options: &StoreOptions,
) -> Result<Option<Vec<String>>> {
    let manifest = directory.as_prefix().join(MANIFEST)?;
    if !super::exists(&manifest, options).await? {
        return Ok(None);
    }
    let bytes = super::read_bytes(&manifest, options).await?;
    match serde_json::from_slice::<Manifest>(&bytes) {
        Ok(manifest) if manifest.format == MANIFEST_FORMAT => Ok(Some(manifest.files)),
        _ => Ok(None),
    }
}

/// Whether `location` names one Parquet file (by its extension) rather than a directory.
pub fn is_parquet_file(location: &Location) -> bool {
    location.extension().as_deref() == Some("parquet")
}
