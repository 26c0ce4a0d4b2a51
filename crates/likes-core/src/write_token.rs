//! What identifies one like or unlike request to the store: a token stored on the like it
//! writes, so that the request can recognise its own write (a timestamp cannot: two requests
//! can share a millisecond).
//!
//! A client may name its request with an `Idempotency-Key`; the token is then the key, and the
//! store keeps a marker of the request's effect so that a retry with the same key is answered
//! as the first attempt was, and never takes effect twice (see `DynamoLikes`).

use std::fmt;

/// Longest accepted `Idempotency-Key`.
pub const MAX_KEY_LEN: usize = 64;

#[derive(Clone, PartialEq, Eq)]
pub struct WriteToken {
    value: String,
    keyed: bool,
}

/// An `Idempotency-Key` that is not 1 to 64 characters of `A-Z a-z 0-9 _ -`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Idempotency-Key must be 1 to {MAX_KEY_LEN} characters from A-Z a-z 0-9 _ -")]
pub struct BadKey;

impl WriteToken {
    /// A fresh token for a request the client did not name: 122 random bits.
    pub fn random() -> Self {
        Self {
            value: uuid::Uuid::new_v4().simple().to_string(),
            keyed: false,
        }
    }

    /// The token of a request the client named with an `Idempotency-Key`.
    pub fn from_key(key: &str) -> Result<Self, BadKey> {
        let ok = (1..=MAX_KEY_LEN).contains(&key.len())
            && key
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !ok {
            return Err(BadKey);
        }
        Ok(Self {
            value: format!("k-{key}"),
            keyed: true,
        })
    }

    /// Whether the client named the request (its retries must be recognised).
    pub fn is_keyed(&self) -> bool {
        self.keyed
    }

    pub fn as_str(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for WriteToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WriteToken({})", self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_checked_and_random_tokens_differ() {
        assert!(WriteToken::from_key("0f8fad5b-d9cb-469f-a165-70867728950e").is_ok());
        assert!(WriteToken::from_key(&"a".repeat(64)).is_ok());
        for bad in ["", " ", "a b", "a#b", "~x", &"a".repeat(65), "ü"] {
            assert_eq!(WriteToken::from_key(bad), Err(BadKey), "{bad:?}");
        }
        assert_ne!(WriteToken::random(), WriteToken::random());
        assert!(!WriteToken::random().is_keyed());
        // A key can never collide with a random token.
        assert_ne!(
            WriteToken::from_key(WriteToken::random().as_str())
                .unwrap()
                .as_str(),
            WriteToken::random().as_str()
        );
    }
}
