//! The simulated Stripe-shaped provider. The embedded default calls it in-process; the
//! `tests` crate serves the same core over HTTP, so there is one implementation.
//!
//! Test payment methods: `pm_card_visa` authorizes, `pm_card_declined` declines,
//! `pm_card_slow` answers after `slow_ms`, `pm_card_lost` authorizes but loses the answer,
//! `pm_card_error` answers 500 and creates nothing, `pm_card_authenticationRequired` asks for
//! 3-D Secure (`requires_action`) and decides when the buyer completes or fails the
//! challenge page (`authenticate.rs`).
//!
//! # Layout
//! - `state.rs`: the book of intents and what each request does; `params.rs` reads forms.
//! - `intent.rs` / `charge.rs`: the Stripe objects (every field of Stripe's examples).
//! - `authenticate.rs`: the 3-D Secure challenge page and its outcome.
//! - `delivery.rs`: signed webhooks; `knobs.rs`: chaos settings; `ledger.rs`: money by attempt.

mod authenticate;
mod charge;
mod delivery;
mod intent;
mod knobs;
mod ledger;
mod params;
mod request;
mod state;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rand::Rng;
use serde_json::Value;
use tokio::sync::watch;

pub use authenticate::{AuthAnswer, CHALLENGE_STYLE, Choice, challenge_style_source};
pub use knobs::{Knobs, KnobsPatch};
pub use ledger::{AttemptRecord, Counters, Ledger};
pub use request::SimRequest;

/// How a simulator starts.
#[derive(Clone, Default)]
pub struct SimulatorConfig {
    /// Seeds ids, declines and the chaos knobs, so a run can be repeated.
    pub seed: u64,
    /// Signs outgoing webhooks (`Stripe-Signature`).
    pub webhook_secret: String,
    pub knobs: Knobs,
}

/// The answer a front end turns into an HTTP response (or an [`super::Outcome`]).
#[derive(Debug, Clone, PartialEq)]
pub enum SimReply {
    Answer {
        status: u16,
        body: Value,
        /// Replayed from an earlier request with the same idempotency key (Stripe's
        /// `Idempotent-Replayed: true` header).
        replayed: bool,
    },
    /// The request took effect; the caller must see a timeout or a broken connection.
    Lost,
}

/// The simulator. Cheap to clone: all clones share one provider.
#[derive(Clone)]
pub struct Simulator {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<state::State>,
    paused: watch::Sender<bool>,
    http: reqwest::Client,
    webhook_secret: Vec<u8>,
}

impl std::fmt::Debug for Simulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulator").finish_non_exhaustive()
    }
}

impl Simulator {
    pub fn new(config: SimulatorConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(state::State::new(config.seed, config.knobs)),
                paused: watch::Sender::new(false),
                http: reqwest::Client::new(),
                webhook_secret: config.webhook_secret.into_bytes(),
            }),
        }
    }

    /// The lock is only ever held for in-memory bookkeeping, never across an await.
    fn state(&self) -> MutexGuard<'_, state::State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Handles one request: waits while paused, waits the drawn latency, then acts.
    pub async fn handle(&self, req: SimRequest) -> SimReply {
        let mut paused = self.inner.paused.subscribe();
        // An error here means the sender is gone, which cannot happen while `self` lives.
        let _ = paused.wait_for(|p| !*p).await;
        let latency = {
            let mut st = self.state();
            // Knobs built directly (not through a patch) may have max < min.
            let lo = st.knobs.latency_min_ms;
            let hi = st.knobs.latency_max_ms.max(lo);
            if hi > 0 {
                st.rng.random_range(lo..=hi)
            } else {
                0
            }
        };
        if latency > 0 {
            tokio::time::sleep(Duration::from_millis(latency)).await;
        }
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let (effect, slow_ms) = {
            let mut st = self.state();
            let mut effect = st.execute(&req, now);
            let events = std::mem::take(&mut effect.events);
            delivery::plan(self, &mut st, events, now);
            (effect, st.knobs.slow_ms)
        };
        if effect.slow {
            tokio::time::sleep(Duration::from_millis(slow_ms)).await;
        }
        if effect.lost {
            return SimReply::Lost;
        }
        SimReply::Answer {
            status: effect.status,
            body: effect.body,
            replayed: effect.replayed,
        }
    }

    /// The origin authentication pages are served from (the HTTP simulator's base URL). Unset,
    /// `next_action` names a path on the buyer page's own origin, which the gateway serves for
    /// its in-process simulator.
    pub fn set_public_url(&self, url: &str) {
        self.state().public_url = Some(url.trim_end_matches('/').to_owned());
    }

    /// The 3-D Secure challenge page of a payment, or `None` for an unknown one.
    pub fn authentication_page(&self, payment_id: &str) -> Option<String> {
        self.state().intents.get(payment_id).map(authenticate::page)
    }

    /// The buyer completed or failed the challenge: the payment is decided and its webhook
    /// sent; the answer says where the buyer's browser goes next.
    pub fn authenticate(&self, payment_id: &str, choice: Choice) -> AuthAnswer {
        let now = time::OffsetDateTime::now_utc().unix_timestamp();
        let mut st = self.state();
        let (answer, events) = st.authenticate(payment_id, choice);
        delivery::plan(self, &mut st, events, now);
        answer
    }

    /// The page shown after a choice when the payment named no `return_url`.
    pub fn finished_page() -> &'static str {
        authenticate::FINISHED_PAGE
    }

    /// While paused, every call waits (asynchronously) until [`Simulator::resume`].
    pub fn pause(&self) {
        self.inner.paused.send_replace(true);
    }

    pub fn resume(&self) {
        self.inner.paused.send_replace(false);
    }

    pub fn is_paused(&self) -> bool {
        *self.inner.paused.borrow()
    }

    pub fn knobs(&self) -> Knobs {
        self.state().knobs.clone()
    }

    pub fn set_knobs(&self, patch: &KnobsPatch) -> Knobs {
        let mut st = self.state();
        st.knobs.apply(patch);
        st.knobs.clone()
    }

    /// Where webhooks go (the embedded gateway learns its own port only after binding).
    pub fn set_webhook_url(&self, url: &str) {
        self.set_knobs(&KnobsPatch {
            webhook_url: Some(url.to_owned()),
            ..KnobsPatch::default()
        });
    }

    /// A copy of the ledger as it stands.
    pub fn ledger(&self) -> Ledger {
        self.state().ledger.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::payments::AuthorizeRequest;

    async fn run(seed: u64) -> Vec<(u16, String)> {
        let sim = Simulator::new(SimulatorConfig {
            seed,
            knobs: Knobs {
                decline_rate: 0.5,
                ..Knobs::default()
            },
            ..SimulatorConfig::default()
        });
        let mut answers = Vec::new();
        for i in 0..40 {
            let req = AuthorizeRequest {
                attempt_id: format!("a{i}"),
                amount_cents: 100,
                currency: "eur".into(),
                payment_method: "pm_card_visa".into(),
                return_url: None,
            };
            match sim.handle(SimRequest::authorize(&req)).await {
                // Ids and outcomes, not `created`, which follows the wall clock.
                SimReply::Answer { status, body, .. } => {
                    let id = body["id"]
                        .as_str()
                        .or(body["error"]["payment_intent"]["id"].as_str());
                    answers.push((status, id.unwrap_or_default().to_owned()));
                }
                SimReply::Lost => panic!("no lost answers without the knob"),
            }
        }
        answers
    }

    #[tokio::test]
    async fn a_seed_replays_the_same_run() {
        let (a, b, c) = (run(7).await, run(7).await, run(8).await);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let declines = a.iter().filter(|(s, _)| *s == 402).count();
        assert!(
            (5..=35).contains(&declines),
            "decline_rate 0.5 gave {declines}/40"
        );
    }
}
