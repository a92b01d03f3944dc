//! The one place a provider answer about an attempt's authorization becomes rows: the outbox
//! worker, the reconciler and webhook intake all end here, so they cannot disagree, and a
//! second arrival of the same answer finds the rows already moved and changes nothing.

use serde_json::json;

use crate::Error;
use crate::ids::AttemptId;
use crate::payment::Finalized;
use crate::payments::Outcome;
use crate::store::{Store, Tx};

/// What applying an answer did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Converged {
    /// The sale exists (now or before).
    Confirmed,
    /// The seats went back to the buyer's hold (or the attempt was already final).
    Declined,
    /// Money arrived for seats that are no longer this attempt's: a void (or refund) is queued.
    Compensating,
    /// No definite answer yet.
    Pending,
    /// The buyer must authenticate first (3-D Secure): nothing to repeat, the provider's next
    /// word (webhook or reconciler) decides.
    AwaitingBuyer,
}

impl Converged {
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            Converged::Confirmed => "confirmed",
            Converged::Declined => "declined",
            Converged::Compensating => "compensating",
            Converged::Pending => "pending",
            Converged::AwaitingBuyer => "awaiting_buyer",
        }
    }
}

/// Payload of `void` and `refund` jobs.
pub(crate) fn money_job(
    attempt: &AttemptId,
    payment_id: Option<&str>,
    checks_left: u32,
) -> serde_json::Value {
    json!({ "attempt_id": attempt, "payment_id": payment_id, "checks_left": checks_left })
}

impl Store {
    /// Applies the provider's word on `attempt` (from authorize, search or retrieve), in one
    /// transaction.
    pub(crate) async fn converge(
        &self,
        attempt: &AttemptId,
        event_id: &str,
        outcome: &Outcome,
    ) -> Result<Converged, Error> {
        self.retrying(|| self.converge_once(attempt, event_id, outcome))
            .await
    }

    async fn converge_once(
        &self,
        attempt: &AttemptId,
        event_id: &str,
        outcome: &Outcome,
    ) -> Result<Converged, Error> {
        let mut tx = self.begin().await?;
        let done = self
            .converge_in(&mut tx, attempt, event_id, outcome)
            .await?;
        tx.commit().await?;
        Ok(done)
    }

    /// `converge` inside the caller's transaction, so webhook intake can record the
    /// provider's event id atomically with what the event did.
    pub(crate) async fn converge_in(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        event_id: &str,
        outcome: &Outcome,
    ) -> Result<Converged, Error> {
        match outcome {
            Outcome::Authorized { payment_id } | Outcome::Captured { payment_id } => {
                let captured = matches!(outcome, Outcome::Captured { .. });
                // A sale already made: finalize would answer with its order whatever the seats
                // say now, so nothing is locked and only a capture is left to record. Every
                // order hears the provider's word more than once (the worker's answer, the
                // provider's events and their redeliveries, the reconciler).
                if self.order_of_attempt(tx, attempt).await?.is_some() {
                    if captured {
                        self.record_captured(tx, attempt, payment_id).await?;
                    }
                    return Ok(Converged::Confirmed);
                }
                // Seats before the attempt row, the order every saga step locks in.
                self.lock_attempt_seats(tx, attempt).await?;
                self.record_authorized(tx, attempt, payment_id).await?;
                match self.finalize_in(tx, attempt, Some(payment_id)).await? {
                    Finalized::Confirmed(_) => {
                        if captured {
                            self.record_captured(tx, attempt, payment_id).await?;
                        }
                        Ok(Converged::Confirmed)
                    }
                    // Never overwrite the newer owner: give the money back instead.
                    Finalized::SeatLost => {
                        let kind = if captured { "refund" } else { "void" };
                        let job = money_job(attempt, Some(payment_id), 0);
                        self.outbox(tx, kind, event_id, Some(attempt.as_str()), None, &job)
                            .await?;
                        Ok(Converged::Compensating)
                    }
                }
            }
            Outcome::Declined { reason, .. } => {
                self.decline_in(tx, attempt, reason).await?;
                Ok(Converged::Declined)
            }
            // A canceled intent holds no money; for an attempt still open it is a decline.
            Outcome::Canceled { .. } => {
                self.decline_in(tx, attempt, "canceled").await?;
                Ok(Converged::Declined)
            }
            Outcome::Ambiguous { why } => {
                self.record_ambiguous(tx, attempt, why).await?;
                Ok(Converged::Pending)
            }
            Outcome::ActionRequired {
                payment_id,
                redirect_url,
            } => {
                self.record_action_required(tx, attempt, payment_id, redirect_url.as_deref())
                    .await?;
                Ok(Converged::AwaitingBuyer)
            }
            Outcome::Processing { .. }
            | Outcome::NotFound
            | Outcome::Refunded { .. }
            | Outcome::Rejected { .. } => Ok(Converged::Pending),
        }
    }
}
