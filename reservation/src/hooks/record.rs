//! Facts recorded for the subscriptions that want them: one delivery row per subscription,
//! deduplicated on the fact's id. Orders and pauses are recorded by the triggers of migration
//! 0015, inside the transaction that sells, refunds or pauses. The facts no transaction makes
//! (the opening time passing, the last seat going, a payment overdue) are noticed here by the
//! worker's scan; every gateway scans, and the fact id keeps it to one delivery.

use serde_json::{Value, json};

use crate::Error;
use crate::ids::{self, EventId, WebhookId, trusted};
use crate::store::Store;

use super::HookError;
use super::kind::{Kind, PING};

/// How far back a passed opening is still news.
const OPENED_WITHIN_MS: i64 = 24 * 3600 * 1000;
/// Facts of one kind recorded per scan; the rest wait for the next.
const PER_SCAN: i64 = 100;

impl Store {
    /// Records `kind` for every subscription of `event` that wants it.
    pub(crate) async fn record_fact(
        &self,
        event: &str,
        kind: Kind,
        fact_id: &str,
        data: &Value,
    ) -> Result<u64, Error> {
        let done = sqlx::query(
            "insert into webhook_deliveries (webhook_id, event_id, kind, fact_id, data) \
             select webhook_id, event_id, $2, $3, $4 from webhook_subscriptions \
             where event_id = $1 and (kinds & $5) <> 0 \
             on conflict (webhook_id, fact_id) do nothing",
        )
        .bind(event)
        .bind(kind.as_str())
        .bind(fact_id)
        .bind(data.to_string())
        .bind(kind.bit())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Queues a test delivery (`ping`) to one subscription; returns the delivery's id.
    pub async fn ping_webhook(&self, event: &EventId, id: &WebhookId) -> Result<i64, HookError> {
        self.webhook(event, id).await?;
        let fact = ids::generate("ping");
        let data = json!({ "webhook_id": id.as_str() });
        let delivery: i64 = sqlx::query_scalar(
            "insert into webhook_deliveries (webhook_id, event_id, kind, fact_id, data) \
             values ($1, $2, $3, $4, $5) returning id",
        )
        .bind(id.as_str())
        .bind(event.as_str())
        .bind(PING)
        .bind(&fact)
        .bind(data.to_string())
        .fetch_one(&self.pool)
        .await
        .map_err(Error::from)?;
        Ok(delivery)
    }

    /// Notices the facts no transaction records; `overdue_s` is how long past its abandon
    /// deadline a payment without a final answer counts as stuck.
    pub(crate) async fn scan_facts(&self, overdue_s: i64) -> Result<(), Error> {
        self.scan_opened().await?;
        self.scan_sold_out().await?;
        self.scan_stuck(overdue_s).await
    }

    async fn scan_opened(&self) -> Result<(), Error> {
        let opened: Vec<(String, i64)> = sqlx::query_as(self.sql(
            "select e.event_id, MS(e.opens_at) from events e \
             where e.opens_at <= NOW and e.opens_at > NOW - MSEC($1) \
             and exists (select 1 from webhook_subscriptions s \
                         where s.event_id = e.event_id and (s.kinds & $2) <> 0 \
                         and not exists (select 1 from webhook_deliveries d \
                             where d.webhook_id = s.webhook_id and d.fact_id = 'queue.opened:' || e.event_id)) \
             limit $3",
        ))
        .bind(OPENED_WITHIN_MS)
        .bind(Kind::QueueOpened.bit())
        .bind(PER_SCAN)
        .fetch_all(&self.pool)
        .await?;
        for (event, opens_at_ms) in opened {
            let data = json!({ "opens_at": rfc3339(opens_at_ms) });
            self.record_fact(
                &event,
                Kind::QueueOpened,
                &format!("queue.opened:{event}"),
                &data,
            )
            .await?;
        }
        Ok(())
    }

    /// Sold out as the meter judges it: seats exist, none is available and none is held or
    /// paying. Named by the seats sold then, so selling out again after seats came back is
    /// news again.
    async fn scan_sold_out(&self) -> Result<(), Error> {
        let watched: Vec<(String,)> = sqlx::query_as(
            "select distinct event_id from webhook_subscriptions where (kinds & $1) <> 0 \
             order by event_id",
        )
        .bind(Kind::SoldOut.bit())
        .fetch_all(&self.pool)
        .await?;
        for (event,) in watched {
            let id: EventId = trusted(event)?;
            let seats = self.seat_availability(&id).await?;
            if seats.sold == 0 || seats.available != 0 || seats.held_or_paying != 0 {
                continue;
            }
            let fact = format!("event.sold_out:{id}:{}", seats.sold);
            self.record_fact(
                id.as_str(),
                Kind::SoldOut,
                &fact,
                &json!({ "sold": seats.sold }),
            )
            .await?;
        }
        Ok(())
    }

    async fn scan_stuck(&self, overdue_s: i64) -> Result<(), Error> {
        let stuck: Vec<(String, String, String, i64, String, i64)> = sqlx::query_as(self.sql(
            "select a.event_id, a.attempt_id, a.hold_id, a.amount_cents, a.state, MS(a.abandon_at) \
             from payment_attempts a \
             where a.state in ('pending', 'ambiguous', 'authorized') and a.abandon_at <= NOW - MSEC($1) \
             and exists (select 1 from webhook_subscriptions s \
                         where s.event_id = a.event_id and (s.kinds & $2) <> 0 \
                         and not exists (select 1 from webhook_deliveries d \
                             where d.webhook_id = s.webhook_id and d.fact_id = 'payment.stuck:' || a.attempt_id)) \
             limit $3",
        ))
        .bind(overdue_s.saturating_mul(1000))
        .bind(Kind::PaymentStuck.bit())
        .bind(PER_SCAN)
        .fetch_all(&self.pool)
        .await?;
        for (event, attempt, hold, amount_cents, state, abandon_at_ms) in stuck {
            let data = json!({
                "payment_id": attempt, "hold_id": hold, "amount_cents": amount_cents,
                "state": state, "abandon_at": rfc3339(abandon_at_ms),
            });
            let fact = format!("payment.stuck:{attempt}");
            self.record_fact(&event, Kind::PaymentStuck, &fact, &data)
                .await?;
        }
        Ok(())
    }
}

/// Unix milliseconds as RFC 3339 UTC.
pub(crate) fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}
