//! The mappings' settings the aggregator's correctness depends on, and CORS, are in
//! template.yaml, and the local stack plays the same.

use serde_yaml::Value;

use super::{if_parts, load, reference};

fn mapping() -> Value {
    let t = load("template.yaml");
    t["Resources"]["LikesStreamMapping"]["Properties"].clone()
}

#[test]
fn the_stream_mapping_keeps_the_aggregators_invariants() {
    let m = mapping();
    // hwm dedup needs one in-order batch per shard at a time.
    assert_eq!(m["ParallelizationFactor"].as_i64(), Some(1));
    assert_eq!(
        m["FunctionResponseTypes"][0].as_str(),
        Some("ReportBatchItemFailures")
    );
    assert_eq!(m["BisectBatchOnFunctionError"].as_bool(), Some(true));
    assert_eq!(m["StartingPosition"].as_str(), Some("TRIM_HORIZON"));
    let pattern: serde_json::Value = serde_json::from_str(
        m["FilterCriteria"]["Filters"][0]["Pattern"]
            .as_str()
            .expect("a filter pattern"),
    )
    .expect("the pattern is JSON");
    assert_eq!(
        pattern,
        serde_json::json!({"eventName": ["INSERT", "REMOVE"]})
    );
    // Records given up on must land somewhere visible.
    assert!(!m["DestinationConfig"]["OnFailure"]["Destination"].is_null());
}

#[test]
fn the_local_mapping_plays_the_templates_settings() {
    let m = mapping();
    let local = likes_local::esm::config::MappingConfig::from_template().expect("the template");
    assert_eq!(m["BatchSize"].as_u64(), Some(local.batch_size as u64));
    assert_eq!(
        m["MaximumRetryAttempts"].as_u64(),
        Some(u64::from(local.max_retries))
    );
    assert_eq!(
        m["MaximumRecordAgeInSeconds"].as_u64(),
        Some(local.max_record_age.as_secs())
    );
    assert!(local.bisect);
}

#[test]
fn the_erase_queue_keeps_a_job_until_it_is_done_and_the_local_queue_plays_it() {
    let t = load("template.yaml");
    let r = &t["Resources"];
    let queue = &r["EraseQueue"]["Properties"];
    assert_eq!(
        queue["RedrivePolicy"]["maxReceiveCount"].as_u64(),
        Some(u64::from(likes_local::erase_poller::MAX_RECEIVES))
    );
    // A job must not reappear while its worker may still be running.
    let worker_timeout = r["EraseWorkerFunction"]["Properties"]["Timeout"]
        .as_u64()
        .expect("the worker's timeout");
    assert!(queue["VisibilityTimeout"].as_u64().unwrap_or(0) >= worker_timeout);
    let m = &r["EraseJobsMapping"]["Properties"];
    assert_eq!(
        m["FunctionResponseTypes"][0].as_str(),
        Some("ReportBatchItemFailures")
    );
}

/// The product's rule matches exactly the detail-types the worker reads, of the configured
/// source, on the configured (or created) bus, and puts them on the erase queue; the queues
/// admit that rule alone; the local bus plays the same rule.
#[test]
fn the_product_rule_delivers_what_the_worker_reads_to_the_erase_queue() {
    use likes_core::product_event::DETAIL_TYPES;
    let t = load("template.yaml");
    let r = &t["Resources"];
    let rule = &r["ProductEventsRule"]["Properties"];
    let pattern = &rule["EventPattern"];
    assert_eq!(strings(&pattern["detail-type"]), DETAIL_TYPES.to_vec());
    assert_eq!(reference(&pattern["source"][0]), Some("ProductEventSource"));
    let (condition, created, named) = if_parts(&rule["EventBusName"]);
    assert_eq!(
        (condition, reference(created), reference(named)),
        (
            "CreateProductEventBus",
            Some("ProductEventBus"),
            Some("ProductEventBusName")
        )
    );
    let target = &rule["Targets"][0];
    assert_eq!(get_att(&target["Arn"]), Some("EraseQueue.Arn"));
    assert_eq!(
        get_att(&target["DeadLetterConfig"]["Arn"]),
        Some("EraseDeadLetterQueue.Arn")
    );
    let policy = &r["ProductEventsQueuePolicy"]["Properties"];
    let queues: Vec<_> = policy["Queues"]
        .as_sequence()
        .expect("queues")
        .iter()
        .filter_map(reference)
        .collect();
    assert_eq!(queues, ["EraseQueue", "EraseDeadLetterQueue"]);
    let statement = &policy["PolicyDocument"]["Statement"][0];
    assert_eq!(
        statement["Principal"]["Service"].as_str(),
        Some("events.amazonaws.com")
    );
    assert_eq!(
        get_att(&statement["Condition"]["ArnEquals"]["aws:SourceArn"]),
        Some("ProductEventsRule.Arn")
    );
    assert_eq!(
        t["Parameters"]["ProductEventSource"]["Default"].as_str(),
        Some(likes_local::product_bus::PRODUCT_SOURCE)
    );
}

/// The `X.Y` of a `!GetAtt X.Y`.
fn get_att(v: &Value) -> Option<&str> {
    match v {
        Value::Tagged(t) if t.tag == "GetAtt" => t.value.as_str(),
        _ => None,
    }
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_sequence()
        .expect("a list")
        .iter()
        .map(|s| s.as_str().expect("a string"))
        .collect()
}

fn is_no_value(v: &Value) -> bool {
    matches!(v, Value::Tagged(t) if t.tag == "Ref" && t.value.as_str() == Some("AWS::NoValue"))
}

#[test]
fn cors_is_off_by_default_and_exactly_what_browsers_need_when_on() {
    let t = load("template.yaml");
    let param = &t["Parameters"]["AllowedOrigins"];
    assert_eq!(
        param["Default"].as_str(),
        Some(""),
        "CORS off unless asked for"
    );
    let api = &t["Resources"]["LikesHttpApi"]["Properties"];

    let (cond, conf, off) = if_parts(&api["CorsConfiguration"]);
    assert_eq!(cond, "CorsOn");
    assert!(
        is_no_value(off),
        "no CORS configuration when AllowedOrigins is empty"
    );
    assert_eq!(strings(&conf["AllowMethods"]), ["GET", "PUT", "DELETE"]);
    assert_eq!(
        strings(&conf["AllowHeaders"]),
        [
            "authorization",
            "content-type",
            "idempotency-key",
            "if-none-match"
        ]
    );
    assert_eq!(strings(&conf["ExposeHeaders"]), ["etag", "retry-after"]);
    assert_eq!(conf["AllowCredentials"].as_bool(), Some(false));
    assert!(conf["MaxAge"].as_u64().unwrap_or(0) > 0);
    // The local gateway plays the same configuration.
    assert_eq!(
        strings(&conf["AllowMethods"]),
        likes_local::cors::ALLOW_METHODS
    );
    assert_eq!(
        strings(&conf["AllowHeaders"]),
        likes_local::cors::ALLOW_HEADERS
    );
    assert_eq!(
        strings(&conf["ExposeHeaders"]),
        likes_local::cors::EXPOSE_HEADERS
    );
    assert_eq!(
        conf["MaxAge"].as_u64(),
        Some(u64::from(likes_local::cors::MAX_AGE))
    );

    // The preflight route: only with CORS on, integrated with the API function, no authorizer.
    let (cond, options, off) = if_parts(&api["DefinitionBody"]["paths"]["/{proxy+}"]["options"]);
    assert_eq!(cond, "CorsOn");
    assert!(
        is_no_value(off),
        "no OPTIONS route when AllowedOrigins is empty"
    );
    assert!(
        options.get("security").is_none(),
        "the OPTIONS route must not require authorization: {options:?}"
    );
    let integration = &options["x-amazon-apigateway-integration"];
    assert_eq!(integration["type"].as_str(), Some("aws_proxy"));
    assert_eq!(integration["payloadFormatVersion"].as_str(), Some("2.0"));
    let Value::Tagged(uri) = &integration["uri"] else {
        panic!("the integration's uri is a !Sub")
    };
    assert!(uri
        .value
        .as_str()
        .is_some_and(|u| u.contains("${LikesApiFunction.Arn}")));
    // Every other method still goes through the JWT authorizer.
    assert_eq!(api["Auth"]["DefaultAuthorizer"].as_str(), Some("LikesJwt"));
}
