// The handler future nests the SDK's deep futures (a transaction inside a like inside the
// runtime loop); computing its layout needs more than the default query depth.
#![recursion_limit = "256"]

use std::sync::Arc;
use std::time::Duration;

use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::request::LambdaRequest;
use likes_api::liker_ids::LikerIds;
use likes_api::shared_counts::valkey::Valkey;
use likes_api::{App, Auth, CountCache};
use likes_aws::env::{AuthBy, FunctionEnv, LikerIdsSetting};
use likes_aws::sqs_erase_queue::SqsEraseQueue;
use likes_aws::{
    lambda, sdk, DynamoBlocks, DynamoCounts, DynamoErasureRequests, DynamoHomes, DynamoLikes,
    DynamoPolicies, DynamoSuspensions,
};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    let env = FunctionEnv::from_env("likes-api")?;
    lambda::init_logs("likes-api", &env.function_name);
    // One line per request: its access log entry and its metrics.
    likes_api::metrics::write_request_lines(true);
    // One client per execution environment: its connection pool outlives invocations.
    let conf = sdk::loader().load().await;
    let client = sdk::dynamo(&conf, env.xray);
    let mut app = App::with_cache(
        DynamoLikes::new(client.clone(), env.tables.likes).with_markers(env.tables.markers),
        DynamoCounts::new(client.clone(), env.tables.counts),
        CountCache::new(env.tuning.count_cache).with_feed_age(env.tuning.summary_counts),
    );
    app.function_name = env.function_name;
    app = app
        .with_limits(env.limits)
        .with_reactions(env.reactions)
        .with_summary_mine(env.tuning.summary_mine);
    if let LikerIdsSetting::Opaque { key } = &env.liker_ids {
        let ids = LikerIds::opaque(key.as_bytes()).ok_or("LIKES_LIKER_ID_KEY is not usable")?;
        app = app.with_liker_ids(ids);
    }
    if env.auth == AuthBy::Function {
        // A function URL has no authorizer: this function verifies the bearer token. Its
        // settings are checked now, so that a misconfigured function fails at start.
        let verifier = likes_auth::Verifier::from_env()?;
        // The issuer's keys now, during init, not on the first request (a TLS handshake and a
        // round trip). If the issuer cannot be reached, requests fetch them (503 until then).
        if let Err(e) = verifier.prefetch().await {
            tracing::warn!(error = %e, "the issuer's keys could not be fetched at start-up");
        }
        app = app.with_auth(Auth::Function(Box::new(verifier)));
    }
    if let Some(url) = env.erase_queue_url {
        let queue = SqsEraseQueue::new(sdk::sqs(&conf, env.xray), url);
        app = app.with_erase_queue(Arc::new(queue));
    }
    if let Some(url) = &env.shared_counts_url {
        // The tier's TLS (rustls) takes the process's provider: the one the SDK already uses,
        // named, so that no other crate's provider can make it ambiguous (a panic, not an error).
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let shared = Valkey::open(url)?;
        // Connected now, during init, for at most a second; if it cannot be reached, summaries
        // read DynamoDB until it can.
        let connected = tokio::time::timeout(Duration::from_secs(1), shared.connect()).await;
        if !matches!(connected, Ok(Ok(()))) {
            tracing::warn!("the shared count tier could not be reached at start-up");
        }
        app = app.with_shared_counts(Arc::new(shared));
    }
    app = app.with_policies(None, env.tuning.policy_defaults);
    if let Some(table) = env.erase_requests_table {
        // The users' moderation state shares the pending-erasures table.
        app = app.with_suspensions(Arc::new(DynamoSuspensions::new(client.clone(), &table)));
        // So do the posts' policies.
        let policies = Arc::new(DynamoPolicies::new(client.clone(), &table));
        app = app.with_policies(Some(policies), env.tuning.policy_defaults);
        app = app.with_blocks(Arc::new(DynamoBlocks::new(client.clone(), &table)));
        // In two regions, so do the homes this region serves.
        if let Some(claim) = &env.home_claim {
            app = app.with_homes(claim, Arc::new(DynamoHomes::new(client.clone(), &table)));
        }
        app = app.with_erasure_requests(Arc::new(DynamoErasureRequests::new(client, table)));
    }
    let app = Arc::new(app);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<LambdaRequest>| {
        let app = Arc::clone(&app);
        likes_aws::logs::begin_invocation(&event.context.request_id);
        async move {
            Ok::<_, std::convert::Infallible>(
                likes_api::lambda::invoke(&app, event.payload, event.context).await,
            )
        }
    }))
    .await
}
