//! The race the Counts update's lease condition exists for, on DynamoDB: the aggregator reads
//! the post's item, sees the fence's job holding the lease, and — before its write reaches
//! DynamoDB — the lease passes to another job. The begin fence must then open no window: only
//! the condition on the write itself (`lj = job`) can know. An SDK interceptor moves the lease
//! at that instant, from another thread and client, as another `likes-admin` would.

use std::sync::{Arc, Mutex};

use count_aggregator::Aggregator;
use likes_core::{bucket_of, CountsAdmin, CountsLedger, PostBucket, PostId, UserId};
use likes_harness::stream::{event_json, Deliver};
use likes_harness::Tables;
use likes_sim::stream::StreamRecord;

type Action = Box<dyn FnOnce() + Send>;

/// Runs `action` once, just before the first `UpdateItem` is sent.
#[derive(Clone)]
struct BeforeFirstUpdate(Arc<Mutex<Option<Action>>>);

impl std::fmt::Debug for BeforeFirstUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BeforeFirstUpdate")
    }
}

impl aws_sdk_dynamodb::config::Intercept for BeforeFirstUpdate {
    fn name(&self) -> &'static str {
        "BeforeFirstUpdate"
    }

    fn read_before_transmit(
        &self,
        _ctx: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _rc: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let op = cfg
            .load::<aws_smithy_runtime_api::client::orchestrator::Metadata>()
            .map(|m| m.name().to_owned());
        if op.as_deref() == Some("UpdateItem") {
            let action = self.0.lock().expect("lock").take();
            if let Some(action) = action {
                action();
            }
        }
        Ok(())
    }
}

/// `job` gives the post's lease up and `to` takes it: on its own thread, runtime and client.
fn hand_over(t: &Tables, post: &PostId, job: &'static str, to: &'static str) -> Action {
    let (t, post) = (t.clone(), post.clone());
    Box::new(move || {
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async {
                let counts = t.counts();
                counts.release_lease(&post, job).await.expect("released");
                assert!(counts.take_lease(&post, to, 60, None).await.expect("taken"));
            });
        })
        .join()
        .expect("the other job");
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_begin_fence_whose_job_lost_the_lease_after_the_read_opens_no_window() {
    let t = Tables::new().await;
    let post = PostId::parse("raced-post").expect("an id");
    let user = UserId::parse("raced-user").expect("an id");
    let bucket = bucket_of(&user);
    let pb = PostBucket {
        post: post.clone(),
        bucket,
    }
    .to_string();
    assert!(t
        .counts()
        .take_lease(&post, "stale", 60, None)
        .await
        .expect("lease"));

    let hook = BeforeFirstUpdate(Arc::new(Mutex::new(Some(hand_over(
        &t, &post, "stale", "live",
    )))));
    let conf = t
        .client
        .config()
        .to_builder()
        .interceptor(hook.clone())
        .build();
    let raced =
        likes_aws::DynamoCounts::new(aws_sdk_dynamodb::Client::from_conf(conf), &t.counts_table)
            .with_windows(t.likes());
    let agg = Aggregator::new(raced);
    let seq = 100_000_000_000_000_000_000u128;
    let records = vec![
        StreamRecord::likes("INSERT", &pb, "~fence#stale#begin", &seq.to_string()).to_json(),
        StreamRecord::likes("INSERT", &pb, user.as_str(), &(seq + 1).to_string()).to_json(),
    ];
    let report = agg.deliver(&event_json(&records)).await;

    assert!(
        hook.0.lock().expect("lock").is_none(),
        "the lease moved mid-write"
    );
    assert_eq!(report.checkpoint, None, "{report:?}");
    let item = t
        .counts()
        .read_post(&post)
        .await
        .expect("read")
        .expect("the item");
    let state = &item.buckets[usize::from(bucket)];
    assert_eq!(
        state.window, None,
        "a job without the lease opened a window"
    );
    assert_eq!(state.count, 1, "the like after the fence is counted");
    assert_eq!(item.lease.map(|l| l.job), Some("live".to_owned()));
}
