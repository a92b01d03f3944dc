//! The organizer's numbers, bounded in the store itself (whatever the caller checked), and a
//! duplicate event id decided by the primary key. On PostgreSQL and SQLite.

use std::sync::Arc;
use std::time::{Duration, Instant};

use reservation::testing::{fresh_postgres, fresh_sqlite, seeded_event};
use reservation::{AdmissionPatch, Error, EventId, NewEvent, NewSeat, Store, limits};
use tokio::sync::Barrier;

fn new_id(prefix: &str) -> EventId {
    format!("{prefix}-{}", uuid::Uuid::now_v7().simple())
        .parse()
        .expect("valid event id")
}

async fn a_huge_block_is_refused_before_any_seat_is_built(store: &Store) {
    let event = seeded_event(store, 1, |_| {}).await;
    let started = Instant::now();
    let refused = store.generate_seats(&event, "A", 65_536, 65_536, 100).await;
    assert!(
        matches!(
            refused,
            Err(Error::OutOfRange {
                field: "rows × per_row",
                max: limits::SEATS_PER_REQUEST,
                ..
            })
        ),
        "{refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "refused at once: {:?}",
        started.elapsed()
    );
    for (rows, per_row, price) in [(0, 5, 100), (5, 0, 100), (317, 317, 100), (1, 1, -1)] {
        assert!(
            matches!(
                store
                    .generate_seats(&event, "A", rows, per_row, price)
                    .await,
                Err(Error::OutOfRange { .. })
            ),
            "{rows} × {per_row} at {price}"
        );
    }
    let pricey = NewSeat {
        seat_id: "X1".parse().expect("seat id"),
        section: "A".into(),
        row_label: String::new(),
        number: 1,
        price_cents: limits::PRICE_CENTS + 1,
    };
    assert!(matches!(
        store.add_seats(&event, &[pricey]).await,
        Err(Error::OutOfRange {
            field: "price_cents",
            ..
        })
    ));
    assert!(matches!(
        store.add_seats(&event, &[]).await,
        Err(Error::OutOfRange { field: "seats", .. })
    ));
    assert_eq!(store.seat_count(&event).await.expect("count"), 1);
    assert_eq!(
        store
            .generate_seats(&event, "B", 2, 3, 100)
            .await
            .expect("a sane block"),
        6
    );
}

/// One setting pushed past its bound.
type Tune = fn(&mut NewEvent);

async fn event_settings_are_bounded_and_consistent(store: &Store) {
    let tries: [(&str, Tune); 5] = [
        ("rate", |e| e.rate_per_min = limits::RATE_PER_MIN + 1),
        ("cap", |e| e.max_active = -1),
        ("hold", |e| e.max_hold_s = limits::HOLD_S + 1),
        ("seats", |e| e.max_seats_per_hold = 0),
        ("offer", |e| e.offer_s = i64::MAX),
    ];
    for (name, tune) in tries {
        let mut e = NewEvent::new(new_id("ev-range"), name);
        tune(&mut e);
        assert!(
            matches!(store.create_event(e).await, Err(Error::OutOfRange { .. })),
            "{name}"
        );
    }
    let mut short = NewEvent::new(new_id("ev-short"), "short session");
    short.session_s = short.max_hold_s + short.abandon_s - 1;
    assert!(matches!(
        store.create_event(short).await,
        Err(Error::Inconsistent(_))
    ));
    let event = seeded_event(store, 1, |_| {}).await;
    let patch = |f: fn(&mut AdmissionPatch)| {
        let mut p = AdmissionPatch::default();
        f(&mut p);
        p
    };
    assert!(matches!(
        store
            .update_admission_control(&event, &AdmissionPatch::default())
            .await,
        Err(Error::NothingToChange)
    ));
    // The defaults: max_hold_s 900 + abandon_s 600.
    assert!(matches!(
        store
            .update_admission_control(&event, &patch(|p| p.session_s = Some(1_499)))
            .await,
        Err(Error::Inconsistent(_))
    ));
    assert!(matches!(
        store
            .update_admission_control(&event, &patch(|p| p.offer_s = Some(0)))
            .await,
        Err(Error::OutOfRange {
            field: "offer_s",
            ..
        })
    ));
    assert!(matches!(
        store
            .update_admission_control(&new_id("ev-none"), &patch(|p| p.session_s = Some(2_000)))
            .await,
        Err(Error::EventNotFound)
    ));
    let before = store
        .admission_control(&event)
        .await
        .expect("read")
        .expect("controls");
    let done = store
        .update_admission_control(
            &event,
            &patch(|p| {
                p.session_s = Some(1_500);
                p.rate_per_min = Some(0);
            }),
        )
        .await
        .expect("a sane change");
    assert_eq!((done.session_s, done.rate_per_min), (1_500, 0));
    assert_eq!(done.version, before.version + 1, "refusals changed nothing");
}

async fn two_creates_of_one_id_let_exactly_one_in(store: &Store) {
    for round in 0..20 {
        let id = new_id("ev-twice");
        let barrier = Arc::new(Barrier::new(2));
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let (store, barrier, id) = (store.clone(), barrier.clone(), id.clone());
                tokio::spawn(async move {
                    barrier.wait().await;
                    store.create_event(NewEvent::new(id, "Twice")).await
                })
            })
            .collect();
        let mut answers = Vec::new();
        for t in tasks {
            answers.push(t.await.expect("create task"));
        }
        let made = answers.iter().filter(|a| a.is_ok()).count();
        let taken = answers
            .iter()
            .filter(|a| matches!(a, Err(Error::EventExists)))
            .count();
        assert_eq!((made, taken), (1, 1), "round {round}: {answers:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_huge_block_is_refused_before_any_seat_is_built() {
    a_huge_block_is_refused_before_any_seat_is_built(&fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_huge_block_is_refused_before_any_seat_is_built() {
    a_huge_block_is_refused_before_any_seat_is_built(&fresh_sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_event_settings_are_bounded_and_consistent() {
    event_settings_are_bounded_and_consistent(&fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_event_settings_are_bounded_and_consistent() {
    event_settings_are_bounded_and_consistent(&fresh_sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_two_creates_of_one_id_let_exactly_one_in() {
    two_creates_of_one_id_let_exactly_one_in(&fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_two_creates_of_one_id_let_exactly_one_in() {
    two_creates_of_one_id_let_exactly_one_in(&fresh_sqlite().await).await;
}
