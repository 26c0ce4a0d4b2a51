//! At most one pending erase job per person (issue 25): the pending-erasure stores' rules, the
//! same on DynamoDB (moto) and in memory, and the API under a flood of erase requests from one
//! token (one job queued, its id in every answer; a repeat sends the job again only once its
//! last send is old or unknown).

use std::sync::Arc;

use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::DynamoErasureRequests;
use likes_core::erase_job::{ErasureRequests, RESEND_AFTER};
use likes_core::store::memory::{MemoryCounts, MemoryErasureRequests, MemoryLikes};
use likes_core::time::format_ts;
use likes_core::UserId;
use likes_harness::{call_as, client, RecordedQueue};

const T1: &str = "2026-12-01T10:00:00.000Z";
const T2: &str = "2026-12-01T10:05:00.000Z";
const T3: &str = "2026-12-01T10:09:00.000Z";

fn user(raw: &str) -> UserId {
    UserId::parse(raw).expect("an id")
}

async fn follows_the_rules(store: &dyn ErasureRequests) {
    let (u, v) = (user("auth0|erasing"), user("auth0|other"));
    let first = store.request(&u, "j1", T1).await.unwrap();
    assert_eq!(
        (first.job_id.as_str(), first.requested_at.as_str()),
        ("j1", T1)
    );
    assert_eq!(first.sent_at, None);
    // Asked again later: the same job, its time moved forward; never back.
    let again = store.request(&u, "j2", T2).await.unwrap();
    assert_eq!(
        (again.job_id.as_str(), again.requested_at.as_str()),
        ("j1", T2)
    );
    let late = store.request(&u, "j3", T1).await.unwrap();
    assert_eq!(
        (late.job_id.as_str(), late.requested_at.as_str()),
        ("j1", T2)
    );
    store.sent(&u, "j1", T2).await.unwrap();
    let seen = store.request(&u, "j4", T2).await.unwrap();
    assert_eq!(seen.sent_at.as_deref(), Some(T2));
    // A job that erased up to T1 was asked for again since: it goes on, up to T2.
    assert_eq!(
        store.finish(&u, "j1", T1).await.unwrap().as_deref(),
        Some(T2)
    );
    // Up to T2 it is done, and the next request is a new job.
    assert_eq!(store.finish(&u, "j1", T2).await.unwrap(), None);
    assert_eq!(store.finish(&u, "j1", T2).await.unwrap(), None, "twice");
    let next = store.request(&u, "j5", T3).await.unwrap();
    assert_eq!((next.job_id.as_str(), next.sent_at), ("j5", None));
    // Another job's finish, or a send noted for a job not pending, changes nothing.
    assert_eq!(store.finish(&u, "j1", T3).await.unwrap(), None);
    store.sent(&v, "k0", T3).await.unwrap();
    let fresh = store.request(&v, "k1", T3).await.unwrap();
    assert_eq!((fresh.job_id.as_str(), fresh.sent_at), ("k1", None));
    assert_eq!(store.finish(&u, "j5", T3).await.unwrap(), None);
}

#[tokio::test]
async fn pending_erasures_follow_their_rules_in_memory() {
    follows_the_rules(&MemoryErasureRequests::default()).await;
}

#[tokio::test]
async fn pending_erasures_follow_their_rules_on_dynamodb() {
    let client = client().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    // Reads that must see the latest state ask for it: a trailing copy serves the rest.
    likes_harness::lab::lab().set_lag(&table, likes_harness::lab::read_lag());
    follows_the_rules(&DynamoErasureRequests::new(client, table)).await;
}

#[tokio::test]
async fn a_flood_of_erase_requests_from_one_token_queues_one_job() {
    let queue = Arc::new(RecordedQueue::default());
    let pending = Arc::new(MemoryErasureRequests::default());
    let app = likes_api::App::new(MemoryLikes::default(), MemoryCounts::default())
        .with_erase_queue(queue.clone())
        .with_erasure_requests(pending.clone());
    let answers = futures::future::join_all(
        (0..100).map(|_| call_as(&app, "DELETE", "/users/me/likes", "auth0|flooder")),
    )
    .await;
    let ids: std::collections::HashSet<_> = answers
        .iter()
        .map(|(status, body, _)| {
            assert_eq!(*status, 202, "{body}");
            body["job_id"].as_str().expect("a job id").to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 1, "every answer names the one pending job");
    let queued = queue.jobs();
    assert_eq!(queued.len(), 1, "one job queued for 100 requests");
    assert!(ids.contains(&queued[0].job_id));
    // Another person's request is a job of its own.
    let (status, other, _) = call_as(&app, "DELETE", "/users/me/likes", "auth0|someone").await;
    assert_eq!(status, 202);
    assert_ne!(other["job_id"].as_str(), queued[0].job_id.as_str().into());
    assert_eq!(queue.jobs().len(), 2);
    // The flooder's message was sent long ago (the queue may have lost it): a repeat sends the
    // same job again, with the latest request's time.
    let flooder = user("auth0|flooder");
    let long_ago = chrono::Utc::now() - RESEND_AFTER - std::time::Duration::from_secs(1);
    pending
        .sent(&flooder, &queued[0].job_id, &format_ts(long_ago))
        .await
        .unwrap();
    let (_, again, _) = call_as(&app, "DELETE", "/users/me/likes", "auth0|flooder").await;
    let jobs = queue.jobs();
    assert_eq!(jobs.len(), 3, "sent again");
    assert_eq!(jobs[2].job_id, queued[0].job_id);
    assert_eq!(again["job_id"].as_str(), Some(queued[0].job_id.as_str()));
    assert!(jobs[2].requested_at >= queued[0].requested_at);
}
