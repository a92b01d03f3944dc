//! A simulated PaymentIntent, its Stripe JSON, and the answers requests about it get.

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    RequiresCapture,
    RequiresPaymentMethod,
    Succeeded,
    Canceled,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::RequiresCapture => "requires_capture",
            Status::RequiresPaymentMethod => "requires_payment_method",
            Status::Succeeded => "succeeded",
            Status::Canceled => "canceled",
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct Intent {
    pub(super) id: String,
    pub(super) amount: i64,
    pub(super) currency: String,
    pub(super) payment_method: String,
    pub(super) attempt_id: Option<String>,
    pub(super) status: Status,
    pub(super) decline_code: Option<&'static str>,
    pub(super) refund_id: Option<String>,
    pub(super) created: i64,
}

impl Intent {
    /// The ledger's key: the attempt id, or the intent id for intents made without one.
    pub(super) fn ledger_key(&self) -> String {
        self.attempt_id.clone().unwrap_or_else(|| self.id.clone())
    }

    pub(super) fn json(&self) -> Value {
        let captured = self.status == Status::Succeeded;
        json!({
            "id": self.id,
            "object": "payment_intent",
            "amount": self.amount,
            "amount_capturable": if self.status == Status::RequiresCapture { self.amount } else { 0 },
            "amount_received": if captured { self.amount } else { 0 },
            "currency": self.currency,
            "capture_method": "manual",
            "payment_method": self.payment_method,
            "status": self.status.as_str(),
            "metadata": match &self.attempt_id { Some(a) => json!({"attempt_id": a}), None => json!({}) },
            "last_payment_error": self.decline_code.map(|code| json!({
                "type": "card_error", "code": "card_declined", "decline_code": code,
                "message": "Your card was declined.",
            })),
            "created": self.created,
            "livemode": false,
        })
    }

    /// The charge object of `charge.refunded`; charges carry their intent's metadata.
    pub(super) fn charge_json(&self) -> Value {
        json!({
            "id": format!("ch_{}", self.id.trim_start_matches("pi_")),
            "object": "charge",
            "payment_intent": self.id,
            "amount": self.amount,
            "amount_refunded": if self.refund_id.is_some() { self.amount } else { 0 },
            "refunded": self.refund_id.is_some(),
            "status": "succeeded",
            "metadata": match &self.attempt_id { Some(a) => json!({"attempt_id": a}), None => json!({}) },
        })
    }
}

/// A request's answer and what comes with it.
pub(super) struct Effect {
    pub status: u16,
    pub body: Value,
    /// `(type, object)` of the webhooks this request causes.
    pub events: Vec<(&'static str, Value)>,
    /// `pm_card_slow`: answer after `slow_ms`.
    pub slow: bool,
    /// The request took effect but its answer is lost.
    pub lost: bool,
}

impl Effect {
    pub(super) fn answer(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            events: Vec::new(),
            slow: false,
            lost: false,
        }
    }
}

pub(super) fn error(status: u16, kind: &str, code: &str, message: &str) -> Effect {
    Effect::answer(
        status,
        json!({"error": {"type": kind, "code": code, "message": message}}),
    )
}

pub(super) fn unexpected_state(intent: &Intent, action: &str) -> Effect {
    let message = format!(
        "This PaymentIntent could not be {action} because it has a status of {}.",
        intent.status.as_str()
    );
    Effect::answer(
        400,
        json!({"error": {"type": "invalid_request_error", "code": "payment_intent_unexpected_state",
            "message": message, "payment_intent": intent.json()}}),
    )
}

pub(super) fn missing(id: &str) -> Effect {
    error(
        404,
        "invalid_request_error",
        "resource_missing",
        &format!("No such payment_intent: '{id}'"),
    )
}
