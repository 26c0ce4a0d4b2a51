//! The issuer's keys found as API Gateway's JWT authorizer finds them: at the `jwks_uri` of the
//! issuer's OpenID discovery document, `<issuer>/.well-known/openid-configuration` (OpenID
//! Connect Discovery 1.0, §4). Providers publish their keys at paths of their own (`/jwks`,
//! `/protocol/openid-connect/certs`, `/oauth2/v3/certs`, `/discovery/v2.0/keys`), so a fixed
//! path would find only some of them.
//!
//! The discovered `jwks_uri` is kept and reused for every key fetch: discovery is read again
//! once the `jwks_uri` is [`REDISCOVER_AFTER`] old, or at once when the `jwks_uri` answers with
//! an error status (the keys moved). A key fetch therefore costs one request, as with a
//! configured URL, and a discovery one more about once an hour.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use http::Uri;
use serde::Deserialize;
use tokio::time::Instant;

use crate::fetch::{fetchable, BoxFuture, FetchError, HttpGet, JwksSource, FETCH_TIMEOUT};

/// How long a discovered `jwks_uri` is used before discovery is read again.
pub const REDISCOVER_AFTER: Duration = Duration::from_secs(3600);

/// The discovery document at `issuer`'s well-known URL: the issuer's trailing `/` is removed
/// first, as §4 requires (Auth0's issuers end in one; Cognito's do not).
pub fn discovery_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

/// What is read of the document; everything else in it is the provider's business.
#[derive(Deserialize)]
struct Document {
    issuer: Option<String>,
    jwks_uri: Option<String>,
}

/// The key set at the `jwks_uri` the issuer's discovery document names.
pub struct DiscoveredJwks {
    issuer: String,
    discovery: Uri,
    http: HttpGet,
    /// The `jwks_uri` last discovered, and when. Never held across an await (the key cache
    /// already lets only one fetch run at a time).
    jwks_uri: Mutex<Option<(Uri, Instant)>>,
}

impl DiscoveredJwks {
    /// `discovery` is trusted to be fetchable ([`crate::Config`] checks it); `issuer` is the
    /// configured one, which the document must name exactly.
    pub fn new(issuer: impl Into<String>, discovery: Uri) -> Self {
        let http = HttpGet::new(discovery.scheme() == Some(&http::uri::Scheme::HTTPS));
        Self {
            issuer: issuer.into(),
            discovery,
            http,
            jwks_uri: Mutex::new(None),
        }
    }

    pub fn discovery_url(&self) -> &Uri {
        &self.discovery
    }

    /// The kept `jwks_uri`, and whether it is still fresh.
    fn kept(&self) -> Option<(Uri, bool)> {
        let kept = self.jwks_uri.lock().unwrap_or_else(PoisonError::into_inner);
        kept.as_ref()
            .map(|(uri, at)| (uri.clone(), at.elapsed() < REDISCOVER_AFTER))
    }

    /// Reads the discovery document: its `issuer` must be ours, exactly (§4.3: otherwise the
    /// document is not the issuer's, and neither are its keys), and its `jwks_uri` fetchable.
    async fn discover(&self) -> Result<Uri, FetchError> {
        let body = self.http.get(&self.discovery).await?;
        let document: Document = serde_json::from_slice(&body)
            .map_err(|e| FetchError::Discovery(format!("is not JSON: {e}")))?;
        match document.issuer {
            Some(issuer) if issuer == self.issuer => {}
            Some(_) => return Err(FetchError::Discovery("names another issuer".into())),
            None => return Err(FetchError::Discovery("names no issuer".into())),
        }
        let named = document
            .jwks_uri
            .ok_or_else(|| FetchError::Discovery("names no jwks_uri".into()))?;
        let uri = jwks_uri(&self.discovery, &named).map_err(FetchError::Discovery)?;
        tracing::info!(jwks_uri = %uri, "discovered the issuer's JWKS URL");
        *self.jwks_uri.lock().unwrap_or_else(PoisonError::into_inner) =
            Some((uri.clone(), Instant::now()));
        Ok(uri)
    }

    async fn keys(&self) -> Result<Vec<u8>, FetchError> {
        let kept = match self.kept() {
            None => {
                let uri = self.discover().await?;
                return self.http.get(&uri).await;
            }
            Some((uri, true)) => uri,
            // An hour old: ask discovery again, but if only discovery is down, the keys are
            // most likely still where they were.
            Some((uri, false)) => match self.discover().await {
                Ok(fresh) => return self.http.get(&fresh).await,
                Err(e) => {
                    tracing::warn!(error = %e, "discovery failed; fetching the keys from the last jwks_uri");
                    uri
                }
            },
        };
        match self.http.get(&kept).await {
            // An error status says the keys are not (or no longer) there: the provider may have
            // moved them, so ask discovery again, and fetch again only if it names another URL.
            // A timeout or a failed connection says nothing of the sort, and asking twice more
            // would triple the time a request waits.
            Err(FetchError::Status(status)) => {
                let uri = self.discover().await?;
                if uri == kept {
                    return Err(FetchError::Status(status));
                }
                self.http.get(&uri).await
            }
            other => other,
        }
    }
}

impl JwksSource for DiscoveredJwks {
    /// Discovery and keys together within the one deadline a fetch has (each GET has it too):
    /// requests may be waiting on it.
    fn fetch(&self) -> BoxFuture<'_, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            tokio::time::timeout(FETCH_TIMEOUT, self.keys())
                .await
                .map_err(|_| FetchError::Timeout(FETCH_TIMEOUT))?
        })
    }
}

/// The `jwks_uri` a discovery document at `discovery` may name: https; plain http to a loopback
/// host only when the document itself came over plain http from loopback (tests, `make dev`),
/// so that an https issuer's document cannot point the function at its own loopback services
/// (the Lambda Runtime API listens there).
fn jwks_uri(discovery: &Uri, named: &str) -> Result<Uri, String> {
    let uri = fetchable(named).map_err(|why| format!("has a jwks_uri that {why}"))?;
    let plain = |u: &Uri| u.scheme() == Some(&http::uri::Scheme::HTTP);
    if plain(&uri) && !plain(discovery) {
        return Err("has a plain http jwks_uri, but the issuer is https".into());
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_https_issuer_names_https_keys() {
        let https: Uri = "https://issuer.example/.well-known/openid-configuration"
            .parse()
            .unwrap();
        let http: Uri = "http://127.0.0.1:8/.well-known/openid-configuration"
            .parse()
            .unwrap();
        assert!(jwks_uri(&https, "https://keys.example/jwks").is_ok());
        for bad in [
            "http://127.0.0.1:9001/2018-06-01/runtime/invocation/next",
            "http://localhost/jwks",
            "http://keys.example/jwks",
        ] {
            assert!(jwks_uri(&https, bad).is_err(), "{bad}");
        }
        assert!(jwks_uri(&http, "http://127.0.0.1:8/jwks").is_ok());
        assert!(jwks_uri(&http, "http://keys.example/jwks").is_err());
    }

    #[test]
    fn the_document_is_at_the_issuers_well_known_path() {
        assert_eq!(
            discovery_url("https://tenant.auth0.com/"),
            "https://tenant.auth0.com/.well-known/openid-configuration"
        );
        assert_eq!(
            discovery_url("https://login.example/realms/likes"),
            "https://login.example/realms/likes/.well-known/openid-configuration"
        );
    }
}
