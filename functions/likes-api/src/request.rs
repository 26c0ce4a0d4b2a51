//! What a request says, read and validated: its id, and the query parameters and body of each
//! route. Who is calling is `identity`'s.

use chrono::{DateTime, Utc};
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use std::collections::HashSet;
use std::hash::Hash;

use likes_core::ids::IdError;
use likes_core::write_token::BadKey;
use likes_core::{PostId, UserId, WriteToken};

use crate::error::ApiError;

/// Page size bounds for the listing routes.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;
/// Most post ids one summary request may name.
pub const MAX_SUMMARY_IDS: usize = 100;
/// Most user ids one `among` may name: one batch of point reads.
pub const MAX_AMONG_IDS: usize = 100;

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
    id_list(
        raw,
        "post_ids",
        "invalid_post_ids",
        MAX_SUMMARY_IDS,
        |part| PostId::parse_field("post_ids", part),
    )
}

/// `among=u1,u2,…` of "who liked P": 1 to 100 user ids (read as `post_ids` is), if given.
pub fn among_ids(req: &Request) -> Result<Option<Vec<UserId>>, ApiError> {
    let Some(raw) = query_param(req, "among")? else {
        return Ok(None);
    };
    if query_param(req, "cursor")?.is_some() || query_param(req, "limit")?.is_some() {
        return Err(ApiError::bad_request(
            "invalid_among",
            "among answers in one page: it takes no cursor or limit",
        ));
    }
    id_list(raw, "among", "invalid_among", MAX_AMONG_IDS, |part| {
        UserId::parse_field("among", part)
    })
    .map(Some)
}

/// A comma-separated list of 1 to `most` ids, duplicates folded (first occurrence kept).
fn id_list<T: Clone + Eq + Hash>(
    raw: &str,
    name: &str,
    code: &'static str,
    most: usize,
    parse: impl Fn(&str) -> Result<T, IdError>,
) -> Result<Vec<T>, ApiError> {
    if raw.is_empty() {
        return Err(ApiError::bad_request(
            code,
            format!("{name} must list 1 to {most} ids, comma-separated"),
        ));
    }
    let parts: Vec<&str> = raw.split(',').collect();
    if parts.len() > most {
        return Err(ApiError::bad_request(
            code,
            format!(
                "{name} lists {} ids; at most {most} are allowed",
                parts.len()
            ),
        ));
    }
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(parts.len());
    for part in parts {
        let id = parse(part)?;
        if seen.insert(id.clone()) {
            ids.push(id);
        }
    }
    Ok(ids)
}
