//! The figures the gateway samples each second for `/metrics`: live events' admission limits,
//! the sweeper's lag, payment attempts by state and how long they spent paying, and the pool.
//! Read-only, indexed and tiny; the same on every instance, since they read shared rows.

use std::time::{Duration, Instant};

use crate::Error;
use crate::store::Store;

/// A live event's configured admission limits.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LiveEventLimits {
    pub event_id: String,
    pub rate_per_min: i64,
    pub max_active: i64,
}

/// How many payment attempts are in one state.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct AttemptCount {
    pub state: String,
    pub n: i64,
}

/// An attempt that reached a final state, with when it started and ended (ms).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ResolvedAttempt {
    pub attempt_id: String,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// The connection pool at this moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolFigures {
    pub max: u32,
    pub size: u32,
    pub idle: u32,
}

impl Store {
    /// Events not closed, with their admission rate and active-session cap.
    pub async fn live_event_limits(&self) -> Result<Vec<LiveEventLimits>, Error> {
        Ok(sqlx::query_as(
            "select event_id, cast(rate_per_min as bigint) as rate_per_min, \
             cast(max_active as bigint) as max_active from admission_controls where closed = false",
        )
        .fetch_all(&self.pool)
        .await?)
    }

    /// How long the oldest expired but unswept hold has been waiting for the sweeper (ms, 0
    /// when none).
    pub async fn sweeper_lag_ms(&self) -> Result<i64, Error> {
        Ok(sqlx::query_scalar(self.sql(
            "select coalesce(MS(NOW) - MS(min(hold_expires_at)), 0) from seats \
             where state = 'held' and hold_expires_at <= NOW",
        ))
        .fetch_one(&self.pool)
        .await?)
    }

    pub async fn attempts_by_state(&self) -> Result<Vec<AttemptCount>, Error> {
        Ok(
            sqlx::query_as("select state, count(*) as n from payment_attempts group by state")
                .fetch_all(&self.pool)
                .await?,
        )
    }

    /// Age of the oldest open payment attempt (ms, 0 when none).
    pub async fn oldest_open_attempt_ms(&self) -> Result<i64, Error> {
        Ok(sqlx::query_scalar(self.sql(
            "select coalesce(MS(NOW) - MS(min(created_at)), 0) from payment_attempts \
             where state in ('pending', 'ambiguous', 'authorized')",
        ))
        .fetch_one(&self.pool)
        .await?)
    }

    /// Attempts that reached a final state after `since_ms`.
    pub async fn attempts_resolved_since(
        &self,
        since_ms: i64,
    ) -> Result<Vec<ResolvedAttempt>, Error> {
        Ok(sqlx::query_as(self.sql(
            "select attempt_id, MS(created_at) as created_at_ms, MS(updated_at) as updated_at_ms \
             from payment_attempts \
             where state not in ('pending', 'ambiguous', 'authorized') and updated_at > TS($1)",
        ))
        .bind(since_ms)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The database clock (ms).
    pub async fn now_ms(&self) -> Result<i64, Error> {
        Ok(sqlx::query_scalar(self.sql("select MS(NOW)"))
            .fetch_one(&self.pool)
            .await?)
    }

    pub fn pool_figures(&self) -> PoolFigures {
        PoolFigures {
            max: self.pool.options().get_max_connections(),
            size: self.pool.size(),
            idle: u32::try_from(self.pool.num_idle()).unwrap_or(u32::MAX),
        }
    }

    /// How long taking a connection from the pool takes now, waiting at most `limit`.
    pub async fn acquire_probe(&self, limit: Duration) -> Duration {
        let started = Instant::now();
        if let Ok(Ok(connection)) = tokio::time::timeout(limit, self.pool.acquire()).await {
            drop(connection);
        }
        started.elapsed()
    }
}
