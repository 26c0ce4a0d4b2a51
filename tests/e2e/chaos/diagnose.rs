//! What a failed chaos run prints about a post whose count is off: its Counts item and every
//! stream record of its buckets, so that the failure can be read without rerunning it.

use aws_sdk_dynamodb::types::AttributeValue;

/// For a post whose count is off: its stream records and its Counts item.
pub async fn diagnose(endpoint: &str, mismatches: &[String]) {
    let conf = likes_aws::sdk::emulator(endpoint).await;
    let dynamo = aws_sdk_dynamodb::Client::new(&conf);
    let streams = aws_sdk_dynamodbstreams::Client::new(&conf);
    let arn = dynamo
        .describe_table()
        .table_name("likes")
        .send()
        .await
        .ok()
        .and_then(|t| t.table)
        .and_then(|t| t.latest_stream_arn)
        .unwrap_or_default();
    let desc = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .ok()
        .and_then(|d| d.stream_description);
    for m in mismatches.iter().filter(|m| m.starts_with("post ")).take(3) {
        let post = m
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .trim_end_matches(':')
            .to_owned();
        let item = dynamo
            .get_item()
            .table_name("counts")
            .key("post_id", AttributeValue::S(post.clone()))
            .consistent_read(true)
            .send()
            .await
            .ok()
            .and_then(|o| o.item);
        eprintln!("counts item of {post}: {item:?}");
        for shard in desc.iter().flat_map(|d| d.shards()) {
            let Some(id) = shard.shard_id() else { continue };
            let it = streams
                .get_shard_iterator()
                .stream_arn(&arn)
                .shard_id(id)
                .shard_iterator_type(aws_sdk_dynamodbstreams::types::ShardIteratorType::TrimHorizon)
                .send()
                .await
                .ok()
                .and_then(|o| o.shard_iterator);
            let mut it = it;
            while let Some(i) = it.take() {
                let Ok(out) = streams
                    .get_records()
                    .shard_iterator(i)
                    .limit(1000)
                    .send()
                    .await
                else {
                    break;
                };
                for r in out.records() {
                    let d = r.dynamodb.as_ref();
                    let keys = d.and_then(|d| d.keys.as_ref());
                    let pb = keys
                        .and_then(|k| k.get("post_bucket"))
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default();
                    if pb.starts_with(&format!("{post}#")) {
                        let user = keys
                            .and_then(|k| k.get("user_id"))
                            .and_then(|v| v.as_s().ok())
                            .cloned()
                            .unwrap_or_default();
                        eprintln!(
                            "  {id} {:?} {pb} {user} {:?}",
                            r.event_name,
                            d.and_then(|d| d.sequence_number.clone())
                        );
                    }
                }
                if out.records().is_empty() {
                    break;
                }
                it = out.next_shard_iterator;
            }
        }
    }
}
