//! How failures are sorted: what is worth a retry (503), what is a bug or a misconfiguration
//! (500), and the special cases — against the emulator, with faults from SDK interceptors.

use aws_sdk_dynamodb::config::{BehaviorVersion, Region};
use likes_aws::{DynamoCounts, DynamoLikes};
use likes_core::{PostId, UserId};
use likes_harness::sdk_faults::{Fault, Faults};
use likes_harness::{call_as, endpoint, like_path, Tables};

fn app_on(client: aws_sdk_dynamodb::Client) -> likes_api::App<DynamoLikes, DynamoCounts> {
    likes_api::App::new(
        DynamoLikes::new(client.clone(), "likes"),
        DynamoCounts::new(client, "counts"),
    )
}

/// Credentials and endpoints that cannot work are misconfigurations: a 500 to fix, not a 503
/// that invites retries forever.
#[tokio::test]
async fn configuration_failures_are_500_not_503() {
    let no_credentials = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .endpoint_url(endpoint())
        .build();
    let unresolvable = likes_harness::client_for("http://no-such-host.invalid:8000").await;
    let sub = UserId::new_random().to_string();
    let path = like_path(&PostId::new_random());
    for (name, client) in [
        (
            "no credentials",
            aws_sdk_dynamodb::Client::from_conf(no_credentials),
        ),
        ("an endpoint that does not resolve", unresolvable),
    ] {
        for method in ["PUT", "GET"] {
            let (s, b, _) = call_as(&app_on(client.clone()), method, &path, &sub).await;
            assert_eq!(
                (s, b["error"]["code"].as_str()),
                (500, Some("internal")),
                "{name}, {method}: {b}"
            );
        }
    }
}

/// A 5xx without an error code is DynamoDB's trouble, not ours: a read is worth a retry.
#[tokio::test]
async fn a_bare_5xx_is_transient() {
    let t = Tables::new().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let faults = Faults::new(Box::new(|op, _| {
        (op == "GetItem").then_some(Fault::BareServerError)
    }));
    let (s, b, h) = call_as(&t.app_with(faults), "GET", &like_path(&post), &sub).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (503, Some("unavailable")),
        "{b}"
    );
    assert_eq!(h["retry-after"], "1");
}

/// A bucket at DynamoDB's 10 GB item-collection limit: its own answer, nothing written.
#[tokio::test]
async fn a_full_bucket_has_its_own_answer() {
    let t = Tables::new().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let faults = Faults::new(Box::new(|op, _| {
        (op == "PutItem").then_some(Fault::CollectionFull)
    }));
    let (s, b, _) = call_as(&t.app_with(faults), "PUT", &like_path(&post), &sub).await;
    assert_eq!(
        (s, b["error"]["code"].as_str()),
        (507, Some("post_full")),
        "{b}"
    );
    assert!(t.like_pairs().await.is_empty());
}
