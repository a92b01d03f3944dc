//! How far behind the outbox is: a growing backlog means the provider (or the worker) cannot
//! keep up, which the gateway reads as a reason to slow admission down.

use sqlx::Row;

use crate::Error;
use crate::store::Store;

/// Outbox rows not done yet, and how long the oldest job still owed has waited (jobs only
/// watching for late money are not owed work and are left out of the age).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    pub depth: i64,
    pub oldest_age_ms: i64,
}

impl Store {
    /// One indexed read (the `outbox_ready` partial index covers rows not done).
    pub async fn outbox_lag(&self) -> Result<Backlog, Error> {
        let row = sqlx::query(self.sql(
            "select count(*) as depth, \
             coalesce(MS(NOW) - min(case when watching = 0 then MS(created_at) end), 0) as age \
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::testing::{fresh_postgres, fresh_sqlite};
    use crate::{Error, Store};

    /// A job watching for late money never ages the backlog; a job still owed does.
    async fn watching_jobs_are_not_backlog(store: Store) -> Result<(), Error> {
        store
            .enqueue("void", "ev", "a_watch", &serde_json::json!({}))
            .await?;
        let jobs = store.claim_jobs(10, Duration::from_secs(60)).await?;
        assert_eq!(jobs.len(), 1);
        let next = serde_json::json!({"checks_left": 2});
        store
            .retry_job(jobs[0].id, Duration::from_secs(60), "watching", Some(&next))
            .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let lag = store.outbox_lag().await?;
        assert_eq!((lag.depth, lag.oldest_age_ms), (1, 0), "{lag:?}");

        store
            .enqueue("capture", "ev", "a_owed", &serde_json::json!({}))
            .await?;
        let jobs = store.claim_jobs(10, Duration::from_secs(60)).await?;
        assert_eq!(jobs.len(), 1);
        // A failed try is still owed work, however long its backoff.
        store
            .retry_job(jobs[0].id, Duration::from_secs(60), "5xx", None)
            .await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let lag = store.outbox_lag().await?;
        assert_eq!(lag.depth, 2, "{lag:?}");
        assert!(lag.oldest_age_ms >= 250, "{lag:?}");
        Ok(())
    }

    #[tokio::test]
    async fn postgres_backlog_leaves_out_watching_jobs() -> Result<(), Error> {
        watching_jobs_are_not_backlog(fresh_postgres().await).await
    }

    #[tokio::test]
    async fn sqlite_backlog_leaves_out_watching_jobs() -> Result<(), Error> {
        watching_jobs_are_not_backlog(fresh_sqlite().await).await
    }
}
