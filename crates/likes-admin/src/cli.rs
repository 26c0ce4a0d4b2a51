//! The command line: what each command takes and checks before anything is read or written.
//! Only parsing and checking, no I/O: [`crate::commands`] runs what it describes.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use likes_core::{PostId, UserId};

use crate::AdminError;

/// Day-2 operations on a likes deployment: audit counts against the table, make a post's count
/// exact while its likes keep flowing, erase a person's or a post's likes, suspend and restore a
/// user, backfill every count.
///
/// Exit status: 0 done; 1 drift found (audit); 2 bad usage or input, nothing changed; 3 the
/// operation failed or was refused (the message says why and what to run; every command is
/// idempotent). Against AWS it uses the SDK's default credentials and region.
#[derive(Parser, Debug)]
#[command(name = "likes-admin", version, verbatim_doc_comment)]
pub struct Cli {
    /// The Likes table: the stack's LikesTableName output.
    #[arg(long, global = true, env = "LIKES_TABLE_NAME", value_name = "TABLE")]
    pub likes_table: Option<String>,
    /// The Counts table: the stack's CountsTableName output.
    #[arg(long, global = true, env = "COUNTS_TABLE_NAME", value_name = "TABLE")]
    pub counts_table: Option<String>,
    /// A DynamoDB endpoint other than AWS's: an emulator (`make dev` logs its address).
    #[arg(
        long,
        global = true,
        env = "LIKES_DYNAMODB_ENDPOINT",
        value_name = "URL"
    )]
    pub endpoint_url: Option<String>,
    /// One JSON document on stdout (and errors as JSON on stderr) instead of lines for people.
    #[arg(long, global = true)]
    pub json: bool,
    /// Seconds a recount waits for the aggregator to reach its end fences before giving up.
    #[arg(long, global = true, default_value_t = 120, value_name = "SECS")]
    pub fence_wait_secs: u64,
    /// Seconds a post's lease holds between its holder's renewals: a post whose repair died is
    /// taken over this long after it stopped.
    #[arg(long, global = true, default_value_t = crate::DEFAULT_LEASE_TERM.as_secs(), value_name = "SECS")]
    pub lease_term_secs: u64,
    /// The erase queue: the stack's EraseQueueUrl output (erase-user queues its last sweep
    /// there).
    #[arg(long, global = true, env = "ERASE_QUEUE_URL", value_name = "URL")]
    pub erase_queue_url: Option<String>,
    /// The pending-erasures table, which also holds each user's moderation state: the stack's
    /// EraseRequestsTableName output (suspend-user and restore-user record their decision there).
    #[arg(
        long,
        global = true,
        env = "ERASE_REQUESTS_TABLE_NAME",
        value_name = "TABLE"
    )]
    pub erase_requests_table: Option<String>,
    /// Confirms an erase without asking (needed when stdin is not a terminal).
    #[arg(long, global = true)]
    pub yes: bool,
    #[command(subcommand)]
    pub command: Cmd,
}

#[derive(Subcommand, Debug)]
pub enum Cmd {
    /// Checks posts' counts against the table, exactly where they differ; exit 1 on drift.
    Audit {
        /// A post to audit (repeatable).
        #[arg(long = "post", value_name = "POST_ID")]
        posts: Vec<String>,
        /// Every post that has a count.
        #[arg(long, conflicts_with = "posts")]
        all: bool,
        /// With --all: a random sample of this many posts.
        #[arg(long, requires = "all", value_name = "N")]
        sample: Option<usize>,
    },
    /// Makes a post's count exact while its likes keep flowing; with --noted, every post the
    /// aggregator noted as left unapplied by a failing batch (after a batch was given up).
    Recount {
        /// The post to recount.
        #[arg(long, value_name = "POST_ID", required_unless_present = "noted")]
        post: Option<String>,
        /// Every post the aggregator noted (its notes are cleared once each is exact).
        #[arg(long, conflicts_with = "post")]
        noted: bool,
    },
    /// Deletes every like of a user (an account deleted); counts follow through the stream.
    EraseUser {
        /// The user: their identity provider's `sub`, as the API sees it.
        #[arg(long, value_name = "USER_ID")]
        user: String,
        /// Counts the likes that would go, and changes nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Deletes every like of a post (a post deleted); its count reaches 0 through the stream.
    ErasePost {
        /// The post.
        #[arg(long, value_name = "POST_ID")]
        post: String,
        /// Counts the likes that would go, and changes nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Suspends a user, as the product's `UserSuspended` does: their likes and reactions stop
    /// counting and leave every list, and their writes are refused, until restore-user. Takes
    /// at least 25 s (the API's refusal reaches every environment, and a write admitted before
    /// lands, before the last sweep).
    SuspendUser {
        /// The user: their identity provider's `sub`, as the API sees it.
        #[arg(long, value_name = "USER_ID")]
        user: String,
    },
    /// Lifts a user's suspension, as the product's `UserRestored` does: every hidden like and
    /// reaction counts again, back at its own time.
    RestoreUser {
        /// The user.
        #[arg(long, value_name = "USER_ID")]
        user: String,
    },
    /// Sets a post's policy, as the product's `PostPolicyChanged` does (the latest wins): whether
    /// it takes new likes, and who sees its counts and its likers. The API follows it within 5 s.
    SetPolicy {
        /// The post.
        #[arg(long, value_name = "POST_ID")]
        post: String,
        /// Its author: their identity provider's `sub`, as the API sees it.
        #[arg(long, value_name = "USER_ID")]
        author: String,
        /// `off`: likes and reactions refused (unlikes still work).
        #[arg(long, default_value = "on", value_parser = ["on", "off"])]
        likes: String,
        /// `author`: anyone else sees no count.
        #[arg(long, default_value = "public", value_parser = ["public", "author"])]
        counts: String,
        /// `author`: anyone else is refused who liked it.
        #[arg(long, default_value = "public", value_parser = ["public", "author"])]
        likers: String,
    },
    /// In two regions (docs/regions.md): the users' homes this region serves, and opens
    /// (`--serve`) or closes (`--close`) them; the API refuses the others (421 wrong_region).
    Homes {
        /// A home to serve here (repeatable): the label the tokens' home claim carries.
        #[arg(long = "serve", value_name = "HOME")]
        serve: Vec<String>,
        /// A home no longer served here (repeatable).
        #[arg(long = "close", value_name = "HOME")]
        close: Vec<String>,
    },
    /// Makes every count exact, for a table whose likes the stream never saw.
    Backfill {
        /// Parallel Scan segments.
        #[arg(long, default_value_t = 4, value_name = "N")]
        segments: u32,
        /// A file where the posts done are kept; a rerun skips them.
        #[arg(long, value_name = "FILE")]
        state: Option<PathBuf>,
        /// Posts recounted at once.
        #[arg(long, default_value_t = 8, value_name = "N")]
        concurrency: usize,
        /// Lists what would be recounted, and changes nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// After switching a deployment from `multi` to `single` reaction mode: leaves each
    /// (user, post) its newest kind, deleting the others (counts follow through the stream).
    SingleMode {
        /// Parallel Scan segments.
        #[arg(long, default_value_t = 4, value_name = "N")]
        segments: u32,
        /// Counts what would go, and changes nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

pub fn post_id(field: &'static str, raw: &str) -> Result<PostId, AdminError> {
    PostId::parse_field(field, raw).map_err(|e| AdminError::Usage(e.to_string()))
}

pub fn user_id(raw: &str) -> Result<UserId, AdminError> {
    UserId::parse_field("--user", raw).map_err(|e| AdminError::Usage(e.to_string()))
}

/// Checks every id before anything is read or written.
pub(crate) fn check(cli: &Cli) -> Result<(), AdminError> {
    match &cli.command {
        Cmd::Audit { posts, all, .. } if posts.is_empty() && !all => Err(AdminError::Usage(
            "audit needs --post P (repeatable) or --all".into(),
        )),
        Cmd::Audit { posts, .. } => posts
            .iter()
            .try_for_each(|p| post_id("--post", p).map(|_| ())),
        Cmd::Recount { post, .. } => post
            .iter()
            .try_for_each(|p| post_id("--post", p).map(|_| ())),
        Cmd::ErasePost { post, .. } => post_id("--post", post).map(|_| ()),
        Cmd::EraseUser { user, dry_run } => {
            user_id(user)?;
            match (dry_run, &cli.erase_queue_url) {
                (false, None) => Err(AdminError::Usage(crate::account::QUEUE_NEEDED.into())),
                _ => Ok(()),
            }
        }
        Cmd::SetPolicy { post, author, .. } => {
            post_id("--post", post)?;
            UserId::parse_field("--author", author)
                .map_err(|e| AdminError::Usage(e.to_string()))?;
            match &cli.erase_requests_table {
                None => Err(AdminError::Usage(crate::moderate::TABLE_NEEDED.into())),
                Some(_) => Ok(()),
            }
        }
        Cmd::SuspendUser { user } | Cmd::RestoreUser { user } => {
            user_id(user)?;
            match &cli.erase_requests_table {
                None => Err(AdminError::Usage(crate::moderate::TABLE_NEEDED.into())),
                Some(_) => Ok(()),
            }
        }
        Cmd::Homes { serve, close } => {
            crate::homes::parse("--serve", serve)?;
            crate::homes::parse("--close", close)?;
            match &cli.erase_requests_table {
                None => Err(AdminError::Usage(crate::homes::TABLE_NEEDED.into())),
                Some(_) => Ok(()),
            }
        }
        Cmd::Backfill { segments, .. } if !(1..=1000).contains(segments) => {
            Err(AdminError::Usage("--segments must be 1 to 1000".into()))
        }
        Cmd::Backfill { .. } => Ok(()),
        Cmd::SingleMode { segments, .. } if !(1..=1000).contains(segments) => {
            Err(AdminError::Usage("--segments must be 1 to 1000".into()))
        }
        Cmd::SingleMode { .. } => Ok(()),
    }
}
