//! Recording what the provider said, each as one conditional update with its log line in the
//! same transaction. Every step is a no-op when the row has already moved on, so a worker, a
//! reconciler and a webhook may all record the same answer.

use crate::Error;
use crate::ids::AttemptId;
use crate::journal::Entry;
use crate::store::{Store, Tx};

impl Store {
    /// One conditional update of an attempt (and optionally its order), logged as `kind` only
    /// when the attempt row changed.
    async fn record_step(
        &self,
        attempt: &AttemptId,
        attempt_sql: &'static str,
        order_sql: Option<&'static str>,
        kind: &'static str,
        payment_id: Option<&str>,
        detail: Option<&str>,
    ) -> Result<bool, Error> {
        let mut tx = self.begin().await?;
        let changed = self
            .record_step_in(
                &mut tx,
                attempt,
                attempt_sql,
                order_sql,
                kind,
                payment_id,
                detail,
            )
            .await?;
        tx.commit().await?;
        Ok(changed)
    }

    /// `record_step` inside the caller's transaction.
    #[allow(clippy::too_many_arguments)]
    async fn record_step_in(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        attempt_sql: &'static str,
        order_sql: Option<&'static str>,
        kind: &'static str,
        payment_id: Option<&str>,
        detail: Option<&str>,
    ) -> Result<bool, Error> {
        let changed: Option<(String, String)> = sqlx::query_as(self.sql(attempt_sql))
            .bind(attempt.as_str())
            .bind(payment_id)
            .bind(detail)
            .fetch_optional(&mut **tx)
            .await?;
        let Some((event_id, hold_id)) = changed else {
            return Ok(false);
        };
        if let Some(order_sql) = order_sql {
            sqlx::query(order_sql)
                .bind(attempt.as_str())
                .execute(&mut **tx)
                .await?;
        }
        self.log(
            tx,
            Entry {
                event_id: &event_id,
                kind,
                hold_id: Some(&hold_id),
                attempt_id: Some(attempt.as_str()),
                detail: payment_id
                    .map(|p| serde_json::json!({ "payment_id": p, "detail": detail }).to_string()),
                ..Entry::default()
            },
        )
        .await?;
        Ok(true)
    }

    /// The provider holds the money for an attempt not yet finalized.
    pub(crate) async fn record_authorized(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        payment_id: &str,
    ) -> Result<bool, Error> {
        self.record_step_in(
            tx,
            attempt,
            "update payment_attempts set state = 'authorized', provider_payment_id = $2, \
             last_error = coalesce($3, last_error), updated_at = NOW \
             where attempt_id = $1 and state in ('pending', 'ambiguous') returning event_id, hold_id",
            None,
            "PaymentAuthorized",
            Some(payment_id),
            None,
        )
        .await
    }

    /// No clear answer: the attempt waits for a retry, the reconciler or a webhook.
    pub(crate) async fn record_ambiguous(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        why: &str,
    ) -> Result<bool, Error> {
        self.record_step_in(
            tx,
            attempt,
            "update payment_attempts set state = 'ambiguous', last_error = $3, \
             provider_payment_id = coalesce(provider_payment_id, $2), updated_at = NOW \
             where attempt_id = $1 and state = 'pending' returning event_id, hold_id",
            None,
            "PaymentAmbiguous",
            None,
            Some(why),
        )
        .await
    }

    /// The order's money is taken.
    pub(crate) async fn record_captured(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        payment_id: &str,
    ) -> Result<bool, Error> {
        self.record_step_in(
            tx,
            attempt,
            "update payment_attempts set state = 'captured', \
             provider_payment_id = coalesce(provider_payment_id, $2), \
             last_error = coalesce($3, last_error), updated_at = NOW \
             where attempt_id = $1 and state = 'confirmed' returning event_id, hold_id",
            Some("update orders set payment_status = 'captured' where attempt_id = $1 and payment_status = 'authorized'"),
            "PaymentCaptured",
            Some(payment_id),
            None,
        )
        .await
    }

    /// An authorization without a sale was released at the provider. Only an abandoned
    /// attempt can hold such money (a seat lost to a newer owner implies the attempt was
    /// abandoned first); never an attempt that sold, whose money belongs to its order.
    pub(crate) async fn record_voided(
        &self,
        attempt: &AttemptId,
        payment_id: &str,
    ) -> Result<bool, Error> {
        self.record_step(
            attempt,
            "update payment_attempts set state = 'voided', \
             provider_payment_id = coalesce(provider_payment_id, $2), \
             last_error = coalesce($3, last_error), updated_at = NOW \
             where attempt_id = $1 and state = 'abandoned' \
             and not exists (select 1 from orders o where o.attempt_id = $1) \
             returning event_id, hold_id",
            None,
            "AuthorizationVoided",
            Some(payment_id),
            None,
        )
        .await
    }

    /// Money taken without a sale (or an order refunded) was given back.
    pub(crate) async fn record_refunded(
        &self,
        attempt: &AttemptId,
        payment_id: &str,
    ) -> Result<bool, Error> {
        self.record_step(
            attempt,
            "update payment_attempts set state = 'refunded', \
             provider_payment_id = coalesce(provider_payment_id, $2), \
             last_error = coalesce($3, last_error), updated_at = NOW \
             where attempt_id = $1 and state in ('abandoned', 'voided', 'confirmed', 'captured') \
             returning event_id, hold_id",
            Some("update orders set status = 'refunded', payment_status = 'refunded' where attempt_id = $1"),
            "RefundIssued",
            Some(payment_id),
            None,
        )
        .await
    }

    /// Whether the attempt ended in a sale (its money belongs to an order).
    pub(crate) async fn attempt_has_order(&self, attempt: &AttemptId) -> Result<bool, Error> {
        let n: i64 = sqlx::query_scalar("select count(*) from orders where attempt_id = $1")
            .bind(attempt.as_str())
            .fetch_one(&self.pool)
            .await?;
        Ok(n > 0)
    }
}
