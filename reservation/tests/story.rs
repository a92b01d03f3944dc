//! The conformance story: every store operation, run against PostgreSQL and SQLite alike.

use std::time::Duration;

use reservation::testing::{fresh_postgres, fresh_sqlite, seeded_event, session};
use reservation::{
    AttemptState, Error, Finalized, HoldState, Idempotency, NewSeat, SeatId, Store, TicketId,
};
use sha2::{Digest, Sha256};
use sqlx::Row;

#[tokio::test]
async fn story_on_postgres() {
    story(fresh_postgres().await).await;
}

#[tokio::test]
async fn story_on_sqlite() {
    story(fresh_sqlite().await).await;
}

fn seats(ids: &[&str]) -> Vec<SeatId> {
    ids.iter()
        .map(|s| s.parse().expect("valid seat id"))
        .collect()
}

async fn log_kinds(store: &Store, hold: &str) -> Vec<String> {
    sqlx::query("select kind from reservation_events where hold_id = $1 order by id")
        .bind(hold)
        .fetch_all(store.pool())
        .await
        .expect("read log")
        .iter()
        .map(|r| r.get::<String, _>("kind"))
        .collect()
}

async fn outbox_kinds(store: &Store, hold: &str) -> Vec<String> {
    sqlx::query("select kind from outbox where hold_id = $1 order by id")
        .bind(hold)
        .fetch_all(store.pool())
        .await
        .expect("read outbox")
        .iter()
        .map(|r| r.get::<String, _>("kind"))
        .collect()
}

async fn story(store: Store) {
    store.ping().await.expect("ping");

    // Event, seed commitment, seats (adding twice changes nothing).
    let event = seeded_event(&store, 10, |e| e.max_seats_per_hold = 4).await;
    let ev = store.get_event(&event).await.expect("get event");
    assert_eq!(
        ev.seed_commitment,
        hex::encode(Sha256::digest(ev.fairness_seed.as_bytes()))
    );
    assert_eq!(ev.max_seats_per_hold, 4);
    let again = vec![NewSeat {
        seat_id: "S00001".parse().expect("id"),
        section: "A".into(),
        row_label: String::new(),
        number: 1,
        price_cents: 1,
    }];
    assert_eq!(store.add_seats(&event, &again).await.expect("re-add"), 0);
    assert_eq!(
        store
            .generate_seats(&event, "GA", 2, 5, 500)
            .await
            .expect("ga"),
        10
    );
    assert_eq!(store.seat_count(&event).await.expect("count"), 20);

    // Sessions: one per ticket.
    let ticket: TicketId = "ticket-1".parse().expect("id");
    let a1 = store
        .open_session(&event, &ticket, Some(1), 1800)
        .await
        .expect("open");
    let a2 = store
        .open_session(&event, &ticket, Some(9), 1800)
        .await
        .expect("open again");
    assert_eq!(a1.session_id, a2.session_id);
    assert!(a1.expires_at_ms > a1.created_at_ms);
    let a = a1.session_id;
    assert_eq!(store.get_session(&a).await.expect("get").ticket_id, ticket);

    // Hold: sorted, live, readable by receipt.
    let hold = store
        .hold(&a, &seats(&["S00002", "S00001"]))
        .await
        .expect("hold");
    assert_eq!(hold.seats, seats(&["S00001", "S00002"]));
    assert_eq!(hold.total_cents, 2000);
    assert_eq!(hold.state, HoldState::Held);
    assert_eq!(store.get_hold(&hold.hold_id).await.expect("get"), hold);
    assert_eq!(
        store
            .get_hold_by_receipt(&hold.receipt_key)
            .await
            .expect("receipt")
            .hold_id,
        hold.hold_id
    );
    assert_eq!(
        store
            .session_live_hold(&a)
            .await
            .expect("live")
            .map(|h| h.hold_id),
        Some(hold.hold_id.clone())
    );
    assert!(matches!(
        store.hold(&a, &seats(&["S00003"])).await,
        Err(Error::HoldLimit)
    ));
    let b = session(&store, &event).await;
    match store.hold(&b, &seats(&["S00001", "S00003"])).await {
        Err(Error::SeatUnavailable { seats: s }) => assert_eq!(s, seats(&["S00001"])),
        other => panic!("expected SeatUnavailable, got {other:?}"),
    }
    let counts = store.counts(&event).await.expect("counts");
    assert_eq!((counts.seats("held"), counts.seats("available")), (2, 18));

    // Extend and release: owner only.
    let extended = store.extend(&a, &hold.hold_id).await.expect("extend");
    assert!(extended.expires_at_ms >= hold.expires_at_ms);
    assert!(extended.expires_at_ms <= hold.max_expires_at_ms);
    assert!(matches!(
        store.extend(&b, &hold.hold_id).await,
        Err(Error::NotOwner)
    ));
    assert!(matches!(
        store.release(&b, &hold.hold_id).await,
        Err(Error::NotOwner)
    ));
    let released = store.release(&a, &hold.hold_id).await.expect("release");
    assert_eq!(released.state, HoldState::Released);
    assert_eq!(
        store
            .release(&a, &hold.hold_id)
            .await
            .expect("release twice")
            .state,
        HoldState::Released
    );
    assert!(matches!(
        store.hold(&a, &seats(&["S00003"])).await,
        Err(Error::SessionEnded)
    ));
    assert!(
        store
            .get_session(&a)
            .await
            .expect("get")
            .ended_at_ms
            .is_some()
    );
    assert_eq!(
        log_kinds(&store, hold.hold_id.as_str()).await,
        ["ReservationCreated", "HoldExtended", "ReservationReleased"]
    );
    assert_eq!(
        outbox_kinds(&store, hold.hold_id.as_str()).await,
        ["session_ended"]
    );

    // Payment: begin, decline (seats back to held), begin again, finalize (twice), capture queued.
    let c = session(&store, &event).await;
    let hc = store
        .hold(&c, &seats(&["S00003", "S00004"]))
        .await
        .expect("hold c");
    let pa1 = store
        .begin_payment(&c, &hc.hold_id, "pm_card_visa")
        .await
        .expect("begin");
    assert_eq!((pa1.state, pa1.amount_cents), (AttemptState::Pending, 2000));
    assert!(pa1.resolve_by_ms > pa1.created_at_ms && pa1.abandon_at_ms > pa1.resolve_by_ms);
    assert_eq!(
        store.get_hold(&hc.hold_id).await.expect("get").state,
        HoldState::Paying
    );
    assert!(matches!(
        store.release(&c, &hc.hold_id).await,
        Err(Error::PaymentInProgress)
    ));
    assert!(matches!(
        store.begin_payment(&c, &hc.hold_id, "x").await,
        Err(Error::PaymentInProgress)
    ));
    let stuck = store.stuck(&event, 0).await.expect("stuck");
    assert_eq!(
        stuck.iter().map(|p| &p.attempt_id).collect::<Vec<_>>(),
        [&pa1.attempt_id]
    );
    let declined = store
        .decline(&pa1.attempt_id, "card_declined")
        .await
        .expect("decline");
    assert_eq!(declined.state, AttemptState::Declined);
    let back = store.get_hold(&hc.hold_id).await.expect("get");
    assert_eq!(back.state, HoldState::Held);
    assert_eq!(back.last_payment_error.as_deref(), Some("card_declined"));
    assert!(back.expires_at_ms >= pa1.created_at_ms + 119_000);
    let pa2 = store
        .begin_payment(&c, &hc.hold_id, "pm_card_visa")
        .await
        .expect("begin again");
    assert_ne!(pa2.attempt_id, pa1.attempt_id);
    let Finalized::Confirmed(order) = store
        .finalize(&pa2.attempt_id, Some("pi_1"))
        .await
        .expect("finalize")
    else {
        panic!("expected an order");
    };
    assert_eq!(
        (order.seats.clone(), order.total_cents),
        (hc.seats.clone(), 2000)
    );
    assert_eq!(
        store
            .finalize(&pa2.attempt_id, Some("pi_1"))
            .await
            .expect("again"),
        Finalized::Confirmed(order.clone())
    );
    assert_eq!(
        store.get_order(&order.order_id).await.expect("order"),
        Some(order.clone())
    );
    let hc_now = store.get_hold(&hc.hold_id).await.expect("get");
    assert_eq!(
        (hc_now.state, hc_now.order_id),
        (HoldState::Confirmed, Some(order.order_id.clone()))
    );
    assert_eq!(
        store
            .get_attempt(&pa2.attempt_id)
            .await
            .expect("attempt")
            .provider_payment_id
            .as_deref(),
        Some("pi_1")
    );
    assert_eq!(
        log_kinds(&store, hc.hold_id.as_str()).await,
        [
            "ReservationCreated",
            "PaymentInitiated",
            "PaymentDeclined",
            "PaymentInitiated",
            "ReservationConfirmed"
        ]
    );
    assert_eq!(
        outbox_kinds(&store, hc.hold_id.as_str()).await,
        ["authorize", "authorize", "capture", "session_ended"]
    );
    let sold: i64 = sqlx::query("select count(*) as n from sales where order_id = $1")
        .bind(order.order_id.as_str())
        .fetch_one(store.pool())
        .await
        .expect("sales")
        .get("n");
    assert_eq!(sold, 2);

    // Abandon: seats back on sale; a late finalize reports the loss instead of selling.
    let d = session(&store, &event).await;
    let hd = store.hold(&d, &seats(&["S00005"])).await.expect("hold d");
    let pd = store
        .begin_payment(&d, &hd.hold_id, "pm")
        .await
        .expect("begin d");
    assert_eq!(
        store.abandon(&pd.attempt_id).await.expect("abandon").state,
        AttemptState::Abandoned
    );
    assert_eq!(
        store.get_hold(&hd.hold_id).await.expect("get").state,
        HoldState::Abandoned
    );
    assert_eq!(
        store.finalize(&pd.attempt_id, None).await.expect("late"),
        Finalized::SeatLost
    );
    assert_eq!(
        log_kinds(&store, hd.hold_id.as_str()).await,
        ["ReservationCreated", "PaymentInitiated", "PaymentAbandoned"]
    );

    // General admission: any free seats of the section; sold out only when truly short.
    let e = session(&store, &event).await;
    let ga = store.hold_ga(&e, "GA", 3).await.expect("ga hold");
    assert_eq!(ga.seats.len(), 3);
    assert!(ga.seats.iter().all(|s| s.as_str().starts_with("GA-")));
    let f = session(&store, &event).await;
    assert_eq!(
        store.hold_ga(&f, "GA", 4).await.expect("ga 4").seats.len(),
        4
    );
    let g = session(&store, &event).await;
    assert!(matches!(
        store.hold_ga(&g, "GA", 4).await,
        Err(Error::SoldOut)
    ));

    // The map and counts see it all.
    let map = store.seat_map(&event).await.expect("map");
    let state_of = |id: &str| {
        map.iter()
            .find(|s| s.seat_id.as_str() == id)
            .map(|s| s.state.clone())
    };
    assert_eq!(state_of("S00003").as_deref(), Some("sold"));
    assert_eq!(state_of("S00005").as_deref(), Some("available"));
    let counts = store.counts(&event).await.expect("counts");
    assert_eq!(counts.seats("sold"), 2);
    assert_eq!(counts.attempts.get("confirmed"), Some(&1));

    expiry_chapter(&store).await;
    idempotency_chapter(&store).await;

    assert!(store.end_session(&g, "time_up").await.expect("end"));
    assert!(!store.end_session(&g, "time_up").await.expect("end twice"));
}

async fn expiry_chapter(store: &Store) {
    let event = seeded_event(store, 3, |e| e.hold_ttl_ms = Some(100)).await;
    let h = session(store, &event).await;
    let old = store
        .hold(&h, &seats(&["S00001", "S00002"]))
        .await
        .expect("short hold");
    tokio::time::sleep(Duration::from_millis(250)).await;
    // Expired by the clock, though nothing swept it.
    assert_eq!(
        store.get_hold(&old.hold_id).await.expect("get").state,
        HoldState::Expired
    );
    assert!(matches!(
        store.extend(&h, &old.hold_id).await,
        Err(Error::HoldExpired)
    ));
    assert!(matches!(
        store.begin_payment(&h, &old.hold_id, "pm").await,
        Err(Error::HoldExpired)
    ));
    assert_eq!(
        store
            .counts(&event)
            .await
            .expect("counts")
            .seats("available"),
        3
    );
    // A rival takes one seat over: the old hold is marked expired in that transaction.
    let rival = session(store, &event).await;
    store
        .hold(&rival, &seats(&["S00001"]))
        .await
        .expect("take over");
    assert_eq!(
        log_kinds(store, old.hold_id.as_str()).await,
        ["ReservationCreated", "HoldExpired"]
    );
    assert_eq!(
        outbox_kinds(store, old.hold_id.as_str()).await,
        ["session_ended"]
    );
    // The sweeper frees what is left of expired holds.
    let s = session(store, &event).await;
    store.hold(&s, &seats(&["S00003"])).await.expect("hold");
    tokio::time::sleep(Duration::from_millis(250)).await;
    let swept = store.sweep(100).await.expect("sweep");
    assert!(
        swept.holds_expired >= 2 && swept.seats_freed >= 2,
        "{swept:?}"
    );
    let raw: i64 =
        sqlx::query("select count(*) as n from seats where event_id = $1 and state = 'available'")
            .bind(event.as_str())
            .fetch_one(store.pool())
            .await
            .expect("count")
            .get("n");
    assert_eq!(raw, 3);
    // Its session ended with the hold: it must queue again.
    assert!(matches!(
        store.hold(&s, &seats(&["S00003"])).await,
        Err(Error::SessionEnded)
    ));
}

async fn idempotency_chapter(store: &Store) {
    let begin = |hash: &'static str| store.idempotency_begin("sess", "/hold", "k1", hash);
    assert_eq!(begin("h1").await.expect("first"), Idempotency::New);
    // A concurrent duplicate waits for the first answer.
    let waiting = tokio::spawn({
        let store = store.clone();
        async move { store.idempotency_begin("sess", "/hold", "k1", "h1").await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    store
        .idempotency_complete("sess", "/hold", "k1", 201, "{\"ok\":1}")
        .await
        .expect("complete");
    let replay = Idempotency::Replay {
        status: 201,
        body: "{\"ok\":1}".into(),
    };
    assert_eq!(waiting.await.expect("join").expect("dup"), replay);
    assert_eq!(begin("h1").await.expect("repeat"), replay);
    assert!(matches!(begin("h2").await, Err(Error::IdempotencyConflict)));
    // An abandoned claim frees the key.
    assert_eq!(
        store
            .idempotency_begin("sess", "/hold", "k2", "h")
            .await
            .expect("k2"),
        Idempotency::New
    );
    store
        .idempotency_abandon("sess", "/hold", "k2")
        .await
        .expect("abandon");
    assert_eq!(
        store
            .idempotency_begin("sess", "/hold", "k2", "h")
            .await
            .expect("k2 again"),
        Idempotency::New
    );
}
