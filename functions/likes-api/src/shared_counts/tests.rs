use super::*;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A store in memory (keeps forever: `decode`'s `keep` check is what ages entries), or one
/// that fails or stalls; counts its calls.
#[derive(Default)]
struct Memory {
    values: Mutex<HashMap<String, String>>,
    calls: AtomicUsize,
    broken: bool,
    stalled: bool,
}

impl SharedStore for Memory {
    fn get<'a>(&'a self, keys: &'a [String]) -> SharedCall<'a, Vec<Option<String>>> {
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
            self.values.lock().unwrap().extend(entries.iter().cloned());
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
async fn entries_come_back_with_their_read_time_and_kind() {
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
    tier.put(
        &[(a.clone(), Counts::Likes(5)), (b.clone(), kinds.clone())],
        read_at,
    )
    .await;
    let got = tier.get(&[a.clone(), b.clone(), c.clone()]).await;
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!((&got[0].0, &got[0].1), (&a, &Counts::Likes(5)));
    assert_eq!((&got[1].0, &got[1].1), (&b, &kinds));
    for (_, _, age) in &got {
        assert!(
            (Duration::from_secs(20)..Duration::from_secs(25)).contains(age),
            "aged from the read, not the copy: {age:?}"
        );
    }
    // Older than the feed age, garbage, another version's shape: not counts.
    tier.put(&[(c.clone(), Counts::Likes(1))], now_ms() - 61_000)
        .await;
    store
        .values
        .lock()
        .unwrap()
        .insert(key(&a), "{\"at\":1,\"shape\":2}".into());
    store
        .values
        .lock()
        .unwrap()
        .insert(key(&b), "not json".into());
    assert!(tier.get(&[a, b, c]).await.is_empty());
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
        assert!(tier.get(&posts).await.is_empty());
        assert!(started.elapsed() <= WAIT, "waited {:?}", started.elapsed());
        tier.put(&[(posts[0].clone(), Counts::Likes(1))], now_ms())
            .await;
        assert!(tier.get(&posts).await.is_empty());
        assert_eq!(store.calls.load(Ordering::SeqCst), 1, "asked while down");
        tokio::time::advance(DOWN_FOR).await;
        assert!(tier.get(&posts).await.is_empty());
        assert_eq!(
            store.calls.load(Ordering::SeqCst),
            2,
            "asked again after DOWN_FOR"
        );
    }
}
