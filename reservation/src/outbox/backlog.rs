//! How far behind the outbox is: a growing backlog means the provider (or the worker) cannot
//! keep up, which the gateway reads as a reason to slow admission down.

use sqlx::Row;

use crate::Error;
use crate::store::Store;

/// Outbox rows not done yet, and how long the oldest has waited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    pub depth: i64,
    pub oldest_age_ms: i64,
}

impl Store {
    /// One indexed read (the `outbox_ready` partial index covers rows not done).
    pub async fn outbox_lag(&self) -> Result<Backlog, Error> {
        let row = sqlx::query(self.sql(
            "select count(*) as depth, coalesce(MS(NOW) - min(MS(created_at)), 0) as age \
             from outbox where done_at is null",
        ))
        .fetch_one(&self.pool)
        .await?;
        Ok(Backlog {
            depth: row.try_get("depth")?,
            oldest_age_ms: row.try_get::<i64, _>("age")?.max(0),
        })
    }
}
