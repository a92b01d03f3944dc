//! The verdict: DESIGN §5 judged from PostgreSQL and the payment simulator's ledger (the shared
//! `invariants` checker for 1–4), plus what only a whole on-sale shows: one session per ticket,
//! offers in queue order, the cap, and seats sold = min(demand, seats).

use reservation::payments::simulator::Ledger;
use reservation::{EventId, Store};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::invariants::check_invariants;

use super::fifo::Judged;
use super::stats::Partial;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
    /// The first breaches found (all of them are counted in `detail`).
    pub breaches: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    pub clean: bool,
    pub checks: Vec<Check>,
}

/// What the run itself knows and the database cannot tell.
pub struct Facts<'a> {
    pub partial: &'a Partial,
    /// Pairs of buyers arriving a second or more apart (by when their first join reached the
    /// door), and those queued the other way round.
    pub fifo: Judged,
    /// Buyers who meant to buy (one seat each).
    pub demand: u64,
    pub seat_count: u64,
    pub max_active: u64,
    /// Buyers cut off by `--max-duration-s`.
    pub unfinished: u64,
}

/// The share of pairs arriving ≥ 1 s apart that may be queued the other way round.
const MAX_FIFO_INVERSIONS: f64 = 0.001;

fn check(name: &str, breaches: Vec<String>, detail: String) -> Check {
    Check {
        name: name.to_owned(),
        ok: breaches.is_empty(),
        detail: if breaches.is_empty() {
            detail
        } else {
            format!("{} breach(es); {detail}", breaches.len())
        },
        breaches: breaches.into_iter().take(20).collect(),
    }
}

pub async fn judge(
    store: &Store,
    event: &EventId,
    ledger: &Ledger,
    facts: &Facts<'_>,
) -> anyhow::Result<Verdict> {
    let found = check_invariants(store, event, ledger, true).await?;
    let with = |prefix: &str| -> Vec<String> {
        found
            .iter()
            .filter(|b| b.starts_with(prefix))
            .cloned()
            .collect()
    };
    let mut checks = vec![
        check(
            "no seat owned twice (inv 1)",
            with("inv1"),
            "live holds and sales checked from the rows".into(),
        ),
        check(
            "no seat sold twice; orders match their attempts (inv 2)",
            with("inv2"),
            "sales against orders and the event log".into(),
        ),
        check(
            "every authorization one order, void or refund; no key charged twice (inv 3)",
            with("inv3"),
            format!("{} attempts in the ledger", ledger.attempts.len()),
        ),
        check(
            "no attempt open past abandon_at; no hold paying without one (inv 4)",
            with("inv4"),
            "settled state".into(),
        ),
    ];
    let ev = event.as_str();
    let pool = store.pool();

    let twice: Vec<String> = sqlx::query(
        "select ticket_id, count(*) as n from admission_sessions where event_id = $1 \
         group by ticket_id having count(*) > 1",
    )
    .bind(ev)
    .fetch_all(pool)
    .await?
    .iter()
    .map(|r| {
        let t: String = r.try_get("ticket_id").unwrap_or_default();
        let n: i64 = r.try_get("n").unwrap_or_default();
        format!("ticket {t} has {n} sessions")
    })
    .collect();
    let sessions: i64 =
        sqlx::query("select count(*) as n from admission_sessions where event_id = $1")
            .bind(ev)
            .fetch_one(pool)
            .await?
            .try_get("n")?;
    let mut session_breaches = twice;
    session_breaches.extend(
        facts
            .partial
            .two_tab_mismatches
            .iter()
            .filter(|m| m.contains("claimed twice"))
            .cloned(),
    );
    if (sessions as u64) < facts.partial.sessions_claimed {
        session_breaches.push(format!(
            "buyers were admitted {} times but the database holds {sessions} sessions",
            facts.partial.sessions_claimed
        ));
    }
    checks.push(check(
        "one session per ticket",
        session_breaches,
        format!(
            "{sessions} sessions in the database, {} claims answered",
            facts.partial.sessions_claimed
        ),
    ));

    let places = sqlx::query(
        "select count(*) as n, count(distinct queue_place) as d from admission_sessions \
         where event_id = $1 and queue_place is not null",
    )
    .bind(ev)
    .fetch_one(pool)
    .await?;
    let (n, d): (i64, i64) = (places.try_get("n")?, places.try_get("d")?);
    let mut order_breaches = Vec::new();
    if n != d {
        order_breaches.push(format!("{n} sessions share {d} queue places"));
    }
    let (last, first) = (
        facts.partial.last_offered_key.as_deref(),
        facts.partial.first_unoffered_key.as_deref(),
    );
    if let (Some(last), Some(first)) = (last, first)
        && last > first
    {
        order_breaches.push(format!(
            "a buyer at {first} was never offered while one at {last}, further back, was"
        ));
    }
    checks.push(check(
        "offers in queue order",
        order_breaches,
        format!(
            "last offered place {}, first never-offered place {}",
            last.unwrap_or("-"),
            first.unwrap_or("- (nobody left waiting)")
        ),
    ));

    // A session occupies a slot from its creation to its end (or expiry, if it never ended).
    let peak: i64 = sqlx::query(
        "with ev as ( \
           select fg_ms(created_at) as t, 1 as d from admission_sessions where event_id = $1 \
           union all \
           select fg_ms(least(coalesce(ended_at, expires_at), expires_at)) as t, -1 as d \
             from admission_sessions where event_id = $1) \
         select coalesce(max(s), 0)::bigint as peak from \
           (select sum(d) over (order by t, d rows unbounded preceding) as s from ev) x",
    )
    .bind(ev)
    .fetch_one(pool)
    .await?
    .try_get("peak")?;
    let cap_breaches = if peak as u64 > facts.max_active {
        vec![format!("{peak} sessions at once, cap {}", facts.max_active)]
    } else {
        Vec::new()
    };
    checks.push(check(
        "admission cap never exceeded",
        cap_breaches,
        format!("peak {peak} concurrent sessions, cap {}", facts.max_active),
    ));

    let sold: i64 = sqlx::query("select count(*) as n from sales where event_id = $1")
        .bind(ev)
        .fetch_one(pool)
        .await?
        .try_get("n")?;
    let want = facts.demand.min(facts.seat_count);
    let mut sold_breaches = Vec::new();
    if facts.unfinished > 0 {
        sold_breaches.push(format!(
            "{} buyers still running at --max-duration-s",
            facts.unfinished
        ));
    }
    if sold as u64 != want {
        sold_breaches.push(format!(
            "{sold} seats sold, expected min(demand {}, seats {}) = {want}",
            facts.demand, facts.seat_count
        ));
    }
    checks.push(check(
        "seats sold = min(demand, seats)",
        sold_breaches,
        format!(
            "{sold} sold of {} seats, demand {}",
            facts.seat_count, facts.demand
        ),
    ));

    let idem: Vec<String> = facts
        .partial
        .two_tab_mismatches
        .iter()
        .filter(|m| !m.contains("claimed twice"))
        .cloned()
        .collect();
    checks.push(check(
        "two tabs: one payment per Idempotency-Key, one live hold per session",
        idem,
        format!(
            "{} duplicate checkouts, {} second holds",
            facts.partial.get("two_tab_checkouts"),
            facts.partial.get("two_tab_second_holds")
        ),
    ));

    // Whoever holds an admission token gets a real answer, however loaded the gateway.
    let refused = facts.partial.get("admitted_met_503");
    checks.push(check(
        "no admitted buyer refused for load",
        if refused > 0 {
            vec![format!("{refused} admitted buyers were answered 503")]
        } else {
            Vec::new()
        },
        format!(
            "{} admitted buyers, none answered 503",
            facts.partial.sessions_claimed
        ),
    ));

    // Arrival order is the queue's order (after opening): a buyer shed at the door must not
    // end up behind people who arrived long after.
    let fifo = facts.fifo.inversions;
    let share = fifo.share().unwrap_or(0.0);
    let mut breaches = Vec::new();
    if share > MAX_FIFO_INVERSIONS {
        breaches.push(format!(
            "{} of {} pairs arriving ≥ 1 s apart were queued the other way round ({:.3} %)",
            fifo.inverted,
            fifo.pairs,
            share * 100.0
        ));
    }
    if let Some(missing) = facts.fifo.unlogged.filter(|&m| m > 0) {
        breaches.push(format!(
            "{missing} buyers who joined are missing from the door log: order unjudged"
        ));
    }
    checks.push(check(
        "FIFO order kept",
        breaches,
        format!(
            "{} of {} pairs arriving ≥ 1 s apart (by when each first join {}) queued the other \
             way round (at most {:.1} %)",
            fifo.inverted,
            fifo.pairs,
            facts.fifo.basis,
            MAX_FIFO_INVERSIONS * 100.0
        ),
    ));

    Ok(Verdict {
        clean: checks.iter().all(|c| c.ok),
        checks,
    })
}
