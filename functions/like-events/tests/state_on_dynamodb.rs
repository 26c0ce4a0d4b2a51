//! The events function's state on DynamoDB (the emulator): its adapters' conditions are the
//! rules' last line (invariants 4 and 6) — a pair's state is written only over the state the
//! decisions were read from, a milestone only ever rises — and what is written reads back.

use likes_aws::dynamo::schema::{create_table, EVENT_STATE};
use likes_aws::{DynamoMilestones, DynamoSuppression};
use likes_core::store::events::{
    Epoch, MilestoneState, MilestoneStore, PairState, SuppressionStore,
};
use likes_core::{PostId, SeqNo, UserId};

async fn table() -> (aws_sdk_dynamodb::Client, String) {
    let client = likes_harness::client().await;
    let name = format!("event-state-{}", uuid_like());
    create_table(&client, &EVENT_STATE, &name)
        .await
        .expect("the table");
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
    let pair = (PostId::new_random(), UserId::new_random());
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
    let other = (PostId::new_random(), UserId::new_random());
    let read = store
        .read_pairs(&[pair.clone(), other.clone()])
        .await
        .unwrap();
    assert_eq!((read.len(), read.contains_key(&other)), (1, false));
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
