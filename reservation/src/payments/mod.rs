//! The payment provider side of the saga: a Stripe-shaped HTTP client, the in-process
//! simulator, and webhook signatures.
//!
//! # Layout
//! - `outcome.rs`: [`Outcome`], and the one function that reads a provider's answer.
//! - `stripe.rs`: [`StripeClient`], the HTTP client of API.md's provider protocol.
//! - `webhook.rs`: `Stripe-Signature` signing and checking, and the event payload.
//! - `simulator/`: the simulated provider (state, knobs, ledger, webhook delivery), run
//!   in-process by the embedded default and behind HTTP by the `tests` crate.

mod outcome;
pub mod simulator;
mod stripe;
pub mod webhook;

use std::time::Duration;

pub use outcome::Outcome;
pub use simulator::Simulator;
pub use stripe::StripeClient;

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
}

impl AuthorizeRequest {
    /// The form body of `POST /v1/payment_intents`, shared by both providers so the
    /// simulator's idempotency fingerprint sees the same fields.
    pub(crate) fn form(&self) -> Vec<(String, String)> {
        vec![
            ("amount".into(), self.amount_cents.to_string()),
            ("currency".into(), self.currency.clone()),
            ("payment_method".into(), self.payment_method.clone()),
            ("capture_method".into(), "manual".into()),
            ("confirm".into(), "true".into()),
            ("metadata[attempt_id]".into(), self.attempt_id.clone()),
        ]
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

/// The provider the saga talks to, chosen once from configuration.
#[derive(Debug, Clone)]
pub enum Provider {
    Http(StripeClient),
    Simulated(Simulated),
}

/// The in-process simulator with the same per-request timeout an HTTP client would have.
#[derive(Debug, Clone)]
pub struct Simulated {
    pub simulator: Simulator,
    pub request_timeout: Duration,
}

impl Provider {
    /// `url` unset gives a fresh in-process simulator (the embedded default).
    pub fn from_config(config: &PaymentConfig) -> Result<Self, ProviderError> {
        match &config.url {
            Some(url) => Ok(Provider::Http(StripeClient::new(
                url,
                &config.api_key,
                config.request_timeout,
            )?)),
            None => Ok(Provider::Simulated(Simulated {
                simulator: Simulator::new(simulator::SimulatorConfig {
                    webhook_secret: config.webhook_secret.clone(),
                    ..simulator::SimulatorConfig::default()
                }),
                request_timeout: config.request_timeout,
            })),
        }
    }

    /// `POST /v1/payment_intents` with `capture_method=manual`, `confirm=true`.
    #[tracing::instrument(skip_all, fields(attempt_id = %req.attempt_id))]
    pub async fn authorize(&self, req: &AuthorizeRequest) -> Outcome {
        match self {
            Provider::Http(c) => c.authorize(req).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::authorize(req)).await,
        }
    }

    /// `GET /v1/payment_intents/{id}`: where the payment stands now.
    pub async fn retrieve(&self, payment_id: &str) -> Outcome {
        match self {
            Provider::Http(c) => c.retrieve(payment_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::retrieve(payment_id)).await,
        }
    }

    /// Search by attempt id: `NotFound` means the authorization never reached the provider.
    pub async fn search(&self, attempt_id: &str) -> Outcome {
        match self {
            Provider::Http(c) => c.search(attempt_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::search(attempt_id)).await,
        }
    }

    /// Capture an authorization; `Captured` again if it already was.
    pub async fn capture(&self, payment_id: &str) -> Outcome {
        match self {
            Provider::Http(c) => c.capture(payment_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::capture(payment_id)).await,
        }
    }

    /// Void an authorization; `Canceled` again if it already was.
    pub async fn cancel(&self, payment_id: &str) -> Outcome {
        match self {
            Provider::Http(c) => c.cancel(payment_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::cancel(payment_id)).await,
        }
    }

    /// Refund a captured payment with key `<attempt id>:refund`.
    pub async fn refund(&self, attempt_id: &str, payment_id: &str) -> Outcome {
        match self {
            Provider::Http(c) => c.refund(attempt_id, payment_id).await,
            Provider::Simulated(s) => {
                s.call(simulator::SimRequest::refund(attempt_id, payment_id))
                    .await
            }
        }
    }
}

impl Simulated {
    async fn call(&self, req: simulator::SimRequest) -> Outcome {
        let expect = req.expect();
        match tokio::time::timeout(self.request_timeout, self.simulator.handle(req)).await {
            Ok(simulator::SimReply::Answer { status, body }) => {
                outcome::classify(status, body.to_string().as_bytes(), expect)
            }
            Ok(simulator::SimReply::Lost) => Outcome::ambiguous("answer lost"),
            Err(_) => Outcome::ambiguous("timeout"),
        }
    }
}
