//! A large erase against the emulator (`make test`): a job that runs out of time after deleting
//! some likes continues as a new message rather than failing (which would spend one of the five
//! receives before the dead-letter queue); one that made no progress fails as before. The queue
//! is a recording fake of the trait the worker submits to; the likes are the emulator's.

use std::sync::Arc;
use std::time::Duration;

use erase_worker::{Outcome, Worker, DEADLINE_MARGIN};
use likes_aws::DynamoLikes;
use likes_core::erase_job::{EraseJob, EraseQueue};
use likes_core::{PostId, UserId};
use likes_harness::{RecordedQueue, Tables};
use tokio::time::Instant;

const LIKES: usize = 600;

async fn seed(t: &Tables, user: &UserId) {
    for i in 0..LIKES {
        let post = PostId::parse(&format!("post-{i:04}")).expect("an id");
        let at = format!("2026-11-30T18:00:{:02}.000Z", i % 60);
        t.put_like(&post, user, &at).await;
    }
}

fn worker(t: &Tables, queue: &Arc<RecordedQueue>) -> Worker<DynamoLikes> {
    Worker {
        likes: t.likes(),
        empty_sweeps: 1,
        pause: Duration::from_millis(50),
        settle: Duration::ZERO,
        requeue: Some(Arc::clone(queue) as Arc<dyn EraseQueue>),
        erasures: None,
        token_lifetime: Duration::from_secs(3600),
        rejects: None,
        suspensions: None,
        policies: None,
        blocks: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_out_of_time_continues_as_a_new_message_and_one_without_progress_fails() {
    let t = Tables::new().await;
    let user = UserId::parse("auth0|many-likes").expect("an id");
    seed(&t, &user).await;
    let queue = Arc::new(RecordedQueue::default());
    let w = worker(&t, &queue);
    let job = EraseJob {
        job_id: "big".into(),
        user_id: user.clone(),
        requested_at: "2026-12-01T00:00:00.000Z".into(),
        account_deleted: false,
    };
    let body = serde_json::to_string(&job).expect("json");

    // No time at all: nothing deleted, so a plain failure and no new message.
    let none = w
        .run_job(&body, Some(Instant::now() + DEADLINE_MARGIN))
        .await;
    assert!(matches!(none, Outcome::Retry(_)), "{none:?}");
    assert!(queue.jobs().is_empty());

    // Some time: some deleted, not all. How much time that takes depends on the emulator's
    // speed, so the budget doubles from a fifth of a second until a run is cut off midway; a run
    // with no answered delete yet is a plain failure, as above.
    let mut budget = Duration::from_millis(200);
    let done = loop {
        let outcome = w
            .run_job(&body, Some(Instant::now() + DEADLINE_MARGIN + budget))
            .await;
        match outcome {
            Outcome::Continued(done) => break done,
            Outcome::Retry(_) if budget < Duration::from_secs(30) => {
                assert!(queue.jobs().is_empty());
                budget *= 2;
            }
            other => panic!("expected a continued job within {budget:?}, got {other:?}"),
        }
    };
    assert!(done > 0 && done < LIKES, "{done} of {LIKES}");
    assert_eq!(queue.jobs(), vec![job.clone()]);

    // The new message's run finishes the rest.
    // `done` counts the deletes answered before time ran out; a few more may have been in
    // flight and applied, so the rest is at most what the first run did not report.
    let rest = w.run_job(&body, None).await;
    let Outcome::Erased(n) = rest else {
        panic!("expected the rest erased, got {rest:?}");
    };
    assert!(n > 0 && done + n <= LIKES, "{done} then {n} of {LIKES}");
    let left = t
        .like_pairs()
        .await
        .into_iter()
        .filter(|(_, u)| *u == user.to_string())
        .count();
    assert_eq!(left, 0);
}

/// A deleted account's job (`likes-admin erase-user`) waits out the longest token lifetime on
/// the queue, delayed as long as SQS allows each time; once due, it erases every like made up
/// to then (under the worker's role: conditional deletes, as a person's own erase).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accounts_job_waits_out_the_token_lifetime_then_erases_everything_before_it() {
    let t = Tables::new().await;
    let user = UserId::parse("auth0|deleted").expect("an id");
    let post = PostId::parse("post-after").expect("an id");
    let queue = Arc::new(RecordedQueue::default());
    let mut w = worker(&t, &queue);
    w.likes = t.as_role(likes_harness::lab::roles::WORKER).likes();
    w.token_lifetime = Duration::from_secs(3600);
    let at = |secs: i64| {
        likes_core::time::format_ts(chrono::Utc::now() + chrono::TimeDelta::seconds(secs))
    };
    // Deleted 10 s ago; a like made 5 s ago, with a token issued before the deletion.
    t.put_like(&post, &user, &at(-5)).await;
    let job = EraseJob {
        job_id: "account-1".into(),
        user_id: user.clone(),
        requested_at: at(-10),
        account_deleted: true,
    };
    let body = serde_json::to_string(&job).expect("json");
    let outcome = w.run_job(&body, None).await;
    assert_eq!(outcome, Outcome::Deferred(likes_core::erase_job::MAX_DELAY));
    assert_eq!(
        queue.sent(),
        vec![(job.clone(), likes_core::erase_job::MAX_DELAY)]
    );
    assert_eq!(t.scan(&t.likes_table).await.len(), 1, "nothing erased yet");

    // Close to due: delayed by what is left, not more.
    w.token_lifetime = Duration::from_secs(12);
    match w.run_job(&body, None).await {
        Outcome::Deferred(d) => assert!(d <= Duration::from_secs(2) && !d.is_zero(), "{d:?}"),
        other => panic!("expected a deferral, got {other:?}"),
    }
    // Due (the lifetime ran out 2 s ago): the like made with the old token goes.
    w.token_lifetime = Duration::from_secs(8);
    assert_eq!(w.run_job(&body, None).await, Outcome::Erased(1));
    assert!(t.scan(&t.likes_table).await.is_empty());
}
