//! The provider the saga calls, chosen once from configuration.

use std::time::Duration;

use super::simulator::{self, Simulator};
use super::{AuthorizeRequest, Outcome, PaymentConfig, ProviderError, StripeClient, outcome};

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

/// Ids go into URL paths and into the search query: an id outside this alphabet (a quote
/// would change the query, a slash the path) is refused before it reaches the provider.
fn bad_id(ids: &[&str]) -> Option<Outcome> {
    let ok = |id: &&str| {
        !id.is_empty()
            && id.len() <= 255
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b))
    };
    ids.iter().find(|id| !ok(id)).map(|id| Outcome::Rejected {
        code: "invalid_id".into(),
        message: format!("unusable id {id:?}"),
    })
}

impl Provider {
    /// `url` unset gives a fresh in-process simulator (the embedded default).
    pub fn from_config(config: &PaymentConfig) -> Result<Self, ProviderError> {
        match &config.url {
            Some(url) => Ok(Provider::Http(StripeClient::with_roots(
                url,
                &config.api_key,
                config.request_timeout,
                config.ca_pem.as_deref(),
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
        if let Some(refused) = bad_id(&[&req.attempt_id]) {
            return refused;
        }
        match self {
            Provider::Http(c) => c.authorize(req).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::authorize(req)).await,
        }
    }

    /// `GET /v1/payment_intents/{id}`: where the payment stands now.
    #[tracing::instrument(skip_all, fields(payment_id = %payment_id))]
    pub async fn retrieve(&self, payment_id: &str) -> Outcome {
        if let Some(refused) = bad_id(&[payment_id]) {
            return refused;
        }
        match self {
            Provider::Http(c) => c.retrieve(payment_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::retrieve(payment_id)).await,
        }
    }

    /// Search by attempt id. The simulator's index is immediate; Stripe's lags by up to a
    /// minute, so against Stripe a `NotFound` soon after an ambiguous authorize proves
    /// nothing: repeating `authorize` with the same attempt id (the idempotency key, kept 24 h
    /// by Stripe) is the safe question, as it replays the first result or creates it once.
    #[tracing::instrument(skip_all, fields(attempt_id = %attempt_id))]
    pub async fn search(&self, attempt_id: &str) -> Outcome {
        if let Some(refused) = bad_id(&[attempt_id]) {
            return refused;
        }
        match self {
            Provider::Http(c) => c.search(attempt_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::search(attempt_id)).await,
        }
    }

    /// Capture an authorization; `Captured` again if it already was.
    #[tracing::instrument(skip_all, fields(payment_id = %payment_id))]
    pub async fn capture(&self, payment_id: &str) -> Outcome {
        if let Some(refused) = bad_id(&[payment_id]) {
            return refused;
        }
        match self {
            Provider::Http(c) => c.capture(payment_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::capture(payment_id)).await,
        }
    }

    /// Void an authorization; `Canceled` again if it already was.
    #[tracing::instrument(skip_all, fields(payment_id = %payment_id))]
    pub async fn cancel(&self, payment_id: &str) -> Outcome {
        if let Some(refused) = bad_id(&[payment_id]) {
            return refused;
        }
        match self {
            Provider::Http(c) => c.cancel(payment_id).await,
            Provider::Simulated(s) => s.call(simulator::SimRequest::cancel(payment_id)).await,
        }
    }

    /// Refund a captured payment with key `<attempt id>:refund`.
    #[tracing::instrument(skip_all, fields(attempt_id = %attempt_id, payment_id = %payment_id))]
    pub async fn refund(&self, attempt_id: &str, payment_id: &str) -> Outcome {
        if let Some(refused) = bad_id(&[attempt_id, payment_id]) {
            return refused;
        }
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
            Ok(simulator::SimReply::Answer { status, body, .. }) => {
                outcome::classify(status, body.to_string().as_bytes(), expect)
            }
            Ok(simulator::SimReply::Lost) => Outcome::ambiguous("answer lost"),
            Err(_) => Outcome::ambiguous("timeout"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payments::simulator::KnobsPatch;

    fn in_process(timeout: Duration) -> Provider {
        Provider::from_config(&PaymentConfig {
            url: None,
            api_key: String::new(),
            webhook_secret: "whsec".into(),
            request_timeout: timeout,
            ca_pem: None,
        })
        .unwrap()
    }

    fn req(attempt: &str, pm: &str) -> AuthorizeRequest {
        AuthorizeRequest {
            attempt_id: attempt.into(),
            amount_cents: 100,
            currency: "eur".into(),
            payment_method: pm.into(),
            return_url: None,
        }
    }

    #[tokio::test]
    async fn no_url_means_the_in_process_simulator_with_the_same_outcomes() {
        let p = in_process(Duration::from_secs(2));
        let Provider::Simulated(s) = &p else {
            panic!("expected the simulator");
        };
        let Outcome::Authorized { payment_id } = p.authorize(&req("a1", "pm_card_visa")).await
        else {
            panic!("expected an authorization");
        };
        assert_eq!(
            p.capture(&payment_id).await.payment_id(),
            Some(payment_id.as_str())
        );
        assert!(matches!(
            p.authorize(&req("a2", "pm_card_declined")).await,
            Outcome::Declined {
                payment_id: Some(_),
                ..
            }
        ));
        assert!(matches!(
            p.authorize(&req("a3", "pm_card_lost")).await,
            Outcome::Ambiguous { .. }
        ));
        assert!(matches!(p.search("a3").await, Outcome::Authorized { .. }));
        assert!(matches!(
            p.authorize(&req("a4", "pm_card_error")).await,
            Outcome::Ambiguous { .. }
        ));
        assert_eq!(p.search("a4").await, Outcome::NotFound);
        assert_eq!(s.simulator.ledger().total_authorizations(), 2);
    }

    #[tokio::test]
    async fn ids_that_would_bend_a_path_or_query_are_refused() {
        let p = in_process(Duration::from_secs(1));
        for id in ["", "a'b", "../x", "pi 1"] {
            assert!(
                matches!(p.retrieve(id).await, Outcome::Rejected { .. }),
                "{id:?}"
            );
            assert!(
                matches!(p.search(id).await, Outcome::Rejected { .. }),
                "{id:?}"
            );
        }
        assert!(matches!(
            p.authorize(&req("x'y", "pm_card_visa")).await,
            Outcome::Rejected { .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn the_request_timeout_applies_in_process_too() {
        let p = in_process(Duration::from_millis(500));
        let Provider::Simulated(s) = &p else {
            panic!("expected the simulator");
        };
        s.simulator.set_knobs(&KnobsPatch {
            slow_ms: Some(5_000),
            ..KnobsPatch::default()
        });
        assert_eq!(
            p.authorize(&req("slow", "pm_card_slow")).await,
            Outcome::Ambiguous {
                why: "timeout".into()
            }
        );
        assert!(matches!(p.search("slow").await, Outcome::Authorized { .. }));
        s.simulator.pause();
        assert_eq!(
            p.retrieve("pi_x").await,
            Outcome::Ambiguous {
                why: "timeout".into()
            }
        );
    }
}
