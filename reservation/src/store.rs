//! The store handle: one pool over PostgreSQL or SQLite, migrations, connection guards,
//! write transactions and the retry of transactions the database aborted.

use std::time::Duration;

use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{Any, AnyPool, Connection, Executor, Transaction};

use crate::Error;
use crate::dialect::{self, Dialect};
use crate::receipt::ReceiptKeys;

/// Limits applied to every connection (PostgreSQL) and to the pool.
#[derive(Debug, Clone)]
pub struct StoreOptions {
    pub max_connections: u32,
    /// How long a caller waits for a free connection before a storage error.
    pub acquire_timeout: Duration,
    /// PostgreSQL `lock_timeout`: a row lock waited on longer than this aborts (and is retried).
    pub lock_timeout: Duration,
    /// PostgreSQL `statement_timeout`.
    pub statement_timeout: Duration,
    /// PostgreSQL `idle_in_transaction_session_timeout`: a stuck client cannot pin row locks.
    pub idle_in_transaction_timeout: Duration,
    /// SQLite busy timeout (writers queue on the file lock this long).
    pub busy_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_connections: 16,
            acquire_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
            statement_timeout: Duration::from_secs(10),
            idle_in_transaction_timeout: Duration::from_secs(15),
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// The reservation store. Cheap to clone: clones share one pool.
#[derive(Clone)]
pub struct Store {
    pub(crate) pool: AnyPool,
    pub(crate) dialect: Dialect,
    /// Issues the receipt keys of new holds (`receipt.rs`).
    pub(crate) receipts: ReceiptKeys,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("dialect", &self.dialect)
            .finish()
    }
}

pub(crate) type Tx = Transaction<'static, Any>;

/// How many times a transaction the database aborted (deadlock, serialization, lock timeout,
/// busy) is run again before the error surfaces.
const RETRIES: u32 = 8;

/// A pooled connection idle longer than this is pinged before it is handed out.
const IDLE_PING_AFTER: Duration = Duration::from_secs(1);

impl Store {
    /// Tags receipt keys under the deployment's `secret` from now on (every instance sharing a
    /// database must use the same one). Until then a secret of this process alone is used.
    pub fn set_receipt_secret(&mut self, secret: &[u8]) {
        self.receipts = ReceiptKeys::new(secret);
    }

    /// What tells an issued receipt key from a made-up one.
    pub fn receipt_keys(&self) -> &ReceiptKeys {
        &self.receipts
    }

    /// Connects to `postgres://…` or `sqlite:…` (the file is created if missing) and applies
    /// the embedded migrations.
    pub async fn connect(url: &str, options: StoreOptions) -> Result<Store, Error> {
        install_default_drivers();
        let (dialect, url) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            (Dialect::Postgres, url.to_owned())
        } else if url.starts_with("sqlite:") {
            let url = if url.contains("mode=") {
                url.to_owned()
            } else if url.contains('?') {
                format!("{url}&mode=rwc")
            } else {
                format!("{url}?mode=rwc")
            };
            (Dialect::Sqlite, url)
        } else {
            return Err(Error::Storage(sqlx::Error::Configuration(
                "database URL must start with postgres://, postgresql:// or sqlite:".into(),
            )));
        };
        let setup = match dialect {
            Dialect::Postgres => format!(
                "set lock_timeout = {}; set statement_timeout = {}; \
                 set idle_in_transaction_session_timeout = {};",
                options.lock_timeout.as_millis(),
                options.statement_timeout.as_millis(),
                options.idle_in_transaction_timeout.as_millis()
            ),
            Dialect::Sqlite => format!(
                "pragma journal_mode = wal; pragma synchronous = normal; \
                 pragma foreign_keys = on; pragma busy_timeout = {};",
                options.busy_timeout.as_millis()
            ),
        };
        let pool = AnyPoolOptions::new()
            .max_connections(options.max_connections)
            .acquire_timeout(options.acquire_timeout)
            // sqlx pings every connection it hands out, a second round trip per statement that
            // halved hold throughput. A connection back from use a moment ago is known to be
            // live; only one that sat idle is checked before use.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for > IDLE_PING_AFTER {
                        conn.ping().await?;
                    }
                    Ok(true)
                })
            })
            .after_connect(move |conn, _meta| {
                let setup = setup.clone();
                Box::pin(async move {
                    conn.execute(sqlx::raw_sql(sqlx::AssertSqlSafe(setup)))
                        .await?;
                    Ok(())
                })
            })
            .connect(&url)
            .await?;
        let migrator = match dialect {
            Dialect::Postgres => sqlx::migrate!("../migrations/postgres"),
            Dialect::Sqlite => sqlx::migrate!("../migrations/sqlite"),
        };
        migrator
            .run(&pool)
            .await
            .map_err(|e| Error::Storage(sqlx::Error::Migrate(Box::new(e))))?;
        Ok(Store {
            pool,
            dialect,
            receipts: ReceiptKeys::random(),
        })
    }

    /// Which database this store talks to.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The underlying pool, for tests and tools that inspect the rows directly.
    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Answers when the database answers.
    pub async fn ping(&self) -> Result<(), Error> {
        sqlx::query("select 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Closes the pool (tests, shutdown).
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// The statement text for this store's dialect.
    pub(crate) fn sql(&self, text: &'static str) -> &'static str {
        dialect::sql(self.dialect, text)
    }

    /// A write transaction. On SQLite `BEGIN IMMEDIATE` takes the write lock up front, so two
    /// writers queue on the busy timeout instead of deadlocking on a lock upgrade.
    pub(crate) async fn begin(&self) -> Result<Tx, Error> {
        Ok(self.pool.begin_with(self.dialect.begin_write()).await?)
    }

    /// A read-only view of one consistent snapshot across tables, for checkers that read
    /// while the system is busy. Roll it back when done.
    pub async fn begin_snapshot(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, Error> {
        Ok(self.pool.begin_with(self.dialect.begin_snapshot()).await?)
    }

    /// Runs one transaction body again while the database aborts it for reasons a retry
    /// fixes, with a jittered, growing pause so the contenders do not collide again in step.
    pub(crate) async fn retrying<T, F, Fut>(&self, mut body: F) -> Result<T, Error>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let mut attempt = 0;
        loop {
            match body().await {
                Err(e) if e.is_retryable() && attempt < RETRIES => {
                    attempt += 1;
                    let cap = 2u64 << attempt.min(6);
                    let pause = rand::random_range(1..=cap);
                    tracing::debug!(attempt, error = %e, "transaction aborted by the database, retrying");
                    tokio::time::sleep(Duration::from_millis(pause)).await;
                }
                other => return other,
            }
        }
    }
}
