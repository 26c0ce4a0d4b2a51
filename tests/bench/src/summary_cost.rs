//! What a summary of 100 posts reads for its caller's own, under each `SummaryMine`, counted on
//! the API's real requests against the emulator (`reaction_cost`'s counter and rules): the
//! caller liked 10 of the 100 posts (and, with kinds, loved 5), all made since the feed's
//! oldest post. The counts' read is the same in both settings and is left to the feed model
//! (`cost::feed`): here the count cache is off, so each summary also reads the 100 counts.

use likes_aws::env::SummaryMine;
use likes_core::{Kinds, Mode, PostId, Reactions, UserId};
use likes_sim::apigw::ApiEvent;

use crate::reaction_cost::{stack, Units};

/// One setting's figures: read units per summary (mine + counts) and its requests.
pub struct Row {
    pub what: String,
    pub units: Units,
    pub ops: String,
}

const SUMMARIES: usize = 20;

pub async fn measure_all(endpoint: &str) -> Result<Vec<Row>, String> {
    let mut rows = Vec::new();
    for kinds in ["like", "like,love,laugh"] {
        let reactions = Reactions {
            kinds: Kinds::parse(kinds).map_err(|e| e.to_string())?,
            mode: Mode::Multi,
        };
        for mine in [SummaryMine::Strong, SummaryMine::Fast] {
            let (app, counter) = stack(endpoint, reactions.clone()).await?;
            let app = app.with_summary_mine(mine);
            let me = UserId::new_random();
            let posts: Vec<PostId> = (0..100).map(|_| PostId::new_random()).collect();
            let since = likes_core::time::now_ts();
            let mut writes: Vec<String> = posts[..10]
                .iter()
                .map(|p| format!("/posts/{p}/like"))
                .collect();
            if kinds != "like" {
                writes.extend(
                    posts[..5]
                        .iter()
                        .map(|p| format!("/posts/{p}/reactions/love")),
                );
            }
            for path in &writes {
                send(&app, "PUT", path, "", &me).await?;
            }
            let ids: Vec<String> = posts.iter().map(|p| p.to_string()).collect();
            let query = format!("post_ids={}&since={since}", ids.join(","));
            counter.take();
            for _ in 0..SUMMARIES {
                send(&app, "GET", "/likes/summary", &query, &me).await?;
            }
            let (units, ops) = counter.take();
            let n = SUMMARIES as f64;
            let ops: Vec<String> = ops
                .iter()
                .map(|(op, k)| format!("{:.0} {op}", *k as f64 / n))
                .collect();
            rows.push(Row {
                what: format!("{kinds}, SummaryMine={mine:?}"),
                units: Units {
                    write: units.write / n,
                    read: units.read / n,
                },
                ops: ops.join(" + "),
            });
        }
    }
    Ok(rows)
}

async fn send(
    app: &likes_api::App<likes_aws::DynamoLikes, likes_aws::DynamoCounts>,
    method: &str,
    path: &str,
    query: &str,
    me: &UserId,
) -> Result<(), String> {
    let event = ApiEvent::new(method, path).query(query).caller(me.as_str());
    let req =
        lambda_http::request::from_str(&event.to_json().to_string()).map_err(|e| e.to_string())?;
    let resp = app.handle(req).await;
    match resp.status().as_u16() {
        200 => Ok(()),
        s => Err(format!("{method} {path} answered {s}")),
    }
}
