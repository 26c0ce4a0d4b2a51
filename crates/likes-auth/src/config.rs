//! What the verifier accepts, read once from the environment (the template sets it for the
//! `FunctionUrl` profile):
//!
//! - `LIKES_JWT_ISSUER` (required): the `iss` every token must carry, exactly.
//! - `LIKES_JWT_AUDIENCE` (required): the audience (`aud`, or `client_id` when there is no `aud`).
//! - `LIKES_JWKS_URL`: where the issuer publishes its keys, for a provider without OpenID
//!   discovery. Default: the `jwks_uri` of the issuer's discovery document, as API Gateway finds
//!   it ([`crate::discovery`]). https, or plain http to a loopback address (tests, `make dev`):
//!   keys fetched over plain http from elsewhere could be anyone's.
//! - `LIKES_JWKS`: the JWK set itself, inline. When set, nothing is ever fetched (no cold-start
//!   fetch, no dependence on the issuer's endpoint) and a key rotation needs a redeploy.
//! - `LIKES_JWT_TOKEN_TYPE`: `any` (the default, as API Gateway, which cannot check it) or
//!   `at+jwt`: only tokens whose header says they are access tokens (RFC 9068 §4), so an ID
//!   token whose audience is the same client id is refused.
//!
//! An empty value counts as unset (CloudFormation passes empty strings for blank parameters).

use std::ffi::OsString;

use http::Uri;

use crate::discovery::discovery_url;
use crate::fetch::fetchable;
use crate::jwks::KeySet;

pub const ISSUER_VAR: &str = "LIKES_JWT_ISSUER";
pub const AUDIENCE_VAR: &str = "LIKES_JWT_AUDIENCE";
pub const JWKS_URL_VAR: &str = "LIKES_JWKS_URL";
pub const JWKS_VAR: &str = "LIKES_JWKS";
pub const TOKEN_TYPE_VAR: &str = "LIKES_JWT_TOKEN_TYPE";

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
    /// Fetched from the `jwks_uri` of the discovery document at this URL (the default).
    Discovery(Uri),
    /// Fetched from this URL (`LIKES_JWKS_URL`) on first use, refreshed as [`crate::keys`] says.
    Url(Uri),
    /// Given inline (`LIKES_JWKS`), already parsed; never fetched.
    Inline(KeySet),
}

/// Which tokens are accepted by their header's `typ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TokenType {
    /// Any `typ`, or none: as API Gateway's authorizer, which does not look.
    #[default]
    Any,
    /// `at+jwt` (or `application/at+jwt`), as RFC 9068 asks of a resource server.
    AccessToken,
}

impl TokenType {
    /// The setting's values, as the template's `JwtTokenType` allows them.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "any" => Some(Self::Any),
            "at+jwt" => Some(Self::AccessToken),
            _ => None,
        }
    }
}

/// The verifier's settings.
#[derive(Debug)]
pub struct Config {
    pub issuer: String,
    pub audience: String,
    pub keys: KeysFrom,
    pub token_type: TokenType,
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
            (None, Some(url)) => KeysFrom::Url(url_of(&url, JWKS_URL_VAR)?),
            (None, None) => KeysFrom::Discovery(url_of(&discovery_url(&issuer), ISSUER_VAR)?),
        };
        let token_type = match var(TOKEN_TYPE_VAR)? {
            None => TokenType::Any,
            Some(value) => TokenType::parse(&value).ok_or_else(|| ConfigError::Invalid {
                name: TOKEN_TYPE_VAR,
                why: format!("must be any or at+jwt, not {value:?}"),
            })?,
        };
        Ok(Self {
            issuer,
            audience,
            keys,
            token_type,
        })
    }
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

/// A URL the keys may be fetched from ([`fetchable`]). `name` is the variable the URL came from
/// (the issuer, for the discovery document).
fn url_of(url: &str, name: &'static str) -> Result<Uri, ConfigError> {
    fetchable(url).map_err(|why| ConfigError::Invalid {
        name,
        why: format!("must give an https URL: {url:?} {why}"),
    })
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
            other => panic!("not a JWKS URL: {other:?}"),
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
    fn finds_the_keys_by_discovery_unless_a_jwks_url_is_given() {
        let c = config(&[(ISSUER_VAR, "https://tenant.example/"), (AUDIENCE_VAR, "a")]).unwrap();
        assert_eq!(
            c.issuer, "https://tenant.example/",
            "iss is compared untrimmed"
        );
        assert_eq!(c.token_type, TokenType::Any);
        match c.keys {
            KeysFrom::Discovery(u) => assert_eq!(
                u.to_string(),
                "https://tenant.example/.well-known/openid-configuration"
            ),
            other => panic!("{other:?}"),
        }
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
    fn the_token_type_is_any_or_at_jwt() {
        let with = |t: &str| {
            config(&[
                (ISSUER_VAR, "https://i"),
                (AUDIENCE_VAR, "a"),
                (TOKEN_TYPE_VAR, t),
            ])
        };
        assert_eq!(with("at+jwt").unwrap().token_type, TokenType::AccessToken);
        assert_eq!(with("any").unwrap().token_type, TokenType::Any);
        assert_eq!(with("").unwrap().token_type, TokenType::Any);
        for bad in ["JWT", "at+JWT", "access"] {
            let e = with(bad).unwrap_err();
            assert!(
                matches!(
                    e,
                    ConfigError::Invalid {
                        name: TOKEN_TYPE_VAR,
                        ..
                    }
                ),
                "{bad}: {e}"
            );
        }
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
