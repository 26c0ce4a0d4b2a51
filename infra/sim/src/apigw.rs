//! API Gateway HTTP API (payload 2.0) events, built the way API Gateway builds them behind a
//! catch-all `ANY /{proxy+}` route with a JWT authorizer: the verified claims (as strings) in
//! `requestContext.authorizer.jwt.claims`, a non-UTF-8 body base64-encoded.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone)]
pub struct ApiEvent {
    method: String,
    raw_path: String,
    raw_query: String,
    headers: Map<String, Value>,
    claims: Option<Map<String, Value>>,
    body: Option<Vec<u8>>,
    request_id: String,
    source_ip: String,
    domain: String,
    time_epoch_ms: i64,
}

impl ApiEvent {
    pub fn new(method: &str, raw_path: &str) -> Self {
        Self {
            method: method.to_owned(),
            raw_path: raw_path.to_owned(),
            raw_query: String::new(),
            headers: Map::new(),
            claims: None,
            body: None,
            request_id: format!("req-{}", uuid::Uuid::new_v4()),
            source_ip: "127.0.0.1".to_owned(),
            domain: "api.example.com".to_owned(),
            time_epoch_ms: chrono::Utc::now().timestamp_millis(),
        }
    }

    /// The raw query string, as the client sent it (percent-encoded).
    pub fn query(mut self, raw_query: &str) -> Self {
        raw_query.clone_into(&mut self.raw_query);
        self
    }

    /// A verified token whose `sub` is `sub` (and a fixed issuer).
    pub fn caller(self, sub: &str) -> Self {
        let mut claims = Map::new();
        claims.insert("sub".into(), sub.into());
        claims.insert("iss".into(), "https://issuer.example".into());
        self.claims(claims)
    }

    /// The claims the authorizer verified, passed on as it passes them (string values).
    pub fn claims(mut self, claims: Map<String, Value>) -> Self {
        self.claims = Some(claims);
        self
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .insert(name.to_ascii_lowercase(), value.to_owned().into());
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self
    }

    pub fn request_id(mut self, id: &str) -> Self {
        id.clone_into(&mut self.request_id);
        self
    }

    pub fn domain(mut self, domain: &str) -> Self {
        domain.clone_into(&mut self.domain);
        self
    }

    pub fn request_id_value(&self) -> &str {
        &self.request_id
    }

    pub fn to_json(&self) -> Value {
        let (body, is_base64) = match &self.body {
            None => (Value::Null, false),
            Some(bytes) => match std::str::from_utf8(bytes) {
                Ok(text) => (text.into(), false),
                // What API Gateway does with a body that is not text.
                Err(_) => (STANDARD.encode(bytes).into(), true),
            },
        };
        let mut headers = self.headers.clone();
        headers
            .entry("host")
            .or_insert_with(|| self.domain.clone().into());
        let user_agent = headers.get("user-agent").cloned().unwrap_or_default();
        let authorizer = self
            .claims
            .as_ref()
            .map(|c| json!({ "jwt": { "claims": c, "scopes": null } }));
        let time = chrono::DateTime::from_timestamp_millis(self.time_epoch_ms)
            .unwrap_or_default()
            .format("%d/%b/%Y:%H:%M:%S +0000")
            .to_string();
        let prefix = self.domain.split('.').next().unwrap_or("api");
        json!({
            "version": "2.0",
            "routeKey": "ANY /{proxy+}",
            "rawPath": self.raw_path,
            "rawQueryString": self.raw_query,
            "headers": headers,
            "requestContext": {
                "accountId": "123456789012",
                "apiId": prefix,
                "authorizer": authorizer,
                "domainName": self.domain,
                "domainPrefix": prefix,
                "http": {
                    "method": self.method,
                    "path": self.raw_path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": self.source_ip,
                    "userAgent": user_agent
                },
                "requestId": self.request_id,
                "routeKey": "ANY /{proxy+}",
                "stage": "$default",
                "time": time,
                "timeEpoch": self.time_epoch_ms
            },
            "pathParameters": { "proxy": self.raw_path.trim_start_matches('/') },
            "body": body,
            "isBase64Encoded": is_base64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_body_is_base64_encoded_as_api_gateway_does() {
        let e = ApiEvent::new("PUT", "/x").body(vec![0xff, 0x00]).to_json();
        assert_eq!(e["isBase64Encoded"], true);
        assert_eq!(e["body"], "/wA=");
        let e = ApiEvent::new("PUT", "/x").body("{}").to_json();
        assert_eq!(
            (e["isBase64Encoded"].clone(), e["body"].clone()),
            (false.into(), "{}".into())
        );
        let e = ApiEvent::new("GET", "/x").caller("u").to_json();
        assert_eq!(
            e["requestContext"]["authorizer"]["jwt"]["claims"]["sub"],
            "u"
        );
        assert_eq!(e["body"], Value::Null);
    }
}
