//! `make bench`: every figure the README's performance section quotes, in one run.
//! `make bench EVENT=path.json`: the aggregator's decode + group on a captured Lambda event.

mod batch_wall;
mod cache_reads;
mod coalesce;
mod cost;
mod events_cost;
mod gen;
mod hot_path;
mod jwt_cost;
mod limiter_cost;
mod moderation_cost;
mod reaction_cost;
mod summary_cost;
mod template;
mod xray_cost;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "The likes benchmarks: figures printed, nothing asserted")]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Every figure (the default).
    All,
    /// Decode + group a captured Lambda DynamoDB stream event; print records/s.
    Decode { event: PathBuf },
    /// Only the reactions' units and cost (needs the emulator: LIKES_TEST_DYNAMODB_ENDPOINT).
    Reactions,
    /// Only a suspension's and a restore's time and units for a user with this many likes
    /// (needs the emulator).
    Moderation {
        #[arg(long, default_value_t = 10_000)]
        likes: usize,
    },
    /// Only the cost model, with the round figures of an earlier full run for what it measures
    /// (`Measured::nominal`), then the reactions' and summaries' counted units (the emulator).
    Cost,
}

fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn fail(message: &str) -> ! {
    eprintln!("likes-bench: {message}");
    std::process::exit(2)
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    format!("{cores} cores, {cpu}, {}", std::env::consts::ARCH)
}

fn decode(path: &PathBuf) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
    let n =
        hot_path::records_in(&text).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
    let r = hot_path::rust_rate(&text, Duration::from_secs(3));
    let d = hot_path::decode_rate(&text, Duration::from_secs(2));
    println!(
        "{}: {n} records; decode + group {:.0} records/s ({:.2} µs/record; decode alone {:.2} µs) on {}",
        path.display(),
        r,
        1e6 / r,
        1e6 / d,
        machine()
    );
}

async fn all() {
    println!("machine: {}", machine());
    println!("\n== aggregator decode + group, side by side with a Python Lambda (json + boto3 TypeDeserializer) on the same events");
    let peer = hot_path::Peer::new(&root());
    if peer.is_none() {
        println!("  (the Python peer's venv .venv-bench is missing: `make bench` creates it)");
    }
    let dir = std::env::temp_dir();
    for n in [1_000usize, 10_000] {
        let text = gen::zipf_event(n, n as u64);
        let file = dir.join(format!("likes-bench-{n}.json"));
        std::fs::write(&file, &text)
            .unwrap_or_else(|e| fail(&format!("writing {}: {e}", file.display())));
        let ours = hot_path::rust_rate(&text, Duration::from_secs(2));
        let before = hot_path::aws_lambda_events_rate(&text, Duration::from_secs(2));
        let mut line = format!(
            "  {n:>6} records: count-aggregator {:.2} M records/s; aws_lambda_events decode alone (the previous path) {:.2} M/s",
            ours / 1e6,
            before / 1e6
        );
        if let Some(peer) = &peer {
            if let Err(e) = peer.agrees(&file, &text) {
                fail(&e);
            }
            match peer.rate(&file, 3) {
                Ok(p) => line += &format!("; Python {:.0} K/s; ratio {:.1}×", p / 1e3, ours / p),
                Err(e) => line += &format!("; Python peer failed: {e}"),
            }
        }
        println!("{line}");
    }

    println!("\n== one batch of 1,000 Zipf records, every Counts write taking 5 ms");
    let text = gen::zipf_event(1_000, 99);
    for c in [16usize, 32, 64, 128, 256] {
        let (_, posts, took) = batch_wall::wall_time(&text, c).await;
        println!(
            "  concurrency {c:>3}: {posts} posts (writes), {:.0} ms (≈{} rounds)",
            took.as_secs_f64() * 1e3,
            posts.div_ceil(c)
        );
    }
    println!(
        "  default: {}",
        count_aggregator::Settings::default().concurrency
    );

    println!("\n== Counts writes per like, batches formed as the mapping forms them (≤1,000 records or 1 s per shard)");
    let mut last = (0.0, 0.0);
    for (rate, shards) in [(10_000u64, 64usize), (60_000, 256)] {
        let c = coalesce::simulate(rate, 10, shards, 2_000, 0.05);
        let per_like = |w: u64| w as f64 / c.likes as f64;
        println!(
            "  {rate} likes/s over {shards} shards, one post at 5 %: per post per batch {:.3} writes/like, per (post, bucket) per batch {:.3}, naive per-record ADD 1.000; ratio {:.1}× fewer than naive",
            per_like(c.per_post),
            per_like(c.per_bucket),
            c.likes as f64 / c.per_post as f64
        );
        last = (per_like(c.per_post), c.batches as f64 / c.likes as f64);
    }

    println!("\n== DynamoDB reads per 10,000 count requests of one post, one execution environment, 2,000 requests/s");
    let mut cached_read_ratio = 1.0;
    for ttl in [Duration::ZERO, Duration::from_secs(1)] {
        let (n, reads, secs) = cache_reads::reads(ttl, 10_000, 2_000).await;
        println!(
            "  cache TTL {} ms: {reads} reads for {n} requests over {secs:.1} s",
            ttl.as_millis()
        );
        cached_read_ratio = reads as f64 / n as f64;
    }

    println!("\n== X-Ray (Tracing=Active): a GetItem against a loopback stub that answers at once, without and with the interceptor");
    let x = xray_cost::per_call().await;
    println!(
        "  {:.1} µs per call without, {:.1} µs with: +{:.1} µs per call attempt ({:.1} datagrams to the daemon per call)",
        x.plain_us,
        x.traced_us,
        x.traced_us - x.plain_us,
        x.datagrams_per_call
    );

    println!("\n== the JWT checked in the function (FunctionUrl profile): RS256 and ES256, against a loopback JWKS");
    let jwt = jwt_cost::measure().await;
    println!(
        "  one verification, key set warm: RS256 {:.1} µs, ES256 {:.1} µs",
        jwt.rs256_us, jwt.es256_us
    );
    println!(
        "  an environment's first verification (JWKS fetch over loopback http + parse + verify): {:.2} ms (median of 21)",
        jwt.first_fetch_ms
    );
    println!(
        "  loading the system's root certificates before the first https fetch: {:.2} ms (the TLS handshake and the round trip to the issuer come on top; none of it with LIKES_JWKS inline)",
        jwt.roots_ms
    );
    println!(
        "  on a full core; at likes-api's {} MB (1/{:.1} vCPU): RS256 {:.2} ms, ES256 {:.2} ms per request, root certificates {:.0} ms per cold start",
        cost::API_MB,
        cost::LAMBDA_MB_PER_VCPU / cost::API_MB,
        cost::cpu_ms(jwt.rs256_us / 1e3, cost::API_MB),
        cost::cpu_ms(jwt.es256_us / 1e3, cost::API_MB),
        cost::cpu_ms(jwt.roots_ms, cost::API_MB)
    );

    println!("\n== per-caller limits (in process): one admit, standard limits, callers remembered");
    let l = limiter_cost::measure();
    println!(
        "  {:.0} ns per request with {} callers remembered; no AWS request, so $0.00 per million requests beyond the CPU",
        l.ns_per_admit, l.callers
    );

    println!("\n== cost model (us-east-1 list prices; from the figures above)");
    let measured = cost::Measured {
        counts_units_per_like: last.0,
        batches_per_like: last.1,
        cached_read_ratio,
        // The slower of the two algorithms: the issuer's choice, not ours.
        jwt_ms: jwt.rs256_us.max(jwt.es256_us) / 1e3,
    };
    for line in cost::table(&measured) {
        println!("  {line}");
    }

    reactions(&measured).await;
    moderation(10_000).await;

    println!("\n== like events (PublishedEvents): the events function on a like/unlike workload, counted");
    for line in events_cost::lines().await {
        println!("  {line}");
    }
}

/// What a reaction costs in each mode, beside a like (requests against the emulator, counted).
async fn reactions(measured: &cost::Measured) {
    println!("\n== reactions: units per request, counted on the API's requests against the emulator (docs/reactions.md)");
    let Ok(endpoint) = std::env::var("LIKES_TEST_DYNAMODB_ENDPOINT") else {
        println!("  (no emulator: `make bench` starts one)");
        return;
    };
    let rows = match reaction_cost::measure_all(&endpoint).await {
        Ok(rows) => rows,
        Err(e) => fail(&format!("measuring reactions: {e}")),
    };
    let (default, lean) = (
        cost::Profile::default_profile(),
        cost::Profile::lean(measured.jwt_ms, template::target_utilisation()),
    );
    for r in &rows {
        let ops: Vec<String> = r.ops.iter().map(|(op, n)| format!("{n:.2} {op}")).collect();
        println!(
            "  {}: {:.2} write + {:.2} read units ({}); per million: default ${:.2}, lean ${:.2}",
            r.what,
            r.units.write,
            r.units.read,
            ops.join(", "),
            default
                .counted_write(measured, r.units.write, r.units.read)
                .total(),
            lean.counted_write(measured, r.units.write, r.units.read)
                .total(),
        );
    }
    // The like's figure in the cost model is 3 units; a like-only deployment must still pay that.
    let like = &rows[0];
    if (like.units.write - cost::LIKES_UNITS_PER_LIKE).abs() > 1e-9 || like.units.read != 0.0 {
        fail(&format!(
            "a like now costs {:.2} write and {:.2} read units, not the model's {}",
            like.units.write,
            like.units.read,
            cost::LIKES_UNITS_PER_LIKE
        ));
    }
    println!(
        "  a like-only deployment's like: {:.2} write units, as before reactions (the model's {})",
        like.units.write,
        cost::LIKES_UNITS_PER_LIKE
    );
    summaries(&endpoint).await;
}

/// A suspension and a restore of one user's likes (requests against the emulator, counted and
/// timed), and the estimate for AWS.
async fn moderation(likes: usize) {
    println!("\n== a suspension and a restore (docs/product-events.md): one user's likes moved out of sight and back");
    let Ok(endpoint) = std::env::var("LIKES_TEST_DYNAMODB_ENDPOINT") else {
        println!("  (no emulator: `make bench` starts one)");
        return;
    };
    let figures = match moderation_cost::measure(&endpoint, likes).await {
        Ok(f) => f,
        Err(e) => fail(&format!("measuring a suspension: {e}")),
    };
    for line in moderation_cost::lines(&figures, cost::WRU, cost::RRU) {
        println!("  {line}");
    }
}

/// A summary's read of its caller's own, per `SummaryMine` (requests against the emulator,
/// counted), checked against the feed model's figures.
async fn summaries(endpoint: &str) {
    println!("\n== a summary of 100 posts, its caller having liked 10 (and loved 5) since `since`: read units per summary, counted (count cache off: the 100 counts' 50 units included)");
    let rows = match summary_cost::measure_all(endpoint).await {
        Ok(rows) => rows,
        Err(e) => fail(&format!("measuring summaries: {e}")),
    };
    for r in &rows {
        println!("  {}: {:.2} read units ({})", r.what, r.units.read, r.ops);
    }
    // The model's fast figure is its queries' pages, less the callers past the cap.
    let fast = rows.iter().find(|r| r.what == "like, SummaryMine=Fast");
    let counted = fast.map_or(f64::NAN, |r| r.units.read - 50.0);
    let model = (cost::feed::mine_units(cost::feed::Mine::Fast, 1)
        - cost::feed::HEAVY_SHARE * 100.0)
        / (1.0 - cost::feed::HEAVY_SHARE);
    if (counted - model).abs() > 1e-9 {
        fail(&format!(
            "a fast summary's own read {counted} units, the feed model says {model}"
        ));
    }
}

#[tokio::main]
async fn main() {
    match Cli::parse().command.unwrap_or(Cmd::All) {
        Cmd::All => all().await,
        Cmd::Decode { event } => decode(&event),
        Cmd::Reactions => reactions(&cost::Measured::nominal()).await,
        Cmd::Moderation { likes } => moderation(likes).await,
        Cmd::Cost => {
            let measured = cost::Measured::nominal();
            println!("== cost model (us-east-1 list prices; nominal measured figures)");
            for line in cost::table(&measured) {
                println!("  {line}");
            }
            reactions(&measured).await;
        }
    }
}
