//! CPU cost of the aggregator's pure part: decoding a Lambda DynamoDB stream payload and
//! grouping its records by (post, bucket). Prints records/s for 1,000 and 10,000 records.
//!
//! `cargo bench -p likes-bench --bench parse_group`

use std::hint::black_box;

use aws_lambda_events::dynamodb::Event;
use count_aggregator::decode::StreamEvent;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use likes_core::{PostId, UserId};
use likes_harness::stream::{record_json, Rec};
use serde_json::json;

/// A realistic batch: 50 posts, a few hot, each like by a distinct user.
fn payload(n: usize) -> String {
    let posts: Vec<PostId> = (0..50).map(|_| PostId::new_random()).collect();
    let records: Vec<_> = (0..n)
        .map(|i| {
            // Skewed: a third of all likes go to post 0.
            let post = if i % 3 == 0 {
                &posts[0]
            } else {
                &posts[i % posts.len()]
            };
            let seq = (100_000_000_000_000_000_000u128 + i as u128).to_string();
            record_json(&Rec::new(i % 10 != 9, post, &UserId::new_random(), seq))
        })
        .collect();
    json!({ "Records": records }).to_string()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("aggregator");
    for n in [1_000usize, 10_000] {
        let text = payload(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("decode+group", n), &text, |b, text| {
            b.iter(|| {
                let event: StreamEvent = serde_json::from_str(black_box(text)).expect("parses");
                black_box(count_aggregator::group::parse(&event).posts.len())
            })
        });
        // What the decode used to be: aws_lambda_events' full record types, for comparison.
        group.bench_with_input(
            BenchmarkId::new("aws_lambda_events decode", n),
            &text,
            |b, text| {
                b.iter(|| {
                    let event: Event = serde_json::from_str(black_box(text)).expect("parses");
                    black_box(event.records.len())
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
