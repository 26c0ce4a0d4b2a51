//! A JWKS endpoint on 127.0.0.1 that counts the requests it answers; what it serves can be
//! changed while it runs (a key rotation, an outage). It can also serve an OpenID discovery
//! document at `/.well-known/openid-configuration`, counted apart.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

struct State {
    /// What the next request gets: a status and a body.
    answer: Mutex<(StatusCode, String)>,
    /// Requests answered (or, when `hang` is set, received).
    hits: AtomicUsize,
    /// Never answer (for the fetch timeout).
    hang: std::sync::atomic::AtomicBool,
    /// The discovery document's answer (404 until one is set), and its requests.
    discovery: Mutex<(StatusCode, String)>,
    discovery_hits: AtomicUsize,
}

/// Where the discovery document is served.
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";

/// The server; stops when dropped or [`JwksServer::stop`]ped.
pub struct JwksServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl JwksServer {
    /// Serves `body` (a JWK set) with 200 at `/.well-known/jwks.json` (at any path, in fact).
    pub async fn start(body: String) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            answer: Mutex::new((StatusCode::OK, body)),
            hits: AtomicUsize::new(0),
            hang: Default::default(),
            discovery: Mutex::new((StatusCode::NOT_FOUND, "{}".into())),
            discovery_hits: AtomicUsize::new(0),
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: http::Request<_>| {
                        let state = state.clone();
                        let discovery = request.uri().path() == DISCOVERY_PATH;
                        async move { Ok::<_, Infallible>(state.respond(discovery).await) }
                    });
                    // A connection's failure is the client's business (it sees it).
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { addr, state, task })
    }

    /// The JWKS URL (plain http, loopback).
    pub fn url(&self) -> String {
        format!("http://{}/.well-known/jwks.json", self.addr)
    }

    /// Requests received so far (but for the discovery document's).
    pub fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
    }

    /// The issuer's URL whose discovery document this server serves (plain http, loopback).
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serve a discovery document naming `issuer` and `jwks_uri` from now on.
    pub fn discover(&self, issuer: &str, jwks_uri: &str) {
        let document = serde_json::json!({
            "issuer": issuer,
            "jwks_uri": jwks_uri,
            "authorization_endpoint": format!("{issuer}/auth"),
            "id_token_signing_alg_values_supported": ["RS256", "ES256"],
        });
        self.answer_discovery(StatusCode::OK, document.to_string());
    }

    /// Answer the discovery document's requests with `status` and `body` from now on.
    pub fn answer_discovery(&self, status: StatusCode, body: String) {
        *self
            .state
            .discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = (status, body);
    }

    /// Requests for the discovery document so far.
    pub fn discovery_hits(&self) -> usize {
        self.state.discovery_hits.load(Ordering::SeqCst)
    }

    /// Serve `body` from now on (200).
    pub fn serve(&self, body: String) {
        self.answer(StatusCode::OK, body);
    }

    /// Answer every request with `status` and `body` from now on.
    pub fn answer(&self, status: StatusCode, body: String) {
        *self
            .state
            .answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = (status, body);
    }

    /// Accept requests but never answer them.
    pub fn hang(&self) {
        self.state.hang.store(true, Ordering::SeqCst);
    }

    /// Stops listening; returns once the port refuses connections.
    pub async fn stop(mut self) {
        self.task.abort();
        // The listener is dropped with the task: wait for that, not for luck.
        let _ = (&mut self.task).await;
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl State {
    async fn respond(&self, discovery: bool) -> Response<Full<Bytes>> {
        let (hits, answer) = if discovery {
            (&self.discovery_hits, &self.discovery)
        } else {
            (&self.hits, &self.answer)
        };
        hits.fetch_add(1, Ordering::SeqCst);
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let (status, body) = answer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        response
    }
}
