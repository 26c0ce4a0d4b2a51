//! The model's actors: the writer, the aggregator behind a model of Lambda's event source
//! mapping, and the recount jobs, each running the production code through stepped stores.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use count_aggregator::Aggregator;
use likes_admin::recount::{fence_bucket, finish_bucket};
use likes_admin::{AdminError, Stores};
use likes_core::control::Phase;
use likes_core::store::HeldItem;
use likes_core::{
    CountsAdmin, CountsLedger, LikesAdmin, LikesStore, PostBucket, StoreError, Window, WriteToken,
};
use likes_harness::stepped::{Gate, Scheduler, Stepped};
use likes_harness::stream::{record_json, FaultPlan, FaultyCounts, Rec};
use likes_sim::stream::batch as batch_json;

use super::world::{lock, JobEnd, Tables, AGGREGATOR, BATCH};

/// The Likes table as the jobs write it: a fence's stream record is appended with its item.
#[derive(Clone)]
struct Logged(Tables);

impl LikesAdmin for Logged {
    async fn count_bucket(&self, bucket: &PostBucket) -> Result<i64, StoreError> {
        self.0.likes.count_bucket(bucket).await
    }

    async fn count_kinds(&self, bucket: &PostBucket) -> Result<BTreeMap<String, i64>, StoreError> {
        self.0.likes.count_kinds(bucket).await
    }

    async fn bucket_users(&self, bucket: &PostBucket) -> Result<HashSet<String>, StoreError> {
        self.0.likes.bucket_users(bucket).await
    }

    async fn put_fence(
        &self,
        bucket: &PostBucket,
        job: &str,
        phase: Phase,
    ) -> Result<(), StoreError> {
        let name = match phase {
            Phase::Begin => "begin",
            Phase::End => "end",
        };
        self.0
            .append(Rec::fence(&bucket.post, bucket.bucket, job, name, ""));
        self.0.likes.put_fence(bucket, job, phase).await
    }

    async fn window(&self, bucket: &PostBucket, job: &str) -> Result<Window, StoreError> {
        self.0.likes.window(bucket, job).await
    }

    async fn recount_items(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        self.0.likes.recount_items(bucket).await
    }

    async fn delete_controls(&self, b: &PostBucket, keys: Vec<String>) -> Result<(), StoreError> {
        self.0.likes.delete_controls(b, keys).await
    }

    async fn scan_several(
        &self,
        segment: u32,
        total: u32,
        held: &AtomicU64,
    ) -> Result<Vec<Vec<HeldItem>>, StoreError> {
        self.0.likes.scan_several(segment, total, held).await
    }

    async fn scan_posts(
        &self,
        segment: u32,
        total: u32,
        likes: &AtomicU64,
    ) -> Result<BTreeSet<String>, StoreError> {
        self.0.likes.scan_posts(segment, total, likes).await
    }
}

pub async fn writer(t: Tables, gate: Gate, history: &'static [(usize, bool)]) {
    for (i, &(u, like)) in history.iter().enumerate() {
        let user = t.users[u].clone();
        gate.turn().await;
        let token = WriteToken::random();
        let changed = if like {
            t.likes
                .like(&t.post, &user, "2026-12-03T00:00:00Z", &token)
                .await
        } else {
            t.likes.unlike(&t.post, &user, &token).await
        };
        assert!(
            matches!(changed, Ok(true)),
            "the writer's history changes each time"
        );
        t.append(Rec::new(like, &t.post, &user, ""));
        gate.restart(&("wrote", i));
    }
}

pub async fn aggregator(t: Tables, gate: Gate, turns: Scheduler, faults: usize) {
    let agg = Aggregator::new(FaultyCounts::new(Stepped::new(
        t.counts.clone(),
        gate.clone(),
    )));
    let (mut size, mut faults) = (BATCH, faults);
    loop {
        // Between invocations the mapping carries only these (the checkpoint is in `t`).
        gate.restart(&("between batches", size, faults));
        // Records to deliver, or nobody left to write any.
        let (log, cp, others) = (t.log.clone(), t.checkpoint.clone(), turns.clone());
        gate.until(move || {
            lock(&log).len() > cp.load(Ordering::SeqCst) || others.running() == [AGGREGATOR]
        })
        .await;
        let cp = t.checkpoint.load(Ordering::SeqCst);
        let batch: Vec<Rec> = {
            let log = lock(&t.log);
            log[cp..(cp + size).min(log.len())].to_vec()
        };
        if batch.is_empty() {
            return;
        }
        // 0: clean; 1, 2: the function fails after its first or second write (a conditional
        // write refused counts: it was sent); 3: the batch delivered again after it succeeded.
        let fault = if faults > 0 { gate.choose(4).await } else { 0 };
        let crash = matches!(fault, 1 | 2);
        faults -= usize::from(fault != 0);
        let plan = FaultPlan {
            fail_writes_after: crash.then_some(fault),
            ..FaultPlan::default()
        };
        agg.store().set_plan(plan);
        let text = batch_json(batch.iter().map(record_json).collect()).to_string();
        let report = agg.process_json(&text, None).await.expect("parses");
        agg.store().clear();
        t.anomalies
            .fetch_add(report.anomalies + report.marks_ahead, Ordering::SeqCst);
        let failed_at = report.checkpoint.as_ref().map(|seq| {
            batch
                .iter()
                .position(|r| &r.seq == seq)
                .expect("a record of the batch")
        });
        match failed_at {
            // A function error: Lambda halves the batch and retries from the same record.
            Some(_) if crash => size = (batch.len() / 2).max(1),
            Some(at) => {
                size = BATCH;
                t.checkpoint.fetch_add(at, Ordering::SeqCst);
            }
            None if fault == 3 => {} // the same batch again
            None => {
                size = BATCH;
                t.checkpoint.fetch_add(batch.len(), Ordering::SeqCst);
            }
        }
    }
}

pub async fn job(t: Tables, gate: Gate, name: &'static str, buckets: Vec<u8>, takes_over: bool) {
    let s = Stores {
        likes: Stepped::new(Logged(t.clone()), gate.clone()),
        counts: Stepped::new(t.counts.clone(), gate.clone()),
        fence_wait: Duration::from_secs(60),
        lease_term: Duration::from_secs(60),
    };
    // Each end with whether the job held the lease as it ended: only a job that lost it may
    // fail.
    let end = |b: u8, e: JobEnd| {
        let item = t.counts.read_post_now(&t.post).unwrap_or_default();
        let holds = item.lease.is_some_and(|l| l.job == name);
        lock(&t.ended).push((name.to_owned(), b, e, holds));
    };
    // `lease::acquire` without its watch: the first job takes a free lease; the second takes
    // whatever it read, as it does once the holder stopped renewing for a term.
    let seen = s
        .counts
        .read_post(&t.post)
        .await
        .expect("reads")
        .and_then(|i| i.lease);
    if seen.is_some() && !takes_over {
        return end(buckets[0], JobEnd::Failed("busy".into()));
    }
    let taken = s.counts.take_lease(&t.post, name, 60, seen.as_ref()).await;
    if !matches!(taken, Ok(true)) {
        return end(buckets[0], JobEnd::Failed("busy".into()));
    }
    let mut seen = Vec::new();
    for &b in &buckets {
        seen.push(fence_bucket(&s, t.row(b), name).await.expect("in memory"));
    }
    // `wait_for_ends` without its clock: until every end is noted, or the aggregator has
    // caught up without noting one (a late job's fences are inert: it would time out).
    let noted_of = |t: &Tables| -> Vec<likes_core::Ended> {
        let item = t.counts.read_post_now(&t.post).unwrap_or_default();
        let noted: Vec<_> = buckets
            .iter()
            .filter_map(|b| {
                item.buckets[usize::from(*b)]
                    .ended
                    .clone()
                    .filter(|e| e.job == name)
            })
            .collect();
        noted
    };
    let waited = t.clone();
    let all = buckets.len();
    let bs = buckets.clone();
    gate.until(move || {
        let item = waited
            .counts
            .read_post_now(&waited.post)
            .unwrap_or_default();
        let noted = bs
            .iter()
            .filter(|b| {
                item.buckets[usize::from(**b)]
                    .ended
                    .as_ref()
                    .is_some_and(|e| e.job == name)
            })
            .count();
        noted == all || waited.checkpoint.load(Ordering::SeqCst) == waited.log_len()
    })
    .await;
    let noted = noted_of(&t);
    gate.record(&noted);
    if noted.len() < buckets.len() {
        for &b in &buckets {
            end(b, JobEnd::Failed("timeout".into()));
        }
        return;
    }
    let mut lost = false;
    for ((&b, seen), noted) in buckets.iter().zip(seen).zip(noted) {
        let done = finish_bucket(&s, t.row(b), name, seen, noted, true).await;
        lost |= matches!(done, Err(AdminError::LeaseLost { .. }));
        end(
            b,
            match done {
                Ok(r) => JobEnd::Recounted(r),
                Err(e) => JobEnd::Failed(format!("{e:?}")),
            },
        );
    }
    if !lost {
        s.counts
            .release_lease(&t.post, name)
            .await
            .expect("in memory");
    }
}
