use super::*;
use crate::decode::decode;
use aws_lambda_events::dynamodb::Event;
use likes_core::control::parse_fence;
use likes_core::{PostBucket, UserId};
use likes_sim::stream::{batch, StreamRecord as TestRecord};
use proptest::prelude::*;
use serde_dynamo::AttributeValue;

fn rec(name: &str, post: &PostId, user: &UserId, seq: u64) -> serde_json::Value {
    let seq = (100_000_000_000_000_000_000u128 + u128::from(seq)).to_string();
    let pb = PostBucket::for_like(post, user).to_string();
    TestRecord::likes(name, &pb, user.as_str(), &seq).to_json()
}

/// Groups as (post_bucket, [(seq, delta, created)]), in order of first appearance.
type Groups = Vec<(String, Vec<(String, i64, i64)>)>;

fn parse_text(text: &str) -> Groups {
    let event: StreamEvent = decode(text).expect("event");
    summary(&parse(&event)).0
}

/// (groups, ignored, skipped).
type Summary = (Groups, usize, usize);

fn summary(parsed: &Parsed<'_>) -> Summary {
    let mut groups = Vec::new();
    for p in &parsed.posts {
        for b in &p.buckets {
            let key = format!("{}#{}", p.post, b.bucket);
            let changes = b
                .changes
                .iter()
                .map(|c| (c.seq.raw().to_owned(), c.delta, c.created))
                .collect();
            groups.push((key, changes));
        }
    }
    (groups, parsed.ignored, parsed.skipped + parsed.repeated)
}

/// The same decisions taken on `aws_lambda_events`' full parse: the reference.
fn reference(event: &Event) -> Summary {
    let (mut groups, mut ignored, mut skipped) = (Vec::<(String, Vec<_>)>::new(), 0, 0);
    for r in &event.records {
        let delta = match r.event_name.as_str() {
            "INSERT" => 1,
            "REMOVE" => -1,
            _ => {
                ignored += 1;
                continue;
            }
        };
        let s = |k: &str| match r.change.keys.get(k) {
            Some(AttributeValue::S(s)) => Some(s.clone()),
            _ => None,
        };
        let user = s("user_id").unwrap_or_default();
        let fence = user.starts_with('~') && delta == 1 && parse_fence(&user).is_some();
        if user.starts_with('~') && !fence {
            ignored += 1;
            continue;
        }
        let delta = if fence { 0 } else { delta };
        let seq = r
            .change
            .sequence_number
            .clone()
            .filter(|q| Seq::parse(q).is_ok());
        let key = s("post_bucket").filter(|k| PostBucket::parse(k).is_ok());
        let (Some(seq), Some(key)) = (seq, key) else {
            skipped += 1;
            continue;
        };
        let created = r.change.approximate_creation_date_time.timestamp();
        let group = match groups.iter_mut().position(|(k, _)| *k == key) {
            Some(i) => &mut groups[i].1,
            None => {
                groups.push((key, Vec::new()));
                &mut groups.last_mut().expect("just pushed").1
            }
        };
        let prev: Option<&(String, i64, i64)> = group.last();
        if prev.is_some_and(|(p, _, _)| SeqNo::parse(p).ok() >= SeqNo::parse(&seq).ok()) {
            skipped += 1;
            continue;
        }
        group.push((seq, delta, created));
    }
    // Posts first appear in the order of their first key; keys of one post stay together.
    let mut order: Vec<String> = Vec::new();
    for (k, _) in &groups {
        let post = k.split('#').next().unwrap_or("").to_owned();
        if !order.contains(&post) {
            order.push(post);
        }
    }
    let mut sorted = Vec::new();
    for post in order {
        for g in groups
            .iter()
            .filter(|(k, _)| k.split('#').next() == Some(post.as_str()))
        {
            sorted.push(g.clone());
        }
    }
    (sorted, ignored, skipped)
}

use likes_core::seq::SeqNo;

fn agrees(text: &str) -> Result<(), TestCaseError> {
    let typed: Event = serde_json::from_str(text).expect("aws_lambda_events parses it");
    let borrowed: StreamEvent = decode(text).expect("the borrowed parse parses it");
    prop_assert_eq!(summary(&parse(&borrowed)), reference(&typed));
    Ok(())
}

#[test]
fn groups_by_key_in_stream_order_and_first_appearance() {
    let (p, q) = (PostId::new_random(), PostId::new_random());
    let u = UserId::new_random();
    let records = vec![
        rec("INSERT", &p, &u, 1),
        rec("INSERT", &q, &u, 2),
        rec("MODIFY", &p, &u, 3),
        rec("REMOVE", &p, &u, 4),
        rec("INSERT", &p, &u, 5),
    ];
    let text = batch(records).to_string();
    let event: StreamEvent = decode(&text).unwrap();
    let parsed = parse(&event);
    assert_eq!(
        (parsed.ignored, parsed.skipped, parsed.records()),
        (1, 0, 4)
    );
    assert_eq!(parsed.posts.len(), 2);
    assert_eq!(parsed.posts[0].post, p);
    assert_eq!(parsed.posts[1].post, q);
    let groups = parse_text(&text);
    let b = PostBucket::for_like(&p, &u).to_string();
    assert_eq!(groups[0].0, b);
    let deltas: Vec<(String, i64)> = groups[0].1.iter().map(|c| (c.0.clone(), c.1)).collect();
    assert_eq!(
        deltas,
        vec![
            ("100000000000000000001".to_owned(), 1),
            ("100000000000000000004".to_owned(), -1),
            ("100000000000000000005".to_owned(), 1),
        ]
    );
}

#[test]
fn an_empty_foreign_or_control_batch_yields_nothing() {
    let empty = batch(vec![]).to_string();
    let event: StreamEvent = decode(&empty).unwrap();
    assert_eq!(parse(&event), Parsed::default());
    let mut bad = rec("INSERT", &PostId::new_random(), &UserId::new_random(), 1);
    bad["dynamodb"]["SequenceNumber"] = "12x".into();
    let mut no_change = rec("INSERT", &PostId::new_random(), &UserId::new_random(), 2);
    no_change.as_object_mut().unwrap().remove("dynamodb");
    let text = batch(vec![bad, no_change]).to_string();
    let event: StreamEvent = decode(&text).unwrap();
    let parsed = parse(&event);
    assert_eq!((parsed.skipped, parsed.posts.len()), (2, 0));
    // A request marker in the post's bucket is control, not a like.
    let marker = TestRecord::likes("INSERT", "p#3", "~op#u#k-1", "100000000000000000009");
    let text = batch(vec![marker.to_json()]).to_string();
    let event: StreamEvent = decode(&text).unwrap();
    let parsed = parse(&event);
    assert_eq!((parsed.ignored, parsed.posts.len()), (1, 0));
}

#[test]
fn fences_are_kept_in_order_and_uncounted() {
    // (What a fence's sort key is, is `likes_core::control`'s to say, and tested there.) A fence's REMOVE (the job cleaning up) is ignored, its INSERT kept in order, uncounted.
    let (p, u) = (PostId::new_random(), UserId::new_random());
    let pb = PostBucket::for_like(&p, &u).to_string();
    let seq = |n: u64| (100_000_000_000_000_000_000u128 + u128::from(n)).to_string();
    let text = batch(vec![
        TestRecord::likes("INSERT", &pb, "~fence#j#begin", &seq(1)).to_json(),
        TestRecord::likes("INSERT", &pb, u.as_str(), &seq(2)).to_json(),
        TestRecord::likes("REMOVE", &pb, "~fence#j#begin", &seq(3)).to_json(),
    ])
    .to_string();
    let event: StreamEvent = decode(&text).unwrap();
    let parsed = parse(&event);
    let changes = &parsed.posts[0].buckets[0].changes;
    assert_eq!(parsed.ignored, 1);
    assert_eq!(changes[0].fence, Some(Fence::Begin("j")));
    assert_eq!(
        (changes[0].delta, changes[1].delta, changes[1].user),
        (0, 1, u.as_str())
    );
}

#[test]
fn a_record_repeated_within_a_batch_counts_once() {
    let (p, u) = (PostId::new_random(), UserId::new_random());
    let one = rec("INSERT", &p, &u, 7);
    let text = batch(vec![one.clone(), one]).to_string();
    let event: StreamEvent = decode(&text).unwrap();
    let parsed = parse(&event);
    assert_eq!((parsed.records(), parsed.repeated), (1, 1));
}

#[test]
fn agrees_with_aws_lambda_events_on_every_sample_event() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../events");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("events") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("readable");
        let is_batch = path.extension().is_some_and(|e| e == "json")
            && serde_json::from_str::<serde_json::Value>(&text)
                .is_ok_and(|v| v["Records"][0]["eventSource"] == "aws:dynamodb");
        if !is_batch {
            continue;
        }
        agrees(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} stream events found");
}

fn record_strategy() -> impl Strategy<Value = serde_json::Value> {
    let name = prop_oneof![
        6 => Just("INSERT"),
        3 => Just("REMOVE"),
        1 => Just("MODIFY"),
    ];
    let user = prop_oneof![
        8 => "[a-z0-9|]{1,12}",
        1 => Just("~fence#j#begin".to_owned()),
        1 => Just("~fence#job-2#end".to_owned()),
        1 => Just("~op#u#k-1".to_owned()),
    ];
    // Few posts and buckets, so that groups of several records (and posts of several buckets)
    // are the rule, not the exception.
    let post = prop_oneof![
        6 => prop_oneof![Just("p1".to_owned()), Just("p2".to_owned()), Just("p:3".to_owned())],
        3 => "[a-z0-9:]{1,8}",
        1 => Just("bad post".to_owned()),
    ];
    let bucket = prop_oneof![6 => 0u8..3, 3 => 0u8..18];
    (name, user, post, bucket, 0u32..2_000_000_000).prop_map(
        |(name, user, post, bucket, created)| {
            let key = format!("{post}#{bucket}");
            TestRecord::likes(name, &key, &user, "0")
                .created(f64::from(created))
                .to_json()
        },
    )
}

/// A batch as a shard delivers it: sequence numbers growing in stream order, with now and then
/// a record delivered twice (its number repeated) or one without a number a shard could give.
fn batch_strategy(len: std::ops::Range<usize>) -> impl Strategy<Value = Vec<serde_json::Value>> {
    let seq = prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)];
    prop::collection::vec((record_strategy(), seq, 1u64..4), len).prop_map(|records| {
        let mut n = 100_000_000_000_000_000_000u128;
        records
            .into_iter()
            .map(|(mut r, kind, step)| {
                let spelled = match kind {
                    0 => {
                        n += u128::from(step);
                        n.to_string()
                    }
                    1 => n.to_string(),
                    _ => "12x".to_owned(),
                };
                r["dynamodb"]["SequenceNumber"] = spelled.into();
                r
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn agrees_with_aws_lambda_events_on_generated_batches(
        records in batch_strategy(0..60), escape in any::<bool>()
    ) {
        let mut text = batch(records).to_string();
        if escape {
            // JSON escapes in the keys: the borrowed parse must copy them, not misread them.
            text = text.replace('#', "\\u0023");
        }
        agrees(&text)?;
    }
}

/// The generator makes the groups the property is about: most generated batches hold a group of
/// several records (records of one key, in stream order), not one record per key.
#[test]
fn generated_batches_mostly_hold_groups_of_several_records() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = batch_strategy(20..60);
    let mut grouped = 0;
    for _ in 0..200 {
        let records = strategy.new_tree(&mut runner).expect("a batch").current();
        let text = batch(records).to_string();
        let event: StreamEvent = decode(&text).expect("event");
        let parsed = parse(&event);
        let largest = parsed
            .posts
            .iter()
            .flat_map(|p| &p.buckets)
            .map(|b| b.changes.len())
            .max();
        if largest.unwrap_or(0) >= 2 {
            grouped += 1;
        }
    }
    assert!(
        grouped >= 160,
        "only {grouped} of 200 batches hold a group of two"
    );
}
