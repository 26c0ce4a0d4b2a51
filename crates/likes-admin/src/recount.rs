//! A post's exact recount while its likes keep flowing: the job's side of the fence protocol
//! (the aggregator's side, and why the result is exact, are in `count_aggregator::fences`).
//! Holding the post's lease ([`crate::lease`]), per bucket, all 16 at once: write the begin
//! fence; read the bucket (consistent) — the users S seen liking; write the end fence; wait for
//! the aggregator to note the bucket's count and window entries at the end fence; read the
//! window W it recorded, and refuse if it holds fewer entries than noted (something deleted
//! some); the exact count at the end fence is |S \ W| + |{u ∈ W : last change a like}|; add
//! the difference, once, conditional on still holding the lease; delete the job's fences and
//! window. Nothing of another job's is touched: a dead job's control items expire by TTL.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::time::{Duration, Instant};

use likes_core::control::{fence_key, Phase};
use likes_core::reaction::{Held, LIKE};
use likes_core::{CountsAdmin, Ended, LikesAdmin, PostBucket, PostId, Window, BUCKETS};

use crate::{lease, AdminError, Stores};

/// The exact count at the end fence (see the module docs) of every kind: `seen` and `window`
/// are keyed by the items' sort keys (`{user}` a like, `{user}#{kind}` a reaction), and each
/// kind is counted as the like is.
pub fn exact_counts(
    seen: &HashSet<String>,
    window: &HashMap<String, bool>,
) -> BTreeMap<String, i64> {
    let mut exact: BTreeMap<String, i64> = BTreeMap::from([(LIKE.to_owned(), 0)]);
    let held = seen
        .iter()
        .filter(|k| !window.contains_key(*k))
        .chain(window.iter().filter(|(_, put)| **put).map(|(k, _)| k));
    for key in held {
        // As the aggregator counts (`Held`): a key of a kind outside the grammar, or of the like
        // spelled as a reaction, is no like and no reaction.
        if let Some(kind) = Held::of(key).kind() {
            *exact.entry(kind.to_owned()).or_insert(0) += 1;
        }
    }
    exact
}

/// One kind of one bucket: as counted at the end fence, and exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindRecount {
    pub kind: String,
    pub counted: i64,
    pub exact: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRecount {
    pub bucket: u8,
    /// The bucket's like count, as the aggregator had it at the end fence.
    pub counted: i64,
    /// The exact like count at the end fence.
    pub exact: i64,
    /// The other kinds, likewise (those counted or held).
    pub kinds: Vec<KindRecount>,
    /// Whether the differences were added to the bucket.
    pub corrected: bool,
}

impl BucketRecount {
    /// The like count's drift.
    pub fn drift(&self) -> i64 {
        self.counted - self.exact
    }

    /// Whether any kind, the like included, drifted.
    pub fn drifted(&self) -> bool {
        self.drift() != 0 || self.kinds.iter().any(|k| k.counted != k.exact)
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
    kinds: &[(String, i64)],
) -> Result<(), AdminError> {
    if s.counts.settle(post, b, job, diff, kinds).await? {
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
/// Public so that the repair protocol's model check (`tests/integration/repair_check/`) runs
/// the job's own code.
pub async fn fence_bucket<L: LikesAdmin, C>(
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
/// cleanup. Public so that the recount property (`tests/integration/recount_model.rs`) runs the
/// job's own code rather than a copy of it.
pub async fn finish_bucket<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    pb: PostBucket,
    job: &str,
    seen: HashSet<String>,
    noted: Ended,
    correct: bool,
) -> Result<BucketRecount, AdminError> {
    let window = s.likes.window(&pb, job).await?;
    let complete = window.entries == noted.entries;
    let mut exact = exact_counts(&seen, &window.last);
    let like_exact = exact.remove(LIKE).unwrap_or(0);
    let diff = like_exact - noted.count;
    // Every kind noted or held; a kind not noted was counted 0 at the fence (the aggregator
    // notes every kind the bucket had).
    let mut kinds: Vec<KindRecount> = noted
        .kinds
        .keys()
        .chain(exact.keys())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .map(|k| KindRecount {
            kind: k.clone(),
            counted: noted.kinds.get(k).copied().unwrap_or(0),
            exact: exact.get(k).copied().unwrap_or(0),
        })
        .collect();
    kinds.sort_by(|a, b| a.kind.cmp(&b.kind));
    // A window that lost entries gives no exact count: forget the noted end, correct nothing.
    let apply = correct && complete;
    let kind_diffs: Vec<(String, i64)> = kinds
        .iter()
        .filter(|k| noted.kinds.contains_key(&k.kind) || (apply && k.exact != k.counted))
        .map(|k| (k.kind.clone(), if apply { k.exact - k.counted } else { 0 }))
        .collect();
    let settled = settle(
        s,
        &pb.post,
        pb.bucket,
        job,
        if apply { diff } else { 0 },
        &kind_diffs,
    )
    .await;
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
    let drifted = diff != 0 || kinds.iter().any(|k| k.exact != k.counted);
    Ok(BucketRecount {
        bucket: pb.bucket,
        counted: noted.count,
        exact: like_exact,
        kinds,
        corrected: correct && drifted,
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
        assert_eq!(exact_counts(&seen, &window)[LIKE], 1 + 2);
        assert_eq!(exact_counts(&seen, &HashMap::new())[LIKE], 3);
    }

    #[test]
    fn each_kind_is_counted_as_the_like_is() {
        let seen: HashSet<String> = ["a", "a#love", "b#love", "c#+1"].map(String::from).into();
        // b's love removed and a's +1 added within the window.
        let window: HashMap<String, bool> = [("b#love", false), ("a#+1", true)]
            .map(|(u, l)| (u.to_owned(), l))
            .into();
        let exact = exact_counts(&seen, &window);
        let want: BTreeMap<String, i64> = [("like", 1), ("love", 1), ("+1", 2)]
            .map(|(k, n)| (k.to_owned(), n))
            .into();
        assert_eq!(exact, want);
    }
}
