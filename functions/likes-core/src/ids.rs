//! Post and user identifiers.
//!
//! IDs are UUIDs in canonical form (lowercase, hyphenated, 36 characters). Anything else is
//! rejected rather than normalised: the ID is part of stored keys, so two spellings of one UUID
//! would silently become two different posts.

use std::fmt;

use uuid::Uuid;

/// Longest input echoed back in an error message; the rest is elided so that a 10 kB id does not
/// produce a 10 kB error body.
const MAX_ECHO: usize = 64;

/// An id that is not in the accepted form. Names the field it came from, so that the edge can
/// say which input was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be a lowercase hyphenated UUID, got {shown:?}")]
pub struct IdError {
    pub field: &'static str,
    /// The input, shortened to a bounded length for messages.
    pub shown: String,
}

fn parse_canonical(field: &'static str, raw: &str) -> Result<Uuid, IdError> {
    let parsed = if raw.len() == 36 {
        Uuid::try_parse(raw).ok()
    } else {
        None
    };
    // Re-encode into a stack buffer and compare: parsing alone would also accept uppercase.
    let mut buf = uuid::Uuid::encode_buffer();
    match parsed {
        Some(id) if id.hyphenated().encode_lower(&mut buf) == raw => Ok(id),
        _ => Err(IdError {
            field,
            shown: echo(raw),
        }),
    }
}

fn echo(raw: &str) -> String {
    if raw.chars().count() <= MAX_ECHO {
        raw.to_owned()
    } else {
        let head: String = raw.chars().take(MAX_ECHO).collect();
        format!("{head}…")
    }
}

macro_rules! id_type {
    ($name:ident, $field:literal) => {
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Uuid);

        impl $name {
            /// Parses a canonical lowercase hyphenated UUID; the error names the field.
            pub fn parse(raw: &str) -> Result<Self, IdError> {
                parse_canonical($field, raw).map(Self)
            }

            /// Parses with a caller-chosen field name for the error message.
            pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, IdError> {
                parse_canonical(field, raw).map(Self)
            }

            pub fn new_random() -> Self {
                Self(Uuid::new_v4())
            }

            pub fn as_uuid(&self) -> &Uuid {
                &self.0
            }
        }

        impl From<Uuid> for $name {
            fn from(id: Uuid) -> Self {
                Self(id)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Uuid's Display is the canonical lowercase hyphenated form.
                fmt::Display::fmt(&self.0, f)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(&self.0)
            }
        }
    };
}

id_type!(PostId, "post_id");
id_type!(UserId, "user_id");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_canonical_lowercase() {
        let raw = "0f8fad5b-d9cb-469f-a165-70867728950e";
        assert_eq!(PostId::parse(raw).unwrap().to_string(), raw);
    }

    #[test]
    fn rejects_non_canonical_spellings() {
        for raw in [
            "0F8FAD5B-D9CB-469F-A165-70867728950E",
            "0f8fad5bd9cb469fa16570867728950e",
            "{0f8fad5b-d9cb-469f-a165-70867728950e}",
            "urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e",
            " 0f8fad5b-d9cb-469f-a165-70867728950e",
            "0f8fad5b-d9cb-469f-a165-70867728950g",
            "",
            "not a uuid",
            "ü0f8fad5-d9cb-469f-a165-70867728950e",
        ] {
            let err = PostId::parse(raw).unwrap_err();
            assert_eq!(err.field, "post_id", "{raw:?}");
            assert!(err.to_string().contains("post_id"), "{err}");
        }
    }

    #[test]
    fn error_message_for_huge_input_is_bounded() {
        let raw = "x".repeat(10_000);
        let err = UserId::parse(&raw).unwrap_err();
        let message = err.to_string();
        assert!(message.len() < 300, "{}", message.len());
        assert!(message.contains("user_id"));
    }
}
