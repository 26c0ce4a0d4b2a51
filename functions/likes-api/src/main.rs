// The handler future nests the SDK's deep futures (a transaction inside a like inside the
// runtime loop); computing its layout needs more than the default query depth.
#![recursion_limit = "256"]

use std::sync::Arc;

use lambda_http::lambda_runtime::{self, service_fn, LambdaEvent};
use lambda_http::request::LambdaRequest;
use likes_api::{App, CountCache};
use likes_core::config::{dynamo_client, init_lambda_tracing, Config};
use likes_core::{DynamoCounts, DynamoLikes};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    init_lambda_tracing();
    let config = Config::from_env()?;
    // One client per execution environment: its connection pool outlives invocations.
    let client = dynamo_client().await;
    let app = Arc::new(App::with_cache(
        DynamoLikes::new(client.clone(), config.likes_table),
        DynamoCounts::new(client, config.counts_table),
        CountCache::from_env(),
    ));
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
