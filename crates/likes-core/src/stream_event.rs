//! A DynamoDB stream batch as Lambda delivers it to the Likes stream's readers (the count
//! aggregator and the events function), reduced to what they read. The one spelling of that
//! shape: each reader decodes the event's text into these borrowed structs (key strings and
//! sequence numbers point into the text; a string is copied only if it holds a JSON escape,
//! which keys and sequence numbers never do).

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
    /// The stream's ARN (`…/stream/<label>`): the events function's ids name the stream.
    #[serde(rename = "eventSourceARN", borrow, default)]
    pub source_arn: Option<Str<'a>>,
}

impl StreamRecord<'_> {
    /// The stream's label (the ARN's part after `/stream/`), or "" when the record has none.
    pub fn stream_label(&self) -> &str {
        self.source_arn
            .as_deref()
            .and_then(|arn| arn.rsplit_once("/stream/"))
            .map_or("", |(_, label)| label)
    }
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
