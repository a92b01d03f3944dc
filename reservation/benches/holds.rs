//! Hold throughput on PostgreSQL (DATABASE_URL), all in one run: `Store::hold` against the
//! one-statement hold sent raw through sqlx (the baseline) and the old multi-statement
//! sequence; rejections on a held seat; two- and four-seat holds; general-admission holds of
//! two from a 10,000-seat section; the hold committed synchronously. Prints each figure
//! against its target.
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
const SPREAD_HOLDS: usize = 8_000;
const REJECTIONS: usize = 50_000;
/// Multi-seat and general-admission holds per phase.
const MULTI_HOLDS: usize = 2_000;
const GA_SEATS: u32 = 10_000;
const GA_HOLDS: usize = 4_000;

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

/// The one statement a hold is on PostgreSQL, raw: what `Store::hold` sends, without the store.
async fn raw_one_statement(pool: &PgPool, session: &str, seat: &str) {
    let outcome: String = sqlx::query_scalar(reservation::testing::HOLD_SQL)
        .bind(session)
        .bind(format!("[\"{seat}\"]"))
        .bind(format!("h_{}", uuid::Uuid::now_v7().simple()))
        .bind(hex::encode(rand::random::<[u8; 32]>()))
        .fetch_one(pool)
        .await
        .expect("raw one-statement hold");
    assert_eq!(outcome, "held");
}

/// The statements `Store::hold` used to send for one seat, as PostgreSQL text, through a plain PgPool.
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
    println!("| {name:<46} | {value:>14} | {bar:>18} | {verdict:<5} |");
}

/// Holds of `per` seats each on disjoint chunks of `seats`, across TASKS tasks.
async fn multi(store: &Store, sessions: Vec<SessionId>, seats: Vec<usize>, per: usize) -> f64 {
    let (st, s, o) = (store.clone(), Arc::new(sessions), Arc::new(seats));
    let n = s.len();
    drive(n, move |i| {
        let (st, s, o) = (st.clone(), s.clone(), o.clone());
        async move {
            let want: Vec<SeatId> = o[i * per..(i + 1) * per].iter().map(|&n| seat(n)).collect();
            st.hold(&s[i], &want).await.expect("multi-seat hold");
        }
    })
    .await
}

async fn raw_pool(url: &str, durable: bool) -> PgPool {
    PgPoolOptions::new()
        .test_before_acquire(false)
        .max_connections(CONNECTIONS)
        .acquire_timeout(Duration::from_secs(60))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if durable {
                    sqlx::query("set floodgate.durable_holds = on")
                        .execute(conn)
                        .await?;
                }
                Ok(())
            })
        })
        .connect(url)
        .await
        .expect("raw pool")
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
    let ga_event = seeded_event(&store, GA_SEATS, |_| {}).await;
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
    let db_url = format!("{server}/{db}");
    // The store pings only connections that sat idle, not every one it hands out; the
    // baseline does the same, so the ratio compares the statements, not pool settings.
    let raw = raw_pool(&db_url, false).await;
    let order: Vec<usize> = {
        use rand::seq::SliceRandom;
        let mut v: Vec<usize> = (1..=SEATS as usize).collect();
        v.shuffle(&mut rand::rng());
        v
    };
    // Disjoint slices of the shuffled seats, one per phase.
    let mut cursor = 0;
    let mut take = |n: usize| {
        let part = order[cursor..cursor + n].to_vec();
        cursor += n;
        part
    };
    let store_seats = Arc::new(take(spread));
    let one_seats = Arc::new(take(spread));
    let old_seats = Arc::new(take(spread));
    let durable_seats = Arc::new(take(spread));
    let two_seats = take(2 * MULTI_HOLDS);
    let four_seats = take(4 * MULTI_HOLDS);
    let warm = take(3 * TASKS);
    let one = seat(take(1)[0]);
    eprintln!("seeded {SEATS} + {GA_SEATS} seats");
    let store_sessions = Arc::new(bulk_sessions(&raw, &event, "bs", spread).await);
    let one_sessions = Arc::new(bulk_sessions(&raw, &event, "bo", spread).await);
    let old_sessions = Arc::new(bulk_sessions(&raw, &event, "br", spread).await);
    let durable_sessions = Arc::new(bulk_sessions(&raw, &event, "bd", spread).await);
    // Warm both pools (connections and prepared statements) on seats outside the measured sets.
    let warm_sessions = bulk_sessions(&raw, &event, "bw", 3 * TASKS).await;
    for i in 0..TASKS {
        store
            .hold(&warm_sessions[i], &[seat(warm[i])])
            .await
            .expect("warm store");
        raw_one_statement(
            &raw,
            warm_sessions[TASKS + i].as_str(),
            seat(warm[TASKS + i]).as_str(),
        )
        .await;
        raw_hold(
            &raw,
            warm_sessions[2 * TASKS + i].as_str(),
            seat(warm[2 * TASKS + i]).as_str(),
        )
        .await;
    }

    let (st, o, s) = (store.clone(), store_seats.clone(), store_sessions.clone());
    let store_rate = drive(spread, move |i| {
        let (st, o, s) = (st.clone(), o.clone(), s.clone());
        async move {
            st.hold(&s[i], &[seat(o[i])]).await.expect("spread hold");
        }
    })
    .await;
    eprintln!("store spread: {store_rate:.0} holds/s");
    let (o, s, pool) = (one_seats.clone(), one_sessions.clone(), raw.clone());
    let one_rate = drive(spread, move |i| {
        let (o, s, pool) = (o.clone(), s.clone(), pool.clone());
        async move {
            raw_one_statement(&pool, s[i].as_str(), seat(o[i]).as_str()).await;
        }
    })
    .await;
    eprintln!("one statement raw: {one_rate:.0} holds/s");
    let (o, s, pool) = (old_seats.clone(), old_sessions.clone(), raw.clone());
    let old_rate = drive(spread, move |i| {
        let (o, s, pool) = (o.clone(), s.clone(), pool.clone());
        async move {
            raw_hold(&pool, s[i].as_str(), seat(o[i]).as_str()).await;
        }
    })
    .await;
    eprintln!("old sequence raw: {old_rate:.0} holds/s");

    // Rejections: everyone asks for a seat that is already held.
    let taken = seat(store_seats[0]);
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
    // The same rejections as the bare read, raw: the loser's physical limit in this run.
    let (pool, taken) = (raw.clone(), seat(store_seats[0]));
    let losers = Arc::new(bulk_sessions(&raw, &event, "bm", TASKS).await);
    let busy_rate = drive(rejections, move |i| {
        let (pool, losers, taken) = (pool.clone(), losers.clone(), taken.clone());
        async move {
            let busy = raw_busy(&pool, losers[i % TASKS].as_str(), taken.as_str()).await;
            assert_eq!(busy.len(), 1);
        }
    })
    .await;
    eprintln!("plain busy read raw: {busy_rate:.0}/s");

    // Multi-seat holds on random seats, and general admission.
    let two_sessions = bulk_sessions(&raw, &event, "b2", MULTI_HOLDS).await;
    let two_rate = multi(&store, two_sessions, two_seats, 2).await;
    eprintln!("2-seat holds: {two_rate:.0}/s");
    let four_sessions = bulk_sessions(&raw, &event, "b4", MULTI_HOLDS).await;
    let four_rate = multi(&store, four_sessions, four_seats, 4).await;
    eprintln!("4-seat holds: {four_rate:.0}/s");
    let ga_sessions = Arc::new(bulk_sessions(&raw, &ga_event, "bg", GA_HOLDS + TASKS).await);
    for s in &ga_sessions[GA_HOLDS..] {
        store.hold_ga(s, "A", 2).await.expect("warm ga");
    }
    let false_sold_out = Arc::new(AtomicUsize::new(0));
    let (st, s, f) = (store.clone(), ga_sessions.clone(), false_sold_out.clone());
    let ga_rate = drive(GA_HOLDS, move |i| {
        let (st, s, f) = (st.clone(), s.clone(), f.clone());
        async move {
            match st.hold_ga(&s[i], "A", 2).await {
                Ok(h) => assert_eq!(h.seats.len(), 2),
                Err(Error::SoldOut) => {
                    f.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("ga hold: {e:?}"),
            }
        }
    })
    .await;
    let false_sold_out = false_sold_out.load(Ordering::Relaxed);
    eprintln!("GA holds of 2: {ga_rate:.0}/s, false sold-outs {false_sold_out}");

    let buyers = bulk_sessions(&raw, &event, "b1k", 1000).await;
    // The same one statement with every hold's commit waiting for the disk.
    raw.close().await;
    let durable = raw_pool(&db_url, true).await;
    let (o, s, pool) = (
        durable_seats.clone(),
        durable_sessions.clone(),
        durable.clone(),
    );
    let durable_rate = drive(spread, move |i| {
        let (o, s, pool) = (o.clone(), s.clone(), pool.clone());
        async move {
            raw_one_statement(&pool, s[i].as_str(), seat(o[i]).as_str()).await;
        }
    })
    .await;
    eprintln!("one statement, synchronous commit: {durable_rate:.0} holds/s");
    durable.close().await;

    // 1,000 buyers on one fresh seat, arriving within one second: losers' latency.
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

    let ratio = store_rate / one_rate;
    let of_one = |r: f64| r / store_rate;
    println!();
    println!(
        "| {:<46} | {:>14} | {:>18} | {:<5} |",
        "measure (PostgreSQL, 64 tasks, 40 conns)", "value", "target", ""
    );
    println!("|{:-<48}|{:-<16}|{:-<20}|{:-<7}|", "", "", "", "");
    row(
        "Store::hold, 1 seat, spread over 50k seats",
        format!("{store_rate:.0}/s"),
        "≥ 4000/s",
        Some(store_rate >= 4000.0),
    );
    row(
        "one-statement hold raw through sqlx (baseline)",
        format!("{one_rate:.0}/s"),
        "",
        None,
    );
    row(
        "ratio Store / baseline",
        format!("{ratio:.2}×"),
        "≥ 0.80×",
        Some(ratio >= 0.8),
    );
    row(
        "old multi-statement sequence raw",
        format!("{old_rate:.0}/s"),
        "",
        None,
    );
    row(
        "one statement, synchronous commit",
        format!("{durable_rate:.0}/s"),
        "",
        None,
    );
    row(
        "rejections on an already-held seat",
        format!("{reject_rate:.0}/s"),
        "≥ 25000/s",
        Some(reject_rate >= 25_000.0),
    );
    row(
        "plain busy read raw (the loser's limit)",
        format!("{busy_rate:.0}/s"),
        "",
        None,
    );
    row(
        "2-seat holds, random seats",
        format!("{two_rate:.0}/s {:.2}×", of_one(two_rate)),
        "",
        None,
    );
    row(
        "4-seat holds, random seats",
        format!("{four_rate:.0}/s {:.2}×", of_one(four_rate)),
        "≥ 0.70× of 1-seat",
        Some(of_one(four_rate) >= 0.7),
    );
    row(
        "GA holds of 2 from a 10,000-seat section",
        format!("{ga_rate:.0}/s {:.2}×", of_one(ga_rate)),
        "≥ 0.70× of 1-seat",
        Some(of_one(ga_rate) >= 0.7),
    );
    row(
        "GA false sold-outs",
        format!("{false_sold_out}"),
        "= 0",
        Some(false_sold_out == 0),
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
