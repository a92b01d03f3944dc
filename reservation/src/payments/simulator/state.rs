//! The simulator's book of PaymentIntents and what each request does to them. Everything
//! here is synchronous and runs under the simulator's lock; waiting happens outside it.

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::SimRequest;
use super::intent::{Effect, Failure, Intent, Status, bad_param, error, missing, unexpected_state};
use super::knobs::Knobs;
use super::ledger::Ledger;
use super::params::{Params, flag};

struct Stored {
    fingerprint: String,
    status: u16,
    body: Value,
}

pub(crate) struct State {
    pub rng: StdRng,
    pub knobs: Knobs,
    pub ledger: Ledger,
    pub(super) intents: HashMap<String, Intent>,
    by_attempt: HashMap<String, Vec<String>>,
    idempotency: HashMap<String, Stored>,
    next_id: u64,
    /// Out-of-order delivery: the event waiting for its successor, with its sequence number.
    pub held_back: Option<(u64, Value)>,
    pub event_seq: u64,
    /// Where the authentication pages are served (`None`: a path on the caller's own origin,
    /// as when the gateway serves the in-process simulator's pages).
    pub public_url: Option<String>,
}

impl State {
    pub fn new(seed: u64, knobs: Knobs) -> Self {
        Self {
            rng: StdRng::seed_from_u64(seed),
            knobs,
            ledger: Ledger::default(),
            intents: HashMap::new(),
            by_attempt: HashMap::new(),
            idempotency: HashMap::new(),
            next_id: 0,
            held_back: None,
            event_seq: 0,
            public_url: None,
        }
    }

    pub fn new_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        let salt: u32 = self.rng.random();
        format!("{prefix}_{:08x}{salt:08x}", self.next_id)
    }

    pub fn chance(&mut self, rate: f64) -> bool {
        rate > 0.0 && self.rng.random_bool(rate.min(1.0))
    }

    /// Runs one request with Stripe's idempotency: the first answer below 500 per key is
    /// stored and replayed; the same key with another request is refused. A request refused
    /// for its parameters keeps no result, as at Stripe.
    pub fn execute(&mut self, req: &SimRequest, now: i64) -> Effect {
        self.ledger.counters.requests += 1;
        if self.chance(self.knobs.error_rate) || req.payment_method() == Some("pm_card_error") {
            self.ledger.counters.server_errors += 1;
            return error(500, "api_error", "", "simulated server error");
        }
        let Some(key) = req.idempotency_key() else {
            return self.run(req, now);
        };
        let fingerprint = req.fingerprint();
        if let Some(stored) = self.idempotency.get(key) {
            if stored.fingerprint != fingerprint {
                self.ledger.counters.idempotency_conflicts += 1;
                return error(
                    400,
                    "idempotency_error",
                    "idempotency_key_in_use",
                    &format!(
                        "Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '{key}' if you meant to execute a different request."
                    ),
                );
            }
            self.ledger.counters.idempotent_replays += 1;
            let mut replay = Effect::answer(stored.status, stored.body.clone());
            replay.replayed = true;
            return replay;
        }
        let effect = self.run(req, now);
        if effect.status < 500 && !effect.invalid {
            self.idempotency.insert(
                key.to_owned(),
                Stored {
                    fingerprint,
                    status: effect.status,
                    body: effect.body.clone(),
                },
            );
        }
        effect
    }

    fn run(&mut self, req: &SimRequest, now: i64) -> Effect {
        let mut effect = match req {
            SimRequest::CreateIntent { form, .. } => self.create_intent(form, now),
            SimRequest::RetrieveIntent { id } => match self.intents.get(id) {
                Some(i) => Effect::answer(200, i.json()),
                None => missing("payment_intent", "intent", id),
            },
            SimRequest::SearchIntents { query } => self.search(query),
            SimRequest::CaptureIntent { id, form, .. } => self.capture(id, form),
            SimRequest::CancelIntent { id, form, .. } => self.cancel(id, form, now),
            SimRequest::CreateRefund { form, .. } => self.refund(form, now),
        };
        if req.is_post() && effect.status < 500 && self.chance(self.knobs.lost_rate) {
            effect.lost = true;
        }
        if effect.lost {
            self.ledger.counters.lost_answers += 1;
        }
        effect
    }

    fn create_intent(&mut self, form: &[(String, String)], now: i64) -> Effect {
        let p = Params(form);
        if let Some(refused) = p.unknown(
            &[
                "amount",
                "currency",
                "payment_method",
                "capture_method",
                "confirm",
                "return_url",
                "description",
            ],
            &["metadata", "expand", "payment_method_types"],
        ) {
            return refused;
        }
        let amount = match p.positive("amount") {
            Ok(a) => a,
            Err(refused) => return refused,
        };
        let Some(currency) = p.get("currency") else {
            return bad_param(
                "parameter_missing",
                "currency",
                "Missing required param: currency.",
            );
        };
        if p.get("capture_method") != Some("manual") {
            return bad_param(
                "parameter_invalid",
                "capture_method",
                "The simulator authorizes only: capture_method must be manual.",
            );
        }
        if !flag(p.get("confirm")) {
            return bad_param(
                "parameter_invalid",
                "confirm",
                "The simulator needs confirm=true.",
            );
        }
        let Some(pm) = p.get("payment_method").map(str::to_owned) else {
            return bad_param(
                "parameter_missing",
                "payment_method",
                "You cannot confirm this PaymentIntent because it's missing a payment method.",
            );
        };
        let (decline, slow, lost, authenticate) = match pm.as_str() {
            "pm_card_visa" => (self.chance(self.knobs.decline_rate), false, false, false),
            "pm_card_declined" => (true, false, false, false),
            "pm_card_slow" => (false, true, false, false),
            "pm_card_lost" => (false, false, true, false),
            "pm_card_authenticationRequired" | "pm_card_threeDSecure2Required" => {
                (false, false, false, true)
            }
            _ => {
                let mut e = bad_param(
                    "resource_missing",
                    "payment_method",
                    &format!("No such PaymentMethod: '{pm}'"),
                );
                // An unknown card is a definite answer, not a malformed request.
                e.invalid = false;
                return e;
            }
        };
        let id = self.new_id("pi");
        let secret = self.new_id("s").trim_start_matches("s_").to_owned();
        let authenticate_url = authenticate.then(|| {
            format!(
                "{}/_sim/authenticate/{id}",
                self.public_url.as_deref().unwrap_or_default()
            )
        });
        let intent = Intent {
            id,
            secret,
            amount,
            amount_received: 0,
            currency: currency.to_lowercase(),
            payment_method: pm,
            attempt_id: p.get("metadata[attempt_id]").map(str::to_owned),
            description: p.get("description").map(str::to_owned),
            status: if decline {
                Status::RequiresPaymentMethod
            } else if authenticate {
                Status::RequiresAction
            } else {
                Status::RequiresCapture
            },
            failure: decline.then_some(Failure::Declined("generic_decline")),
            return_url: p.get("return_url").map(str::to_owned),
            authenticate_url,
            authenticated: false,
            charged: !authenticate,
            refund_id: None,
            refunded_at: None,
            canceled_at: None,
            cancellation_reason: None,
            created: now,
        };
        let record = self.ledger.attempt(&intent.ledger_key());
        record.payment_ids.push(intent.id.clone());
        record.amount_cents = amount;
        if decline {
            record.declines += 1;
        } else if !authenticate {
            record.authorizations += 1;
        }
        if let Some(a) = &intent.attempt_id {
            self.by_attempt
                .entry(a.clone())
                .or_default()
                .push(intent.id.clone());
        }
        let json = intent.json();
        let failure = intent.failure.map(|f| f.json(&intent));
        self.intents.insert(intent.id.clone(), intent);
        let mut effect = if let Some(mut failure) = failure {
            // Stripe answers a declined confirmation with 402 and the intent inside the error.
            failure["payment_intent"] = json.clone();
            let mut e = Effect::answer(402, serde_json::json!({ "error": failure }));
            e.events.push(("payment_intent.payment_failed", json));
            e
        } else if authenticate {
            let mut e = Effect::answer(200, json.clone());
            e.events.push(("payment_intent.requires_action", json));
            e
        } else {
            let mut e = Effect::answer(200, json.clone());
            e.events
                .push(("payment_intent.amount_capturable_updated", json));
            e
        };
        effect.slow = slow;
        effect.lost = lost;
        effect
    }

    fn search(&self, query: &str) -> Effect {
        let attempt = ['\'', '"'].iter().find_map(|q| {
            query
                .strip_prefix(&format!("metadata[{q}attempt_id{q}]:{q}"))
                .and_then(|rest| rest.strip_suffix(*q))
        });
        let Some(attempt) = attempt else {
            return bad_param(
                "parameter_invalid",
                "query",
                "The simulator searches by metadata['attempt_id'] only.",
            );
        };
        let data: Vec<Value> = self
            .by_attempt
            .get(attempt)
            .into_iter()
            .flatten()
            .filter_map(|id| self.intents.get(id).map(Intent::json))
            .collect();
        Effect::answer(
            200,
            json!({"object": "search_result", "data": data, "has_more": false,
                "next_page": null, "url": "/v1/payment_intents/search"}),
        )
    }

    fn capture(&mut self, id: &str, form: &[(String, String)]) -> Effect {
        let p = Params(form);
        if let Some(refused) = p.unknown(&["amount_to_capture"], &["expand", "metadata"]) {
            return refused;
        }
        let Some(intent) = self.intents.get_mut(id) else {
            return missing("payment_intent", "intent", id);
        };
        let amount = match p.get("amount_to_capture") {
            None => intent.amount,
            Some(_) => match p.positive("amount_to_capture") {
                Ok(a) if a <= intent.amount => a,
                Ok(_) => {
                    return bad_param(
                        "amount_too_large",
                        "amount_to_capture",
                        "The amount to capture exceeds the amount capturable.",
                    );
                }
                Err(refused) => return refused,
            },
        };
        if intent.status != Status::RequiresCapture {
            return unexpected_state(intent, "captured");
        }
        intent.status = Status::Succeeded;
        intent.amount_received = amount;
        let (key, json) = (intent.ledger_key(), intent.json());
        self.ledger.attempt(&key).captures += 1;
        let mut e = Effect::answer(200, json.clone());
        e.events.push(("payment_intent.succeeded", json));
        e
    }

    fn cancel(&mut self, id: &str, form: &[(String, String)], now: i64) -> Effect {
        let p = Params(form);
        if let Some(refused) = p.unknown(&["cancellation_reason"], &["expand"]) {
            return refused;
        }
        let reason = p.get("cancellation_reason");
        if let Some(r) = reason
            && ![
                "duplicate",
                "fraudulent",
                "requested_by_customer",
                "abandoned",
            ]
            .contains(&r)
        {
            return bad_param(
                "parameter_invalid_string",
                "cancellation_reason",
                &format!(
                    "Invalid cancellation_reason: must be one of duplicate, fraudulent, requested_by_customer or abandoned (got {r})"
                ),
            );
        }
        let Some(intent) = self.intents.get_mut(id) else {
            return missing("payment_intent", "intent", id);
        };
        let was = intent.status;
        if !matches!(
            was,
            Status::RequiresCapture | Status::RequiresPaymentMethod | Status::RequiresAction
        ) {
            return unexpected_state(intent, "canceled");
        }
        intent.status = Status::Canceled;
        intent.canceled_at = Some(now);
        intent.cancellation_reason = reason.map(str::to_owned);
        let (key, json) = (intent.ledger_key(), intent.json());
        if was == Status::RequiresCapture {
            self.ledger.attempt(&key).voids += 1;
        }
        let mut e = Effect::answer(200, json.clone());
        e.events.push(("payment_intent.canceled", json));
        e
    }

    fn refund(&mut self, form: &[(String, String)], now: i64) -> Effect {
        let p = Params(form);
        if let Some(refused) = p.unknown(
            &["payment_intent", "charge", "amount", "reason"],
            &["metadata", "expand"],
        ) {
            return refused;
        }
        let id = match (p.get("payment_intent"), p.get("charge")) {
            (Some(pi), _) => pi.to_owned(),
            (None, Some(ch)) => format!("pi_{}", ch.trim_start_matches("ch_")),
            (None, None) => {
                return bad_param(
                    "parameter_missing",
                    "payment_intent",
                    "One of the following params should be provided for this request: payment_intent or charge.",
                );
            }
        };
        let refund_id = self.new_id("re");
        let Some(intent) = self.intents.get_mut(&id) else {
            return missing("payment_intent", "payment_intent", &id);
        };
        if p.get("amount").is_some() {
            match p.positive("amount") {
                Ok(a) if a == intent.amount_received => {}
                Ok(_) => {
                    return bad_param(
                        "parameter_invalid_integer",
                        "amount",
                        "The simulator refunds whole payments only.",
                    );
                }
                Err(refused) => return refused,
            }
        }
        if intent.refund_id.is_some() {
            return error(
                400,
                "invalid_request_error",
                "charge_already_refunded",
                &format!("Charge {} has already been refunded.", intent.charge_id()),
            );
        }
        if intent.status != Status::Succeeded {
            return unexpected_state(intent, "refunded");
        }
        intent.refund_id = Some(refund_id.clone());
        intent.refunded_at = Some(now);
        let (key, charge) = (intent.ledger_key(), intent.charge_json());
        let refund = intent.refund_json(&refund_id, now);
        self.ledger.attempt(&key).refunds += 1;
        let mut e = Effect::answer(200, refund);
        e.events.push(("charge.refunded", charge));
        e
    }
}
