//! The stream mapping settings the aggregator's correctness depends on are in template.yaml, and
//! the local poller plays the same mapping.

use serde_yaml::Value;

fn mapping() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let t: Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).expect("template")).expect("YAML");
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
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let t: Value =
        serde_yaml::from_str(&std::fs::read_to_string(path).expect("template")).expect("YAML");
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
