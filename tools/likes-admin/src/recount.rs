//! A post's exact recount while its likes keep flowing: the job's side of the fence protocol
//! (the aggregator's side, and why the result is exact, are in `count_aggregator::recount`).
//! Per bucket, all 16 at once: write `~fence#<job>#begin`; read the bucket (consistent) — the
//! users S seen liking; write `~fence#<job>#end`; wait for the aggregator to note the bucket's
//! count at the end fence; read the window W it recorded; the exact count at the end fence is
//! |S \ W| + |{u ∈ W : last change a like}|; add the difference, once; delete the fences and
//! the window.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::schema::counts;
use likes_core::schema::likes::{EVENT, PK, SK};
use likes_core::store::dynamo_counts::recount_attrs;
use likes_core::store::error::{classify, classify_read};
use likes_core::{CountsStore, DynamoCounts, PostBucket, PostId, BUCKETS};

use crate::{lock, AdminError, Tables};

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
pub async fn recount_post(
    t: &Tables,
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
    let lease = t.fence_wait + LEASE_MARGIN;
    lock::acquire(t, post, &job, lease).await?;
    let result = recount_buckets(t, post, buckets, &job, correct, lease).await;
    if !matches!(result, Err(AdminError::LeaseLost { .. })) {
        lock::release(t, post, &job).await?;
    }
    result
}

/// A job's lease covers its wait for the end fences and this much more for each of its other
/// phases (the buckets' reads; the corrections and cleanup); it is renewed between them.
const LEASE_MARGIN: Duration = Duration::from_secs(300);

/// The first error of `results`, or all their values: every bucket's step runs to its end
/// (closing its window, cleaning up) even when another bucket's failed.
fn all_or_first<T>(results: Vec<Result<T, AdminError>>) -> Result<Vec<T>, AdminError> {
    results.into_iter().collect()
}

async fn recount_buckets(
    t: &Tables,
    post: &PostId,
    buckets: &[u8],
    job: &str,
    correct: bool,
    lease: Duration,
) -> Result<Vec<BucketRecount>, AdminError> {
    let fenced = buckets.iter().map(|b| fence_bucket(t, post, *b, job));
    let seen = all_or_first(futures::future::join_all(fenced).await)?;
    lock::renew(t, post, job, lease).await?;
    // One item holds every bucket's noted end: one poll for all of them.
    let counted = wait_for_ends(t, post, buckets, job).await?;
    // The corrections and the cleanup need the post to be this job's alone.
    lock::renew(t, post, job, lease).await?;
    let finished = buckets
        .iter()
        .zip(seen)
        .zip(counted)
        .map(|((b, seen), counted)| finish_bucket(t, post, *b, job, seen, counted, correct));
    all_or_first(futures::future::join_all(finished).await)
}

fn fence_key(job: &str, phase: &str) -> String {
    format!("~fence#{job}#{phase}")
}

async fn put_control(t: &Tables, pb: &PostBucket, sort_key: String) -> Result<(), AdminError> {
    t.client
        .put_item()
        .table_name(&t.likes)
        .item(PK, AttributeValue::S(pb.to_string()))
        .item(SK, AttributeValue::S(sort_key))
        .send()
        .await
        .map_err(|e| AdminError::Store(classify(e)))?;
    Ok(())
}

/// The items of a bucket whose sort key is in `[from, to)`, read consistently: their sort keys
/// and, for window entries, their event.
async fn read_range(
    t: &Tables,
    pb: &PostBucket,
    from: &str,
    to: &str,
) -> Result<Vec<(String, Option<String>)>, AdminError> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let mut query = t
            .client
            .query()
            .table_name(&t.likes)
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#u", SK)
            .expression_attribute_names("#e", EVENT)
            .expression_attribute_values(":pb", AttributeValue::S(pb.to_string()))
            .expression_attribute_values(":to", AttributeValue::S(to.to_owned()));
        // A key condition cannot hold an empty string: from the start is "below `to`".
        query = if from.is_empty() {
            query.key_condition_expression("#pb = :pb AND #u < :to")
        } else {
            query
                .key_condition_expression("#pb = :pb AND #u BETWEEN :from AND :to")
                .expression_attribute_values(":from", AttributeValue::S(from.to_owned()))
        };
        let page = query
            .projection_expression("#u, #e")
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(classify_read)?;
        for item in page.items() {
            let s = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
            if let Some(sk) = s(SK) {
                // BETWEEN is inclusive; the upper bound itself is never a wanted key.
                if sk.as_str() < to {
                    out.push((sk, s(EVENT)));
                }
            }
        }
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return Ok(out),
        }
    }
}

/// Waits until the aggregator has applied every bucket's end fence; their noted counts.
async fn wait_for_ends(
    t: &Tables,
    post: &PostId,
    buckets: &[u8],
    job: &str,
) -> Result<Vec<i64>, AdminError> {
    let store = DynamoCounts::new(t.client.clone(), &t.counts);
    let deadline = Instant::now() + t.fence_wait;
    let mut pause = Duration::from_millis(50);
    loop {
        let item = store.read_post(post).await?.unwrap_or_default();
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
                t.fence_wait
            )));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// Adds `diff` to the bucket and forgets the noted end, once: only while the end noted is this
/// job's. Whether this job's end was settled (now, or by its own earlier attempt).
async fn settle(
    t: &Tables,
    post: &PostId,
    b: u8,
    job: &str,
    diff: i64,
) -> Result<bool, AdminError> {
    let (c, _, _) = likes_core::store::dynamo_counts::bucket_attrs(b);
    let (_, ej, ec) = recount_attrs(b);
    let mut req = t
        .client
        .update_item()
        .table_name(&t.counts)
        .key(counts::PK, AttributeValue::S(post.as_str().to_owned()))
        .condition_expression("#ej = :job")
        .expression_attribute_names("#ej", ej)
        .expression_attribute_names("#ec", ec)
        .expression_attribute_values(":job", AttributeValue::S(job.to_owned()));
    req = if diff == 0 {
        req.update_expression("REMOVE #ej, #ec")
    } else {
        req.update_expression("ADD #c :d REMOVE #ej, #ec")
            .expression_attribute_names("#c", c)
            .expression_attribute_values(":d", AttributeValue::N(diff.to_string()))
    };
    match req.send().await {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
        {
            // No end noted: this job's own earlier attempt settled it (an SDK retry of a write
            // whose answer was lost). Another job's end: a job this one's lease outlived is
            // still writing fences; the count is left to that job's run.
            let store = DynamoCounts::new(t.client.clone(), &t.counts);
            let item = store.read_post(post).await?.unwrap_or_default();
            Ok(item.buckets[usize::from(b)].ended.is_none())
        }
        Err(e) => Err(AdminError::Store(classify(e))),
    }
}

async fn delete_control(t: &Tables, pb: &PostBucket, sort_key: String) -> Result<(), AdminError> {
    t.client
        .delete_item()
        .table_name(&t.likes)
        .key(PK, AttributeValue::S(pb.to_string()))
        .key(SK, AttributeValue::S(sort_key))
        .send()
        .await
        .map_err(|e| AdminError::Store(classify(e)))?;
    Ok(())
}

/// Deletes control items of one bucket, a few at a time.
async fn delete_controls(
    t: &Tables,
    pb: &PostBucket,
    sort_keys: Vec<String>,
) -> Result<(), AdminError> {
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(sort_keys)
        .map(|sk| delete_control(t, pb, sk))
        .buffer_unordered(8)
        .try_collect()
        .await
}

/// Fences and window entries of earlier jobs that died: with the lease held, no other job is
/// running, so they are garbage (their REMOVE records are ignored by the aggregator).
async fn clear_stale(t: &Tables, pb: &PostBucket, job: &str) -> Result<(), AdminError> {
    let mut stale = read_range(t, pb, "~fence#", "~fence$").await?;
    stale.extend(read_range(t, pb, "~w#", "~w$").await?);
    let mine = [format!("~fence#{job}#"), format!("~w#{job}#")];
    let dead = stale
        .into_iter()
        .map(|(sk, _)| sk)
        .filter(|sk| !mine.iter().any(|m| sk.starts_with(m.as_str())))
        .collect();
    delete_controls(t, pb, dead).await
}

/// The job's first half on one bucket: begin fence, read, end fence. The users seen liking.
async fn fence_bucket(
    t: &Tables,
    post: &PostId,
    b: u8,
    job: &str,
) -> Result<HashSet<String>, AdminError> {
    let pb = PostBucket {
        post: post.clone(),
        bucket: b,
    };
    clear_stale(t, &pb, job).await?;
    let begun = put_control(t, &pb, fence_key(job, "begin")).await;
    // Every user id sorts below "~" (it is not in the id grammar).
    let seen = match &begun {
        Ok(()) => read_range(t, &pb, "", "~").await,
        Err(_) => Ok(Vec::new()),
    };
    // The end fence whatever happened above — a begin reported failed may still have been
    // applied — so that no window stays open for the aggregator to go on recording into; an end
    // with no open window only advances the bucket's mark.
    let ended = put_control(t, &pb, fence_key(job, "end")).await;
    begun?;
    ended?;
    Ok(seen?.into_iter().map(|(u, _)| u).collect())
}

/// The second half, once the end fence is applied: the window, the correction, the cleanup.
async fn finish_bucket(
    t: &Tables,
    post: &PostId,
    b: u8,
    job: &str,
    seen: HashSet<String>,
    counted: i64,
    correct: bool,
) -> Result<BucketRecount, AdminError> {
    let pb = PostBucket {
        post: post.clone(),
        bucket: b,
    };
    let prefix = format!("~w#{job}#");
    let window: HashMap<String, bool> = read_range(t, &pb, &prefix, &format!("~w#{job}$"))
        .await?
        .into_iter()
        .filter_map(|(k, ev)| {
            Some((
                k.strip_prefix(&prefix)?.to_owned(),
                ev.as_deref() == Some("I"),
            ))
        })
        .collect();
    let exact = exact_count(&seen, &window);
    let diff = exact - counted;
    let settled = settle(t, post, b, job, if correct { diff } else { 0 }).await?;
    // The fences and the window are done with; their deletes are control records too.
    let mut done: Vec<String> = window.keys().map(|u| format!("{prefix}{u}")).collect();
    done.push(fence_key(job, "begin"));
    done.push(fence_key(job, "end"));
    delete_controls(t, &pb, done).await?;
    Ok(BucketRecount {
        bucket: b,
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
