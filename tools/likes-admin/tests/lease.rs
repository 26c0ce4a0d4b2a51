//! The recount lease against the emulator (`make test`): one job per post; a job whose lease ran
//! out can be taken over, and the job that was taken over can no longer renew it or release it.

use std::time::Duration;

use likes_admin::{lease as lock, AdminError};
use likes_aws::dynamo::schema::{create_table, COUNTS};
use likes_aws::DynamoCounts;
use likes_core::PostId;

async fn tables() -> DynamoCounts {
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
async fn a_job_taken_over_after_its_lease_cannot_renew_it() {
    let t = tables().await;
    let post = PostId::parse("hot-post").expect("an id");
    let long = Duration::from_secs(600);

    lock::acquire(&t, &post, "a", long)
        .await
        .expect("a takes it");
    let refused = lock::acquire(&t, &post, "b", long).await;
    assert!(
        matches!(&refused, Err(AdminError::Busy { job, .. }) if job == "a"),
        "{refused:?}"
    );
    lock::renew(&t, &post, "a", long)
        .await
        .expect("a renews its own");

    // a's lease runs out (taken for 0 s, so it ends at once), and b takes the post over.
    lock::release(&t, &post, "a").await.expect("released");
    lock::acquire(&t, &post, "a", Duration::ZERO)
        .await
        .expect("a again, briefly");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match lock::acquire(&t, &post, "b", long).await {
            Ok(()) => break,
            // The lease ends within the second it was taken in.
            Err(AdminError::Busy { .. }) if std::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("b never took over: {e}"),
        }
    }
    let lost = lock::renew(&t, &post, "a", long).await;
    assert!(
        matches!(&lost, Err(AdminError::LeaseLost { job, .. }) if job == "a"),
        "{lost:?}"
    );
    // a's release leaves b's lease alone: b still holds the post.
    lock::release(&t, &post, "a").await.expect("a no-op");
    let refused = lock::acquire(&t, &post, "c", long).await;
    assert!(
        matches!(&refused, Err(AdminError::Busy { job, .. }) if job == "b"),
        "{refused:?}"
    );
}
