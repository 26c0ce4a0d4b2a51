//! What a client sees when a request fails: a status, a stable snake_case code, and a
//! sentence, as `{"error": {"code": …, "message": …}}`.

use likes_core::IdError;

use crate::limits::Refusal;
use serde_json::json;

/// Seconds a client should wait before retrying after a 503.
pub const RETRY_AFTER_SECS: u32 = 1;

/// An error response: `{"error": {"code": …, "message": …}}` with an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    /// Set for 503 and 429: the `Retry-After` header, in seconds.
    pub retry_after: Option<u32>,
    /// Set for 405: the `Allow` header.
    pub allow: Option<&'static str>,
}

impl ApiError {
    fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            retry_after: None,
            allow: None,
        }
    }

    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(400, code, message)
    }

    /// An id in the path or query that is not an id; the message names the field.
    pub fn invalid_id(err: &IdError) -> Self {
        Self::bad_request("invalid_id", err.to_string())
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, "unauthorized", message)
    }

    pub fn not_found(path: &str) -> Self {
        let shown: String = path.chars().take(200).collect();
        Self::new(404, "not_found", format!("no route for {shown:?}"))
    }

    /// The caller is suspended (the product's `UserSuspended`): their writes change nothing.
    pub fn suspended() -> Self {
        Self::new(
            403,
            "suspended",
            "this account is suspended: its likes and reactions cannot change",
        )
    }

    /// A caller whose home another region serves (docs/regions.md): 421 Misdirected Request,
    /// nothing read or written; the client calls its home region's address.
    pub fn wrong_region(message: impl Into<String>) -> Self {
        Self::new(421, "wrong_region", message)
    }

    /// A post whose author turned likes off (its policy): unlikes still work.
    pub fn likes_disabled() -> Self {
        Self::new(
            403,
            "likes_disabled",
            "this post takes no likes or reactions: its author turned them off",
        )
    }

    /// A like or reaction of a post whose author blocks the caller.
    pub fn blocked() -> Self {
        Self::new(
            403,
            "blocked",
            "this post's author blocks you: you cannot like or react to it",
        )
    }

    /// Who liked or reacted to this post is its author's to see (its policy).
    pub fn likers_private() -> Self {
        Self::new(
            403,
            "likers_private",
            "who liked this post is private to its author",
        )
    }

    /// A deployment without an erase queue (the template always has one).
    pub fn erase_unconfigured() -> Self {
        Self::new(
            501,
            "not_configured",
            "erasing likes is not configured here (no ERASE_QUEUE_URL)",
        )
    }

    pub fn method_not_allowed(method: &str, allow: &'static str) -> Self {
        let shown: String = method.chars().take(20).collect();
        let mut e = Self::new(
            405,
            "method_not_allowed",
            format!("{shown} is not allowed here; use one of {allow}"),
        );
        e.allow = Some(allow);
        e
    }

    /// The caller is over one of its limits (`crate::limits`); nothing was done.
    pub fn rate_limited(refusal: &Refusal) -> Self {
        let mut e = Self::new(
            429,
            "rate_limited",
            format!(
                "too many {} from this caller (at most {}); retry after the Retry-After delay",
                refusal.class.name(),
                refusal.rate
            ),
        );
        e.retry_after = Some(refusal.retry_after_secs);
        e
    }

    pub fn unavailable() -> Self {
        let mut e = Self::new(
            503,
            "unavailable",
            "the likes store is busy or unreachable; retry after the Retry-After delay",
        );
        e.retry_after = Some(RETRY_AFTER_SECS);
        e
    }

    /// The function verifies tokens itself (a function URL) and cannot fetch the issuer's
    /// keys: the server's problem, not the token's.
    pub fn identity_unavailable() -> Self {
        let mut e = Self::new(
            503,
            "unavailable",
            "the identity provider's signing keys cannot be fetched; retry after the Retry-After delay",
        );
        e.retry_after = Some(RETRY_AFTER_SECS);
        e
    }

    /// A write was sent but its answer was lost: it may or may not have taken effect, once at
    /// most. Retrying it is safe for a like named with an `Idempotency-Key` (the retry is told
    /// whether the first attempt took effect); otherwise read the state before acting again.
    pub fn outcome_unknown() -> Self {
        let mut e = Self::new(
            503,
            "outcome_unknown",
            "the write may or may not have taken effect (its answer was lost); read the like \
             state, or retry with the same Idempotency-Key, after the Retry-After delay",
        );
        e.retry_after = Some(RETRY_AFTER_SECS);
        e
    }

    /// One bucket of the post holds the most likes DynamoDB allows it (10 GB).
    pub fn post_full() -> Self {
        Self::new(
            507,
            "post_full",
            "this post holds as many likes as it can store; the like was not recorded",
        )
    }

    pub fn key_reused() -> Self {
        Self::new(
            422,
            "idempotency_key_reused",
            "this Idempotency-Key already named a different request; use a new key per request",
        )
    }

    /// A bug or misconfiguration. The request id lets an operator find the log line; the cause
    /// itself stays in the logs, not in the response.
    pub fn internal(request_id: &str) -> Self {
        Self::new(
            500,
            "internal",
            format!("internal error; quote request id {request_id} when reporting it"),
        )
    }

    pub fn body(&self) -> serde_json::Value {
        json!({ "error": { "code": self.code, "message": self.message } })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.status, self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

impl From<IdError> for ApiError {
    fn from(err: IdError) -> Self {
        Self::invalid_id(&err)
    }
}
