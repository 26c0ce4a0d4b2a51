//! The Lambda entry point: an API Gateway HTTP API (payload 2.0) event in, its response out.
//!
//! This does what `lambda_http::run` does, with one difference that matters: lambda_http turns
//! the event into an `http::Request` with an `expect`, and a query string holding characters a
//! URI may not contain (`{`, `|`, a raw space or non-ASCII byte: API Gateway passes them on)
//! panics there, before any handler runs. Here that panic is caught and becomes the API's JSON
//! 400, instead of a failed invocation that API Gateway reports as a bare 500.

use std::panic::{catch_unwind, AssertUnwindSafe};

use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Context, RequestExt, Response};
use likes_core::{CountsRead, ReactionsStore};

use crate::error::ApiError;
use crate::metrics::{outcome, request_lines, route_label, RequestLine};
use crate::{error_response, App};

/// Handles one invocation. Never fails: every outcome is a response.
pub async fn invoke<L: ReactionsStore, C: CountsRead>(
    app: &App<L, C>,
    event: LambdaRequest,
    context: Context,
) -> ApiGatewayV2httpResponse {
    let started = std::time::Instant::now();
    let request_id = context.request_id.clone();
    let converted = catch_unwind(AssertUnwindSafe(|| http::Request::<Body>::from(event)));
    let (route, method) = match &converted {
        Ok(r) => (
            route_label(r.method(), r.raw_http_path()),
            r.method().to_string(),
        ),
        Err(_) => ("invalid", String::new()),
    };
    let response = match converted {
        Ok(request) => app.handle(request.with_lambda_context(context)).await,
        Err(_) => {
            tracing::warn!(
                request_id = %context.request_id,
                "request could not be converted (invalid characters in path or query)"
            );
            error_response(&ApiError::bad_request(
                "invalid_request",
                "the request's path or query contains characters that are not allowed in a URI",
            ))
        }
    };
    let out = to_v2(response);
    let status = u16::try_from(out.status_code).unwrap_or(500);
    let body = out
        .body
        .as_ref()
        .and_then(|b| std::str::from_utf8(b.as_ref()).ok());
    let line = RequestLine {
        function: &app.function_name,
        route,
        method: &method,
        status,
        outcome: outcome(status, body),
        latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        request_id: &request_id,
    };
    if request_lines() {
        println!("{}", line.to_line());
    }
    out
}

fn to_v2(response: Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.headers = parts.headers;
    out.is_base64_encoded = matches!(body, Body::Binary(_));
    out.body = match body {
        Body::Empty => None,
        other => Some(other),
    };
    out
}
