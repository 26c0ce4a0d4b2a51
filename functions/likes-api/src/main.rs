// The handler future nests the SDK's deep futures (a transaction inside a like inside the
// runtime loop); computing its layout needs more than the default query depth.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::request::LambdaRequest;
use likes_api::{App, CountCache};
use likes_core::config::{
    dynamo_client_for, init_lambda_tracing, sdk_loader, sqs_client_for, Config,
};
use likes_core::erase_queue::SqsEraseQueue;
use likes_core::{DynamoCounts, DynamoLikes};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    init_lambda_tracing();
    let config = Config::from_env()?;
    // One client per execution environment: its connection pool outlives invocations.
    let sdk = sdk_loader().load().await;
    let client = dynamo_client_for(&sdk);
    let mut app = App::with_cache(
        DynamoLikes::new(client.clone(), config.likes_table),
        DynamoCounts::new(client, config.counts_table),
        CountCache::from_env(),
    );
    if let Some(url) = std::env::var("ERASE_QUEUE_URL")
        .ok()
        .filter(|u| !u.is_empty())
    {
        let queue = SqsEraseQueue::new(sqs_client_for(&sdk), url);
        app = app.with_erase_queue(Arc::new(queue));
    }
    let app = Arc::new(app);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<LambdaRequest>| {
        let app = Arc::clone(&app);
        async move {
            Ok::<_, std::convert::Infallible>(
                likes_api::lambda::invoke(&app, event.payload, event.context).await,
            )
        }
    }))
    .await
}
