//! DESIGN §5 invariants 1–4, judged from the database rows, the event log and the payment
//! simulator's ledger. One function, used by every saga test and by the soak tool.
//!
//! Everything is read in one REPEATABLE READ snapshot on PostgreSQL, so the checker may run
//! while the system is busy (a sample of "at no instant"). With `settled`, it also demands
//! the end state: no attempt open past `abandon_at`, every authorization captured by exactly
//! one order, voided or refunded.

use std::collections::{BTreeMap, BTreeSet};

use reservation::payments::simulator::Ledger;
use reservation::{EventId, Store};
use sqlx::Row;

/// A seat row: (state, hold, attempt, order).
type SeatRow = (String, Option<String>, Option<String>, Option<String>);

struct Snapshot {
    seats: BTreeMap<String, SeatRow>,
    /// hold → (state, seats, expired by the clock)
    holds: BTreeMap<String, (String, Vec<String>, bool)>,
    /// attempt → (hold, state, past abandon_at)
    attempts: BTreeMap<String, (String, String, bool)>,
    /// order → (hold, attempt, seats)
    orders: BTreeMap<String, (String, String, Vec<String>)>,
    sales: Vec<(String, String)>,
    /// attempt → (hold, seats) from PaymentInitiated
    initiated: BTreeMap<String, (String, Vec<String>)>,
}

fn seats_of(json: &str) -> anyhow::Result<Vec<String>> {
    Ok(serde_json::from_str(json)?)
}

async fn snapshot(store: &Store, event: &EventId) -> anyhow::Result<Snapshot> {
    let dialect = store.dialect();
    // One snapshot for every table, started and written in the store's dialect (its one
    // mechanism for the differences: `begin_snapshot`, and tokens such as `NOW`).
    let mut tx = store.begin_snapshot().await?;
    let ev = event.as_str();
    let q = |s: &'static str| sqlx::query(dialect.sql(s));
    let mut snap = Snapshot {
        seats: BTreeMap::new(),
        holds: BTreeMap::new(),
        attempts: BTreeMap::new(),
        orders: BTreeMap::new(),
        sales: Vec::new(),
        initiated: BTreeMap::new(),
    };
    for r in q("select seat_id, state, hold_id, payment_attempt_id, order_id from seats where event_id = $1")
        .bind(ev)
        .fetch_all(&mut *tx)
        .await?
    {
        snap.seats.insert(
            r.try_get("seat_id")?,
            (r.try_get("state")?, r.try_get("hold_id")?, r.try_get("payment_attempt_id")?, r.try_get("order_id")?),
        );
    }
    for r in q(
        "select hold_id, state, seats, case when expires_at <= NOW then 1 else 0 end as expired \
         from holds where event_id = $1",
    )
    .bind(ev)
    .fetch_all(&mut *tx)
    .await?
    {
        let seats: String = r.try_get("seats")?;
        snap.holds.insert(
            r.try_get("hold_id")?,
            (
                r.try_get("state")?,
                seats_of(&seats)?,
                r.try_get::<i64, _>("expired")? == 1,
            ),
        );
    }
    for r in q(
        "select attempt_id, hold_id, state, case when abandon_at <= NOW then 1 else 0 end as past \
         from payment_attempts where event_id = $1",
    )
    .bind(ev)
    .fetch_all(&mut *tx)
    .await?
    {
        snap.attempts.insert(
            r.try_get("attempt_id")?,
            (
                r.try_get("hold_id")?,
                r.try_get("state")?,
                r.try_get::<i64, _>("past")? == 1,
            ),
        );
    }
    for r in q("select order_id, hold_id, attempt_id, seats from orders where event_id = $1")
        .bind(ev)
        .fetch_all(&mut *tx)
        .await?
    {
        let seats: String = r.try_get("seats")?;
        snap.orders.insert(
            r.try_get("order_id")?,
            (
                r.try_get("hold_id")?,
                r.try_get("attempt_id")?,
                seats_of(&seats)?,
            ),
        );
    }
    for r in q("select seat_id, order_id from sales where event_id = $1")
        .bind(ev)
        .fetch_all(&mut *tx)
        .await?
    {
        snap.sales
            .push((r.try_get("seat_id")?, r.try_get("order_id")?));
    }
    for r in q("select attempt_id, hold_id, seats from reservation_events \
         where event_id = $1 and kind = 'PaymentInitiated'")
    .bind(ev)
    .fetch_all(&mut *tx)
    .await?
    {
        let seats: String = r.try_get("seats")?;
        snap.initiated.insert(
            r.try_get("attempt_id")?,
            (r.try_get("hold_id")?, seats_of(&seats)?),
        );
    }
    tx.rollback().await?;
    Ok(snap)
}

const OPEN: [&str; 3] = ["pending", "ambiguous", "authorized"];

/// Checks invariants 1–4 for `event`; returns every violation found (empty = all hold).
/// `ledger` is the simulator's ledger; the simulator must serve only this event's attempts.
pub async fn check_invariants(
    store: &Store,
    event: &EventId,
    ledger: &Ledger,
    settled: bool,
) -> anyhow::Result<Vec<String>> {
    let s = snapshot(store, event).await?;
    Ok(judge(&s, ledger, settled))
}

/// The same check on a busy system: the ledger is read after the rows, so every order the
/// rows show already has its authorization there (a ledger read first could miss the money
/// of an order made in between and report a breach that never happened).
pub async fn check_invariants_live(
    store: &Store,
    event: &EventId,
    ledger_now: impl AsyncFnOnce() -> anyhow::Result<Ledger>,
) -> anyhow::Result<Vec<String>> {
    let s = snapshot(store, event).await?;
    let ledger = ledger_now().await?;
    Ok(judge(&s, &ledger, false))
}

fn judge(s: &Snapshot, ledger: &Ledger, settled: bool) -> Vec<String> {
    let mut bad = Vec::new();

    // 1. No two live holds, nor a live hold and a sale, on one seat; every live hold's seats
    //    name it.
    let sold: BTreeMap<&str, &str> = s
        .sales
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let mut owner: BTreeMap<&str, &str> = BTreeMap::new();
    for (hold, (state, seats, expired)) in &s.holds {
        let live = state == "paying" || (state == "held" && !expired);
        if !live {
            continue;
        }
        for seat in seats {
            if let Some(other) = owner.insert(seat, hold) {
                bad.push(format!(
                    "inv1: seat {seat} owned by live holds {other} and {hold}"
                ));
            }
            if let Some(order) = sold.get(seat.as_str()) {
                bad.push(format!(
                    "inv1: seat {seat} held by {hold} and sold in {order}"
                ));
            }
            match s.seats.get(seat) {
                Some((_, Some(h), _, _)) if h == hold => {}
                other => bad.push(format!(
                    "inv1: live hold {hold} ({state}) but seat {seat} row is {other:?}"
                )),
            }
        }
    }
    for (seat, (state, hold, attempt, _)) in &s.seats {
        if state == "paying" {
            let open = attempt
                .as_ref()
                .and_then(|a| s.attempts.get(a))
                .is_some_and(|(h, st, _)| Some(h) == hold.as_ref() && OPEN.contains(&st.as_str()));
            if !open {
                bad.push(format!(
                    "inv1: seat {seat} paying without an open attempt of its hold"
                ));
            }
        }
    }

    // 2. A seat sold at most once; each order's seats were paying under its attempt.
    let mut sale_count: BTreeMap<&str, usize> = BTreeMap::new();
    for (seat, _) in &s.sales {
        *sale_count.entry(seat).or_default() += 1;
    }
    for (seat, n) in sale_count.iter().filter(|(_, n)| **n > 1) {
        bad.push(format!("inv2: seat {seat} sold {n} times"));
    }
    for (order, (hold, attempt, seats)) in &s.orders {
        let mut sale_seats: Vec<&str> = s
            .sales
            .iter()
            .filter(|(_, o)| o == order)
            .map(|(x, _)| x.as_str())
            .collect();
        sale_seats.sort_unstable();
        let mut want: Vec<&str> = seats.iter().map(String::as_str).collect();
        want.sort_unstable();
        if sale_seats != want {
            bad.push(format!(
                "inv2: order {order} seats {want:?} but sales {sale_seats:?}"
            ));
        }
        match s.initiated.get(attempt) {
            Some((h, paying)) if h == hold && paying == seats => {}
            other => bad.push(format!(
                "inv2: order {order}: attempt {attempt} began paying as {other:?}"
            )),
        }
        for seat in seats {
            match s.seats.get(seat) {
                Some((st, _, _, Some(o))) if st == "sold" && o == order => {}
                other => bad.push(format!("inv2: order {order} seat {seat} row is {other:?}")),
            }
        }
    }

    // 3. Money: no key charged twice; each authorization ends as exactly one sale, a void or
    //    a refund; a sale's money is its own.
    for key in ledger.charged_twice() {
        bad.push(format!(
            "inv3: attempt {key} charged twice: {:?}",
            ledger.attempts.get(key)
        ));
    }
    let order_of: BTreeMap<&str, &str> = s
        .orders
        .iter()
        .map(|(o, (_, a, _))| (a.as_str(), o.as_str()))
        .collect();
    for (key, rec) in &ledger.attempts {
        if rec.authorizations == 0 {
            continue;
        }
        let Some((_, state, _)) = s.attempts.get(key) else {
            bad.push(format!(
                "inv3: money for {key} but no such attempt in the database"
            ));
            continue;
        };
        match order_of.get(key.as_str()) {
            Some(order) => {
                if rec.voids + rec.refunds > 0 {
                    bad.push(format!(
                        "inv3: order {order} of {key} but its money was given back: {rec:?}"
                    ));
                }
                if settled && rec.captures != 1 {
                    bad.push(format!(
                        "inv3: order {order} of {key} not captured once: {rec:?}"
                    ));
                }
            }
            None if settled && rec.voids + rec.refunds == 0 => {
                bad.push(format!("inv3: authorization of {key} ({state}) neither sold, voided nor refunded: {rec:?}"));
            }
            None => {}
        }
    }
    for (attempt, order) in &order_of {
        let authorized = ledger
            .attempts
            .get(*attempt)
            .is_some_and(|r| r.authorizations == 1);
        if !authorized {
            bad.push(format!(
                "inv3: order {order} without exactly one authorization of {attempt}"
            ));
        }
    }

    // 4. Final states: no attempt open past abandon_at, no hold paying without one.
    if settled {
        for (attempt, (hold, state, past)) in &s.attempts {
            if *past && OPEN.contains(&state.as_str()) {
                bad.push(format!(
                    "inv4: attempt {attempt} of {hold} still {state} past abandon_at"
                ));
            }
        }
    }
    let open_by_hold: BTreeSet<&str> = s
        .attempts
        .values()
        .filter(|(_, st, _)| OPEN.contains(&st.as_str()))
        .map(|(h, _, _)| h.as_str())
        .collect();
    for (hold, (state, _, _)) in &s.holds {
        if state == "paying" && !open_by_hold.contains(hold.as_str()) {
            bad.push(format!("inv4: hold {hold} paying without an open attempt"));
        }
    }
    bad
}
