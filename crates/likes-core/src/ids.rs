//! Post and user identifiers: the caller's ids, adopted as they are.
//!
//! **The id grammar** (users and posts alike): 1 to 128 bytes, each one of
//! `A-Z a-z 0-9 . _ : | @ + = -`. Case-sensitive, exact bytes, never normalised: the id is part of
//! stored keys, so two spellings would silently become two different posts. Every canonical
//! UUID is in it, and so are the subjects of the common identity providers (`auth0|5f7c…`,
//! Firebase's 28 alphanumerics, Okta's `00u1…`, Clerk's `user_2…`) and the common post id
//! schemes (snowflake integers, ULIDs, slugs).
//!
//! Everything else is excluded because something uses it, or because it would make one id
//! readable in two ways:
//! - `#` separates the post from the bucket in a Likes partition key (`{post_id}#{bucket}`);
//! - `~` marks control items (recount fences) and sorts above every allowed byte, so a key
//!   condition `user_id < "~"` reads likes only;
//! - `,` separates the ids of a summary's `post_ids`; `/` separates path segments; `?`, `&` and
//!   `%` belong to URI syntax (an id in a path is percent-decoded exactly once, and a `%` left
//!   after that means it was encoded twice);
//! - whitespace and control characters, quotes and backslashes: invisible or escaped
//!   differently in logs, headers and JSON;
//! - non-ASCII: two byte sequences can look identical (Unicode normalisation forms).

use std::fmt;

/// Longest id, in bytes.
pub const MAX_ID_LEN: usize = 128;

/// Longest input echoed back in an error message; the rest is elided so that a 10 kB id does not
/// produce a 10 kB error body.
const MAX_ECHO: usize = 64;

/// Whether `b` may appear in an id.
pub const fn is_id_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'|' | b'@' | b'+' | b'=' | b'-')
}

/// Whether `raw` is an id (see the module documentation). Allocation-free: the aggregator checks
/// a key per stream record.
pub fn is_id(raw: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&raw.len()) && raw.bytes().all(is_id_byte)
}

/// An id that is not in the grammar. Names the field it came from, so that the edge can say
/// which input was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field} must be 1 to {MAX_ID_LEN} characters from A-Z a-z 0-9 . _ : | @ + = -, got {shown:?}"
)]
pub struct IdError {
    pub field: &'static str,
    /// The input, shortened to a bounded length for messages.
    pub shown: String,
}

fn echo(raw: &str) -> String {
    if raw.chars().count() <= MAX_ECHO {
        raw.to_owned()
    } else {
        let head: String = raw.chars().take(MAX_ECHO).collect();
        format!("{head}…")
    }
}

fn checked(field: &'static str, raw: &str) -> Result<Box<str>, IdError> {
    if is_id(raw) {
        Ok(raw.into())
    } else {
        Err(IdError {
            field,
            shown: echo(raw),
        })
    }
}

macro_rules! id_type {
    ($name:ident, $field:literal) => {
        /// Built only by the checking constructors, so a value is always in the grammar.
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Box<str>);

        impl $name {
            /// Checks `raw` against the grammar; the error names the field.
            pub fn parse(raw: &str) -> Result<Self, IdError> {
                checked($field, raw).map(Self)
            }

            /// Checks with a caller-chosen field name for the error message.
            pub fn parse_field(field: &'static str, raw: &str) -> Result<Self, IdError> {
                checked(field, raw).map(Self)
            }

            /// A random id (a UUID v4), for tests.
            #[cfg(any(test, feature = "testing"))]
            pub fn new_random() -> Self {
                Self(uuid::Uuid::new_v4().to_string().into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({:?})", stringify!($name), &*self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.0)
            }
        }

        /// Checked on the way in, like every other way of making one.
        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let raw = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                Self::parse(&raw).map_err(serde::de::Error::custom)
            }
        }
    };
}

id_type!(PostId, "post_id");
id_type!(UserId, "user_id");

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_the_ids_real_products_have() {
        for raw in [
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "0F8FAD5B-D9CB-469F-A165-70867728950E",
            "auth0|5f7c8ec7c33c6c004bbafe82",
            "google-oauth2|104763291827364512345",
            "Xq3rZ9bT1mKpL0vW8sYc2dNf4GhJ",
            "00u1abcd2EfGh3IjK4l5",
            "user_2abcDEF123",
            "1798765432109876543",
            "01ARZ3NDEKTSV4RRFFQ69G5FAV",
            "my-first-post",
            "urn:post:42",
            "a@b.example",
            "dGVzdA+x=",
            &"x".repeat(MAX_ID_LEN),
        ] {
            assert_eq!(PostId::parse(raw).unwrap().as_str(), raw);
            assert_eq!(UserId::parse(raw).unwrap().to_string(), raw);
        }
    }

    #[test]
    fn rejects_what_the_keys_and_uris_use() {
        for raw in [
            "",
            &"x".repeat(MAX_ID_LEN + 1),
            "a#1",
            "~fence",
            "a,b",
            "a/b",
            "a b",
            "a%7Cb",
            "a?b",
            "a&b",
            "tab\there",
            "new\nline",
            "quote\"",
            "back\\slash",
            "ünï",
            "{0f8fad5b-d9cb-469f-a165-70867728950e}",
        ] {
            let err = PostId::parse(raw).unwrap_err();
            assert_eq!(err.field, "post_id", "{raw:?}");
            assert!(err.to_string().contains("post_id"), "{err}");
        }
    }

    #[test]
    fn ids_are_exact_bytes() {
        let lower = PostId::parse("abc").unwrap();
        let upper = PostId::parse("ABC").unwrap();
        assert_ne!(lower, upper, "case-sensitive, never normalised");
    }

    #[test]
    fn error_message_for_huge_input_is_bounded() {
        let raw = "x".repeat(10_000);
        let err = UserId::parse(&raw).unwrap_err();
        let message = err.to_string();
        assert!(message.len() < 300, "{}", message.len());
        assert!(message.contains("user_id"));
    }

    proptest! {
        #[test]
        fn the_grammar_is_exactly_the_allowed_bytes(raw in "[ -~]{0,140}|\\PC{0,20}") {
            let expected = !raw.is_empty()
                && raw.len() <= MAX_ID_LEN
                && raw.bytes().all(|b| b.is_ascii_alphanumeric() || b".:_|@+=-".contains(&b));
            prop_assert_eq!(PostId::parse(&raw).is_ok(), expected);
        }

        #[test]
        fn every_id_round_trips(raw in "[A-Za-z0-9._:|@+=-]{1,128}") {
            let id = UserId::parse(&raw).unwrap();
            prop_assert_eq!(id.as_str(), raw.as_str());
        }
    }
}
