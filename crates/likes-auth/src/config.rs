//! What the verifier accepts, read once from the environment (the template sets it for the
//! `FunctionUrl` profile):
//!
//! - `LIKES_JWT_ISSUER` (required): the `iss` every token must carry, exactly.
//! - `LIKES_JWT_AUDIENCE` (required): the audience (`aud`, or `client_id` when there is no `aud`).
//! - `LIKES_JWKS_URL`: where the issuer publishes its keys; default
//!   `<issuer without a trailing slash>/.well-known/jwks.json`. https, or plain http to a
//!   loopback address (tests, `make dev`): keys fetched over plain http from elsewhere could be
//!   anyone's.
//! - `LIKES_JWKS`: the JWK set itself, inline. When set, nothing is ever fetched (no cold-start
//!   fetch, no dependence on the issuer's endpoint) and a key rotation needs a redeploy.
//!
//! An empty value counts as unset (CloudFormation passes empty strings for blank parameters).

use std::ffi::OsString;

use http::Uri;

use crate::jwks::KeySet;

pub const ISSUER_VAR: &str = "LIKES_JWT_ISSUER";
pub const AUDIENCE_VAR: &str = "LIKES_JWT_AUDIENCE";
pub const JWKS_URL_VAR: &str = "LIKES_JWKS_URL";
pub const JWKS_VAR: &str = "LIKES_JWKS";

/// A setting that is missing or not what it must be; names the variable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {0} must be set")]
    Missing(&'static str),
    #[error("environment variable {0} is not valid UTF-8")]
    NotUnicode(&'static str),
    #[error("environment variable {name} {why}")]
    Invalid { name: &'static str, why: String },
}

/// Where the keys come from.
#[derive(Debug)]
pub enum KeysFrom {
    /// Fetched from this URL on first use, refreshed as [`crate::keys`] says.
    Url(Uri),
    /// Given inline (`LIKES_JWKS`), already parsed; never fetched.
    Inline(KeySet),
}

/// The verifier's settings.
#[derive(Debug)]
pub struct Config {
    pub issuer: String,
    pub audience: String,
    pub keys: KeysFrom,
}

impl Config {
    /// From the process environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var_os(name))
    }

    /// From any lookup of variables by name (tests use a map, not the process environment,
    /// which every test thread shares).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigError> {
        let var = |name: &'static str| -> Result<Option<String>, ConfigError> {
            match lookup(name) {
                None => Ok(None),
                Some(value) => value
                    .into_string()
                    .map(|v| Some(v.trim().to_owned()).filter(|v| !v.is_empty()))
                    .map_err(|_| ConfigError::NotUnicode(name)),
            }
        };
        let issuer = var(ISSUER_VAR)?.ok_or(ConfigError::Missing(ISSUER_VAR))?;
        let audience = var(AUDIENCE_VAR)?.ok_or(ConfigError::Missing(AUDIENCE_VAR))?;
        let keys = match (var(JWKS_VAR)?, var(JWKS_URL_VAR)?) {
            (Some(inline), _) => KeysFrom::Inline(inline_set(&inline)?),
            (None, Some(url)) => KeysFrom::Url(jwks_url(&url, JWKS_URL_VAR)?),
            (None, None) => KeysFrom::Url(jwks_url(&default_jwks_url(&issuer), ISSUER_VAR)?),
        };
        Ok(Self {
            issuer,
            audience,
            keys,
        })
    }
}

/// `<issuer>/.well-known/jwks.json`, the issuer's trailing slash trimmed (Auth0's issuers end in
/// one; Cognito's do not).
pub fn default_jwks_url(issuer: &str) -> String {
    format!("{}/.well-known/jwks.json", issuer.trim_end_matches('/'))
}

fn inline_set(json: &str) -> Result<KeySet, ConfigError> {
    let set = KeySet::parse(json.as_bytes()).map_err(|e| ConfigError::Invalid {
        name: JWKS_VAR,
        why: format!("must be a JWK set: {e}"),
    })?;
    if set.is_empty() {
        // A fetched set may be empty for a while (the issuer's business); a configured one
        // that can verify nothing is a mistake to report at start-up, not on every request.
        return Err(ConfigError::Invalid {
            name: JWKS_VAR,
            why: format!(
                "has no key that can verify RS256 or ES256 tokens ({} skipped: a kid, kty RSA or EC P-256, use sig are needed)",
                set.skipped()
            ),
        });
    }
    Ok(set)
}

/// An https URL, or http to a loopback host. `name` is the variable the URL came from (the
/// issuer, for the default).
fn jwks_url(url: &str, name: &'static str) -> Result<Uri, ConfigError> {
    let invalid = |why: &str| ConfigError::Invalid {
        name,
        why: format!("must give an https JWKS URL: {url:?} {why}"),
    };
    let uri: Uri = url.parse().map_err(|_| invalid("is not a URL"))?;
    let host = uri.host().ok_or_else(|| invalid("has no host"))?;
    match uri.scheme_str() {
        Some("https") => Ok(uri),
        Some("http") if is_loopback(host) => Ok(uri),
        Some("http") => Err(invalid("is plain http to a host that is not loopback")),
        _ => Err(invalid("is not https")),
    }
}

fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(|name| map.get(name).map(OsString::from))
    }

    fn url(c: Config) -> String {
        match c.keys {
            KeysFrom::Url(u) => u.to_string(),
            KeysFrom::Inline(_) => panic!("inline"),
        }
    }

    #[test]
    fn names_the_missing_variable() {
        assert_eq!(
            config(&[(AUDIENCE_VAR, "a")]).unwrap_err(),
            ConfigError::Missing(ISSUER_VAR)
        );
        assert_eq!(
            config(&[(ISSUER_VAR, "https://i"), (AUDIENCE_VAR, " ")]).unwrap_err(),
            ConfigError::Missing(AUDIENCE_VAR)
        );
    }

    #[test]
    fn defaults_the_jwks_url_from_the_issuer() {
        let c = config(&[(ISSUER_VAR, "https://tenant.example/"), (AUDIENCE_VAR, "a")]).unwrap();
        assert_eq!(
            c.issuer, "https://tenant.example/",
            "iss is compared untrimmed"
        );
        assert_eq!(url(c), "https://tenant.example/.well-known/jwks.json");
        let c = config(&[
            (
                ISSUER_VAR,
                "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_X",
            ),
            (AUDIENCE_VAR, "a"),
            (JWKS_URL_VAR, "http://127.0.0.1:9/keys"),
        ])
        .unwrap();
        assert_eq!(url(c), "http://127.0.0.1:9/keys");
    }

    #[test]
    fn refuses_keys_over_plain_http_from_elsewhere() {
        for bad in [
            "http://issuer.example/jwks",
            "ftp://x/y",
            "not a url",
            "/jwks",
        ] {
            let e = config(&[
                (ISSUER_VAR, "https://i"),
                (AUDIENCE_VAR, "a"),
                (JWKS_URL_VAR, bad),
            ])
            .unwrap_err();
            assert!(
                matches!(
                    e,
                    ConfigError::Invalid {
                        name: JWKS_URL_VAR,
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
        for good in ["http://localhost:1/k", "http://[::1]:1/k", "https://x/k"] {
            assert!(config(&[
                (ISSUER_VAR, "https://i"),
                (AUDIENCE_VAR, "a"),
                (JWKS_URL_VAR, good)
            ])
            .is_ok());
        }
        let e = config(&[(ISSUER_VAR, "likes-local"), (AUDIENCE_VAR, "a")]).unwrap_err();
        assert!(
            matches!(
                e,
                ConfigError::Invalid {
                    name: ISSUER_VAR,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn an_inline_set_must_hold_a_usable_key() {
        let e = config(&[
            (ISSUER_VAR, "https://i"),
            (AUDIENCE_VAR, "a"),
            (
                JWKS_VAR,
                r#"{"keys":[{"kty":"oct","kid":"k","k":"c2VjcmV0"}]}"#,
            ),
        ])
        .unwrap_err();
        assert!(
            matches!(e, ConfigError::Invalid { name: JWKS_VAR, .. }),
            "{e}"
        );
        let e = config(&[
            (ISSUER_VAR, "https://i"),
            (AUDIENCE_VAR, "a"),
            (JWKS_VAR, "nope"),
        ])
        .unwrap_err();
        assert!(
            matches!(e, ConfigError::Invalid { name: JWKS_VAR, .. }),
            "{e}"
        );
    }
}
