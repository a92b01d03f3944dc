//! The `authorize` job: ask the provider for the money of one attempt, then converge.

use crate::failpoint::{self, Point};
use crate::ids::AttemptId;
use crate::payments::{AuthorizeRequest, Outcome};
use crate::views::AttemptState;
use crate::{Error, PaymentAttempt};

use super::claim::Job;
use super::converge::money_job;
use super::{Ctx, Step};

pub(super) async fn run(ctx: &Ctx, job: &Job, attempt_id: &AttemptId) -> Result<Step, Error> {
    let a = match ctx.store.get_attempt(attempt_id).await {
        Ok(a) => a,
        Err(Error::AttemptNotFound) => return Ok(Step::Done),
        Err(e) => return Err(e),
    };
    if !is_open(a.state) {
        // Closed by the reconciler or a webhook. If an earlier try of this job may have
        // reached the provider, its money could still appear: watch for it and give it back.
        if job.tries > 1 && matches!(a.state, AttemptState::Abandoned) {
            ctx.store
                .enqueue(
                    "void",
                    a.event_id.as_str(),
                    attempt_id.as_str(),
                    &money_job(attempt_id, None, ctx.config.late_money_checks),
                )
                .await?;
        }
        return Ok(Step::Done);
    }
    // An earlier try may have reached the provider: ask before repeating. Against Stripe the
    // search index lags, so `NotFound` is not proof; repeating with the same idempotency key
    // below is still safe, as it replays the first result or creates the payment once.
    if job.tries > 1 || a.state == AttemptState::Ambiguous {
        match ctx.provider.search(attempt_id.as_str()).await {
            Outcome::NotFound | Outcome::Rejected { .. } | Outcome::Refunded { .. } => {}
            found => return answer(ctx, &a, found).await,
        }
    }
    let req = AuthorizeRequest::new(
        attempt_id.as_str(),
        a.amount_cents,
        &a.currency,
        &a.payment_method,
    )
    .returning_to(a.return_url.as_deref());
    let outcome = ctx.provider.authorize(&req).await;
    answer(ctx, &a, outcome).await
}

async fn answer(ctx: &Ctx, a: &PaymentAttempt, outcome: Outcome) -> Result<Step, Error> {
    let event = a.event_id.as_str();
    match &outcome {
        Outcome::Authorized { .. } | Outcome::Captured { .. } => {
            failpoint::hit(Point::AfterProviderAuthorized, event).await?;
        }
        // The provider refused the request itself (unknown card, bad amount): no money is
        // held and repeating cannot help, so the buyer gets the seats back to try again.
        Outcome::Rejected { code, .. } => {
            ctx.store.decline(&a.attempt_id, code).await?;
            return Ok(Step::Done);
        }
        _ => {}
    }
    let converged = ctx.store.converge(&a.attempt_id, event, &outcome).await?;
    Ok(match converged {
        super::Converged::Pending => Step::Retry(format!("{outcome:?}")),
        // Asking again would only replay the same `requires_action` (the idempotency key keeps
        // the first answer): the webhook or the reconciler brings the decision.
        _ => Step::Done,
    })
}

fn is_open(s: AttemptState) -> bool {
    matches!(
        s,
        AttemptState::Pending | AttemptState::Ambiguous | AttemptState::Authorized
    )
}
