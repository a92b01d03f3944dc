//! DESIGN §7 fault injection: the flow is killed at each of the five boundaries, a fresh
//! worker starts, and the hold still reaches its correct final state with invariants 1–4.
//! Real PostgreSQL, the simulator over HTTP.

use std::time::Duration;

use floodgate_tests::saga::Rig;
use reservation::failpoint::{self, Point};
use reservation::testing::{seeded_event, session};
use reservation::{AttemptState, Error, EventId, HoldState, SeatId};

const SETTLE: Duration = Duration::from_secs(20);

fn seat(n: u32) -> SeatId {
    format!("S{n:05}").parse().expect("valid seat id")
}

async fn rig_and_event(hold_ttl_ms: Option<i64>) -> (Rig, EventId) {
    let rig = Rig::new(Duration::from_secs(2)).await;
    let ev = seeded_event(&rig.store, 4, |e| {
        e.hold_ttl_ms = hold_ttl_ms;
        e.resolve_s = 3;
        e.abandon_s = 10;
    })
    .await;
    (rig, ev)
}

/// Confirmed, captured once, nothing else charged, session ended as confirmed.
async fn assert_sold_once(rig: &mut Rig, ev: &EventId, hold: &reservation::HoldId) {
    let h = rig.store.get_hold(hold).await.expect("read hold");
    assert_eq!(h.state, HoldState::Confirmed);
    let order = rig
        .store
        .get_order(h.order_id.as_ref().expect("confirmed hold names its order"))
        .await
        .expect("read order")
        .expect("order exists");
    assert_eq!(order.payment_status, "captured");
    let attempt = rig
        .store
        .get_attempt(&order.attempt_id)
        .await
        .expect("read attempt");
    assert_eq!(attempt.state, AttemptState::Captured);
    let ledger = rig.sim.simulator.ledger();
    assert_eq!(ledger.total_authorizations(), 1, "{ledger:?}");
    let rec = &ledger.attempts[order.attempt_id.as_str()];
    assert_eq!((rec.captures, rec.voids, rec.refunds), (1, 0, 0));
    let ended = rig.ended.recv().await.expect("session_ended delivered");
    assert_eq!(
        (ended.hold_id.as_str(), ended.reason.as_str()),
        (hold.as_str(), "confirmed")
    );
    rig.assert_invariants(ev, true).await.expect("invariants");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_hold_the_committed_hold_expires_and_frees_the_seat() {
    let (mut rig, ev) = rig_and_event(Some(400)).await;
    let buyer = session(&rig.store, &ev).await;
    let armed = failpoint::crash(Point::AfterHold, ev.as_str());
    let err = rig
        .store
        .hold(&buyer, &[seat(1)])
        .await
        .expect_err("crashed");
    assert!(matches!(err, Error::Crashed(_)), "{err:?}");
    drop(armed);
    // The hold committed before the crash: the row, not the lost answer, decides.
    let live = rig
        .store
        .session_live_hold(&buyer)
        .await
        .expect("read")
        .expect("the hold exists");
    assert_eq!(live.state, HoldState::Held);
    let worker = rig.start_worker().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        rig.store.get_hold(&live.hold_id).await.expect("read").state,
        HoldState::Expired
    );
    let swept = rig.store.sweep(100).await.expect("sweep");
    assert_eq!((swept.seats_freed, swept.holds_expired), (1, 1));
    let ended = tokio::time::timeout(SETTLE, rig.ended.recv())
        .await
        .expect("in time")
        .expect("sent");
    assert_eq!(
        (ended.hold_id.as_str(), ended.reason.as_str()),
        (live.hold_id.as_str(), "expired")
    );
    rig.settle(&ev, SETTLE).await.expect("settled");
    assert_eq!(
        rig.store
            .counts(&ev)
            .await
            .expect("counts")
            .seats("available"),
        4
    );
    worker.stop().await.expect("worker stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_paying_committed_a_fresh_worker_confirms() {
    let (mut rig, ev) = rig_and_event(None).await;
    let buyer = session(&rig.store, &ev).await;
    let hold = rig
        .store
        .hold(&buyer, &[seat(1), seat(2)])
        .await
        .expect("hold");
    let armed = failpoint::crash(Point::AfterPayingCommitted, ev.as_str());
    let err = rig
        .store
        .begin_payment(&buyer, &hold.hold_id, "pm_card_visa")
        .await
        .expect_err("crashed");
    assert!(matches!(err, Error::Crashed(_)), "{err:?}");
    drop(armed);
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Paying
    );
    assert_eq!(
        rig.sim.simulator.ledger().total_authorizations(),
        0,
        "no money before the worker"
    );
    let worker = rig.start_worker().await;
    rig.settle(&ev, SETTLE).await.expect("settled");
    assert_sold_once(&mut rig, &ev, &hold.hold_id).await;
    worker.stop().await.expect("worker stops");
}

/// The worker dies at `point` (after the provider authorized, or inside finalize before its
/// commit); a fresh worker asks the provider, finds the authorization and confirms it once.
async fn worker_dies_at(point: Point) {
    let (mut rig, ev) = rig_and_event(None).await;
    let buyer = session(&rig.store, &ev).await;
    let hold = rig.store.hold(&buyer, &[seat(3)]).await.expect("hold");
    let armed = failpoint::crash(point, ev.as_str());
    let first = rig.start_worker().await;
    rig.store
        .begin_payment(&buyer, &hold.hold_id, "pm_card_visa")
        .await
        .expect("begin payment");
    let died = first.ended(SETTLE).await;
    assert!(matches!(died, Err(Error::Crashed(_))), "{died:?}");
    drop(armed);
    // Money is held at the provider; the seat is still paying for this attempt.
    assert_eq!(rig.sim.simulator.ledger().total_authorizations(), 1);
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Paying
    );
    rig.assert_invariants(&ev, false)
        .await
        .expect("invariants mid-flight");
    let fresh = rig.start_worker().await;
    rig.settle(&ev, SETTLE).await.expect("settled");
    assert_sold_once(&mut rig, &ev, &hold.hold_id).await;
    fresh.stop().await.expect("worker stops");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_after_provider_authorized_a_fresh_worker_confirms_once() {
    worker_dies_at(Point::AfterProviderAuthorized).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_before_finalize_commit_rolls_back_and_a_fresh_worker_confirms_once() {
    worker_dies_at(Point::BeforeFinalizeCommit).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_inside_sweeper_rolls_back_and_the_hold_still_ends_expired() {
    let (mut rig, ev) = rig_and_event(Some(300)).await;
    let buyer = session(&rig.store, &ev).await;
    let hold = rig.store.hold(&buyer, &[seat(4)]).await.expect("hold");
    tokio::time::sleep(Duration::from_millis(450)).await;
    let armed = failpoint::crash(Point::InsideSweeper, ev.as_str());
    let err = rig.store.sweep(100).await.expect_err("crashed");
    assert!(matches!(err, Error::Crashed(_)), "{err:?}");
    drop(armed);
    // Rolled back, yet expiry is the permission: reads say expired, and the seat can be taken.
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Expired
    );
    let worker = rig.start_worker().await;
    let swept = rig.store.sweep(100).await.expect("second sweep");
    assert_eq!((swept.seats_freed, swept.holds_expired), (1, 1));
    let ended = tokio::time::timeout(SETTLE, rig.ended.recv())
        .await
        .expect("in time")
        .expect("sent");
    assert_eq!(
        (ended.hold_id.as_str(), ended.reason.as_str()),
        (hold.hold_id.as_str(), "expired")
    );
    let rival = session(&rig.store, &ev).await;
    let taken = rig
        .store
        .hold(&rival, &[seat(4)])
        .await
        .expect("the freed seat can be held");
    rig.store
        .begin_payment(&rival, &taken.hold_id, "pm_card_visa")
        .await
        .expect("begin payment");
    rig.settle(&ev, SETTLE).await.expect("settled");
    assert_sold_once(&mut rig, &ev, &taken.hold_id).await;
    worker.stop().await.expect("worker stops");
}
