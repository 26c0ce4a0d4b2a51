//! Each command's work and its report, on the tables the command line names.

use std::io::IsTerminal;
use std::time::Duration;

use likes_aws::dynamo::table_exists;
use likes_aws::sqs_erase_queue::SqsEraseQueue;
use likes_aws::{sdk, DynamoCounts, DynamoHomes, DynamoLikes, DynamoPolicies, DynamoSuspensions};
use likes_core::erase::{erase_post, EraseStore, Sweep};
use likes_core::policy::{Audience, Policy};
use likes_core::{LikesAdmin, PostBucket, PostId, UserId};
use serde_json::json;

use crate::cli::{self, post_id, user_id, Cli, Cmd};
use crate::report::{progress, Report};
use crate::{account, audit, backfill, moderate, recount, single, AdminError, Stores};

pub type DynamoStores = Stores<DynamoLikes, DynamoCounts>;

/// Who the tool is against an emulator: the template's operators' policy.
pub const OPERATOR_IDENTITY: &str = "OperatorPolicy";

/// Checks the command line, connects to the tables (a missing one stops it before anything is
/// written) and runs the command. `main` and the tests run the very same thing.
pub async fn run(cli: &Cli) -> Result<Report, AdminError> {
    cli::check(cli)?;
    let (t, side) = stores(cli).await?;
    dispatch(cli, &t, &side).await
}

/// What some commands need beside the two tables.
struct Side {
    /// The erase queue (erase-user).
    queue: Option<SqsEraseQueue>,
    /// The moderation state (suspend-user, restore-user).
    suspensions: Option<DynamoSuspensions>,
    /// The posts' policies (set-policy), in the same table.
    policies: Option<DynamoPolicies>,
    /// The homes the region serves (homes), in the same table.
    homes: Option<DynamoHomes>,
}

async fn stores(cli: &Cli) -> Result<(DynamoStores, Side), AdminError> {
    let name = |given: &Option<String>, flag: &str, var: &str| {
        given.clone().ok_or_else(|| {
            AdminError::Usage(format!(
                "no table given: pass --{flag}, or set {var} (the stack's outputs name them)"
            ))
        })
    };
    let likes = name(&cli.likes_table, "likes-table", "LIKES_TABLE_NAME")?;
    let counts = name(&cli.counts_table, "counts-table", "COUNTS_TABLE_NAME")?;
    let conf = match &cli.endpoint_url {
        // As the operators' policy (`OperatorPolicy`): what the local lab lets it do is what
        // the deployed stack's policy lets an operator do.
        Some(endpoint) => sdk::emulator_as(endpoint, OPERATOR_IDENTITY).await,
        None => sdk::loader().load().await,
    };
    let client = aws_sdk_dynamodb::Client::new(&conf);
    let queue = cli
        .erase_queue_url
        .as_ref()
        .map(|url| SqsEraseQueue::new(aws_sdk_sqs::Client::new(&conf), url));
    // A typo must stop the tool before it writes anything.
    for name in [
        Some(&likes),
        Some(&counts),
        cli.erase_requests_table.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        if !table_exists(&client, name).await? {
            return Err(AdminError::Usage(format!("no table named {name:?}")));
        }
    }
    let suspensions = cli
        .erase_requests_table
        .as_ref()
        .map(|table| DynamoSuspensions::new(client.clone(), table));
    let policies = cli
        .erase_requests_table
        .as_ref()
        .map(|table| DynamoPolicies::new(client.clone(), table));
    let homes = cli
        .erase_requests_table
        .as_ref()
        .map(|table| DynamoHomes::new(client.clone(), table));
    let stores = Stores {
        likes: DynamoLikes::new(client.clone(), likes),
        counts: DynamoCounts::new(client, counts),
        fence_wait: Duration::from_secs(cli.fence_wait_secs),
        lease_term: Duration::from_secs(cli.lease_term_secs.max(1)),
    };
    let side = Side {
        queue,
        suspensions,
        policies,
        homes,
    };
    Ok((stores, side))
}

async fn dispatch(cli: &Cli, t: &DynamoStores, side: &Side) -> Result<Report, AdminError> {
    match &cli.command {
        Cmd::Audit { posts, all, sample } => {
            let ids: Vec<PostId> = if *all {
                let seed = chrono::Utc::now().timestamp() as u64;
                audit::all_posts(t, *sample, seed).await?
            } else {
                posts
                    .iter()
                    .map(|p| post_id("--post", p))
                    .collect::<Result<_, _>>()?
            };
            audit_posts(cli, t, &ids).await
        }
        Cmd::Recount {
            post: Some(post), ..
        } => recount_one(t, &post_id("--post", post)?).await,
        Cmd::Recount { post: None, .. } => crate::noted::report(cli, t).await,
        Cmd::SingleMode { segments, dry_run } => single_mode(cli, t, *segments, *dry_run).await,
        Cmd::EraseUser { user, dry_run } => {
            let queue = side.queue.as_ref();
            account::erase_account(cli, t, queue, &user_id(user)?, *dry_run).await
        }
        Cmd::SuspendUser { user } => {
            let state = side.suspensions.as_ref();
            moderate::decide(cli, t, state, &user_id(user)?, true).await
        }
        Cmd::RestoreUser { user } => {
            let state = side.suspensions.as_ref();
            moderate::decide(cli, t, state, &user_id(user)?, false).await
        }
        Cmd::SetPolicy {
            post,
            author,
            likes,
            counts,
            likers,
        } => {
            let policy = Policy {
                author: UserId::parse_field("--author", author)
                    .map_err(|e| AdminError::Usage(e.to_string()))?,
                likes_on: likes == "on",
                counts: Audience::parse(counts).unwrap_or_default(),
                likers: Audience::parse(likers).unwrap_or_default(),
            };
            let post = post_id("--post", post)?;
            moderate::set_policy(side.policies.as_ref(), &post, &policy).await
        }
        Cmd::Homes { serve, close } => {
            let serve = crate::homes::parse("--serve", serve)?;
            let close = crate::homes::parse("--close", close)?;
            crate::homes::run(side.homes.as_ref(), &serve, &close).await
        }
        Cmd::ErasePost { post, dry_run } => {
            erase_one_post(cli, t, &post_id("--post", post)?, *dry_run).await
        }
        Cmd::Backfill {
            segments,
            state,
            concurrency,
            dry_run,
        } => backfill::command(cli, t, *segments, state, *concurrency, *dry_run).await,
    }
}

async fn audit_posts(cli: &Cli, t: &DynamoStores, ids: &[PostId]) -> Result<Report, AdminError> {
    let bar = progress(cli.json, "posts audited", Some(ids.len() as u64));
    let mut results = Vec::new();
    let mut failures = Vec::new();
    let mut human = String::new();
    for post in ids {
        // One post that cannot be audited (being repaired right now, a store error) does not
        // stop the others: it is named, and the exit status says so.
        match audit::audit_post(t, post).await {
            Ok(a) => {
                for d in &a.drifts {
                    human += &format!(
                        "drift: post {} bucket {} {}: counted {}, the table holds {}\n",
                        a.post, d.bucket, d.kind, d.counted, d.exact
                    );
                }
                results.push(a);
            }
            Err(e) => {
                human += &format!("not audited: post {post}: {e}\n");
                failures.push(json!({"post_id": post, "error": e.to_string()}));
            }
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
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

async fn recount_one(t: &DynamoStores, post: &PostId) -> Result<Report, AdminError> {
    let buckets = recount::recount_post(t, post, &[], true).await?;
    let fixed: Vec<_> = buckets.iter().filter(|b| b.corrected).collect();
    let human = if fixed.is_empty() {
        format!("recounted post {post}: every bucket was exact")
    } else {
        let mut lines = Vec::new();
        for b in &fixed {
            if b.drift() != 0 {
                lines.push(format!(
                    "post {post} bucket {} like: {} → {}",
                    b.bucket, b.counted, b.exact
                ));
            }
            for k in b.kinds.iter().filter(|k| k.counted != k.exact) {
                lines.push(format!(
                    "post {post} bucket {} {}: {} → {}",
                    b.bucket, k.kind, k.counted, k.exact
                ));
            }
        }
        lines.join("\n")
    };
    let doc = json!({"post_id": post, "buckets": buckets.iter().map(|b| json!({
        "bucket": b.bucket, "counted": b.counted, "exact": b.exact, "corrected": b.corrected,
        "kinds": b.kinds.iter().map(|k| json!({"kind": k.kind, "counted": k.counted, "exact": k.exact})).collect::<Vec<_>>(),
    })).collect::<Vec<_>>()});
    Ok(Report::done(human, doc))
}

/// How many likes the index shows for a user (what `erase-user` would delete, as of now).
async fn single_mode(
    cli: &Cli,
    t: &DynamoStores,
    segments: u32,
    dry_run: bool,
) -> Result<Report, AdminError> {
    let scan = progress(cli.json, "scanning the table", None);
    let plan = single::plan(&t.likes, segments).await?;
    scan.finish_and_clear();
    let found = format!(
        "single-mode: {} likes and reactions scanned, {} (user, post) pairs hold several kinds, {} to delete",
        plan.held,
        plan.pairs,
        plan.extra.len()
    );
    let mut doc = json!({"held": plan.held, "pairs": plan.pairs, "to_delete": plan.extra.len()});
    if dry_run || plan.extra.is_empty() {
        doc["dry_run"] = json!(dry_run);
        return Ok(Report::done(found, doc));
    }
    confirm(
        cli,
        &format!("single-mode ({} reactions)", plan.extra.len()),
        "single",
    )?;
    let bar = progress(cli.json, "reactions deleted", Some(plan.extra.len() as u64));
    let tick = |n: u64| bar.set_position(n);
    let deleted = single::run(&t.likes, &plan, &tick).await?;
    bar.finish_and_clear();
    doc["deleted"] = json!(deleted);
    doc["changed_since"] = json!(plan.extra.len() - deleted);
    Ok(Report::done(
        format!(
            "{found}; {deleted} deleted ({} made again or removed since the scan, left as they are)",
            plan.extra.len() - deleted
        ),
        doc,
    ))
}

pub(crate) async fn likes_of_user(t: &DynamoStores, user: &UserId) -> Result<usize, AdminError> {
    let (mut n, mut from) = (0, None);
    loop {
        let (page, next) = t.likes.user_likes(user, None, from).await?;
        n += page.len();
        match next {
            Some(next) => from = Some(next),
            None => return Ok(n),
        }
    }
}

async fn erase_one_post(
    cli: &Cli,
    t: &DynamoStores,
    post: &PostId,
    dry_run: bool,
) -> Result<Report, AdminError> {
    let mut found = 0;
    for pb in PostBucket::all(post) {
        found += t.likes.count_bucket(&pb).await?;
    }
    if dry_run {
        return Ok(Report::done(
            format!("erase-post {post}: would delete {found} likes (dry run: nothing changed)"),
            json!({"post_id": post, "would_delete": found, "dry_run": true}),
        ));
    }
    confirm(
        cli,
        &format!("erase-post {post} ({found} likes)"),
        post.as_str(),
    )?;
    let bar = progress(cli.json, "likes deleted", Some(found.max(0) as u64));
    // A post's erase and its recount exclude each other: the erase holds the post's lease.
    let job = format!("erase-{}", uuid::Uuid::new_v4().simple());
    let tick = |n: usize| bar.set_position(n as u64);
    let erase = async { Ok(erase_post(&t.likes, post, &tick).await?) };
    let n = crate::lease::hold(&t.counts, post, &job, t.lease_term, erase).await?;
    bar.finish_and_clear();
    Ok(Report::done(
        format!("erased {n} likes of post {post}"),
        json!({"post_id": post, "deleted": n}),
    ))
}

/// How an operator's command sweeps a user's indexes (an erase, a suspension): until two
/// sweeps a second apart find nothing, `progress` hearing the items done so far.
pub(crate) fn operator_sweep(progress: &(dyn Fn(usize) + Sync)) -> Sweep<'_> {
    Sweep {
        progress,
        empty_sweeps: 2,
        pause: Duration::from_secs(1),
        before: None,
    }
}

/// An erase changes the table for good: on a terminal it asks for the id to be typed again;
/// elsewhere it needs `--yes`.
pub fn confirm(cli: &Cli, what: &str, id: &str) -> Result<(), AdminError> {
    if cli.yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        return Err(AdminError::Usage(format!(
            "{what} deletes for good: pass --yes to confirm (stdin is not a terminal to ask on), or --dry-run to see what it would delete"
        )));
    }
    eprint!("{what} deletes for good. Type {id} to confirm: ");
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| AdminError::Usage(format!("could not read the confirmation: {e}")))?;
    if answer.trim() == id {
        Ok(())
    } else {
        Err(AdminError::Usage(format!(
            "not confirmed ({:?} is not {id}): nothing was deleted",
            answer.trim()
        )))
    }
}
