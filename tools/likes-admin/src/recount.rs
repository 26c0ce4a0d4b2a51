//! A post's exact recount while its likes keep flowing: the job's side of the fence protocol
//! (the aggregator's side, and why the result is exact, are in `count_aggregator::fences`).
//! Holding the post's lease ([`crate::lease`]), per bucket, all 16 at once: write the begin
//! fence; read the bucket (consistent) — the users S seen liking; write the end fence; wait for
//! the aggregator to note the bucket's count and window entries at the end fence; read the
//! window W it recorded, and refuse if it holds fewer entries than noted (something deleted
//! some); the exact count at the end fence is |S \ W| + |{u ∈ W : last change a like}|; add
//! the difference, once, conditional on still holding the lease; delete the job's fences and
//! window. Nothing of another job's is touched: a dead job's control items expire by TTL.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use likes_core::control::{fence_key, Phase};
use likes_core::{CountsAdmin, Ended, LikesAdmin, PostBucket, PostId, Window, BUCKETS};

use crate::{lease, AdminError, Stores};

/// The exact count at the end fence (see the module docs).
pub fn exact_count(seen: &HashSet<String>, window: &HashMap<String, bool>) -> i64 {
    let untouched = seen.iter().filter(|u| !window.contains_key(*u)).count();
    let liked = window.values().filter(|l| **l).count();
    (untouched + liked) as i64
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRecount {
    pub bucket: u8,
    /// The bucket's count, as the aggregator had it at the end fence.
    pub counted: i64,
    /// The exact count at the end fence.
    pub exact: i64,
    /// Whether the difference was added to the bucket.
    pub corrected: bool,
}

impl BucketRecount {
    pub fn drift(&self) -> i64 {
        self.counted - self.exact
    }
}

/// Recounts `buckets` of `post` (all 16 when empty); with `correct` false it only measures
/// (an exact audit).
pub async fn recount_post<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
    buckets: &[u8],
    correct: bool,
) -> Result<Vec<BucketRecount>, AdminError> {
    let job = uuid::Uuid::new_v4().simple().to_string();
    let all: Vec<u8> = (0..BUCKETS).collect();
    let buckets = if buckets.is_empty() {
        &all[..]
    } else {
        buckets
    };
    let work = recount_buckets(s, post, buckets, &job, correct);
    lease::hold(&s.counts, post, &job, s.lease_term, work).await
}

/// The first error of `results`, or all their values: every bucket's step runs to its end
/// (closing its window, cleaning up) even when another bucket's failed.
fn all_or_first<T>(results: Vec<Result<T, AdminError>>) -> Result<Vec<T>, AdminError> {
    results.into_iter().collect()
}

fn bucket_of(post: &PostId, bucket: u8) -> PostBucket {
    PostBucket {
        post: post.clone(),
        bucket,
    }
}

async fn recount_buckets<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
    buckets: &[u8],
    job: &str,
    correct: bool,
) -> Result<Vec<BucketRecount>, AdminError> {
    let fenced = buckets
        .iter()
        .map(|b| fence_bucket(s, bucket_of(post, *b), job));
    let seen = all_or_first(futures::future::join_all(fenced).await)?;
    // One item holds every bucket's noted end: one poll for all of them.
    let noted = wait_for_ends(s, post, buckets, job).await?;
    let finished = buckets
        .iter()
        .zip(seen)
        .zip(noted)
        .map(|((b, seen), noted)| finish_bucket(s, bucket_of(post, *b), job, seen, noted, correct));
    all_or_first(futures::future::join_all(finished).await)
}

/// Waits until the aggregator has applied every bucket's end fence; what it noted at each.
async fn wait_for_ends<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
    buckets: &[u8],
    job: &str,
) -> Result<Vec<Ended>, AdminError> {
    let deadline = Instant::now() + s.fence_wait;
    let mut pause = Duration::from_millis(50);
    loop {
        let item = s.counts.read_post(post).await?.unwrap_or_default();
        let noted: Vec<Option<Ended>> = buckets
            .iter()
            .map(|b| {
                item.buckets[usize::from(*b)]
                    .ended
                    .clone()
                    .filter(|e| e.job == job)
            })
            .collect();
        if noted.iter().all(Option::is_some) {
            return Ok(noted.into_iter().flatten().collect());
        }
        if Instant::now() > deadline {
            let waiting: Vec<u8> = buckets
                .iter()
                .zip(&noted)
                .filter(|(_, n)| n.is_none())
                .map(|(b, _)| *b)
                .collect();
            return Err(AdminError::Timeout(format!(
                "the aggregator did not reach the end fences of post {post} (buckets {waiting:?}) within {:?}: is the stream mapping running, and how far behind is it (iterator age)? Running again is safe",
                s.fence_wait
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Adds `diff` to the bucket and forgets the noted end, once: only while the end noted is this
/// job's and the job holds the lease. Whether this job's end was settled (now, or by its own
/// earlier attempt whose answer was lost).
async fn settle<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
    b: u8,
    job: &str,
    diff: i64,
) -> Result<(), AdminError> {
    if s.counts.settle(post, b, job, diff).await? {
        return Ok(());
    }
    let item = s.counts.read_post(post).await?.unwrap_or_default();
    let holds = item.lease.as_ref().is_some_and(|l| l.job == job);
    match &item.buckets[usize::from(b)].ended {
        None if holds => Ok(()),
        _ => Err(lease::lost(post, job)),
    }
}

/// The job's first half on one bucket: begin fence, read, end fence. The users seen liking.
async fn fence_bucket<L: LikesAdmin, C>(
    s: &Stores<L, C>,
    pb: PostBucket,
    job: &str,
) -> Result<HashSet<String>, AdminError> {
    let begun = s.likes.put_fence(&pb, job, Phase::Begin).await;
    let seen = match &begun {
        Ok(()) => s.likes.bucket_users(&pb).await,
        Err(_) => Ok(HashSet::new()),
    };
    // The end fence whatever happened above — a begin reported failed may still have been
    // applied — so that no window stays open for the aggregator to go on recording into; an end
    // with no open window only advances the bucket's mark.
    let ended = s.likes.put_fence(&pb, job, Phase::End).await;
    begun?;
    ended?;
    Ok(seen?)
}

/// The second half, once the end fence is applied: the window, its check, the correction, the
/// cleanup.
async fn finish_bucket<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    pb: PostBucket,
    job: &str,
    seen: HashSet<String>,
    noted: Ended,
    correct: bool,
) -> Result<BucketRecount, AdminError> {
    let window = s.likes.window(&pb, job).await?;
    let complete = window.entries == noted.entries;
    let exact = exact_count(&seen, &window.last);
    let diff = exact - noted.count;
    // A window that lost entries gives no exact count: forget the noted end, correct nothing.
    let apply = if correct && complete { diff } else { 0 };
    let settled = settle(s, &pb.post, pb.bucket, job, apply).await;
    s.likes
        .delete_controls(&pb, own_items(job, &window))
        .await?;
    settled?;
    if !complete {
        return Err(AdminError::WindowDisturbed {
            post: pb.post.to_string(),
            job: job.to_owned(),
            bucket: pb.bucket,
            noted: noted.entries,
            found: window.entries,
        });
    }
    Ok(BucketRecount {
        bucket: pb.bucket,
        counted: noted.count,
        exact,
        corrected: correct && diff != 0,
    })
}

/// The job's own control items in a bucket: its fences and its window's entries.
fn own_items(job: &str, window: &Window) -> Vec<String> {
    let mut keys = window.keys.clone();
    keys.push(fence_key(job, Phase::Begin));
    keys.push(fence_key(job, Phase::End));
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_count_takes_window_users_from_the_window() {
        let seen: HashSet<String> = ["a", "b", "c"].map(String::from).into();
        // b unliked and c liked again within the window; d liked (not seen: read before).
        let window: HashMap<String, bool> = [("b", false), ("c", true), ("d", true)]
            .map(|(u, l)| (u.to_owned(), l))
            .into();
        assert_eq!(exact_count(&seen, &window), 1 + 2);
        assert_eq!(exact_count(&seen, &HashMap::new()), 3);
    }
}
