//! The gateway's CORS answers a browser relies on, over plain HTTP: preflights answered before
//! the authorizer, and every answer to an allowed origin marked, errors included.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::common::{token, Emulator, Options, Proxy, Stack};

/// A request over a fresh connection; the status and the response's head, lowercased.
fn head(port: u16, method: &str, path: &str, headers: &[(&str, &str)]) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (k, v) in headers {
        req += &format!("{k}: {v}\r\n");
    }
    req += "Content-Length: 0\r\nConnection: close\r\n\r\n";
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("answer");
    let head = raw
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head)
}

#[test]
fn the_gateway_answers_preflights_and_marks_every_answer_to_an_allowed_origin_errors_included() {
    const APP: &str = "https://app.example.com";
    let emulator = Emulator::start();
    let proxy = Proxy::start(emulator.port());
    let stack = Stack::start(&Options {
        endpoint: Some(proxy.endpoint()),
        allowed_origins: Some(APP.to_owned()),
        ..Options::default()
    });
    let port = stack.port;
    let tok = token("gateway-1");
    let bearer = format!("Bearer {tok}");
    let preflight = |origin: &str| {
        let h = [
            ("Origin", origin),
            ("Access-Control-Request-Method", "PUT"),
            (
                "Access-Control-Request-Headers",
                "authorization,idempotency-key",
            ),
        ];
        head(port, "OPTIONS", "/posts/p-1/like", &h)
    };
    let (s, h) = preflight(APP);
    assert_eq!(s, 204, "{h}");
    for want in [
        "access-control-allow-origin: https://app.example.com",
        "access-control-allow-methods: get, put, delete",
        "access-control-allow-headers: authorization, content-type, idempotency-key, if-none-match",
        "access-control-max-age: 600",
    ] {
        assert!(h.contains(want), "{want} in\n{h}");
    }
    let (s, h) = preflight("https://evil.example");
    assert_eq!(s, 204, "{h}");
    assert!(!h.contains("access-control-"), "{h}");
    // OPTIONS that is not a preflight takes the template's route past the authorizer.
    let (s, h) = head(port, "OPTIONS", "/users/me/likes", &[]);
    assert_eq!(s, 204, "{h}");
    assert!(h.contains("allow: get, delete"), "{h}");

    let marked = |h: &str| {
        h.contains("access-control-allow-origin: https://app.example.com")
            && h.contains("access-control-expose-headers: etag, retry-after")
    };
    let from_app = [("Origin", APP), ("Authorization", bearer.as_str())];
    type Headers<'a> = &'a [(&'a str, &'a str)];
    let cases: [(&str, &str, Headers, u16); 4] = [
        ("GET", "/posts/p-1/likes/count", &from_app, 200),
        ("GET", "/posts/p-1/like", &[("Origin", APP)], 401),
        ("GET", "/nowhere", &from_app, 404),
        ("POST", "/posts/p-1/like", &from_app, 405),
    ];
    for (method, path, headers, want) in cases {
        let (s, h) = head(port, method, path, headers);
        assert_eq!(s, want, "{method} {path}: {h}");
        assert!(marked(&h), "{method} {path}:\n{h}");
        let elsewhere: Vec<(&str, &str)> = headers
            .iter()
            .map(|&(k, v)| {
                if k == "Origin" {
                    (k, "https://evil.example")
                } else {
                    (k, v)
                }
            })
            .collect();
        let (s, h) = head(port, method, path, &elsewhere);
        assert_eq!(s, want, "{method} {path} from elsewhere: {h}");
        assert!(
            !h.contains("access-control-"),
            "{method} {path} from elsewhere:\n{h}"
        );
    }

    // DynamoDB unreachable: the 503 (and its Retry-After) reaches the page too.
    proxy.stop();
    let (s, h) = head(port, "GET", "/posts/p-2/likes/count", &from_app);
    assert_eq!(s, 503, "{h}");
    assert!(marked(&h) && h.contains("retry-after:"), "{h}");
}
