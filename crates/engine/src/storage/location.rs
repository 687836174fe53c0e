//! Where a file or a directory is: a local path or an object-store URL.

use std::fmt;
use std::path::{Path, PathBuf};

use datafusion::error::{DataFusionError, Result};
use url::Url;

/// The URL schemes read and written through `object_store`.
const OBJECT_STORE_SCHEMES: &[&str] = &[
    "s3", "s3a", "gs", "az", "adl", "azure", "abfs", "abfss", "http", "https",
];

/// A local path or an object-store URL (`s3://bucket/key`, `gs://…`, `az://…`, `abfss://…`,
/// `http(s)://…`). `file://` URLs are local paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A path on this machine.
    Local(PathBuf),
    /// An object (or, ending in `/`, a prefix) in an object store.
    Url(Url),
}

impl From<&Path> for Location {
    fn from(path: &Path) -> Self {
        Self::Local(path.to_path_buf())
    }
}

impl Location {
    /// Reads `text` as a URL when it has a scheme (`scheme://`), else as a local path.
    pub fn parse(text: &str) -> Result<Self> {
        let Some((scheme, _)) = text.split_once("://") else {
            return Ok(Self::Local(PathBuf::from(text)));
        };
        if scheme.is_empty()
            || !scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return Ok(Self::Local(PathBuf::from(text)));
        }
        let url = Url::parse(text).map_err(|e| {
            DataFusionError::Plan(format!("{}: not a valid URL: {e}", without_secrets(text)))
        })?;
        match url.scheme() {
            "file" => url.to_file_path().map(Self::Local).map_err(|()| {
                DataFusionError::Plan(format!("{}: not a local file URL", Self::Url(url.clone())))
            }),
            scheme if OBJECT_STORE_SCHEMES.contains(&scheme) => {
                if url.host_str().is_none_or(str::is_empty) {
                    return Err(DataFusionError::Plan(format!(
                        "{}: the URL names no bucket or host",
                        Self::Url(url)
                    )));
                }
                Ok(Self::Url(url))
            }
            other => Err(DataFusionError::Plan(format!(
                "{}: unsupported URL scheme '{other}' (use s3://, gs://, az://, abfss://, \
                 http(s):// or a local path)",
                Self::Url(url.clone())
            ))),
        }
    }

    /// The local path, if this is one.
    pub fn as_local(&self) -> Option<&Path> {
        match self {
            Self::Local(path) => Some(path),
            Self::Url(_) => None,
        }
    }

    /// Whether this is an object-store URL.
    pub fn is_url(&self) -> bool {
        matches!(self, Self::Url(_))
    }

    /// `relative` resolved against this location as a directory; an absolute path or a URL
    /// stays as it is.
    pub fn join(&self, relative: &str) -> Result<Self> {
        let parsed = Self::parse(relative)?;
        match (&parsed, self) {
            (Self::Url(_), _) => Ok(parsed),
            (Self::Local(path), _) if path.is_absolute() => Ok(parsed),
            (Self::Local(path), Self::Local(base)) => Ok(Self::Local(base.join(path))),
            (Self::Local(_), Self::Url(base)) => {
                let mut directory = base.clone();
                if !directory.path().ends_with('/') {
                    directory.set_path(&format!("{}/", directory.path()));
                }
                directory.join(relative).map(Self::Url).map_err(|e| {
                    DataFusionError::Plan(format!("{relative} relative to {self}: {e}"))
                })
            }
        }
    }

    /// The directory this location is in (a URL's parent prefix, ending in `/`).
    pub fn parent(&self) -> Self {
        match self {
            Self::Local(path) => {
                Self::Local(path.parent().map(Path::to_path_buf).unwrap_or_default())
            }
            Self::Url(url) => {
                let trimmed = url.path().trim_end_matches('/');
                let parent = &trimmed[..trimmed.rfind('/').map_or(0, |i| i + 1)];
                let mut parent_url = url.clone();
                parent_url.set_path(if parent.is_empty() { "/" } else { parent });
                parent_url.set_query(None);
                Self::Url(parent_url)
            }
        }
    }

    /// The last component of the path (the file or directory name), if any.
    pub fn file_name(&self) -> Option<String> {
        match self {
            Self::Local(path) => path.file_name().map(|n| n.to_string_lossy().into_owned()),
            Self::Url(url) => url
                .path()
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .filter(|n| !n.is_empty())
                .map(percent_decode),
        }
    }

    /// The sibling of this location named `name` (in the same directory).
    pub fn sibling(&self, name: &str) -> Self {
        match self {
            Self::Local(path) => Self::Local(path.with_file_name(name)),
            Self::Url(url) => {
                let mut sibling = url.clone();
                sibling.set_query(None);
                if let Ok(mut segments) = sibling.path_segments_mut() {
                    // a trailing `/` leaves an empty last segment: drop it, then the name
                    segments.pop_if_empty().pop().push(name);
                }
                Self::Url(sibling)
            }
        }
    }

    /// The extension of the last component, lower-cased (`parquet`, `csv`).
    pub fn extension(&self) -> Option<String> {
        let name = self.file_name()?;
        let (stem, extension) = name.rsplit_once('.')?;
        (!stem.is_empty()).then(|| extension.to_ascii_lowercase())
    }

    /// The text DataFusion reads and writes this location by: the path, or the URL with
    /// nothing removed.
    pub fn datafusion_path(&self) -> String {
        match self {
            Self::Local(path) => path.display().to_string(),
            Self::Url(url) => url.to_string(),
        }
    }

    /// A URL location as a prefix (ending in `/`), as DataFusion lists a directory.
    pub fn as_prefix(&self) -> Self {
        match self {
            Self::Url(url) if !url.path().ends_with('/') => {
                let mut prefix = url.clone();
                prefix.set_path(&format!("{}/", url.path()));
                Self::Url(prefix)
            }
            other => other.clone(),
        }
    }
}

fn percent_decode(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// Shows a local path as it is, and a URL without user name, password, query or fragment
/// (where a pre-signed URL carries its signature): it is the form every message uses.
impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(path) => write!(f, "{}", path.display()),
            Self::Url(url) => {
                let mut shown = url.clone();
                let _ = shown.set_username("");
                let _ = shown.set_password(None);
                shown.set_query(None);
                shown.set_fragment(None);
                write!(f, "{shown}")
            }
        }
    }
}

/// `text` (a URL that did not parse) cut before any `@`, `?` or `#`, where credentials and
/// signatures would be.
fn without_secrets(text: &str) -> String {
    match text.split_once("://") {
        Some((scheme, rest)) => {
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            let rest = rest.split(['?', '#']).next().unwrap_or(rest);
            format!("{scheme}://{rest}")
        }
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_urls() {
        assert_eq!(
            Location::parse("data/x.parquet").unwrap(),
            Location::Local(PathBuf::from("data/x.parquet"))
        );
        assert_eq!(
            Location::parse("file:///tmp/x.parquet").unwrap(),
            Location::Local(PathBuf::from("/tmp/x.parquet"))
        );
        let url = Location::parse("s3://bucket/a/b.parquet").unwrap();
        assert!(url.is_url());
        assert_eq!(url.file_name().as_deref(), Some("b.parquet"));
        assert_eq!(url.extension().as_deref(), Some("parquet"));
        assert_eq!(url.parent().to_string(), "s3://bucket/a/");
        assert_eq!(url.sibling(".b.tmp").to_string(), "s3://bucket/a/.b.tmp");
        assert_eq!(
            url.parent().join("h/age.csv").unwrap().to_string(),
            "s3://bucket/a/h/age.csv"
        );
        assert_eq!(
            Location::parse("s3://bucket/out")
                .unwrap()
                .parent()
                .to_string(),
            "s3://bucket/"
        );
        assert!(
            Location::parse("ftp://host/x")
                .unwrap_err()
                .to_string()
                .contains("'ftp'")
        );
        assert!(Location::parse("s3:///x").is_err());
    }

    #[test]
    fn credentials_are_never_shown() {
        let url =
            Location::parse("https://user:hunter2@host/x.parquet?X-Amz-Signature=abc").unwrap();
        let shown = url.to_string();
        assert_eq!(shown, "https://host/x.parquet");
        assert!(!without_secrets("https://u:hunter2@host/%%?sig=1").contains("hunter2"));
    }
}
