//! The reactions port on both stores (moto's DynamoDB and memory): `multi` mode's kinds side by
//! side with the like, `single` mode's replacement (named requests answered again as they were
//! first, what they replaced included), the reads of kinds, and that a like's count, its
//! listing and "my likes" never see another kind.

use std::sync::Arc;

use likes_core::erase::EraseStore;
use likes_core::store::memory::MemoryLikes;
use likes_core::{
    Kind, Kinds, LikesAdmin, PostBucket, PostId, Reacted, ReactionsStore, StoreError, UserId,
    WriteToken,
};
use likes_harness::{eventually, Tables};

const AT: &str = "2026-12-02T02:00:00.000Z";
const LATER: &str = "2026-12-02T02:00:01.000Z";

fn kind(k: &str) -> Kind {
    Kind::parse(k).unwrap()
}

fn fresh() -> WriteToken {
    WriteToken::random()
}

async fn multi_kinds_live_beside_the_like<S: ReactionsStore + LikesAdmin>(store: &S) {
    let (post, me, you) = (
        PostId::new_random(),
        UserId::new_random(),
        UserId::new_random(),
    );
    let (love, laugh) = (kind("love"), kind("laugh"));
    assert!(store.react(&post, &me, &love, AT, &fresh()).await.unwrap());
    assert!(!store
        .react(&post, &me, &love, LATER, &fresh())
        .await
        .unwrap());
    assert!(store
        .react(&post, &me, &Kind::like(), AT, &fresh())
        .await
        .unwrap());
    assert!(store
        .react(&post, &me, &laugh, LATER, &fresh())
        .await
        .unwrap());
    assert!(store
        .react(&post, &you, &love, LATER, &fresh())
        .await
        .unwrap());
    assert_eq!(
        store.reactions_of(&post, &me).await.unwrap(),
        [laugh.clone(), Kind::like(), love.clone()]
    );
    // The like is the like: its own reads see it, and only it.
    assert_eq!(
        store.liked_at(&post, &me).await.unwrap().as_deref(),
        Some(AT)
    );
    assert_eq!(store.liked_at(&post, &you).await.unwrap(), None);
    // Listings are eventually consistent (the lab's tables trail): once the last write shows,
    // all before it do.
    let likers = eventually(
        "who liked",
        || async { store.likers_of_post(&post, 10, None).await.unwrap() },
        |l| !l.items.is_empty(),
    )
    .await;
    let likers: Vec<&UserId> = likers.items.iter().map(|p| &p.user_id).collect();
    assert_eq!(likers, [&me]);
    assert_eq!(
        store
            .likes_of_user(&me, 10, None)
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    assert_eq!(
        store
            .likes_of_user(&you, 10, None)
            .await
            .unwrap()
            .items
            .len(),
        0
    );
    let bucket = PostBucket::for_like(&post, &me);
    let others = PostBucket::for_like(&post, &you);
    let liked = store.count_bucket(&bucket).await.unwrap()
        + if others == bucket {
            0
        } else {
            store.count_bucket(&others).await.unwrap()
        };
    assert_eq!(liked, 1, "a bucket's like count counts likes only");
    // What a recount reads: every item held, by sort key, and each kind's count.
    let held = store.bucket_users(&bucket).await.unwrap();
    for key in [me.to_string(), format!("{me}#love"), format!("{me}#laugh")] {
        assert!(held.contains(&key), "{key} in {held:?}");
    }
    let kinds = store.count_kinds(&bucket).await.unwrap();
    assert_eq!(kinds.get("laugh"), Some(&1), "{kinds:?}");
    // Who reacted with love: both of us, newest first.
    let lovers = store
        .reactors_of_post(&post, &love, 10, None)
        .await
        .unwrap();
    let lovers: Vec<&UserId> = lovers.items.iter().map(|p| &p.user_id).collect();
    assert_eq!(lovers, [&you, &me]);
    let page = store.reactors_of_post(&post, &love, 1, None).await.unwrap();
    assert!(page.more);
    let rest = store
        .reactors_of_post(&post, &love, 1, page.items.last().cloned())
        .await
        .unwrap();
    assert_eq!(rest.items[0].user_id, me);
    // A feed's reactions of mine, over two posts.
    let other = PostId::new_random();
    let kinds = Kinds::parse("like,love,laugh").unwrap();
    let mine = store
        .reacted_among(&me, &[post.clone(), other.clone()], &kinds)
        .await
        .unwrap();
    assert_eq!(mine.get(&post).map(Vec::len), Some(3));
    assert!(!mine.contains_key(&other));
    let only_love = Kinds::parse("love").unwrap();
    let mine = store
        .reacted_among(&me, std::slice::from_ref(&post), &only_love)
        .await
        .unwrap();
    assert_eq!(mine[&post], [Kind::like(), love.clone()]);
    // Removing one kind leaves the others.
    assert!(store.unreact(&post, &me, &love, &fresh()).await.unwrap());
    assert!(!store.unreact(&post, &me, &love, &fresh()).await.unwrap());
    assert_eq!(
        store.reactions_of(&post, &me).await.unwrap(),
        [laugh, Kind::like()]
    );
}

async fn single_mode_replaces<S: ReactionsStore>(store: &S) {
    let (post, me) = (PostId::new_random(), UserId::new_random());
    let (love, laugh) = (kind("love"), kind("laugh"));
    let first = store
        .react_only(&post, &me, &love, AT, &fresh())
        .await
        .unwrap();
    assert_eq!(
        first,
        Reacted {
            changed: true,
            replaced: None
        }
    );
    let again = store
        .react_only(&post, &me, &love, AT, &fresh())
        .await
        .unwrap();
    assert!(!again.changed);
    let named = WriteToken::from_key("replace-1").unwrap();
    let swap = store
        .react_only(&post, &me, &laugh, LATER, &named)
        .await
        .unwrap();
    assert_eq!(swap.replaced, Some(love.clone()));
    assert!(swap.changed);
    let held = store.reactions_of(&post, &me).await.unwrap();
    assert_eq!(held, std::slice::from_ref(&laugh));
    // The like is a kind like any other here: it replaces, and is replaced.
    let like = store
        .react_only(&post, &me, &Kind::like(), LATER, &fresh())
        .await
        .unwrap();
    assert_eq!(like.replaced, Some(laugh.clone()));
    assert_eq!(
        store.reactions_of(&post, &me).await.unwrap(),
        [Kind::like()]
    );
    assert!(store.liked_at(&post, &me).await.unwrap().is_some());
    // The named request, sent again after all that: answered as it was, and no effect.
    let retry = store
        .react_only(&post, &me, &laugh, LATER, &named)
        .await
        .unwrap();
    assert_eq!(retry, swap);
    assert_eq!(
        store.reactions_of(&post, &me).await.unwrap(),
        [Kind::like()]
    );
    // A removal of the kind held empties it.
    assert!(store
        .unreact(&post, &me, &Kind::like(), &fresh())
        .await
        .unwrap());
    assert!(store.reactions_of(&post, &me).await.unwrap().is_empty());
}

/// Many devices of one user react with different kinds at once: at the end exactly one kind is
/// held, and exactly one request per change was told it changed nothing it did not.
async fn concurrent_replacements_leave_one<S: ReactionsStore + 'static>(store: Arc<S>) {
    let (post, me) = (PostId::new_random(), UserId::new_random());
    let kinds = ["like", "love", "laugh", "wow"];
    let mut tasks = Vec::new();
    for i in 0..16 {
        let (store, post, me) = (store.clone(), post.clone(), me.clone());
        let k = kind(kinds[i % kinds.len()]);
        tasks.push(tokio::spawn(async move {
            store.react_only(&post, &me, &k, AT, &fresh()).await
        }));
    }
    let (mut changed, mut gave_up) = (0, 0);
    for t in tasks {
        match t.await.unwrap() {
            Ok(r) if r.changed => changed += 1,
            Ok(_) => {}
            // Sixteen devices on one guard: a request that lost every round answers 503
            // (`unavailable`: nothing changed by it), as the API documents. Seen under a
            // loaded CI run; the end state must hold all the same.
            Err(StoreError::Unavailable(_)) => gave_up += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let held = store.reactions_of(&post, &me).await.unwrap();
    assert_eq!(held.len(), 1, "{held:?}");
    assert!(
        changed >= 1 && gave_up < 16,
        "changed {changed}, gave up {gave_up}"
    );
}

/// Erase-user removes reactions too; erase-post removes the post's reactions with its likes.
async fn erases_take_reactions<S: ReactionsStore + EraseStore>(store: &S) {
    let (post, me) = (PostId::new_random(), UserId::new_random());
    store
        .react(&post, &me, &kind("love"), AT, &fresh())
        .await
        .unwrap();
    let bucket = PostBucket::for_like(&post, &me);
    let keys = store.bucket_page(&bucket).await.unwrap();
    assert!(keys.iter().any(|k| k.ends_with("#love")), "{keys:?}");
    store.delete_items(&bucket, keys).await.unwrap();
    assert!(store.reactions_of(&post, &me).await.unwrap().is_empty());
}

#[tokio::test]
async fn on_memory() {
    let store = Arc::new(MemoryLikes::default());
    multi_kinds_live_beside_the_like(&*store).await;
    single_mode_replaces(&*store).await;
    concurrent_replacements_leave_one(store.clone()).await;
    erases_take_reactions(&*store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_dynamodb() {
    let t = Tables::lagging().await;
    let store = Arc::new(t.likes().with_markers(Some(&t.markers_table)));
    multi_kinds_live_beside_the_like(&*store).await;
    single_mode_replaces(&*store).await;
    concurrent_replacements_leave_one(store.clone()).await;
    erases_take_reactions(&*store).await;
    // Without a Markers table the markers go to the partition, kind in their key.
    let in_partition = t.likes();
    single_mode_replaces(&in_partition).await;
}

/// Runs `hook` once, when the first `Query` the client sends has been answered: a second
/// device's request that commits between a `single`-mode round's read of the user's items and
/// whatever that round does next.
struct AfterFirstQuery(std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl std::fmt::Debug for AfterFirstQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AfterFirstQuery")
    }
}

impl aws_sdk_dynamodb::config::Intercept for AfterFirstQuery {
    fn name(&self) -> &'static str {
        "AfterFirstQuery"
    }

    fn read_after_deserialization(
        &self,
        _ctx: &aws_sdk_dynamodb::config::interceptors::AfterDeserializationInterceptorContextRef<
            '_,
        >,
        _rc: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let op = cfg
            .load::<aws_smithy_runtime_api::client::orchestrator::Metadata>()
            .map(|m| m.name().to_owned());
        if op.as_deref() == Some("Query") {
            if let Some(hook) = self.0.lock().map_err(|_| "hook lock")?.take() {
                hook();
            }
        }
        Ok(())
    }
}

/// A reaction of another kind, committed by a second device just after a `single`-mode request
/// read the user's items: the request must replace it, never hold both. (Reading the guard
/// after the items, or both at once, held both.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reaction_committed_between_the_reads_is_replaced_not_kept() {
    let t = Tables::lagging().await;
    let (post, me) = (PostId::new_random(), UserId::new_random());
    let reactions = likes_core::Reactions {
        kinds: Kinds::parse("like,love,laugh").unwrap(),
        mode: likes_core::Mode::Single,
    };
    let (other, settings) = (t.clone(), reactions.clone());
    let laugh_path = format!("/posts/{post}/reactions/laugh");
    let sub = me.to_string();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let out = seen.clone();
    let hook: Box<dyn FnOnce() + Send> = Box::new(move || {
        let reply = other.second_device_of(settings, "PUT", &laugh_path, &sub);
        *out.lock().unwrap() = Some(reply);
    });
    let app = t
        .app_with(AfterFirstQuery(std::sync::Mutex::new(Some(hook))))
        .with_reactions(reactions.clone());
    let path = format!("/posts/{post}/reactions/love");
    let (status, body, _) = likes_harness::call_as(&app, "PUT", &path, me.as_str()).await;
    assert_eq!(status, 200, "{body}");
    let laugh = seen.lock().unwrap().take().expect("the second device ran");
    assert_eq!(
        (laugh.0, &laugh.1["changed"]),
        (200, &serde_json::json!(true))
    );
    let held = t.likes().reactions_of(&post, &me).await.unwrap();
    assert_eq!(held, [kind("love")], "one kind, the later one");
    assert_eq!(body["replaced"], "laugh", "{body}");
}

/// Two `single`-mode reactions of different kinds by one user on one post, interleaved by the
/// lab: the first (`love`) has read the guard and its items and sent its transaction, which the
/// lab holds (`Fault::Delay`, applied and answered `by` later); meanwhile the second (`laugh`)
/// reads and commits its whole write. Both read "nothing held", so only the guard tells them
/// apart: the first's transaction fails on the guard the second rewrote, reads again and
/// replaces `laugh`. Without the guard both commit and the user holds two kinds. Unnamed and
/// named (its marker in the transaction) first requests alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reaction_committed_while_another_is_in_flight_is_replaced_by_it() {
    use std::sync::atomic::Ordering;
    use std::time::Duration;

    use likes_harness::lab::{lab, roles};
    use likes_lab::{Fault, FaultRule};

    // Under the client's attempt timeout (3 s): the first transaction is answered, not lost.
    const HELD: Duration = Duration::from_millis(2000);
    let t = Tables::lagging().await;
    let store = Arc::new(t.as_role(roles::API).likes());
    let (love, laugh) = (kind("love"), kind("laugh"));
    for named in [false, true] {
        let (post, me) = (PostId::new_random(), UserId::new_random());
        let token = if named {
            WriteToken::from_key(&format!("k-{}", UserId::new_random())).unwrap()
        } else {
            fresh()
        };
        let mut rule = FaultRule::once(
            "TransactWriteItems",
            &t.likes_table,
            Fault::Delay { by: HELD },
        );
        rule.identity = Some(roles::API.to_owned());
        let struck = lab().add_fault(rule);
        let first = {
            let (store, post, me, love, token) = (
                store.clone(),
                post.clone(),
                me.clone(),
                love.clone(),
                token.clone(),
            );
            tokio::spawn(async move { store.react_only(&post, &me, &love, AT, &token).await })
        };
        // The first request's reads are done once its transaction reaches the lab.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while struck.load(Ordering::SeqCst) == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "named {named}: the first request's transaction never reached the lab"
            );
            assert!(
                !first.is_finished(),
                "named {named}: the first request answered before its transaction was sent"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let second = store
            .react_only(&post, &me, &laugh, LATER, &fresh())
            .await
            .unwrap();
        // The sequence the test needs: the second request read and committed while the first
        // one's transaction was held (had it applied first, the second would have replaced it).
        assert!(
            !first.is_finished(),
            "named {named}: the second request took longer than the first one's hold ({HELD:?})"
        );
        assert_eq!(
            second,
            Reacted {
                changed: true,
                replaced: None
            },
            "named {named}: the second request read nothing held and committed"
        );
        let first = first.await.unwrap().unwrap();
        let held = t.likes().reactions_of(&post, &me).await.unwrap();
        assert_eq!(
            held,
            std::slice::from_ref(&love),
            "named {named}: one kind held, the first request's (it committed last)"
        );
        assert_eq!(
            first,
            Reacted {
                changed: true,
                replaced: Some(laugh.clone())
            },
            "named {named}: the first request failed on the guard, read again and replaced"
        );
        if named {
            // Sent again, it is answered as it was, and changes nothing.
            let again = store
                .react_only(&post, &me, &love, LATER, &token)
                .await
                .unwrap();
            assert_eq!(again, first);
            assert_eq!(
                t.likes().reactions_of(&post, &me).await.unwrap(),
                std::slice::from_ref(&love)
            );
        }
    }
}
