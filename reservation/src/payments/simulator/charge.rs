//! The charge and refund objects of a simulated payment, with every field of Stripe's own
//! example objects (`charge.refunded` events carry the charge; `POST /v1/refunds` answers
//! the refund).

use serde_json::{Value, json};

use super::intent::{Intent, Status};

fn address() -> Value {
    json!({"city": null, "country": null, "line1": null, "line2": null,
        "postal_code": null, "state": null})
}

impl Intent {
    /// The charge the card payment made; charges carry their intent's metadata.
    pub(super) fn charge_json(&self) -> Value {
        let captured = self.status == Status::Succeeded || self.refund_id.is_some();
        let authorized = self.failure.is_none() && self.charged;
        let refunded = if self.refund_id.is_some() {
            self.amount
        } else {
            0
        };
        let refunds: Vec<Value> = self
            .refund_id
            .iter()
            .map(|id| self.refund_json(id, self.refunded_at.unwrap_or(self.created)))
            .collect();
        let last4 = if self.payment_method.contains("authenticationRequired") {
            "3184"
        } else {
            "4242"
        };
        let card = json!({
            "amount_authorized": if authorized { json!(self.amount) } else { Value::Null },
            "authorization_code": null,
            "brand": "visa",
            "checks": {"address_line1_check": null, "address_postal_code_check": null, "cvc_check": "pass"},
            "country": "US",
            "exp_month": 12,
            "exp_year": 2034,
            "extended_authorization": {"status": "disabled"},
            "fingerprint": "FLOODGATEsim0001",
            "funding": "credit",
            "incremental_authorization": {"status": "unavailable"},
            "installments": null,
            "last4": last4,
            "mandate": null,
            "multicapture": {"status": "unavailable"},
            "network": "visa",
            "network_token": {"used": false},
            "network_transaction_id": null,
            "overcapture": {"maximum_amount_capturable": self.amount, "status": "unavailable"},
            "regulated_status": "unregulated",
            "three_d_secure": self.authenticate_url.as_ref().map(|_| json!({
                "authentication_flow": "challenge",
                "electronic_commerce_indicator": "05",
                "exemption_indicator": null,
                "result": if self.authenticated { "authenticated" } else { "failed" },
                "result_reason": null,
                "transaction_id": format!("3ds_{}", self.secret),
                "version": "2.2.0",
            })),
            "transaction_link_id": null,
            "wallet": null,
        });
        let outcome = json!({
            "advice_code": null, "network_advice_code": null, "network_decline_code": null,
            "network_status": if authorized { "approved_by_network" } else { "declined_by_network" },
            "reason": if authorized { Value::Null } else { json!("generic_decline") },
            "risk_level": "normal",
            "seller_message": if authorized { "Payment complete." } else { "The bank did not return any further details with this decline." },
            "type": if authorized { "authorized" } else { "issuer_declined" },
        });
        let mut charge = json!({
            "id": self.charge_id(),
            "object": "charge",
            "amount": self.amount,
            "amount_captured": if captured { self.amount } else { 0 },
            "amount_refunded": refunded,
            "application": null,
            "application_fee": null,
            "application_fee_amount": null,
            "balance_transaction": captured.then(|| format!("txn_{}", self.id.trim_start_matches("pi_"))),
            "billing_details": {"address": address(), "email": null, "name": null, "phone": null, "tax_id": null},
            "calculated_statement_descriptor": "FLOODGATE",
            "captured": captured,
            "created": self.created,
            "currency": self.currency,
            "customer": null,
            "description": self.description,
            "disputed": false,
            "failure_balance_transaction": null,
            "failure_code": if authorized { Value::Null } else { json!("card_declined") },
            "failure_message": if authorized { Value::Null } else { json!("Your card was declined.") },
            "fraud_details": {},
            "livemode": false,
        });
        // Two halves: one `json!` of every field overflows the macro's recursion limit.
        let rest = json!({
            "metadata": self.metadata(),
            "on_behalf_of": null,
            "outcome": outcome,
            "paid": authorized,
            "payment_intent": self.id,
            "payment_method": self.payment_method,
            "payment_method_details": {"type": "card", "card": card},
            "receipt_email": null,
            "receipt_number": null,
            "receipt_url": format!("https://pay.stripe.com/receipts/payment/{}", self.secret),
            "refunded": self.refund_id.is_some(),
            "refunds": {"object": "list", "data": refunds, "has_more": false,
                "url": format!("/v1/charges/{}/refunds", self.charge_id())},
            "review": null,
            "shipping": null,
            "source": null,
            "source_transfer": null,
            "statement_descriptor": null,
            "statement_descriptor_suffix": null,
            "status": if authorized { "succeeded" } else { "failed" },
            "transfer_data": null,
            "transfer_group": null,
        });
        if let (Value::Object(all), Value::Object(rest)) = (&mut charge, rest) {
            all.extend(rest);
        }
        charge
    }

    /// A full refund of this intent's charge.
    pub(super) fn refund_json(&self, refund_id: &str, created: i64) -> Value {
        json!({
            "id": refund_id,
            "object": "refund",
            "amount": self.amount,
            "balance_transaction": format!("txn_{}", refund_id.trim_start_matches("re_")),
            "charge": self.charge_id(),
            "created": created,
            "currency": self.currency,
            "customer": null,
            "customer_account": null,
            "destination_details": {"type": "card", "card": {
                "reference": null, "reference_status": "pending",
                "reference_type": "acquirer_reference_number", "type": "refund",
            }},
            "metadata": {},
            "payment_intent": self.id,
            "payment_method": self.payment_method,
            "reason": null,
            "receipt_number": null,
            "source_transfer_reversal": null,
            "status": "succeeded",
            "transfer_reversal": null,
        })
    }
}
