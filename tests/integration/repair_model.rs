//! The aggregator's side of the repairs, each scenario of a repair that could be fooled: a late
//! fence of a job that lost its lease, a window its job abandoned, a bucket mark ahead of the
//! stream (invariants 9 and 10). Each runs on the in-memory stores (`make unit`) and on
//! DynamoDB (the emulator): the adapters' condition expressions are what is under test there.

use count_aggregator::{Aggregator, BatchReport};
use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::{bucket_of, CountsAdmin, LikesAdmin, PostBucket, PostCounts, PostId, UserId};
use likes_harness::stream::{event_json, Deliver};
use likes_harness::Tables;
use likes_sim::stream::StreamRecord;

/// A day after the sample records' default creation time.
const T0: f64 = 1_764_000_000.0;

struct Bucket {
    post: PostId,
    users: Vec<UserId>,
    bucket: u8,
}

/// A post and users who all like in one bucket.
fn bucket_with_users(n: usize) -> Bucket {
    let post = PostId::parse("post-1").expect("an id");
    let mut users = Vec::new();
    let mut i = 0;
    while users.len() < n {
        let u = UserId::parse(&format!("user-{i}")).expect("an id");
        if bucket_of(&u) == 3 {
            users.push(u);
        }
        i += 1;
    }
    Bucket {
        post,
        users,
        bucket: 3,
    }
}

impl Bucket {
    fn pb(&self) -> String {
        PostBucket {
            post: self.post.clone(),
            bucket: self.bucket,
        }
        .to_string()
    }

    fn like(&self, user: usize, seq: u128, created: f64) -> serde_json::Value {
        let sk = self.users[user].as_str();
        StreamRecord::likes("INSERT", &self.pb(), sk, &seq.to_string())
            .created(created)
            .to_json()
    }

    fn fence(&self, job: &str, phase: &str, seq: u128, created: f64) -> serde_json::Value {
        let sk = format!("~fence#{job}#{phase}");
        StreamRecord::likes("INSERT", &self.pb(), &sk, &seq.to_string())
            .created(created)
            .to_json()
    }
}

/// The Counts store under test, and the Likes store its windows are recorded into.
struct Rig<C, L> {
    counts: C,
    likes: L,
    agg: Aggregator<C>,
}

impl<C: CountsAdmin + Clone, L: LikesAdmin> Rig<C, L> {
    fn new(counts: C, likes: L) -> Self {
        let agg = Aggregator::new(counts.clone());
        Rig { counts, likes, agg }
    }

    async fn deliver(&self, records: Vec<serde_json::Value>) -> BatchReport {
        self.agg.deliver(&event_json(&records)).await
    }

    async fn item(&self, post: &PostId) -> PostCounts {
        self.counts
            .read_post(post)
            .await
            .expect("the Counts item read")
            .unwrap_or_default()
    }

    /// Entries recorded in `job`'s window on the bucket.
    async fn entries(&self, b: &Bucket, job: &str) -> u64 {
        let pb = PostBucket::parse(&b.pb()).expect("a key");
        self.likes
            .window(&pb, job)
            .await
            .expect("a window read")
            .entries
    }
}

fn in_memory() -> Rig<MemoryCounts, MemoryLikes> {
    let likes = MemoryLikes::default();
    Rig::new(MemoryCounts::recording_into(&likes), likes)
}

async fn on_dynamodb() -> Rig<likes_aws::DynamoCounts, likes_aws::DynamoLikes> {
    let t = Tables::lagging().await;
    Rig::new(t.counts().with_windows(t.likes()), t.likes())
}

/// Each scenario as two tests: in memory, and on DynamoDB (`…_on_dynamodb`, skipped by
/// `make unit`).
macro_rules! on_both_stores {
    ($scenario:ident, $memory:ident, $dynamo:ident) => {
        #[tokio::test]
        async fn $memory() {
            $scenario(in_memory()).await;
        }

        #[tokio::test]
        async fn $dynamo() {
            $scenario(on_dynamodb().await).await;
        }
    };
}

const BASE: u128 = 100_000_000_000_000_000_000;

/// Scenario 3: a job that outlived its lease writes its fences late, while another job holds
/// the post. The stale begin must not replace the live job's window, nor its end close it.
async fn a_late_fence_is_inert<C: CountsAdmin + Clone, L: LikesAdmin>(rig: Rig<C, L>) {
    let b = bucket_with_users(2);
    let counts = &rig.counts;
    assert!(counts
        .take_lease(&b.post, "live", 60, None)
        .await
        .expect("lease"));
    let report = rig
        .deliver(vec![
            b.fence("live", "begin", BASE + 1, T0),
            b.fence("stale", "begin", BASE + 2, T0),
            b.like(0, BASE + 3, T0),
            b.fence("stale", "end", BASE + 4, T0),
            b.like(1, BASE + 5, T0),
            b.fence("live", "end", BASE + 6, T0),
        ])
        .await;
    assert_eq!(report.checkpoint, None);
    let state = &rig.item(&b.post).await.buckets[usize::from(b.bucket)];
    assert_eq!(state.count, 2);
    let ended = state.ended.clone().expect("the live job's end was noted");
    assert_eq!(
        (ended.job.as_str(), ended.count, ended.entries),
        ("live", 2, 2)
    );
    assert_eq!(state.window, None);
    // Both likes are in the live job's window, none in the stale job's.
    assert_eq!(rig.entries(&b, "live").await, 2);
    assert_eq!(rig.entries(&b, "stale").await, 0);
    // The stale job's correction is refused: it does not hold the lease.
    assert!(!counts
        .settle(&b.post, b.bucket, "stale", 7, &[])
        .await
        .expect("answers"));
    assert!(counts
        .settle(&b.post, b.bucket, "live", 0, &[])
        .await
        .expect("settles"));
}

on_both_stores!(
    a_late_fence_is_inert,
    a_late_fence_of_a_job_that_lost_its_lease_is_inert,
    a_late_fence_of_a_job_that_lost_its_lease_is_inert_on_dynamodb
);

/// Scenario 6: a job that died with its window open leaves it open; a change more than an hour
/// (by the stream's clock) after the window opened closes it instead of recording into it.
async fn an_abandoned_window_closes<C: CountsAdmin + Clone, L: LikesAdmin>(rig: Rig<C, L>) {
    let b = bucket_with_users(3);
    assert!(rig
        .counts
        .take_lease(&b.post, "dead", 60, None)
        .await
        .expect("lease"));
    rig.deliver(vec![
        b.fence("dead", "begin", BASE + 1, T0),
        b.like(0, BASE + 2, T0 + 10.0),
    ])
    .await;
    assert_eq!(rig.entries(&b, "dead").await, 1, "recorded while young");
    // The job died; an hour and more later the bucket's next like arrives.
    let report = rig.deliver(vec![b.like(1, BASE + 3, T0 + 3_700.0)]).await;
    assert_eq!(report.checkpoint, None);
    let state = &rig.item(&b.post).await.buckets[usize::from(b.bucket)];
    assert_eq!((state.window.as_deref(), state.count), (None, 2));
    assert_eq!(rig.entries(&b, "dead").await, 1, "nothing recorded after");
    rig.deliver(vec![b.like(2, BASE + 4, T0 + 3_800.0)]).await;
    assert_eq!(
        rig.item(&b.post).await.buckets[usize::from(b.bucket)].count,
        3
    );
}

on_both_stores!(
    an_abandoned_window_closes,
    a_window_its_job_abandoned_closes_by_itself,
    a_window_its_job_abandoned_closes_by_itself_on_dynamodb
);

/// Scenario 2: a bucket's mark ahead of every sequence number the stream will still deliver (a
/// restored table's new stream). Likes are dropped as applied — and counted as the mark-ahead
/// they prove; a recount's begin fence sets the mark back to itself, and from then on the
/// bucket counts again.
async fn a_mark_ahead_is_set_back<C: CountsAdmin + Clone, L: LikesAdmin>(rig: Rig<C, L>) {
    let b = bucket_with_users(4);
    // Before the restore: the old stream's numbers are far above the new one's.
    let old = 10_000_000_000_000_000_000_000_000u128;
    rig.deliver(vec![b.like(0, old, T0)]).await;
    // After the restore, a day later: a like of the new stream is dropped, and flagged.
    let report = rig.deliver(vec![b.like(1, BASE + 1, T0 + 86_400.0)]).await;
    assert_eq!((report.duplicates, report.marks_ahead), (1, 1));
    assert_eq!(
        rig.item(&b.post).await.buckets[usize::from(b.bucket)].count,
        1
    );
    // A recount: its begin fence, a definite point of the new stream, takes the mark back.
    assert!(rig
        .counts
        .take_lease(&b.post, "job", 60, None)
        .await
        .expect("lease"));
    let report = rig
        .deliver(vec![
            b.fence("job", "begin", BASE + 2, T0 + 86_401.0),
            b.like(2, BASE + 3, T0 + 86_402.0),
            b.fence("job", "end", BASE + 4, T0 + 86_403.0),
        ])
        .await;
    assert_eq!(report.checkpoint, None);
    let state = &rig.item(&b.post).await.buckets[usize::from(b.bucket)];
    let ended = state.ended.clone().expect("the end fence was noted");
    // Counted before the restore 1, the window's like 1: noted 2, one entry.
    assert_eq!((ended.count, ended.entries), (2, 1));
    assert_eq!(
        state.hwm.as_ref().map(|h| h.raw().to_owned()),
        Some((BASE + 4).to_string())
    );
    // The bucket counts again.
    rig.deliver(vec![b.like(3, BASE + 5, T0 + 86_500.0)]).await;
    assert_eq!(
        rig.item(&b.post).await.buckets[usize::from(b.bucket)].count,
        3
    );
}

on_both_stores!(
    a_mark_ahead_is_set_back,
    a_fence_sets_a_mark_ahead_of_the_stream_back,
    a_fence_sets_a_mark_ahead_of_the_stream_back_on_dynamodb
);
