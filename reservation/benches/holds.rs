//! Hold throughput on PostgreSQL (DATABASE_URL): `Store::hold` against the same SQL sent raw
//! through sqlx in the same run, plus the absolute floors of issue 2. Prints a table.
//!
//! `cargo bench -p reservation --all-features`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reservation::testing::{fresh_postgres_with, seeded_event};
use reservation::{Error, EventId, SeatId, SessionId, Store, StoreOptions};
use sqlx::postgres::PgPoolOptions;
use sqlx::{PgPool, Row};

const TASKS: usize = 64;
/// Connections per pool: PostgreSQL here allows 100 in all, and both pools live at once.
const CONNECTIONS: u32 = 40;
const SEATS: u32 = 50_000;
/// Holds per spread phase (`HOLDS_BENCH_SPREAD` overrides, for a loaded machine).
const SPREAD_HOLDS: usize = 10_000;
const REJECTIONS: usize = 50_000;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn seat(n: usize) -> SeatId {
    format!("S{n:05}").parse().expect("valid seat id")
}

/// `n` sessions in one statement (the bench measures holds, not session set-up).
async fn bulk_sessions(pool: &PgPool, event: &EventId, tag: &str, n: usize) -> Vec<SessionId> {
    sqlx::query(
        "insert into admission_sessions (session_id, event_id, ticket_id, expires_at) \
         select $2 || g, $1, $2 || g, clock_timestamp() + interval '1 hour' from generate_series(1, $3) g",
    )
    .bind(event.as_str())
    .bind(tag)
    .bind(n as i64)
    .execute(pool)
    .await
    .expect("bulk sessions");
    (1..=n)
        .map(|g| format!("{tag}{g}").parse().expect("session id"))
        .collect()
}

/// Runs `jobs` across TASKS tasks; returns completions per second.
async fn drive<F, Fut>(jobs: usize, job: F) -> f64
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let job = Arc::new(job);
    let next = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (job, next) = (job.clone(), next.clone());
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs {
                        break;
                    }
                    job(i).await;
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("bench task");
    }
    jobs as f64 / t.elapsed().as_secs_f64()
}

/// The one statement that turns away a buyer of a taken seat, raw: the seats of the list that
/// are not free.
async fn raw_busy(pool: &PgPool, session: &str, seat: &str) -> Vec<String> {
    sqlx::query_scalar(
        "select seat_id from seats where event_id = (select event_id from admission_sessions \
         where session_id = $1 and ended_at is null and expires_at > clock_timestamp()) \
         and seat_id = $2 \
         and not (state = 'available' or (state = 'held' and hold_expires_at <= clock_timestamp())) \
         order by seat_id",
    )
    .bind(session)
    .bind(seat)
    .fetch_all(pool)
    .await
    .expect("raw busy")
}

/// The statements `Store::hold` sends for one seat, as PostgreSQL text, through a plain PgPool.
async fn raw_hold(pool: &PgPool, session: &str, seat: &str) {
    let json = format!("[\"{seat}\"]");
    assert!(raw_busy(pool, session, seat).await.is_empty());
    let mut tx = pool.begin().await.expect("raw begin");
    let h = sqlx::query(
        "select s.event_id, fg_ms(clock_timestamp()) as now_ms, \
         case when s.ended_at is not null or s.expires_at <= clock_timestamp() then 1 else 0 end as ended, \
         coalesce(e.hold_ttl_ms, e.hold_ttl_s * 1000) as ttl_ms, e.max_hold_s, e.max_seats_per_hold, \
         h.hold_id as live_hold, \
         case when h.state = 'held' and h.expires_at <= clock_timestamp() then 1 else 0 end as live_expired \
         from admission_sessions s join events e on e.event_id = s.event_id \
         left join holds h on h.session_id = s.session_id and h.state in ('held', 'paying') \
         where s.session_id = $1",
    )
    .bind(session)
    .fetch_one(&mut *tx)
    .await
    .expect("raw holder");
    let event: String = h.get("event_id");
    let now_ms: i64 = h.get("now_ms");
    let ttl = i64::from(h.get::<i32, _>("ttl_ms"));
    sqlx::query(
        "select seat_id, state, hold_id, case when state = 'held' and hold_expires_at <= clock_timestamp() then 1 else 0 end as expired, \
         price_cents from seats where event_id = $1 and seat_id = any(fg_arr($2)) order by seat_id for update",
    )
    .bind(&event)
    .bind(&json)
    .fetch_all(&mut *tx)
    .await
    .expect("raw lock");
    let hold = format!("h_{}", uuid::Uuid::now_v7().simple());
    let done = sqlx::query(
        "update seats set state = 'held', hold_id = $3, hold_expires_at = fg_ts($4), payment_attempt_id = null, \
         version = version + 1 where event_id = $1 and seat_id = any(fg_arr($2)) \
         and (state = 'available' or (state = 'held' and hold_expires_at <= clock_timestamp()))",
    )
    .bind(&event)
    .bind(&json)
    .bind(&hold)
    .bind(now_ms + ttl)
    .execute(&mut *tx)
    .await
    .expect("raw update");
    assert_eq!(done.rows_affected(), 1);
    sqlx::query(
        "insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, total_cents, created_at, expires_at, max_expires_at) \
         values ($1, $2, $3, $4, 'held', $5, $6, fg_ts($7), fg_ts($8), fg_ts($9))",
    )
    .bind(&hold)
    .bind(&event)
    .bind(session)
    .bind(hex::encode(rand::random::<[u8; 32]>()))
    .bind(&json)
    .bind(1000_i64)
    .bind(now_ms)
    .bind(now_ms + ttl)
    .bind(now_ms + 900_000)
    .execute(&mut *tx)
    .await
    .expect("raw insert hold");
    sqlx::query(
        "insert into reservation_events (event_id, kind, hold_id, attempt_id, order_id, seats, detail) \
         values ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&event)
    .bind("ReservationCreated")
    .bind(&hold)
    .bind(None::<String>)
    .bind(None::<String>)
    .bind(&json)
    .bind(None::<String>)
    .execute(&mut *tx)
    .await
    .expect("raw log");
    tx.commit().await.expect("raw commit");
}

fn row(name: &str, value: String, bar: &str, ok: Option<bool>) {
    let verdict = match ok {
        Some(true) => "ok",
        Some(false) => "BELOW",
        None => "",
    };
    println!("| {name:<44} | {value:>12} | {bar:>14} | {verdict:<5} |");
}

#[tokio::main]
async fn main() {
    let spread = setting("HOLDS_BENCH_SPREAD", SPREAD_HOLDS);
    let rejections = setting("HOLDS_BENCH_REJECTIONS", REJECTIONS);
    let store: Store = fresh_postgres_with(StoreOptions {
        max_connections: CONNECTIONS,
        acquire_timeout: Duration::from_secs(60),
        ..StoreOptions::default()
    })
    .await;
    let event = seeded_event(&store, SEATS, |_| {}).await;
    let url = reservation::testing::database_url();
    let db = sqlx::query_scalar::<_, String>("select current_database()::text")
        .fetch_one(store.pool())
        .await
        .expect("db name");
    let server = url
        .split('?')
        .next()
        .and_then(|u| u.rsplit_once('/'))
        .map_or(url.clone(), |(s, _)| s.to_owned());
    // The store pings only connections that sat idle, not every one it hands out; the
    // baseline does the same, so the ratio compares the statements, not pool settings.
    let raw = PgPoolOptions::new()
        .test_before_acquire(false)
        .max_connections(CONNECTIONS)
        .acquire_timeout(Duration::from_secs(60))
        .connect(&format!("{server}/{db}"))
        .await
        .expect("raw pool");
    let order: Vec<usize> = {
        use rand::seq::SliceRandom;
        let mut v: Vec<usize> = (1..=SEATS as usize).collect();
        v.shuffle(&mut rand::rng());
        v
    };
    eprintln!("seeded {SEATS} seats");
    let store_sessions = bulk_sessions(&raw, &event, "bs", spread).await;
    let raw_sessions = bulk_sessions(&raw, &event, "br", spread).await;
    // Warm both pools (connections and prepared statements) on seats outside the measured sets.
    let warm_sessions = bulk_sessions(&raw, &event, "bw", 2 * TASKS).await;
    for i in 0..TASKS {
        store
            .hold(&warm_sessions[i], &[seat(order[2 * spread + i])])
            .await
            .expect("warm store");
        raw_hold(
            &raw,
            warm_sessions[TASKS + i].as_str(),
            seat(order[2 * spread + TASKS + i]).as_str(),
        )
        .await;
    }

    let (o, s) = (Arc::new(order.clone()), Arc::new(store_sessions));
    let st = store.clone();
    let store_rate = drive(spread, move |i| {
        let (st, o, s) = (st.clone(), o.clone(), s.clone());
        async move {
            st.hold(&s[i], &[seat(o[i])]).await.expect("spread hold");
        }
    })
    .await;
    eprintln!("store spread: {store_rate:.0} holds/s");
    let (o, s, pool) = (Arc::new(order.clone()), Arc::new(raw_sessions), raw.clone());
    let raw_rate = drive(spread, move |i| {
        let (o, s, pool) = (o.clone(), s.clone(), pool.clone());
        async move {
            raw_hold(&pool, s[i].as_str(), seat(o[spread + i]).as_str()).await;
        }
    })
    .await;
    eprintln!("raw spread: {raw_rate:.0} holds/s");

    // Rejections: everyone asks for a seat that is already held.
    let taken = seat(order[0]);
    let losers = Arc::new(bulk_sessions(&raw, &event, "bl", TASKS).await);
    let st = store.clone();
    let reject_rate = drive(rejections, move |i| {
        let (st, losers, taken) = (st.clone(), losers.clone(), taken.clone());
        async move {
            let r = st.hold(&losers[i % TASKS], &[taken]).await;
            assert!(matches!(r, Err(Error::SeatUnavailable { .. })), "{r:?}");
        }
    })
    .await;
    eprintln!("rejections: {reject_rate:.0}/s");
    let losers = Arc::new(bulk_sessions(&raw, &event, "rl", TASKS).await);
    let (pool, taken) = (raw.clone(), seat(order[0]));
    let raw_reject_rate = drive(rejections, move |i| {
        let (pool, losers, taken) = (pool.clone(), losers.clone(), taken.clone());
        async move {
            let busy = raw_busy(&pool, losers[i % TASKS].as_str(), taken.as_str()).await;
            assert_eq!(busy.len(), 1);
        }
    })
    .await;
    eprintln!("raw rejections: {raw_reject_rate:.0}/s");

    // 1,000 buyers on one fresh seat, arriving within one second: losers' latency.
    let one = seat(order[2 * spread + 2 * TASKS]);
    let buyers = bulk_sessions(&raw, &event, "b1k", 1000).await;
    let t0 = Instant::now();
    let tasks: Vec<_> = buyers
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let (st, one) = (store.clone(), one.clone());
            tokio::spawn(async move {
                tokio::time::sleep_until((t0 + Duration::from_millis(i as u64)).into()).await;
                let t = Instant::now();
                let r = st.hold(&s, &[one]).await;
                (r.is_ok(), t.elapsed().as_secs_f64() * 1000.0)
            })
        })
        .collect();
    let mut lat = Vec::new();
    let mut winners = 0;
    for t in tasks {
        let (won, ms) = t.await.expect("task");
        if won {
            winners += 1;
        } else {
            lat.push(ms);
        }
    }
    lat.sort_by(f64::total_cmp);
    let p99 = lat[(lat.len() as f64 * 0.99) as usize - 1];

    let ratio = store_rate / raw_rate;
    println!();
    println!(
        "| {:<44} | {:>12} | {:>14} | {:<5} |",
        "measure (PostgreSQL, 64 tasks, 40 conns)", "value", "target", ""
    );
    println!("|{:-<46}|{:-<14}|{:-<16}|{:-<7}|", "", "", "", "");
    row(
        "Store::hold, 1 seat, spread over 50k seats",
        format!("{store_rate:.0}/s"),
        "≥ 4000/s",
        Some(store_rate >= 4000.0),
    );
    row(
        "same SQL raw through sqlx (baseline)",
        format!("{raw_rate:.0}/s"),
        "",
        None,
    );
    row(
        "ratio Store / raw",
        format!("{ratio:.2}×"),
        "≥ 0.80×",
        Some(ratio >= 0.8),
    );
    row(
        "rejections on an already-held seat",
        format!("{reject_rate:.0}/s"),
        "≥ 20000/s",
        Some(reject_rate >= 20_000.0),
    );
    row(
        "same rejection statement raw (baseline)",
        format!("{raw_reject_rate:.0}/s"),
        "",
        None,
    );
    row(
        "1,000 buyers on one seat: winners",
        format!("{winners}"),
        "= 1",
        Some(winners == 1),
    );
    row(
        "1,000 buyers on one seat: loser p99",
        format!("{p99:.1} ms"),
        "≤ 50 ms",
        Some(p99 <= 50.0),
    );
    store.close().await;
}
