//! Provider webhooks (`POST /api/payments/webhook`): verified, matched on the attempt id the
//! payment carries as metadata, deduplicated on the provider's event id, and applied through
//! the same path as the worker. The payload is only a hint: the payment is re-fetched.
//!
//! Deduplication: the event id is inserted in the transaction that acts on it, before acting.
//! A racing second delivery blocks on that row's unique index until the first commits, then
//! finds it and does nothing; a crash before commit leaves neither the record nor the effect,
//! so the provider's redelivery acts afresh. A stored id answers with the stored outcome.

use crate::ids::AttemptId;
use crate::outbox::Converged;
use crate::payments::Outcome;
use crate::payments::Provider;
use crate::payments::webhook::{self, SignatureError};
use crate::{Error, Store};

/// What the gateway answers 2xx to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookAck {
    /// Applied to the attempt; `outcome` is `confirmed`, `declined`, `compensating` or `pending`.
    Applied {
        attempt_id: AttemptId,
        outcome: String,
    },
    /// The event id was seen before: nothing ran, here is what the first delivery did.
    Duplicate { outcome: String },
    /// Valid, but about no attempt of ours: recorded and acknowledged.
    Unmatched,
}

/// What the gateway answers 4xx/5xx to. Nothing was changed in any case.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Missing, malformed, wrong or too old `Stripe-Signature` (400).
    #[error("webhook signature refused: {0}")]
    Signature(#[from] SignatureError),
    /// Signed, but not an event we can read (400).
    #[error("malformed webhook body: {0}")]
    Malformed(String),
    /// The provider did not answer the re-fetch: answer 503 so it delivers again.
    #[error("payment provider unavailable: {0}")]
    ProviderUnavailable(String),
    /// 500.
    #[error(transparent)]
    Store(#[from] Error),
}

/// Handles one delivery: `signature` is the `Stripe-Signature` header, `body` the raw bytes.
#[tracing::instrument(skip_all, err)]
pub async fn intake_webhook(
    store: &Store,
    provider: &Provider,
    secret: &[u8],
    signature: Option<&str>,
    body: &[u8],
) -> Result<WebhookAck, WebhookError> {
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    webhook::verify(secret, signature, body, now)?;
    let event = webhook::parse_event(body).map_err(|e| WebhookError::Malformed(e.to_string()))?;
    if let Some(outcome) = stored_outcome(store, &event.id).await? {
        return Ok(WebhookAck::Duplicate { outcome });
    }
    let attempt = event.attempt_id().and_then(|a| a.parse::<AttemptId>().ok());
    let known = match &attempt {
        Some(a) => match store.get_attempt(a).await {
            Ok(found) => Some(found),
            Err(Error::AttemptNotFound) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    let Some(a) = known else {
        record(store, &event, None, false, "unmatched").await?;
        return Ok(WebhookAck::Unmatched);
    };
    // Re-fetch: a forged or stale payload cannot move money or seats, only the provider can.
    let outcome = match provider.retrieve(event.payment_id()).await {
        Outcome::Ambiguous { why } => return Err(WebhookError::ProviderUnavailable(why)),
        Outcome::NotFound | Outcome::Rejected { .. } => {
            record(store, &event, Some(&a.attempt_id), false, "unmatched").await?;
            return Ok(WebhookAck::Unmatched);
        }
        o => o,
    };
    // The payment must be the one this attempt's key created (a signed event naming another
    // payment with our attempt id is not ours to apply).
    if let (Some(ours), Some(theirs)) = (&a.provider_payment_id, outcome.payment_id())
        && ours != theirs
    {
        record(store, &event, Some(&a.attempt_id), false, "unmatched").await?;
        return Ok(WebhookAck::Unmatched);
    }
    let applied = store
        .retrying(|| apply(store, &event, &a.attempt_id, a.event_id.as_str(), &outcome))
        .await?;
    match applied {
        Some(result) => Ok(WebhookAck::Applied {
            attempt_id: a.attempt_id,
            outcome: result.as_str().to_owned(),
        }),
        // A racing delivery of the same event acted first; this one changed nothing.
        None => Ok(WebhookAck::Duplicate {
            outcome: stored_outcome(store, &event.id).await?.unwrap_or_default(),
        }),
    }
}

/// Claims the event id and acts on it in one transaction; `None` if the id was already there.
async fn apply(
    store: &Store,
    event: &webhook::WebhookEvent,
    attempt: &AttemptId,
    event_id: &str,
    outcome: &Outcome,
) -> Result<Option<Converged>, Error> {
    let mut tx = store.begin().await?;
    let claimed = sqlx::query(
        "insert into webhook_events (provider_event_id, kind, payment_id, attempt_id, matched, outcome) \
         values ($1, $2, $3, $4, true, null) on conflict (provider_event_id) do nothing",
    )
    .bind(&event.id)
    .bind(&event.kind)
    .bind(event.payment_id())
    .bind(attempt.as_str())
    .execute(&mut *tx)
    .await?;
    if claimed.rows_affected() != 1 {
        return Ok(None);
    }
    let converged = store
        .converge_in(&mut tx, attempt, event_id, outcome)
        .await?;
    sqlx::query("update webhook_events set outcome = $2 where provider_event_id = $1")
        .bind(&event.id)
        .bind(converged.as_str())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Some(converged))
}

async fn stored_outcome(store: &Store, event_id: &str) -> Result<Option<String>, Error> {
    Ok(sqlx::query_scalar(
        "select coalesce(outcome, '') as outcome from webhook_events where provider_event_id = $1",
    )
    .bind(event_id)
    .fetch_optional(store.pool())
    .await?)
}

/// Records the event once; `false` if its id was already there.
async fn record(
    store: &Store,
    event: &webhook::WebhookEvent,
    attempt: Option<&AttemptId>,
    matched: bool,
    outcome: &str,
) -> Result<bool, Error> {
    let done = sqlx::query(
        "insert into webhook_events (provider_event_id, kind, payment_id, attempt_id, matched, outcome) \
         values ($1, $2, $3, $4, $5, $6) on conflict (provider_event_id) do nothing",
    )
    .bind(&event.id)
    .bind(&event.kind)
    .bind(event.payment_id())
    .bind(attempt.map(AttemptId::as_str))
    .bind(matched)
    .bind(outcome)
    .execute(store.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}
