//! Why a token was refused. Every message is safe to show the client: it names the rule the
//! token broke, never a key, a secret, the configured issuer or audience, nor what the token
//! itself claimed (attacker-chosen text is not echoed back).

use crate::fetch::FetchError;

/// A refusal. [`AuthError::Unavailable`] is the server's problem (the API answers 503 and the
/// client retries); every other variant is the token's (the API answers 401).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    #[error("missing bearer token (send Authorization: Bearer <token>)")]
    MissingToken,
    #[error("the token is not a well-formed JWT")]
    Malformed,
    /// `alg` is not RS256 or ES256: `none`, every HS* (a shared secret, or an attacker's HMAC
    /// keyed with our public key), and everything else.
    #[error("the token's algorithm is not accepted (RS256 or ES256 only)")]
    UnsupportedAlgorithm,
    /// The header lists extensions (`crit`) that must be understood; we understand none.
    #[error("the token's header has critical extensions, which are not accepted")]
    CriticalHeader,
    /// `LIKES_JWT_TOKEN_TYPE=at+jwt` and the header's `typ` is not `at+jwt`: an ID token, or
    /// another kind of JWT from the same issuer.
    #[error("the token is not an access token (its typ must be at+jwt)")]
    WrongTokenType,
    #[error("the token's header names no key (kid)")]
    MissingKeyId,
    /// The issuer does not publish the `kid`, even after the key set was refreshed (or a
    /// refresh was not due).
    #[error("the token is signed with a key the issuer does not publish")]
    UnknownKey,
    /// The `kid` is published, but for another algorithm or key type.
    #[error("the token's algorithm does not match its key")]
    KeyMismatch,
    #[error("the token's signature does not verify")]
    BadSignature,
    #[error("the token has expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token was issued in the future")]
    IssuedInFuture,
    #[error("the token has no {0} claim")]
    MissingClaim(&'static str),
    #[error("the token's {0} claim has the wrong type")]
    InvalidClaim(&'static str),
    #[error("the token is from another issuer")]
    WrongIssuer,
    #[error("the token is for another audience")]
    WrongAudience,
    /// The issuer's key set could not be fetched: not the token's fault. The cause (for logs,
    /// not for the client) is the error's source.
    #[error("the issuer's signing keys cannot be fetched right now")]
    Unavailable(#[source] FetchError),
}

impl AuthError {
    /// True when the refusal is the server's problem (answer 503, not 401).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, AuthError::Unavailable(_))
    }
}
