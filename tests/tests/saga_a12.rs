//! The seed's A-12 story, and the decline-then-retry path, over real PostgreSQL and the
//! simulator over HTTP.
//!
//! Mina holds A-12 and starts paying; the provider stalls (paused) past her hold's expiry and
//! past `abandon_at`. Nobody can take A-12 while it is paying. When the provider answers again
//! the reconciler abandons her attempt and frees the seat; Ravi buys it. Mina's money then
//! arrives late (the authorize request that was stuck in the network lands now): it is given
//! back, and Ravi keeps the seat.

use std::time::{Duration, Instant};

use floodgate_tests::saga::Rig;
use reservation::payments::{AuthorizeRequest, Outcome};
use reservation::testing::{seeded_event, session};
use reservation::{AttemptState, Error, EventId, HoldState, NewSeat, PaymentAttempt, SeatId};

const SETTLE: Duration = Duration::from_secs(30);

fn a12() -> SeatId {
    "A-12".parse().expect("valid seat id")
}

async fn wait_for(what: &str, within: Duration, mut check: impl AsyncFnMut() -> bool) {
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < within, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Mina's attempt stalls, is abandoned at the first provider answer after `abandon_at`, and
/// Ravi then holds and buys A-12. Returns Mina's attempt and Ravi's hold.
async fn mina_abandoned_ravi_buys(rig: &Rig) -> (EventId, PaymentAttempt, reservation::HoldId) {
    let ev = seeded_event(&rig.store, 0, |e| {
        e.hold_ttl_ms = Some(1_000);
        e.resolve_s = 1;
        e.abandon_s = 3;
    })
    .await;
    rig.store
        .add_seats(
            &ev,
            &[NewSeat {
                seat_id: a12(),
                section: "A".into(),
                row_label: "A".into(),
                number: 12,
                price_cents: 9_900,
            }],
        )
        .await
        .expect("add A-12");
    rig.sim.simulator.pause();
    let reconciler = rig.start_reconciler().await;
    let mina = session(&rig.store, &ev).await;
    let ravi = session(&rig.store, &ev).await;
    let hold = rig
        .store
        .hold(&mina, &[a12()])
        .await
        .expect("Mina holds A-12");
    let attempt = rig
        .store
        .begin_payment(&mina, &hold.hold_id, "pm_card_visa")
        .await
        .expect("Mina starts paying before her hold expires");

    // Her hold's time passes while the provider is silent: the seat stays hers, paying.
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Paying
    );
    let refused = rig
        .store
        .hold(&ravi, &[a12()])
        .await
        .expect_err("A-12 is paying");
    assert!(
        matches!(refused, Error::SeatUnavailable { .. }),
        "{refused:?}"
    );
    rig.store.sweep(100).await.expect("sweep");
    assert!(
        rig.store.hold(&ravi, &[a12()]).await.is_err(),
        "the sweeper does not free a paying seat"
    );

    // Past abandon_at, still no answer: nothing is decided without the provider.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let open = rig
        .store
        .get_attempt(&attempt.attempt_id)
        .await
        .expect("read");
    assert!(
        matches!(open.state, AttemptState::Pending | AttemptState::Ambiguous),
        "{open:?}"
    );
    assert!(rig.store.hold(&ravi, &[a12()]).await.is_err());

    // The provider answers again: the first answer after abandon_at closes the attempt.
    rig.sim.simulator.resume();
    wait_for("Mina's attempt abandoned", SETTLE, async || {
        rig.store
            .get_attempt(&attempt.attempt_id)
            .await
            .expect("read")
            .state
            == AttemptState::Abandoned
    })
    .await;
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Abandoned
    );
    let ravis = rig
        .store
        .hold(&ravi, &[a12()])
        .await
        .expect("Ravi holds the freed A-12");
    rig.store
        .begin_payment(&ravi, &ravis.hold_id, "pm_card_visa")
        .await
        .expect("Ravi pays");
    reconciler.stop().await.expect("reconciler stops");
    (ev, attempt, ravis.hold_id)
}

/// The request Mina's worker sent before it stalled, landing at the provider only now.
async fn mina_money_lands_late(rig: &Rig, attempt: &PaymentAttempt) -> String {
    let req = AuthorizeRequest::new(
        attempt.attempt_id.as_str(),
        attempt.amount_cents,
        &attempt.currency,
        &attempt.payment_method,
    );
    match rig.provider.authorize(&req).await {
        Outcome::Authorized { payment_id } => payment_id,
        other => panic!("the late authorization lands: {other:?}"),
    }
}

async fn ravi_keeps_a12(rig: &Rig, ev: &EventId, ravis: &reservation::HoldId) {
    rig.settle(ev, SETTLE)
        .await
        .expect("settled with invariants");
    let h = rig.store.get_hold(ravis).await.expect("read");
    assert_eq!(h.state, HoldState::Confirmed);
    let order = rig
        .store
        .get_order(h.order_id.as_ref().expect("order id"))
        .await
        .expect("read")
        .expect("Ravi's order");
    assert_eq!(order.seats, vec![a12()]);
    let map = rig.store.seat_map(ev).await.expect("seat map");
    assert_eq!(map[0].state, "sold");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a12_late_authorization_is_voided_and_the_newer_owner_keeps_the_seat() {
    let rig = Rig::new(Duration::from_millis(500)).await;
    rig.serve_webhooks().await;
    let (ev, mina, ravis) = mina_abandoned_ravi_buys(&rig).await;
    let late = mina_money_lands_late(&rig, &mina).await;
    let worker = rig.start_worker().await;
    ravi_keeps_a12(&rig, &ev, &ravis).await;
    let rec = &rig.sim.simulator.ledger().attempts[mina.attempt_id.as_str()];
    assert_eq!(
        (rec.authorizations, rec.voids, rec.captures, rec.refunds),
        (1, 1, 0, 0),
        "{rec:?}"
    );
    let a = rig.store.get_attempt(&mina.attempt_id).await.expect("read");
    assert_eq!(
        (a.state, a.provider_payment_id.as_deref()),
        (AttemptState::Voided, Some(late.as_str()))
    );
    worker.stop().await.expect("worker stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a12_late_captured_money_is_refunded_and_the_newer_owner_keeps_the_seat() {
    let rig = Rig::new(Duration::from_millis(500)).await;
    rig.serve_webhooks().await;
    let (ev, mina, ravis) = mina_abandoned_ravi_buys(&rig).await;
    let late = mina_money_lands_late(&rig, &mina).await;
    // The money was even taken (say, captured by a provider-side rule) before we heard of it.
    assert!(matches!(
        rig.provider.capture(&late).await,
        Outcome::Captured { .. }
    ));
    let worker = rig.start_worker().await;
    ravi_keeps_a12(&rig, &ev, &ravis).await;
    let rec = &rig.sim.simulator.ledger().attempts[mina.attempt_id.as_str()];
    assert_eq!(
        (rec.authorizations, rec.captures, rec.refunds, rec.voids),
        (1, 1, 1, 0),
        "{rec:?}"
    );
    assert_eq!(
        rig.store
            .get_attempt(&mina.attempt_id)
            .await
            .expect("read")
            .state,
        AttemptState::Refunded
    );
    worker.stop().await.expect("worker stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decline_keeps_the_seats_and_a_retry_with_another_card_confirms() {
    let rig = Rig::new(Duration::from_secs(2)).await;
    let ev = seeded_event(&rig.store, 6, |_| {}).await;
    let worker = rig.start_worker().await;
    let buyer = session(&rig.store, &ev).await;
    let seats: Vec<SeatId> = ["S00002", "S00005"]
        .iter()
        .map(|s| s.parse().expect("seat"))
        .collect();
    let hold = rig.store.hold(&buyer, &seats).await.expect("hold");
    let first = rig
        .store
        .begin_payment(&buyer, &hold.hold_id, "pm_card_declined")
        .await
        .expect("checkout");
    wait_for("the decline", SETTLE, async || {
        rig.store.get_hold(&hold.hold_id).await.expect("read").state == HoldState::Held
    })
    .await;
    let back = rig.store.get_hold(&hold.hold_id).await.expect("read");
    assert_eq!(back.seats, seats);
    assert!(back.last_payment_error.is_some());
    // At least two minutes to try again (DESIGN §4).
    assert!(
        back.expires_at_ms - back.created_at_ms >= 120_000 - 5_000,
        "{back:?}"
    );
    assert_eq!(
        rig.store
            .get_attempt(&first.attempt_id)
            .await
            .expect("read")
            .state,
        AttemptState::Declined
    );
    // Nobody else can take them meanwhile.
    let rival = session(&rig.store, &ev).await;
    assert!(rig.store.hold(&rival, &seats[..1]).await.is_err());

    let second = rig
        .store
        .begin_payment(&buyer, &hold.hold_id, "pm_card_visa")
        .await
        .expect("retry with another card");
    assert_ne!(
        second.attempt_id, first.attempt_id,
        "a retry is a new attempt with a new key"
    );
    rig.settle(&ev, SETTLE)
        .await
        .expect("settled with invariants");
    let h = rig.store.get_hold(&hold.hold_id).await.expect("read");
    assert_eq!(h.state, HoldState::Confirmed);
    let order = rig
        .store
        .get_order(h.order_id.as_ref().expect("order"))
        .await
        .expect("read")
        .expect("order");
    assert_eq!(
        (order.seats, order.attempt_id),
        (seats, second.attempt_id.clone())
    );
    let ledger = rig.sim.simulator.ledger();
    assert_eq!(ledger.attempts[first.attempt_id.as_str()].declines, 1);
    assert_eq!(ledger.attempts[second.attempt_id.as_str()].captures, 1);
    worker.stop().await.expect("worker stops");
}
