//! The embedded default: the same outbox worker and reconciler over SQLite with the
//! in-process simulator (no HTTP), a sale and a decline, judged by the same invariant checker.

use std::time::{Duration, Instant};

use floodgate_tests::invariants::check_invariants;
use reservation::outbox::{OutboxConfig, SessionSink, run_outbox};
use reservation::payments::{PaymentConfig, Provider};
use reservation::reconcile::{ReconcileConfig, run_reconciler};
use reservation::testing::{fresh_sqlite, seeded_event, session};
use reservation::{AttemptState, HoldState, SeatId};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_with_the_in_process_simulator_sells_and_declines() {
    let store = fresh_sqlite().await;
    let provider = Provider::from_config(&PaymentConfig {
        url: None,
        api_key: String::new(),
        webhook_secret: "whsec_sqlite".into(),
        request_timeout: Duration::from_secs(2),
        ca_pem: None,
    })
    .expect("in-process provider");
    let Provider::Simulated(sim) = &provider else {
        panic!("no URL means the in-process simulator");
    };
    let ev = seeded_event(&store, 4, |e| {
        e.resolve_s = 2;
        e.abandon_s = 6;
    })
    .await;
    let (tx, mut ended) = tokio::sync::mpsc::unbounded_channel();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let until = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let worker = tokio::spawn(run_outbox(
        store.clone(),
        provider.clone(),
        SessionSink::channel(tx),
        OutboxConfig {
            poll: Duration::from_millis(20),
            backoff_base: Duration::from_millis(50),
            ..OutboxConfig::default()
        },
        until(stopped.clone()),
    ));
    let reconciler = tokio::spawn(run_reconciler(
        store.clone(),
        provider.clone(),
        ReconcileConfig {
            interval: Duration::from_millis(200),
            ..ReconcileConfig::default()
        },
        until(stopped),
    ));

    let seat = |s: &str| -> SeatId { s.parse().expect("seat") };
    let alice = session(&store, &ev).await;
    let bob = session(&store, &ev).await;
    let a = store.hold(&alice, &[seat("S00001")]).await.expect("hold");
    let b = store.hold(&bob, &[seat("S00002")]).await.expect("hold");
    store
        .begin_payment(&alice, &a.hold_id, "pm_card_visa")
        .await
        .expect("checkout");
    let declined = store
        .begin_payment(&bob, &b.hold_id, "pm_card_declined")
        .await
        .expect("checkout");
    let start = Instant::now();
    loop {
        let ha = store.get_hold(&a.hold_id).await.expect("read");
        let pay = store.get_attempt(&declined.attempt_id).await.expect("read");
        let captured = match &ha.order_id {
            Some(o) => store
                .get_order(o)
                .await
                .expect("read")
                .is_some_and(|o| o.payment_status == "captured"),
            None => false,
        };
        if captured && pay.state == AttemptState::Declined {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{ha:?} {pay:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        store.get_hold(&b.hold_id).await.expect("read").state,
        HoldState::Held
    );
    let done = ended.recv().await.expect("session_ended delivered");
    assert_eq!(
        (done.hold_id.as_str(), done.reason.as_str()),
        (a.hold_id.as_str(), "confirmed")
    );
    let bad = check_invariants(&store, &ev, &sim.simulator.ledger(), true)
        .await
        .expect("read rows");
    assert!(bad.is_empty(), "{bad:?}");
    stop.send_replace(true);
    worker.await.expect("joins").expect("worker stops cleanly");
    reconciler
        .await
        .expect("joins")
        .expect("reconciler stops cleanly");
}
