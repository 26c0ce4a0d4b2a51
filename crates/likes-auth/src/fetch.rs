//! Fetching the issuer's JWK set over HTTPS, on the hyper + rustls stack the AWS SDK already
//! links (no reqwest, nothing new to compile), with a deadline and a size cap: the fetch runs on
//! a request's path, and the document comes from outside.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use http::{header, StatusCode, Uri};
use http_body_util::{BodyExt, Empty, LengthLimitError, Limited};
use hyper::body::Bytes;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// A boxed future, so [`JwksSource`] stays object safe (the cache holds `dyn JwksSource`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where the key set comes from: [`HttpJwks`] in production; tests put a fake here to count
/// fetches and fail them on purpose.
pub trait JwksSource: Send + Sync {
    /// The JWK set document, as served.
    fn fetch(&self) -> BoxFuture<'_, Result<Vec<u8>, FetchError>>;
}

/// Why the key set could not be had. Logged; never shown to a client (who sees only that the
/// keys are unavailable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    #[error("no answer from the JWKS URL within {0:?}")]
    Timeout(Duration),
    #[error("the JWKS request failed: {0}")]
    Request(String),
    #[error("the JWKS URL answered HTTP {0}")]
    Status(u16),
    #[error("the JWKS document is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the JWKS document is unreadable: {0}")]
    Unreadable(String),
    #[error("no trusted root certificates could be loaded: {0}")]
    Roots(String),
}

/// The whole fetch (connect, TLS, answer, body) must finish within this: a request waits on it.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// Real key sets are a few KB (Cognito's is ~1 KB, Auth0's ~3 KB); anything near this is not one.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;

type HttpsClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// The issuer's key set at a URL.
pub struct HttpJwks {
    url: Uri,
    timeout: Duration,
    max_bytes: usize,
    /// Built on first use: loading the system's root certificates costs milliseconds, which an
    /// environment that never fetches (inline keys) should not pay.
    client: OnceLock<HttpsClient>,
}

impl HttpJwks {
    /// `url` is trusted to be https (or plain http to a loopback address): [`crate::Config`]
    /// refuses anything else.
    pub fn new(url: Uri) -> Self {
        Self {
            url,
            timeout: FETCH_TIMEOUT,
            max_bytes: MAX_JWKS_BYTES,
            client: OnceLock::new(),
        }
    }

    pub fn url(&self) -> &Uri {
        &self.url
    }

    /// Builds the client now (loading the root certificates for an https URL) instead of on
    /// the first fetch; for a function's start-up, and to measure what it costs.
    pub fn prepare(&self) -> Result<(), FetchError> {
        self.client().map(|_| ())
    }

    fn client(&self) -> Result<&HttpsClient, FetchError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = if self.url.scheme() == Some(&http::uri::Scheme::HTTPS) {
            HttpsConnectorBuilder::new()
                .with_provider_and_native_roots(provider)
                .map_err(|e| FetchError::Roots(e.to_string()))?
        } else {
            // Plain http (loopback only): no certificate is ever checked, so none is loaded.
            let tls = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| FetchError::Roots(e.to_string()))?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            HttpsConnectorBuilder::new().with_tls_config(tls)
        };
        let connector = builder.https_or_http().enable_http1().build();
        // No idle connections: fetches are minutes apart and the environment may be frozen in
        // between, so a pooled connection would most likely be dead when next used.
        let client = Client::builder(TokioExecutor::new())
            .pool_max_idle_per_host(0)
            .build(connector);
        Ok(self.client.get_or_init(|| client))
    }

    async fn get(&self) -> Result<Vec<u8>, FetchError> {
        let request = http::Request::get(self.url.clone())
            .header(header::ACCEPT, "application/json")
            .header(header::USER_AGENT, "likes-auth")
            .body(Empty::new())
            .map_err(|e| FetchError::Request(e.to_string()))?;
        let response = self
            .client()?
            .request(request)
            .await
            .map_err(|e| FetchError::Request(e.to_string()))?;
        if response.status() != StatusCode::OK {
            return Err(FetchError::Status(response.status().as_u16()));
        }
        let body = Limited::new(response.into_body(), self.max_bytes)
            .collect()
            .await
            .map_err(|e| {
                if e.downcast_ref::<LengthLimitError>().is_some() {
                    FetchError::TooLarge(self.max_bytes)
                } else {
                    FetchError::Request(e.to_string())
                }
            })?;
        Ok(body.to_bytes().to_vec())
    }
}

impl JwksSource for HttpJwks {
    fn fetch(&self) -> BoxFuture<'_, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            tokio::time::timeout(self.timeout, self.get())
                .await
                .map_err(|_| FetchError::Timeout(self.timeout))?
        })
    }
}
