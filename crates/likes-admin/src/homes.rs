//! `homes`: which users' homes this region serves, in two regions (docs/regions.md): shown,
//! opened (`--serve`) or closed (`--close`), then read back strongly: the report is what the
//! table holds, never what was asked.

use likes_aws::DynamoHomes;
use likes_core::homes::{Home, Homes, HOMES_TTL};
use serde_json::json;

use crate::report::Report;
use crate::AdminError;

pub const TABLE_NEEDED: &str = "homes needs --erase-requests-table (the stack's EraseRequestsTableName output): the homes a region serves are recorded there";

/// The labels given, checked before anything is written.
pub fn parse(flag: &str, labels: &[String]) -> Result<Vec<Home>, AdminError> {
    labels
        .iter()
        .map(|l| Home::parse(l).map_err(|e| AdminError::Usage(format!("{flag}: {e}"))))
        .collect()
}

pub async fn run(
    state: Option<&DynamoHomes>,
    serve: &[Home],
    close: &[Home],
) -> Result<Report, AdminError> {
    let state = state.ok_or_else(|| AdminError::Usage(TABLE_NEEDED.into()))?;
    if let Some(both) = serve.iter().find(|h| close.contains(h)) {
        return Err(AdminError::Usage(format!(
            "{both} is both served and closed: give it once"
        )));
    }
    for home in serve {
        state.set(home, true).await?;
    }
    for home in close {
        state.set(home, false).await?;
    }
    let served = state.served().await?;
    let missing: Vec<&Home> = serve.iter().filter(|h| !served.contains(*h)).collect();
    let stayed: Vec<&Home> = close.iter().filter(|h| served.contains(*h)).collect();
    if !missing.is_empty() || !stayed.is_empty() {
        return Err(AdminError::Incomplete(format!(
            "read back, the region serves {served:?}: not opened {missing:?}, not closed {stayed:?} (another operator at work?). Run `likes-admin homes` to see it, and again with what is wanted"
        )));
    }
    let list: Vec<&str> = served.iter().map(Home::as_str).collect();
    let mut human = if list.is_empty() {
        "this region serves no home: every caller is refused (421 wrong_region)".to_owned()
    } else {
        format!("this region serves the homes {}", list.join(", "))
    };
    if !serve.is_empty() || !close.is_empty() {
        human += &format!(
            "; every API environment follows within {} s",
            HOMES_TTL.as_secs()
        );
    }
    if !close.is_empty() {
        human += ". Before opening a closed home in the other region, wait for what was written here to replicate (docs/regions.md#failover-and-one-request-one-effect)";
    }
    Ok(Report::done(human, json!({ "served": list })))
}
