//! CORS as API Gateway's HTTP API plays it when the template's `AllowedOrigins` is set
//! (docs/browsers.md): preflights answered at the gateway, before the authorizer; the configured
//! headers on every other answer to an allowed origin, errors included; nothing for any other
//! origin; and CORS headers from the function replaced by the gateway's own.
//!
//! The lists below are the template's `CorsConfiguration` (a test compares them).

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::Method;

pub const ALLOW_METHODS: &[&str] = &["GET", "PUT", "DELETE"];
pub const ALLOW_HEADERS: &[&str] = &[
    "authorization",
    "content-type",
    "idempotency-key",
    "if-none-match",
];
pub const EXPOSE_HEADERS: &[&str] = &["etag", "retry-after"];
/// Seconds a browser may keep a preflight's answer.
pub const MAX_AGE: u32 = 600;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an origin: write scheme://host[:port] (http or https, no path, no trailing slash), or * for any")]
pub struct NotAnOrigin(pub String);

/// Which origins may call the API from a browser.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cors {
    /// `*`: any origin, answered `Access-Control-Allow-Origin: *`.
    any: bool,
    /// Lowercase, as browsers serialise an origin.
    origins: Vec<String>,
}

/// What a request is, for CORS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// No `Origin`, or one not allowed: nothing is added to the answer.
    Not,
    /// A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`): answered 204
    /// by the gateway itself, with the allow headers if the origin is allowed (`Some`).
    Preflight(Option<HeaderValue>),
    /// A request from an allowed origin: its answer, whatever it is, carries this
    /// `Access-Control-Allow-Origin` and the exposed headers.
    Allowed(HeaderValue),
}

/// `scheme://host[:port]`, lowercased; `None` if `s` is not one.
fn origin(s: &str) -> Option<String> {
    let lower = s.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))?;
    let (host, port) = match rest.rsplit_once(':') {
        // An IPv6 literal's colons are inside its brackets.
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (rest, None),
    };
    let host_ok = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.[]:".contains(&b));
    let port_ok = port.is_none_or(|p| !p.is_empty() && p.len() <= 5 && p.parse::<u16>().is_ok());
    (host_ok && port_ok).then_some(lower)
}

impl Cors {
    /// Origins as the template's parameter takes them: comma-separated, spaces around each
    /// ignored, `*` for any. Empty allows none.
    pub fn parse(list: &str) -> Result<Self, NotAnOrigin> {
        let mut cors = Self::default();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "*" {
                cors.any = true;
            } else {
                let o = origin(item).ok_or_else(|| NotAnOrigin(item.to_owned()))?;
                cors = cors.with(o);
            }
        }
        Ok(cors)
    }

    /// These origins and `origin` too (the demo page's own).
    pub fn with(mut self, origin: String) -> Self {
        let origin = origin.to_ascii_lowercase();
        if !self.origins.contains(&origin) {
            self.origins.push(origin);
        }
        self
    }

    /// What `make dev` prints: `*`, or the origins.
    pub fn describe(&self) -> String {
        if self.any {
            "* (any origin)".to_owned()
        } else {
            self.origins.join(", ")
        }
    }

    /// The `Access-Control-Allow-Origin` an allowed origin gets: `*` when any is allowed, else
    /// the origin itself.
    fn allow_origin(&self, origin: &str) -> Option<HeaderValue> {
        if self.any {
            Some(HeaderValue::from_static("*"))
        } else if self.origins.iter().any(|o| o == origin) {
            HeaderValue::from_str(origin).ok()
        } else {
            None
        }
    }

    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Check {
        let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
            return Check::Not;
        };
        let allowed = self.allow_origin(origin);
        if method == Method::OPTIONS && headers.contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
        {
            return Check::Preflight(allowed);
        }
        allowed.map_or(Check::Not, Check::Allowed)
    }

    /// The headers of a preflight's 204: none for an origin not allowed (the browser then
    /// refuses the request it asked about).
    pub fn preflight_headers(&self, allow_origin: Option<&HeaderValue>) -> HeaderMap {
        let mut h = HeaderMap::new();
        let Some(allow_origin) = allow_origin else {
            return h;
        };
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow_origin.clone());
        for (name, value) in [
            (
                header::ACCESS_CONTROL_ALLOW_METHODS,
                ALLOW_METHODS.join(", "),
            ),
            (
                header::ACCESS_CONTROL_ALLOW_HEADERS,
                ALLOW_HEADERS.join(", "),
            ),
            (header::ACCESS_CONTROL_MAX_AGE, MAX_AGE.to_string()),
        ] {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name, v);
            }
        }
        vary_on_origin(&mut h, allow_origin);
        h
    }

    /// Sets the CORS headers of an answer: the function's own are dropped, as API Gateway
    /// ignores an integration's CORS headers once CORS is configured; an allowed origin's
    /// answer gets `Access-Control-Allow-Origin` and `-Expose-Headers`.
    pub fn decorate(&self, check: &Check, headers: &mut HeaderMap) {
        let theirs: Vec<HeaderName> = headers
            .keys()
            .filter(|k| k.as_str().starts_with("access-control-"))
            .cloned()
            .collect();
        for name in theirs {
            headers.remove(name);
        }
        if let Check::Allowed(allow_origin) = check {
            headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, allow_origin.clone());
            if let Ok(v) = HeaderValue::from_str(&EXPOSE_HEADERS.join(", ")) {
                headers.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
            }
            vary_on_origin(headers, allow_origin);
        }
    }
}

/// An answer that names one origin differs by origin: a shared cache must not hand it to
/// another (a local addition; AWS's documentation does not say whether API Gateway adds it).
fn vary_on_origin(headers: &mut HeaderMap, allow_origin: &HeaderValue) {
    if allow_origin != "*" {
        headers.append(header::VARY, HeaderValue::from_static("origin"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APP: &str = "https://app.example.com";

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn preflight_from(origin: &str) -> HeaderMap {
        headers(&[
            ("origin", origin),
            ("access-control-request-method", "PUT"),
            (
                "access-control-request-headers",
                "authorization,idempotency-key",
            ),
        ])
    }

    #[test]
    fn parses_the_templates_format_and_rejects_what_is_not_an_origin() {
        let cors = Cors::parse(" https://App.example.com , http://127.0.0.1:3001,").unwrap();
        assert_eq!(
            cors.describe(),
            "https://app.example.com, http://127.0.0.1:3001"
        );
        assert_eq!(Cors::parse("").unwrap(), Cors::default());
        assert!(Cors::parse("*").unwrap().any);
        assert_eq!(
            Cors::parse("http://[::1]:8080").unwrap().describe(),
            "http://[::1]:8080"
        );
        for bad in [
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/path",
            "ftp://app.example.com",
            "https://",
            "https://app.example.com:99999",
            "https://app.example.com:",
            "null",
            "https://*.example.com",
        ] {
            assert_eq!(
                Cors::parse(&format!("{APP},{bad}")),
                Err(NotAnOrigin(bad.to_owned())),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_preflight_from_an_allowed_origin_gets_the_configured_headers() {
        let cors = Cors::parse(APP).unwrap();
        let check = cors.check(&Method::OPTIONS, &preflight_from(APP));
        let Check::Preflight(Some(origin)) = &check else {
            panic!("{check:?}")
        };
        let h = cors.preflight_headers(Some(origin));
        assert_eq!(h["access-control-allow-origin"], APP);
        assert_eq!(h["access-control-allow-methods"], "GET, PUT, DELETE");
        assert_eq!(
            h["access-control-allow-headers"],
            "authorization, content-type, idempotency-key, if-none-match"
        );
        assert_eq!(h["access-control-max-age"], "600");
        assert_eq!(h["vary"], "origin");
        assert!(!h.contains_key("access-control-allow-credentials"));
    }

    #[test]
    fn a_preflight_from_another_origin_gets_no_cors_headers() {
        let cors = Cors::parse(APP).unwrap();
        let check = cors.check(&Method::OPTIONS, &preflight_from("https://evil.example"));
        assert_eq!(check, Check::Preflight(None));
        assert!(cors.preflight_headers(None).is_empty());
        // A look-alike is another origin.
        for other in ["https://app.example.com:443", "http://app.example.com"] {
            let check = cors.check(&Method::OPTIONS, &preflight_from(other));
            assert_eq!(check, Check::Preflight(None), "{other}");
        }
    }

    #[test]
    fn options_without_a_requested_method_is_not_a_preflight() {
        let cors = Cors::parse(APP).unwrap();
        let check = cors.check(&Method::OPTIONS, &headers(&[("origin", APP)]));
        assert_eq!(check, Check::Allowed(HeaderValue::from_static(APP)));
        assert_eq!(cors.check(&Method::OPTIONS, &HeaderMap::new()), Check::Not);
    }

    #[test]
    fn answers_to_an_allowed_origin_carry_the_headers_and_others_carry_none() {
        let cors = Cors::parse(APP).unwrap();
        let check = cors.check(&Method::GET, &headers(&[("origin", APP)]));
        // Whatever the function answered, its own CORS headers do not survive.
        let mut h = headers(&[
            ("content-type", "application/json"),
            ("access-control-allow-origin", "https://elsewhere"),
        ]);
        cors.decorate(&check, &mut h);
        assert_eq!(h["access-control-allow-origin"], APP);
        assert_eq!(h["access-control-expose-headers"], "etag, retry-after");
        assert_eq!(h["content-type"], "application/json");

        for origin in [None, Some("https://evil.example")] {
            let req = origin.map_or_else(HeaderMap::new, |o| headers(&[("origin", o)]));
            let check = cors.check(&Method::PUT, &req);
            assert_eq!(check, Check::Not);
            let mut h = headers(&[("access-control-allow-origin", "*")]);
            cors.decorate(&check, &mut h);
            assert!(h.is_empty(), "{origin:?}: {h:?}");
        }
    }

    #[test]
    fn star_allows_any_origin_and_says_star() {
        let cors = Cors::parse("*").unwrap();
        let check = cors.check(
            &Method::DELETE,
            &headers(&[("origin", "https://any.where")]),
        );
        assert_eq!(check, Check::Allowed(HeaderValue::from_static("*")));
        let mut h = HeaderMap::new();
        cors.decorate(&check, &mut h);
        assert_eq!(h["access-control-allow-origin"], "*");
        assert!(
            !h.contains_key("vary"),
            "the answer is the same for every origin"
        );
    }

    #[test]
    fn the_demo_origin_is_added_once() {
        let cors = Cors::parse(APP)
            .unwrap()
            .with("http://127.0.0.1:3001".into())
            .with("http://127.0.0.1:3001".into());
        assert_eq!(cors.describe(), format!("{APP}, http://127.0.0.1:3001"));
        let check = cors.check(
            &Method::GET,
            &headers(&[("origin", "http://127.0.0.1:3001")]),
        );
        assert!(matches!(check, Check::Allowed(_)));
    }
}
