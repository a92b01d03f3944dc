#![allow(clippy::unwrap_used)] // a test: a panic is the failure report
//! Admission's durable state on both databases: live controls with a version, session counts,
//! the checkpoint that only moves forward within an epoch, generated settings kept once.

use reservation::testing::{fresh_postgres, fresh_sqlite, group_counts, seeded_event, session};
use reservation::{AdmissionPatch, EndedHolds, EventId, QueueCheckpoint, Store};

async fn story(store: Store) {
    let event = seeded_event(&store, 4, |e| {
        e.rate_per_min = 120;
        e.max_active = 7;
    })
    .await;

    let control = store
        .admission_control(&event)
        .await
        .unwrap()
        .expect("the event has controls");
    assert_eq!(
        (
            control.rate_per_min,
            control.max_active,
            control.paused,
            control.closed
        ),
        (120, 7, false, false)
    );
    let unknown = "nope".parse().unwrap();
    assert!(store.admission_control(&unknown).await.unwrap().is_none());

    let patched = store
        .update_admission_control(
            &event,
            &AdmissionPatch {
                rate_per_min: Some(600),
                paused: Some(true),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (patched.rate_per_min, patched.max_active, patched.paused),
        (600, 7, true)
    );
    assert_eq!(
        patched.version,
        control.version + 1,
        "every change bumps the version"
    );
    assert!(matches!(
        store
            .update_admission_control(
                &unknown,
                &AdmissionPatch {
                    paused: Some(true),
                    ..AdmissionPatch::default()
                }
            )
            .await,
        Err(reservation::Error::EventNotFound)
    ));

    assert_eq!(store.active_sessions(&event).await.unwrap(), 0);
    let first = session(&store, &event).await;
    session(&store, &event).await;
    assert_eq!(store.active_sessions(&event).await.unwrap(), 2);
    assert_eq!(store.admitted_total(&event).await.unwrap(), 2);
    store.end_session(&first, "released").await.unwrap();
    assert_eq!(
        store.active_sessions(&event).await.unwrap(),
        1,
        "an ended session frees its slot"
    );
    assert_eq!(
        store.admitted_total(&event).await.unwrap(),
        2,
        "but still counts as admitted"
    );

    let seats = store.seat_availability(&event).await.unwrap();
    assert_eq!((seats.available, seats.held_or_paying), (4, 0));
    // A hold released gives its seats back at once.
    let holder = session(&store, &event).await;
    let seat: reservation::SeatId = "S00001".parse().unwrap();
    let hold = store.hold(&holder, &[seat]).await.unwrap();
    let seats = store.seat_availability(&event).await.unwrap();
    assert_eq!(
        (seats.available, seats.held_or_paying, seats.live_holds),
        (3, 1, 1)
    );
    store.release(&holder, &hold.hold_id).await.unwrap();
    let seats = store.seat_availability(&event).await.unwrap();
    assert_eq!(seats.available, 4);

    // The log of offers answers whether a place was ever offered, a priority place (numbered
    // from 2^50) included: the judge of a ticket that comes back after a queue loss.
    let priority_place = (1u64 << 50) + 2;
    store
        .record_offers(&event, &[3, priority_place], 20_000)
        .await
        .unwrap();
    for (place, offered) in [(3, true), (4, false), (priority_place as i64, true)] {
        assert_eq!(
            store.was_offered(&event, place).await.unwrap(),
            offered,
            "place {place}"
        );
    }

    assert!(store.load_checkpoint(&event).await.unwrap().is_none());
    let cp = |epoch: &str, join_seq, served, prequeue_through| QueueCheckpoint {
        epoch: epoch.into(),
        join_seq,
        served,
        fifo_through: join_seq - 1,
        prequeue_through,
        priority_through: None,
    };
    store
        .save_checkpoint(&event, &cp("e1", 10, 4, Some(0.625)))
        .await
        .unwrap();
    store
        .save_checkpoint(&event, &cp("e1", 8, 3, None))
        .await
        .unwrap();
    assert_eq!(
        store.load_checkpoint(&event).await.unwrap(),
        Some(cp("e1", 10, 4, Some(0.625))),
        "a late writer cannot pull it back, nor forget the pre-queue frontier"
    );
    store
        .save_checkpoint(&event, &cp("e1", 10, 4, Some(0.75)))
        .await
        .unwrap();
    assert_eq!(
        store.load_checkpoint(&event).await.unwrap(),
        Some(cp("e1", 10, 4, Some(0.75))),
        "the pre-queue frontier moves forward"
    );
    // The priority lane's frontier: a place numbered past 2^50 is kept exactly, and only moves
    // forward within the epoch.
    let priority = |through: Option<f64>| QueueCheckpoint {
        priority_through: through,
        ..cp("e1", 10, 4, Some(0.75))
    };
    let place = (1u64 << 50) as f64 + 7.0;
    for through in [Some(0.5), Some(place), Some(place - 3.0), None] {
        store
            .save_checkpoint(&event, &priority(through))
            .await
            .unwrap();
    }
    assert_eq!(
        store.load_checkpoint(&event).await.unwrap(),
        Some(priority(Some(place))),
        "the priority lane's frontier moves forward only, to the place exactly"
    );
    store
        .save_checkpoint(&event, &cp("e2", 2, 1, None))
        .await
        .unwrap();
    assert_eq!(
        store.load_checkpoint(&event).await.unwrap(),
        Some(cp("e2", 2, 1, None)),
        "a new epoch starts over"
    );

    assert_eq!(
        store.setting_or_insert("k", "first").await.unwrap(),
        "first"
    );
    assert_eq!(
        store.setting_or_insert("k", "second").await.unwrap(),
        "first",
        "a generated value is kept"
    );
}

/// One hold of each ending on `event`: released, sold, left unpaid, and paying (unresolved).
async fn every_ending(store: &Store, event: &EventId) {
    let take = |seat: &'static str| async move {
        let holder = session(store, event).await;
        let hold = store.hold(&holder, &[seat.parse().unwrap()]).await.unwrap();
        (holder, hold.hold_id)
    };
    let (released_by, released) = take("S00001").await;
    store.release(&released_by, &released).await.unwrap();
    let (buyer, bought) = take("S00002").await;
    let paid = store
        .begin_payment(&buyer, &bought, "pm_card_visa")
        .await
        .unwrap();
    store
        .finalize(&paid.attempt_id, Some(&format!("pi_{}", event.as_str())))
        .await
        .unwrap();
    // Left unpaid: its seat comes back when its time runs out, before any sweep marks it.
    take("S00003").await;
    let (payer, paying) = take("S00004").await;
    store
        .begin_payment(&payer, &paying, "pm_card_visa")
        .await
        .unwrap();
}

/// How the chance of a seat learns the share of held seats that come back: holds are judged
/// once a hold's life has passed since they were taken, as they ended, so a quick sale is not
/// counted before the unpaid holds beside it have had the time to run out.
async fn ended_holds(store: Store) {
    // Long enough for every step of `every_ending` on a loaded machine: a hold must still be
    // live when its payment begins.
    const LIFE_MS: u64 = 2_000;
    let young = seeded_event(&store, 4, |e| e.hold_ttl_s = 300).await;
    let old = seeded_event(&store, 4, |e| e.hold_ttl_ms = Some(LIFE_MS as i64)).await;
    every_ending(&store, &young).await;
    every_ending(&store, &old).await;
    tokio::time::sleep(std::time::Duration::from_millis(LIFE_MS + 300)).await;
    assert_eq!(
        store.ended_holds(&young).await.unwrap(),
        EndedHolds {
            sold: 0,
            returned: 0
        },
        "a sale and a release younger than a hold's life are not judged while the unpaid hold \
         beside them runs"
    );
    assert_eq!(
        store.ended_holds(&old).await.unwrap(),
        EndedHolds {
            sold: 1,
            returned: 2
        },
        "a hold's life later: the sale, the release and the hold that ran out; not the payment \
         still resolving"
    );
    assert_eq!(
        group_counts(&store, "holds", "state").await.get("held"),
        Some(&2),
        "the hold that ran out is judged given back before the sweeper marks it"
    );
}

#[tokio::test]
async fn ended_holds_on_postgres() {
    ended_holds(fresh_postgres().await).await;
}

#[tokio::test]
async fn ended_holds_on_sqlite() {
    ended_holds(fresh_sqlite().await).await;
}

#[tokio::test]
async fn admission_state_on_postgres() {
    story(fresh_postgres().await).await;
}

#[tokio::test]
async fn admission_state_on_sqlite() {
    story(fresh_sqlite().await).await;
}
