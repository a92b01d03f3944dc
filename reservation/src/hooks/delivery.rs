//! The delivery outbox: rows claimed with a lease (as the payment outbox's are), each attempt
//! recorded, then the row finished, put back after its backoff, or given up.

use std::time::Duration;

use crate::Error;
use crate::ids::{EventId, WebhookId};
use crate::store::Store;

use super::HookError;

/// One claimed delivery, with where it goes and what signs it.
#[derive(Debug, Clone)]
pub(crate) struct Claimed {
    pub id: i64,
    pub event_id: String,
    pub kind: String,
    pub fact_id: String,
    pub data: String,
    pub tries: i64,
    pub created_at_ms: i64,
    pub url: String,
    pub secret: String,
}

/// What one attempt got back.
#[derive(Debug, Clone)]
pub(crate) struct Tried {
    pub status: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

impl Tried {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// A delivery as the organizer sees it.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub id: i64,
    pub kind: String,
    pub fact_id: String,
    /// `pending`, `delivered` or `failed` (given up).
    pub state: &'static str,
    pub tries: i64,
    pub created_at_ms: i64,
    pub next_attempt_at_ms: Option<i64>,
    pub attempts: Vec<Attempt>,
}

/// One try of a delivery.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Attempt {
    pub delivery_id: i64,
    pub at_ms: i64,
    pub status_code: Option<i64>,
    pub error: Option<String>,
    pub duration_ms: i64,
}

#[derive(sqlx::FromRow)]
struct ClaimedRow {
    id: i64,
    webhook_id: String,
    event_id: String,
    kind: String,
    fact_id: String,
    data: String,
    tries: i64,
    created_at_ms: i64,
}

#[derive(sqlx::FromRow)]
struct DeliveryRow {
    id: i64,
    kind: String,
    fact_id: String,
    tries: i64,
    created_at_ms: i64,
    run_after_ms: i64,
    done: i64,
    failed: i64,
}

/// Deliveries listed per subscription, newest first.
pub const LISTED: i64 = 50;

impl Store {
    /// Claims up to `n` due deliveries for `lease`, longest due first; `SKIP LOCKED` keeps
    /// several gateways' workers off each other's rows. The clock is read once, before the
    /// scan, so only the due rows of `webhook_deliveries_due` are read (`claim_jobs` alike).
    pub(crate) async fn claim_deliveries(
        &self,
        n: usize,
        lease: Duration,
    ) -> Result<Vec<Claimed>, Error> {
        let mut tx = self.begin().await?;
        let rows: Vec<ClaimedRow> = sqlx::query_as(self.sql(
            "update webhook_deliveries set lease_until = NOW + MSEC($2), tries = tries + 1 \
             where id in (select id from webhook_deliveries \
                          where done_at is null and failed_at is null \
                          and run_after <= (select NOW) \
                          and (lease_until is null or lease_until < NOW) \
                          order by run_after, id limit $1 SKIP_LOCKED) \
             returning id, webhook_id, event_id, kind, fact_id, data, \
             cast(tries as bigint) as tries, MS(created_at) as created_at_ms",
        ))
        .bind(n as i64)
        .bind(lease.as_millis() as i64)
        .fetch_all(&mut *tx)
        .await?;
        let hooks: Vec<&str> = rows.iter().map(|r| r.webhook_id.as_str()).collect();
        let targets: Vec<(String, String, String)> = sqlx::query_as(self.sql(
            "select webhook_id, url, secret from webhook_subscriptions \
             where webhook_id IN_JSON($1))",
        ))
        .bind(serde_json::to_string(&hooks)?)
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(rows
            .into_iter()
            .filter_map(|r| {
                let (_, url, secret) = targets.iter().find(|t| t.0 == r.webhook_id)?;
                Some(Claimed {
                    id: r.id,
                    event_id: r.event_id,
                    kind: r.kind,
                    fact_id: r.fact_id,
                    data: r.data,
                    tries: r.tries,
                    created_at_ms: r.created_at_ms,
                    url: url.clone(),
                    secret: secret.clone(),
                })
            })
            .collect())
    }

    /// Records one attempt and what it means for the row: done, again after `retry_in`, or
    /// given up (`retry_in` is `None`).
    pub(crate) async fn record_delivery_attempt(
        &self,
        id: i64,
        tried: &Tried,
        retry_in: Option<Duration>,
    ) -> Result<(), Error> {
        let mut tx = self.begin().await?;
        let status = tried.status.map(i64::from);
        sqlx::query(
            "insert into webhook_attempts (delivery_id, status_code, error, duration_ms) \
             values ($1, $2, $3, $4)",
        )
        .bind(id)
        .bind(status)
        .bind(tried.error.as_deref())
        .bind(tried.duration_ms)
        .execute(&mut *tx)
        .await?;
        // Conditional on `done_at is null`: a worker whose lease ran out and one that re-ran the
        // delivery do not undo each other's success.
        let (sql, delay) = match retry_in {
            _ if tried.succeeded() => (
                "update webhook_deliveries set done_at = NOW, lease_until = null, \
                 last_status = $2, last_error = $3 where id = $1 and done_at is null",
                None,
            ),
            Some(delay) => (
                "update webhook_deliveries set run_after = NOW + MSEC($4), lease_until = null, \
                 last_status = $2, last_error = $3 where id = $1 and done_at is null",
                Some(delay.as_millis() as i64),
            ),
            None => (
                "update webhook_deliveries set failed_at = NOW, lease_until = null, \
                 last_status = $2, last_error = $3 where id = $1 and done_at is null",
                None,
            ),
        };
        let mut update = sqlx::query(self.sql(sql))
            .bind(id)
            .bind(status)
            .bind(tried.error.as_deref());
        if let Some(ms) = delay {
            update = update.bind(ms);
        }
        update.execute(&mut *tx).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The subscription's latest deliveries, each with its attempts, newest first.
    pub async fn webhook_deliveries(
        &self,
        event: &EventId,
        id: &WebhookId,
    ) -> Result<Vec<Delivery>, HookError> {
        self.webhook(event, id).await?;
        let rows = sqlx::query_as::<_, DeliveryRow>(self.sql(
            "select id, kind, fact_id, cast(tries as bigint) as tries, \
             MS(created_at) as created_at_ms, MS(run_after) as run_after_ms, \
             case when done_at is null then 0 else 1 end as done, \
             case when failed_at is null then 0 else 1 end as failed \
             from webhook_deliveries where webhook_id = $1 order by id desc limit $2",
        ))
        .bind(id.as_str())
        .bind(LISTED)
        .fetch_all(&self.pool)
        .await
        .map_err(Error::from)?;
        let oldest = rows.last().map_or(0, |r| r.id);
        let attempts = sqlx::query_as::<_, Attempt>(self.sql(
            "select a.delivery_id, MS(a.at) as at_ms, cast(a.status_code as bigint) as status_code, \
             a.error, cast(a.duration_ms as bigint) as duration_ms \
             from webhook_attempts a join webhook_deliveries d on d.id = a.delivery_id \
             where d.webhook_id = $1 and d.id >= $2 order by a.id",
        ))
        .bind(id.as_str())
        .bind(oldest)
        .fetch_all(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let state = match (r.done, r.failed) {
                    (1, _) => "delivered",
                    (_, 1) => "failed",
                    _ => "pending",
                };
                Delivery {
                    id: r.id,
                    kind: r.kind,
                    fact_id: r.fact_id,
                    state,
                    tries: r.tries,
                    created_at_ms: r.created_at_ms,
                    next_attempt_at_ms: (state == "pending").then_some(r.run_after_ms),
                    attempts: attempts
                        .iter()
                        .filter(|a| a.delivery_id == r.id)
                        .cloned()
                        .collect(),
                }
            })
            .collect())
    }
}
