//! The likes HTTP API: API Gateway HTTP API (payload v2) events in, JSON responses out.
//!
//! [`App::handle`] is the whole request path, written against the store traits so that it can be
//! driven by a constructed event in tests and by the local API Gateway stand-in.

pub mod cursor;
pub mod lambda;
pub mod routes;

use futures::stream::{self, StreamExt, TryStreamExt};
use http::{header, HeaderValue, Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use likes_core::time::now_ts;
use likes_core::{ApiError, CountsStore, LikesStore, PostId, StoreError, UserId};
use serde::Serialize;
use serde_json::json;
use serde_json::Value;

use crate::routes::{route, Route};

/// Page size bounds for the listing routes.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 100;
/// Most post ids one summary request may name.
pub const MAX_SUMMARY_IDS: usize = 100;
/// Count queries a summary runs at once.
const SUMMARY_CONCURRENCY: usize = 16;

pub struct App<L, C> {
    pub likes: L,
    pub counts: C,
}

/// Identity and correlation taken from the API Gateway request context, never from the
/// request's own headers, query or body.
struct Caller {
    user: UserId,
}

fn request_id(req: &Request) -> String {
    if let Some(RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref() {
        if let Some(id) = &ctx.request_id {
            return id.clone();
        }
    }
    req.lambda_context_ref()
        .map(|c| c.request_id.clone())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The `sub` claim the JWT authorizer verified. Nothing else identifies a caller.
fn caller(req: &Request) -> Result<Caller, ApiError> {
    let sub = match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => ctx
            .authorizer
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .and_then(|jwt| jwt.claims.get("sub")),
        _ => None,
    };
    let sub = sub.ok_or_else(|| ApiError::unauthorized("no verified identity on the request"))?;
    let user = UserId::parse(sub)
        .map_err(|_| ApiError::unauthorized("the token's sub claim is not a user id (UUID)"))?;
    Ok(Caller { user })
}

/// The write routes take no body. Rejecting one, rather than ignoring it, keeps clients from
/// believing that a `user_id` they send has any effect.
fn expect_no_body(req: &Request) -> Result<(), ApiError> {
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

/// The one value of a query parameter; a repeated parameter is ambiguous and rejected.
fn query_param<'a>(req: &'a Request, name: &str) -> Result<Option<&'a str>, ApiError> {
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

fn limit(req: &Request) -> Result<usize, ApiError> {
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

/// `post_ids=a,b,c`: 1 to 100 canonical UUIDs; duplicates folded, first occurrence kept.
fn summary_ids(req: &Request) -> Result<Vec<PostId>, ApiError> {
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
        if seen.insert(id) {
            ids.push(id);
        }
    }
    Ok(ids)
}

/// Counts are eventually consistent sums of per-bucket rows. A negative sum means the rows
/// drifted (the aggregator has already logged and alarmed it); clients see 0, not a negative.
fn public_count(sum: i64) -> i64 {
    sum.max(0)
}

#[derive(Serialize)]
struct LikeState {
    post_id: PostId,
    user_id: UserId,
    liked: bool,
    changed: bool,
}

pub fn json_response(status: u16, body: &serde_json::Value) -> Response<Body> {
    let mut resp = Response::new(Body::Text(body.to_string()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

pub fn error_response(err: &ApiError) -> Response<Body> {
    let mut resp = json_response(err.status, &err.body());
    if let Some(secs) = err.retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(allow) = err.allow {
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    resp
}

fn ok<T: Serialize>(value: &T) -> Result<Response<Body>, StoreError> {
    let body = serde_json::to_value(value)
        .map_err(|e| StoreError::Internal(format!("response serialization: {e}")))?;
    Ok(json_response(200, &body))
}

impl<L: LikesStore, C: CountsStore> App<L, C> {
    pub fn new(likes: L, counts: C) -> Self {
        Self { likes, counts }
    }

    /// Handles one request. Never panics and never fails: every outcome is a response.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let request_id = request_id(&req);
        match self.dispatch(&req).await {
            Ok(resp) => resp,
            Err(Failure::Api(err)) => error_response(&err),
            Err(Failure::Store(StoreError::Unavailable(detail))) => {
                tracing::warn!(%request_id, %detail, "DynamoDB unavailable; answering 503");
                error_response(&ApiError::unavailable())
            }
            Err(Failure::Store(StoreError::Internal(detail))) => {
                tracing::error!(%request_id, %detail, "store error; answering 500");
                error_response(&ApiError::internal(&request_id))
            }
        }
    }

    async fn dispatch(&self, req: &Request) -> Result<Response<Body>, Failure> {
        let method: &Method = req.method();
        let path = req.raw_http_path();
        let routed = route(method, path);
        // 404 and 405 say nothing about the caller's data; a bad id is only reported to a
        // caller who proved who they are.
        if let Err(e) = &routed {
            if e.status != 400 {
                return Err(e.clone().into());
            }
        }
        let caller = caller(req)?;
        let route = routed?;
        match route {
            Route::Like(post) => {
                expect_no_body(req)?;
                let changed = self.likes.like(post, caller.user, &now_ts()).await?;
                Ok(ok(&LikeState {
                    post_id: post,
                    user_id: caller.user,
                    liked: true,
                    changed,
                })?)
            }
            Route::Unlike(post) => {
                expect_no_body(req)?;
                let changed = self.likes.unlike(post, caller.user).await?;
                Ok(ok(&LikeState {
                    post_id: post,
                    user_id: caller.user,
                    liked: false,
                    changed,
                })?)
            }
            Route::GetLike(post) => {
                let liked_at = self.likes.liked_at(post, caller.user).await?;
                Ok(json_response(
                    200,
                    &json!({
                        "post_id": post,
                        "user_id": caller.user,
                        "liked": liked_at.is_some(),
                        "liked_at": liked_at,
                    }),
                ))
            }
            Route::Count(post) => {
                let n = self.counts.post_count(post).await?;
                Ok(json_response(
                    200,
                    &json!({ "post_id": post, "like_count": public_count(n) }),
                ))
            }
            Route::MyLikes => {
                let limit = limit(req)?;
                let after = query_param(req, "cursor")?
                    .map(|c| cursor::decode_mine(c, caller.user))
                    .transpose()?;
                let page = self.likes.likes_of_user(caller.user, limit, after).await?;
                let next = match (page.more, page.items.last()) {
                    (true, Some(last)) => Some(cursor::encode_mine(caller.user, last)),
                    _ => None,
                };
                let items: Vec<Value> = page
                    .items
                    .iter()
                    .map(|i| json!({ "post_id": i.post_bucket.post, "liked_at": i.liked_at }))
                    .collect();
                Ok(json_response(
                    200,
                    &json!({ "items": items, "next_cursor": next }),
                ))
            }
            Route::Likers(post) => {
                let limit = limit(req)?;
                let after = query_param(req, "cursor")?
                    .map(|c| cursor::decode_likers(c, post))
                    .transpose()?;
                let page = self.likes.likers_of_post(post, limit, after).await?;
                let next = match (page.more, page.items.last()) {
                    (true, Some(last)) => Some(cursor::encode_likers(post, last)),
                    _ => None,
                };
                let items: Vec<Value> = page
                    .items
                    .iter()
                    .map(|i| json!({ "user_id": i.user_id, "liked_at": i.liked_at }))
                    .collect();
                Ok(json_response(
                    200,
                    &json!({ "items": items, "next_cursor": next }),
                ))
            }
            Route::Summary => {
                let ids = summary_ids(req)?;
                let counts = stream::iter(ids.iter().copied())
                    .map(|post| self.counts.post_count(post))
                    .buffered(SUMMARY_CONCURRENCY)
                    .try_collect::<Vec<i64>>();
                let liked = self.likes.liked_among(caller.user, &ids);
                let (counts, liked) = futures::try_join!(counts, liked)?;
                let items: Vec<Value> = ids
                    .iter()
                    .zip(counts)
                    .map(|(post, n)| {
                        json!({
                            "post_id": post,
                            "like_count": public_count(n),
                            "liked_by_me": liked.contains(post),
                        })
                    })
                    .collect();
                Ok(json_response(200, &json!({ "items": items })))
            }
        }
    }
}

enum Failure {
    Api(ApiError),
    Store(StoreError),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Store(e)
    }
}
