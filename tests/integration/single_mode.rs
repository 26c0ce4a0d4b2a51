//! A deployment switched from `multi` to `single` reaction mode (issue 32): `likes-admin
//! single-mode` leaves each (user, post) its newest kind, deletes the others as unreactions
//! (counts follow through the stream), keeps a kind made again between its scan and its
//! deletes, and a rerun finishes the job. On DynamoDB as the operators' policy (the lab refuses
//! what the template does not allow), and in memory.

use std::collections::BTreeSet;

use likes_admin::single;
use likes_core::erase::EraseStore;
use likes_core::reaction::Held;
use likes_core::store::memory::MemoryLikes;
use likes_core::{
    Kind, LikesAdmin, LikesStore, PostBucket, PostId, ReactionsStore, UserId, WriteToken,
};
use likes_harness::lab::roles;
use likes_harness::Tables;

fn at(t: &str) -> String {
    format!("2026-12-01T{t}.000Z")
}

/// Every (post, user, kind) the store holds of these pairs.
async fn held<L: LikesAdmin>(
    store: &L,
    pairs: &[(&PostId, &UserId)],
) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for (post, user) in pairs {
        let keys = store
            .bucket_users(&PostBucket::for_like(post, user))
            .await
            .expect("a read");
        for key in keys {
            match Held::of(&key) {
                Held::Like(u) if u == user.as_str() => {
                    out.insert((post.to_string(), u.to_owned(), "like".to_owned()));
                }
                Held::Reaction(u, k) if u == user.as_str() => {
                    out.insert((post.to_string(), u.to_owned(), k.to_owned()));
                }
                _ => {}
            }
        }
    }
    out
}

async fn switch<W, A>(writer: &W, admin: &A)
where
    W: LikesStore + ReactionsStore,
    A: LikesAdmin + EraseStore,
{
    let (p, q) = (PostId::new_random(), PostId::new_random());
    let (a, b, c) = (
        UserId::new_random(),
        UserId::new_random(),
        UserId::new_random(),
    );
    let (love, plus) = (Kind::parse("love").unwrap(), Kind::parse("+1").unwrap());
    let tok = WriteToken::random;
    assert!(writer.like(&p, &a, &at("10:00:00"), &tok()).await.unwrap());
    assert!(writer
        .react(&p, &a, &plus, &at("10:01:00"), &tok())
        .await
        .unwrap());
    assert!(writer
        .react(&p, &a, &love, &at("10:02:00"), &tok())
        .await
        .unwrap());
    assert!(writer
        .react(&p, &b, &love, &at("10:00:00"), &tok())
        .await
        .unwrap());
    assert!(writer
        .react(&q, &c, &love, &at("09:00:00"), &tok())
        .await
        .unwrap());
    assert!(writer.like(&q, &c, &at("09:30:00"), &tok()).await.unwrap());

    let plan = single::plan(admin, 3).await.expect("a plan");
    assert_eq!((plan.held, plan.pairs, plan.extra.len()), (6, 2, 3));
    // Between the scan and the deletes, `a` takes the +1 back and gives it again: it stays.
    assert!(writer.unreact(&p, &a, &plus, &tok()).await.unwrap());
    assert!(writer
        .react(&p, &a, &plus, &at("10:05:00"), &tok())
        .await
        .unwrap());
    let deleted = single::run(admin, &plan, &|_| {}).await.expect("a run");
    assert_eq!(deleted, 2, "a's like and c's love; not the +1 made again");
    let s = |p: &PostId, u: &UserId, k: &str| (p.to_string(), u.to_string(), k.to_owned());
    let pairs = [(&p, &a), (&p, &b), (&q, &c)];
    assert_eq!(
        held(admin, &pairs).await,
        BTreeSet::from([
            s(&p, &a, "love"),
            s(&p, &a, "+1"),
            s(&p, &b, "love"),
            s(&q, &c, "like"),
        ])
    );
    // A rerun leaves `a` the kind it gave last; then there is nothing left to do.
    let again = single::plan(admin, 2).await.expect("a plan");
    assert_eq!((again.pairs, again.extra.len()), (1, 1));
    assert_eq!(single::run(admin, &again, &|_| {}).await.expect("a run"), 1);
    assert!(held(admin, &pairs).await.contains(&s(&p, &a, "+1")));
    assert_eq!(single::plan(admin, 1).await.expect("a plan").pairs, 0);
}

#[tokio::test]
async fn a_switch_to_single_mode_leaves_each_pair_its_newest_kind_on_dynamodb() {
    let t = Tables::lagging().await;
    switch(&t.likes(), &t.as_role(roles::OPERATOR).likes()).await;
}

#[tokio::test]
async fn a_switch_to_single_mode_leaves_each_pair_its_newest_kind_in_memory() {
    let store = MemoryLikes::default();
    switch(&store, &store).await;
}
