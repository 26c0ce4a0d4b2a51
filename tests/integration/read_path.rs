//! Read routes against the emulator: counts, my likes, likers, summary; cursors; request costs.

use std::collections::HashSet;
use std::sync::Arc;

use count_aggregator::Aggregator;
use likes_core::{PostId, UserId};
use likes_harness::stream::{event, Deliver, Rec};
use likes_harness::{call, call_as, like_path, ApiEvent, Tables};
use serde_json::Value;

type App = likes_api::App<likes_aws::DynamoLikes, likes_aws::DynamoCounts>;

async fn get(app: &App, path: &str, query: &str, user: &UserId) -> (u16, Value) {
    let event = ApiEvent::new("GET", path)
        .query(query)
        .caller(user.as_ref());
    let (s, b, _) = call(app, event).await;
    (s, b)
}

async fn like(app: &App, post: &PostId, user: &UserId) {
    let (s, b, _) = call_as(app, "PUT", &like_path(&post), user.as_ref()).await;
    assert_eq!(s, 200, "{b}");
}

/// Follows `next_cursor` to the end, returning every item and the number of pages.
async fn all_pages(app: &App, path: &str, limit: usize, user: &UserId) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let query = match &cursor {
            Some(c) => format!("limit={limit}&cursor={c}"),
            None => format!("limit={limit}"),
        };
        let (s, b) = get(app, path, &query, user).await;
        assert_eq!(s, 200, "{b}");
        pages += 1;
        let page = b["items"].as_array().expect("items").clone();
        assert!(page.len() <= limit);
        items.extend(page);
        match b["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (items, pages),
        }
        assert!(pages < 1000, "paging does not end");
    }
}

fn key(item: &Value, id_field: &str) -> (String, String) {
    (
        item["liked_at"].as_str().expect("liked_at").to_owned(),
        item[id_field].as_str().expect("id").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn likers_of_a_post_page_once_each_newest_first() {
    let t = Tables::new().await;
    let app = Arc::new(t.app());
    let post = PostId::new_random();
    let users: Vec<UserId> = (0..250).map(|_| UserId::new_random()).collect();
    // Concurrent likes: many share a millisecond, so ties on liked_at are exercised.
    let mut tasks = Vec::new();
    for chunk in users.chunks(25) {
        let (app, chunk) = (app.clone(), chunk.to_vec());
        let value = post.clone();
        tasks.push(tokio::spawn(async move {
            for u in chunk {
                like(&app, &value, &u).await;
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let buckets: HashSet<u8> = users.iter().map(likes_core::bucket_of).collect();
    assert_eq!(buckets.len(), 16, "the likers span every bucket");

    let viewer = UserId::new_random();
    let (items, pages) = all_pages(&app, &format!("/posts/{post}/likes"), 7, &viewer).await;
    assert_eq!(pages, 250usize.div_ceil(7));
    let keys: Vec<(String, String)> = items.iter().map(|i| key(i, "user_id")).collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(keys, sorted, "newest first, ties by user id");
    let seen: HashSet<&String> = keys.iter().map(|(_, u)| u).collect();
    assert_eq!(seen.len(), 250, "each liker exactly once");
    let want: HashSet<String> = users.iter().map(|u| u.to_string()).collect();
    assert_eq!(seen.into_iter().cloned().collect::<HashSet<_>>(), want);
}

#[tokio::test]
async fn my_likes_page_newest_first_and_only_mine() {
    let t = Tables::new().await;
    let app = t.app();
    let (me, other) = (UserId::new_random(), UserId::new_random());
    let mut mine = Vec::new();
    for i in 0..30 {
        let post = PostId::new_random();
        like(&app, &post, &me).await;
        mine.push(post.to_string());
        if i % 3 == 0 {
            like(&app, &PostId::new_random(), &other).await;
            like(&app, &post, &other).await;
        }
    }
    let (items, pages) = all_pages(&app, "/users/me/likes", 4, &me).await;
    assert_eq!(pages, 8);
    let keys: Vec<(String, String)> = items.iter().map(|i| key(i, "post_id")).collect();
    let mut sorted = keys.clone();
    sorted.sort_by(|a, b| b.0.cmp(&a.0));
    assert_eq!(
        keys.iter().map(|k| &k.0).collect::<Vec<_>>(),
        sorted.iter().map(|k| &k.0).collect::<Vec<_>>(),
        "newest first"
    );
    let got: HashSet<String> = keys.into_iter().map(|(_, p)| p).collect();
    assert_eq!(got, mine.iter().cloned().collect::<HashSet<_>>());
    // Likes are made in sequence, so newest first means the reverse of the order made.
    let first_page: Vec<&str> = items[..4]
        .iter()
        .map(|i| i["post_id"].as_str().unwrap())
        .collect();
    let newest: Vec<&str> = mine.iter().rev().take(4).map(String::as_str).collect();
    assert_eq!(first_page, newest);

    // The default page is 20, and an exact last page ends with a null cursor.
    let (s, b) = get(&app, "/users/me/likes", "", &me).await;
    assert_eq!(s, 200);
    assert_eq!(b["items"].as_array().unwrap().len(), 20);
    let (_, b) = get(&app, "/users/me/likes", "limit=30", &me).await;
    assert_eq!(b["items"].as_array().unwrap().len(), 30);
    assert_eq!(b["next_cursor"], Value::Null);
}

/// Builds the stream records the likes produced and runs the aggregator over them, as the event
/// source mapping would.
async fn aggregate(t: &Tables) {
    let items = t.scan(&t.likes_table).await;
    let recs: Vec<Rec> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let post = PostId::parse(item["post_id"].as_s().unwrap()).unwrap();
            let user = UserId::parse(item["user_id"].as_s().unwrap()).unwrap();
            Rec::new(
                true,
                &post,
                &user,
                (100_000_000_000_000_000_000u128 + i as u128).to_string(),
            )
        })
        .collect();
    let agg = Aggregator::new(t.counts());
    for chunk in recs.chunks(100) {
        assert!(agg.deliver(&event(chunk)).await.checkpoint.is_none());
    }
}

#[tokio::test]
async fn count_sums_every_bucket_row_after_aggregation() {
    let t = Tables::new().await;
    let app = t.app();
    let post = PostId::new_random();
    let viewer = UserId::new_random();
    let (s, b) = get(&app, &format!("/posts/{post}/likes/count"), "", &viewer).await;
    assert_eq!(
        (s, b["like_count"].as_i64()),
        (200, Some(0)),
        "nobody liked it yet"
    );

    let users: Vec<UserId> = (0..60).map(|_| UserId::new_random()).collect();
    for u in &users {
        like(&app, &post, u).await;
    }
    aggregate(&t).await;
    let items = t.scan(&t.counts_table).await;
    assert_eq!(items.len(), 1, "one Counts item per post");
    let buckets = (0..16)
        .filter(|b| items[0].contains_key(&format!("c{b}")))
        .count();
    assert!(buckets > 1, "its count spread over several buckets");
    let (s, b) = get(&app, &format!("/posts/{post}/likes/count"), "", &viewer).await;
    assert_eq!(s, 200);
    assert_eq!(b["post_id"], post.to_string());
    assert_eq!(b["like_count"], 60);
}

#[tokio::test]
async fn summary_matches_the_single_post_routes() {
    let t = Tables::new().await;
    let app = t.app();
    let me = UserId::new_random();
    let posts: Vec<PostId> = (0..80).map(|_| PostId::new_random()).collect();
    for (i, p) in posts.iter().enumerate() {
        if i % 3 == 0 {
            like(&app, p, &me).await;
        }
        for _ in 0..(i % 4) {
            like(&app, p, &UserId::new_random()).await;
        }
    }
    aggregate(&t).await;
    // 100 ids: the 80 posts plus 20 repeats, in a scrambled order.
    let mut asked: Vec<PostId> = posts.iter().rev().cloned().collect();
    asked.extend(posts.iter().step_by(4).cloned());
    assert_eq!(asked.len(), 100);
    let query = format!(
        "post_ids={}",
        asked
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    );
    let (s, b) = get(&app, "/likes/summary", &query, &me).await;
    assert_eq!(s, 200, "{b}");
    let items = b["items"].as_array().unwrap();
    let mut distinct = Vec::new();
    for p in &asked {
        if !distinct.contains(p) {
            distinct.push(p.clone());
        }
    }
    assert_eq!(items.len(), distinct.len(), "duplicates folded");
    for (item, post) in items.iter().zip(&distinct) {
        assert_eq!(item["post_id"], post.to_string(), "in the order asked");
        let (_, single) = get(&app, &format!("/posts/{post}/like"), "", &me).await;
        assert_eq!(item["liked_by_me"], single["liked"]);
        let (_, count) = get(&app, &format!("/posts/{post}/likes/count"), "", &me).await;
        assert_eq!(item["like_count"], count["like_count"]);
    }
    assert!(items.iter().any(|i| i["liked_by_me"] == true));
    assert!(items.iter().any(|i| i["liked_by_me"] == false));
}

#[tokio::test]
async fn foreign_tampered_and_random_cursors_are_400() {
    let t = Tables::new().await;
    let app = t.app();
    let (a, b) = (PostId::new_random(), PostId::new_random());
    let me = UserId::new_random();
    for _ in 0..3 {
        let u = UserId::new_random();
        like(&app, &a, &u).await;
        like(&app, &b, &u).await;
    }
    for _ in 0..3 {
        like(&app, &PostId::new_random(), &me).await;
    }
    let (_, page) = get(&app, &format!("/posts/{a}/likes"), "limit=1", &me).await;
    let cursor_a = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let (_, page) = get(&app, "/users/me/likes", "limit=1", &me).await;
    let cursor_mine = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();

    let mut flipped = cursor_a.clone().into_bytes();
    flipped[5] = if flipped[5] == b'A' { b'B' } else { b'A' };
    let flipped = String::from_utf8(flipped).unwrap();
    let other_user = UserId::new_random();
    let cases: Vec<(String, String, &UserId)> = vec![
        (format!("/posts/{b}/likes"), cursor_a.clone(), &me),
        ("/users/me/likes".into(), cursor_a.clone(), &me),
        (format!("/posts/{a}/likes"), cursor_mine.clone(), &me),
        ("/users/me/likes".into(), cursor_mine.clone(), &other_user),
        (format!("/posts/{a}/likes"), flipped, &me),
        (format!("/posts/{a}/likes"), "bm90IGEgY3Vyc29y".into(), &me),
        (format!("/posts/{a}/likes"), "%%%".into(), &me),
        ("/users/me/likes".into(), "AAAAAAAAAAAAAAAAAAAA".into(), &me),
    ];
    for (path, cursor, user) in cases {
        let (s, body) = get(&app, &path, &format!("cursor={cursor}"), user).await;
        assert_eq!(s, 400, "{path} with {cursor}: {body}");
        assert_eq!(body["error"]["code"], "invalid_cursor");
    }
    // The genuine cursors still work where they belong.
    let (s, _) = get(
        &app,
        &format!("/posts/{a}/likes"),
        &format!("cursor={cursor_a}"),
        &me,
    )
    .await;
    assert_eq!(s, 200);
    let (s, _) = get(
        &app,
        "/users/me/likes",
        &format!("cursor={cursor_mine}"),
        &me,
    )
    .await;
    assert_eq!(s, 200);
}

#[tokio::test]
async fn bad_read_parameters_are_400_and_need_a_caller() {
    let t = Tables::new().await;
    let app = t.app();
    let me = UserId::new_random();
    let post = PostId::new_random();
    let many: Vec<String> = (0..101).map(|_| PostId::new_random().to_string()).collect();
    let likers = format!("/posts/{post}/likes");
    let mine = "/users/me/likes".to_owned();
    let summary = "/likes/summary".to_owned();
    let ids = |q: String| (summary.clone(), q, "invalid_id");
    let cases: Vec<(String, String, &str)> = vec![
        (likers.clone(), "limit=0".into(), "invalid_limit"),
        (likers.clone(), "limit=101".into(), "invalid_limit"),
        (mine.clone(), "limit=abc".into(), "invalid_limit"),
        (mine.clone(), "limit=-1".into(), "invalid_limit"),
        (mine.clone(), "limit=1&limit=2".into(), "invalid_query"),
        (summary.clone(), "".into(), "invalid_post_ids"),
        (summary.clone(), "post_ids=".into(), "invalid_post_ids"),
        (
            summary.clone(),
            format!("post_ids={}", many.join(",")),
            "invalid_post_ids",
        ),
        ids(format!("post_ids={post},no%20pe")),
        ids(format!("post_ids={post},a%23b")),
        ids(format!("post_ids={post},,{post}")),
        ("/posts/no~pe/likes/count".into(), "".into(), "invalid_id"),
    ];
    for (path, query, code) in cases {
        let (s, b) = get(&app, &path, &query, &me).await;
        assert_eq!(s, 400, "{path}?{query}: {b}");
        assert_eq!(b["error"]["code"], code, "{path}?{query}");
        if code == "invalid_id" {
            assert!(b["error"]["message"].as_str().unwrap().contains("post_id"));
        }
    }
    for path in [
        "/users/me/likes",
        "/likes/summary",
        &format!("/posts/{post}/likes/count"),
    ] {
        let (s, _, _) = call(&app, ApiEvent::new("GET", path)).await;
        assert_eq!(s, 401, "{path}");
    }
}

#[tokio::test]
async fn each_route_costs_what_the_design_says() {
    let t = Tables::new().await;
    let (app, counter) = t.counted_app();
    let me = UserId::new_random();
    let posts: Vec<PostId> = (0..12).map(|_| PostId::new_random()).collect();
    for p in &posts {
        like(&app, p, &me).await;
    }
    let writes = counter.take();
    assert_eq!(writes.get("PutItem"), Some(&12));
    assert_eq!(writes.len(), 1, "{writes:?}");

    let cost = |m: std::collections::HashMap<String, usize>| {
        let mut v: Vec<(String, usize)> = m.into_iter().collect();
        v.sort();
        v
    };
    let p = &posts[0];
    get(&app, &format!("/posts/{p}/likes/count"), "", &me).await;
    assert_eq!(cost(counter.take()), vec![("GetItem".to_owned(), 1)]);

    get(&app, &format!("/posts/{p}/like"), "", &me).await;
    assert_eq!(cost(counter.take()), vec![("GetItem".to_owned(), 1)]);

    get(&app, "/users/me/likes", "limit=5", &me).await;
    assert_eq!(cost(counter.take()), vec![("Query".to_owned(), 1)]);

    get(&app, &format!("/posts/{p}/likes"), "limit=5", &me).await;
    assert_eq!(
        cost(counter.take()),
        vec![("Query".to_owned(), 16)],
        "one Query per bucket"
    );

    let friends: Vec<String> = (0..100).map(|i| format!("friend-{i}")).collect();
    let (s, _) = get(
        &app,
        &format!("/posts/{p}/likes"),
        &format!("among={},{me}", friends[..99].join(",")),
        &me,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        cost(counter.take()),
        vec![("BatchGetItem".to_owned(), 1)],
        "among: one batch of point reads for 100 ids"
    );

    let ids: Vec<String> = posts.iter().map(ToString::to_string).collect();
    let (s, _) = get(
        &app,
        "/likes/summary",
        &format!("post_ids={}", ids.join(",")),
        &me,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(
        cost(counter.take()),
        vec![("BatchGetItem".to_owned(), 2)],
        "one BatchGetItem of counts, one of the caller's likes"
    );
}
