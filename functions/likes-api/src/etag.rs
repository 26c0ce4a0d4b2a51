//! Answers an edge cache or a client may keep: `Cache-Control`, a weak `ETag` of the body,
//! and `304 Not Modified` when the client already holds it.

use http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Request, Response};
use likes_core::bucket::fnv1a64;
use serde_json::Value;

/// How an answer may be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    cache_control: &'static str,
    /// The answer depends on who asks: a cache must key it by the caller's token too.
    per_caller: bool,
}

/// A count: the same for every caller, fresh for a second.
pub const COUNT: Policy = Policy {
    cache_control: "max-age=1",
    per_caller: false,
};
/// A summary holds `liked_by_me`: the caller's own cache only, and keyed by the token — a
/// browser keys its cache by URL alone, and would otherwise show the last user's likes to the
/// next one signed in on it.
pub const SUMMARY: Policy = Policy {
    cache_control: "private, max-age=1",
    per_caller: true,
};

pub fn answer(req: &Request, body: &Value, policy: Policy) -> Response<Body> {
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
        HeaderValue::from_static(policy.cache_control),
    );
    if policy.per_caller {
        headers.insert(header::VARY, HeaderValue::from_static("Authorization"));
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get(if_none_match: Option<&str>) -> Request {
        let mut req = http::Request::builder().uri("/x");
        if let Some(tag) = if_none_match {
            req = req.header(header::IF_NONE_MATCH, tag);
        }
        req.body(Body::Empty).expect("a request")
    }

    fn header_of(resp: &Response<Body>, name: header::HeaderName) -> Option<&str> {
        resp.headers().get(name).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn a_count_is_shared_and_a_summary_is_kept_per_caller() {
        let body = json!({"like_count": 3});
        let count = answer(&get(None), &body, COUNT);
        assert_eq!(header_of(&count, header::CACHE_CONTROL), Some("max-age=1"));
        assert_eq!(header_of(&count, header::VARY), None);
        let summary = answer(&get(None), &body, SUMMARY);
        assert_eq!(
            header_of(&summary, header::CACHE_CONTROL),
            Some("private, max-age=1")
        );
        assert_eq!(header_of(&summary, header::VARY), Some("Authorization"));
    }

    #[test]
    fn the_held_version_is_not_sent_again() {
        let body = json!({"like_count": 3});
        let first = answer(&get(None), &body, COUNT);
        assert_eq!(first.status(), StatusCode::OK);
        let tag = header_of(&first, header::ETAG).expect("an etag").to_owned();
        let again = answer(&get(Some(&format!("\"other\", {tag}"))), &body, SUMMARY);
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(header_of(&again, header::ETAG), Some(tag.as_str()));
        assert_eq!(header_of(&again, header::VARY), Some("Authorization"));
        let changed = answer(&get(Some(&tag)), &json!({"like_count": 4}), COUNT);
        assert_eq!(changed.status(), StatusCode::OK);
    }
}
