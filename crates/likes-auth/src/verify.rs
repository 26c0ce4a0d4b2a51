//! The check itself, in API Gateway's JWT authorizer's order: the token's shape and algorithm,
//! its key by `kid`, the signature, then the claims. Anything the rules below do not accept is
//! refused; only a token that passes every rule yields a subject.

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::config::{Config, ConfigError, KeysFrom, TokenType};
use crate::discovery::DiscoveredJwks;
use crate::error::AuthError;
use crate::fetch::{HttpJwks, JwksSource};
use crate::jwks::KeySet;
use crate::keys::KeyCache;

/// Clock skew allowed on `exp`, `nbf` and `iat`, in seconds.
pub const LEEWAY_SECS: u64 = 60;

/// A verified token: who it is for, and every claim (as API Gateway hands its authorizer's
/// claims to the function).
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub sub: String,
    pub claims: Map<String, Value>,
}

/// Verifies bearer tokens for one issuer and audience. Build one per execution environment
/// (the key set is cached in it) and share it across requests.
pub struct Verifier {
    issuer: String,
    audience: String,
    keys: KeyCache,
    token_type: TokenType,
    rs256: Validation,
    es256: Validation,
}

/// The header fields the check needs, read before anything else is trusted.
#[derive(Deserialize)]
struct Header {
    alg: String,
    kid: Option<String>,
    crit: Option<Value>,
    typ: Option<Value>,
}

impl Verifier {
    /// The verifier the environment describes ([`Config::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Config::from_env().map(Self::new)
    }

    pub fn new(config: Config) -> Self {
        let keys = match config.keys {
            KeysFrom::Discovery(url) => {
                KeyCache::fetched(Box::new(DiscoveredJwks::new(config.issuer.clone(), url)))
            }
            KeysFrom::Url(url) => KeyCache::fetched(Box::new(HttpJwks::new(url))),
            KeysFrom::Inline(set) => KeyCache::inline(set),
        };
        Self::with_keys(config.issuer, config.audience, keys).accepting(config.token_type)
    }

    /// Which token types to accept ([`TokenType::Any`] unless told).
    pub fn accepting(mut self, token_type: TokenType) -> Self {
        self.token_type = token_type;
        self
    }

    /// Keys from any source: a fake one in tests.
    pub fn with_source(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        source: impl JwksSource + 'static,
    ) -> Self {
        Self::with_keys(
            issuer.into(),
            audience.into(),
            KeyCache::fetched(Box::new(source)),
        )
    }

    /// A fixed key set, never fetched.
    pub fn with_key_set(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        set: KeySet,
    ) -> Self {
        Self::with_keys(issuer.into(), audience.into(), KeyCache::inline(set))
    }

    fn with_keys(issuer: String, audience: String, keys: KeyCache) -> Self {
        Self {
            issuer,
            audience,
            keys,
            token_type: TokenType::Any,
            rs256: validation(Algorithm::RS256),
            es256: validation(Algorithm::ES256),
        }
    }

    /// Fetches the issuer's key set now rather than on the first request (nothing to do with
    /// inline keys, or once loaded): call it in the function's start-up so the fetch happens
    /// during init, which also runs ahead of traffic when Lambda initialises an environment
    /// early. A failure is [`AuthError::Unavailable`]; requests retry it after 5 s.
    pub async fn prefetch(&self) -> Result<(), AuthError> {
        self.keys.prefetch().await
    }

    /// Verifies the token in an `Authorization` header value ([`bearer`]).
    pub async fn verify_authorization(
        &self,
        authorization: Option<&str>,
    ) -> Result<Verified, AuthError> {
        self.verify(bearer(authorization)?).await
    }

    /// Verifies a compact JWT.
    pub async fn verify(&self, token: &str) -> Result<Verified, AuthError> {
        let header = read_header(token)?;
        // The algorithm is decided before any key is looked up: `none`, every HS* (including
        // an HMAC keyed with our own public key, the classic confusion) and all else stop here.
        let (alg, validation) = match header.alg.as_str() {
            "RS256" => (Algorithm::RS256, &self.rs256),
            "ES256" => (Algorithm::ES256, &self.es256),
            _ => return Err(AuthError::UnsupportedAlgorithm),
        };
        if header.crit.is_some() {
            return Err(AuthError::CriticalHeader);
        }
        // Before any key is looked up, so an ID token costs no fetch either.
        if self.token_type == TokenType::AccessToken && !is_access_token(header.typ.as_ref()) {
            return Err(AuthError::WrongTokenType);
        }
        // API Gateway requires a kid; so do we (no guessing among the issuer's keys).
        let kid = header.kid.ok_or(AuthError::MissingKeyId)?;
        let set = self.keys.set_for(&kid).await?;
        let key = set.find(&kid, alg)?;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
            .map_err(|e| refusal(e.kind()))?
            .claims;
        self.check_claims(claims)
    }

    /// The claims jsonwebtoken leaves to us (it has checked `exp` and `nbf`).
    fn check_claims(&self, claims: Map<String, Value>) -> Result<Verified, AuthError> {
        match claims.get("iss") {
            None => return Err(AuthError::MissingClaim("iss")),
            Some(Value::String(iss)) if *iss == self.issuer => {}
            Some(Value::String(_)) => return Err(AuthError::WrongIssuer),
            Some(_) => return Err(AuthError::InvalidClaim("iss")),
        }
        // As API Gateway: `aud` when the token has one (a string or a list containing ours);
        // only without `aud` is `client_id` compared (Cognito's access tokens carry no `aud`).
        match (claims.get("aud"), claims.get("client_id")) {
            (Some(Value::String(aud)), _) if *aud == self.audience => {}
            (Some(Value::Array(auds)), _)
                if auds
                    .iter()
                    .any(|a| a.as_str() == Some(self.audience.as_str())) => {}
            (Some(Value::String(_) | Value::Array(_)), _) => return Err(AuthError::WrongAudience),
            (Some(_), _) => return Err(AuthError::InvalidClaim("aud")),
            (None, Some(Value::String(id))) if *id == self.audience => {}
            (None, Some(Value::String(_))) => return Err(AuthError::WrongAudience),
            (None, Some(_)) => return Err(AuthError::InvalidClaim("client_id")),
            (None, None) => return Err(AuthError::MissingClaim("aud")),
        }
        // API Gateway also refuses a token issued in the future; jsonwebtoken does not check.
        match claims.get("iat") {
            None => {}
            Some(Value::Number(iat)) => {
                let now = jsonwebtoken::get_current_timestamp();
                if iat
                    .as_f64()
                    .is_none_or(|iat| iat > (now + LEEWAY_SECS) as f64)
                {
                    return Err(AuthError::IssuedInFuture);
                }
            }
            Some(_) => return Err(AuthError::InvalidClaim("iat")),
        }
        let sub = match claims.get("sub") {
            None => return Err(AuthError::MissingClaim("sub")),
            Some(Value::String(sub)) if !sub.is_empty() => sub.clone(),
            Some(_) => return Err(AuthError::InvalidClaim("sub")),
        };
        Ok(Verified { sub, claims })
    }
}

/// The token in an `Authorization` header: `Bearer <token>` (any case), or the bare token, as
/// API Gateway's identity source accepts both.
pub fn bearer(authorization: Option<&str>) -> Result<&str, AuthError> {
    let value = authorization
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .ok_or(AuthError::MissingToken)?;
    let token = match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        // Another scheme (Basic, ...): no bearer token was sent.
        Some(_) => return Err(AuthError::MissingToken),
        // "Bearer " with nothing after it (trimmed above).
        None if value.eq_ignore_ascii_case("bearer") => return Err(AuthError::MissingToken),
        None => value,
    };
    if token.is_empty() {
        return Err(AuthError::MissingToken);
    }
    Ok(token)
}

/// What jsonwebtoken checks: the one algorithm, `exp` present and not past (with leeway), `nbf`
/// (if present) not ahead. Issuer and audience are ours (API Gateway's rules, see above).
fn validation(alg: Algorithm) -> Validation {
    let mut v = Validation::new(alg);
    v.leeway = LEEWAY_SECS;
    v.validate_exp = true;
    v.validate_nbf = true;
    v.validate_aud = false;
    v.set_required_spec_claims(&["exp"]);
    v
}

/// RFC 9068 §4: `at+jwt`, or the full media type `application/at+jwt`; media types compare
/// without regard to case (RFC 2045).
fn is_access_token(typ: Option<&Value>) -> bool {
    typ.and_then(Value::as_str).is_some_and(|t| {
        t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt")
    })
}

fn read_header(token: &str) -> Result<Header, AuthError> {
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Malformed);
    };
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| AuthError::Malformed)?;
    serde_json::from_slice(&json).map_err(|_| AuthError::Malformed)
}

/// jsonwebtoken's verdict as a refusal.
fn refusal(kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::InvalidSignature
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidKeyFormat => AuthError::BadSignature,
        ErrorKind::ExpiredSignature => AuthError::Expired,
        ErrorKind::ImmatureSignature => AuthError::NotYetValid,
        // The only required claim; a non-numeric `exp` is reported as missing by jsonwebtoken.
        ErrorKind::MissingRequiredClaim(_) => AuthError::MissingClaim("exp"),
        ErrorKind::InvalidClaimFormat(c) if c == "nbf" => AuthError::InvalidClaim("nbf"),
        ErrorKind::InvalidClaimFormat(_) => AuthError::InvalidClaim("exp"),
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => AuthError::KeyMismatch,
        _ => AuthError::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_token_from_the_header_as_api_gateway_does() {
        assert_eq!(bearer(Some("Bearer a.b.c")), Ok("a.b.c"));
        assert_eq!(bearer(Some("bearer  a.b.c ")), Ok("a.b.c"));
        assert_eq!(bearer(Some("a.b.c")), Ok("a.b.c"));
        for missing in [None, Some(""), Some("Bearer "), Some("Basic dTpw")] {
            assert_eq!(bearer(missing), Err(AuthError::MissingToken), "{missing:?}");
        }
    }

    #[test]
    fn an_access_token_says_so_in_its_typ() {
        for yes in ["at+jwt", "AT+JWT", "application/at+jwt"] {
            assert!(is_access_token(Some(&Value::from(yes))), "{yes}");
        }
        for no in [Some(Value::from("JWT")), Some(Value::from(1)), None] {
            assert!(!is_access_token(no.as_ref()), "{no:?}");
        }
    }

    #[test]
    fn a_token_must_have_three_parts_and_a_json_header() {
        for bad in ["", "a.b", "a.b.c.d", "!!.b.c", "e30.b.c"] {
            assert!(read_header(bad).is_err(), "{bad}");
        }
        let h = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#);
        assert_eq!(read_header(&format!("{h}.b.")).unwrap().alg, "none");
    }
}
