//! The rows of a payment waiting for the buyer (3-D Secure): the return page the checkout
//! gave, and the provider's `next_action` page, kept on the attempt while it stays `paying`
//! under its deadlines. The saga itself does not move: the provider's next answer (webhook
//! or reconciler) confirms or declines it as any other.

use crate::Error;
use crate::ids::{AttemptId, HoldId};
use crate::journal::Entry;
use crate::store::{Store, Tx};

impl Store {
    /// The provider wants the buyer to authenticate: keep its payment id and page on the
    /// open attempt (once; the page of one payment never changes). Logged as
    /// `PaymentActionRequired` when first recorded.
    pub(crate) async fn record_action_required(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        payment_id: &str,
        redirect_url: Option<&str>,
    ) -> Result<bool, Error> {
        let changed: Option<(String, String)> = sqlx::query_as(self.sql(
            "update payment_attempts set provider_payment_id = coalesce(provider_payment_id, $2), \
             next_action_url = $3, updated_at = NOW \
             where attempt_id = $1 and state in ('pending', 'ambiguous') and next_action_url is null \
             returning event_id, hold_id",
        ))
        .bind(attempt.as_str())
        .bind(payment_id)
        .bind(redirect_url)
        .fetch_optional(&mut **tx)
        .await?;
        let Some((event_id, hold_id)) = changed else {
            return Ok(false);
        };
        self.log(
            tx,
            Entry {
                event_id: &event_id,
                kind: "PaymentActionRequired",
                hold_id: Some(&hold_id),
                attempt_id: Some(attempt.as_str()),
                detail: Some(serde_json::json!({ "payment_id": payment_id }).to_string()),
                ..Entry::default()
            },
        )
        .await?;
        Ok(true)
    }

    /// The page the buyer of a paying hold must visit to authenticate, while its attempt is
    /// open and waiting for them.
    pub async fn next_action_url(&self, hold: &HoldId) -> Result<Option<String>, Error> {
        let url: Option<Option<String>> = sqlx::query_scalar(
            "select next_action_url from payment_attempts \
             where hold_id = $1 and state in ('pending', 'ambiguous') and next_action_url is not null \
             order by created_at desc limit 1",
        )
        .bind(hold.as_str())
        .fetch_optional(self.pool())
        .await?;
        Ok(url.flatten())
    }
}
