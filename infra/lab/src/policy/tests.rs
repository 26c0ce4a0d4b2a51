//! The template's policies as the lab reads them: IAM's matching, the local stack's roles, a
//! global region's, and what the reading refuses.

use super::*;

#[test]
fn globs_match_as_iam_matches() {
    assert!(glob(
        "arn:aws:dynamodb:*:*:table/likes",
        "arn:aws:dynamodb:us-east-1:1:table/likes"
    ));
    assert!(!glob(
        "arn:aws:dynamodb:*:*:table/likes",
        "arn:aws:dynamodb:us-east-1:1:table/likes/index/by_user"
    ));
    assert!(glob(
        "arn:aws:dynamodb:*:*:table/likes/stream/*",
        "arn:aws:dynamodb:r:1:table/likes/stream/2026-12-03T00:00:00.000"
    ));
    assert!(glob("likes-*", "likes-abc"));
    assert!(!glob("likes-*", "likes"));
    // A test's unique name: its table, not its indexes nor its stream.
    let table = format!("arn:aws:dynamodb:*:*:table/likes-{NAME_PART}");
    assert!(glob(&table, "arn:aws:dynamodb:r:1:table/likes-abc"));
    assert!(!glob(
        &table,
        "arn:aws:dynamodb:r:1:table/likes-abc/index/by_reactor"
    ));
    assert!(glob(
        &format!("{table}/index/by_user"),
        "arn:aws:dynamodb:r:1:table/likes-abc/index/by_user"
    ));
    assert!(glob("a*b*c", "aXbYbc") && !glob("a*b*c", "aXbY"));
    assert!(glob("a?c", "abc") && !glob("a?c", "ac"));
    assert!(glob("*", ""));
}

fn template() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))
}

pub fn local_names() -> Names {
    Names::one_region()
        .with("LikesTable", "likes")
        .with("CountsTable", "counts")
        .with("MarkersTable", "markers")
        .with("EraseRequestsTable", "erase-requests")
        .with("EventStateTable", "event-state")
        .with("EraseQueue", "likes-erase")
        .with("EraseDeadLetterQueue", "likes-erase-dlq")
        .with("AggregatorFailureQueue", "likes-aggregator-failures")
        .with("LikeEventsFailureQueue", "likes-events-failures")
        .with("LikeEventBus", "likes")
}

#[test]
fn the_templates_roles_are_read_and_decide_as_iam_would() {
    let p = Policies::from_template(&template(), &local_names()).expect("policies");
    let table = |t: &str| format!("arn:aws:dynamodb:us-east-1:123456789012:table/{t}");
    // The API writes likes, and only reads counts.
    assert!(matches!(
        p.decide("LikesApiFunction", "dynamodb:PutItem", &table("likes")),
        Decision::Allowed { .. }
    ));
    assert!(matches!(
        p.decide("LikesApiFunction", "dynamodb:UpdateItem", &table("counts")),
        Decision::Denied { .. }
    ));
    // An index is its own resource.
    assert!(matches!(
        p.decide(
            "LikesApiFunction",
            "dynamodb:Query",
            &format!("{}/index/by_user", table("likes"))
        ),
        Decision::Allowed { .. }
    ));
    assert!(matches!(
        p.decide(
            "EraseWorkerFunction",
            "dynamodb:Query",
            &format!("{}/index/by_time", table("likes"))
        ),
        Decision::Denied { .. }
    ));
    // Actions are not case-sensitive; an unknown identity is denied.
    assert!(matches!(
        p.decide("LikesApiFunction", "DynamoDB:getitem", &table("likes")),
        Decision::Allowed { .. }
    ));
    assert!(matches!(
        p.decide("nobody", "dynamodb:GetItem", &table("likes")),
        Decision::Denied { .. }
    ));
    assert!(matches!(
        p.decide(ADMIN, "dynamodb:DeleteTable", &table("likes")),
        Decision::Allowed { .. }
    ));
    assert!(p.0.contains_key(OPERATOR));
}

#[test]
fn a_global_regions_roles_name_its_replicas() {
    let names = local_names()
        .when("OwnsTables", false)
        .without("LikesTable")
        .without("MarkersTable")
        .with("ReplicaLikesTable", "global-likes")
        .with("ReplicaMarkersTable", "global-markers");
    let p = Policies::from_template(&template(), &names).expect("policies");
    let table = |t: &str| format!("arn:aws:dynamodb:eu-west-1:123456789012:table/{t}");
    let allowed = |who: &str, action: &str, resource: &str| {
        matches!(p.decide(who, action, resource), Decision::Allowed { .. })
    };
    assert!(allowed(
        "LikesApiFunction",
        "dynamodb:PutItem",
        &table("global-likes")
    ));
    assert!(allowed(
        "LikesApiFunction",
        "dynamodb:PutItem",
        &table("global-markers")
    ));
    assert!(!allowed(
        "LikesApiFunction",
        "dynamodb:PutItem",
        &table("likes")
    ));
    let index = format!("{}/index/by_user", table("global-likes"));
    assert!(allowed("LikesApiFunction", "dynamodb:Query", &index));
    assert!(allowed("EraseWorkerFunction", "dynamodb:Query", &index));
    let stream = format!("{}/stream/2026-12-07T00:00:00.000", table("global-likes"));
    assert!(allowed(
        "CountAggregatorFunction",
        "dynamodb:GetRecords",
        &stream
    ));
    // Counts stays the region's own.
    assert!(allowed(
        "CountAggregatorFunction",
        "dynamodb:UpdateItem",
        &table("counts")
    ));
}

#[test]
fn a_condition_the_lab_was_not_told_is_an_error_not_an_allow() {
    let mut untold = local_names();
    untold.conditions.clear();
    let err = Policies::from_template(&template(), &untold).unwrap_err();
    assert!(err.to_string().contains("OwnsTables"), "{err}");
}

#[test]
fn a_resource_the_lab_cannot_name_is_an_error_not_an_allow() {
    let names = local_names();
    let partial = names.clone().without("EraseQueue");
    let err = Policies::from_template(&template(), &partial).unwrap_err();
    assert!(err.to_string().contains("EraseQueue"), "{err}");
}
