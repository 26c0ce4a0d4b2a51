//! A post's exact recount while its likes keep flowing: the job's side of the fence protocol
//! (the aggregator's side, and why the result is exact, are in `count_aggregator::fences`).
//! Per bucket, all 16 at once: write the begin fence; read the bucket (consistent) — the users
//! S seen liking; write the end fence; wait for the aggregator to note the bucket's count at
//! the end fence; read the window W it recorded; the exact count at the end fence is
//! |S \ W| + |{u ∈ W : last change a like}|; add the difference, once; delete the fences and
//! the window.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use likes_core::control::{fence_key, job_fences, job_window, window_key, Phase};
use likes_core::{CountsAdmin, LikesAdmin, PostBucket, PostId, BUCKETS};

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

/// A job's lease covers its wait for the end fences and this much more for each of its other
/// phases (the buckets' reads; the corrections and cleanup); it is renewed between them.
const LEASE_MARGIN: Duration = Duration::from_secs(300);

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
    let lease = s.fence_wait + LEASE_MARGIN;
    lease::acquire(&s.counts, post, &job, lease).await?;
    let result = recount_buckets(s, post, buckets, &job, correct, lease).await;
    if !matches!(result, Err(AdminError::LeaseLost { .. })) {
        lease::release(&s.counts, post, &job).await?;
    }
    result
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
    lease: Duration,
) -> Result<Vec<BucketRecount>, AdminError> {
    let fenced = buckets
        .iter()
        .map(|b| fence_bucket(s, bucket_of(post, *b), job));
    let seen = all_or_first(futures::future::join_all(fenced).await)?;
    lease::renew(&s.counts, post, job, lease).await?;
    // One item holds every bucket's noted end: one poll for all of them.
    let counted = wait_for_ends(s, post, buckets, job).await?;
    // The corrections and the cleanup need the post to be this job's alone.
    lease::renew(&s.counts, post, job, lease).await?;
    let finished = buckets
        .iter()
        .zip(seen)
        .zip(counted)
        .map(|((b, seen), counted)| {
            finish_bucket(s, bucket_of(post, *b), job, seen, counted, correct)
        });
    all_or_first(futures::future::join_all(finished).await)
}

/// Waits until the aggregator has applied every bucket's end fence; their noted counts.
async fn wait_for_ends<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
    buckets: &[u8],
    job: &str,
) -> Result<Vec<i64>, AdminError> {
    let deadline = Instant::now() + s.fence_wait;
    let mut pause = Duration::from_millis(50);
    loop {
        let item = s.counts.read_post(post).await?.unwrap_or_default();
        let noted: Vec<Option<i64>> = buckets
            .iter()
            .map(|b| match &item.buckets[usize::from(*b)].ended {
                Some((ended, count)) if ended == job => Some(*count),
                _ => None,
            })
            .collect();
        if let Some(all) = noted.iter().copied().collect::<Option<Vec<i64>>>() {
            return Ok(all);
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
/// job's. Whether this job's end was settled (now, or by its own earlier attempt).
async fn settle<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
    b: u8,
    job: &str,
    diff: i64,
) -> Result<bool, AdminError> {
    if s.counts.settle(post, b, job, diff).await? {
        return Ok(true);
    }
    // No end noted: this job's own earlier attempt settled it (an SDK retry of a write whose
    // answer was lost). Another job's end: a job this one's lease outlived is still writing
    // fences; the count is left to that job's run.
    let item = s.counts.read_post(post).await?.unwrap_or_default();
    Ok(item.buckets[usize::from(b)].ended.is_none())
}

/// Fences and window entries of earlier jobs that died: with the lease held, no other job is
/// running, so they are garbage (their REMOVE records are ignored by the aggregator).
async fn clear_stale<L: LikesAdmin, C>(
    s: &Stores<L, C>,
    pb: &PostBucket,
    job: &str,
) -> Result<(), AdminError> {
    let (mine, my_window) = (job_fences(job), job_window(job));
    let dead = s
        .likes
        .recount_items(pb)
        .await?
        .into_iter()
        .filter(|sk| !mine.contains(sk) && !my_window.contains(sk))
        .collect();
    Ok(s.likes.delete_controls(pb, dead).await?)
}

/// The job's first half on one bucket: begin fence, read, end fence. The users seen liking.
async fn fence_bucket<L: LikesAdmin, C>(
    s: &Stores<L, C>,
    pb: PostBucket,
    job: &str,
) -> Result<HashSet<String>, AdminError> {
    clear_stale(s, &pb, job).await?;
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

/// The second half, once the end fence is applied: the window, the correction, the cleanup.
async fn finish_bucket<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    pb: PostBucket,
    job: &str,
    seen: HashSet<String>,
    counted: i64,
    correct: bool,
) -> Result<BucketRecount, AdminError> {
    let window = s.likes.window(&pb, job).await?;
    let exact = exact_count(&seen, &window);
    let diff = exact - counted;
    let settled = settle(s, &pb.post, pb.bucket, job, if correct { diff } else { 0 }).await?;
    // The fences and the window are done with; their deletes are control records too.
    let mut done: Vec<String> = window.keys().map(|u| window_key(job, u)).collect();
    done.push(fence_key(job, Phase::Begin));
    done.push(fence_key(job, Phase::End));
    s.likes.delete_controls(&pb, done).await?;
    Ok(BucketRecount {
        bucket: pb.bucket,
        counted,
        exact,
        corrected: settled && correct && diff != 0,
    })
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
