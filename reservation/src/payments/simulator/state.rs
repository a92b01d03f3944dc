//! The simulator's book of PaymentIntents and what each request does to them. Everything
//! here is synchronous and runs under the simulator's lock; waiting happens outside it.

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use super::SimRequest;
use super::intent::{Effect, Intent, Status, error, missing, unexpected_state};
use super::knobs::Knobs;
use super::ledger::Ledger;

struct Stored {
    fingerprint: String,
    status: u16,
    body: Value,
}

pub(crate) struct State {
    pub rng: StdRng,
    pub knobs: Knobs,
    pub ledger: Ledger,
    intents: HashMap<String, Intent>,
    by_attempt: HashMap<String, Vec<String>>,
    idempotency: HashMap<String, Stored>,
    next_id: u64,
    /// Out-of-order delivery: the event waiting for its successor, with its sequence number.
    pub held_back: Option<(u64, Value)>,
    pub event_seq: u64,
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
    /// stored and replayed; the same key with another request is refused.
    pub fn execute(&mut self, req: &SimRequest, now: i64) -> Effect {
        self.ledger.counters.requests += 1;
        if self.chance(self.knobs.error_rate) || req.payment_method() == Some("pm_card_error") {
            self.ledger.counters.server_errors += 1;
            return error(500, "api_error", "internal_error", "simulated server error");
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
                    "Keys for idempotent requests can only be used with the same parameters they were first used with.",
                );
            }
            self.ledger.counters.idempotent_replays += 1;
            return Effect::answer(stored.status, stored.body.clone());
        }
        let effect = self.run(req, now);
        if effect.status < 500 {
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
                None => missing(id),
            },
            SimRequest::SearchIntents { query } => self.search(query),
            SimRequest::CaptureIntent { id, .. } => self.capture(id),
            SimRequest::CancelIntent { id, .. } => self.cancel(id),
            SimRequest::CreateRefund { form, .. } => self.refund(form),
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
        let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let Some(amount) = field("amount")
            .and_then(|a| a.parse::<i64>().ok())
            .filter(|a| *a > 0)
        else {
            return error(
                400,
                "invalid_request_error",
                "parameter_invalid_integer",
                "amount must be a positive integer",
            );
        };
        if field("capture_method") != Some("manual") || field("confirm") != Some("true") {
            return error(
                400,
                "invalid_request_error",
                "parameter_invalid",
                "the simulator supports capture_method=manual with confirm=true only",
            );
        }
        let pm = field("payment_method").unwrap_or_default().to_owned();
        let (decline, slow, lost) = match pm.as_str() {
            "pm_card_visa" => (self.chance(self.knobs.decline_rate), false, false),
            "pm_card_declined" => (true, false, false),
            "pm_card_slow" => (false, true, false),
            "pm_card_lost" => (false, false, true),
            _ => {
                return error(
                    400,
                    "invalid_request_error",
                    "resource_missing",
                    &format!("No such PaymentMethod: '{pm}'"),
                );
            }
        };
        let intent = Intent {
            id: self.new_id("pi"),
            amount,
            currency: field("currency").unwrap_or("eur").to_owned(),
            payment_method: pm,
            attempt_id: field("metadata[attempt_id]").map(str::to_owned),
            status: if decline {
                Status::RequiresPaymentMethod
            } else {
                Status::RequiresCapture
            },
            decline_code: decline.then_some("generic_decline"),
            refund_id: None,
            created: now,
        };
        let record = self.ledger.attempt(&intent.ledger_key());
        record.payment_ids.push(intent.id.clone());
        record.amount_cents = amount;
        if decline {
            record.declines += 1;
        } else {
            record.authorizations += 1;
        }
        if let Some(a) = &intent.attempt_id {
            self.by_attempt
                .entry(a.clone())
                .or_default()
                .push(intent.id.clone());
        }
        let json = intent.json();
        self.intents.insert(intent.id.clone(), intent);
        let mut effect = if decline {
            let mut body = json!({"error": {"type": "card_error", "code": "card_declined",
                "decline_code": "generic_decline", "message": "Your card was declined."}});
            body["error"]["payment_intent"] = json.clone();
            let mut e = Effect::answer(402, body);
            e.events.push(("payment_intent.payment_failed", json));
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
        let Some(attempt) = query
            .strip_prefix("metadata['attempt_id']:'")
            .and_then(|q| q.strip_suffix('\''))
        else {
            return error(
                400,
                "invalid_request_error",
                "parameter_invalid",
                "unsupported search query",
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
            json!({"object": "search_result", "data": data, "has_more": false}),
        )
    }

    fn capture(&mut self, id: &str) -> Effect {
        let Some(intent) = self.intents.get_mut(id) else {
            return missing(id);
        };
        if intent.status != Status::RequiresCapture {
            return unexpected_state(intent, "captured");
        }
        intent.status = Status::Succeeded;
        let (key, json) = (intent.ledger_key(), intent.json());
        self.ledger.attempt(&key).captures += 1;
        let mut e = Effect::answer(200, json.clone());
        e.events.push(("payment_intent.succeeded", json));
        e
    }

    fn cancel(&mut self, id: &str) -> Effect {
        let Some(intent) = self.intents.get_mut(id) else {
            return missing(id);
        };
        let was = intent.status;
        if !matches!(was, Status::RequiresCapture | Status::RequiresPaymentMethod) {
            return unexpected_state(intent, "canceled");
        }
        intent.status = Status::Canceled;
        let (key, json) = (intent.ledger_key(), intent.json());
        if was == Status::RequiresCapture {
            self.ledger.attempt(&key).voids += 1;
        }
        let mut e = Effect::answer(200, json.clone());
        e.events.push(("payment_intent.canceled", json));
        e
    }

    fn refund(&mut self, form: &[(String, String)]) -> Effect {
        let Some(id) = form
            .iter()
            .find(|(k, _)| k == "payment_intent")
            .map(|(_, v)| v.clone())
        else {
            return error(
                400,
                "invalid_request_error",
                "parameter_missing",
                "payment_intent is required",
            );
        };
        let refund_id = self.new_id("re");
        let Some(intent) = self.intents.get_mut(&id) else {
            return missing(&id);
        };
        if intent.refund_id.is_some() {
            return error(
                400,
                "invalid_request_error",
                "charge_already_refunded",
                "This charge has already been refunded.",
            );
        }
        if intent.status != Status::Succeeded {
            return unexpected_state(intent, "refunded");
        }
        intent.refund_id = Some(refund_id.clone());
        let (key, charge) = (intent.ledger_key(), intent.charge_json());
        let amount = intent.amount;
        self.ledger.attempt(&key).refunds += 1;
        let mut e = Effect::answer(
            200,
            json!({"id": refund_id, "object": "refund", "amount": amount,
            "payment_intent": id, "status": "succeeded"}),
        );
        e.events.push(("charge.refunded", charge));
        e
    }
}
