//! Likers by opaque id (`LIKES_LIKER_IDS=opaque`, issue 25): "who liked P" shows each liker
//! as a keyed hash of its `sub`, the same on every page, and no page or cursor carries a raw
//! `sub`; a cursor from a raw deployment, or a forged one, is refused.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use likes_api::liker_ids::LikerIds;
use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::UserId;
use likes_harness::{call, call_as, like_path, ApiEvent};

const SECRET: &[u8] = b"a-test-secret-of-thirty-two-bytes!!";

#[tokio::test]
async fn likers_are_listed_by_opaque_ids_and_no_cursor_carries_a_sub() {
    let mut app = likes_api::App::new(MemoryLikes::default(), MemoryCounts::default());
    let subs: Vec<String> = (0..7).map(|i| format!("google-oauth2|10000{i}")).collect();
    for sub in &subs {
        let (status, body, _) = call_as(&app, "PUT", &like_path(&"p1"), sub).await;
        assert_eq!(status, 200, "{body}");
    }
    // A cursor of the listing by raw subs, kept to be offered to the opaque one below.
    let event = ApiEvent::new("GET", "/posts/p1/likes")
        .query("limit=3")
        .caller("auth0|viewer");
    let (_, page, _) = call(&app, event).await;
    let raw_cursor = page["next_cursor"]
        .as_str()
        .expect("a raw cursor")
        .to_owned();
    app.liker_ids = LikerIds::opaque(SECRET).expect("a key");
    let opaque = &app;
    let ids = LikerIds::opaque(SECRET).expect("a key");
    let want: std::collections::BTreeSet<String> = subs
        .iter()
        .map(|s| ids.show(&UserId::parse(s).unwrap()))
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor: Option<String> = None;
    for page in 0.. {
        assert!(page < 10, "paging does not end");
        let query = match &cursor {
            Some(c) => format!("limit=3&cursor={c}"),
            None => "limit=3".to_owned(),
        };
        let event = ApiEvent::new("GET", "/posts/p1/likes")
            .query(&query)
            .caller("auth0|viewer");
        let (status, body, _) = call(opaque, event).await;
        assert_eq!(status, 200, "{body}");
        let text = body.to_string();
        assert!(!text.contains("google-oauth2"), "a raw sub in {text}");
        for item in body["items"].as_array().expect("items") {
            assert!(seen.insert(item["user_id"].as_str().unwrap().to_owned()));
        }
        match body["next_cursor"].as_str() {
            Some(c) => {
                let bytes = URL_SAFE_NO_PAD.decode(c).expect("base64url");
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("google-oauth2"),
                    "the cursor carries a raw sub"
                );
                cursor = Some(c.to_owned());
            }
            None => break,
        }
    }
    assert_eq!(seen, want, "every liker once, by its opaque id");
    // A cursor of the raw listing, or a forged one, is a 400 here.
    for c in [raw_cursor.as_str(), "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"] {
        let event = ApiEvent::new("GET", "/posts/p1/likes")
            .query(&format!("limit=3&cursor={c}"))
            .caller("auth0|viewer");
        let (status, body, _) = call(opaque, event).await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (400, Some("invalid_cursor"))
        );
    }
}
