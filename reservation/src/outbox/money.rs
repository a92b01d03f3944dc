//! The money jobs after the decision: `capture` a sale, `void` an authorization whose seats
//! were lost, `refund` money taken without a sale. Each is idempotent at the provider (the
//! provider answers "already" with where the payment stands) and in the rows.

use serde::Deserialize;

use crate::Error;
use crate::ids::AttemptId;
use crate::payments::Outcome;

use super::converge::money_job;
use super::{Ctx, Step};

#[derive(Debug, Deserialize)]
struct MoneyJob {
    #[serde(default)]
    payment_id: Option<String>,
    /// The name `finalize` gives it in the capture payload.
    #[serde(default)]
    provider_payment_id: Option<String>,
    #[serde(default)]
    checks_left: u32,
}

impl MoneyJob {
    fn parse(payload: &serde_json::Value) -> Result<Self, Error> {
        Ok(serde_json::from_value(payload.clone())?)
    }

    fn payment(&self) -> Option<String> {
        self.payment_id
            .clone()
            .or_else(|| self.provider_payment_id.clone())
    }
}

/// The payment id: from the job, from the attempt row, or found by the attempt id.
async fn locate(
    ctx: &Ctx,
    attempt: &AttemptId,
    job: &MoneyJob,
) -> Result<Result<String, Outcome>, Error> {
    if let Some(p) = job.payment() {
        return Ok(Ok(p));
    }
    if let Some(p) = ctx.store.get_attempt(attempt).await?.provider_payment_id {
        return Ok(Ok(p));
    }
    Ok(match ctx.provider.search(attempt.as_str()).await {
        Outcome::Authorized { payment_id } | Outcome::Captured { payment_id } => Ok(payment_id),
        other => Err(other),
    })
}

pub(super) async fn capture(
    ctx: &Ctx,
    attempt: &AttemptId,
    payload: &serde_json::Value,
) -> Result<Step, Error> {
    let job = MoneyJob::parse(payload)?;
    let pid = match locate(ctx, attempt, &job).await? {
        Ok(p) => p,
        Err(o) => return Ok(Step::Retry(format!("capture: payment not found: {o:?}"))),
    };
    Ok(match ctx.provider.capture(&pid).await {
        Outcome::Captured { payment_id } => {
            let mut tx = ctx.store.begin().await?;
            ctx.store
                .record_captured(&mut tx, attempt, &payment_id)
                .await?;
            tx.commit().await?;
            Step::Done
        }
        Outcome::Ambiguous { why } => Step::Retry(why),
        other => {
            // Canceled or refused: the sale stands but its money did not move; an operator
            // must look (the stuck query shows confirmed attempts that never captured).
            tracing::error!(attempt = %attempt, outcome = ?other, "capture failed for good");
            Step::Done
        }
    })
}

pub(super) async fn void(
    ctx: &Ctx,
    event: &str,
    attempt: &AttemptId,
    payload: &serde_json::Value,
) -> Result<Step, Error> {
    // The money of an attempt that sold belongs to its order: never void it.
    if ctx.store.attempt_has_order(attempt).await? {
        return Ok(Step::Done);
    }
    let job = MoneyJob::parse(payload)?;
    let pid = match locate(ctx, attempt, &job).await? {
        Ok(p) => p,
        Err(Outcome::Ambiguous { why }) => return Ok(Step::Retry(why)),
        // Nothing there yet. A request that timed out may still land: look again a few times.
        Err(other) if job.checks_left > 0 => {
            let next = money_job(attempt, None, job.checks_left - 1);
            return Ok(Step::Watch(format!("watching: {other:?}"), next));
        }
        Err(_) => return Ok(Step::Done),
    };
    Ok(match ctx.provider.cancel(&pid).await {
        Outcome::Canceled { payment_id } => {
            ctx.store.record_voided(attempt, &payment_id).await?;
            Step::Done
        }
        Outcome::Captured { payment_id } => {
            ctx.store
                .enqueue(
                    "refund",
                    event,
                    attempt.as_str(),
                    &money_job(attempt, Some(&payment_id), 0),
                )
                .await?;
            Step::Done
        }
        Outcome::Ambiguous { why } => Step::Retry(why),
        // A declined intent holds no money; canceling it changes nothing worth recording.
        Outcome::Declined { .. } | Outcome::NotFound => Step::Done,
        other => Step::Retry(format!("void: {other:?}")),
    })
}

pub(super) async fn refund(
    ctx: &Ctx,
    event: &str,
    attempt: &AttemptId,
    payload: &serde_json::Value,
) -> Result<Step, Error> {
    if ctx.store.attempt_has_order(attempt).await? {
        tracing::warn!(attempt = %attempt, "refund job for a sale ignored: orders are refunded by an operator");
        return Ok(Step::Done);
    }
    let job = MoneyJob::parse(payload)?;
    let pid = match locate(ctx, attempt, &job).await? {
        Ok(p) => p,
        Err(Outcome::Ambiguous { why }) => return Ok(Step::Retry(why)),
        Err(_) => return Ok(Step::Done),
    };
    Ok(match ctx.provider.refund(attempt.as_str(), &pid).await {
        Outcome::Refunded { .. } => {
            ctx.store.record_refunded(attempt, &pid).await?;
            Step::Done
        }
        // Only authorized after all: release it instead.
        Outcome::Authorized { payment_id } => {
            ctx.store
                .enqueue(
                    "void",
                    event,
                    attempt.as_str(),
                    &money_job(attempt, Some(&payment_id), 0),
                )
                .await?;
            Step::Done
        }
        Outcome::Ambiguous { why } => Step::Retry(why),
        Outcome::Canceled { .. } | Outcome::Declined { .. } | Outcome::NotFound => Step::Done,
        other => Step::Retry(format!("refund: {other:?}")),
    })
}
