//! The hot transitions stay on their key. A prepared statement (and every statement inside a
//! PL/pgSQL function) settles on a generic plan after a few runs; a generic plan that scans an
//! index over the event's `state` visits every seat the event ever churned through, so holds
//! slow down as the event grows. Here every hot transition runs on an event of 50,000 seats
//! with churned rows, with `plan_cache_mode = force_generic_plan` and `auto_explain` logging
//! the plan of every statement (nested ones included) back to the client, and the test fails
//! when one of them reaches the seats, holds, sessions or attempts any other way than an index
//! on their key. The work queues (the outbox, the webhook deliveries) keep every row once
//! done: claiming due work and closing an attempt must read them through an index condition,
//! never walk an index or the table past the rows done and the rows scheduled for later.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reservation::testing::{
    claim_due_deliveries, claim_due_work, fresh_database_url, seeded_event, session,
};
use reservation::{Finalized, SeatId, Store, StoreOptions};
use sqlx::Connection;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::{Layer, Registry};

const SEATS: u32 = 50_000;

/// Collects PostgreSQL notices (auto_explain's plans), which sqlx reports as tracing events.
#[derive(Clone, Default)]
struct Notices(Arc<Mutex<Vec<String>>>);

struct Message<'a>(&'a mut Option<String>);

impl Visit for Message<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            *self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for Notices {
    fn on_event(&self, event: &tracing::Event<'_>, _ctx: Context<'_, S>) {
        if event.metadata().target() != "sqlx::postgres::notice" {
            return;
        }
        let mut message = None;
        event.record(&mut Message(&mut message));
        if let Some(m) = message {
            self.0.lock().expect("notices").push(m);
        }
    }
}

impl Notices {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().expect("notices"))
    }
}

fn seats(ids: &[u32]) -> Vec<SeatId> {
    ids.iter()
        .map(|n| format!("S{n:05}").parse().expect("seat id"))
        .collect()
}

/// The scans of a plan that leave their key: a sequential scan of a hot table, or a seats
/// index other than the primary key and the hold's own (`seats_by_hold`); general
/// admission's section reads go through the section indexes instead (never the primary key,
/// which walks past every taken seat of the event).
fn off_key(plan: &str) -> Vec<String> {
    let general_admission = plan.contains("section = ");
    let on = |l: &str, tables: &[&str]| {
        tables
            .iter()
            .any(|t| l.contains(&format!(" on {t} ")) || l.ends_with(&format!(" on {t}")))
    };
    let lines: Vec<&str> = plan.lines().collect();
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.contains("Scan"))
        .filter(|&(i, l)| {
            if on(l, &["outbox", "webhook_deliveries"]) {
                let bounded = lines
                    .get(i + 1)
                    .is_some_and(|next| next.trim_start().starts_with("Index Cond"));
                return l.contains("Seq Scan") || !bounded;
            }
            if !on(
                l,
                &["seats", "holds", "admission_sessions", "payment_attempts"],
            ) {
                return false;
            }
            if l.contains("Seq Scan") {
                return true;
            }
            if !l.contains(" on seats") {
                return false;
            }
            if general_admission {
                !(l.contains("seats_free_by_section") || l.contains("seats_by_section_state"))
            } else {
                !(l.contains("seats_pkey") || l.contains("seats_by_hold"))
            }
        })
        .map(|(_, l)| (*l).to_owned())
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn hot_transitions_keep_generic_plans_on_their_key() {
    let notices = Notices::default();
    tracing::subscriber::set_global_default(Registry::default().with(notices.clone()))
        .expect("the only subscriber of this test binary");

    let url = fresh_database_url("t_").await;
    let options = StoreOptions {
        max_connections: 4,
        acquire_timeout: Duration::from_secs(30),
        ..StoreOptions::default()
    };
    let setup = Store::connect(&url, options.clone())
        .await
        .expect("migrate the fresh database");
    let event = seeded_event(&setup, SEATS, |e| e.max_seats_per_hold = 6).await;
    // Churn: half the event held and put back twice, so the seat indexes carry dead versions
    // (as after a storm) and the statistics see an event of 50,000 seats.
    for _ in 0..2 {
        sqlx::query(
            "update seats set state = 'held', hold_id = 'churn', \
             hold_expires_at = clock_timestamp() - interval '1 second' \
             where event_id = $1 and seat_id > 'S25000'",
        )
        .bind(event.as_str())
        .execute(setup.pool())
        .await
        .expect("churn hold");
        sqlx::query(
            "update seats set state = 'available', hold_id = null, hold_expires_at = null \
             where event_id = $1 and hold_id = 'churn'",
        )
        .bind(event.as_str())
        .execute(setup.pool())
        .await
        .expect("churn release");
    }
    for n in 0..200u32 {
        let s = session(&setup, &event).await;
        let hold = setup
            .hold(&s, &seats(&[40_000 + n]))
            .await
            .expect("churn a real hold");
        setup.release(&s, &hold.hold_id).await.expect("release it");
    }
    // A storm's worth of sessions, finished holds and attempts, so those tables are not the handful of
    // rows a sequential scan would rightly read.
    sqlx::query(
        "insert into admission_sessions (session_id, event_id, ticket_id, expires_at) \
         select 'storm-' || g, $1, 'storm-' || g, clock_timestamp() + interval '1 hour' \
         from generate_series(1, 50000) g",
    )
    .bind(event.as_str())
    .execute(setup.pool())
    .await
    .expect("storm sessions");
    sqlx::query(
        "insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, total_cents, \
         expires_at, max_expires_at) \
         select 'storm-' || g, $1, 'storm-' || g, 'storm-' || g, 'expired', '[\"S00001\"]', 1000, \
         clock_timestamp(), clock_timestamp() from generate_series(1, 30000) g",
    )
    .bind(event.as_str())
    .execute(setup.pool())
    .await
    .expect("storm holds");
    sqlx::query(
        "insert into payment_attempts (attempt_id, hold_id, event_id, amount_cents, currency, \
         payment_method, state, resolve_by, abandon_at) \
         select 'storm-' || g, 'storm-' || g, $1, 1000, 'usd', 'pm_card_visa', 'abandoned', \
         clock_timestamp(), clock_timestamp() from generate_series(1, 30000) g",
    )
    .bind(event.as_str())
    .execute(setup.pool())
    .await
    .expect("storm attempts");
    // The work of a long sale: done rows, and rows scheduled for later (payments watched,
    // retries backing off), in the outbox and the webhook deliveries.
    for sql in [
        "insert into outbox (kind, event_id, payload, done_at) \
         select 'session_ended', $1, '{}', clock_timestamp() from generate_series(1, 30000)",
        "insert into outbox (kind, event_id, attempt_id, payload, run_after) \
         select 'authorize', $1, 'later-' || g, '{}', clock_timestamp() + interval '1 hour' \
         from generate_series(1, 3000) g",
        "insert into webhook_subscriptions (webhook_id, event_id, url, secret, kinds) \
         values ('wh_plan', $1, 'https://example.invalid/hook', 'secret', 1)",
        "insert into webhook_deliveries (webhook_id, event_id, kind, fact_id, done_at) \
         select 'wh_plan', $1, 'order.confirmed', 'done-' || g, clock_timestamp() \
         from generate_series(1, 30000) g",
        "insert into webhook_deliveries (webhook_id, event_id, kind, fact_id, run_after) \
         select 'wh_plan', $1, 'order.confirmed', 'later-' || g, \
         clock_timestamp() + interval '1 hour' from generate_series(1, 3000) g",
    ] {
        sqlx::query(sql)
            .bind(event.as_str())
            .execute(setup.pool())
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    sqlx::query("analyze")
        .execute(setup.pool())
        .await
        .expect("analyze");

    // Every new connection to this database plans generically and explains every statement.
    let name = url
        .split('?')
        .next()
        .and_then(|u| u.rsplit_once('/'))
        .map(|(_, db)| db.to_owned())
        .expect("database name");
    let mut admin = sqlx::postgres::PgConnection::connect(&url)
        .await
        .expect("admin connection");
    for setting in [
        "session_preload_libraries = 'auto_explain'",
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
        "plan_cache_mode = force_generic_plan",
    ] {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "alter database {name} set {setting}"
        )))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("{setting}: {e} (auto_explain ships with postgresql-contrib)"));
    }
    admin.close().await.expect("close admin");
    setup.close().await;
    let store = Store::connect(&url, options).await.expect("reconnect");
    store.ping().await.expect("ping");
    notices.take();

    // The hot transitions, each more than once so the generic plans are the ones in use.
    let mut report = Vec::new();
    let mut check = |what: &str, notices: Vec<String>| {
        assert!(
            notices.iter().any(|n| n.contains("Query Text")),
            "{what}: no plan was logged (is auto_explain loaded?)"
        );
        for plan in notices {
            for line in off_key(&plan) {
                report.push(format!("{what}: {line}\n{plan}"));
            }
        }
    };
    for round in 0..3u32 {
        let s = session(&store, &event).await;
        check("claim", notices.take());
        let one = store
            .hold(&s, &seats(&[10 + round]))
            .await
            .expect("hold one seat");
        check("hold", notices.take());
        let other = session(&store, &event).await;
        notices.take();
        let lost = store.hold(&other, &seats(&[10 + round])).await;
        assert!(lost.is_err(), "the seat is held");
        check("hold of a taken seat", notices.take());
        let four = store
            .hold(
                &other,
                &seats(&[
                    100 + 4 * round,
                    101 + 4 * round,
                    30_001 + round,
                    45_000 + round,
                ]),
            )
            .await
            .expect("hold four seats");
        check("hold of four seats", notices.take());
        let ga = session(&store, &event).await;
        notices.take();
        store.hold_ga(&ga, "A", 2).await.expect("ga hold");
        check("general admission", notices.take());
        let attempt = store
            .begin_payment(&s, &one.hold_id, "pm_card_visa")
            .await
            .expect("begin payment");
        check("begin payment", notices.take());
        let done = store
            .finalize(&attempt.attempt_id, Some(&format!("pi_plan_{round}")))
            .await
            .expect("finalize");
        assert!(matches!(done, Finalized::Confirmed(_)));
        check("finalize", notices.take());
        store.release(&other, &four.hold_id).await.expect("release");
        check("release", notices.take());
        let declined = session(&store, &event).await;
        let held = store
            .hold(&declined, &seats(&[200 + round]))
            .await
            .expect("hold a seat to pay for");
        let attempt = store
            .begin_payment(&declined, &held.hold_id, "pm_card_visa")
            .await
            .expect("begin payment");
        notices.take();
        store
            .decline(&attempt.attempt_id, "card_declined")
            .await
            .expect("decline");
        check("decline", notices.take());
        // The jobs the holds and payments above left are due; those for later are not.
        assert!(claim_due_work(&store, 32).await > 0, "due outbox rows");
        check("claim due work", notices.take());
        claim_due_deliveries(&store, 32).await;
        check("claim due deliveries", notices.take());
    }
    assert!(
        report.is_empty(),
        "plans off their key:\n{}",
        report.join("\n\n")
    );
    store.close().await;
}
