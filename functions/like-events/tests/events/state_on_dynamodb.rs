//! The events function's state on DynamoDB (the emulator): its adapters' conditions are the
//! rules' last line (invariants 4 and 6) — a pair's state is written only over the state the
//! decisions were read from, a milestone only ever rises — and what is written reads back; a
//! like's item keeps the key it had before reactions, and each other kind has its own.

use aws_sdk_dynamodb::types::AttributeValue;
use likes_aws::dynamo::schema::{create_table, EVENT_STATE};
use likes_aws::{DynamoMilestones, DynamoSuppression};
use likes_core::store::events::{
    Epoch, MilestoneState, MilestoneStore, Pair, PairState, SuppressionStore,
};
use likes_core::{Kind, PostId, SeqNo, UserId};

async fn table() -> (aws_sdk_dynamodb::Client, String) {
    let client = likes_harness::client().await;
    let name = format!("event-state-{}", uuid_like());
    create_table(&client, &EVENT_STATE, &name)
        .await
        .expect("the table");
    // Reads that must see the latest state ask for it: a trailing copy serves the rest.
    likes_harness::lab::lab().set_lag(&name, likes_harness::lab::read_lag());
    (client, name)
}

fn uuid_like() -> String {
    PostId::new_random().as_str().replace('-', "")
}

fn seq(n: u32) -> SeqNo {
    SeqNo::parse(&(100_000_000_000_000_000_000u128 + u128::from(n)).to_string()).unwrap()
}

#[tokio::test]
async fn a_pairs_state_is_written_only_over_the_state_it_was_decided_from() {
    let (client, name) = table().await;
    let store = DynamoSuppression::new(client, name);
    let pair = Pair::like(PostId::new_random(), UserId::new_random());
    let notified = PairState {
        current: Some(Epoch {
            notified: seq(1),
            at: 100,
            retracted: None,
        }),
        previous: None,
    };
    let retracted = PairState {
        current: Some(Epoch {
            notified: seq(1),
            at: 100,
            retracted: Some(seq(2)),
        }),
        previous: None,
    };
    let renewed = PairState {
        current: Some(Epoch {
            notified: seq(3),
            at: 200_000,
            retracted: None,
        }),
        previous: retracted.current.clone(),
    };
    let none = PairState::default();
    assert!(store.write_pair(&pair, &none, &notified, 1).await.unwrap());
    // A second writer deciding from nothing is refused; so is one from a stale window.
    assert!(!store.write_pair(&pair, &none, &notified, 1).await.unwrap());
    assert!(store
        .write_pair(&pair, &notified, &retracted, 1)
        .await
        .unwrap());
    assert!(!store
        .write_pair(&pair, &notified, &retracted, 1)
        .await
        .unwrap());
    assert!(store
        .write_pair(&pair, &retracted, &renewed, 1)
        .await
        .unwrap());
    let read = store.read_pairs(std::slice::from_ref(&pair)).await.unwrap();
    assert_eq!(read.get(&pair), Some(&renewed));
    let other = Pair::like(PostId::new_random(), UserId::new_random());
    let read = store
        .read_pairs(&[pair.clone(), other.clone()])
        .await
        .unwrap();
    assert_eq!((read.len(), read.contains_key(&other)), (1, false));
}

/// A (user, post)'s like and love are two items: the like's under `n#{post}#{user}`, the key
/// it had before reactions, the love's under `n#{post}#{user}#love`; each written only over its
/// own state.
#[tokio::test]
async fn each_kind_of_a_pair_is_its_own_item_the_likes_under_its_old_key() {
    let (client, name) = table().await;
    let store = DynamoSuppression::new(client.clone(), &name);
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let like = Pair::like(post.clone(), user.clone());
    let love = Pair::new(post.clone(), user.clone(), Kind::parse("love").unwrap());
    let state = |n| PairState {
        current: Some(Epoch {
            notified: seq(n),
            at: 100,
            retracted: None,
        }),
        previous: None,
    };
    let none = PairState::default();
    assert!(store.write_pair(&like, &none, &state(1), 1).await.unwrap());
    // The love decided from nothing: its own item has none, whatever the like's holds.
    assert!(store.write_pair(&love, &none, &state(2), 1).await.unwrap());
    let read = store
        .read_pairs(&[like.clone(), love.clone()])
        .await
        .unwrap();
    assert_eq!(
        (read.get(&like), read.get(&love)),
        (Some(&state(1)), Some(&state(2)))
    );
    for (key, n) in [
        (format!("n#{post}#{user}"), seq(1)),
        (format!("n#{post}#{user}#love"), seq(2)),
    ] {
        let item = client
            .get_item()
            .table_name(&name)
            .key("pk", AttributeValue::S(key.clone()))
            .consistent_read(true)
            .send()
            .await
            .unwrap();
        let got = item
            .item()
            .and_then(|i| i.get("n"))
            .and_then(|v| v.as_s().ok());
        assert_eq!(got.map(String::as_str), Some(n.raw()), "{key}");
    }
}

#[tokio::test]
async fn a_milestone_only_rises() {
    let (client, name) = table().await;
    let store = DynamoMilestones::new(client, name);
    let post = PostId::new_random();
    let state = |announced, before, n| MilestoneState {
        announced,
        before,
        by: Some((3, seq(n))),
    };
    assert!(store
        .record_milestone(&post, &state(10, 0, 1))
        .await
        .unwrap());
    // Equal or lower: refused (a racing batch, a count that went back and forth).
    assert!(!store
        .record_milestone(&post, &state(10, 0, 2))
        .await
        .unwrap());
    assert!(!store
        .record_milestone(&post, &state(1, 0, 3))
        .await
        .unwrap());
    assert!(store
        .record_milestone(&post, &state(100, 10, 4))
        .await
        .unwrap());
    let read = store
        .read_milestones(std::slice::from_ref(&post))
        .await
        .unwrap();
    assert_eq!(read.get(&post), Some(&state(100, 10, 4)));
}
