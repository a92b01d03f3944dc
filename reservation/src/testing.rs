//! Test support (feature `testing`): a brand-new database per test, and a seeded event.
//! Panics with a clear message when PostgreSQL does not answer: tests never skip.

use sqlx::Connection;

use crate::ids::{EventId, SessionId, TicketId};
use crate::{NewEvent, NewSeat, Store, StoreOptions};

/// The one statement `Store::hold` sends on PostgreSQL, for benches that send it raw.
pub use crate::hold_pg::HOLD_SQL;

/// `DATABASE_URL`, or the local default.
pub fn database_url() -> String {
    std::env::var("DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into())
}

/// A fresh PostgreSQL database `t_<uuid>` on the server of `DATABASE_URL`, migrated, behind a
/// pool of 32 connections (enough for races; the server allows 100, shared by everyone).
pub async fn fresh_postgres() -> Store {
    fresh_postgres_with(StoreOptions {
        max_connections: 32,
        // Shared, loaded test machines: wait for a connection rather than fail the test.
        acquire_timeout: std::time::Duration::from_secs(30),
        ..StoreOptions::default()
    })
    .await
}

pub async fn fresh_postgres_with(options: StoreOptions) -> Store {
    let db_url = fresh_database_url("t_").await;
    Store::connect(&db_url, options)
        .await
        .unwrap_or_else(|e| panic!("cannot connect/migrate fresh database {db_url}: {e:?}"))
}

/// Creates an empty database named `<prefix><uuid>` on the server of `DATABASE_URL` and returns
/// its URL (the test script drops such databases left by earlier runs).
pub async fn fresh_database_url(prefix: &str) -> String {
    let url = database_url();
    let mut admin = sqlx::postgres::PgConnection::connect(&url).await.unwrap_or_else(|e| {
        panic!("PostgreSQL does not answer at DATABASE_URL={url}: {e} (start it, or set DATABASE_URL)")
    });
    let name = format!("{prefix}{}", uuid::Uuid::now_v7().simple());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("create database {name}")))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("cannot create database {name} via DATABASE_URL={url}: {e}"));
    let _ = admin.close().await;
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url.as_str(), String::new()),
    };
    let server = base.rsplit_once('/').map_or(base, |(server, _db)| server);
    format!("{server}/{name}{query}")
}

/// A fresh SQLite file in the temp folder, migrated.
pub async fn fresh_sqlite() -> Store {
    let path = std::env::temp_dir().join(format!("floodgate-{}.db", uuid::Uuid::now_v7().simple()));
    let url = format!("sqlite:{}", path.display());
    Store::connect(
        &url,
        StoreOptions {
            max_connections: 4,
            ..StoreOptions::default()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("cannot open SQLite at {url}: {e:?}"))
}

/// Creates an event with a unique id and `seats` seats `S00001`, `S00002`, … in section `A`
/// at 1,000 cents each; `tune` adjusts its settings first.
pub async fn seeded_event(store: &Store, seats: u32, tune: impl FnOnce(&mut NewEvent)) -> EventId {
    let id: EventId = format!("ev-{}", uuid::Uuid::now_v7().simple())
        .parse()
        .expect("generated event ids are valid");
    let mut e = NewEvent::new(id.clone(), "Test event");
    tune(&mut e);
    store.create_event(e).await.expect("create test event");
    let list: Vec<NewSeat> = (1..=seats)
        .map(|n| NewSeat {
            seat_id: format!("S{n:05}").parse().expect("seat ids are valid"),
            section: "A".into(),
            row_label: String::new(),
            number: i64::from(n),
            price_cents: 1000,
        })
        .collect();
    // An event may start with no seats (they come later); the store refuses an empty batch.
    if !list.is_empty() {
        store.add_seats(&id, &list).await.expect("add test seats");
    }
    id
}

/// Opens an admission session for a fresh ticket of `event`.
pub async fn session(store: &Store, event: &EventId) -> SessionId {
    let ticket: TicketId = format!("t-{}", uuid::Uuid::now_v7().simple())
        .parse()
        .expect("generated ticket ids are valid");
    store
        .open_session(event, &ticket, None, 1800)
        .await
        .expect("open test session")
        .session_id
}

/// Drops a database made by [`fresh_database_url`] (given its URL), closing its connections.
/// Returns what went wrong instead of panicking: dropping is cleanup.
pub async fn drop_database(db_url: &str) -> Result<(), String> {
    let name = db_url
        .split('?')
        .next()
        .and_then(|u| u.rsplit_once('/'))
        .map(|(_, name)| name.to_owned())
        .ok_or_else(|| format!("no database name in {db_url}"))?;
    let url = database_url();
    let mut admin = sqlx::postgres::PgConnection::connect(&url)
        .await
        .map_err(|e| format!("no connection at {url}: {e}"))?;
    let dropped = sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "drop database if exists {name} with (force)"
    )))
    .execute(&mut admin)
    .await;
    let _ = admin.close().await;
    dropped
        .map(drop)
        .map_err(|e| format!("drop database {name}: {e}"))
}

/// Rows of `table` (a name from the schema, never user input).
pub async fn table_count(store: &Store, table: &str) -> i64 {
    let sql = format!("select count(*) from {table}");
    sqlx::query_scalar::<_, i64>(sqlx::AssertSqlSafe(sql.clone()))
        .fetch_one(store.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// `(value, rows)` of `table` grouped by `column` (names from the schema).
pub async fn group_counts(
    store: &Store,
    table: &str,
    column: &str,
) -> std::collections::BTreeMap<String, i64> {
    let sql = format!("select {column}, count(*) from {table} group by {column}");
    sqlx::query_as::<_, (String, i64)>(sqlx::AssertSqlSafe(sql.clone()))
        .fetch_all(store.pool())
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .into_iter()
        .collect()
}

/// `(encrypted, in clear)` client connections to the PostgreSQL database named `database`, as
/// the server itself sees them (`pg_stat_ssl`).
pub async fn postgres_connection_encryption(store: &Store, database: &str) -> (i64, i64) {
    sqlx::query_as::<_, (i64, i64)>(
        "select count(*) filter (where s.ssl), count(*) filter (where not s.ssl) \
         from pg_stat_ssl s join pg_stat_activity a using (pid) \
         where a.backend_type = 'client backend' and a.datname = $1",
    )
    .bind(database)
    .fetch_one(store.pool())
    .await
    .unwrap_or_else(|e| panic!("pg_stat_ssl: {e}"))
}

/// Claims up to `n` due outbox rows as a worker does (leased for a minute, never finished):
/// for tests that look at what a claim reads. Returns how many it claimed.
pub async fn claim_due_work(store: &Store, n: usize) -> usize {
    store
        .claim_jobs(n, std::time::Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("claim outbox rows: {e}"))
        .len()
}

/// Claims up to `n` due webhook deliveries as the delivery worker does (`claim_due_work`
/// alike). Returns how many it claimed.
pub async fn claim_due_deliveries(store: &Store, n: usize) -> usize {
    store
        .claim_deliveries(n, std::time::Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("claim webhook deliveries: {e}"))
        .len()
}
