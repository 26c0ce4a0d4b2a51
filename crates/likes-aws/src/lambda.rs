//! What every function does at start-up and per invocation, besides its work.

use std::time::Duration;

use tokio::time::Instant;

/// JSON logs for CloudWatch, one object per line with Powertools' keys ([`crate::logs`]);
/// level from `RUST_LOG` (default `info`). `service` names the function's job (`likes-api`,
/// …); `function_name` is Lambda's name for it.
pub fn init_logs(service: &'static str, function_name: &str) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::registry()
        .with(filter)
        .with(crate::logs::JsonLines::new(service, function_name))
        .init();
}

/// The invocation's deadline (epoch milliseconds, from the Lambda context) as an instant. One
/// already past when the invocation starts is no Lambda deadline (`cargo lambda watch` sends a
/// fixed one in 1970): then there is none.
pub fn deadline(epoch_ms: u64) -> Option<Instant> {
    let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    (epoch_ms > now_ms).then(|| Instant::now() + Duration::from_millis(epoch_ms - now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_in_the_past_is_none() {
        assert_eq!(deadline(0), None);
        let in_a_minute = chrono::Utc::now().timestamp_millis() as u64 + 60_000;
        let d = deadline(in_a_minute).expect("a deadline");
        let left = d.saturating_duration_since(Instant::now());
        assert!(left > Duration::from_secs(55) && left <= Duration::from_secs(60));
    }
}
