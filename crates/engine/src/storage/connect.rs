//! The HTTP client of every object store, failing fast on an endpoint that cannot be
//! connected to.
//!
//! `object_store` retries a failed connection like any transient error: 10 times with
//! exponential backoff, 5.3 s against a closed port, ending in the client's own text
//! ("error sending request"). A connection that is refused or whose host does not resolve
//! rarely comes back within seconds, so here [`CONNECT_ATTEMPTS`] failed connections in a row
//! end the retries (every later request still tries once first, so a server that comes back
//! is used again), with an error naming the endpoint (scheme, host and port, never a
//! credential or a path) that [`super::describe_store_error`] turns into one plain line.
//! Every other error keeps `object_store`'s retries.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpService, ReqwestConnector,
};

/// Connections that fail in a row before a store gives up on its endpoint.
pub const CONNECT_ATTEMPTS: usize = 3;

/// Builds each store's HTTP client as [`ReqwestConnector`] does, wrapped in [`FailFast`].
#[derive(Debug, Default)]
pub(super) struct FailFastConnector;

impl HttpConnector for FailFastConnector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(FailFast {
            inner,
            failed_connections: AtomicUsize::new(0),
        }))
    }
}

/// An HTTP client that counts the connections failed in a row (any response resets the
/// count) and, from the [`CONNECT_ATTEMPTS`]th on, turns a failed connection into an
/// [`Unreachable`] error, which `object_store` does not retry.
#[derive(Debug)]
struct FailFast {
    inner: HttpClient,
    failed_connections: AtomicUsize,
}

#[async_trait]
impl HttpService for FailFast {
    async fn call(&self, request: HttpRequest) -> Result<HttpResponse, HttpError> {
        let uri = request.uri();
        let endpoint = format!(
            "{}://{}{}",
            uri.scheme_str().unwrap_or("http"),
            uri.host().unwrap_or_default(),
            uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default()
        );
        match self.inner.execute(request).await {
            Ok(response) => {
                self.failed_connections.store(0, Ordering::Relaxed);
                Ok(response)
            }
            Err(error) if error.kind() == HttpErrorKind::Connect => {
                let failed = self.failed_connections.fetch_add(1, Ordering::Relaxed) + 1;
                if failed < CONNECT_ATTEMPTS {
                    return Err(error);
                }
                Err(HttpError::new(
                    HttpErrorKind::Unknown,
                    Unreachable {
                        endpoint,
                        reason: connect_reason(&error),
                    },
                ))
            }
            Err(error) => Err(error),
        }
    }
}

/// An endpoint that could not be connected to [`CONNECT_ATTEMPTS`] times in a row.
#[derive(Debug)]
pub struct Unreachable {
    /// `scheme://host[:port]`: no credential, no path.
    pub endpoint: String,
    /// `connection refused`, or what else the connection failed with (no data).
    pub reason: String,
}

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the object store endpoint {} is unreachable ({}, {CONNECT_ATTEMPTS} attempts): \
             check the endpoint (AWS_ENDPOINT_URL, or [storage] endpoint in the policy) and \
             that the server is running",
            self.endpoint, self.reason
        )
    }
}

impl std::error::Error for Unreachable {}

/// Why a connection failed, from the operating system's error when there is one:
/// `connection refused`, `host not found`, else `cannot connect`.
fn connect_reason(error: &HttpError) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
                std::io::ErrorKind::TimedOut => "connection timed out".to_string(),
                _ => "cannot connect".to_string(),
            };
        }
        if current
            .to_string()
            .to_ascii_lowercase()
            .contains("dns error")
        {
            return "host not found".to_string();
        }
        source = current.source();
    }
    "cannot connect".to_string()
}
