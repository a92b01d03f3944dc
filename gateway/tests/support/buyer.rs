//! Buyer and organizer verbs over HTTP, as API.md names them.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::http::{Answer, DEADLINE, Gateway};

/// A place in line.
#[derive(Debug, Clone)]
pub struct Queued {
    pub event: String,
    pub queue_token: String,
    pub ticket_id: String,
    pub position: Option<u64>,
}

impl Queued {
    /// The buyer a 201 join answer put in line.
    pub fn joined(event: &str, answer: &Answer) -> Queued {
        Queued {
            event: event.to_owned(),
            queue_token: answer.str("queue_token"),
            ticket_id: answer.str("ticket_id"),
            position: answer.body["position"].as_u64(),
        }
    }
}

/// A claimed offer: the admission session.
#[derive(Debug, Clone)]
pub struct Admitted {
    pub event: String,
    pub admission_token: String,
    pub session_id: String,
}

/// A live hold as the buyer knows it.
#[derive(Debug, Clone)]
pub struct Held {
    pub hold_id: String,
    pub receipt_key: String,
    pub seats: Vec<String>,
}

impl Held {
    pub fn from(answer: &Answer) -> Self {
        Self {
            hold_id: answer.str("hold_id"),
            receipt_key: answer.str("receipt_key"),
            seats: answer.body["seats"]
                .as_array()
                .unwrap_or_else(|| panic!("no seats in {answer:?}"))
                .iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect(),
        }
    }
}

/// Seat ids made by `create_event` (`generate` names them `{section}-{row}-{n}`).
pub fn seat(n: u32) -> String {
    format!("A-A-{n}")
}

impl Gateway {
    /// Creates an event with a unique id, `seats` seats `A-A-1…` at 2,500 cents, and the given
    /// `admission` settings (`rate_per_min`, `max_active`, `session_s`, `offer_s`); returns its id.
    pub async fn create_event(&self, seats: u32, admission: Value) -> String {
        self.create_event_with(seats, json!({ "admission": admission }))
            .await
    }

    /// As `create_event`, with any other fields of the create body (`max_seats_per_hold`, …).
    pub async fn create_event_with(&self, seats: u32, mut body: Value) -> String {
        let event = format!("ev-{}", uuid::Uuid::now_v7().simple());
        body["event"] = json!(event);
        body["name"] = json!("End-to-end night");
        self.send(self.admin(Method::POST, "/api/admin/events").json(&body))
            .await
            .expect(201);
        self.add_seats(&event, seats).await;
        event
    }

    /// Adds a row of `seats` in section A (seats 1…n) with the organizer key.
    pub async fn add_seats(&self, event: &str, seats: u32) {
        let seats = json!({ "generate": { "section": "A", "rows": 1, "per_row": seats, "price_cents": 2500 } });
        self.send(
            self.admin(Method::POST, &format!("/api/admin/events/{event}/seats"))
                .json(&seats),
        )
        .await
        .expect(200);
    }

    /// `PATCH …/admission` with the organizer key.
    pub async fn tune(&self, event: &str, patch: Value) -> Answer {
        self.send(
            self.admin(
                Method::PATCH,
                &format!("/api/admin/events/{event}/admission"),
            )
            .json(&patch),
        )
        .await
    }

    pub async fn join_queue_raw(&self, event: &str) -> Answer {
        self.send(self.request(Method::POST, &format!("/api/events/{event}/queue")))
            .await
    }

    pub async fn join_queue(&self, event: &str) -> Queued {
        Queued::joined(event, &self.join_queue_raw(event).await.expect(201))
    }

    pub async fn queue_status(&self, queued: &Queued) -> Answer {
        let path = format!("/api/events/{}/queue/status", queued.event);
        self.send(
            self.request(Method::GET, &path)
                .bearer_auth(&queued.queue_token),
        )
        .await
    }

    /// Polls the status (the WebSocket's fallback) until it is `status`; returns the last answer.
    pub async fn poll_until(&self, queued: &Queued, status: &str) -> Answer {
        let started = tokio::time::Instant::now();
        loop {
            let answer = self.queue_status(queued).await.expect(200);
            if answer.body["status"] == status {
                return answer;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "ticket never became {status}: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn claim_raw(&self, queued: &Queued, token: &str) -> Answer {
        let path = format!("/api/events/{}/queue/claim", queued.event);
        self.send(self.request(Method::POST, &path).bearer_auth(token))
            .await
    }

    /// Claims by HTTP (the polling client's way).
    pub async fn claim(&self, queued: &Queued) -> Admitted {
        let answer = self
            .claim_raw(queued, &queued.queue_token)
            .await
            .expect(200);
        Admitted {
            event: queued.event.clone(),
            admission_token: answer.str("admission_token"),
            session_id: answer.str("session_id"),
        }
    }

    /// Join, wait for the offer by polling, claim: a buyer who just needs to be admitted.
    pub async fn admit(&self, event: &str) -> Admitted {
        let queued = self.join_queue(event).await;
        self.poll_until(&queued, "offered").await;
        self.claim(&queued).await
    }

    pub async fn hold_raw(&self, event: &str, token: &str, body: &Value) -> Answer {
        let path = format!("/api/events/{event}/holds");
        self.send(
            self.request(Method::POST, &path)
                .bearer_auth(token)
                .json(body),
        )
        .await
    }

    /// Holds named seats; returns the raw answer (a race has a winner and a loser).
    pub async fn hold(&self, buyer: &Admitted, seats: &[String]) -> Answer {
        self.hold_raw(
            &buyer.event,
            &buyer.admission_token,
            &json!({ "seats": seats }),
        )
        .await
    }

    pub async fn extend(&self, buyer: &Admitted, hold: &str) -> Answer {
        let path = format!("/api/holds/{hold}/extend");
        self.send(
            self.request(Method::POST, &path)
                .bearer_auth(&buyer.admission_token),
        )
        .await
    }

    pub async fn checkout(
        &self,
        buyer: &Admitted,
        hold: &str,
        payment_method: &str,
        key: &str,
    ) -> Answer {
        let path = format!("/api/holds/{hold}/checkout");
        self.send(
            self.request(Method::POST, &path)
                .bearer_auth(&buyer.admission_token)
                .header("idempotency-key", key)
                .json(&json!({ "payment_method": payment_method })),
        )
        .await
    }

    pub async fn read_hold(&self, buyer: &Admitted, hold: &str) -> Answer {
        self.send(
            self.request(Method::GET, &format!("/api/holds/{hold}"))
                .bearer_auth(&buyer.admission_token),
        )
        .await
    }

    /// Polls the hold until `done` says so; panics with the last view after `DEADLINE`.
    pub async fn wait_hold(
        &self,
        buyer: &Admitted,
        hold: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let started = tokio::time::Instant::now();
        loop {
            let answer = self.read_hold(buyer, hold).await.expect(200);
            if done(&answer.body) {
                return answer.body;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "hold {hold} did not reach the expected state within {DEADLINE:?} \
                 (is the outbox worker wired?): {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until the payment went through; returns the order id.
    pub async fn wait_confirmed(&self, buyer: &Admitted, hold: &str) -> String {
        let view = self
            .wait_hold(buyer, hold, |h| h["state"] == "confirmed")
            .await;
        view["order_id"]
            .as_str()
            .unwrap_or_else(|| panic!("a confirmed hold names its order: {view}"))
            .to_owned()
    }

    pub async fn release(&self, buyer: &Admitted, hold: &str) -> Answer {
        self.send(
            self.request(Method::DELETE, &format!("/api/holds/{hold}"))
                .bearer_auth(&buyer.admission_token),
        )
        .await
    }

    /// Reads an order with nothing but the receipt key (no admission token).
    pub async fn read_order_with_receipt(&self, order: &str, receipt_key: &str) -> Answer {
        self.send(
            self.request(Method::GET, &format!("/api/orders/{order}"))
                .header("floodgate-receipt", receipt_key),
        )
        .await
    }

    pub async fn stats(&self, event: &str) -> Value {
        let path = format!("/api/admin/events/{event}/stats");
        self.send(self.admin(Method::GET, &path))
            .await
            .expect(200)
            .body
    }
}
