//! The likes HTTP API: API Gateway HTTP API (payload v2) events in, JSON responses out.
//!
//! [`App::handle`] is the whole request path, written against the store traits so that it can be
//! driven by a constructed event in tests and by the local API Gateway stand-in.

pub mod routes;

use http::{header, HeaderValue, Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::{Body, Request, RequestExt, Response};
use likes_core::time::now_ts;
use likes_core::{ApiError, CountsStore, LikesStore, PostId, StoreError, UserId};
use serde::Serialize;
use serde_json::json;

use crate::routes::{route, Route};

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

/// JSON logs for CloudWatch; level from `RUST_LOG` (default `info`).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .without_time()
        .init();
}
