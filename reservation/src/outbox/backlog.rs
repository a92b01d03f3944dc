//! How far behind the outbox is: a growing backlog means the provider (or the worker) cannot
//! keep up, which the gateway reads as a reason to slow admission down.

use crate::Error;
use crate::store::Store;

/// Outbox rows not done yet, and how long owed work has been waiting: the oldest owed job's
/// age (what an operator alerts on) and the age half the owed jobs exceed (what backpressure
/// judges the core by). Jobs only watching for late money are not owed work and are left out.
///
/// Why backpressure does not use the oldest job: a buyer whose card keeps
/// failing is retried until the attempt is abandoned, and a few such jobs would read as a
/// failing core, most of all when admission is already slowed and few other jobs exist, so
/// they would keep it slowed. A slow provider or a stalled worker ages most jobs, and so this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    pub depth: i64,
    pub oldest_age_ms: i64,
    pub median_age_ms: i64,
}

#[derive(sqlx::FromRow)]
struct BacklogRow {
    depth: i64,
    oldest: i64,
    age: i64,
}

impl Store {
    /// Reads only rows not done (the `outbox_due` partial index), once a second per instance.
    pub async fn outbox_lag(&self) -> Result<Backlog, Error> {
        let row = sqlx::query_as::<_, BacklogRow>(self.sql(
            "select (select count(*) from outbox where done_at is null) as depth, \
             coalesce(MS(NOW) - (select min(MS(created_at)) from outbox \
               where done_at is null and watching = 0), 0) as oldest, \
             coalesce(MS(NOW) - (select MS(created_at) from outbox \
               where done_at is null and watching = 0 order by created_at \
               limit 1 offset (select count(*) / 2 from outbox \
                 where done_at is null and watching = 0)), 0) as age",
        ))
        .fetch_one(&self.pool)
        .await?;
        Ok(Backlog {
            depth: row.depth,
            oldest_age_ms: row.oldest.max(0),
            median_age_ms: row.age.max(0),
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
        assert_eq!(
            lag.median_age_ms / 50,
            lag.oldest_age_ms / 50,
            "one owed job is the median"
        );
        Ok(())
    }

    /// A few stuck jobs among fresh ones age the oldest, not the median; once most jobs wait,
    /// the median ages too.
    async fn stuck_jobs_do_not_age_the_median(store: Store) -> Result<(), Error> {
        for n in 0..3 {
            store
                .enqueue(
                    "authorize",
                    "ev",
                    &format!("a_stuck{n}"),
                    &serde_json::json!({}),
                )
                .await?;
        }
        tokio::time::sleep(Duration::from_millis(400)).await;
        for n in 0..4 {
            store
                .enqueue("authorize", "ev", &format!("a_{n}"), &serde_json::json!({}))
                .await?;
        }
        let lag = store.outbox_lag().await?;
        assert_eq!(lag.depth, 7, "{lag:?}");
        assert!(lag.oldest_age_ms >= 400, "{lag:?}");
        assert!(
            lag.median_age_ms < 300,
            "three stuck jobs of seven: {lag:?}"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        let lag = store.outbox_lag().await?;
        assert!(lag.median_age_ms >= 400, "every job waiting: {lag:?}");
        Ok(())
    }

    #[tokio::test]
    async fn postgres_backlog_counts_owed_work_by_its_median_age() -> Result<(), Error> {
        watching_jobs_are_not_backlog(fresh_postgres().await).await?;
        stuck_jobs_do_not_age_the_median(fresh_postgres().await).await
    }

    #[tokio::test]
    async fn sqlite_backlog_counts_owed_work_by_its_median_age() -> Result<(), Error> {
        watching_jobs_are_not_backlog(fresh_sqlite().await).await?;
        stuck_jobs_do_not_age_the_median(fresh_sqlite().await).await
    }
}
