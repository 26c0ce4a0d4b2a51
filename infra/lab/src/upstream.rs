//! The emulator behind the lab, and a client to it: the calls it forwards, and the lab's own
//! (the replicas' reads and writes, signed as the admin identity).

use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

type Body = Full<Bytes>;

/// The emulator, and a client to it.
#[derive(Clone)]
pub(crate) struct Upstream {
    base: String,
    client: Client<HttpConnector, Body>,
}

/// An answer from the emulator.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Upstream {
    pub(crate) fn new(base: &str) -> Self {
        Upstream {
            base: base.trim_end_matches('/').to_owned(),
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    pub(crate) async fn send(
        &self,
        method: &http::Method,
        path: &str,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Result<Answer, String> {
        let mut req = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        // The body may have been rewritten (a redirected read): its length is hyper's to set.
        for (k, v) in headers {
            let hop = [
                http::header::HOST,
                http::header::CONNECTION,
                http::header::CONTENT_LENGTH,
                http::header::TRANSFER_ENCODING,
            ];
            if !hop.contains(k) {
                req = req.header(k, v);
            }
        }
        let req = req.body(Full::new(body)).map_err(|e| e.to_string())?;
        let res = self.client.request(req).await.map_err(|e| e.to_string())?;
        let (parts, body) = res.into_parts();
        let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// One DynamoDB call of the lab's own (as the admin identity): its JSON answer.
    pub(crate) async fn dynamo(&self, operation: &str, body: Value) -> Result<Value, String> {
        let mut headers = HeaderMap::new();
        let target = format!("DynamoDB_20120810.{operation}");
        headers.insert("x-amz-target", target.parse().map_err(|_| "target")?);
        headers.insert(
            "content-type",
            "application/x-amz-json-1.0".parse().map_err(|_| "type")?,
        );
        let auth = "AWS4-HMAC-SHA256 Credential=local/20261203/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0";
        headers.insert("authorization", auth.parse().map_err(|_| "auth")?);
        let a = self
            .send(
                &http::Method::POST,
                "/",
                &headers,
                Bytes::from(body.to_string()),
            )
            .await?;
        let v: Value = serde_json::from_slice(&a.body).unwrap_or(Value::Null);
        if a.status.is_success() {
            Ok(v)
        } else {
            Err(format!("{operation}: {} {v}", a.status))
        }
    }
}
