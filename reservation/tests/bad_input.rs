//! Bad input: each case gets its typed error and changes no row (a snapshot of every table the
//! store writes is compared before and after), on PostgreSQL and SQLite.

use reservation::testing::{fresh_postgres, fresh_sqlite, seeded_event, session};
use reservation::{AttemptId, Error, EventId, HoldId, NewSeat, SeatId, SessionId, Store, TicketId};
use sqlx::Row;

#[tokio::test]
async fn bad_input_on_postgres() {
    bad_input(fresh_postgres().await).await;
}

#[tokio::test]
async fn bad_input_on_sqlite() {
    bad_input(fresh_sqlite().await).await;
}

const SNAPSHOT: &[&str] = &[
    "select 'seat ' || seat_id || ' ' || state || ' ' || coalesce(hold_id, '-') || ' ' || \
     coalesce(payment_attempt_id, '-') || ' v' || cast(version as text) || ' ' || \
     coalesce(cast(hold_expires_at as text), '-') as r from seats",
    "select 'hold ' || hold_id || ' ' || state || ' ' || cast(expires_at as text) || ' ' || \
     coalesce(last_payment_error, '-') as r from holds",
    "select 'session ' || session_id || ' ' || coalesce(cast(ended_at as text), 'live') as r from admission_sessions",
    "select 'attempt ' || attempt_id || ' ' || state as r from payment_attempts",
    "select 'order ' || order_id as r from orders",
    "select 'sale ' || seat_id as r from sales",
    "select 'event ' || event_id as r from events",
    "select 'idem ' || key || ' ' || body_hash || ' ' || coalesce(cast(status_code as text), '-') as r from idempotency_keys",
    "select 'outbox ' || kind || ' ' || cast(id as text) as r from outbox",
    "select 'log ' || kind || ' ' || cast(id as text) as r from reservation_events",
];

async fn snapshot(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for q in SNAPSHOT {
        for r in sqlx::query(*q)
            .fetch_all(store.pool())
            .await
            .expect("snapshot")
        {
            out.push(r.get::<String, _>("r"));
        }
    }
    out.sort();
    out
}

fn ids(list: &[&str]) -> Vec<SeatId> {
    list.iter()
        .map(|s| s.parse().expect("valid seat id"))
        .collect()
}

async fn bad_input(store: Store) {
    let event = seeded_event(&store, 10, |e| e.max_seats_per_hold = 4).await;
    let (a, b) = (session(&store, &event).await, session(&store, &event).await);
    let held = store.hold(&a, &ids(&["S00001"])).await.expect("hold");
    assert_eq!(
        store
            .idempotency_begin("scope", "/hold", "k", "h1")
            .await
            .expect("idem"),
        reservation::Idempotency::New
    );
    store
        .idempotency_complete("scope", "/hold", "k", 201, "{}")
        .await
        .expect("complete");
    let nobody: SessionId = "s_nobody".parse().expect("id");
    let no_event: EventId = "no-such-event".parse().expect("id");
    let before = snapshot(&store).await;

    macro_rules! refused {
        ($name:literal, $call:expr, $pat:pat) => {{
            let got = $call.await;
            assert!(matches!(got, Err($pat)), "{}: got {:?}", $name, got);
            assert_eq!(snapshot(&store).await, before, "{} changed rows", $name);
        }};
    }
    refused!(
        "unknown event",
        store.get_event(&no_event),
        Error::EventNotFound
    );
    refused!(
        "seats for unknown event",
        store.add_seats(
            &no_event,
            &[NewSeat {
                seat_id: "X".parse().expect("id"),
                section: "A".into(),
                row_label: String::new(),
                number: 1,
                price_cents: 1,
            }]
        ),
        Error::EventNotFound
    );
    let ticket: TicketId = "t-x".parse().expect("id");
    refused!(
        "session for unknown event",
        store.open_session(&no_event, &ticket, None, 60),
        Error::EventNotFound
    );
    refused!(
        "unknown session",
        store.hold(&nobody, &ids(&["S00002"])),
        Error::SessionNotFound
    );
    match store.hold(&b, &ids(&["S00002", "NOPE"])).await {
        Err(Error::UnknownSeats { seats }) => assert_eq!(seats, ids(&["NOPE"])),
        other => panic!("unknown seat: got {other:?}"),
    }
    assert_eq!(snapshot(&store).await, before, "unknown seat changed rows");
    refused!("empty list", store.hold(&b, &[]), Error::NoSeats);
    refused!(
        "duplicate seats",
        store.hold(&b, &ids(&["S00002", "S00003", "S00002"])),
        Error::DuplicateSeats
    );
    refused!(
        "too many seats",
        store.hold(
            &b,
            &ids(&["S00002", "S00003", "S00004", "S00005", "S00006"])
        ),
        Error::TooManySeats { max: 4 }
    );
    refused!(
        "held seat",
        store.hold(&b, &ids(&["S00001", "S00002"])),
        Error::SeatUnavailable { .. }
    );
    refused!("GA zero", store.hold_ga(&b, "A", 0), Error::NoSeats);
    refused!(
        "GA too many",
        store.hold_ga(&b, "A", 5),
        Error::TooManySeats { .. }
    );
    refused!(
        "GA unknown section",
        store.hold_ga(&b, "nowhere", 1),
        Error::SoldOut
    );
    refused!(
        "extend, wrong owner",
        store.extend(&b, &held.hold_id),
        Error::NotOwner
    );
    refused!(
        "release, wrong owner",
        store.release(&b, &held.hold_id),
        Error::NotOwner
    );
    refused!(
        "pay, wrong owner",
        store.begin_payment(&b, &held.hold_id, "pm"),
        Error::NotOwner
    );
    refused!(
        "second live hold",
        store.hold(&a, &ids(&["S00002"])),
        Error::HoldLimit
    );
    let no_hold: HoldId = "h_none".parse().expect("id");
    refused!(
        "unknown hold",
        store.extend(&a, &no_hold),
        Error::HoldNotFound
    );
    refused!(
        "unknown receipt",
        store.get_hold_by_receipt("nope"),
        Error::HoldNotFound
    );
    let no_attempt: AttemptId = "pa_none".parse().expect("id");
    refused!(
        "unknown attempt",
        store.finalize(&no_attempt, None),
        Error::AttemptNotFound
    );
    refused!(
        "unknown attempt decline",
        store.decline(&no_attempt, "x"),
        Error::AttemptNotFound
    );
    refused!(
        "reused idempotency key",
        store.idempotency_begin("scope", "/hold", "k", "h2"),
        Error::IdempotencyConflict
    );
    assert!("bad seat!".parse::<SeatId>().is_err());
    assert!("".parse::<EventId>().is_err());
}
