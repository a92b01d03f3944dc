//! `/readyz` answers from what the background loops keep: it fails (503 problem+json naming
//! what is down) while the database refuses connections, costs no query per call, and a
//! background loop that panics is restarted, counted and reported.

mod support;

use std::time::Duration;

use sqlx::Connection;
use support::{Backends, spawn_app_with};

/// The tests arm process-wide failpoints and judge readiness: one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn admin() -> sqlx::PgConnection {
    let url = reservation::testing::database_url();
    sqlx::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL does not answer at DATABASE_URL={url}: {e}"))
}

/// Transactions PostgreSQL has counted for `database` (flushed by backends about once a second).
async fn transactions(admin: &mut sqlx::PgConnection, database: &str) -> i64 {
    sqlx::query_scalar(
        "select (xact_commit + xact_rollback)::bigint from pg_stat_database where datname = $1",
    )
    .bind(database)
    .fetch_one(admin)
    .await
    .expect("read pg_stat_database")
}

/// The value of one series of `/metrics` (0 when absent).
async fn series(app: &support::Gateway, line_start: &str) -> f64 {
    let text = app.get("/metrics").await.text;
    text.lines()
        .find_map(|l| l.strip_prefix(line_start))
        .and_then(|rest| rest.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Polls `/readyz` until it answers `status` (the body checked by `check`), within `within`.
async fn wait_readyz(
    app: &support::Gateway,
    status: u16,
    within: Duration,
) -> support::http::Answer {
    let started = tokio::time::Instant::now();
    loop {
        let answer = app.get("/readyz").await;
        if answer.status == status {
            return answer;
        }
        assert!(
            started.elapsed() < within,
            "/readyz did not answer {status} within {within:?}; last: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_fails_while_the_database_is_away_and_asks_it_nothing_per_call() {
    let _one = ONE_AT_A_TIME.lock().await;
    let url = reservation::testing::fresh_database_url("t_ready_").await;
    let database = url
        .rsplit('/')
        .next()
        .and_then(|d| d.split('?').next())
        .expect("a database name")
        .to_owned();
    let gateway_url = url.clone();
    let app = spawn_app_with(Backends::Postgres, move |c| {
        c.database_url = gateway_url.clone();
    })
    .await;
    app.get("/readyz").await.expect(200);

    // No query per call: 500 calls move PostgreSQL's transaction count no more than the
    // background loops do in the same time.
    let mut admin = admin().await;
    let a = transactions(&mut admin, &database).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let b = transactions(&mut admin, &database).await;
    for _ in 0..500 {
        app.get("/readyz").await.expect(200);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let c = transactions(&mut admin, &database).await;
    let (idle, during) = (b - a, c - b);
    assert!(
        during < 2 * idle + 250,
        "500 readyz calls: {during} transactions, against {idle} in an idle 1.5 s"
    );

    // The database refuses this gateway: no new connections, the open ones ended.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "alter database {database} allow_connections false"
    )))
    .execute(&mut admin)
    .await
    .expect("refuse connections");
    sqlx::query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1")
        .bind(&database)
        .execute(&mut admin)
        .await
        .expect("end the gateway's connections");
    let refused = wait_readyz(&app, 503, Duration::from_secs(8)).await;
    refused.expect_problem(503, "overloaded");
    assert!(
        refused.body["down"]
            .as_array()
            .is_some_and(|down| down.iter().any(|d| d == "database")),
        "the answer names the database: {refused:?}"
    );

    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "alter database {database} allow_connections true"
    )))
    .execute(&mut admin)
    .await
    .expect("accept connections again");
    wait_readyz(&app, 200, Duration::from_secs(15)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_that_panics_is_restarted_counted_and_ready_again() {
    let _one = ONE_AT_A_TIME.lock().await;
    let app = spawn_app_with(Backends::Embedded, |_| {}).await;
    let event = app
        .create_event(5, serde_json::json!({"rate_per_min": 60, "max_active": 5}))
        .await;
    app.join_queue(&event).await;
    app.get("/readyz").await.expect(200);
    let restarts = r#"floodgate_loop_restarts_total{loop="meter"} "#;
    let before = series(&app, restarts).await;

    gateway::supervisor::failpoint::panic_loop("meter");
    let started = tokio::time::Instant::now();
    while series(&app, restarts).await < before + 1.0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "the meter's panic was not counted within 5 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_readyz(&app, 200, Duration::from_secs(5)).await;
    // The restarted meter ticks the event again (the sampler publishes ticks once a second).
    let ticks = "floodgate_meter_ticks_total ";
    let t0 = series(&app, ticks).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert!(
        series(&app, ticks).await > t0,
        "the restarted meter does not tick"
    );
}
