//! Answers an edge cache or a client may keep: `Cache-Control`, a weak `ETag` of the body,
//! and `304 Not Modified` when the client already holds it.

use http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use likes_core::bucket::fnv1a64;
use serde_json::Value;

/// A count: the same for every caller, fresh for a second.
pub const COUNT: &str = "max-age=1";
/// A summary holds `liked_by_me`: the caller's own cache only.
pub const SUMMARY: &str = "private, max-age=1";

pub fn answer(req: &Request, body: &Value, cache_control: &'static str) -> Response<Body> {
    let text = body.to_string();
    let etag = format!("W/\"{:016x}\"", fnv1a64(text.as_bytes()));
    let held = req
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| tag.trim() == etag || tag.trim() == "*");
    let mut resp = if held {
        let mut r = Response::new(Body::Empty);
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        crate::json_response(200, body)
    };
    let headers = resp.headers_mut();
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    resp
}
