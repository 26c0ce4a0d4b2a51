//! Every setting a function reads from its environment, read once, here. The template sets
//! them (`template.yaml`, each function's `Environment`); `make dev` reads the tuning the same
//! way. A function's `main` calls [`FunctionEnv::from_env`] and hands typed values on.

use std::time::Duration;

use likes_core::{Kinds, Mode, Reactions};

mod limits;
pub use limits::{CallerLimits, Rate};

/// A setting that is missing or not what it must be.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("environment variable {0} must be set")]
    Missing(&'static str),
    #[error("environment variable {name}={value:?} must be {what}")]
    Invalid {
        name: &'static str,
        value: String,
        what: &'static str,
    },
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn number(name: &'static str) -> Result<Option<u64>, EnvError> {
    var(name)
        .map(|value| {
            value.parse().map_err(|_| EnvError::Invalid {
                name,
                value,
                what: "a whole number",
            })
        })
        .transpose()
}

/// A setting that names one of a few choices, if set.
fn choice<T: std::str::FromStr>(
    name: &'static str,
    what: &'static str,
) -> Result<Option<T>, EnvError> {
    var(name)
        .map(|value| {
            value
                .parse()
                .map_err(|_| EnvError::Invalid { name, value, what })
        })
        .transpose()
}

/// The tables every function works on.
#[derive(Debug, Clone)]
pub struct TableNames {
    /// `LIKES_TABLE_NAME`.
    pub likes: String,
    /// `COUNTS_TABLE_NAME`.
    pub counts: String,
    /// `MARKERS_TABLE_NAME`: named requests' markers (the API's only); unset, they go into
    /// the like's partition.
    pub markers: Option<String>,
}

/// How a feed summary reads what the caller holds ("liked by me", "my reactions"): the
/// template's `SummaryMine`, `LIKES_SUMMARY_MINE`. docs/api.md states each one's promise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SummaryMine {
    /// `strong` (the default): a strongly consistent read of each post's keys.
    #[default]
    Strong,
    /// `fast`: with the request's `since`, one query of the caller's own index (eventually
    /// consistent); without it, or past the query's cap, as `strong`.
    Fast,
}

impl std::str::FromStr for SummaryMine {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "strong" => Ok(Self::Strong),
            "fast" => Ok(Self::Fast),
            _ => Err(()),
        }
    }
}

/// How the API and the aggregator are tuned; the same variables on Lambda and in `make dev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// `LIKES_COUNT_CACHE_MS` (default 1000; 0 turns the API's count cache off).
    pub count_cache: Duration,
    /// `LIKES_SUMMARY_COUNTS_MS` (default: the count cache's; at most 60000): how old a feed
    /// summary's counts may be.
    pub summary_counts: Duration,
    /// `LIKES_SUMMARY_MINE` (default `strong`).
    pub summary_mine: SummaryMine,
    /// `LIKES_DEFAULT_COUNTS`, `LIKES_DEFAULT_LIKERS` (the template's `DefaultCounts`,
    /// `DefaultLikers`; default `public`): who sees the counts and likers of a post without a
    /// policy of its own.
    pub policy_defaults: likes_core::policy::Defaults,
    /// `LIKES_AGGREGATOR_CONCURRENCY` (default 128): posts the aggregator writes at once.
    pub aggregator_concurrency: usize,
    /// `LIKES_AGGREGATOR_POST_BUDGET_MS` (default 9000): time a post needs at worst; none
    /// starts with less left before the invocation's deadline.
    pub aggregator_post_budget: Duration,
}

impl Default for Tuning {
    fn default() -> Self {
        Self {
            count_cache: Duration::from_millis(1000),
            summary_counts: Duration::from_millis(1000),
            summary_mine: SummaryMine::Strong,
            policy_defaults: likes_core::policy::Defaults::default(),
            aggregator_concurrency: 128,
            aggregator_post_budget: Duration::from_secs(9),
        }
    }
}

impl Tuning {
    pub fn from_env() -> Result<Self, EnvError> {
        let d = Self::default();
        let count_cache = number("LIKES_COUNT_CACHE_MS")?
            .map(Duration::from_millis)
            .unwrap_or(d.count_cache);
        Ok(Self {
            count_cache,
            summary_counts: number("LIKES_SUMMARY_COUNTS_MS")?
                .map(Duration::from_millis)
                .unwrap_or(count_cache),
            summary_mine: choice("LIKES_SUMMARY_MINE", "strong or fast")?.unwrap_or(d.summary_mine),
            policy_defaults: likes_core::policy::Defaults {
                counts: choice("LIKES_DEFAULT_COUNTS", "public or author")?
                    .unwrap_or(d.policy_defaults.counts),
                likers: choice("LIKES_DEFAULT_LIKERS", "public or author")?
                    .unwrap_or(d.policy_defaults.likers),
            },
            aggregator_concurrency: number("LIKES_AGGREGATOR_CONCURRENCY")?
                .map(|n| n.max(1) as usize)
                .unwrap_or(d.aggregator_concurrency),
            aggregator_post_budget: number("LIKES_AGGREGATOR_POST_BUDGET_MS")?
                .map(Duration::from_millis)
                .unwrap_or(d.aggregator_post_budget),
        })
    }
}

/// Which events the events function publishes (`LIKES_PUBLISHED_EVENTS`, the template's
/// `PublishedEvents`). EventBridge bills per event, so this is a deployment's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// `none`: nothing; the function reads and writes nothing either.
    None,
    /// `notifications` (the default): notifications, their retractions, and milestones.
    Notifications,
    /// `all`: those, and every like and unlike.
    All,
}

impl std::str::FromStr for Published {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "none" => Ok(Self::None),
            "notifications" => Ok(Self::Notifications),
            "all" => Ok(Self::All),
            _ => Err(()),
        }
    }
}

/// How the events function decides and publishes; the same variables on Lambda and in
/// `make dev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventRules {
    /// `LIKES_PUBLISHED_EVENTS` (default `notifications`).
    pub published: Published,
    /// `LIKES_SUPPRESSION_WINDOW_SECS` (default 86400): a (user, post) notifies at most once
    /// within this long of its notifying like.
    pub window: Duration,
    /// `LIKES_EVENTS_COUNT_WAIT_MS` (default 3000): how long a batch waits for the aggregator
    /// to count its likes before it leaves a post's milestones to its next like.
    pub count_wait: Duration,
    /// `LIKES_EVENTS_CONCURRENCY` (default 16): `PutEvents` calls in flight at once.
    pub concurrency: usize,
}

impl Default for EventRules {
    fn default() -> Self {
        Self {
            published: Published::Notifications,
            window: Duration::from_secs(86_400),
            count_wait: Duration::from_millis(3000),
            concurrency: 16,
        }
    }
}

impl EventRules {
    pub fn from_env() -> Result<Self, EnvError> {
        let d = Self::default();
        let published = match var("LIKES_PUBLISHED_EVENTS") {
            None => d.published,
            Some(value) => value.parse().map_err(|_| EnvError::Invalid {
                name: "LIKES_PUBLISHED_EVENTS",
                value,
                what: "none, notifications or all",
            })?,
        };
        Ok(Self {
            published,
            window: number("LIKES_SUPPRESSION_WINDOW_SECS")?
                .map(|s| Duration::from_secs(s.max(1)))
                .unwrap_or(d.window),
            count_wait: number("LIKES_EVENTS_COUNT_WAIT_MS")?
                .map(Duration::from_millis)
                .unwrap_or(d.count_wait),
            concurrency: number("LIKES_EVENTS_CONCURRENCY")?
                .map(|n| n.max(1) as usize)
                .unwrap_or(d.concurrency),
        })
    }
}

/// What the events function reads besides [`FunctionEnv`].
#[derive(Debug, Clone)]
pub struct EventsEnv {
    /// `EVENT_BUS_NAME`: the bus it publishes to (the template's `LikeEventBus`).
    pub bus_name: String,
    /// `EVENT_STATE_TABLE_NAME`: its suppression and milestone state.
    pub state_table: String,
    pub rules: EventRules,
}

impl EventsEnv {
    pub fn from_env() -> Result<Self, EnvError> {
        Ok(Self {
            bus_name: var("EVENT_BUS_NAME").ok_or(EnvError::Missing("EVENT_BUS_NAME"))?,
            state_table: var("EVENT_STATE_TABLE_NAME")
                .ok_or(EnvError::Missing("EVENT_STATE_TABLE_NAME"))?,
            rules: EventRules::from_env()?,
        })
    }
}

/// The longest a token is accepted after it is issued, `LIKES_MAX_TOKEN_LIFETIME_SECS` (the
/// template's `MaxTokenLifetime`): by default an hour, as Cognito's and Okta's access tokens
/// live, plus the minute of clock skew the function URL front door allows
/// (`likes_auth::LEEWAY_SECS`). A deleted account's erase sweeps once more this long after the
/// deletion.
pub fn max_token_lifetime_from_env() -> Result<Duration, EnvError> {
    Ok(Duration::from_secs(
        number("LIKES_MAX_TOKEN_LIFETIME_SECS")?.unwrap_or(DEFAULT_MAX_TOKEN_LIFETIME_SECS),
    ))
}

pub const DEFAULT_MAX_TOKEN_LIFETIME_SECS: u64 = 3660;

/// What a deployed function reads from its environment.
#[derive(Debug, Clone)]
pub struct FunctionEnv {
    pub tables: TableNames,
    /// `ERASE_QUEUE_URL`: where `DELETE /users/me/likes` sends its jobs (and the erase worker
    /// sends a job it continues). Unset: the route answers 501.
    pub erase_queue_url: Option<String>,
    /// `ERASE_FAILURE_QUEUE_URL`: where the erase worker sets aside a malformed product event
    /// (the erase queue's dead-letter queue). Unset: the redrive moves it there in time.
    pub erase_failure_queue_url: Option<String>,
    /// `ERASE_REQUESTS_TABLE_NAME`: the pending erasures, one per user (the API records a
    /// request there before queueing a job; the worker clears it). Unset: every request
    /// queues a job.
    pub erase_requests_table: Option<String>,
    /// `LIKES_SHARED_COUNTS_URL` (`redis://` or `rediss://`; the template's Valkey cache when
    /// `SharedCountCacheSubnetIds` is set): the count tier every environment shares. Unset or
    /// empty: each environment's own count cache only.
    pub shared_counts_url: Option<String>,
    /// `LIKES_HOME_CLAIM` (the template's `HomeClaim`): the token claim naming the caller's
    /// home region; set, the API serves only the homes opened here (docs/regions.md).
    pub home_claim: Option<String>,
    pub tuning: Tuning,
    /// `LIKES_XRAY=1` (the template's `Tracing=Active`): report each AWS call to X-Ray.
    pub xray: bool,
    /// `AWS_LAMBDA_FUNCTION_NAME`, set by Lambda: the dimension of the function's metrics.
    pub function_name: String,
    /// Who verifies the caller's token (`LIKES_AUTH`).
    pub auth: AuthBy,
    /// What one caller may ask of the API (`LIKES_CALLER_LIMITS`, `LIKES_LIMIT_*`).
    pub limits: CallerLimits,
    /// How "who liked" names the likers (`LIKES_LIKER_IDS`, `LIKES_LIKER_ID_KEY`).
    pub liker_ids: LikerIdsSetting,
    /// The reaction kinds and mode (`LIKES_REACTION_KINDS`, `LIKES_REACTION_MODE`).
    pub reactions: Reactions,
    /// [`max_token_lifetime_from_env`].
    pub max_token_lifetime: Duration,
}

/// `LIKES_REACTION_KINDS` (comma-separated, `like` always among them; default `like`) and
/// `LIKES_REACTION_MODE` (`multi`, the default, or `single`): docs/reactions.md.
pub fn reactions_from_env() -> Result<Reactions, EnvError> {
    let kinds = var("LIKES_REACTION_KINDS").unwrap_or_default();
    let mode = var("LIKES_REACTION_MODE").unwrap_or_default();
    Ok(Reactions {
        kinds: Kinds::parse(&kinds).map_err(|_| EnvError::Invalid {
            name: "LIKES_REACTION_KINDS",
            value: kinds.clone(),
            what: "at most 10 kinds separated by commas, each 1 to 32 characters of a-z 0-9 _ + -",
        })?,
        mode: Mode::parse(&mode).map_err(|_| EnvError::Invalid {
            name: "LIKES_REACTION_MODE",
            value: mode.clone(),
            what: "multi or single",
        })?,
    })
}

/// How the likers listing names users: `LIKES_LIKER_IDS=raw` (the default: their `sub`s) or
/// `opaque` (a keyed hash per deployment, from `LIKES_LIKER_ID_KEY`, 32 characters or more).
#[derive(Clone, PartialEq, Eq)]
pub enum LikerIdsSetting {
    Raw,
    Opaque { key: String },
}

impl std::fmt::Debug for LikerIdsSetting {
    // The key is a secret: never in a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Raw => f.write_str("Raw"),
            Self::Opaque { .. } => f.write_str("Opaque { key: <hidden> }"),
        }
    }
}

/// The shortest `LIKES_LIKER_ID_KEY` accepted.
pub const LIKER_ID_KEY_MIN: usize = 32;

impl LikerIdsSetting {
    pub fn from_env() -> Result<Self, EnvError> {
        match var("LIKES_LIKER_IDS").as_deref() {
            None | Some("raw") => Ok(Self::Raw),
            Some("opaque") => match var("LIKES_LIKER_ID_KEY") {
                Some(key) if key.len() >= LIKER_ID_KEY_MIN => Ok(Self::Opaque { key }),
                Some(_) => Err(EnvError::Invalid {
                    name: "LIKES_LIKER_ID_KEY",
                    value: "<hidden>".to_owned(),
                    what: "at least 32 characters (a random secret)",
                }),
                None => Err(EnvError::Missing("LIKES_LIKER_ID_KEY")),
            },
            Some(other) => Err(EnvError::Invalid {
                name: "LIKES_LIKER_IDS",
                value: other.to_owned(),
                what: "raw or opaque",
            }),
        }
    }
}

/// Who verifies the bearer token: `LIKES_AUTH=authorizer` (the default: API Gateway's JWT
/// authorizer did, and the function reads its claims) or `jwt` (the function itself, behind a
/// function URL, with the `LIKES_JWT_*` settings `likes_auth::Config` reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthBy {
    Authorizer,
    Function,
}

impl AuthBy {
    fn from_env() -> Result<Self, EnvError> {
        match var("LIKES_AUTH").as_deref() {
            None | Some("authorizer") => Ok(Self::Authorizer),
            Some("jwt") => Ok(Self::Function),
            Some(other) => Err(EnvError::Invalid {
                name: "LIKES_AUTH",
                value: other.to_owned(),
                what: "authorizer or jwt",
            }),
        }
    }
}

impl FunctionEnv {
    /// Reads every setting; `default_name` names the function where Lambda did not.
    pub fn from_env(default_name: &str) -> Result<Self, EnvError> {
        let required = |name: &'static str| var(name).ok_or(EnvError::Missing(name));
        Ok(Self {
            tables: TableNames {
                likes: required("LIKES_TABLE_NAME")?,
                counts: required("COUNTS_TABLE_NAME")?,
                markers: var("MARKERS_TABLE_NAME"),
            },
            erase_queue_url: var("ERASE_QUEUE_URL"),
            erase_failure_queue_url: var("ERASE_FAILURE_QUEUE_URL"),
            erase_requests_table: var("ERASE_REQUESTS_TABLE_NAME"),
            shared_counts_url: var("LIKES_SHARED_COUNTS_URL"),
            home_claim: var("LIKES_HOME_CLAIM"),
            tuning: Tuning::from_env()?,
            xray: var("LIKES_XRAY").as_deref() == Some("1"),
            function_name: var("AWS_LAMBDA_FUNCTION_NAME")
                .unwrap_or_else(|| default_name.to_owned()),
            auth: AuthBy::from_env()?,
            limits: CallerLimits::from_env()?,
            liker_ids: LikerIdsSetting::from_env()?,
            reactions: reactions_from_env()?,
            max_token_lifetime: max_token_lifetime_from_env()?,
        })
    }
}
