//! Per-caller limits: token buckets per (class, caller[, post]) in this execution
//! environment. A request over its class's limit is refused with a 429 before it costs a
//! DynamoDB request, so one token cannot spend the table's throughput that everyone shares.
//!
//! In process, so a request costs no extra call (docs/limits.md compares a shared counter
//! and WAF). What that leaves open: each execution environment keeps its own buckets, so a
//! caller whose requests land on k environments at once gets up to k times its limit; the
//! API's reserved concurrency (`ApiMaxConcurrency`) bounds k and the table's capacity.

use std::collections::HashMap;
use std::sync::Mutex;

// tokio's clock: the real one on Lambda, one a test can pause and advance.
use tokio::time::Instant;

use likes_aws::env::{CallerLimits, Rate};
use likes_core::{PostId, UserId};

/// What a request spends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    Writes,
    Flips,
    Reads,
    Lists,
    Erase,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Writes => "writes",
            Class::Flips => "likes and unlikes of one post",
            Class::Reads => "reads",
            Class::Lists => "lists and summaries",
            Class::Erase => "erase requests",
        }
    }

    fn rate(self, limits: &CallerLimits) -> Option<Rate> {
        match self {
            Class::Writes => limits.writes,
            Class::Flips => limits.flips,
            Class::Reads => limits.reads,
            Class::Lists => limits.lists,
            Class::Erase => limits.erase,
        }
    }
}

/// A refused request: which limit, and how long until it admits one more.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub class: Class,
    pub rate: Rate,
    pub retry_after_secs: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    class: Class,
    user: UserId,
    post: Option<PostId>,
}

#[derive(Debug)]
struct Bucket {
    /// Tokens at `at`; refills at one per `rate.every` up to `rate.burst`.
    tokens: f64,
    at: Instant,
}

/// Buckets remembered at most (one per caller and class, and per post for flips; ~20 MB at
/// worst with 128-character ids). Past that, buckets that have refilled go (they are as if
/// new), then the least recently seen: memory stays bounded, and a caller being held back,
/// who keeps knocking, is not forgotten.
const CAPACITY: usize = 50_000;

#[derive(Debug, Default)]
pub struct Limiter {
    limits: CallerLimits,
    buckets: Mutex<HashMap<Key, Bucket>>,
}

impl Limiter {
    pub fn new(limits: CallerLimits) -> Self {
        Self {
            limits,
            buckets: Mutex::default(),
        }
    }

    /// Spends one token of `class` for `user` (and `post`, for flips), or says when to retry.
    pub fn admit(&self, class: Class, user: &UserId, post: Option<&PostId>) -> Result<(), Refusal> {
        self.admit_all(user, &[(class, post)])
    }

    /// Spends one token of each, all or none: a request refused by one of its limits spends
    /// nothing of the others.
    pub fn admit_all(
        &self,
        user: &UserId,
        asks: &[(Class, Option<&PostId>)],
    ) -> Result<(), Refusal> {
        let asks: Vec<(Key, Rate)> = asks
            .iter()
            .filter_map(|(class, post)| {
                let rate = class.rate(&self.limits)?;
                let key = Key {
                    class: *class,
                    user: user.clone(),
                    post: post.cloned(),
                };
                Some((key, rate))
            })
            .collect();
        if asks.is_empty() {
            return Ok(());
        }
        // A panic elsewhere while holding the lock leaves the buckets as they were: use them.
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if buckets.len() >= CAPACITY {
            forget_some(&mut buckets, now, &self.limits);
        }
        let mut refusal: Option<Refusal> = None;
        for (key, rate) in &asks {
            let bucket = buckets.entry(key.clone()).or_insert(Bucket {
                tokens: f64::from(rate.burst),
                at: now,
            });
            // Brought up to now (refilling spends nothing).
            bucket.tokens = refilled(bucket, *rate, now);
            bucket.at = now;
            if bucket.tokens < 1.0 {
                let wait = (1.0 - bucket.tokens) * rate.every.as_secs_f64();
                let secs = wait.ceil().max(1.0) as u32;
                if refusal.as_ref().is_none_or(|r| r.retry_after_secs < secs) {
                    refusal = Some(Refusal {
                        class: key.class,
                        rate: *rate,
                        retry_after_secs: secs,
                    });
                }
            }
        }
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        for (key, _) in &asks {
            if let Some(bucket) = buckets.get_mut(key) {
                bucket.tokens -= 1.0;
            }
        }
        Ok(())
    }
}

fn refilled(bucket: &Bucket, rate: Rate, now: Instant) -> f64 {
    let gained = (now - bucket.at).as_secs_f64() / rate.every.as_secs_f64().max(1e-6);
    (bucket.tokens + gained).min(f64::from(rate.burst))
}

/// Frees an eighth of the capacity at least, so that the scan runs once per that many new
/// buckets, not once per request: refilled buckets first (they are as if new), then the least
/// recently seen.
fn forget_some(buckets: &mut HashMap<Key, Bucket>, now: Instant, limits: &CallerLimits) {
    buckets.retain(|k, b| {
        k.class
            .rate(limits)
            .is_some_and(|r| refilled(b, r, now) < f64::from(r.burst))
    });
    let keep = CAPACITY - CAPACITY / 8;
    if buckets.len() <= keep {
        return;
    }
    // The least recently seen: a caller being held back keeps knocking, so it stays.
    let mut by_age: Vec<(Instant, Key)> = buckets.iter().map(|(k, b)| (b.at, k.clone())).collect();
    by_age.sort_by_key(|(at, _)| *at);
    let excess = buckets.len() - keep;
    for (_, key) in by_age.into_iter().take(excess) {
        buckets.remove(&key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn user(n: usize) -> UserId {
        UserId::parse(&format!("user-{n}")).unwrap()
    }

    fn limiter(rate: Rate) -> Limiter {
        Limiter::new(CallerLimits {
            writes: Some(rate),
            ..CallerLimits::default()
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_burst_then_one_per_interval_and_a_true_retry_after() {
        let l = limiter(Rate::per_second(2, 4));
        let me = user(0);
        for i in 0..4 {
            assert_eq!(l.admit(Class::Writes, &me, None), Ok(()), "burst {i}");
        }
        let refused = l.admit(Class::Writes, &me, None).unwrap_err();
        assert_eq!(
            (refused.class, refused.retry_after_secs),
            (Class::Writes, 1)
        );
        // Refused requests spend nothing: half a second later one more goes through.
        tokio::time::advance(Duration::from_millis(500)).await;
        assert_eq!(l.admit(Class::Writes, &me, None), Ok(()));
        assert!(l.admit(Class::Writes, &me, None).is_err());
        // Idle long enough, the whole burst again, and never more.
        tokio::time::advance(Duration::from_secs(60)).await;
        let admitted = (0..10)
            .filter(|_| l.admit(Class::Writes, &me, None).is_ok())
            .count();
        assert_eq!(admitted, 4);
    }

    #[tokio::test(start_paused = true)]
    async fn callers_posts_and_classes_have_their_own_buckets() {
        let l = Limiter::new(CallerLimits {
            writes: Some(Rate::per_minute(1, 1)),
            flips: Some(Rate::per_minute(1, 1)),
            ..CallerLimits::default()
        });
        let (a, b) = (user(1), user(2));
        let (p, q) = (PostId::parse("p").unwrap(), PostId::parse("q").unwrap());
        assert!(l.admit(Class::Writes, &a, None).is_ok());
        assert!(l.admit(Class::Writes, &a, None).is_err());
        assert!(l.admit(Class::Writes, &b, None).is_ok(), "another caller");
        assert!(l.admit(Class::Flips, &a, Some(&p)).is_ok(), "another class");
        assert!(l.admit(Class::Flips, &a, Some(&p)).is_err());
        assert!(l.admit(Class::Flips, &a, Some(&q)).is_ok(), "another post");
        let refused = l.admit(Class::Writes, &a, None).unwrap_err();
        assert_eq!(refused.retry_after_secs, 60);
        // A class without a limit admits everything.
        assert!((0..100).all(|_| l.admit(Class::Lists, &a, None).is_ok()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_refused_by_one_limit_spends_nothing_of_the_other() {
        let l = Limiter::new(CallerLimits {
            writes: Some(Rate::per_minute(3, 3)),
            flips: Some(Rate::per_minute(1, 1)),
            ..CallerLimits::default()
        });
        let me = user(3);
        let (p, q) = (PostId::parse("p").unwrap(), PostId::parse("q").unwrap());
        let like = |post| l.admit_all(&me, &[(Class::Writes, None), (Class::Flips, Some(post))]);
        assert!(like(&p).is_ok());
        for _ in 0..5 {
            assert_eq!(like(&p).unwrap_err().class, Class::Flips);
        }
        // Two writes are left for other posts, the refused flips having spent none.
        assert!(like(&q).is_ok());
        let r = PostId::parse("r").unwrap();
        assert!(like(&r).is_ok());
        assert_eq!(
            like(&PostId::parse("s").unwrap()).unwrap_err().class,
            Class::Writes
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_callers_cannot_free_a_caller_being_held_back() {
        let l = limiter(Rate::per_minute(1, 1));
        let held = user(0);
        assert!(l.admit(Class::Writes, &held, None).is_ok());
        for n in 1..=CAPACITY + CAPACITY / 4 {
            if n % 1000 == 0 {
                tokio::time::advance(Duration::from_millis(1)).await;
                assert!(l.admit(Class::Writes, &held, None).is_err());
            }
            let _ = l.admit(Class::Writes, &user(n), None);
        }
        assert!(l.buckets.lock().unwrap().len() <= CAPACITY);
        assert!(
            l.admit(Class::Writes, &held, None).is_err(),
            "the held caller was forgotten"
        );
    }
}
