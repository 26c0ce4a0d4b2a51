//! A JWKS endpoint on 127.0.0.1 that counts the requests it answers; what it serves can be
//! changed while it runs (a key rotation, an outage).

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
}

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
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |_request| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(state.respond().await) }
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

    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.state.hits.load(Ordering::SeqCst)
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
    async fn respond(&self) -> Response<Full<Bytes>> {
        self.hits.fetch_add(1, Ordering::SeqCst);
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let (status, body) = self
            .answer
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
