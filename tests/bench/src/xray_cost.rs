//! What `Tracing=Active` adds to a DynamoDB call inside the function: the same GetItem sent
//! through two clients, without and with the X-Ray interceptor (`likes_core::xray`), against a
//! loopback HTTP stub that answers at once (so the figure is the client-side cost, not
//! DynamoDB's latency), with a loopback UDP socket as the daemon. Rounds alternate between the
//! two clients so that both see the same machine.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

/// Answers every request on every connection with an empty GetItem output.
fn stub() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let addr = listener.local_addr().expect("its address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut writer = match stream.try_clone() {
                    Ok(w) => w,
                    Err(_) => return,
                };
                let mut reader = BufReader::new(stream);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        if line == "\r\n" {
                            break;
                        }
                        let lower = line.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0u8; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let reply = "HTTP/1.1 200 OK\r\ncontent-type: application/x-amz-json-1.0\r\nx-amzn-requestid: bench\r\ncontent-length: 2\r\n\r\n{}";
                    if writer.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// A daemon that counts and drops every datagram, so that its buffer never fills.
fn daemon(received: Arc<AtomicUsize>) -> String {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
    let addr = socket.local_addr().expect("its address").to_string();
    std::thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        while socket.recv(&mut buf).is_ok() {
            received.fetch_add(1, Ordering::Relaxed);
        }
    });
    addr
}

async fn calls(client: &Client, n: usize) -> Duration {
    let started = Instant::now();
    for i in 0..n {
        let _ = client
            .get_item()
            .table_name("likes")
            .key("post_bucket", AttributeValue::S(format!("p{i}#0")))
            .key("user_id", AttributeValue::S("u".into()))
            .send()
            .await;
    }
    started.elapsed()
}

pub struct XrayCost {
    pub plain_us: f64,
    pub traced_us: f64,
    /// Datagrams the daemon got per traced call (a start and an end: 2).
    pub datagrams_per_call: f64,
}

/// Microseconds per call without and with the interceptor (medians over rounds).
pub async fn per_call() -> XrayCost {
    let endpoint = stub();
    let received = Arc::new(AtomicUsize::new(0));
    // Set before the traced client exists, as Lambda sets them before the first invocation
    // (the trace header per invocation). Edition 2021: `set_var` is not unsafe here.
    std::env::set_var("AWS_XRAY_DAEMON_ADDRESS", daemon(Arc::clone(&received)));
    std::env::set_var(
        "_X_AMZN_TRACE_ID",
        "Root=1-6750a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1",
    );
    let sdk = likes_aws::sdk::emulator(&endpoint).await;
    let plain = Client::new(&sdk);
    let traced = likes_aws::sdk::dynamo(&sdk, true);
    let (n, rounds) = (2_000, 7);
    calls(&plain, 200).await;
    calls(&traced, 200).await;
    let mut a = Vec::new();
    let mut b = Vec::new();
    for _ in 0..rounds {
        a.push(calls(&plain, n).await.as_secs_f64() * 1e6 / n as f64);
        b.push(calls(&traced, n).await.as_secs_f64() * 1e6 / n as f64);
    }
    for key in ["AWS_XRAY_DAEMON_ADDRESS", "_X_AMZN_TRACE_ID"] {
        std::env::remove_var(key);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let traced_calls = (200 + n * rounds) as f64;
    XrayCost {
        plain_us: median(&mut a),
        traced_us: median(&mut b),
        datagrams_per_call: received.load(Ordering::Relaxed) as f64 / traced_calls,
    }
}
