//! The post's repair lease against the emulator (`make test`): a live holder's lease is refused
//! to others; one whose holder stopped renewing is taken over after its term; the job taken
//! over can neither renew nor release it, nor correct a count. (The same rules on the in-memory
//! store, on a paused clock: `src/lease.rs`.)

use std::time::Duration;

use likes_admin::{lease, AdminError};
use likes_aws::dynamo::schema::{create_table, COUNTS};
use likes_aws::DynamoCounts;
use likes_core::{CountsAdmin, CountsLedger, PostId};

async fn counts() -> DynamoCounts {
    let endpoint = std::env::var("LIKES_TEST_DYNAMODB_ENDPOINT")
        .expect("LIKES_TEST_DYNAMODB_ENDPOINT: run with `make test`, which starts the emulator");
    let client = likes_aws::sdk::emulator_dynamo(&endpoint).await;
    let counts = format!("counts-{}", uuid::Uuid::new_v4().simple());
    create_table(&client, &COUNTS, &counts)
        .await
        .expect("a Counts table");
    DynamoCounts::new(client, counts)
}

#[tokio::test]
async fn a_live_lease_is_kept_and_a_dead_one_taken_over() {
    let counts = counts().await;
    let post = PostId::parse("hot-post").expect("an id");
    let term = Duration::from_secs(2);

    // a holds the post and keeps renewing; b, meanwhile, is refused.
    let a = lease::hold(&counts, &post, "a", term, async {
        tokio::time::sleep(Duration::from_secs(4)).await;
        Ok(())
    });
    let b = async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        lease::acquire(&counts, &post, "b", term).await
    };
    let (a, b) = tokio::join!(a, b);
    a.expect("a ran to its end");
    assert!(
        matches!(&b, Err(AdminError::Busy { job, .. }) if job == "a"),
        "{b:?}"
    );

    // c takes it and stops renewing (it died); d takes it over after c's term.
    lease::acquire(&counts, &post, "c", term)
        .await
        .expect("free after a released it");
    lease::acquire(&counts, &post, "d", term)
        .await
        .expect("taken over from a holder that stopped");
    assert!(!counts.renew_lease(&post, "c").await.expect("answers"));
    counts.release_lease(&post, "c").await.expect("a no-op");
    assert!(!counts.settle(&post, 0, "c", 5, &[]).await.expect("answers"));
    let held = counts
        .read_post(&post)
        .await
        .expect("read")
        .and_then(|i| i.lease);
    assert_eq!(held.map(|l| l.job), Some("d".to_owned()));
}
