//! The home gate, in two regions (docs/regions.md#where-writes-go-a-home-region-per-user), on
//! the emulator behind the lab, each side signed as its role: a region serves no home until an
//! operator opens one (`likes-admin homes`, which reports what it read back); the API refuses
//! a caller of any other home, or with no home claim, with `421 wrong_region` and writes
//! nothing; a new environment follows an opening at once, a running one within `HOMES_TTL`;
//! a closed home is refused again.

use std::sync::Arc;
use std::time::{Duration, Instant};

use likes_admin::AdminError;
use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::DynamoHomes;
use likes_core::homes::{Home, HOMES_TTL};
use likes_core::{LikesStore, PostId, UserId};
use likes_harness::lab::roles;
use likes_harness::{call, like_path, ApiEvent, Tables};
use serde_json::{json, Map, Value};

const CLAIM: &str = "custom:home";

fn as_caller(method: &str, path: &str, sub: &str, home: Option<&str>) -> ApiEvent {
    let mut claims = Map::new();
    claims.insert("sub".into(), sub.into());
    claims.insert("iss".into(), "https://issuer.example".into());
    if let Some(home) = home {
        claims.insert(CLAIM.into(), home.into());
    }
    ApiEvent::new(method, path).claims(claims)
}

fn served(doc: &Value) -> &Value {
    &doc["served"]
}

#[tokio::test]
async fn a_region_serves_only_the_homes_opened_there() {
    let t = Tables::new().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&t.client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    let operator = DynamoHomes::new(t.as_role(roles::OPERATOR).client, &table);
    let environment = || {
        let api = DynamoHomes::new(t.as_role(roles::API).client, &table);
        t.app().with_homes(CLAIM, Arc::new(api))
    };
    let (eu, us) = ([Home::parse("eu").unwrap()], [Home::parse("us").unwrap()]);
    let post = PostId::new_random();
    let (anna, bo) = ("auth0|anna-eu", "auth0|bo-us");

    // Nothing served yet: refused, nothing written.
    let running = environment();
    let shown = likes_admin::homes::run(Some(&operator), &[], &[])
        .await
        .unwrap();
    assert_eq!(served(&shown.doc), &json!([]), "{}", shown.human);
    let (s, b, _) = call(
        &running,
        as_caller("PUT", &like_path(&post), anna, Some("eu")),
    )
    .await;
    assert_eq!(
        (s, &b["error"]["code"]),
        (421, &json!("wrong_region")),
        "{b}"
    );
    let me = UserId::parse(anna).unwrap();
    assert_eq!(t.likes().liked_at(&post, &me).await.unwrap(), None);

    // Opened (twice is once): a new environment serves eu at once, and only eu.
    for _ in 0..2 {
        let opened = likes_admin::homes::run(Some(&operator), &eu, &[])
            .await
            .unwrap();
        assert_eq!(served(&opened.doc), &json!(["eu"]), "{}", opened.human);
    }
    let fresh = environment();
    let (s, b, _) = call(
        &fresh,
        as_caller("PUT", &like_path(&post), anna, Some("eu")),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    assert!(t.likes().liked_at(&post, &me).await.unwrap().is_some());
    for (who, home) in [(bo, Some("us")), (bo, None)] {
        let (s, b, _) = call(&fresh, as_caller("GET", &like_path(&post), who, home)).await;
        assert_eq!(
            (s, &b["error"]["code"]),
            (421, &json!("wrong_region")),
            "{home:?}: {b}"
        );
    }

    // The running environment follows within the gate's time.
    let deadline = Instant::now() + 2 * HOMES_TTL;
    loop {
        let (s, b, _) = call(
            &running,
            as_caller("GET", &like_path(&post), anna, Some("eu")),
        )
        .await;
        if s == 200 {
            assert_eq!(b["liked"], json!(true), "{b}");
            break;
        }
        assert_eq!(s, 421, "{b}");
        assert!(
            Instant::now() < deadline,
            "still refused {HOMES_TTL:?} after the opening"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Closed, another opened: eu refused again, us served.
    let moved = likes_admin::homes::run(Some(&operator), &us, &eu)
        .await
        .unwrap();
    assert_eq!(served(&moved.doc), &json!(["us"]), "{}", moved.human);
    let after = environment();
    let (s, b, _) = call(
        &after,
        as_caller("DELETE", &like_path(&post), anna, Some("eu")),
    )
    .await;
    assert_eq!(
        (s, &b["error"]["code"]),
        (421, &json!("wrong_region")),
        "{b}"
    );
    assert!(
        t.likes().liked_at(&post, &me).await.unwrap().is_some(),
        "nothing written"
    );
    let (s, b, _) = call(&after, as_caller("GET", &like_path(&post), bo, Some("us"))).await;
    assert_eq!(s, 200, "{b}");

    // A home both opened and closed is a usage error, and changes nothing.
    let err = likes_admin::homes::run(Some(&operator), &us, &us)
        .await
        .unwrap_err();
    assert!(matches!(err, AdminError::Usage(_)), "{err}");
    let shown = likes_admin::homes::run(Some(&operator), &[], &[])
        .await
        .unwrap();
    assert_eq!(served(&shown.doc), &json!(["us"]));
    assert!(likes_admin::homes::parse("--serve", &["EU".to_owned()]).is_err());
}
