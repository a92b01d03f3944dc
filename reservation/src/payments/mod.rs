//! The payment provider side of the saga: a Stripe-shaped HTTP client, the in-process
//! simulator, and webhook signatures.
//!
//! # Layout
//! - `outcome.rs`: [`Outcome`], and the one function that reads a provider's answer.
//! - `provider.rs`: [`Provider`], the one the saga calls: HTTP or in-process simulator.
//! - `stripe.rs`: [`StripeClient`], the HTTP client of API.md's provider protocol.
//! - `webhook.rs`: `Stripe-Signature` signing and checking, and the event payload.
//! - `action.rs`: the rows of a payment waiting for the buyer to authenticate (3-D Secure).
//! - `simulator/`: the simulated provider (state, knobs, ledger, webhook delivery), run
//!   in-process by the embedded default and behind HTTP by the `tests` crate.

mod action;
mod outcome;
mod provider;
pub mod simulator;
mod stripe;
pub mod webhook;

use std::time::Duration;

pub use outcome::Outcome;
pub use provider::{Provider, Simulated};
pub use simulator::Simulator;
pub use stripe::StripeClient;

/// The Stripe API version the adapter is written against and sends as `Stripe-Version`, so
/// an account whose default version is newer still answers in the shapes read here. The
/// simulator answers in this version too, and the suite checks it with the official library
/// of the same version.
pub const STRIPE_VERSION: &str = "2026-10-28.endive";

/// Errors building a provider. Calls themselves never fail: they return an [`Outcome`].
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("payment provider configuration: {0}")]
    Config(String),
}

/// How to reach the provider; the gateway fills it from `FLOODGATE_PAYMENT_URL`,
/// `FLOODGATE_PAYMENT_KEY` and its request timeout setting.
#[derive(Clone)]
pub struct PaymentConfig {
    /// `None` runs the in-process simulator.
    pub url: Option<String>,
    pub api_key: String,
    /// Verifies incoming webhooks; the in-process simulator signs with it too.
    pub webhook_secret: String,
    pub request_timeout: Duration,
    /// Extra trusted CA certificates (PEM) beside the platform's roots, for a provider behind
    /// a private CA.
    pub ca_pem: Option<Vec<u8>>,
}

impl std::fmt::Debug for PaymentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaymentConfig")
            .field("url", &self.url)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}

/// One authorization: the attempt id is both the idempotency key and the metadata the
/// payment is found by later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthorizeRequest {
    pub attempt_id: String,
    pub amount_cents: i64,
    pub currency: String,
    pub payment_method: String,
    /// Where the provider sends the buyer back after authenticating (3-D Secure), when the
    /// card asks for it.
    pub return_url: Option<String>,
}

impl AuthorizeRequest {
    pub fn new(attempt_id: &str, amount_cents: i64, currency: &str, payment_method: &str) -> Self {
        Self {
            attempt_id: attempt_id.to_owned(),
            amount_cents,
            currency: currency.to_owned(),
            payment_method: payment_method.to_owned(),
            return_url: None,
        }
    }

    pub fn returning_to(mut self, return_url: Option<&str>) -> Self {
        self.return_url = return_url.map(str::to_owned);
        self
    }

    /// The form body of `POST /v1/payment_intents`, shared by both providers so the
    /// simulator's idempotency fingerprint sees the same fields.
    pub(crate) fn form(&self) -> Vec<(String, String)> {
        let mut form = vec![
            ("amount".into(), self.amount_cents.to_string()),
            ("currency".into(), self.currency.clone()),
            ("payment_method".into(), self.payment_method.clone()),
            ("capture_method".into(), "manual".into()),
            ("confirm".into(), "true".into()),
            ("metadata[attempt_id]".into(), self.attempt_id.clone()),
        ];
        if let Some(url) = &self.return_url {
            form.push(("return_url".into(), url.clone()));
        }
        form
    }
}

/// Stripe's search query for one attempt. Attempt ids are parsed ids without quotes.
pub(crate) fn search_query(attempt_id: &str) -> String {
    format!("metadata['attempt_id']:'{attempt_id}'")
}

/// The refund's own idempotency key, so a repeated refund job never refunds twice.
pub fn refund_key(attempt_id: &str) -> String {
    format!("{attempt_id}:refund")
}
