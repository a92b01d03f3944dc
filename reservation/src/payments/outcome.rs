//! What a provider call turned out to be, classified once from the Stripe-shaped answer.
//!
//! The HTTP client and the in-process simulator both hand their raw answer (status code and
//! body) to [`classify`], so the two providers cannot drift apart in how they read an answer.

use serde::Deserialize;

/// The outcome of one provider call, as the saga acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// `requires_capture`: the money is held; finalize, then capture.
    Authorized { payment_id: String },
    /// `requires_payment_method` or a card error: no money is held.
    Declined {
        payment_id: Option<String>,
        reason: String,
    },
    /// `succeeded`: the money is taken.
    Captured { payment_id: String },
    /// `processing`: the provider has not decided yet; ask again later.
    Processing { payment_id: String },
    /// `requires_action`: the buyer must authenticate (3-D Secure) at `redirect_url` before
    /// the provider decides. Neither money nor a decline yet: the attempt waits in `paying`
    /// under its deadlines for the provider's next word.
    ActionRequired {
        payment_id: String,
        redirect_url: Option<String>,
    },
    /// `canceled`: the authorization was voided (or never completed).
    Canceled { payment_id: String },
    /// A refund exists for the payment (`refund_id` is absent when the provider only said
    /// "already refunded").
    Refunded { refund_id: Option<String> },
    /// Retrieve or search found no such payment: it was never created.
    NotFound,
    /// The provider refused the request itself (bad parameters, an idempotency key reused with
    /// another body, a bad API key): nothing changed, and repeating it will not help.
    Rejected { code: String, message: String },
    /// Timeout, connection error, 5xx, 409/429 or an unreadable answer: the call may or may not
    /// have taken effect. Never a decline: reconcile by asking with the same key.
    Ambiguous { why: String },
}

impl Outcome {
    /// The payment this outcome names, when it names one.
    pub fn payment_id(&self) -> Option<&str> {
        match self {
            Outcome::Authorized { payment_id }
            | Outcome::Captured { payment_id }
            | Outcome::Processing { payment_id }
            | Outcome::ActionRequired { payment_id, .. }
            | Outcome::Canceled { payment_id } => Some(payment_id),
            Outcome::Declined { payment_id, .. } => payment_id.as_deref(),
            _ => None,
        }
    }

    pub(crate) fn ambiguous(why: impl Into<String>) -> Self {
        Outcome::Ambiguous { why: why.into() }
    }
}

/// The PaymentIntent fields Floodgate reads.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireIntent {
    pub id: String,
    pub status: String,
    #[serde(default)]
    pub last_payment_error: Option<WireError>,
    #[serde(default)]
    pub next_action: Option<WireNextAction>,
}

/// `next_action` of an intent in `requires_action`; only `redirect_to_url` names a page the
/// buyer's browser can be sent to (`use_stripe_sdk` needs Stripe.js, which Floodgate's page
/// does not load).
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireNextAction {
    #[serde(default)]
    pub redirect_to_url: Option<WireRedirect>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireRedirect {
    #[serde(default)]
    pub url: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct WireError {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub decline_code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub payment_intent: Option<Box<WireIntent>>,
}

#[derive(Deserialize)]
struct ErrorBody {
    error: WireError,
}

#[derive(Deserialize)]
struct SearchBody {
    data: Vec<WireIntent>,
}

#[derive(Deserialize)]
struct RefundBody {
    id: String,
    object: String,
}

impl WireError {
    fn reason(&self) -> String {
        self.decline_code
            .clone()
            .or_else(|| self.code.clone())
            .unwrap_or_else(|| "card_declined".to_owned())
    }
}

/// Maps an intent's status to an outcome. Statuses outside API.md's subset (e.g.
/// `requires_confirmation`) are ambiguous: the saga must not guess.
pub(crate) fn from_intent(intent: &WireIntent) -> Outcome {
    let payment_id = intent.id.clone();
    match intent.status.as_str() {
        "requires_capture" => Outcome::Authorized { payment_id },
        "succeeded" => Outcome::Captured { payment_id },
        "processing" => Outcome::Processing { payment_id },
        "requires_action" => Outcome::ActionRequired {
            redirect_url: intent
                .next_action
                .as_ref()
                .and_then(|a| a.redirect_to_url.as_ref())
                .and_then(|r| r.url.clone()),
            payment_id,
        },
        "canceled" => Outcome::Canceled { payment_id },
        "requires_payment_method" => Outcome::Declined {
            reason: intent
                .last_payment_error
                .as_ref()
                .map(WireError::reason)
                .unwrap_or_else(|| "requires_payment_method".to_owned()),
            payment_id: Some(payment_id),
        },
        other => Outcome::ambiguous(format!("unexpected intent status {other}")),
    }
}

/// Which kind of answer the call expects on success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    Intent,
    Search,
    Refund,
}

/// Classifies a raw answer. Only a definite answer becomes a definite outcome.
pub(crate) fn classify(status: u16, body: &[u8], expect: Expect) -> Outcome {
    match status {
        200..=299 => classify_success(body, expect),
        // 409: a request with the same key is in flight; 429: rate limited. Both say nothing
        // about the payment, so the caller must ask again.
        409 | 429 => Outcome::ambiguous(format!("provider answered {status}")),
        404 => Outcome::NotFound,
        400..=499 => classify_refusal(status, body),
        _ => Outcome::ambiguous(format!("provider answered {status}")),
    }
}

fn classify_success(body: &[u8], expect: Expect) -> Outcome {
    match expect {
        Expect::Intent => match serde_json::from_slice::<WireIntent>(body) {
            Ok(intent) => from_intent(&intent),
            Err(e) => Outcome::ambiguous(format!("unreadable intent: {e}")),
        },
        Expect::Search => match serde_json::from_slice::<SearchBody>(body) {
            // One attempt id names at most one intent (it is the idempotency key); if several
            // exist the first live one wins so a held authorization is never overlooked.
            Ok(found) => found
                .data
                .iter()
                .map(from_intent)
                .find(|o| !matches!(o, Outcome::Canceled { .. } | Outcome::Declined { .. }))
                .or_else(|| found.data.first().map(from_intent))
                .unwrap_or(Outcome::NotFound),
            Err(e) => Outcome::ambiguous(format!("unreadable search result: {e}")),
        },
        Expect::Refund => match serde_json::from_slice::<RefundBody>(body) {
            Ok(r) if r.object == "refund" => Outcome::Refunded {
                refund_id: Some(r.id),
            },
            Ok(r) => Outcome::ambiguous(format!("expected a refund, got {}", r.object)),
            Err(e) => Outcome::ambiguous(format!("unreadable refund: {e}")),
        },
    }
}

fn classify_refusal(status: u16, body: &[u8]) -> Outcome {
    let Ok(ErrorBody { error }) = serde_json::from_slice::<ErrorBody>(body) else {
        return Outcome::ambiguous(format!("unreadable {status} answer"));
    };
    let code = error.code.clone().unwrap_or_default();
    if code == "card_declined" || status == 402 {
        return Outcome::Declined {
            payment_id: error.payment_intent.as_ref().map(|pi| pi.id.clone()),
            reason: error.reason(),
        };
    }
    if code == "charge_already_refunded" {
        return Outcome::Refunded { refund_id: None };
    }
    // "payment_intent_unexpected_state" carries the intent: capturing a captured intent or
    // voiding a voided one reports where the payment already stands.
    if let Some(intent) = &error.payment_intent {
        return from_intent(intent);
    }
    Outcome::Rejected {
        code,
        message: error.message.unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_and_garbage_are_ambiguous_never_declines() {
        for status in [500, 502, 503, 409, 429] {
            assert!(matches!(
                classify(status, b"{}", Expect::Intent),
                Outcome::Ambiguous { .. }
            ));
        }
        assert!(matches!(
            classify(200, b"<html>", Expect::Intent),
            Outcome::Ambiguous { .. }
        ));
        assert!(matches!(
            classify(402, b"not json", Expect::Intent),
            Outcome::Ambiguous { .. }
        ));
    }

    #[test]
    fn card_error_is_a_decline_with_the_intent() {
        let body = br#"{"error":{"type":"card_error","code":"card_declined","decline_code":"insufficient_funds","payment_intent":{"id":"pi_1","status":"requires_payment_method"}}}"#;
        assert_eq!(
            classify(402, body, Expect::Intent),
            Outcome::Declined {
                payment_id: Some("pi_1".into()),
                reason: "insufficient_funds".into()
            }
        );
    }

    #[test]
    fn requires_action_carries_the_redirect_and_is_neither_money_nor_decline() {
        let body = br#"{"id":"pi_3","status":"requires_action","next_action":{"type":"redirect_to_url","redirect_to_url":{"url":"https://hooks.example/3ds/pi_3","return_url":"https://shop.example/"}}}"#;
        assert_eq!(
            classify(200, body, Expect::Intent),
            Outcome::ActionRequired {
                payment_id: "pi_3".into(),
                redirect_url: Some("https://hooks.example/3ds/pi_3".into())
            }
        );
        let sdk = br#"{"id":"pi_4","status":"requires_action","next_action":{"type":"use_stripe_sdk","use_stripe_sdk":{}}}"#;
        assert_eq!(
            classify(200, sdk, Expect::Intent),
            Outcome::ActionRequired {
                payment_id: "pi_4".into(),
                redirect_url: None
            }
        );
    }
}
