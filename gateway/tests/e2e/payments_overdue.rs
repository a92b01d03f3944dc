//! A payment the provider leaves unanswered long past its abandon time is escalated, never
//! silent: `floodgate_payments_overdue` counts it, the stuck list flags it, and both clear once
//! the provider answers again and the reconciler closes the attempt.

use crate::support;

use std::time::Duration;

use floodgate_tests::sim_control::SimControl;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

use support::buyer::{Held, seat};
use support::{Backends, TestApp, spawn_app_with};

/// Long enough for the outbox's and the reconciler's provider timeouts to pass several times.
const WAIT: Duration = Duration::from_secs(90);

fn overdue_gauge(metrics: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix("floodgate_payments_overdue "))
        .and_then(|v| v.trim().parse().ok())
}

async fn stuck(app: &TestApp, event: &str) -> Vec<Value> {
    let path = format!("/api/admin/events/{event}/stuck?older_than_s=0");
    app.send(app.admin(Method::GET, &path))
        .await
        .expect(200)
        .body["payments"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Polls until `done` holds for the stuck list and the gauge, or panics with the last look.
async fn wait_until(app: &TestApp, event: &str, what: &str, done: impl Fn(&[Value], f64) -> bool) {
    let until = Instant::now() + WAIT;
    loop {
        let list = stuck(app, event).await;
        let gauge = overdue_gauge(&app.get("/metrics").await.expect(200).text).unwrap_or(-1.0);
        if done(&list, gauge) {
            return;
        }
        assert!(
            Instant::now() < until,
            "{what}: never happened; stuck list {list:?}, floodgate_payments_overdue {gauge}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_payment_past_its_abandon_time_is_escalated_until_the_provider_answers() {
    let app = spawn_app_with(Backends::Postgres, |config| config.payment_overdue_s = 1).await;
    let event = app
        .create_event_with(
            2,
            json!({"resolve_s": 1, "abandon_s": 2,
                   "admission": {"rate_per_min": 6000, "max_active": 10, "offer_s": 30}}),
        )
        .await;
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));

    // The provider stops answering before the buyer pays.
    let sim = SimControl::new(&app.simulator.as_ref().expect("HTTP simulator").base_url);
    sim.pause().await.expect("pause the simulator");
    let paying = app
        .checkout(&buyer, &held.hold_id, "pm_card_visa", "k1")
        .await
        .expect(202);
    let payment_id = paying.body["payment_id"].clone();

    wait_until(
        &app,
        &event,
        "the payment flagged overdue",
        |list, gauge| {
            gauge >= 1.0
                && list
                    .iter()
                    .any(|p| p["payment_id"] == payment_id && p["overdue"] == json!(true))
        },
    )
    .await;

    // Once the provider answers, the reconciler closes the attempt and the alert clears.
    sim.resume().await.expect("resume the simulator");
    wait_until(&app, &event, "the alert cleared", |list, gauge| {
        list.is_empty() && gauge == 0.0
    })
    .await;
}
