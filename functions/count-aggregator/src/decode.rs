//! Decoding a stream batch. Pure: no I/O. The event's shape is `likes_core::stream_event`'s
//! (shared with the events function); only the decoder is chosen here.

pub use likes_core::stream_event::{
    Keys, Str, StreamChange, StreamEvent, StreamRecord, StringAttr,
};

/// Decodes Lambda's JSON text of a batch. sonic-rs, not serde_json: the same serde structs,
/// decoded with SIMD about twice as fast (`make bench`).
pub fn decode(text: &str) -> Result<StreamEvent<'_>, sonic_rs::Error> {
    sonic_rs::from_str(text)
}
