//! Idempotency keys: a repeated POST gets the first answer, a different body with the same key
//! is refused, and a concurrent duplicate waits for the first to finish.

use std::time::Duration;

use sqlx::Row;

use crate::Error;
use crate::store::Store;

/// What `idempotency_begin` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Idempotency {
    /// First time: run the request, then call `idempotency_complete` (or `idempotency_abandon`).
    New,
    /// Seen before and finished: answer with this.
    Replay { status: u16, body: String },
    /// Seen before, still running after the wait: tell the client to retry later.
    InFlight,
}

/// How long a duplicate waits for the first request's stored answer.
const WAIT: Duration = Duration::from_secs(5);

impl Store {
    /// Claims `(scope, route, key)` for a request whose body hashes to `body_hash`.
    #[tracing::instrument(skip_all, err, fields(route))]
    pub async fn idempotency_begin(
        &self,
        scope: &str,
        route: &str,
        key: &str,
        body_hash: &str,
    ) -> Result<Idempotency, Error> {
        // The primary key decides who is first; a prior read could not.
        let claimed = sqlx::query(
            "insert into idempotency_keys (scope, route, key, body_hash) values ($1, $2, $3, $4) \
             on conflict (scope, route, key) do nothing",
        )
        .bind(scope)
        .bind(route)
        .bind(key)
        .bind(body_hash)
        .execute(&self.pool)
        .await?;
        if claimed.rows_affected() == 1 {
            return Ok(Idempotency::New);
        }
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let row = sqlx::query(
                "select body_hash, status_code, response from idempotency_keys \
                 where scope = $1 and route = $2 and key = $3",
            )
            .bind(scope)
            .bind(route)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
            let Some(row) = row else {
                // The first request gave up (abandon): this one may take the key now.
                return Box::pin(self.idempotency_begin(scope, route, key, body_hash)).await;
            };
            if row.try_get::<String, _>("body_hash")? != body_hash {
                return Err(Error::IdempotencyConflict);
            }
            if let Some(status) = row.try_get::<Option<i64>, _>("status_code")? {
                return Ok(Idempotency::Replay {
                    status: u16::try_from(status).unwrap_or(500),
                    body: row
                        .try_get::<Option<String>, _>("response")?
                        .unwrap_or_default(),
                });
            }
            if started.elapsed() >= WAIT {
                return Ok(Idempotency::InFlight);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// Stores the answer of the request that claimed the key.
    pub async fn idempotency_complete(
        &self,
        scope: &str,
        route: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), Error> {
        sqlx::query(
            "update idempotency_keys set status_code = $4, response = $5 \
             where scope = $1 and route = $2 and key = $3 and status_code is null",
        )
        .bind(scope)
        .bind(route)
        .bind(key)
        .bind(i64::from(status))
        .bind(body)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Drops an unfinished claim (the request failed before it had an answer worth keeping),
    /// so a retry with the same key runs again instead of waiting.
    pub async fn idempotency_abandon(
        &self,
        scope: &str,
        route: &str,
        key: &str,
    ) -> Result<(), Error> {
        sqlx::query(
            "delete from idempotency_keys where scope = $1 and route = $2 and key = $3 and status_code is null",
        )
        .bind(scope)
        .bind(route)
        .bind(key)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}
