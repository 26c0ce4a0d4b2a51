use super::*;

/// An entry is kept for exactly its TTL, then gone; the TTL is capped; the cache is bounded.
#[tokio::test(start_paused = true)]
async fn remembers_for_the_ttl_only_and_is_bounded() {
    let post = PostId::new_random();
    let off = CountCache::new(Duration::ZERO);
    off.put(&post, Counts::Likes(3));
    assert_eq!(
        (off.likes(&post, Age::Route), off.last(&post)),
        (None, None)
    );
    let cache = CountCache::new(Duration::from_millis(50));
    assert_eq!(cache.likes(&post, Age::Route), None);
    cache.put(&post, Counts::Likes(3));
    tokio::time::advance(Duration::from_millis(49)).await;
    assert_eq!(cache.likes(&post, Age::Route), Some(3), "kept for its TTL");
    tokio::time::advance(Duration::from_millis(1)).await;
    assert_eq!(
        cache.likes(&post, Age::Route),
        None,
        "gone once its TTL has passed"
    );
    assert_eq!(
        cache.last(&post),
        Some(Counts::Likes(3)),
        "kept as the last read"
    );
    tokio::time::advance(MAX_STALE - Duration::from_millis(50)).await;
    assert_eq!(
        cache.last(&post),
        None,
        "never shown once older than MAX_STALE"
    );
    assert_eq!(CountCache::new(Duration::from_secs(60)).ttl(), MAX_TTL);
    for _ in 0..CAPACITY + 10 {
        cache.put(&PostId::new_random(), Counts::Likes(1));
    }
    assert!(cache.entries.lock().unwrap().map.len() <= CAPACITY);
}

/// A flood of fresh posts (three times the capacity, within one TTL) never evicts a post
/// that is being read, nor empties the cache.
#[tokio::test(start_paused = true)]
async fn a_flood_of_fresh_posts_keeps_the_hot_ones() {
    let cache = CountCache::new(Duration::from_secs(1));
    let hot = PostId::new_random();
    cache.put(&hot, Counts::Likes(42));
    for i in 0..CAPACITY * 3 {
        cache.put(&PostId::new_random(), Counts::Likes(1));
        if i % 100 == 0 {
            assert_eq!(
                cache.likes(&hot, Age::Route),
                Some(42),
                "the hot post was evicted at {i}"
            );
        }
        let size = cache.entries.lock().unwrap().map.len();
        assert!(
            i < CAPACITY || size > CAPACITY / 2,
            "the cache was emptied at {i}: {size}"
        );
    }
    assert_eq!(cache.likes(&hot, Age::Route), Some(42));
}

/// A full cache drops what no read can use, then the least used down to seven eighths, so
/// the next eighth of inserts scans nothing; an entry whose write mark still marks is never
/// evicted, however little used (else a read within the mark would serve a feed age), and one
/// whose mark has passed goes with the stale.
#[tokio::test(start_paused = true)]
async fn a_full_cache_makes_room_for_an_eighth() {
    let cache = CountCache::new(Duration::from_secs(1)).with_feed_age(MAX_FEED_AGE);
    let marked = PostId::new_random();
    cache.written(&marked);
    for _ in 0..CAPACITY - 1 {
        cache.put(&PostId::new_random(), Counts::Likes(1));
    }
    let len = || cache.entries.lock().unwrap().map.len();
    let holds = |p: &PostId| cache.entries.lock().unwrap().map.contains_key(p);
    assert_eq!(len(), CAPACITY);
    cache.put(&PostId::new_random(), Counts::Likes(1));
    assert_eq!(len(), CAPACITY - EVICT + 1, "evicted down to seven eighths");
    assert!(
        holds(&marked),
        "the least used entry, but its mark still marks"
    );
    tokio::time::advance(MAX_STALE).await;
    for _ in 0..EVICT - 1 {
        cache.put(&PostId::new_random(), Counts::Likes(1));
    }
    assert_eq!(len(), CAPACITY);
    let again = PostId::new_random();
    cache.written(&again);
    // Every entry but the last eighth's is past MAX_STALE, and the first mark has passed.
    assert_eq!(len(), EVICT);
    assert!(holds(&again) && !holds(&marked));
}

/// Counts read before this environment's write, or within the mark after it, are kept for
/// the TTL only; the first read past the mark serves the feed age again.
#[tokio::test(start_paused = true)]
async fn a_write_holds_its_posts_counts_to_the_ttl_within_its_mark_only() {
    let ttl = Duration::from_secs(1);
    let cache = CountCache::new(ttl).with_feed_age(MAX_FEED_AGE);
    let post = PostId::new_random();
    cache.put(&post, Counts::Likes(1));
    cache.written(&post);
    tokio::time::advance(ttl).await;
    assert_eq!(cache.likes(&post, Age::Feed), None, "read before the write");
    assert_eq!(cache.last(&post), Some(Counts::Likes(1)));
    tokio::time::advance(WRITE_MARK - ttl - Duration::from_millis(1)).await;
    cache.put(&post, Counts::Likes(2));
    tokio::time::advance(ttl).await;
    assert_eq!(cache.likes(&post, Age::Feed), None, "read within the mark");
    cache.put(&post, Counts::Likes(3));
    tokio::time::advance(MAX_FEED_AGE - Duration::from_millis(1)).await;
    assert_eq!(cache.likes(&post, Age::Feed), Some(3), "read past the mark");
    assert_eq!(
        cache.likes(&post, Age::Route),
        None,
        "the route keeps its TTL"
    );
}

/// Kind counts are answered only from a read of every kind; either read answers the like
/// count.
#[tokio::test(start_paused = true)]
async fn kinds_come_from_a_read_of_every_kind_only() {
    let cache = CountCache::new(Duration::from_secs(1));
    let post = PostId::new_random();
    cache.put(&post, Counts::Likes(4));
    assert_eq!(
        (
            cache.likes(&post, Age::Route),
            cache.kinds(&post, Age::Route)
        ),
        (Some(4), None)
    );
    let kinds = Arc::new(BTreeMap::from([
        (LIKE.to_owned(), 5),
        ("love".to_owned(), 2),
    ]));
    cache.put(&post, Counts::Kinds(Arc::clone(&kinds)));
    assert_eq!(
        (
            cache.likes(&post, Age::Route),
            cache.kinds(&post, Age::Route)
        ),
        (Some(5), Some(kinds))
    );
}

/// Counts another environment read serve for the feed age from that read, not from when they
/// arrived; for the TTL only once this environment has written the post; and never replace
/// counts this environment read since.
#[tokio::test(start_paused = true)]
async fn shared_counts_age_from_their_read() {
    let cache = CountCache::new(Duration::from_secs(1)).with_feed_age(Duration::from_secs(60));
    let post = PostId::new_random();
    cache.put_aged(&post, Counts::Likes(7), Duration::from_secs(50));
    assert_eq!(
        cache.likes(&post, Age::Feed),
        Some(7),
        "50 s old: a feed takes it"
    );
    assert_eq!(cache.likes(&post, Age::Route), None, "a route does not");
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        cache.likes(&post, Age::Feed),
        None,
        "60 s from its read, gone"
    );

    // Read here 1 s ago; an older shared read does not replace it.
    cache.put(&post, Counts::Likes(9));
    tokio::time::advance(Duration::from_secs(1)).await;
    cache.put_aged(&post, Counts::Likes(8), Duration::from_secs(5));
    assert_eq!(cache.likes(&post, Age::Feed), Some(9));

    // This environment writes the post: a shared read from before the write (or within its
    // mark) serves the TTL only, so the next feed here reads counts that hold the write.
    let written = PostId::new_random();
    cache.written(&written);
    tokio::time::advance(Duration::from_secs(2)).await;
    cache.put_aged(&written, Counts::Likes(1), Duration::from_secs(3));
    assert_eq!(
        cache.likes(&written, Age::Feed),
        None,
        "read before the write"
    );
    tokio::time::advance(WRITE_MARK).await;
    cache.put_aged(&written, Counts::Likes(2), Duration::from_millis(100));
    assert_eq!(
        cache.likes(&written, Age::Feed),
        Some(2),
        "read after the write's mark: serves a feed"
    );
}

/// A post this environment wrote keeps its write mark through a flood of other posts for as
/// long as counts read within the mark may still arrive from the shared tier, backdated: such
/// counts must serve the TTL only, not a feed age that hides the write.
#[tokio::test(start_paused = true)]
async fn a_write_mark_outlives_a_flood_while_backdated_counts_may_arrive() {
    let cache = CountCache::new(Duration::from_secs(1)).with_feed_age(Duration::from_secs(60));
    let post = PostId::new_random();
    cache.written(&post);
    tokio::time::advance(WRITE_MARK * 2).await;
    for _ in 0..CAPACITY * 2 {
        cache.put(&PostId::new_random(), Counts::Likes(1));
    }
    // Another environment read the post within the mark; its copy arrives now.
    cache.put_aged(
        &post,
        Counts::Likes(0),
        WRITE_MARK * 2 - Duration::from_secs(1),
    );
    assert_eq!(
        cache.likes(&post, Age::Feed),
        None,
        "counts read within the write's mark served a feed"
    );
}
