//! What the README calls strong is read-your-writes even where DynamoDB's eventual reads trail
//! (the lab serves reads without `ConsistentRead`, and index queries, from a copy that trails by
//! its lag): right after a like, a reaction and an unlike, the routes documented strong answer
//! the new state — the like's own route, "liked by me" and "my reactions" in a summary, mine
//! in a post's reactions — while the routes documented eventual (a listing) are seen to trail,
//! which is what makes the first assertions mean something.

use likes_core::{Kinds, Mode, PostId, Reactions, UserId};
use likes_harness::{call, call_as, eventually, like_path, ApiEvent, Tables};
use serde_json::Value;

fn reactions() -> Reactions {
    Reactions {
        kinds: Kinds::parse("like,love").expect("kinds"),
        mode: Mode::Multi,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_strong_routes_read_their_writes_while_eventual_ones_trail() {
    let t = Tables::lagging().await;
    let app = t.app().with_reactions(reactions());
    let (post, me) = (PostId::new_random(), UserId::new_random().to_string());
    let get = |path: String| {
        let (app, me) = (&app, me.clone());
        async move {
            let (path, query) = path.split_once('?').unwrap_or((&path, ""));
            let event = ApiEvent::new("GET", path).query(query).caller(&me);
            let (s, b, _) = call(app, event).await;
            assert_eq!(s, 200, "{path}?{query}: {b}");
            b
        }
    };
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), &me).await;
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
    let (s, b, _) = call_as(&app, "PUT", &format!("/posts/{post}/reactions/love"), &me).await;
    assert_eq!(s, 200, "{b}");

    // At once: the like's route, the summary's "mine", the post's reactions' "mine".
    let like = get(like_path(&post)).await;
    assert_eq!(like["liked"], true, "GET …/like is strong: {like}");
    let summary = get(format!("/likes/summary?post_ids={post}")).await;
    let item = &summary["items"][0];
    assert_eq!(item["liked_by_me"], true, "liked by me: {summary}");
    assert_eq!(
        item["my_reactions"],
        serde_json::json!(["like", "love"]),
        "{summary}"
    );
    let mine = get(format!("/posts/{post}/reactions")).await;
    assert_eq!(mine["mine"], serde_json::json!(["like", "love"]), "{mine}");
    // …while a listing, eventual by its documentation, has not caught up.
    let mine_listed = get("/users/me/likes".into()).await;
    assert_eq!(
        mine_listed["items"].as_array().map(Vec::len),
        Some(0),
        "the lab's lag did not show: {mine_listed}"
    );

    // The listing, eventual, catches up.
    eventually(
        "my likes",
        || get("/users/me/likes".into()),
        |b| b["items"].as_array().is_some_and(|i| i.len() == 1),
    )
    .await;

    // The unlike, at once too.
    let (s, b, _) = call_as(&app, "DELETE", &like_path(&post), &me).await;
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
    let like = get(like_path(&post)).await;
    assert_eq!(like["liked"], false, "{like}");
    let summary = get(format!("/likes/summary?post_ids={post}")).await;
    assert_eq!(summary["items"][0]["liked_by_me"], false, "{summary}");
    assert_eq!(
        summary["items"][0]["my_reactions"],
        serde_json::json!(["love"]),
        "{summary}"
    );
}

/// A deployment without reactions reads "liked by me" its own way (the likes alone): strong too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liked_by_me_reads_its_writes_without_reactions() {
    let t = Tables::lagging().await;
    let app = t.app();
    let (post, me) = (PostId::new_random(), UserId::new_random().to_string());
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), &me).await;
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&format!("post_ids={post}"))
        .caller(&me);
    let (s, summary, _) = call(&app, event).await;
    assert_eq!(s, 200, "{summary}");
    assert_eq!(summary["items"][0]["liked_by_me"], true, "{summary}");
}

/// What a recount and an audit read of a bucket (its keys, its count, each kind's count) is the
/// bucket as it is: a like made a moment ago is in it, however far an eventual read trails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repairs_bucket_read_sees_a_like_made_a_moment_ago() {
    use likes_core::{LikesAdmin, PostBucket};
    let t = Tables::lagging().await;
    let (post, me) = (PostId::new_random(), UserId::new_random());
    t.put_like(&post, &me, "2026-12-03T10:00:00.000Z").await;
    let operator = t.as_role(likes_harness::lab::roles::OPERATOR).likes();
    let bucket = PostBucket::for_like(&post, &me);
    assert_eq!(operator.count_bucket(&bucket).await.unwrap(), 1);
    assert!(operator
        .bucket_users(&bucket)
        .await
        .unwrap()
        .contains(me.as_str()));
    assert_eq!(
        operator.count_kinds(&bucket).await.unwrap().get("like"),
        Some(&1)
    );
}

/// An erase of a post reads each bucket as it is: a like made a moment ago goes too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posts_erase_takes_a_like_made_a_moment_ago() {
    let t = Tables::lagging().await;
    let post = PostId::new_random();
    for _ in 0..3 {
        t.put_like(&post, &UserId::new_random(), "2026-12-03T10:00:00.000Z")
            .await;
    }
    let operator = t.as_role(likes_harness::lab::roles::OPERATOR).likes();
    let erased = likes_core::erase::erase_post(&operator, &post, &|_| {})
        .await
        .unwrap();
    assert_eq!(erased, 3);
    assert!(
        t.like_pairs().await.is_empty(),
        "a like survived its post's erase"
    );
}

/// A pending erasure is read as it is, a moment after it was recorded: the request that joins
/// a job being sent waits on what this read says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pending_erasure_is_read_as_it_is() {
    use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
    use likes_aws::DynamoErasureRequests;
    use likes_core::erase_job::ErasureRequests;
    let t = Tables::lagging().await;
    let table = format!(
        "erase-requests-{}",
        t.likes_table.trim_start_matches("likes-")
    );
    create_table(&t.client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    likes_harness::lab::lab().set_lag(&table, likes_harness::lab::read_lag());
    let api = t.as_role(likes_harness::lab::roles::API);
    let store = DynamoErasureRequests::new(api.client.clone(), &table);
    let me = UserId::new_random();
    store
        .request(&me, "job-1", "2026-12-03T10:00:00.000Z")
        .await
        .unwrap();
    store
        .sent(&me, "job-1", "2026-12-03T10:00:00.100Z")
        .await
        .unwrap();
    let read = store.read(&me).await.unwrap().expect("pending");
    assert_eq!(read.job_id, "job-1");
    assert!(read.sent_at.is_some(), "its send, noted a moment ago");
}
