//! The outbox backlog that backpressure reads counts only work still owed to a buyer. An
//! attempt paid with a card the provider always fails with a 5xx leaves its authorize job
//! retrying with backoff; once the reconciler abandons the attempt, that job only looks for
//! late money and must stop ageing the backlog (else one buyer's bad card would hold
//! everyone's offers).

use std::time::{Duration, Instant};

use floodgate_tests::saga::Rig;
use reservation::AttemptState;
use reservation::testing::seeded_event;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_attempts_retrying_job_is_not_backlog() {
    let mut rig = Rig::new(Duration::from_secs(1)).await;
    // After the first 5xx the job waits 4-8 s: long past the abandonment below.
    rig.outbox.backoff_base = Duration::from_secs(8);
    rig.outbox.backoff_max = Duration::from_secs(8);
    let ev = seeded_event(&rig.store, 4, |e| {
        e.resolve_s = 1;
        e.abandon_s = 2;
    })
    .await;
    let worker = rig.start_worker().await;
    let reconciler = rig.start_reconciler().await;
    let (_, attempt) = rig.checkout(&ev, "S00001", "pm_card_error").await;

    let started = Instant::now();
    loop {
        let a = rig
            .store
            .get_attempt(&attempt.attempt_id)
            .await
            .expect("read");
        if a.state == AttemptState::Abandoned {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not abandoned: {a:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Let the abandonment's own jobs (session_ended) run, then look while the authorize job
    // still sits in its backoff, created more than 2 s ago.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let open: i64 = sqlx::query_scalar(
        "select count(*) from outbox where attempt_id = $1 and kind = 'authorize' and done_at is null",
    )
    .bind(attempt.attempt_id.as_str())
    .fetch_one(rig.store.pool())
    .await
    .expect("outbox row");
    assert_eq!(
        open, 1,
        "the authorize job is still waiting out its backoff"
    );
    let lag = rig.store.outbox_lag().await.expect("lag");
    assert!(
        lag.oldest_age_ms < 1_000,
        "an abandoned attempt's job ages the backlog: {lag:?}"
    );
    worker.stop().await.expect("worker stops");
    reconciler.stop().await.expect("reconciler stops");
}
