//! The proxy itself: each call authorized, maybe struck by a fault, maybe redirected to a
//! lagging replica, forwarded to the emulator, and its answer passed back (or lost).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use tokio::net::TcpListener;

use crate::call::{Call, Service, ACCOUNT};
use crate::faults::{Fault, Faults};
use crate::policy::{Decision, Policies};
use crate::replica::Replicas;
use crate::upstream::Upstream;
use crate::{Config, Decided, LabError, Usage};

type Body = Full<Bytes>;

/// What every connection's service shares.
pub(crate) struct Shared {
    pub(crate) upstream: Upstream,
    pub(crate) policies: Option<Policies>,
    pub(crate) usage: Mutex<Usage>,
    pub(crate) faults: Faults,
    pub(crate) replicas: Replicas,
}

pub(crate) async fn serve(config: Config) -> Result<(Arc<Shared>, String), LabError> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(LabError::Listen)?;
    let addr: SocketAddr = listener.local_addr().map_err(LabError::Listen)?;
    let upstream = Upstream::new(&config.upstream);
    let shared = Arc::new(Shared {
        replicas: Replicas::new(upstream.clone(), config.read_lag),
        upstream,
        policies: config.policies,
        usage: Mutex::default(),
        faults: Faults::default(),
    });
    let serving = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let shared = Arc::clone(&serving);
            tokio::spawn(connection(stream, shared));
        }
    });
    Ok((shared, format!("http://{addr}")))
}

/// Serves one client connection. A second handle on the socket lets a fault reset it: with
/// `SO_LINGER` 0 its close sends a reset, not an orderly end.
async fn connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let std_stream = match stream.into_std() {
        Ok(s) => s,
        Err(_) => return,
    };
    let handle = Arc::new(Mutex::new(std_stream.try_clone().ok()));
    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
        return;
    };
    let service = service_fn(move |req| {
        let (shared, handle) = (Arc::clone(&shared), Arc::clone(&handle));
        async move { handle_call(req, &shared, &handle).await }
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

#[derive(Debug, thiserror::Error)]
#[error("the lab cut the connection ({0})")]
struct Cut(&'static str);

fn reset(handle: &Mutex<Option<std::net::TcpStream>>) {
    if let Ok(mut h) = handle.lock() {
        if let Some(s) = h.take() {
            let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
            let _ = s.shutdown(std::net::Shutdown::Read);
        }
    }
}

fn respond(status: StatusCode, headers: &HeaderMap, body: Bytes) -> Response<Body> {
    let mut res = Response::new(Full::new(body));
    *res.status_mut() = status;
    for (k, v) in headers {
        if k != http::header::CONTENT_LENGTH
            && k != http::header::TRANSFER_ENCODING
            && k != http::header::CONNECTION
        {
            res.headers_mut().insert(k, v.clone());
        }
    }
    res
}

/// What IAM answers a call its role does not allow.
fn access_denied(call: &Call, action: &str, resource: &str, why: &str) -> Response<Body> {
    let message = format!(
        "User: arn:aws:sts::{ACCOUNT}:assumed-role/{}/lab is not authorized to perform: {action} on resource: {resource} because {why}",
        call.identity
    );
    let (kind, query_code) = match call.service {
        Service::Sqs => (
            "com.amazonaws.sqs#AccessDenied",
            Some("AccessDenied;Sender"),
        ),
        Service::Dynamo | Service::Streams => (
            "com.amazonaws.dynamodb.v20120810#AccessDeniedException",
            None,
        ),
        Service::Events => ("AccessDeniedException", None),
    };
    tracing::warn!(identity = %call.identity, action, resource, why, "the lab denied a call");
    let mut res = Response::new(Full::new(Bytes::from(
        json!({"__type": kind, "message": message}).to_string(),
    )));
    *res.status_mut() = StatusCode::BAD_REQUEST;
    let h = res.headers_mut();
    h.insert(
        "content-type",
        http::HeaderValue::from_static("application/x-amz-json-1.0"),
    );
    h.insert(
        "x-amzn-errortype",
        http::HeaderValue::from_static("AccessDeniedException"),
    );
    if let Some(code) = query_code {
        h.insert("x-amzn-query-error", http::HeaderValue::from_static(code));
    }
    res
}

/// Every permission the call needs, decided and recorded; the first refusal, if any.
fn authorize(shared: &Shared, call: &Call) -> Option<Response<Body>> {
    let policies = shared.policies.as_ref()?;
    let mut refused = None;
    for (action, resource) in call.permissions() {
        let decision = policies.decide(&call.identity, &action, &resource);
        let by = match &decision {
            Decision::Allowed { sid, resource } => Ok((sid.clone(), resource.clone())),
            Decision::Denied { why } => Err(why.clone()),
        };
        if let (Err(why), None) = (&by, &refused) {
            refused = Some(access_denied(call, &action, &resource, why));
        }
        if let Ok(mut u) = shared.usage.lock() {
            u.decided.insert(Decided {
                identity: call.identity.clone(),
                action,
                resource,
                by,
            });
        }
    }
    refused
}

async fn handle_call(
    req: Request<Incoming>,
    shared: &Shared,
    handle: &Mutex<Option<std::net::TcpStream>>,
) -> Result<Response<Body>, Cut> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map_err(|_| Cut("the request's body"))?
        .to_bytes();
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
    let call = Call::parse(header("authorization"), header("x-amz-target"), &body);
    let Some(call) = call else {
        // Not a call the lab knows (the emulator's own API, a health check): passed through.
        return match shared
            .upstream
            .send(&parts.method, &path, &parts.headers, body)
            .await
        {
            Ok(a) => Ok(respond(a.status, &a.headers, a.body)),
            Err(_) => Err(Cut("the emulator is unreachable")),
        };
    };
    if let Some(refusal) = authorize(shared, &call) {
        return Ok(refusal);
    }
    let fault = shared.faults.strike(&call);
    if fault == Some(Fault::Refuse) {
        reset(handle);
        return Err(Cut("refused"));
    }
    if let Some(Fault::Hold { after }) = fault {
        // Applied later, by a task of its own: the client's connection stays unanswered.
        let (up, replicas) = (shared.upstream.clone(), shared.replicas.clone());
        let (method, headers) = (parts.method.clone(), parts.headers.clone());
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Ok(a) = up.send(&method, &path, &headers, body).await {
                if a.status.is_success() {
                    replicas.captured(&call).await;
                }
            }
        });
        tokio::time::sleep(after + Duration::from_secs(1)).await;
        reset(handle);
        return Err(Cut("held"));
    }
    if let Some(Fault::Delay { by }) = fault {
        tokio::time::sleep(by).await;
    }
    shared.replicas.prepare(&call).await;
    let redirect = shared.replicas.redirect(&call);
    let sent = match &redirect {
        Some(r) => Bytes::from(r.body.to_string()),
        None => body,
    };
    // The emulator unreachable: the client's connection is reset, as one to a service that
    // went away is (the call did not apply).
    let Ok(answer) = shared
        .upstream
        .send(&parts.method, &path, &parts.headers, sent)
        .await
    else {
        reset(handle);
        return Err(Cut("the emulator is unreachable"));
    };
    if answer.status.is_success() {
        shared.replicas.captured(&call).await;
    }
    let body = match (&redirect, call.operation.as_str()) {
        (Some(r), _) => r.answer(&answer.body),
        (None, "ListTables") => Replicas::hide(&answer.body),
        _ => answer.body,
    };
    match fault {
        Some(Fault::Reset) => {
            reset(handle);
            Err(Cut("reset after applying"))
        }
        // hyper ends the connection in order, without an answer.
        Some(Fault::Close) => Err(Cut("closed after applying")),
        Some(Fault::Timeout) => {
            // Longer than any client's attempt timeout: it gives up first.
            tokio::time::sleep(Duration::from_secs(30)).await;
            reset(handle);
            Err(Cut("timed out after applying"))
        }
        Some(Fault::ServerError) => {
            let body = json!({"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "message": "the lab lost the answer"});
            let mut h = HeaderMap::new();
            h.insert(
                "content-type",
                http::HeaderValue::from_static("application/x-amz-json-1.0"),
            );
            Ok(respond(
                StatusCode::INTERNAL_SERVER_ERROR,
                &h,
                Bytes::from(body.to_string()),
            ))
        }
        _ => Ok(respond(answer.status, &answer.headers, body)),
    }
}
