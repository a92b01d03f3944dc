//! The money path under a real race: `finalize` (the provider authorized) against `abandon`
//! (the policy release at `abandon_at`) and against `decline`, started at the same instant
//! round after round. Whoever commits first decides; the loser changes nothing. Judged from
//! the rows after every round, plus the control proving the judge catches the interleaving an
//! unconditional close allows (a confirmed order whose attempt says `abandoned`).

mod common;

use std::sync::Arc;

use common::{log_violations, row_violations};
use reservation::testing::{fresh_postgres, fresh_sqlite, seeded_event, session};
use reservation::{AttemptId, AttemptState, EventId, Finalized, PaymentAttempt, SeatId, Store};
use tokio::sync::Barrier;

fn seat(n: usize) -> SeatId {
    format!("S{n:05}").parse().expect("valid seat id")
}

/// A session holding seat `n` and paying for it: the attempt a finalize and a close race over.
async fn paying(store: &Store, event: &EventId, n: usize) -> PaymentAttempt {
    let s = session(store, event).await;
    let hold = store.hold(&s, &[seat(n)]).await.expect("hold the seat");
    store
        .begin_payment(&s, &hold.hold_id, "pm_card_visa")
        .await
        .expect("begin payment")
}

async fn scalar_i64(store: &Store, sql: &'static str, attempt: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(sql)
        .bind(attempt)
        .fetch_one(store.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Everything wrong about one attempt's money and seats, read from the rows.
/// An order confirmed ⇒ the attempt is confirmed or captured, its capture queued, every seat
/// of the hold sold to that order, nothing abandoned or voided. No order ⇒ no seat sold to
/// the attempt's hold and the attempt final without a sale.
async fn money_violations(store: &Store, attempt: &AttemptId) -> Vec<String> {
    let a = attempt.as_str();
    let mut out = Vec::new();
    let state: String =
        sqlx::query_scalar("select state from payment_attempts where attempt_id = $1")
            .bind(a)
            .fetch_one(store.pool())
            .await
            .expect("read the attempt");
    let order: Option<(String, String)> =
        sqlx::query_as("select order_id, status from orders where attempt_id = $1")
            .bind(a)
            .fetch_optional(store.pool())
            .await
            .expect("read the order");
    let hold_seats = scalar_i64(
        store,
        "select count(*) from seats s join payment_attempts p \
         on p.event_id = s.event_id and p.hold_id = s.hold_id where p.attempt_id = $1",
        a,
    )
    .await;
    let abandoned_logs = scalar_i64(
        store,
        "select count(*) from reservation_events where attempt_id = $1 \
         and kind in ('PaymentAbandoned', 'PaymentDeclined')",
        a,
    )
    .await;
    let compensations = scalar_i64(
        store,
        "select count(*) from outbox where attempt_id = $1 and kind in ('void', 'refund')",
        a,
    )
    .await;
    match order {
        Some((order_id, status)) => {
            if status != "confirmed" {
                out.push(format!("{a}: order {order_id} is {status}"));
            }
            if state != "confirmed" && state != "captured" {
                out.push(format!(
                    "{a}: order {order_id} confirmed but the attempt is {state}"
                ));
            }
            let sold = sqlx::query_scalar::<_, i64>(
                "select count(*) from seats where order_id = $1 and state = 'sold'",
            )
            .bind(&order_id)
            .fetch_one(store.pool())
            .await
            .expect("count sold seats");
            let sales =
                sqlx::query_scalar::<_, i64>("select count(*) from sales where order_id = $1")
                    .bind(&order_id)
                    .fetch_one(store.pool())
                    .await
                    .expect("count sales");
            if sold == 0 || sold != sales || sold != hold_seats {
                out.push(format!(
                    "{a}: order {order_id}: {sold} seats sold, {sales} sales, hold lists {hold_seats}"
                ));
            }
            let captures = scalar_i64(
                store,
                "select count(*) from outbox where attempt_id = $1 and kind = 'capture'",
                a,
            )
            .await;
            if captures != 1 {
                out.push(format!(
                    "{a}: {captures} capture jobs for a confirmed order"
                ));
            }
            if abandoned_logs > 0 || compensations > 0 {
                out.push(format!(
                    "{a}: a confirmed order was also abandoned/declined ({abandoned_logs}) \
                     or given back ({compensations})"
                ));
            }
        }
        None => {
            let sold = scalar_i64(
                store,
                "select count(*) from seats s join payment_attempts p \
                 on p.event_id = s.event_id and p.hold_id = s.hold_id \
                 where p.attempt_id = $1 and s.state = 'sold'",
                a,
            )
            .await;
            if sold > 0 {
                out.push(format!("{a}: {sold} seats sold without an order"));
            }
            if state != "abandoned" && state != "declined" {
                out.push(format!("{a}: no order yet the attempt is {state}"));
            }
        }
    }
    out
}

#[derive(Clone, Copy, Debug)]
enum Close {
    Abandon,
    Decline,
}

/// One round: finalize and `close` released by one barrier, in a random spawn order.
/// Returns whether the sale won, after checking the two answers agree with each other.
async fn race_once(store: &Store, attempt: PaymentAttempt, close: Close) -> bool {
    let barrier = Arc::new(Barrier::new(2));
    let id = attempt.attempt_id.clone();
    let fin = {
        let (store, barrier, id) = (store.clone(), barrier.clone(), id.clone());
        async move {
            barrier.wait().await;
            store.finalize(&id, Some(&format!("pi_{id}"))).await
        }
    };
    let shut = {
        let (store, barrier, id) = (store.clone(), barrier.clone(), id.clone());
        async move {
            barrier.wait().await;
            match close {
                Close::Abandon => store.abandon(&id).await,
                Close::Decline => store.decline(&id, "card_declined").await,
            }
        }
    };
    let (fin, shut) = if rand::random::<bool>() {
        let f = tokio::spawn(fin);
        let c = tokio::spawn(shut);
        (f.await, c.await)
    } else {
        let c = tokio::spawn(shut);
        let f = tokio::spawn(fin);
        (f.await, c.await)
    };
    let fin = fin.expect("finalize task").expect("finalize");
    let shut = shut.expect("close task").expect("close");
    let closed_state = match close {
        Close::Abandon => AttemptState::Abandoned,
        Close::Decline => AttemptState::Declined,
    };
    match fin {
        Finalized::Confirmed(order) => {
            assert_eq!(order.attempt_id, id);
            assert!(
                matches!(shut.state, AttemptState::Confirmed | AttemptState::Captured),
                "{id}: the sale won, yet {close:?} answered {:?}",
                shut.state
            );
            true
        }
        Finalized::SeatLost => {
            assert_eq!(
                shut.state, closed_state,
                "{id}: the sale lost, yet {close:?} answered {:?}",
                shut.state
            );
            false
        }
    }
}

/// `rounds` races of finalize against `close`, `parallel` rounds at a time. Returns the event.
async fn race(store: &Store, close: Close, rounds: usize, parallel: usize) -> EventId {
    let event = seeded_event(store, rounds as u32, |_| {}).await;
    let (mut sold, mut closed) = (0, 0);
    for batch in (1..=rounds).collect::<Vec<_>>().chunks(parallel) {
        let mut tasks = Vec::new();
        for &n in batch {
            let (store, event) = (store.clone(), event.clone());
            tasks.push(tokio::spawn(async move {
                let attempt = paying(&store, &event, n).await;
                let id = attempt.attempt_id.clone();
                let won = race_once(&store, attempt, close).await;
                let breaches = money_violations(&store, &id).await;
                assert_eq!(breaches, Vec::<String>::new(), "round {n} ({close:?})");
                won
            }));
        }
        for t in tasks {
            if t.await.expect("round") {
                sold += 1;
            } else {
                closed += 1;
            }
        }
    }
    println!("finalize vs {close:?}: sale won {sold}, close won {closed} of {rounds}");
    assert_eq!(sold + closed, rounds);
    event
}

/// The seat-ownership judges shared with the hold races (PostgreSQL rows and the event log).
async fn owners_judged(store: &Store, event: &EventId) {
    assert_eq!(row_violations(store, event).await, Vec::<String>::new());
    assert_eq!(log_violations(store, event).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_finalize_versus_abandon_never_leaves_a_sale_abandoned() {
    let store = fresh_postgres().await;
    let event = race(&store, Close::Abandon, 200, 10).await;
    owners_judged(&store, &event).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_finalize_versus_decline_never_leaves_a_sale_declined() {
    let store = fresh_postgres().await;
    let event = race(&store, Close::Decline, 200, 10).await;
    owners_judged(&store, &event).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_finalize_versus_abandon_and_decline() {
    let store = fresh_sqlite().await;
    race(&store, Close::Abandon, 60, 4).await;
    race(&store, Close::Decline, 60, 4).await;
}

/// The control: the interleaving an unconditional close allowed, played in order (the close
/// reads the attempt open, a finalize commits, the close then writes `abandoned` without a
/// condition, as abandon did). The judge must report it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_an_unconditional_abandon_after_a_sale_is_caught() {
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 1, |_| {}).await;
    let attempt = paying(&store, &event, 1).await;
    let id = attempt.attempt_id.clone();
    let read: String =
        sqlx::query_scalar("select state from payment_attempts where attempt_id = $1")
            .bind(id.as_str())
            .fetch_one(store.pool())
            .await
            .expect("the close reads the attempt");
    assert_eq!(read, "pending", "the close saw an open attempt");
    assert!(matches!(
        store
            .finalize(&id, Some("pi_race"))
            .await
            .expect("finalize"),
        Finalized::Confirmed(_)
    ));
    assert_eq!(money_violations(&store, &id).await, Vec::<String>::new());
    let mut tx = store.pool().begin().await.expect("begin");
    for sql in [
        "update seats set state = 'available', hold_id = null, hold_expires_at = null, \
         payment_attempt_id = null where payment_attempt_id = $1 and state = 'paying'",
        "update payment_attempts set state = 'abandoned' where attempt_id = $1",
        "insert into reservation_events (event_id, kind, attempt_id) \
         select event_id, 'PaymentAbandoned', attempt_id from payment_attempts where attempt_id = $1",
    ] {
        sqlx::query(sql)
            .bind(id.as_str())
            .execute(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    tx.commit().await.expect("commit the naive close");
    let breaches = money_violations(&store, &id).await;
    assert!(
        breaches
            .iter()
            .any(|b| b.contains("the attempt is abandoned")),
        "the judge must catch a confirmed order marked abandoned: {breaches:?}"
    );
    // The store's own abandon, run now, changes nothing: the sale stands.
    sqlx::query("update payment_attempts set state = 'confirmed' where attempt_id = $1")
        .bind(id.as_str())
        .execute(store.pool())
        .await
        .expect("restore");
    let after = store.abandon(&id).await.expect("abandon after the sale");
    assert_eq!(after.state, AttemptState::Confirmed);
}
