//! Idempotency keys whose first request died before answering: held by their lease only.
//! Before the lease runs out a retry hears "still running" (503 at the gateway), after it one
//! retry takes the key over, runs and records its answer; of retries arriving together exactly
//! one wins. Short leases come in as a parameter. On PostgreSQL and SQLite.

use std::sync::Arc;
use std::time::Duration;

use reservation::testing::{fresh_postgres, fresh_sqlite};
use reservation::{Error, Idempotency, IdempotencyTiming, Store};
use tokio::sync::Barrier;

const LEASE: Duration = Duration::from_millis(400);

fn timing(wait: Duration) -> IdempotencyTiming {
    IdempotencyTiming { lease: LEASE, wait }
}

async fn begin(store: &Store, key: &str, hash: &str, wait: Duration) -> Result<Idempotency, Error> {
    store
        .idempotency_begin_timed("sess", "/hold", key, hash, timing(wait))
        .await
}

async fn crashed_key_is_reclaimed_after_its_lease(store: &Store) {
    let short = Duration::from_millis(50);
    // The first request claims the key, then its process dies: no answer, no release.
    assert_eq!(
        begin(store, "k1", "h1", short).await.expect("first"),
        Idempotency::New
    );
    // Within the lease the request may still be running: a retry waits, then hears so.
    assert_eq!(
        begin(store, "k1", "h1", short)
            .await
            .expect("retry in the lease"),
        Idempotency::InFlight
    );
    tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
    // Another body under the same key is still refused, lease or not.
    assert!(matches!(
        begin(store, "k1", "other", short).await,
        Err(Error::IdempotencyConflict)
    ));
    assert_eq!(
        begin(store, "k1", "h1", short)
            .await
            .expect("retry after the lease"),
        Idempotency::New,
        "after the lease a retry takes the key over"
    );
    store
        .idempotency_complete("sess", "/hold", "k1", 201, r#"{"hold_id":"h-1"}"#)
        .await
        .expect("record the answer");
    // The recorded answer is final: replayed, and no later lease can take it over.
    tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
    assert_eq!(
        begin(store, "k1", "h1", short).await.expect("repeat"),
        Idempotency::Replay {
            status: 201,
            body: r#"{"hold_id":"h-1"}"#.into()
        }
    );
}

async fn concurrent_retries_after_the_lease_run_once(store: &Store) {
    let retries = 8;
    for round in 0..5 {
        let key = format!("k-race-{round}");
        assert_eq!(
            begin(store, &key, "h", Duration::ZERO)
                .await
                .expect("first"),
            Idempotency::New
        );
        tokio::time::sleep(LEASE + Duration::from_millis(100)).await;
        let barrier = Arc::new(Barrier::new(retries));
        let tasks: Vec<_> = (0..retries)
            .map(|_| {
                let (store, barrier, key) = (store.clone(), barrier.clone(), key.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    // Waiting less than the winner's fresh lease: the losers hear "running".
                    begin(&store, &key, "h", Duration::from_millis(150)).await
                })
            })
            .collect();
        let mut answers = Vec::new();
        for t in tasks {
            answers.push(t.await.expect("retry task").expect("retry"));
        }
        let won = answers.iter().filter(|a| **a == Idempotency::New).count();
        let running = answers
            .iter()
            .filter(|a| **a == Idempotency::InFlight)
            .count();
        assert_eq!(
            (won, running),
            (1, retries - 1),
            "round {round}: {answers:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_a_crashed_key_is_reclaimed_after_its_lease() {
    crashed_key_is_reclaimed_after_its_lease(&fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_a_crashed_key_is_reclaimed_after_its_lease() {
    crashed_key_is_reclaimed_after_its_lease(&fresh_sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_concurrent_retries_after_the_lease_run_once() {
    concurrent_retries_after_the_lease_run_once(&fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_concurrent_retries_after_the_lease_run_once() {
    concurrent_retries_after_the_lease_run_once(&fresh_sqlite().await).await;
}

/// A key written before leases existed (no lease recorded) counts from its creation plus a
/// minute: an instance still running the older code is not overtaken at once.
#[tokio::test]
async fn a_key_without_a_recorded_lease_is_not_taken_at_once() {
    let store = fresh_postgres().await;
    sqlx::query(
        "insert into idempotency_keys (scope, route, key, body_hash) values ('sess', '/hold', 'old', 'h')",
    )
    .execute(store.pool())
    .await
    .expect("a key as the older code wrote it");
    assert_eq!(
        begin(&store, "old", "h", Duration::from_millis(50))
            .await
            .expect("retry"),
        Idempotency::InFlight
    );
    sqlx::query("update idempotency_keys set created_at = created_at - interval '61 seconds' where key = 'old'")
        .execute(store.pool())
        .await
        .expect("age the key");
    assert_eq!(
        begin(&store, "old", "h", Duration::from_millis(50))
            .await
            .expect("retry"),
        Idempotency::New
    );
}
