//! The worker and the pending-erasure record (issue 25): a finished job clears its user's
//! record; a job asked for again while it ran goes on, as a new message, up to the later
//! request, and is cleared only once it got there. In memory: the stores' rules themselves are
//! checked on DynamoDB by likes-harness's `erase_requests` test.

use std::sync::Arc;
use std::time::Duration;

use erase_worker::{Outcome, Worker};
use likes_core::erase_job::{EraseJob, EraseQueue, ErasureRequests};
use likes_core::store::memory::{MemoryErasureRequests, MemoryLikes};
use likes_core::{LikesStore, PostId, UserId, WriteToken};
use likes_harness::RecordedQueue;

const T1: &str = "2026-12-01T10:00:00.000Z";
const T2: &str = "2026-12-01T10:05:00.000Z";

#[tokio::test]
async fn a_job_asked_for_again_while_it_ran_goes_on_to_the_later_request() {
    let likes = MemoryLikes::default();
    let me = UserId::parse("auth0|erasing").unwrap();
    let (early, late) = (
        PostId::parse("early").unwrap(),
        PostId::parse("late").unwrap(),
    );
    let like = |post: &PostId, at: &'static str| {
        let (likes, me, post) = (&likes, me.clone(), post.clone());
        async move {
            likes
                .like(&post, &me, at, &WriteToken::random())
                .await
                .unwrap()
        }
    };
    like(&early, "2026-12-01T09:00:00.000Z").await;
    like(&late, "2026-12-01T10:01:00.000Z").await;
    let queue = Arc::new(RecordedQueue::default());
    let pending = Arc::new(MemoryErasureRequests::default());
    let worker = Worker {
        likes,
        empty_sweeps: 1,
        pause: Duration::from_millis(1),
        settle: Duration::ZERO,
        requeue: Some(queue.clone() as Arc<dyn EraseQueue>),
        erasures: Some(pending.clone() as Arc<dyn ErasureRequests>),
        token_lifetime: Duration::from_secs(3600),
        rejects: None,
        suspensions: None,
        policies: None,
        blocks: None,
    };
    // Requested at T1, then again at T2 while the T1 message was on its way.
    let first = pending.request(&me, "job-1", T1).await.unwrap();
    pending.request(&me, "job-2", T2).await.unwrap();
    let body = serde_json::to_string(&first.job(&me)).unwrap();
    assert_eq!(worker.run_job(&body, None).await, Outcome::Continued(1));
    assert!(
        worker.likes.liked_at(&late, &me).await.unwrap().is_some(),
        "made after T1"
    );
    let again = queue.jobs();
    assert_eq!(again.len(), 1);
    assert_eq!(
        (again[0].job_id.as_str(), again[0].requested_at.as_str()),
        ("job-1", T2)
    );
    let still = pending
        .pending(&me)
        .expect("still pending until it reaches T2");
    assert!(
        still.sent_at.is_some(),
        "the continuation is noted as sent: a repeat request must not send a second chain"
    );
    // The continuation erases up to T2 and clears the record.
    let body = serde_json::to_string(&again[0]).unwrap();
    assert_eq!(worker.run_job(&body, None).await, Outcome::Erased(1));
    assert!(worker.likes.liked_at(&late, &me).await.unwrap().is_none());
    assert_eq!(pending.pending(&me), None);
    // A redelivered old message finds nothing pending and nothing to erase: done, no resend.
    let body = serde_json::to_string(&first.job(&me)).unwrap();
    assert_eq!(worker.run_job(&body, None).await, Outcome::Erased(0));
    assert_eq!(queue.jobs().len(), 1);
}

/// A like stamped just before the erase request but written after the worker's first sweep
/// (its request was still being retried) is erased too: the last sweep waits until such a like
/// has had the time to land. In tokio's paused time, so that the wait costs nothing.
#[tokio::test(start_paused = true)]
async fn a_like_stamped_before_the_request_and_written_late_is_erased() {
    let me = UserId::parse("auth0|late-like").unwrap();
    let post = PostId::parse("late").unwrap();
    let requested_at = likes_core::time::now_ts();
    let stamped = likes_core::time::format_ts(
        likes_core::time::parse_ts(&requested_at).unwrap() - chrono::TimeDelta::milliseconds(5),
    );
    let worker = Worker {
        likes: MemoryLikes::default(),
        empty_sweeps: 1,
        pause: Duration::from_millis(1),
        settle: likes_core::erase_job::SETTLE,
        requeue: None,
        erasures: None,
        token_lifetime: Duration::from_secs(3600),
        rejects: None,
        suspensions: None,
        policies: None,
        blocks: None,
    };
    let job = EraseJob {
        job_id: "late".into(),
        user_id: me.clone(),
        requested_at,
        account_deleted: false,
    };
    let body = serde_json::to_string(&job).unwrap();
    let late_write = async {
        // The like's request, retried, lands 5 s after the erase was asked for.
        tokio::time::sleep(Duration::from_secs(5)).await;
        worker
            .likes
            .like(&post, &me, &stamped, &WriteToken::random())
            .await
            .unwrap();
    };
    let (outcome, ()) = tokio::join!(worker.run_job(&body, None), late_write);
    assert_eq!(outcome, Outcome::Erased(1));
    assert_eq!(worker.likes.liked_at(&post, &me).await.unwrap(), None);
}

/// The same continuation on DynamoDB, each party signed as its role through the lab (which
/// enforces the template's policies): the API records the requests, the worker erases and
/// notes its continuation as sent. The worker's role must allow every call it makes: a
/// continuation that cannot be noted is only logged, and the person's next request would send
/// a second chain of the same job.
#[tokio::test]
async fn the_workers_role_allows_noting_its_continuation_on_dynamodb() {
    use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
    use likes_aws::DynamoErasureRequests;
    use likes_harness::lab::{lab, roles};

    let t = likes_harness::Tables::new().await;
    let table = format!(
        "erase-requests-{}",
        t.likes_table.trim_start_matches("likes-")
    );
    create_table(&t.client, &ERASE_REQUESTS, &table)
        .await
        .expect("the pending erasures' table");
    let (api, worker_tables) = (t.as_role(roles::API), t.as_role(roles::WORKER));
    let me = UserId::parse("auth0|erasing-on-dynamodb").unwrap();
    for (post, at) in [
        ("early", "2026-12-01T09:00:00.000Z"),
        ("late", "2026-12-01T10:01:00.000Z"),
    ] {
        t.put_like(&PostId::parse(post).unwrap(), &me, at).await;
    }
    let requested = DynamoErasureRequests::new(api.client.clone(), &table);
    let first = requested.request(&me, "job-1", T1).await.unwrap();
    requested.request(&me, "job-2", T2).await.unwrap();
    let queue = Arc::new(RecordedQueue::default());
    let worker = Worker {
        likes: worker_tables.likes(),
        empty_sweeps: 1,
        pause: Duration::from_millis(1),
        settle: Duration::ZERO,
        requeue: Some(queue.clone() as Arc<dyn EraseQueue>),
        erasures: Some(Arc::new(DynamoErasureRequests::new(
            worker_tables.client.clone(),
            &table,
        )) as Arc<dyn ErasureRequests>),
        token_lifetime: Duration::from_secs(3600),
        rejects: None,
        suspensions: None,
        policies: None,
        blocks: None,
    };
    let body = serde_json::to_string(&first.job(&me)).unwrap();
    assert_eq!(worker.run_job(&body, None).await, Outcome::Continued(1));
    let denied: Vec<_> = lab()
        .usage()
        .denied()
        .into_iter()
        .filter(|d| d.identity == roles::WORKER && d.resource.ends_with(&table))
        .cloned()
        .collect();
    assert!(denied.is_empty(), "the worker's role refused: {denied:#?}");
    let still = DynamoErasureRequests::new(t.client.clone(), &table)
        .read(&me)
        .await
        .unwrap()
        .expect("still pending until it reaches T2");
    assert!(
        still.sent_at.is_some(),
        "the continuation is noted as sent: a repeat request must not send a second chain"
    );
}

/// An index that omits a recent item: the like made just before the request is missing from
/// the by-user index (the lab's tables trail by 2 s, hiding it from the first sweeps). The
/// worker as deployed (two empty sweeps half a second apart, and its last sweep no earlier than
/// `SETTLE` after the request) still leaves nothing of the person's behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erase_leaves_nothing_of_a_like_its_index_shows_late() {
    use likes_harness::lab::roles;
    let t = likes_harness::Tables::with_lag(Duration::from_secs(2)).await;
    let me = UserId::parse("auth0|erased-through-a-lagging-index").unwrap();
    let post = PostId::parse("liked-just-before").unwrap();
    let requested_at = likes_core::time::now_ts();
    let stamped = likes_core::time::format_ts(
        likes_core::time::parse_ts(&requested_at).unwrap() - chrono::TimeDelta::milliseconds(5),
    );
    t.put_like(&post, &me, &stamped).await;
    let worker = Worker {
        likes: t.as_role(roles::WORKER).likes(),
        empty_sweeps: 2,
        pause: Duration::from_millis(500),
        settle: likes_core::erase_job::SETTLE,
        requeue: None,
        erasures: None,
        token_lifetime: Duration::from_secs(3600),
        rejects: None,
        suspensions: None,
        policies: None,
        blocks: None,
    };
    let job = EraseJob {
        job_id: "through-lag".into(),
        user_id: me.clone(),
        requested_at,
        account_deleted: false,
    };
    let body = serde_json::to_string(&job).unwrap();
    assert_eq!(worker.run_job(&body, None).await, Outcome::Erased(1));
    assert!(t.like_pairs().await.is_empty(), "a like survived its erase");
}
