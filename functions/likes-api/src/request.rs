//! What a request says, read and validated: its id, and the query parameters and body of each
//! route. Who is calling is `identity`'s.

use chrono::{DateTime, Utc};
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use likes_core::write_token::BadKey;
use likes_core::{PostId, WriteToken};

use crate::error::ApiError;

/// Page size bounds for the listing routes.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;
/// Most post ids one summary request may name.
pub const MAX_SUMMARY_IDS: usize = 100;

pub fn request_id(req: &Request) -> String {
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref() {
        if let Some(id) = &ctx.request_id {
            return id.clone();
        }
    }
    req.lambda_context_ref()
        .map(|c| c.request_id.clone())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The write routes take no body. Rejecting one, rather than ignoring it, keeps clients from
/// believing that a `user_id` they send has any effect.
pub fn expect_no_body(req: &Request) -> Result<(), ApiError> {
    let bytes: &[u8] = req.body().as_ref();
    let text = std::str::from_utf8(bytes).map(str::trim);
    match text {
        Ok("") | Ok("{}") => Ok(()),
        _ => Err(ApiError::bad_request(
            "unexpected_body",
            "this route takes no request body; the caller is identified by the token",
        )),
    }
}

/// The request's token: the client's `Idempotency-Key` if it sent one, else a fresh one.
pub fn write_token(req: &Request) -> Result<WriteToken, ApiError> {
    let mut keys = req.headers().get_all("idempotency-key").iter();
    let bad = |why: String| ApiError::bad_request("invalid_idempotency_key", why);
    match (keys.next(), keys.next()) {
        (None, _) => Ok(WriteToken::random()),
        (Some(_), Some(_)) => Err(bad("Idempotency-Key may be given only once".into())),
        (Some(v), None) => {
            let key = v.to_str().map_err(|_| bad(BadKey.to_string()))?;
            WriteToken::from_key(key).map_err(|e| bad(e.to_string()))
        }
    }
}

/// The one value of a query parameter; a repeated parameter is ambiguous and rejected.
pub fn query_param<'a>(req: &'a Request, name: &str) -> Result<Option<&'a str>, ApiError> {
    let Some(params) = req.query_string_parameters_ref() else {
        return Ok(None);
    };
    match params.all(name).as_deref() {
        None | Some([]) => Ok(None),
        Some([one]) => Ok(Some(one)),
        Some(_) => Err(ApiError::bad_request(
            "invalid_query",
            format!("{name} may be given only once"),
        )),
    }
}

pub fn limit(req: &Request) -> Result<usize, ApiError> {
    let Some(raw) = query_param(req, "limit")? else {
        return Ok(DEFAULT_LIMIT);
    };
    match raw.parse::<usize>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) && raw.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(ApiError::bad_request(
            "invalid_limit",
            format!("limit must be an integer from 1 to {MAX_LIMIT}"),
        )),
    }
}

/// A summary's `since`: the creation time of the oldest post it names (RFC 3339), if given.
pub fn summary_since(req: &Request) -> Result<Option<DateTime<Utc>>, ApiError> {
    let Some(raw) = query_param(req, "since")? else {
        return Ok(None);
    };
    likes_core::time::parse_ts(raw).map(Some).ok_or_else(|| {
        ApiError::bad_request(
            "invalid_since",
            "since must be an RFC 3339 time, e.g. 2026-12-03T10:00:00Z",
        )
    })
}

/// `post_ids=a,b,c`: 1 to 100 post ids; duplicates folded, first occurrence kept. The value is
/// percent-decoded once, as every query value, then split on commas: an id cannot hold a comma,
/// so `a%2Cb` (what `URLSearchParams` and `urlencode` send for `a,b`) means the same two ids.
pub fn summary_ids(req: &Request) -> Result<Vec<PostId>, ApiError> {
    let raw = query_param(req, "post_ids")?.unwrap_or("");
    if raw.is_empty() {
        return Err(ApiError::bad_request(
            "invalid_post_ids",
            "post_ids must list 1 to 100 post ids, comma-separated",
        ));
    }
    let parts: Vec<&str> = raw.split(',').collect();
    if parts.len() > MAX_SUMMARY_IDS {
        return Err(ApiError::bad_request(
            "invalid_post_ids",
            format!(
                "post_ids lists {} ids; at most {MAX_SUMMARY_IDS} are allowed",
                parts.len()
            ),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    let mut ids = Vec::with_capacity(parts.len());
    for part in parts {
        let id = PostId::parse_field("post_ids", part)?;
        if seen.insert(id.clone()) {
            ids.push(id);
        }
    }
    Ok(ids)
}
