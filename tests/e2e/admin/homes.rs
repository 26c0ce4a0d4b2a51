//! Two regions' home gate on `make dev` (`LIKES_HOME_CLAIM`, as the template's `HomeClaim`
//! sets it on Lambda): the local authorizer passes the token's home claim on as API Gateway
//! does; nobody is served until `likes-admin homes --serve` opens their home (through the lab,
//! as the operators' policy); a caller of another home, or with no home claim, is refused
//! (`421 wrong_region`, nothing written); a closed home is refused again within the gate's
//! time.

use serde_json::json;

use super::product::wait_until;
use super::Local;
use crate::common::{http, Emulator, SECRET};
use likes_local::jwt::{self, Claims};

const CLAIM: &str = "custom:home";

fn home_token(sub: &str, home: Option<&str>) -> String {
    let now = chrono::Utc::now().timestamp();
    let mut claims = Claims {
        sub: Some(sub.to_owned()),
        exp: Some(now + 600),
        iat: Some(now),
        nbf: None,
        iss: Some(jwt::DEFAULT_ISSUER.to_owned()),
        aud: Some(jwt::DEFAULT_AUDIENCE.into()),
        other: Default::default(),
    };
    if let Some(home) = home {
        claims.other.insert(CLAIM.to_owned(), home.into());
    }
    jwt::sign(SECRET, &claims).expect("a token")
}

#[test]
fn a_region_serves_the_homes_likes_admin_opens_and_no_others() {
    let local = Local::with(
        Emulator::start(),
        None,
        vec![("LIKES_HOME_CLAIM", CLAIM.to_owned())],
    );
    let port = local.stack.port;
    let (eu, us, none) = (
        home_token("auth0|home-eu", Some("eu")),
        home_token("auth0|home-us", Some("us")),
        home_token("auth0|home-none", None),
    );
    let refused = |tok: &str| {
        let (s, body) = http(port, "PUT", "/posts/hp/like", Some(tok)).expect("an answer");
        assert!(
            s == 200 || (s == 421 && body["error"]["code"] == "wrong_region"),
            "{s} {body}"
        );
        s == 421
    };
    assert!(refused(&eu), "nothing is served before a home is opened");

    let opened = local.admin(&["homes", "--serve", "eu"]).expect("eu opened");
    assert_eq!(opened.doc["served"], json!(["eu"]), "{}", opened.human);
    wait_until("eu served", || !refused(&eu));
    assert!(refused(&us) && refused(&none));
    let (s, body) = http(port, "GET", "/posts/hp/likes", Some(&eu)).expect("an answer");
    let likers: Vec<&str> = body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["user_id"].as_str())
        .collect();
    assert_eq!(
        (s, likers),
        (200, vec!["auth0|home-eu"]),
        "only eu's like written"
    );

    let closed = local.admin(&["homes", "--close", "eu"]).expect("eu closed");
    assert_eq!(closed.doc["served"], json!([]), "{}", closed.human);
    wait_until("eu refused again", || refused(&eu));

    // A label that is not a home: a usage error, nothing changed.
    assert!(matches!(
        local.admin(&["homes", "--serve", "EU"]),
        Err(likes_admin::AdminError::Usage(_))
    ));
    let shown = local.admin(&["homes"]).expect("shown");
    assert_eq!(shown.doc["served"], json!([]));
}
