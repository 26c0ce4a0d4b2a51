//! The command line: what each command takes, checks and reports. Kept out of `main` so that
//! tests run the very same commands in-process against the local stack.

use std::path::PathBuf;
use std::time::Duration;

use crate::{audit, backfill, recount, AdminError, Stores};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use likes_aws::dynamo::table_exists;
use likes_aws::{sdk, DynamoCounts, DynamoLikes};
use likes_core::erase::{erase_post, erase_user, Sweep};
use likes_core::{PostId, UserId};
use serde_json::{json, Value};

#[derive(Parser, Debug)]
#[command(name = "likes-admin", about = "Day-2 operations on a likes deployment")]
pub struct Cli {
    /// The Likes table (default: LIKES_TABLE_NAME; the stack's LikesTableName output).
    #[arg(long, global = true)]
    likes_table: Option<String>,
    /// The Counts table (default: COUNTS_TABLE_NAME; the stack's CountsTableName output).
    #[arg(long, global = true)]
    counts_table: Option<String>,
    /// A DynamoDB endpoint other than AWS's (default: LIKES_DYNAMODB_ENDPOINT, as `make dev`
    /// sets it for the local stack).
    #[arg(long, global = true)]
    endpoint_url: Option<String>,
    /// One JSON document on stdout instead of lines for people.
    #[arg(long, global = true)]
    pub json: bool,
    /// How long a recount waits for the aggregator to reach its end fence.
    #[arg(long, global = true, default_value_t = 120)]
    fence_wait_secs: u64,
    /// How long a post's lease holds between renewals; a post whose holder stopped renewing is
    /// taken over after this long.
    #[arg(long, global = true, default_value_t = crate::DEFAULT_LEASE_TERM.as_secs())]
    lease_term_secs: u64,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// A post's count against its table; exit 1 if any drifted.
    Audit {
        #[arg(long = "post")]
        posts: Vec<String>,
        /// Every post that has a count.
        #[arg(long, conflicts_with = "posts")]
        all: bool,
        /// With --all: a random sample of this many posts.
        #[arg(long, requires = "all")]
        sample: Option<usize>,
    },
    /// Makes a post's count exact while its likes keep flowing.
    Recount {
        #[arg(long)]
        post: String,
    },
    /// Deletes every like of a user (counts follow through the stream).
    EraseUser { user: String },
    /// Deletes every like of a post.
    ErasePost { post: String },
    /// Every count exact, for a table whose likes the stream never saw.
    Backfill {
        #[arg(long, default_value_t = 4)]
        segments: u32,
        /// Posts done are kept here; a rerun skips them.
        #[arg(long)]
        state: Option<PathBuf>,
        #[arg(long, default_value_t = 8)]
        concurrency: usize,
    },
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

type DynamoStores = Stores<DynamoLikes, DynamoCounts>;

async fn stores(cli: &Cli) -> Result<DynamoStores, AdminError> {
    let name = |flag: &Option<String>, var: &str, what: &str| {
        flag.clone().or_else(|| env(var)).ok_or_else(|| {
            AdminError::Usage(format!(
                "no {what} table: pass --{}-table, or set {var}",
                what.to_lowercase()
            ))
        })
    };
    let likes = name(&cli.likes_table, "LIKES_TABLE_NAME", "Likes")?;
    let counts = name(&cli.counts_table, "COUNTS_TABLE_NAME", "Counts")?;
    // Locally as `make dev` runs it; against AWS with the SDK's default credentials and region.
    let conf = match cli
        .endpoint_url
        .clone()
        .or_else(|| env("LIKES_DYNAMODB_ENDPOINT"))
    {
        Some(endpoint) => sdk::emulator(&endpoint).await,
        None => sdk::loader().load().await,
    };
    let client = aws_sdk_dynamodb::Client::new(&conf);
    // A typo must stop the tool before it writes anything.
    for name in [&likes, &counts] {
        if !table_exists(&client, name).await? {
            return Err(AdminError::Usage(format!("no table named {name:?}")));
        }
    }
    Ok(Stores {
        likes: DynamoLikes::new(client.clone(), likes),
        counts: DynamoCounts::new(client, counts),
        fence_wait: Duration::from_secs(cli.fence_wait_secs),
        lease_term: Duration::from_secs(cli.lease_term_secs.max(1)),
    })
}

fn bar(json: bool, what: &str) -> ProgressBar {
    if json {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {pos} [{elapsed}]") {
        b.set_style(style);
    }
    b.set_message(what.to_owned());
    b.enable_steady_tick(Duration::from_millis(200));
    b
}

fn post_id(field: &'static str, raw: &str) -> Result<PostId, AdminError> {
    PostId::parse_field(field, raw).map_err(|e| AdminError::Usage(e.to_string()))
}

fn user_id(raw: &str) -> Result<UserId, AdminError> {
    UserId::parse_field("USER", raw).map_err(|e| AdminError::Usage(e.to_string()))
}

/// What a command found or did: for people, and for scripts (`--json`).
#[derive(Debug, Clone)]
pub struct Report {
    /// False when an audit found drift (exit status 1).
    pub clean: bool,
    /// Posts the command could not handle (each named in the report): exit status 3, after
    /// all the others were done.
    pub failed: usize,
    pub human: String,
    pub doc: Value,
}

impl Report {
    fn done(human: String, doc: Value) -> Self {
        Report {
            clean: true,
            failed: 0,
            human,
            doc,
        }
    }
}

pub async fn run(cli: &Cli) -> Result<Report, AdminError> {
    // Every id is checked before anything is read or written.
    match &cli.command {
        Cmd::Audit { posts, all, .. } if posts.is_empty() && !all => {
            return Err(AdminError::Usage(
                "audit needs --post P (repeatable) or --all".into(),
            ))
        }
        Cmd::Audit { posts, .. } => posts
            .iter()
            .try_for_each(|p| post_id("--post", p).map(|_| ()))?,
        Cmd::Recount { post } => drop(post_id("--post", post)?),
        Cmd::ErasePost { post } => drop(post_id("POST", post)?),
        Cmd::EraseUser { user } => drop(user_id(user)?),
        Cmd::Backfill { segments, .. } if !(1..=1000).contains(segments) => {
            return Err(AdminError::Usage("--segments must be 1 to 1000".into()))
        }
        Cmd::Backfill { .. } => {}
    }
    let t = stores(cli).await?;
    match &cli.command {
        Cmd::Audit { posts, all, sample } => {
            let ids: Vec<PostId> = if *all {
                audit::all_posts(&t.counts, *sample, chrono::Utc::now().timestamp() as u64).await?
            } else {
                posts
                    .iter()
                    .map(|p| post_id("--post", p))
                    .collect::<Result<_, _>>()?
            };
            let b = bar(cli.json, "posts audited");
            let mut results = Vec::new();
            let mut failures = Vec::new();
            let mut human = String::new();
            for post in &ids {
                // One post that cannot be audited (being repaired right now, a store error)
                // does not stop the others: it is named, and the exit status says so.
                match audit::audit_post(&t, post).await {
                    Ok(a) => {
                        for d in &a.drifts {
                            human += &format!(
                                "drift: post {} bucket {}: counted {}, the table holds {}\n",
                                a.post, d.bucket, d.counted, d.exact
                            );
                        }
                        results.push(a);
                    }
                    Err(e) => {
                        human += &format!("not audited: post {post}: {e}\n");
                        failures.push(json!({"post_id": post, "error": e.to_string()}));
                    }
                }
                b.inc(1);
            }
            b.finish_and_clear();
            let drifted = results.iter().filter(|a| !a.drifts.is_empty()).count();
            human += &format!(
                "audited {} posts: {drifted} drifted, {} not audited",
                results.len(),
                failures.len()
            );
            let doc = json!({"audited": results.len(), "drifted": drifted, "failed": failures,
                   "posts": results.iter().map(audit::PostAudit::json).collect::<Vec<_>>()});
            Ok(Report {
                clean: drifted == 0,
                failed: failures.len(),
                human,
                doc,
            })
        }
        Cmd::Recount { post } => {
            let post = post_id("--post", post)?;
            let buckets = recount::recount_post(&t, &post, &[], true).await?;
            let fixed: Vec<_> = buckets.iter().filter(|b| b.corrected).collect();
            let human = if fixed.is_empty() {
                format!("recounted post {post}: every bucket was exact")
            } else {
                fixed
                    .iter()
                    .map(|b| {
                        format!(
                            "post {post} bucket {}: {} → {}",
                            b.bucket, b.counted, b.exact
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            let doc = json!({"post_id": post, "buckets": buckets.iter().map(|b| json!({
                "bucket": b.bucket, "counted": b.counted, "exact": b.exact, "corrected": b.corrected
            })).collect::<Vec<_>>()});
            Ok(Report::done(human, doc))
        }
        Cmd::EraseUser { user } => {
            let user = user_id(user)?;
            let b = bar(cli.json, "likes deleted");
            let progress = |n: usize| b.set_position(n as u64);
            let sweep = Sweep {
                progress: &progress,
                empty_sweeps: 2,
                pause: Duration::from_secs(1),
                before: None,
            };
            let n = erase_user(&t.likes, &user, &sweep).await?;
            b.finish_and_clear();
            Ok(Report::done(
                format!("erased {n} likes of {user}"),
                json!({"user_id": user, "deleted": n}),
            ))
        }
        Cmd::ErasePost { post } => {
            let post = post_id("POST", post)?;
            let b = bar(cli.json, "likes deleted");
            // A post's erase and its recount exclude each other: the erase holds the post's
            // lease, and deletes the recount's window under no live job.
            let job = format!("erase-{}", uuid::Uuid::new_v4().simple());
            let progress = |n: usize| b.set_position(n as u64);
            let erase = async { Ok(erase_post(&t.likes, &post, &progress).await?) };
            let n = crate::lease::hold(&t.counts, &post, &job, t.lease_term, erase).await?;
            b.finish_and_clear();
            Ok(Report::done(
                format!("erased {n} likes of post {post}"),
                json!({"post_id": post, "deleted": n}),
            ))
        }
        Cmd::Backfill {
            segments,
            state,
            concurrency,
        } => {
            let b = bar(cli.json, "posts recounted");
            let progress = |_: &str, done: u64, total: u64| {
                b.set_length(total);
                b.set_position(done);
            };
            let r =
                backfill::backfill(&t, *segments, state.clone(), *concurrency, &progress).await?;
            b.finish_and_clear();
            let mut human: String = r
                .failed
                .iter()
                .map(|(post, why)| format!("not recounted: post {post}: {why}\n"))
                .collect();
            human += &format!(
                "backfill: {} likes in {} posts ({} done before, {} with invalid ids skipped, {} not recounted) scanned at {:.0} items/s; {} buckets corrected; {:.1} s",
                r.items, r.posts, r.skipped_done, r.invalid_ids.len(), r.failed.len(), r.scan_items_per_sec, r.corrected_buckets, r.seconds
            );
            let failed: Vec<Value> = r
                .failed
                .iter()
                .map(|(post, why)| json!({"post_id": post, "error": why}))
                .collect();
            Ok(Report {
                clean: true,
                failed: failed.len(),
                human,
                doc: json!({"items": r.items, "posts": r.posts, "skipped_done": r.skipped_done, "invalid_ids": r.invalid_ids,
                       "failed": failed, "scan_items_per_sec": r.scan_items_per_sec,
                       "corrected_buckets": r.corrected_buckets, "seconds": r.seconds}),
            })
        }
    }
}
