//! Invariant 11: the repair notes of a failing batch. Written concurrently, within what is left
//! of the invocation (a Lambda timeout would make the whole batch fail and be bisected), and
//! never in a way that changes the batch's response: a note is how an operator finds the post
//! if the batch is given up, not a condition of retrying it.

use std::time::Duration;

use futures::stream::{self, StreamExt};
use likes_core::{CountsLedger, PostId};
use tokio::time::Instant;

/// How far behind the stream (its oldest record's age) a batch with deferred posts is noted
/// although none failed: Lambda gives records up a day old, and nothing here is that slow in
/// health, so a batch an hour behind is one that may be given up.
pub const BEHIND_MS: i64 = 3_600_000;

/// Time kept back from the deadline for the response itself.
const RESPONSE_MARGIN: Duration = Duration::from_millis(500);
/// Notes written at once: they are small writes to distinct items.
const CONCURRENCY: usize = 32;

/// Notes each `(post, lowest unapplied sequence number)`; returns how many were written. A
/// note not written is logged with its post, the line an operator's search finds.
pub async fn note<C: CountsLedger>(
    counts: &C,
    unapplied: &[(&PostId, String)],
    deadline: Option<Instant>,
) -> usize {
    let writes = stream::iter(unapplied)
        .map(|(post, from)| async move {
            match counts.note_unapplied(post, from).await {
                Ok(()) => true,
                Err(e) => {
                    tracing::error!(post = %post, from = %from, error = %e,
                        "could not note a post left unapplied; if its batch is given up, recount it");
                    false
                }
            }
        })
        .buffer_unordered(CONCURRENCY)
        .filter(|ok| std::future::ready(*ok))
        .count();
    let within = deadline.map(|d| d.saturating_duration_since(Instant::now() + RESPONSE_MARGIN));
    match within {
        None => writes.await,
        Some(left) => match tokio::time::timeout(left, writes).await {
            Ok(n) => n,
            Err(_) => {
                let posts: Vec<String> = unapplied.iter().map(|(p, _)| p.to_string()).collect();
                tracing::error!(?posts, "the deadline came before every post left unapplied was noted; if the batch is given up, recount these");
                0
            }
        },
    }
}
