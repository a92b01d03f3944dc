//! Judges for the race tests: the invariants of DESIGN §5 checked from the rows and by
//! replaying the event log, plus a deliberately naive hold that the judges must catch.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use reservation::{EventId, SeatId, SessionId, Store};
use sqlx::Row;

/// Replays the event log in order: a seat gets a second owner while the first still owns it
/// (held, paying or sold) → a violation. Returns them all.
pub async fn log_violations(store: &Store, event: &EventId) -> Vec<String> {
    let rows = sqlx::query(
        "select kind, hold_id, seats from reservation_events where event_id = $1 order by id",
    )
    .bind(event.as_str())
    .fetch_all(store.pool())
    .await
    .expect("read the event log");
    let mut seats_of: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Vec::new();
    for r in rows {
        let kind: String = r.get("kind");
        let hold: Option<String> = r.get("hold_id");
        let seats: Option<String> = r.get("seats");
        let (Some(hold), seats) = (hold, seats) else {
            continue;
        };
        match kind.as_str() {
            "ReservationCreated" => {
                let list: Vec<String> =
                    serde_json::from_str(&seats.expect("created lists seats")).expect("json");
                for s in &list {
                    if let Some(prev) = owner.insert(s.clone(), hold.clone()) {
                        out.push(format!(
                            "seat {s}: hold {hold} created while {prev} owned it"
                        ));
                    }
                }
                seats_of.insert(hold, list);
            }
            "ReservationReleased" | "HoldExpired" | "PaymentAbandoned" => {
                for s in seats_of.get(&hold).into_iter().flatten() {
                    if owner.get(s) == Some(&hold) {
                        owner.remove(s);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// From the rows (PostgreSQL): live holds (paying, or held and unexpired) never share a seat;
/// every paying, sold or unexpired held seat row names a hold that lists it.
pub async fn row_violations(store: &Store, event: &EventId) -> Vec<String> {
    let mut out = Vec::new();
    let live = sqlx::query(
        "select hold_id, seats from holds where event_id = $1 and \
         (state in ('paying', 'confirmed') or (state = 'held' and expires_at > clock_timestamp()))",
    )
    .bind(event.as_str())
    .fetch_all(store.pool())
    .await
    .expect("read holds");
    let mut listed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut owner_of: BTreeMap<String, String> = BTreeMap::new();
    for h in live {
        let hold: String = h.get("hold_id");
        let seats: Vec<String> = serde_json::from_str(&h.get::<String, _>("seats")).expect("json");
        for s in seats {
            if let Some(prev) = owner_of.insert(s.clone(), hold.clone()) {
                out.push(format!("seat {s} in live holds {prev} and {hold}"));
            }
            listed.entry(hold.clone()).or_default().insert(s);
        }
    }
    let owned = sqlx::query(
        "select seat_id, hold_id from seats where event_id = $1 and \
         (state in ('paying', 'sold') or (state = 'held' and hold_expires_at > clock_timestamp()))",
    )
    .bind(event.as_str())
    .fetch_all(store.pool())
    .await
    .expect("read seats");
    for r in owned {
        let (seat, hold): (String, String) = (r.get("seat_id"), r.get("hold_id"));
        if !listed.get(&hold).is_some_and(|set| set.contains(&seat)) {
            out.push(format!(
                "seat {seat} names hold {hold}, which is not live or does not list it"
            ));
        }
    }
    out
}

/// The control: read the seats, and if they look free write the hold — a read followed by a
/// write, with nothing tying the two together. Returns whether it "won".
pub async fn naive_hold(
    store: &Store,
    event: &EventId,
    session: &SessionId,
    seats: &[SeatId],
) -> bool {
    let json = serde_json::to_string(seats).expect("json");
    let busy: i64 = sqlx::query(
        "select count(*) as n from seats where event_id = $1 and seat_id = any(fg_arr($2)) \
         and state <> 'available'",
    )
    .bind(event.as_str())
    .bind(&json)
    .fetch_one(store.pool())
    .await
    .expect("naive read")
    .get("n");
    if busy > 0 {
        return false;
    }
    tokio::task::yield_now().await;
    let hold = format!("naive-{}", uuid_like());
    // Deadlocks and lock timeouts are simply losses for the naive buyer.
    naive_write(store, event, session, &json, &hold)
        .await
        .is_ok()
}

async fn naive_write(
    store: &Store,
    event: &EventId,
    session: &SessionId,
    json: &str,
    hold: &str,
) -> Result<(), sqlx::Error> {
    let mut tx = store.pool().begin().await?;
    sqlx::query(
        "update seats set state = 'held', hold_id = $3, hold_expires_at = clock_timestamp() + interval '5 minutes' \
         where event_id = $1 and seat_id = any(fg_arr($2))",
    )
    .bind(event.as_str())
    .bind(json)
    .bind(hold)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, total_cents, expires_at, max_expires_at) \
         values ($1, $2, $3, $1, 'held', $4, 0, clock_timestamp() + interval '5 minutes', clock_timestamp() + interval '15 minutes')",
    )
    .bind(hold)
    .bind(event.as_str())
    .bind(session.as_str())
    .bind(json)
    .execute(&mut *tx)
    .await?;
    sqlx::query("insert into reservation_events (event_id, kind, hold_id, seats) values ($1, 'ReservationCreated', $2, $3)")
        .bind(event.as_str())
        .bind(hold)
        .bind(json)
        .execute(&mut *tx)
        .await?;
    tx.commit().await
}

fn uuid_like() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// `n` admission sessions of `event`, opened 32 at a time.
pub async fn sessions(store: &Store, event: &EventId, n: usize) -> Vec<SessionId> {
    use futures::StreamExt;
    futures::stream::iter(0..n)
        .map(|_| reservation::testing::session(store, event))
        .buffered(32)
        .collect()
        .await
}

/// Race tests run one at a time: each loads the 2-core machine on its own, and their
/// latencies and pools must not be starved by each other.
pub async fn exclusive() -> tokio::sync::MutexGuard<'static, ()> {
    static ONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    ONE.lock().await
}

/// Opens every connection of the pool up front, so a timed race measures holds, not
/// connection set-up.
pub async fn warm(store: &Store, connections: usize) {
    let tasks: Vec<_> = (0..connections)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                sqlx::query("select pg_sleep(0.05)")
                    .execute(store.pool())
                    .await
                    .expect("warm-up");
            })
        })
        .collect();
    for t in tasks {
        t.await.expect("warm-up task");
    }
}

/// Percentile of latencies in milliseconds.
pub fn percentile(mut ms: Vec<f64>, p: f64) -> f64 {
    ms.sort_by(f64::total_cmp);
    let i = ((ms.len() as f64 - 1.0) * p).round() as usize;
    ms[i]
}
