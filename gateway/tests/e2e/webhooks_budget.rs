//! The payment provider's webhooks have a budget of their own: while a crowd floods the
//! reservations group (made-up receipt reads) and is shed, signed deliveries are still taken
//! and answered 200, so confirmations of seats already paid for do not wait behind the crowd.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::json;

use support::{Backends, spawn_app_with};

/// Far fewer reservation permits than flooding clients.
const RESERVATIONS_BUDGET: usize = 4;
const FLOODERS: usize = 48;
const DELIVERIES: usize = 24;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_webhooks_are_taken_while_the_crowd_is_shed() {
    let app = spawn_app_with(
        Backends::Postgres,
        support::flood::small_budgets(RESERVATIONS_BUDGET),
    )
    .await;
    let event = app.create_event(4, json!({})).await;
    let (stop, seen, flooders) = support::flood::until_shed(&app.base_url, &event, FLOODERS).await;

    let secret = app.webhook_secret().to_owned();
    let deliveries: Vec<_> = (0..DELIVERIES)
        .map(|i| {
            let (url, secret) = (app.base_url.clone(), secret.clone());
            tokio::spawn(async move {
                // A provider event for a payment this gateway never started: verified, then
                // acknowledged as unmatched.
                let body = json!({
                    "id": format!("evt_budget_{i}"),
                    "object": "event",
                    "type": "payment_intent.succeeded",
                    "data": {"object": {"id": format!("pi_budget_{i}"), "object": "payment_intent",
                        "status": "succeeded", "metadata": {}}}
                })
                .to_string();
                let t = time::OffsetDateTime::now_utc().unix_timestamp();
                let header =
                    reservation::payments::webhook::sign(secret.as_bytes(), t, body.as_bytes());
                let response = reqwest::Client::new()
                    .post(format!("{url}/api/payments/webhook"))
                    .header("content-type", "application/json")
                    .header("stripe-signature", header)
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                (status, response.text().await.unwrap_or_default())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for delivery in deliveries {
        answers.push(delivery.await.unwrap());
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for flooder in flooders {
        flooder.await.unwrap();
    }
    let refused: Vec<_> = answers
        .iter()
        .filter(|(status, _)| *status != 200)
        .collect();
    assert!(
        refused.is_empty(),
        "{} of {DELIVERIES} signed deliveries were not taken while the crowd was shed \
         ({:?}): {refused:?}",
        refused.len(),
        seen.snapshot()
    );
    assert!(
        answers
            .iter()
            .all(|(_, body)| body.contains("\"received\":true")),
        "{answers:?}"
    );
    assert!(
        seen.count(503) >= 20,
        "the crowd was shed: {:?}",
        seen.snapshot()
    );
}
