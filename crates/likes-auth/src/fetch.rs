//! Fetching the issuer's documents (its JWK set, its OpenID discovery document) over HTTPS, on
//! the hyper + rustls stack the AWS SDK already links (no reqwest, nothing new to compile), with
//! a deadline and a size cap: a fetch runs on a request's path, and the document comes from
//! outside.

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
    #[error("no answer from the issuer's endpoint within {0:?}")]
    Timeout(Duration),
    #[error("the request to the issuer's endpoint failed: {0}")]
    Request(String),
    #[error("the issuer's endpoint answered HTTP {0}")]
    Status(u16),
    #[error("the issuer's document is larger than {0} bytes")]
    TooLarge(usize),
    #[error("the JWKS document is unreadable: {0}")]
    Unreadable(String),
    /// The OpenID discovery document cannot be used: not JSON, another `issuer` than the one
    /// configured, or no usable `jwks_uri`.
    #[error("the issuer's discovery document {0}")]
    Discovery(String),
    #[error("no trusted root certificates could be loaded: {0}")]
    Roots(String),
}

/// The whole fetch (connect, TLS, answer, body) must finish within this: a request waits on it.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(2);
/// Real key sets are a few KB (Cognito's is ~1 KB, Auth0's ~3 KB) and discovery documents a few
/// more (Keycloak's ~6 KB); anything near this is not one.
pub const MAX_JWKS_BYTES: usize = 64 * 1024;

type HttpsClient = Client<HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// GETs of the issuer's documents: one client, its deadline and size cap.
pub struct HttpGet {
    /// Whether roots are needed: an https URL is ever fetched (plain http is loopback only).
    https: bool,
    timeout: Duration,
    max_bytes: usize,
    /// Built on first use: loading the system's root certificates costs milliseconds, which an
    /// environment that never fetches (inline keys) should not pay.
    client: OnceLock<HttpsClient>,
}

/// The issuer's key set at a URL.
pub struct HttpJwks {
    url: Uri,
    http: HttpGet,
}

impl HttpJwks {
    /// `url` is trusted to be https (or plain http to a loopback address): [`crate::Config`]
    /// refuses anything else.
    pub fn new(url: Uri) -> Self {
        let http = HttpGet::new(url.scheme() == Some(&http::uri::Scheme::HTTPS));
        Self { url, http }
    }

    pub fn url(&self) -> &Uri {
        &self.url
    }

    /// Builds the client now (loading the root certificates for an https URL) instead of on
    /// the first fetch; for a function's start-up, and to measure what it costs.
    pub fn prepare(&self) -> Result<(), FetchError> {
        self.http.client().map(|_| ())
    }
}

impl HttpGet {
    /// `https`: whether the client will fetch https URLs (and so needs the root certificates).
    pub fn new(https: bool) -> Self {
        Self {
            https,
            timeout: FETCH_TIMEOUT,
            max_bytes: MAX_JWKS_BYTES,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&HttpsClient, FetchError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = if self.https {
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

    /// The document at `url` (200 only), within the deadline and the size cap.
    pub async fn get(&self, url: &Uri) -> Result<Vec<u8>, FetchError> {
        tokio::time::timeout(self.timeout, self.get_unbounded(url))
            .await
            .map_err(|_| FetchError::Timeout(self.timeout))?
    }

    async fn get_unbounded(&self, url: &Uri) -> Result<Vec<u8>, FetchError> {
        let request = http::Request::get(url.clone())
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
        Box::pin(self.http.get(&self.url))
    }
}

/// The one rule for every URL the verifier fetches from: https, or plain http to a loopback
/// host (tests, `make dev`), since keys fetched over plain http from elsewhere could be anyone's.
/// Applied to the configured URLs and to the `jwks_uri` a discovery document names. The error
/// says why, to follow the URL in a message.
pub fn fetchable(url: &str) -> Result<Uri, &'static str> {
    let uri: Uri = url.parse().map_err(|_| "is not a URL")?;
    let host = uri.host().ok_or("has no host")?;
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if is_loopback(host) => Ok(uri),
        Some("http") => Err("is plain http to a host that is not loopback"),
        _ => Err("is not https"),
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}
