//! API Gateway (HTTP API, payload 2.0), played locally: each HTTP request becomes the event API
//! Gateway would send after its JWT authorizer, and goes through the same `likes-api` handler.
//! With the template's CORS configuration on (the demo page's origin is always allowed), as
//! `cors` describes: preflights answered here, and an unauthorized `OPTIONS` route.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use aws_lambda_events::apigw::ApiGatewayV2httpResponse;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use lambda_http::request::LambdaRequest;
use likes_api::lambda::invoke;
use likes_api::ApiError;
use likes_api::{error_response, App};
use likes_core::{CountsRead, ReactionsStore};
use likes_sim::apigw::ApiEvent;
use serde_json::json;
use tokio::net::TcpListener;

use crate::cors::{Check, Cors};
use crate::jwt;

/// API Gateway's own payload limit.
const MAX_BODY: usize = 10 * 1024 * 1024;

pub struct Gateway<L, C> {
    pub app: App<L, C>,
    /// API Gateway's JWT authorizer, played locally; `None` under `LIKES_AUTH=jwt`, where
    /// nothing stands in front of the function (a function URL) and the app verifies tokens.
    pub auth: Option<jwt::Authorizer>,
    /// Which origins' pages may call the API (the template's `CorsConfiguration`).
    pub cors: Cors,
    /// Set once tables exist and the stream mapping runs: `/healthz` answers 200 from then on.
    pub ready: Arc<AtomicBool>,
    /// What the local mapping did and the faults it injected: `GET /_local/stats` (local only).
    pub stats: Arc<std::sync::Mutex<serde_json::Value>>,
    /// The like events the local bus delivered: `GET /_local/events` (local only).
    pub events: Arc<crate::events::EventFeed>,
    /// The lab in front of the emulator: `GET /_local/lab`, its endpoint and every IAM decision
    /// it made (local only).
    pub lab: likes_lab::Lab,
}

fn to_hyper(resp: lambda_http::Response<lambda_http::Body>) -> Response<Full<Bytes>> {
    let (parts, body) = resp.into_parts();
    let bytes = Bytes::copy_from_slice(body.as_ref());
    Response::from_parts(parts, Full::new(bytes))
}

fn from_v2(resp: ApiGatewayV2httpResponse) -> Response<Full<Bytes>> {
    let body = resp
        .body
        .as_ref()
        .map(|b| Bytes::copy_from_slice(b.as_ref()))
        .unwrap_or_default();
    let mut out = Response::new(Full::new(body));
    *out.status_mut() = u16::try_from(resp.status_code)
        .ok()
        .and_then(|s| http::StatusCode::from_u16(s).ok())
        .unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    *out.headers_mut() = resp.headers;
    out
}

/// The verified claims as API Gateway passes them: every value a string.
fn claim_map(claims: jwt::Verified) -> serde_json::Map<String, serde_json::Value> {
    let mut map = serde_json::Map::new();
    map.insert("sub".into(), claims.sub.into());
    map.insert("iss".into(), claims.iss.into());
    map.insert("aud".into(), claims.aud.into());
    map.insert("exp".into(), claims.exp.to_string().into());
    if let Some(iat) = claims.iat {
        map.insert("iat".into(), iat.to_string().into());
    }
    for (name, value) in claims.other {
        map.entry(name).or_insert(value.into());
    }
    map
}

fn json(status: u16, value: serde_json::Value) -> Response<Full<Bytes>> {
    to_hyper(likes_api::json_response(status, &value))
}

impl<L: ReactionsStore + 'static, C: CountsRead + 'static> Gateway<L, C> {
    async fn serve_one(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let check = self.cors.check(req.method(), req.headers());
        // API Gateway answers a preflight itself, before any authorizer or function.
        if let Check::Preflight(allow_origin) = &check {
            let mut resp = Response::new(Full::new(Bytes::new()));
            *resp.status_mut() = http::StatusCode::NO_CONTENT;
            *resp.headers_mut() = self.cors.preflight_headers(allow_origin.as_ref());
            return resp;
        }
        let mut resp = self.answer(req).await;
        self.cors.decorate(&check, resp.headers_mut());
        resp
    }

    async fn answer(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let (parts, body) = req.into_parts();
        let path = parts.uri.path().to_owned();
        if path == "/_local/stats" {
            let stats = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
            return json(200, stats);
        }
        if path == "/_local/events" {
            return json(200, json!({ "events": self.events.snapshot() }));
        }
        if path == "/_local/lab" {
            return json(200, crate::lab::report(&self.lab));
        }
        if path == "/_local/lab/faults" && parts.method == http::Method::DELETE {
            self.lab.clear_faults();
            return json(200, json!({"armed": false}));
        }
        if path == "/_local/lab/faults" && parts.method == http::Method::POST {
            let raw = Limited::new(body, 64 * 1024).collect().await;
            let rule = raw
                .map_err(|e| e.to_string())
                .and_then(|b| crate::lab::fault_rule(&b.to_bytes()));
            return match rule {
                Ok(rule) => {
                    self.lab.add_fault(rule);
                    json(200, json!({"armed": true}))
                }
                Err(why) => json(400, json!({"error": {"code": "bad_fault", "message": why}})),
            };
        }
        if path == "/healthz" {
            return if self.ready.load(Ordering::SeqCst) {
                json(200, json!({"status": "ok"}))
            } else {
                json(503, json!({"status": "starting"}))
            };
        }
        let authorization = parts
            .headers
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        // The authorizer rejects before the function runs, as API Gateway does; `OPTIONS`
        // takes the template's route without one.
        let claims = match &self.auth {
            Some(auth) if parts.method != http::Method::OPTIONS => {
                match auth.verify(authorization) {
                    Ok(c) => Some(c),
                    Err(e) => {
                        return to_hyper(error_response(&ApiError::unauthorized(e.to_string())))
                    }
                }
            }
            _ => None,
        };
        let body = match Limited::new(body, MAX_BODY).collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => {
                return to_hyper(error_response(&ApiError::bad_request(
                    "body_too_large",
                    "request body is larger than 10 MiB",
                )))
            }
        };
        let mut event = ApiEvent::new(parts.method.as_str(), &path)
            .query(parts.uri.query().unwrap_or(""))
            .domain("127.0.0.1");
        if let Some(claims) = claims {
            event = event.claims(claim_map(claims));
        }
        for (name, value) in &parts.headers {
            if let Ok(v) = value.to_str() {
                event = event.header(name.as_str(), v);
            }
        }
        if !body.is_empty() {
            event = event.body(body.to_vec());
        }
        let event = event.to_json();
        // Through the same entry point as on Lambda.
        match serde_json::from_value::<LambdaRequest>(event) {
            Ok(req) => from_v2(invoke(&self.app, req, lambda_http::Context::default()).await),
            Err(e) => to_hyper(error_response(&ApiError::bad_request(
                "invalid_request",
                format!("request could not be turned into an API Gateway event: {e}"),
            ))),
        }
    }
}

/// Serves until the process ends. One log line per request.
pub async fn serve<L, C>(listener: TcpListener, gateway: Arc<Gateway<L, C>>)
where
    L: ReactionsStore + 'static,
    C: CountsRead + 'static,
{
    loop {
        let (stream, peer): (_, SocketAddr) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let gateway = Arc::clone(&gateway);
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let gateway = Arc::clone(&gateway);
                async move {
                    let started = Instant::now();
                    let (method, path) = (req.method().clone(), req.uri().path().to_owned());
                    let resp = gateway.serve_one(req).await;
                    tracing::info!(
                        "{method} {path} {} {:.1}ms",
                        resp.status().as_u16(),
                        started.elapsed().as_secs_f64() * 1000.0
                    );
                    Ok::<_, Infallible>(resp)
                }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
}
