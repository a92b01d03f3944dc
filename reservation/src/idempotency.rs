//! Idempotency keys: a repeated POST gets the first answer, a different body with the same key
//! is refused, and a concurrent duplicate waits for the first to finish. A key whose first
//! request died before answering is reclaimable once its lease has run out.

use std::time::Duration;

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

/// How long a claim stays with its request, and how long a duplicate waits for its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencyTiming {
    /// A pending key is its first request's until then; after it, the request is taken to
    /// have died (a crash, a killed process) and one retry may take the key over. Longer
    /// than any request may run, so a live request is never overtaken.
    pub lease: Duration,
    /// How long a duplicate waits for the first request's stored answer before being told
    /// to retry later.
    pub wait: Duration,
}

impl Default for IdempotencyTiming {
    fn default() -> Self {
        Self {
            lease: Duration::from_secs(60),
            wait: Duration::from_secs(5),
        }
    }
}

/// The stored state of a key, as a duplicate reads it.
#[derive(sqlx::FromRow)]
struct Seen {
    body_hash: String,
    status_code: Option<i64>,
    response: Option<String>,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl Store {
    /// Claims `(scope, route, key)` for a request whose body hashes to `body_hash`, with the
    /// default lease and wait.
    pub async fn idempotency_begin(
        &self,
        scope: &str,
        route: &str,
        key: &str,
        body_hash: &str,
    ) -> Result<Idempotency, Error> {
        self.idempotency_begin_timed(scope, route, key, body_hash, IdempotencyTiming::default())
            .await
    }

    /// `idempotency_begin` with the caller's lease and wait (the gateway derives them from
    /// its request deadline).
    #[tracing::instrument(skip_all, err, fields(route))]
    pub async fn idempotency_begin_timed(
        &self,
        scope: &str,
        route: &str,
        key: &str,
        body_hash: &str,
        timing: IdempotencyTiming,
    ) -> Result<Idempotency, Error> {
        let lease_ms = millis(timing.lease);
        // The primary key decides who is first; a prior read could not.
        let claimed = sqlx::query(self.sql(
            "insert into idempotency_keys (scope, route, key, body_hash, lease_until) \
             values ($1, $2, $3, $4, NOW + MSEC($5)) on conflict (scope, route, key) do nothing",
        ))
        .bind(scope)
        .bind(route)
        .bind(key)
        .bind(body_hash)
        .bind(lease_ms)
        .execute(&self.pool)
        .await?;
        if claimed.rows_affected() == 1 {
            return Ok(Idempotency::New);
        }
        let started = tokio::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let seen = sqlx::query_as::<_, Seen>(
                "select body_hash, cast(status_code as bigint) as status_code, response \
                 from idempotency_keys where scope = $1 and route = $2 and key = $3",
            )
            .bind(scope)
            .bind(route)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
            let Some(seen) = seen else {
                // The first request gave up (abandon): this one may take the key now.
                return Box::pin(
                    self.idempotency_begin_timed(scope, route, key, body_hash, timing),
                )
                .await;
            };
            if seen.body_hash != body_hash {
                return Err(Error::IdempotencyConflict);
            }
            if let Some(status) = seen.status_code {
                return Ok(Idempotency::Replay {
                    status: u16::try_from(status).unwrap_or(500),
                    body: seen.response.unwrap_or_default(),
                });
            }
            if self
                .idempotency_take_over(scope, route, key, lease_ms)
                .await?
            {
                return Ok(Idempotency::New);
            }
            if started.elapsed() >= timing.wait {
                return Ok(Idempotency::InFlight);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    /// A pending key whose lease ran out (by the database clock) passes to this request with
    /// a fresh lease. The update re-checks the lease on the row itself, so of several retries
    /// arriving together exactly one is told it won.
    async fn idempotency_take_over(
        &self,
        scope: &str,
        route: &str,
        key: &str,
        lease_ms: i64,
    ) -> Result<bool, Error> {
        let taken = sqlx::query(self.sql(
            "update idempotency_keys set lease_until = NOW + MSEC($4) \
             where scope = $1 and route = $2 and key = $3 and status_code is null \
             and coalesce(lease_until, created_at + MSEC(60000)) <= NOW",
        ))
        .bind(scope)
        .bind(route)
        .bind(key)
        .bind(lease_ms)
        .execute(&self.pool)
        .await?;
        Ok(taken.rows_affected() == 1)
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
