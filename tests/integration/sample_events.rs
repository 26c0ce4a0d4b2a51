//! The sample events in functions/events (for `sam local invoke -e`) are real: they parse into the
//! Lambda types and do what they say through the handlers.

use count_aggregator::Aggregator;
use likes_core::{bucket_of, CountsRead, PostId, UserId};
use likes_harness::Tables;

fn sample(name: &str) -> String {
    let path = format!(
        "{}/../../functions/events/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[tokio::test]
async fn the_like_sample_likes_the_post_as_its_sub() {
    let t = Tables::new().await;
    // Through the Lambda entry point, as `sam local invoke -e functions/events/like.json` would.
    let req: lambda_http::request::LambdaRequest =
        serde_json::from_str(&sample("like.json")).expect("v2 event");
    let resp = likes_api::lambda::invoke(&t.app(), req, lambda_http::Context::default()).await;
    assert_eq!(resp.status_code, 200);
    let bytes: &[u8] = resp.body.as_ref().map(|b| b.as_ref()).unwrap_or_default();
    let body: serde_json::Value = serde_json::from_slice(bytes).expect("JSON");
    assert_eq!(body["changed"], true);
    assert_eq!(body["user_id"], "7c9e6679-7425-40de-944b-e07fc1f90ae7");
    assert_eq!(
        t.like_pairs().await,
        vec![(
            "0f8fad5b-d9cb-469f-a165-70867728950e".to_owned(),
            "7c9e6679-7425-40de-944b-e07fc1f90ae7".to_owned()
        )]
    );
}

#[tokio::test]
async fn the_stream_sample_counts_one_like() {
    let t = Tables::new().await;
    let event: aws_lambda_events::dynamodb::Event =
        serde_json::from_str(&sample("stream-batch.json")).expect("stream event");
    // The sample's buckets are the real ones for its users.
    for r in &event.records {
        let user = match r.change.keys.get("user_id") {
            Some(serde_dynamo::AttributeValue::S(s)) => UserId::parse(s).unwrap(),
            other => panic!("{other:?}"),
        };
        let pk = match r.change.keys.get("post_bucket") {
            Some(serde_dynamo::AttributeValue::S(s)) => s.clone(),
            other => panic!("{other:?}"),
        };
        assert!(pk.ends_with(&format!("#{}", bucket_of(&user))), "{pk}");
    }
    let agg = Aggregator::new(t.counts());
    let report = agg
        .process_json(&sample("stream-batch.json"), None)
        .await
        .expect("parses");
    assert!(report.response().batch_item_failures.is_empty());
    let post = PostId::parse("0f8fad5b-d9cb-469f-a165-70867728950e").unwrap();
    assert_eq!(t.counts().post_count(&post).await.unwrap(), 1);
}
