//! The HTTP client for a Stripe-shaped provider (API.md "Payment provider protocol").

use std::time::Duration;

use super::outcome::{Expect, Outcome, classify};
use super::{AuthorizeRequest, ProviderError, STRIPE_VERSION, search_query};

/// Talks to `FLOODGATE_PAYMENT_URL` with Stripe's paths, form bodies and idempotency keys.
#[derive(Clone)]
pub struct StripeClient {
    http: reqwest::Client,
    base_url: String,
    api_key: String,
}

impl std::fmt::Debug for StripeClient {
    // The API key is a secret: never in Debug output or logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StripeClient")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

impl StripeClient {
    /// `timeout` bounds each request end to end; expiring it makes the call ambiguous.
    pub fn new(base_url: &str, api_key: &str, timeout: Duration) -> Result<Self, ProviderError> {
        Self::with_roots(base_url, api_key, timeout, None)
    }

    /// Trusts the platform's roots and the CA certificates of `ca_pem` (a PEM bundle).
    pub fn with_roots(
        base_url: &str,
        api_key: &str,
        timeout: Duration,
        ca_pem: Option<&[u8]>,
    ) -> Result<Self, ProviderError> {
        let config_error = |e: reqwest::Error| ProviderError::Config(e.to_string());
        let extra = match ca_pem {
            Some(pem) => reqwest::Certificate::from_pem_bundle(pem).map_err(config_error)?,
            None => Vec::new(),
        };
        if ca_pem.is_some() && extra.is_empty() {
            return Err(ProviderError::Config(
                "the CA file holds no certificate".into(),
            ));
        }
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .tls_certs_merge(extra)
            .build()
            .map_err(config_error)?;
        Ok(Self {
            http,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
        })
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    pub(crate) async fn authorize(&self, req: &AuthorizeRequest) -> Outcome {
        let request = self
            .http
            .post(self.url("/v1/payment_intents"))
            .header("Idempotency-Key", &req.attempt_id)
            .form(&req.form());
        self.send(request, Expect::Intent).await
    }

    pub(crate) async fn retrieve(&self, payment_id: &str) -> Outcome {
        let request = self
            .http
            .get(self.url(&format!("/v1/payment_intents/{payment_id}")));
        self.send(request, Expect::Intent).await
    }

    pub(crate) async fn search(&self, attempt_id: &str) -> Outcome {
        let request = self
            .http
            .get(self.url("/v1/payment_intents/search"))
            .query(&[("query", search_query(attempt_id))]);
        self.send(request, Expect::Search).await
    }

    pub(crate) async fn capture(&self, payment_id: &str) -> Outcome {
        let request = self
            .http
            .post(self.url(&format!("/v1/payment_intents/{payment_id}/capture")));
        self.send(request, Expect::Intent).await
    }

    pub(crate) async fn cancel(&self, payment_id: &str) -> Outcome {
        let request = self
            .http
            .post(self.url(&format!("/v1/payment_intents/{payment_id}/cancel")));
        self.send(request, Expect::Intent).await
    }

    pub(crate) async fn refund(&self, attempt_id: &str, payment_id: &str) -> Outcome {
        let request = self
            .http
            .post(self.url("/v1/refunds"))
            .header("Idempotency-Key", super::refund_key(attempt_id))
            .form(&[("payment_intent", payment_id)]);
        self.send(request, Expect::Refund).await
    }

    /// Any transport failure, including a body cut off mid-way, is ambiguous.
    async fn send(&self, request: reqwest::RequestBuilder, expect: Expect) -> Outcome {
        let request = request
            .bearer_auth(&self.api_key)
            .header("Stripe-Version", STRIPE_VERSION);
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => return Outcome::ambiguous("timeout"),
            Err(e) => return Outcome::ambiguous(format!("transport: {e}")),
        };
        let status = response.status().as_u16();
        match response.bytes().await {
            Ok(body) => classify(status, &body, expect),
            Err(e) if e.is_timeout() => Outcome::ambiguous("timeout reading the answer"),
            Err(e) => Outcome::ambiguous(format!("answer lost: {e}")),
        }
    }
}
