//! `likes-local`            run the whole system locally (what `make dev` runs)
//! `likes-local token USER` print a signed dev token for USER (any user id), valid one hour

use likes_local::{dev, Settings};

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .compact()
        .with_target(false)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let settings = match Settings::from_env() {
        Ok(s) => s,
        Err(e) => fail(&e.to_string()),
    };
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["dev"] => {
            if let Err(e) = dev(settings).await {
                fail(&e.to_string());
            }
        }
        ["token", user] => {
            if let Err(e) = likes_core::UserId::parse_field("USER", user) {
                fail(&e.to_string());
            }
            match settings.auth.issue(user, 3600) {
                Ok(t) => println!("{t}"),
                Err(e) => fail(&e.to_string()),
            }
        }
        _ => fail("usage: likes-local [dev] | likes-local token <user-id>"),
    }
}

fn fail(message: &str) -> ! {
    eprintln!("likes-local: {message}");
    std::process::exit(1)
}
