//! Decoding a stream batch. Pure: no I/O.
//!
//! The event is decoded into borrowed structs of just the fields the aggregator reads (key
//! strings and sequence numbers point into the event's text; a string is copied only if it
//! holds a JSON escape, which keys and sequence numbers never do).

use std::borrow::Cow;

use serde::Deserialize;

/// A string borrowed from the event's text when it holds no escape, copied when it does.
/// (serde borrows a `Cow` field only when it is not wrapped: an `Option<Cow<str>>` would copy
/// every string.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Str<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Str<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(Visit)
    }
}

/// Decodes Lambda's JSON text of a batch. sonic-rs, not serde_json: the same serde structs,
/// decoded with SIMD about twice as fast (`make bench`).
pub fn decode(text: &str) -> Result<StreamEvent<'_>, sonic_rs::Error> {
    sonic_rs::from_str(text)
}

/// A DynamoDB stream batch as Lambda delivers it, reduced to what is read.
#[derive(Debug, Deserialize)]
pub struct StreamEvent<'a> {
    #[serde(rename = "Records", borrow, default)]
    pub records: Vec<StreamRecord<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct StreamRecord<'a> {
    #[serde(rename = "eventID", borrow, default)]
    pub event_id: Option<Str<'a>>,
    #[serde(rename = "eventName", borrow, default)]
    pub event_name: Option<Str<'a>>,
    #[serde(rename = "dynamodb", borrow, default)]
    pub change: Option<StreamChange<'a>>,
}

#[derive(Debug, Deserialize)]
pub struct StreamChange<'a> {
    /// Epoch seconds.
    #[serde(rename = "ApproximateCreationDateTime", default)]
    pub created: Option<f64>,
    #[serde(rename = "Keys", borrow, default)]
    pub keys: Keys<'a>,
    #[serde(rename = "SequenceNumber", borrow, default)]
    pub sequence_number: Option<Str<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub struct Keys<'a> {
    #[serde(borrow, default)]
    pub post_bucket: Option<StringAttr<'a>>,
    #[serde(borrow, default)]
    pub user_id: Option<StringAttr<'a>>,
}

/// A key attribute in DynamoDB JSON; `s` is `None` unless it is a string (`{"S": …}`).
#[derive(Debug, Deserialize)]
pub struct StringAttr<'a> {
    #[serde(rename = "S", borrow, default)]
    pub s: Option<Str<'a>>,
}
