//! Outbox rows as jobs: claimed with a lease, finished, or put back for later.
//!
//! The claim commits before any provider call, so no row lock or transaction is ever held
//! across the network; the lease (not a lock) keeps other workers off the row meanwhile, and
//! a worker that dies simply lets its lease run out.

use std::time::Duration;

use crate::Error;
use crate::store::Store;

/// One claimed outbox row.
#[derive(Debug, Clone)]
pub(crate) struct Job {
    pub id: i64,
    pub kind: String,
    pub event_id: String,
    pub attempt_id: Option<String>,
    pub payload: serde_json::Value,
    /// Claims so far, this one included: above 1, an earlier run may have reached the
    /// provider before it died or timed out.
    pub tries: i64,
}

/// A claimed row as the database returns it (the payload is JSON text on both dialects).
#[derive(sqlx::FromRow)]
struct JobRow {
    id: i64,
    kind: String,
    event_id: Option<String>,
    attempt_id: Option<String>,
    payload: String,
    tries: i64,
}

impl Store {
    /// Claims up to `n` due rows for `lease`, longest due first. `SKIP LOCKED` lets several
    /// workers claim at once without queueing on each other's rows (SQLite has one writer and
    /// needs no clause). The clock is read once, before the scan (`(select NOW)`), so the due
    /// rows are a range of `outbox_due` and the rows done or scheduled later are never read.
    pub(crate) async fn claim_jobs(&self, n: usize, lease: Duration) -> Result<Vec<Job>, Error> {
        let mut tx = self.begin().await?;
        let rows = sqlx::query_as::<_, JobRow>(self.sql(
            "update outbox set lease_until = NOW + MSEC($2), tries = tries + 1 \
             where id in (select id from outbox \
                          where done_at is null and run_after <= (select NOW) \
                          and (lease_until is null or lease_until < NOW) \
                          order by run_after, id limit $1 SKIP_LOCKED) \
             returning id, kind, event_id, attempt_id, payload, tries",
        ))
        .bind(n as i64)
        .bind(lease.as_millis() as i64)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.into_iter()
            .map(|r| {
                Ok(Job {
                    id: r.id,
                    kind: r.kind,
                    event_id: r.event_id.unwrap_or_default(),
                    attempt_id: r.attempt_id,
                    payload: serde_json::from_str(&r.payload)?,
                    tries: r.tries,
                })
            })
            .collect()
    }

    /// The job is finished. Conditional on `done_at is null` so a worker whose lease ran out
    /// and a second worker that re-ran the (idempotent) job do not fight over the row.
    pub(crate) async fn finish_job(&self, id: i64) -> Result<(), Error> {
        sqlx::query(self.sql(
            "update outbox set done_at = NOW, lease_until = null where id = $1 and done_at is null",
        ))
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Puts the job back to run after `delay`. A watching job (`payload` given) only looks
    /// again later and does not count as backlog; any other retry is work still owed.
    pub(crate) async fn retry_job(
        &self,
        id: i64,
        delay: Duration,
        error: &str,
        payload: Option<&serde_json::Value>,
    ) -> Result<(), Error> {
        sqlx::query(self.sql(
            "update outbox set run_after = NOW + MSEC($2), lease_until = null, last_error = $3, \
             payload = coalesce($4, payload), watching = $5 where id = $1 and done_at is null",
        ))
        .bind(id)
        .bind(delay.as_millis() as i64)
        .bind(error)
        .bind(payload.map(|p| p.to_string()))
        .bind(i32::from(payload.is_some()))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A follow-up job (capture, void, refund) in its own transaction. Enqueuing it twice
    /// is harmless: every money job is idempotent at the provider and in the rows.
    pub(crate) async fn enqueue(
        &self,
        kind: &str,
        event_id: &str,
        attempt_id: &str,
        payload: &serde_json::Value,
    ) -> Result<(), Error> {
        let mut tx = self.begin().await?;
        self.outbox(&mut tx, kind, event_id, Some(attempt_id), None, payload)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}

/// Exponential backoff with jitter: `base · 2^(tries-1)`, capped, then drawn uniformly from
/// its upper half so a crowd of failed jobs does not come back in step.
pub(crate) fn backoff(tries: i64, base: Duration, max: Duration) -> Duration {
    let exp = (tries.max(1) - 1).min(20) as u32;
    let full = base.saturating_mul(1u32 << exp).min(max);
    let ms = full.as_millis() as u64;
    Duration::from_millis(rand::random_range(ms / 2..=ms.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(2);
        for _ in 0..100 {
            let first = backoff(1, base, max);
            assert!((50..=100).contains(&first.as_millis()), "{first:?}");
            let fourth = backoff(4, base, max);
            assert!((400..=800).contains(&fourth.as_millis()), "{fourth:?}");
            let late = backoff(60, base, max);
            assert!((1000..=2000).contains(&late.as_millis()), "{late:?}");
        }
    }
}
