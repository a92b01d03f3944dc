//! 3-D Secure end to end: a buyer pays with a card that asks for authentication
//! (`pm_card_authenticationRequired`). The hold stays `paying` and names the bank's page in
//! `next_action`; completing the challenge confirms the order, failing it puts the seats back
//! in the buyer's hold with the reason, and another card then buys them. Told against
//! PostgreSQL + Redis + the HTTP simulator, and against the embedded default, whose gateway
//! serves the in-process simulator's challenge page itself.

use crate::support;

use std::time::Duration;

use floodgate_tests::sim_control::SimControl;
use reqwest::redirect::Policy;
use reservation::payments::simulator::KnobsPatch;
use serde_json::{Value, json};
use tokio::time::Instant;

use support::buyer::{Admitted, Held, seat};
use support::{Backends, TestApp, spawn_app};

const RETURN: &str = "https://shop.example/events/night?from=bank";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_d_secure_on_postgres_redis_and_http_simulator() {
    both_outcomes(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_d_secure_on_the_embedded_default() {
    both_outcomes(spawn_app(Backends::Embedded).await).await;
}

/// The webhooks never come (held back for an hour): the reconciler alone must finish a
/// challenge the buyer completed, and give back the seats of one the buyer walked away from
/// once its `abandon_at` passes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_webhooks_the_reconciler_finishes_or_abandons_a_challenge() {
    let app = spawn_app(Backends::Postgres).await;
    let sim = SimControl::new(&app.simulator.as_ref().expect("HTTP simulator").base_url);
    sim.set_knobs(&KnobsPatch {
        webhook_delay_ms: Some(3_600_000),
        ..KnobsPatch::default()
    })
    .await
    .expect("hold webhooks back");
    // Completed by the buyer: the reconciler's first look (past `resolve_by`, well before
    // `abandon_at`) finds the payment authorized and confirms it.
    let event = app
        .create_event_with(
            1,
            json!({"resolve_s": 1, "admission": {"rate_per_min": 600, "max_active": 10}}),
        )
        .await;
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));
    let page = pay_with_3ds(&app, &buyer, &held, "k-recon-complete").await;
    choose(&app, &page, "complete").await;
    let view = settle(&app, &buyer, &held).await;
    assert_eq!(view["state"], "confirmed", "{view}");

    // Left on the bank's page: past `abandon_at` the attempt is abandoned, the seat freed.
    let event = app
        .create_event_with(
            1,
            json!({"resolve_s": 1, "abandon_s": 4,
                   "admission": {"rate_per_min": 600, "max_active": 10}}),
        )
        .await;
    let walker = app.admit(&event).await;
    let held = Held::from(&app.hold(&walker, &[seat(1)]).await.expect(201));
    pay_with_3ds(&app, &walker, &held, "k-recon-walk-away").await;
    let view = settle(&app, &walker, &held).await;
    assert_eq!(view["state"], "abandoned", "{view}");
    // The seat is for sale again: another buyer holds it.
    let next = app.admit(&event).await;
    app.hold(&next, &[seat(1)]).await.expect(201);
}

/// Reads the hold until it leaves `paying`; the reconciler passes every few seconds.
async fn settle(app: &TestApp, buyer: &Admitted, held: &Held) -> Value {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let view = app.read_hold(buyer, &held.hold_id).await.expect(200).body;
        if view["state"] != "paying" {
            return view;
        }
        assert!(Instant::now() < until, "still paying: {view}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn both_outcomes(app: TestApp) {
    let event = app
        .create_event(4, json!({"rate_per_min": 600, "max_active": 10}))
        .await;

    // Completes the bank's check: the order is confirmed.
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));
    let page = pay_with_3ds(&app, &buyer, &held, "k-complete").await;
    let back = choose(&app, &page, "complete").await;
    assert!(
        back.starts_with(&format!("{RETURN}&payment_intent=pi_"))
            && back.ends_with("redirect_status=succeeded"),
        "the bank sends the buyer back to the checkout's return page: {back}"
    );
    let order = app.wait_confirmed(&buyer, &held.hold_id).await;
    let read = app
        .read_order_with_receipt(&order, &held.receipt_key)
        .await
        .expect(200);
    assert_eq!(read.body["status"], "confirmed", "{read:?}");
    assert_eq!(read.body["seats"], json!([seat(1)]), "{read:?}");

    // Fails the bank's check: declined, the seats back in the same hold, and another card
    // buys them.
    let rival = app.admit(&event).await;
    let held = Held::from(&app.hold(&rival, &[seat(2), seat(3)]).await.expect(201));
    let page = pay_with_3ds(&app, &rival, &held, "k-fail").await;
    let back = choose(&app, &page, "fail").await;
    assert!(back.ends_with("redirect_status=failed"), "{back}");
    let view = app
        .wait_hold(&rival, &held.hold_id, |h| h["state"] == "held")
        .await;
    assert_eq!(
        view["last_payment_error"], "payment_intent_authentication_failure",
        "{view}"
    );
    assert_eq!(view["seats"], json!([seat(2), seat(3)]), "{view}");
    assert!(view["expires_in_s"].as_i64().unwrap_or(0) > 0, "{view}");
    assert!(view.get("next_action").is_none(), "{view}");
    // A second choice on the bank's page changes nothing.
    choose(&app, &page, "complete").await;
    app.checkout(&rival, &held.hold_id, "pm_card_visa", "k-retry")
        .await
        .expect(202);
    let order = app.wait_confirmed(&rival, &held.hold_id).await;
    assert!(!order.is_empty());

    if let Some(sim) = &app.simulator {
        let ledger = sim.simulator.ledger();
        assert!(ledger.charged_twice().is_empty(), "{ledger:?}");
        let authorized: u32 = ledger.attempts.values().map(|r| r.authorizations).sum();
        let declined: u32 = ledger.attempts.values().map(|r| r.declines).sum();
        assert_eq!((authorized, declined), (2, 1), "{ledger:?}");
    }
}

/// Checks out with the authentication card; returns the bank's page once the hold names it.
async fn pay_with_3ds(app: &TestApp, buyer: &Admitted, held: &Held, key: &str) -> String {
    let path = format!("/api/holds/{}/checkout", held.hold_id);
    let answer = app
        .send(
            app.request(reqwest::Method::POST, &path)
                .bearer_auth(&buyer.admission_token)
                .header("idempotency-key", key)
                .json(&json!({"payment_method": "pm_card_authenticationRequired", "return_url": RETURN})),
        )
        .await
        .expect(202);
    assert_eq!(answer.body["state"], "paying", "{answer:?}");
    let view: Value = app
        .wait_hold(buyer, &held.hold_id, |h| h["next_action"].is_object())
        .await;
    assert_eq!(
        view["state"], "paying",
        "waiting for the buyer is still paying: {view}"
    );
    assert_eq!(view["next_action"]["type"], "redirect_to_url", "{view}");
    let url = view["next_action"]["redirect_to_url"]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("next_action names a page: {view}"));
    // The in-process simulator's page is a path on the gateway's own origin.
    let url = if url.starts_with('/') {
        app.url(url)
    } else {
        url.to_owned()
    };
    let page = reqwest::get(&url).await.expect("the bank's page answers");
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap_or_default();
    assert!(html.contains("Complete authentication"), "{html}");
    url
}

/// Presses a button on the bank's page; returns where the buyer is sent.
async fn choose(app: &TestApp, page: &str, choice: &str) -> String {
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .expect("an HTTP client");
    let answer = http
        .post(format!("{page}/{choice}"))
        .send()
        .await
        .expect("the bank's page takes the choice");
    assert_eq!(
        answer.status(),
        303,
        "{choice} on {page} (gateway {})",
        app.url("")
    );
    answer
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
