//! A simulated PaymentIntent, its Stripe JSON, and the answers requests about it get.
//!
//! The JSON carries every field of Stripe's own example PaymentIntent (the suite compares
//! them with Stripe's official library), with the values a card payment made with
//! `capture_method=manual` and `confirm=true` really has.

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Status {
    RequiresAction,
    RequiresCapture,
    RequiresPaymentMethod,
    Succeeded,
    Canceled,
}

impl Status {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Status::RequiresAction => "requires_action",
            Status::RequiresCapture => "requires_capture",
            Status::RequiresPaymentMethod => "requires_payment_method",
            Status::Succeeded => "succeeded",
            Status::Canceled => "canceled",
        }
    }
}

/// Why the last confirmation failed, as Stripe's `last_payment_error` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Failure {
    Declined(&'static str),
    AuthenticationFailed,
}

impl Failure {
    pub(super) fn json(self, intent: &Intent) -> Value {
        let (code, decline_code, message) = match self {
            Failure::Declined(decline) => {
                ("card_declined", Some(decline), "Your card was declined.")
            }
            Failure::AuthenticationFailed => (
                "payment_intent_authentication_failure",
                None,
                "The provided PaymentMethod has failed authentication. You can provide payment_method_data or a new PaymentMethod to attempt to fulfill this PaymentIntent again.",
            ),
        };
        let mut error = json!({
            "type": "card_error",
            "code": code,
            "doc_url": format!("https://stripe.com/docs/error-codes/{}", code.replace('_', "-")),
            "message": message,
            "payment_method": {"id": intent.payment_method, "object": "payment_method", "type": "card"},
        });
        if let Some(decline) = decline_code {
            error["decline_code"] = json!(decline);
            error["charge"] = json!(intent.charge_id());
        }
        error
    }
}

#[derive(Debug, Clone)]
pub(super) struct Intent {
    pub(super) id: String,
    pub(super) secret: String,
    pub(super) amount: i64,
    pub(super) amount_received: i64,
    pub(super) currency: String,
    pub(super) payment_method: String,
    pub(super) attempt_id: Option<String>,
    pub(super) description: Option<String>,
    pub(super) status: Status,
    pub(super) failure: Option<Failure>,
    /// Where the buyer comes back after authenticating (the create call's `return_url`).
    pub(super) return_url: Option<String>,
    /// The authentication page of a card that asks for 3-D Secure.
    pub(super) authenticate_url: Option<String>,
    pub(super) authenticated: bool,
    /// Set once a charge exists: the card was authorized (or declined by the bank).
    pub(super) charged: bool,
    pub(super) refund_id: Option<String>,
    pub(super) refunded_at: Option<i64>,
    pub(super) canceled_at: Option<i64>,
    pub(super) cancellation_reason: Option<String>,
    pub(super) created: i64,
}

impl Intent {
    /// The ledger's key: the attempt id, or the intent id for intents made without one.
    pub(super) fn ledger_key(&self) -> String {
        self.attempt_id.clone().unwrap_or_else(|| self.id.clone())
    }

    pub(super) fn charge_id(&self) -> String {
        format!("ch_{}", self.id.trim_start_matches("pi_"))
    }

    pub(super) fn metadata(&self) -> Value {
        match &self.attempt_id {
            Some(a) => json!({"attempt_id": a}),
            None => json!({}),
        }
    }

    fn next_action(&self) -> Value {
        if self.status != Status::RequiresAction {
            return Value::Null;
        }
        json!({
            "type": "redirect_to_url",
            "redirect_to_url": {"url": self.authenticate_url, "return_url": self.return_url},
        })
    }

    pub(super) fn json(&self) -> Value {
        let mut intent = json!({
            "id": self.id,
            "object": "payment_intent",
            "amount": self.amount,
            "amount_capturable": if self.status == Status::RequiresCapture { self.amount } else { 0 },
            "amount_details": {"tip": {}},
            "amount_received": self.amount_received,
            "application": null,
            "application_fee_amount": null,
            // Floodgate names the card itself; Stripe leaves this null when
            // `payment_method_types` is given instead of automatic payment methods.
            "automatic_payment_methods": null,
            "canceled_at": self.canceled_at,
            "cancellation_reason": self.cancellation_reason,
            "capture_method": "manual",
            "client_secret": format!("{}_secret_{}", self.id, self.secret),
            "confirmation_method": "automatic",
            "created": self.created,
            "currency": self.currency,
            "customer": null,
            "customer_account": null,
            "description": self.description,
        });
        // Two halves: one `json!` of every field overflows the macro's recursion limit.
        let rest = json!({
            "excluded_payment_method_types": null,
            "last_payment_error": self.failure.map(|f| f.json(self)),
            "latest_charge": self.charged.then(|| self.charge_id()),
            "livemode": false,
            "managed_payments": null,
            "metadata": self.metadata(),
            "next_action": self.next_action(),
            "on_behalf_of": null,
            "payment_method": self.payment_method,
            "payment_method_configuration_details": null,
            "payment_method_options": {"card": {
                "installments": null, "mandate_options": null, "network": null,
                "request_three_d_secure": "automatic",
            }},
            "payment_method_types": ["card"],
            "processing": null,
            "receipt_email": null,
            "review": null,
            "setup_future_usage": null,
            "shipping": null,
            "source": null,
            "statement_descriptor": null,
            "statement_descriptor_suffix": null,
            "status": self.status.as_str(),
            "transfer_data": null,
            "transfer_group": null,
        });
        if let (Value::Object(all), Value::Object(rest)) = (&mut intent, rest) {
            all.extend(rest);
        }
        intent
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
    /// Refused before it ran (bad parameters): Stripe keeps no idempotent result for it.
    pub invalid: bool,
    /// Replayed from an earlier request with the same idempotency key.
    pub replayed: bool,
}

impl Effect {
    pub(super) fn answer(status: u16, body: Value) -> Self {
        Self {
            status,
            body,
            events: Vec::new(),
            slow: false,
            lost: false,
            invalid: false,
            replayed: false,
        }
    }
}

/// Stripe's error object: `type`, `code`, `message`, `doc_url` and, when one parameter is at
/// fault, `param`.
pub(super) fn error(status: u16, kind: &str, code: &str, message: &str) -> Effect {
    let mut body = json!({"error": {"type": kind, "message": message}});
    if !code.is_empty() {
        body["error"]["code"] = json!(code);
        body["error"]["doc_url"] = json!(format!(
            "https://stripe.com/docs/error-codes/{}",
            code.replace('_', "-")
        ));
    }
    Effect::answer(status, body)
}

/// A parameter was missing or malformed: 400 naming it in `param`.
pub(super) fn bad_param(code: &str, param: &str, message: &str) -> Effect {
    let mut e = error(400, "invalid_request_error", code, message);
    e.body["error"]["param"] = json!(param);
    e.invalid = true;
    e
}

pub(super) fn unexpected_state(intent: &Intent, action: &str) -> Effect {
    let message = format!(
        "This PaymentIntent could not be {action} because it has a status of {}.",
        intent.status.as_str()
    );
    let mut e = error(
        400,
        "invalid_request_error",
        "payment_intent_unexpected_state",
        &message,
    );
    e.body["error"]["payment_intent"] = intent.json();
    e
}

pub(super) fn missing(kind: &str, param: &str, id: &str) -> Effect {
    let mut e = error(
        404,
        "invalid_request_error",
        "resource_missing",
        &format!("No such {kind}: '{id}'"),
    );
    e.body["error"]["param"] = json!(param);
    e
}
