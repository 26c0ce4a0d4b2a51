use std::convert::Infallible;
use std::sync::Arc;

use lambda_http::{service_fn, Request};
use likes_api::App;
use likes_core::config::{dynamo_client, Config};
use likes_core::{DynamoCounts, DynamoLikes};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    likes_core::config::init_lambda_tracing();
    let config = Config::from_env()?;
    // One client per execution environment: its connection pool outlives invocations.
    let client = dynamo_client().await;
    let app = Arc::new(App::new(
        DynamoLikes::new(client.clone(), config.likes_table),
        DynamoCounts::new(client, config.counts_table),
    ));
    lambda_http::run(service_fn(move |req: Request| {
        let app = Arc::clone(&app);
        async move { Ok::<_, Infallible>(app.handle(req).await) }
    }))
    .await
}
