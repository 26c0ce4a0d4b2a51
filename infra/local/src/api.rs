//! The API as `make dev` runs it: the function's app on the emulator, its stores signed as
//! its role, with the settings `make dev` reads (docs/local.md), as `likes-api`'s `main` builds
//! it on Lambda.

use std::sync::Arc;

use likes_api::liker_ids::LikerIds;
use likes_aws::env::LikerIdsSetting;
use likes_aws::{DynamoCounts, DynamoHomes, DynamoLikes};
use likes_core::erase_job::{EraseQueue, ErasureRequests};

use crate::error::LocalError;
use crate::settings::Settings;

/// The API's app, its clients `api_dynamo` (the API's role).
pub async fn app(
    settings: &Settings,
    api_dynamo: aws_sdk_dynamodb::Client,
    jobs: Arc<dyn EraseQueue>,
    erasures: Arc<dyn ErasureRequests>,
) -> Result<likes_api::App<DynamoLikes, DynamoCounts>, LocalError> {
    let liker_ids = match &settings.liker_ids {
        LikerIdsSetting::Raw => LikerIds::Raw,
        LikerIdsSetting::Opaque { key } => LikerIds::opaque(key.as_bytes())
            .ok_or_else(|| LocalError::Setup("LIKES_LIKER_ID_KEY is not usable".into()))?,
    };
    let mut app = likes_api::App::with_cache(
        DynamoLikes::new(api_dynamo.clone(), &settings.likes_table)
            .with_markers(Some(&settings.markers_table)),
        DynamoCounts::new(api_dynamo.clone(), &settings.counts_table),
        likes_api::CountCache::new(settings.tuning.count_cache)
            .with_feed_age(settings.tuning.summary_counts),
    )
    .with_summary_mine(settings.tuning.summary_mine)
    .with_erase_queue(jobs)
    .with_erasure_requests(erasures)
    .with_suspensions(Arc::new(likes_aws::DynamoSuspensions::new(
        api_dynamo.clone(),
        &settings.erase_requests_table,
    )))
    .with_policies(
        Some(Arc::new(likes_aws::DynamoPolicies::new(
            api_dynamo.clone(),
            &settings.erase_requests_table,
        ))),
        settings.tuning.policy_defaults,
    )
    .with_blocks(Arc::new(likes_aws::DynamoBlocks::new(
        api_dynamo.clone(),
        &settings.erase_requests_table,
    )))
    .with_limits(settings.limits)
    .with_reactions(settings.reactions.clone())
    .with_liker_ids(liker_ids);
    if let Some(url) = &settings.shared_counts_url {
        let shared = likes_api::shared_counts::valkey::Valkey::open(url)
            .map_err(|e| LocalError::Setup(format!("LIKES_SHARED_COUNTS_URL: {e}")))?;
        if let Err(e) = shared.connect().await {
            tracing::warn!(error = %e, "the shared count tier at {url} cannot be reached; summaries read DynamoDB");
        }
        app = app.with_shared_counts(Arc::new(shared));
    }
    // Two regions' home gate (`LIKES_HOME_CLAIM`): the homes opened with `likes-admin homes`.
    if let Some(claim) = &settings.home_claim {
        let homes = DynamoHomes::new(api_dynamo, &settings.erase_requests_table);
        app = app.with_homes(claim, Arc::new(homes));
    }
    Ok(app)
}

/// `LIKES_AUTH=jwt`: the function's own verifier, configured as on Lambda (docs/auth.md), its
/// keys fetched now so that a wrong issuer is reported at start, not on the first request.
pub async fn function_auth() -> Result<likes_api::Auth, LocalError> {
    let verifier = likes_auth::Verifier::from_env()
        .map_err(|e| LocalError::Setup(format!("LIKES_AUTH=jwt: {e}")))?;
    verifier.prefetch().await.map_err(|e| {
        LocalError::Setup(format!(
            "LIKES_AUTH=jwt: the issuer's keys: {e} ({})",
            std::error::Error::source(&e).map_or(String::new(), ToString::to_string)
        ))
    })?;
    tracing::info!(
        "no authorizer: the API verifies bearer tokens itself (LIKES_AUTH=jwt), issuer {:?}",
        std::env::var("LIKES_JWT_ISSUER").unwrap_or_default()
    );
    Ok(likes_api::Auth::Function(Box::new(verifier)))
}
