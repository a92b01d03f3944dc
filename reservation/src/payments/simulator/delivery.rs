//! Webhook delivery: signed, optionally delayed, duplicated or swapped in pairs.

use std::time::Duration;

use serde_json::{Value, json};

use super::Simulator;
use super::state::State;
use crate::payments::webhook;

/// Delivery attempts per event; a provider retries a receiver that did not answer 2xx.
const ATTEMPTS: u32 = 3;

/// Turns a request's events into deliveries according to the knobs. Runs under the lock
/// (the draws must be in seed order); the sending itself happens in spawned tasks.
pub(super) fn plan(sim: &Simulator, st: &mut State, events: Vec<(&'static str, Value)>, now: i64) {
    let Some(url) = st.knobs.webhook_url.clone() else {
        return;
    };
    for (kind, object) in events {
        // Stripe's event envelope, every field of its example event.
        let event = json!({"id": st.new_id("evt"), "object": "event", "type": kind,
            "api_version": crate::payments::STRIPE_VERSION, "created": now,
            "data": {"object": object}, "livemode": false, "pending_webhooks": 1,
            "request": {"id": null, "idempotency_key": null}});
        let batch = if st.knobs.webhook_out_of_order {
            match st.held_back.take() {
                Some((_, earlier)) => vec![event, earlier],
                None => {
                    st.event_seq += 1;
                    st.held_back = Some((st.event_seq, event));
                    spawn_flush(sim.clone(), st.event_seq, st.knobs.reorder_window_ms);
                    continue;
                }
            }
        } else {
            vec![event]
        };
        dispatch(sim, st, url.clone(), batch);
    }
}

/// An event held back for reordering goes out alone if no successor came in time.
fn spawn_flush(sim: Simulator, seq: u64, window_ms: u64) {
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(window_ms)).await;
        let mut st = sim.state();
        if st.held_back.as_ref().is_some_and(|(s, _)| *s == seq)
            && let Some((_, event)) = st.held_back.take()
            && let Some(url) = st.knobs.webhook_url.clone()
        {
            dispatch(&sim, &mut st, url, vec![event]);
        }
    });
}

fn dispatch(sim: &Simulator, st: &mut State, url: String, batch: Vec<Value>) {
    let rate = st.knobs.webhook_duplicate_rate;
    let mut sends = Vec::with_capacity(batch.len() * 2);
    for event in batch {
        if st.chance(rate) {
            sends.push(event.clone());
        }
        sends.push(event);
    }
    let delay = Duration::from_millis(st.knobs.webhook_delay_ms);
    let sim = sim.clone();
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        // In order within the batch: the reordering is the swap planned above, no more.
        for event in sends {
            let delivered = send(&sim, &url, &event.to_string()).await;
            let mut st = sim.state();
            if delivered {
                st.ledger.counters.webhooks_sent += 1;
            } else {
                st.ledger.counters.webhooks_failed += 1;
            }
        }
    });
}

async fn send(sim: &Simulator, url: &str, body: &str) -> bool {
    for attempt in 0..ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100 << attempt)).await;
        }
        let t = time::OffsetDateTime::now_utc().unix_timestamp();
        let signature = webhook::sign(&sim.inner.webhook_secret, t, body.as_bytes());
        let sent = sim
            .inner
            .http
            .post(url)
            .header("Stripe-Signature", signature)
            .header("Content-Type", "application/json")
            .timeout(Duration::from_secs(5))
            .body(body.to_owned())
            .send()
            .await;
        match sent {
            Ok(r) if r.status().is_success() => return true,
            Ok(r) => tracing::debug!(status = r.status().as_u16(), "webhook refused"),
            Err(error) => tracing::debug!(%error, "webhook not delivered"),
        }
    }
    false
}
