//! The object stores behind URLs: built from the standard environment variables (plus a
//! policy's non-secret `[storage]` keys), cached per bucket, and found by DataFusion through
//! [`LakeStoreRegistry`] for any URL a query names.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::{DefaultObjectStoreRegistry, ObjectStoreRegistry};
use object_store::ObjectStore;
#[cfg(feature = "s3")]
use object_store::aws::AmazonS3Builder;
#[cfg(feature = "azure")]
use object_store::azure::MicrosoftAzureBuilder;
#[cfg(feature = "gcs")]
use object_store::gcp::GoogleCloudStorageBuilder;
#[cfg(feature = "http")]
use object_store::http::HttpBuilder;
use serde::Deserialize;
use url::Url;

use super::Location;
#[cfg(feature = "remote")]
use super::connect::FailFastConnector;

/// A policy's `[storage]` table: settings of the object store that are not secret. Credentials
/// come only from the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `GOOGLE_SERVICE_ACCOUNT`, `AZURE_STORAGE_ACCOUNT_KEY`, …), so a policy can be shared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoreOptions {
    /// The endpoint of an S3-compatible server (`http://127.0.0.1:9000`); overrides
    /// `AWS_ENDPOINT_URL`.
    pub endpoint: Option<String>,
    /// The region; overrides `AWS_REGION`.
    pub region: Option<String>,
    /// Allow `http://` endpoints; overrides `AWS_ALLOW_HTTP`.
    pub allow_http: Option<bool>,
}

/// Stores built so far, by bucket (scheme and host) and options: one client, and one pool of
/// connections, per bucket in a process.
type StoreCache = Mutex<HashMap<(String, StoreOptions), Arc<dyn ObjectStore>>>;

fn cache() -> &'static StoreCache {
    static CACHE: OnceLock<StoreCache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// The bucket part of `url` (`s3://bucket`), which keys a store.
pub(crate) fn bucket_key(url: &Url) -> String {
    format!(
        "{}://{}",
        url.scheme(),
        &url[url::Position::BeforeHost..url::Position::AfterPort]
    )
}

/// The object store serving `url`, configured from the environment and `options`.
pub fn store_for(url: &Url, options: &StoreOptions) -> Result<Arc<dyn ObjectStore>> {
    let key = (bucket_key(url), options.clone());
    let mut stores = cache()
        .lock()
        .map_err(|_| DataFusionError::Internal("object store cache poisoned".into()))?;
    if let Some(store) = stores.get(&key) {
        return Ok(Arc::clone(store));
    }
    let store = build_store_uncached(url, options)?;
    stores.insert(key, Arc::clone(&store));
    Ok(store)
}

/// A new store for `url`, outside the cache: for a runtime of its own, whose connections must
/// not be pooled with the main runtime's.
// a build without remote stores only names the scheme it lacks
#[cfg_attr(not(feature = "remote"), allow(unreachable_code, unused_variables))]
pub(crate) fn build_store_uncached(
    url: &Url,
    options: &StoreOptions,
) -> Result<Arc<dyn ObjectStore>> {
    let shown = Location::Url(url.clone());
    let failed = |e: object_store::Error| {
        DataFusionError::Plan(format!(
            "{shown}: cannot configure the object store: {}",
            super::describe_store_error(&e)
        ))
    };
    let bucket = bucket_key(url);
    Ok(match url.scheme() {
        #[cfg(feature = "s3")]
        "s3" | "s3a" => {
            let mut builder = AmazonS3Builder::from_env()
                .with_url(bucket)
                .with_http_connector(FailFastConnector);
            if let Some(endpoint) = &options.endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            if let Some(region) = &options.region {
                builder = builder.with_region(region);
            }
            if let Some(allow_http) = options.allow_http {
                builder = builder.with_allow_http(allow_http);
            }
            Arc::new(builder.build().map_err(failed)?)
        }
        #[cfg(feature = "gcs")]
        "gs" => Arc::new(
            GoogleCloudStorageBuilder::from_env()
                .with_url(bucket)
                .with_http_connector(FailFastConnector)
                .build()
                .map_err(failed)?,
        ),
        #[cfg(feature = "azure")]
        "az" | "adl" | "azure" | "abfs" | "abfss" => Arc::new(
            MicrosoftAzureBuilder::from_env()
                .with_url(url.as_str())
                .with_http_connector(FailFastConnector)
                .build()
                .map_err(failed)?,
        ),
        #[cfg(feature = "http")]
        "http" | "https" => Arc::new(
            HttpBuilder::new()
                .with_url(bucket)
                .with_http_connector(FailFastConnector)
                .build()
                .map_err(failed)?,
        ),
        other => {
            let feature = match other {
                "s3" | "s3a" => " (this build lacks the engine's `s3` feature)",
                "gs" => " (this build lacks the engine's `gcs` feature)",
                "az" | "adl" | "azure" | "abfs" | "abfss" => {
                    " (this build lacks the engine's `azure` feature)"
                }
                "http" | "https" => " (this build lacks the engine's `http` feature)",
                _ => "",
            };
            return Err(DataFusionError::Plan(format!(
                "{shown}: no object store for URL scheme '{other}'{feature}"
            )));
        }
    })
}

/// DataFusion's registry of object stores, which also builds, on first use, the store of any
/// object-store URL a query names (from the environment), so `s3://…` works wherever a path
/// does. Stores registered explicitly (a policy's, with its `[storage]` keys) take precedence.
#[derive(Debug, Default)]
pub struct LakeStoreRegistry {
    registered: DefaultObjectStoreRegistry,
}

impl ObjectStoreRegistry for LakeStoreRegistry {
    fn register_store(
        &self,
        url: &Url,
        store: Arc<dyn ObjectStore>,
    ) -> Option<Arc<dyn ObjectStore>> {
        self.registered.register_store(url, store)
    }

    fn deregister_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        self.registered.deregister_store(url)
    }

    fn get_store(&self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        match self.registered.get_store(url) {
            Ok(store) => Ok(store),
            Err(not_registered) => match Location::parse(url.as_str()) {
                Ok(Location::Url(_)) => {
                    let store = store_for(url, &StoreOptions::default())?;
                    self.registered.register_store(url, Arc::clone(&store));
                    Ok(store)
                }
                _ => Err(not_registered),
            },
        }
    }
}

/// Registers the store of `location` (if a URL) on `ctx`, configured with `options`.
pub fn register_store(
    ctx: &datafusion::prelude::SessionContext,
    location: &Location,
    options: &StoreOptions,
) -> Result<()> {
    bind_store(&ctx.runtime_env(), location, options)
}

/// Registers the store of `location` (if a URL) on `runtime`, configured with `options`:
/// every query of a session over `runtime` that names the location's bucket (a write, its
/// read-back) then reaches the server `options` name, not the one the environment would.
/// Without it, DataFusion builds an unregistered bucket's store from the environment alone
/// ([`LakeStoreRegistry`]), and a policy's `[storage] endpoint` would be ignored.
pub fn bind_store(
    runtime: &datafusion::execution::runtime_env::RuntimeEnv,
    location: &Location,
    options: &StoreOptions,
) -> Result<()> {
    if let Location::Url(url) = location {
        runtime.register_object_store(url, store_for(url, options)?);
    }
    Ok(())
}
