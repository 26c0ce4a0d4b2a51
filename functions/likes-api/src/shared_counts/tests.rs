use super::*;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A store in memory (keeps forever: `decode`'s `keep` check is what ages entries), or one
/// that fails or stalls; counts its calls.
#[derive(Default)]
struct Memory {
    values: Mutex<HashMap<String, Vec<u8>>>,
    calls: AtomicUsize,
    broken: bool,
    stalled: bool,
}

impl SharedStore for Memory {
    fn get<'a>(&'a self, keys: &'a [String]) -> SharedCall<'a, Vec<Option<Vec<u8>>>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            self.trouble().await?;
            let values = self.values.lock().unwrap();
            Ok(keys.iter().map(|k| values.get(k).cloned()).collect())
        })
    }

    fn put<'a>(&'a self, entries: &'a [(String, String)], _keep: Duration) -> SharedCall<'a, ()> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            self.trouble().await?;
            let mut values = self.values.lock().unwrap();
            values.extend(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone().into_bytes())),
            );
            Ok(())
        })
    }
}

impl Memory {
    async fn trouble(&self) -> Result<(), SharedError> {
        if self.stalled {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        if self.broken {
            return Err(SharedError::Store("connection refused".into()));
        }
        Ok(())
    }
}

#[tokio::test]
async fn entries_come_back_with_their_read_time_in_their_own_shape() {
    let store = Arc::new(Memory::default());
    let tier = SharedCounts::new(store.clone(), Duration::from_secs(60));
    let (a, b, c) = (
        PostId::new_random(),
        PostId::new_random(),
        PostId::new_random(),
    );
    let kinds = Counts::Kinds(Arc::new(BTreeMap::from([
        ("like".into(), 3),
        ("love".into(), 1),
    ])));
    let read_at = now_ms() - 20_000;
    // Shared under each shape's key; then as if read 20 s ago.
    tier.put(
        &[(a.clone(), Counts::Likes(5)), (b.clone(), kinds.clone())],
        now_ms(),
    )
    .await;
    let shared: Vec<String> = store.values.lock().unwrap().keys().cloned().collect();
    assert!(
        shared.contains(&key(&a, false)) && shared.contains(&key(&b, true)),
        "{shared:?}"
    );
    let entry = |counts: &Counts, at| encode(counts, at).unwrap().into_bytes();
    store.values.lock().unwrap().extend([
        (key(&a, false), entry(&Counts::Likes(5), read_at)),
        (key(&b, true), entry(&kinds, read_at)),
    ]);
    let likes = tier.get(&[a.clone(), b.clone(), c.clone()], false).await;
    assert_eq!(likes.len(), 1, "{likes:?}");
    assert_eq!((&likes[0].0, &likes[0].1), (&a, &Counts::Likes(5)));
    let every = tier.get(&[a.clone(), b.clone(), c.clone()], true).await;
    assert_eq!(every.len(), 1, "{every:?}");
    assert_eq!((&every[0].0, &every[0].1), (&b, &kinds));
    for (_, _, age) in likes.iter().chain(&every) {
        assert!(
            (Duration::from_secs(20)..Duration::from_secs(25)).contains(age),
            "aged from the read, not the copy: {age:?}"
        );
    }
}

#[tokio::test]
async fn old_future_slow_or_garbled_entries_are_no_answer() {
    let store = Arc::new(Memory::default());
    let tier = SharedCounts::new(store.clone(), Duration::from_secs(60));
    let posts: Vec<PostId> = (0..5).map(|_| PostId::new_random()).collect();
    let entry = |at| encode(&Counts::Likes(1), at).unwrap().into_bytes();
    let now = now_ms();
    store.values.lock().unwrap().extend([
        // Past the feed age; in its last sixth (renewed, not served); read 5 s in the future.
        (key(&posts[0], false), entry(now - 61_000)),
        (key(&posts[1], false), entry(now - 55_000)),
        (key(&posts[2], false), entry(now + 5_000)),
        (key(&posts[3], false), b"{\"at\":1,\"shape\":2}".to_vec()),
        (key(&posts[4], false), vec![0xff, 0xfe]),
    ]);
    assert!(tier.get(&posts, false).await.is_empty());
    // A read that took 2 s is not shared.
    let slow = PostId::new_random();
    tier.put(&[(slow.clone(), Counts::Likes(1))], now_ms() - 2_000)
        .await;
    assert!(!store
        .values
        .lock()
        .unwrap()
        .contains_key(&key(&slow, false)));
}

#[tokio::test(start_paused = true)]
async fn a_failing_or_slow_tier_is_left_alone_for_a_while() {
    for store in [
        Memory {
            broken: true,
            ..Memory::default()
        },
        Memory {
            stalled: true,
            ..Memory::default()
        },
    ] {
        let store = Arc::new(store);
        let tier = SharedCounts::new(store.clone(), Duration::from_secs(60));
        let posts = [PostId::new_random()];
        let started = Instant::now();
        assert!(tier.get(&posts, false).await.is_empty());
        assert!(started.elapsed() <= WAIT, "waited {:?}", started.elapsed());
        tier.put(&[(posts[0].clone(), Counts::Likes(1))], now_ms())
            .await;
        assert!(tier.get(&posts, false).await.is_empty());
        assert_eq!(store.calls.load(Ordering::SeqCst), 1, "asked while down");
        tokio::time::advance(DOWN_FOR).await;
        assert!(tier.get(&posts, false).await.is_empty());
        assert_eq!(
            store.calls.load(Ordering::SeqCst),
            2,
            "asked again after DOWN_FOR"
        );
    }
}
