//! The JWT authorizer, played locally: HS256 with a local secret, and — as API Gateway's JWT
//! authorizer does — a configured issuer and audience that every token must carry. Like API
//! Gateway's, it runs before the handler and rejects a request outright; only verified claims
//! reach the handler.

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// Default local signing secret. Local only: it signs nothing that reaches AWS.
pub const DEFAULT_SECRET: &str = "likes-local-dev-secret";
/// Defaults of the issuer and audience the local authorizer accepts (and `make token` issues).
pub const DEFAULT_ISSUER: &str = "https://likes.local";
pub const DEFAULT_AUDIENCE: &str = "likes-local";

/// What the local authorizer accepts, as API Gateway's JWT authorizer is configured with an
/// issuer and audiences.
#[derive(Debug, Clone)]
pub struct Authorizer {
    pub secret: String,
    pub issuer: String,
    pub audience: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: Option<String>,
    pub exp: Option<i64>,
    pub iat: Option<i64>,
    /// Not valid before this time, if given (API Gateway's authorizer checks it too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    pub iss: Option<String>,
    /// A string or a list of strings (RFC 7519).
    pub aud: Option<Value>,
    /// Every other claim (a home claim, a provider's own), passed on as API Gateway passes
    /// them.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// Verified claims, as the handler receives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub sub: String,
    pub iss: String,
    pub aud: String,
    pub exp: i64,
    pub iat: Option<i64>,
    /// The token's other claims whose values are strings (API Gateway passes every claim on
    /// as a string; a structured one is left out here).
    pub other: BTreeMap<String, String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AuthError {
    #[error("missing bearer token (send Authorization: Bearer <token>)")]
    Missing,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet (nbf)")]
    NotYetValid,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token is not signed with HS256")]
    WrongAlgorithm,
    #[error("the token has no {0} claim")]
    MissingClaim(&'static str),
    #[error("the token's issuer {got:?} is not the configured issuer {want:?}")]
    WrongIssuer { got: String, want: String },
    #[error("the token's audience {got} does not include the configured audience {want:?}")]
    WrongAudience { got: String, want: String },
    #[error("the token cannot be read: {0}")]
    Unreadable(String),
}

impl Authorizer {
    /// A token for `sub` from this authorizer's issuer to its audience, valid `ttl_secs`.
    pub fn issue(&self, sub: &str, ttl_secs: i64) -> Result<String, AuthError> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: Some(sub.to_owned()),
            iat: Some(now),
            nbf: None,
            exp: Some(now + ttl_secs),
            iss: Some(self.issuer.clone()),
            aud: Some(self.audience.clone().into()),
            other: BTreeMap::new(),
        };
        sign(&self.secret, &claims)
    }

    /// Verifies `Authorization: Bearer <jwt>`: HS256 only (so `alg: none` and any other
    /// algorithm fail), the signature, `exp` in the future, `nbf` (if any) in the past, `sub`,
    /// and the issuer and audience.
    pub fn verify(&self, authorization: Option<&str>) -> Result<Verified, AuthError> {
        let token = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or(AuthError::Missing)?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 0;
        validation.validate_nbf = true;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let claims = decode::<Claims>(
            token,
            &DecodingKey::from_secret(self.secret.as_bytes()),
            &validation,
        )
        .map_err(|e| match e.kind() {
            ErrorKind::ExpiredSignature => AuthError::Expired,
            ErrorKind::ImmatureSignature => AuthError::NotYetValid,
            ErrorKind::InvalidSignature => AuthError::BadSignature,
            ErrorKind::InvalidAlgorithm => AuthError::WrongAlgorithm,
            _ => AuthError::Unreadable(e.to_string()),
        })?
        .claims;
        let exp = claims.exp.ok_or(AuthError::MissingClaim("exp"))?;
        let sub = claims.sub.ok_or(AuthError::MissingClaim("sub"))?;
        let iss = claims.iss.ok_or(AuthError::MissingClaim("iss"))?;
        if iss != self.issuer {
            return Err(AuthError::WrongIssuer {
                got: iss,
                want: self.issuer.clone(),
            });
        }
        let aud = claims.aud.ok_or(AuthError::MissingClaim("aud"))?;
        let listed = match &aud {
            Value::String(one) => one == &self.audience,
            Value::Array(many) => many.iter().any(|a| a.as_str() == Some(&self.audience)),
            _ => false,
        };
        if !listed {
            return Err(AuthError::WrongAudience {
                got: aud.to_string(),
                want: self.audience.clone(),
            });
        }
        Ok(Verified {
            sub,
            iss,
            aud: self.audience.clone(),
            exp,
            iat: claims.iat,
            other: claims
                .other
                .into_iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k, v.to_owned())))
                .collect(),
        })
    }
}

/// Signs any claims with `secret` (HS256): the authorizer's tokens, and tests' bad ones.
pub fn sign(secret: &str, claims: &Claims) -> Result<String, AuthError> {
    encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .map_err(|e| AuthError::Unreadable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authorizer() -> Authorizer {
        Authorizer {
            secret: "s".into(),
            issuer: DEFAULT_ISSUER.into(),
            audience: DEFAULT_AUDIENCE.into(),
        }
    }

    fn claims() -> Claims {
        let now = chrono::Utc::now().timestamp();
        Claims {
            sub: Some("auth0|abc".into()),
            exp: Some(now + 60),
            iat: Some(now),
            nbf: None,
            iss: Some(DEFAULT_ISSUER.into()),
            aud: Some(serde_json::json!(["other", DEFAULT_AUDIENCE])),
            other: BTreeMap::new(),
        }
    }

    fn verify_claims(c: &Claims) -> Result<Verified, AuthError> {
        let token = sign("s", c).unwrap();
        authorizer().verify(Some(&format!("Bearer {token}")))
    }

    #[test]
    fn accepts_its_own_tokens_and_an_audience_list() {
        let a = authorizer();
        let t = a.issue("7c9e6679-7425-40de-944b-e07fc1f90ae7", 60).unwrap();
        let v = a.verify(Some(&format!("Bearer {t}"))).unwrap();
        assert_eq!(v.sub, "7c9e6679-7425-40de-944b-e07fc1f90ae7");
        assert_eq!(verify_claims(&claims()).unwrap().sub, "auth0|abc");
    }

    #[test]
    fn passes_other_string_claims_on_as_api_gateway_does() {
        let mut c = claims();
        c.other.insert("custom:home".into(), "eu".into());
        c.other
            .insert("groups".into(), serde_json::json!(["a", "b"]));
        let v = verify_claims(&c).unwrap();
        assert_eq!(v.other.get("custom:home").map(String::as_str), Some("eu"));
        assert!(
            !v.other.contains_key("groups"),
            "a structured claim is left out"
        );
        assert!(
            !v.other.contains_key("sub"),
            "the named claims are not repeated"
        );
    }

    #[test]
    fn names_what_is_wrong_in_plain_words() {
        let a = authorizer();
        assert_eq!(a.verify(None), Err(AuthError::Missing));
        assert_eq!(a.verify(Some("Basic x")), Err(AuthError::Missing));
        let mut c = claims();
        c.iss = None;
        assert_eq!(verify_claims(&c), Err(AuthError::MissingClaim("iss")));
        c.iss = Some("https://elsewhere".into());
        assert!(matches!(
            verify_claims(&c),
            Err(AuthError::WrongIssuer { .. })
        ));
        let mut c = claims();
        c.aud = None;
        assert_eq!(verify_claims(&c), Err(AuthError::MissingClaim("aud")));
        c.aud = Some("someone-else".into());
        let err = verify_claims(&c).unwrap_err();
        assert!(err.to_string().contains("likes-local"), "{err}");
        let mut c = claims();
        c.sub = None;
        assert_eq!(verify_claims(&c), Err(AuthError::MissingClaim("sub")));
        let mut c = claims();
        c.exp = Some(chrono::Utc::now().timestamp() - 10);
        assert_eq!(verify_claims(&c), Err(AuthError::Expired));
        let mut c = claims();
        c.nbf = Some(chrono::Utc::now().timestamp() + 30);
        assert_eq!(verify_claims(&c), Err(AuthError::NotYetValid));
        c.nbf = Some(chrono::Utc::now().timestamp() - 1);
        assert!(verify_claims(&c).is_ok());
        let forged = sign("not-the-secret", &claims()).unwrap();
        assert_eq!(
            a.verify(Some(&format!("Bearer {forged}"))),
            Err(AuthError::BadSignature)
        );
        // alg: none, no signature.
        let good = a.issue("u", 60).unwrap();
        let parts: Vec<&str> = good.split('.').collect();
        use base64::Engine as _;
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"alg":"none","typ":"JWT"}"#);
        let none = format!("{header}.{}.", parts[1]);
        assert!(a.verify(Some(&format!("Bearer {none}"))).is_err());
    }
}
