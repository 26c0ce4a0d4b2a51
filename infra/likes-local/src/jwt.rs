//! The JWT authorizer, played locally: HS256 with a local secret. Like API Gateway's, it runs
//! before the handler and rejects a request outright; only verified claims reach the handler.

use jsonwebtoken::{decode, encode, Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// Default local signing secret. Local only: it signs nothing that reaches AWS.
pub const DEFAULT_SECRET: &str = "likes-local-dev-secret";

#[derive(Debug, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub exp: i64,
    pub iat: i64,
    pub iss: String,
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token")]
    Missing,
    #[error("invalid token: {0}")]
    Invalid(String),
}

pub fn issue(secret: &str, sub: &str, ttl_secs: i64) -> Result<String, AuthError> {
    let now = chrono::Utc::now().timestamp();
    let claims = Claims {
        sub: sub.to_owned(),
        iat: now,
        exp: now + ttl_secs,
        iss: "likes-local".to_owned(),
    };
    encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(secret.as_bytes()),
    )
    .map_err(|e| AuthError::Invalid(e.to_string()))
}

/// Verifies `Authorization: Bearer <jwt>`: HS256 only (so `alg: none` and any other algorithm
/// fail), signature, `exp` required and in the future, `sub` present.
pub fn verify(secret: &str, authorization: Option<&str>) -> Result<Claims, AuthError> {
    let token = authorization
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(AuthError::Missing)?;
    let mut validation = Validation::new(Algorithm::HS256);
    validation.leeway = 0;
    validation.set_required_spec_claims(&["exp", "sub"]);
    decode::<Claims>(
        token,
        &DecodingKey::from_secret(secret.as_bytes()),
        &validation,
    )
    .map(|data| data.claims)
    .map_err(|e| AuthError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_its_own_tokens() {
        let t = issue("s", "7c9e6679-7425-40de-944b-e07fc1f90ae7", 60).unwrap();
        let c = verify("s", Some(&format!("Bearer {t}"))).unwrap();
        assert_eq!(c.sub, "7c9e6679-7425-40de-944b-e07fc1f90ae7");
    }

    #[test]
    fn rejects_bad_tokens() {
        let good = issue("s", "u", 60).unwrap();
        assert!(matches!(verify("s", None), Err(AuthError::Missing)));
        assert!(matches!(
            verify("s", Some("Basic x")),
            Err(AuthError::Missing)
        ));
        assert!(verify("other", Some(&format!("Bearer {good}"))).is_err());
        let expired = issue("s", "u", -10).unwrap();
        assert!(verify("s", Some(&format!("Bearer {expired}"))).is_err());
        // alg: none, no signature.
        let parts: Vec<&str> = good.split('.').collect();
        use base64::Engine as _;
        let header = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(r#"{"alg":"none","typ":"JWT"}"#);
        let none = format!("{header}.{}.", parts[1]);
        assert!(verify("s", Some(&format!("Bearer {none}"))).is_err());
    }
}
