//! The stadium map's "changed since a version": a page holds the seats it read and the version
//! it read them at, and applies only the seats stamped above it. Judged the way a page would
//! use it, on real PostgreSQL (stamps are transaction ids, which commit out of order) and on
//! SQLite (a count per event), while holds and releases race.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rand::seq::SliceRandom;
use reservation::testing::{
    fresh_postgres, fresh_postgres_with, fresh_sqlite, seeded_event, session,
};
use reservation::{Error, EventId, SeatId, SeatView, Store, StoreOptions};

fn seat(n: usize) -> SeatId {
    format!("S{n:05}").parse().expect("valid seat id")
}

fn taken(seats: &[SeatView]) -> BTreeMap<String, bool> {
    seats
        .iter()
        .map(|s| (s.seat_id.as_str().to_owned(), s.state != "available"))
        .collect()
}

/// The seats a page holding `since` is sent: those stamped above it.
fn changed_since(seats: &[SeatView], since: i64) -> Vec<String> {
    seats
        .iter()
        .filter(|s| s.availability_version > since)
        .map(|s| s.seat_id.as_str().to_owned())
        .collect()
}

/// Sessions blocked on a lock in the store's database right now.
async fn waiting_on_locks(store: &Store) -> i64 {
    sqlx::query_scalar(
        "select count(*) from pg_stat_activity \
         where datname = current_database() and wait_event_type = 'Lock'",
    )
    .fetch_one(store.pool())
    .await
    .expect("read pg_stat_activity")
}

/// A hold that got its transaction id first but commits after a later hold is still sent to a
/// page that read between the two commits. The first hold is made to wait after locking its
/// seat: an open transaction holds a live hold row of the same session, so the real hold waits
/// on the one-live-hold index until that transaction rolls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_hold_committing_after_a_newer_one_is_still_in_the_changes() {
    let store = fresh_postgres_with(StoreOptions {
        lock_timeout: Duration::from_secs(30),
        ..StoreOptions::default()
    })
    .await;
    let event = seeded_event(&store, 2, |_| {}).await;
    let (slow, quick) = (session(&store, &event).await, session(&store, &event).await);

    let mut blocker = store.pool().begin().await.expect("begin");
    sqlx::query(
        "insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, \
         total_cents, expires_at, max_expires_at) \
         values ('h-blocker', $1, $2, 'r-blocker', 'held', '[]', 0, \
                 now() + interval '1 hour', now() + interval '1 hour')",
    )
    .bind(event.as_str())
    .bind(slow.as_str())
    .execute(&mut *blocker)
    .await
    .expect("the blocking hold row");

    let first = {
        let store = store.clone();
        tokio::spawn(async move { store.hold(&slow, &[seat(1)]).await })
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while waiting_on_locks(&store).await == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first hold never reached the one-live-hold index"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The later hold does not wait for the first: they share only the event.
    tokio::time::timeout(Duration::from_secs(10), store.hold(&quick, &[seat(2)]))
        .await
        .expect("a hold of another seat waits for no other hold")
        .expect("the later hold wins its seat");

    // A page reads now: version first, then the seats.
    let version = store.availability_version(&event).await.expect("version");
    let read = store.seat_map(&event).await.expect("seat map");
    assert_eq!(
        taken(&read).into_iter().collect::<Vec<_>>(),
        vec![("S00001".to_owned(), false), ("S00002".to_owned(), true)]
    );
    let newest_seen = read
        .iter()
        .map(|s| s.availability_version)
        .max()
        .unwrap_or(0);

    blocker.rollback().await.expect("roll back the blocker");
    first
        .await
        .expect("task")
        .expect("the first hold wins its seat once unblocked");

    let after = store.seat_map(&event).await.expect("seat map");
    assert_eq!(
        changed_since(&after, version),
        vec!["S00001".to_owned(), "S00002".to_owned()],
        "the first hold's seat is sent to the page (the second again, harmlessly)"
    );
    // The control: the first hold is stamped below the second although it committed later,
    // so a version taken as the newest stamp the page saw would never send it.
    assert_eq!(changed_since(&after, newest_seen), Vec::<String>::new());
}

const SEATS: usize = 24;
const WRITERS: usize = 12;
const ROUNDS: usize = 30;

/// Writers hold 1–3 random seats and release them; a reader keeps a page's copy of the map
/// from the changes since its version alone, and after every read that copy must equal the
/// seats the same read saw.
async fn a_page_copy_stays_exact(store: Store) {
    let event = seeded_event(&store, SEATS as u32, |_| {}).await;
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (store, event, done) = (store.clone(), event.clone(), done.clone());
        tokio::spawn(async move { read_like_a_page(&store, &event, &done).await })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|_| {
            let (store, event) = (store.clone(), event.clone());
            tokio::spawn(async move {
                let mut won = 0;
                for _ in 0..ROUNDS {
                    // A release ends its buyer's session: each round is a new buyer.
                    let s = session(&store, &event).await;
                    let mut all: Vec<usize> = (1..=SEATS).collect();
                    all.shuffle(&mut rand::rng());
                    let pick: Vec<SeatId> = all[..rand::random_range(1..=3)]
                        .iter()
                        .map(|&n| seat(n))
                        .collect();
                    match store.hold(&s, &pick).await {
                        Ok(hold) => {
                            won += 1;
                            let pause = rand::random_range(0..4);
                            tokio::time::sleep(Duration::from_millis(pause)).await;
                            store.release(&s, &hold.hold_id).await.expect("release");
                        }
                        Err(Error::SeatUnavailable { .. }) => {}
                        Err(other) => panic!("only SeatUnavailable may surface, got {other:?}"),
                    }
                }
                won
            })
        })
        .collect();
    let mut won = 0;
    for w in writers {
        won += w.await.expect("writer");
    }
    done.store(true, Ordering::SeqCst);
    let (reads, mismatches) = reader.await.expect("reader");
    assert_eq!(mismatches, Vec::<String>::new());
    assert!(won >= ROUNDS, "the writers changed seats ({won} holds won)");
    assert!(
        reads >= 10,
        "the reader read while they did ({reads} reads)"
    );
}

/// Reads until `done` and once more; answers the reads made and every seat whose copy
/// differed from the read it was brought up to date with.
async fn read_like_a_page(
    store: &Store,
    event: &EventId,
    done: &AtomicBool,
) -> (usize, Vec<String>) {
    let mut since = store.availability_version(event).await.expect("version");
    let mut copy = taken(&store.seat_map(event).await.expect("seat map"));
    let (mut reads, mut mismatches) = (0, Vec::new());
    loop {
        let last = done.load(Ordering::SeqCst);
        let version = store.availability_version(event).await.expect("version");
        let read = store.seat_map(event).await.expect("seat map");
        for s in read.iter().filter(|s| s.availability_version > since) {
            copy.insert(s.seat_id.as_str().to_owned(), s.state != "available");
        }
        for (id, is_taken) in taken(&read) {
            if copy.get(&id) != Some(&is_taken) {
                mismatches.push(format!(
                    "read {reads}: {id} taken={is_taken}, copy says not"
                ));
                copy.insert(id, is_taken);
            }
        }
        since = since.max(version);
        reads += 1;
        if last {
            return (reads, mismatches);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_holds_keep_a_page_copy_exact_on_postgres() {
    a_page_copy_stays_exact(fresh_postgres().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_holds_keep_a_page_copy_exact_on_sqlite() {
    a_page_copy_stays_exact(fresh_sqlite().await).await;
}
