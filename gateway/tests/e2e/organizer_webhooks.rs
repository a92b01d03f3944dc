//! Webhooks to the organizer's own systems, end to end against PostgreSQL + Redis + the HTTP
//! simulator and against the embedded default: a receiver this test runs (an axum server on
//! 127.0.0.1:0) checks every `Floodgate-Signature` with the subscription's secret on its own;
//! a real purchase and a pause reach it; a failing receiver gets the same delivery again until
//! it answers, or is given up; the test button; a refunded sale and a payment stuck past its
//! abandon time reach it too; and bad input on every route changes nothing.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Sha256;

use floodgate_tests::sim_control::SimControl;
use support::buyer::{Held, seat};
use support::http::{Answer, DEADLINE};
use support::{Backends, TestApp, spawn_app, spawn_app_with};

/// What the receiver got: each request's body, and whether its signature held.
#[derive(Clone, Debug)]
struct Received {
    body: Value,
    verified: bool,
}

#[derive(Default)]
struct Inbox {
    /// The subscription's secret, known once the subscription is made.
    secret: Option<String>,
    /// Answer 500 to this many requests before answering 200.
    fail_first: usize,
    got: Vec<Received>,
}

type Shared = Arc<Mutex<Inbox>>;

/// The organizer's system: verifies the signature as a receiver would, from the header, the
/// raw body and the secret alone, and records every request.
async fn receive(State(inbox): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let mut inbox = inbox.lock().unwrap();
    let header = headers
        .get("floodgate-signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let verified = inbox
        .secret
        .as_deref()
        .is_some_and(|secret| signature_holds(secret, header, &body));
    inbox.got.push(Received {
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        verified,
    });
    if inbox.got.len() <= inbox.fail_first {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    }
}

/// `t=UNIX,v1=HEX` with HEX the HMAC-SHA256 of `t.body`, and `t` within five minutes.
fn signature_holds(secret: &str, header: &str, body: &[u8]) -> bool {
    let mut t = None;
    let mut v1 = Vec::new();
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", value)) => t = value.parse::<i64>().ok(),
            Some(("v1", value)) => v1.push(value.to_owned()),
            _ => {}
        }
    }
    let Some(t) = t else { return false };
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    if (now - t).abs() > 300 {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    let expected = hex::encode(mac.finalize().into_bytes());
    v1.contains(&expected)
}

/// Starts a receiver; returns its URL and its inbox.
async fn receiver(fail_first: usize) -> (String, Shared) {
    let inbox: Shared = Arc::new(Mutex::new(Inbox {
        fail_first,
        ..Inbox::default()
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route("/hooks", axum::routing::post(receive))
        .with_state(inbox.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hooks"), inbox)
}

/// Subscribes `url` to `events` with a generated secret; the receiver learns the secret from
/// the one answer that shows it.
async fn subscribe(
    app: &TestApp,
    event: &str,
    url: &str,
    events: &[&str],
    inbox: &Shared,
) -> String {
    let made = app
        .send(
            app.admin(Method::POST, &format!("/api/admin/events/{event}/webhooks"))
                .json(&json!({ "url": url, "events": events })),
        )
        .await
        .expect(201);
    let secret = made.str("secret");
    assert!(secret.len() >= 32, "{made:?}");
    inbox.lock().unwrap().secret = Some(secret);
    assert_eq!(made.body["events"], json!(events), "{made:?}");
    made.str("webhook_id")
}

/// The organizer's receiver, subscribed to `kinds` of `event`: answers 500 to the first
/// `fail_first` requests, then 200. Returns the subscription's id and the receiver's inbox.
async fn listen(app: &TestApp, event: &str, kinds: &[&str], fail_first: usize) -> (String, Shared) {
    let (url, inbox) = receiver(fail_first).await;
    let webhook = subscribe(app, event, &url, kinds, &inbox).await;
    (webhook, inbox)
}

/// Waits until the receiver holds a request that `wanted` picks; returns it.
async fn wait_for(inbox: &Shared, what: &str, wanted: impl Fn(&Received) -> bool) -> Received {
    let started = tokio::time::Instant::now();
    loop {
        if let Some(found) = inbox.lock().unwrap().got.iter().find(|r| wanted(r)) {
            return found.clone();
        }
        assert!(
            started.elapsed() < DEADLINE * 3,
            "no {what} reached the receiver: {:?}",
            inbox.lock().unwrap().got
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn deliveries(app: &TestApp, event: &str, webhook: &str) -> Answer {
    app.send(app.admin(
        Method::GET,
        &format!("/api/admin/events/{event}/webhooks/{webhook}/deliveries"),
    ))
    .await
    .expect(200)
}

/// Waits until the subscription's newest delivery reaches `state`; returns it.
async fn wait_delivery(app: &TestApp, event: &str, webhook: &str, state: &str) -> Value {
    let started = tokio::time::Instant::now();
    loop {
        let answer = deliveries(app, event, webhook).await;
        let newest = answer.body["deliveries"][0].clone();
        if newest["state"] == state {
            return newest;
        }
        assert!(
            started.elapsed() < DEADLINE * 3,
            "the delivery never became {state}: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the subscription has `n` deliveries and none is pending: the receiver may hear
/// a delivery before its sender has recorded the answer.
async fn wait_settled(app: &TestApp, event: &str, webhook: &str, n: usize) -> Answer {
    let started = tokio::time::Instant::now();
    loop {
        let answer = deliveries(app, event, webhook).await;
        let all = answer.body["deliveries"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if all.len() >= n && all.iter().all(|d| d["state"] != "pending") {
            return answer;
        }
        assert!(
            started.elapsed() < DEADLINE * 3,
            "the deliveries never settled: {answer:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn kind_is(kind: &'static str) -> impl Fn(&Received) -> bool {
    move |r| r.body["type"] == kind
}

// A real purchase and a pause, signed.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purchase_and_a_pause_reach_the_receiver_signed_on_postgres() {
    purchase_and_pause(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purchase_and_a_pause_reach_the_receiver_signed_on_sqlite() {
    purchase_and_pause(spawn_app(Backends::Embedded).await).await;
}

async fn purchase_and_pause(app: TestApp) {
    let event = app
        .create_event(2, json!({"rate_per_min": 600, "max_active": 10}))
        .await;
    let (webhook, inbox) = listen(
        &app,
        &event,
        &["queue.paused", "queue.resumed", "order.confirmed"],
        0,
    )
    .await;

    app.tune(&event, json!({"paused": true})).await.expect(200);
    app.tune(&event, json!({"paused": false})).await.expect(200);
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "hooks-1")
        .await
        .expect(202);
    let order = app.wait_confirmed(&buyer, &held.hold_id).await;

    let confirmed = wait_for(&inbox, "order.confirmed", kind_is("order.confirmed")).await;
    assert!(confirmed.verified, "{confirmed:?}");
    assert_eq!(confirmed.body["event"], json!(event));
    assert_eq!(
        confirmed.body["id"],
        json!(format!("order.confirmed:{order}"))
    );
    assert_eq!(confirmed.body["data"]["order_id"], json!(order));
    assert_eq!(confirmed.body["data"]["seats"], json!([seat(1)]));
    assert_eq!(confirmed.body["data"]["total_cents"], 2500);
    let paused = wait_for(&inbox, "queue.paused", kind_is("queue.paused")).await;
    let resumed = wait_for(&inbox, "queue.resumed", kind_is("queue.resumed")).await;
    assert!(
        paused.verified && resumed.verified,
        "{paused:?} {resumed:?}"
    );
    assert!(
        paused.body["data"]["version"].as_i64() < resumed.body["data"]["version"].as_i64(),
        "{paused:?} {resumed:?}"
    );

    // Each fact once, and each delivery's attempt is on the dashboard's list.
    let list = wait_settled(&app, &event, &webhook, 3).await;
    let all = list.body["deliveries"].as_array().unwrap();
    assert_eq!(all.len(), 3, "{list:?}");
    for delivery in all {
        assert_eq!(delivery["state"], "delivered", "{list:?}");
        // On a loaded machine a first attempt may time out and be retried: every attempt is
        // listed with its duration, and the last is the receiver's 200.
        let attempts = delivery["attempts"].as_array().unwrap();
        assert!(
            attempts.iter().all(|a| a["duration_ms"].is_i64()),
            "{list:?}"
        );
        assert!(attempts.iter().any(|a| a["status"] == 200), "{list:?}");
    }
    // A retried attempt may reach the receiver twice; it deduplicates on the fact's id.
    let ids: std::collections::BTreeSet<String> = inbox
        .lock()
        .unwrap()
        .got
        .iter()
        .map(|r| r.body["id"].to_string())
        .collect();
    assert_eq!(ids.len(), 3, "{ids:?}");
}

// A failing receiver: the same delivery again after a backoff, until it answers.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_retried_after_the_receiver_fails_on_postgres() {
    retried(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_are_retried_after_the_receiver_fails_on_sqlite() {
    retried(Backends::Embedded).await;
}

async fn retried(backends: Backends) {
    let app = spawn_app_with(backends, |config| config.hook_retry_base_ms = 20).await;
    let event = app.create_event(1, json!({})).await;
    let (webhook, inbox) = listen(&app, &event, &["order.confirmed"], 3).await;
    let path = format!("/api/admin/events/{event}/webhooks/{webhook}/test");
    let queued = app.send(app.admin(Method::POST, &path)).await.expect(202);
    assert_eq!(queued.body["type"], "ping", "{queued:?}");

    let delivered = wait_delivery(&app, &event, &webhook, "delivered").await;
    let statuses: Vec<&Value> = delivered["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["status"])
        .collect();
    assert_eq!(
        statuses,
        [&json!(500), &json!(500), &json!(500), &json!(200)]
    );
    assert_eq!(delivered["tries"], 4, "{delivered}");
    let got = inbox.lock().unwrap().got.clone();
    assert_eq!(got.len(), 4, "{got:?}");
    // The same fact each time (the receiver deduplicates on its id), freshly signed.
    assert!(
        got.iter().all(|r| r.verified && r.body == got[0].body),
        "{got:?}"
    );
    assert_eq!(got[0].body["type"], "ping");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_never_answers_well_is_given_up_and_shown() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.hook_retry_base_ms = 20;
        config.hook_give_up_s = 1;
    })
    .await;
    let event = app.create_event(1, json!({})).await;
    let (webhook, inbox) = listen(&app, &event, &["queue.paused"], usize::MAX).await;
    app.send(app.admin(
        Method::POST,
        &format!("/api/admin/events/{event}/webhooks/{webhook}/test"),
    ))
    .await
    .expect(202);
    let failed = wait_delivery(&app, &event, &webhook, "failed").await;
    let attempts = failed["attempts"].as_array().unwrap();
    assert!(attempts.len() >= 2, "{failed}");
    assert!(attempts.iter().all(|a| a["status"] == 500), "{failed}");
    assert!(failed["next_attempt_at"].is_null(), "{failed}");
    let tried = inbox.lock().unwrap().got.len();
    assert_eq!(tried, attempts.len(), "every attempt is listed");
}

// The test button, and a receiver that is not there.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_test_button_sends_a_signed_ping_and_a_missing_receiver_is_an_error() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app.create_event(1, json!({})).await;
    let (webhook, inbox) = listen(&app, &event, &["event.sold_out"], 0).await;
    app.send(app.admin(
        Method::POST,
        &format!("/api/admin/events/{event}/webhooks/{webhook}/test"),
    ))
    .await
    .expect(202);
    let ping = wait_for(&inbox, "ping", kind_is("ping")).await;
    assert!(ping.verified, "{ping:?}");
    assert_eq!(ping.body["data"]["webhook_id"], json!(webhook));
    let shown = wait_delivery(&app, &event, &webhook, "delivered").await;
    assert_eq!(shown["type"], "ping", "{shown}");

    // A port nobody listens on: the attempt is recorded with its error, and retried.
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let nowhere = format!("http://{}/hooks", closed.local_addr().unwrap());
    drop(closed);
    let made = app
        .send(
            app.admin(Method::POST, &format!("/api/admin/events/{event}/webhooks"))
                .json(&json!({ "url": nowhere, "events": ["queue.opened"], "secret": "a-secret-of-my-own" })),
        )
        .await
        .expect(201);
    assert_eq!(made.str("secret"), "a-secret-of-my-own");
    let missing = made.str("webhook_id");
    app.send(app.admin(
        Method::POST,
        &format!("/api/admin/events/{event}/webhooks/{missing}/test"),
    ))
    .await
    .expect(202);
    let started = tokio::time::Instant::now();
    loop {
        let list = deliveries(&app, &event, &missing).await;
        let attempt = &list.body["deliveries"][0]["attempts"][0];
        if attempt.is_object() {
            assert!(attempt["status"].is_null(), "{list:?}");
            assert!(
                attempt["error"].as_str().unwrap().contains("connect"),
                "{list:?}"
            );
            assert_eq!(list.body["deliveries"][0]["state"], "pending", "{list:?}");
            break;
        }
        assert!(started.elapsed() < DEADLINE, "{list:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// Bad input on every route: a clear problem+json, and nothing changes.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_every_webhook_route_changes_nothing_on_postgres() {
    bad_input(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_every_webhook_route_changes_nothing_on_sqlite() {
    bad_input(spawn_app(Backends::Embedded).await).await;
}

async fn bad_input(app: TestApp) {
    let event = app.create_event(1, json!({})).await;
    let hooks = format!("/api/admin/events/{event}/webhooks");
    let create = |body: Value| app.admin(Method::POST, &hooks).json(&body);
    // A loopback port nobody serves: deliveries, if any, never leave the machine.
    let good_url = "http://127.0.0.1:9/hooks";
    let long_url = format!("http://127.0.0.1:9/{}", "a".repeat(2048));
    for (body, field) in [
        (
            json!({"url": "ftp://example.com/", "events": ["queue.opened"]}),
            "url",
        ),
        (
            json!({"url": "javascript:alert(1)", "events": ["queue.opened"]}),
            "url",
        ),
        (
            json!({"url": "https://me:pw@example.com/", "events": ["queue.opened"]}),
            "url",
        ),
        (
            json!({"url": "/relative", "events": ["queue.opened"]}),
            "url",
        ),
        (json!({"url": long_url, "events": ["queue.opened"]}), "url"),
        (json!({"url": good_url, "events": []}), "events"),
        (
            json!({"url": good_url, "events": ["order.shipped"]}),
            "events",
        ),
        (json!({"url": good_url, "events": ["ping"]}), "events"),
        (
            json!({"url": good_url, "events": ["queue.opened", "queue.opened"]}),
            "events",
        ),
        (
            json!({"url": good_url, "events": ["queue.opened"], "secret": "short"}),
            "secret",
        ),
        (
            json!({"url": good_url, "events": ["queue.opened"], "secret": "has spaces in it, sadly"}),
            "secret",
        ),
    ] {
        let answer = app.send(create(body.clone())).await;
        answer.expect_problem(400, "bad_request");
        assert_eq!(answer.body["field"], field, "{body}: {answer:?}");
    }
    for body in [
        json!({"url": good_url}),
        json!({"events": ["queue.opened"]}),
        json!({"url": good_url, "events": ["queue.opened"], "secret": null}),
        json!({"url": good_url, "events": ["queue.opened"], "colour": "red"}),
        json!({"url": 7, "events": ["queue.opened"]}),
        json!([]),
    ] {
        app.send(create(body.clone()))
            .await
            .expect_problem(400, "bad_request");
    }
    app.send(app.admin(Method::POST, &hooks).body("{not json"))
        .await
        .expect_problem(400, "bad_request");
    // Without the organizer key, and for an event that does not exist.
    app.send(
        app.request(Method::POST, &hooks)
            .json(&json!({"url": good_url, "events": ["queue.opened"]})),
    )
    .await
    .expect_problem(401, "unauthorized");
    app.send(app.request(Method::GET, &hooks))
        .await
        .expect_problem(401, "unauthorized");
    app.send(
        app.admin(Method::POST, "/api/admin/events/no-such-event/webhooks")
            .json(&json!({"url": good_url, "events": ["queue.opened"]})),
    )
    .await
    .expect_problem(404, "not_found");
    app.send(app.admin(Method::GET, "/api/admin/events/no-such-event/webhooks"))
        .await
        .expect_problem(404, "not_found");
    app.send(app.admin(Method::GET, "/api/admin/events/bad%20id/webhooks"))
        .await
        .expect_problem(400, "bad_request");
    let listed = app.send(app.admin(Method::GET, &hooks)).await.expect(200);
    assert_eq!(listed.body["webhooks"], json!([]), "nothing was made");

    // The bound on subscriptions per event.
    let mut made = Vec::new();
    for n in 0..10 {
        let answer = app
            .send(create(
                // A fact this test never causes: the deliveries list stays the test's to judge
                // (the event is open, so `queue.opened` would be noticed and delivered).
                json!({"url": format!("{good_url}/{n}"), "events": ["order.refunded"]}),
            ))
            .await
            .expect(201);
        made.push(answer.str("webhook_id"));
    }
    let answer = app
        .send(create(json!({"url": good_url, "events": ["queue.opened"]})))
        .await;
    answer.expect_problem(409, "webhook_limit");
    let listed = app.send(app.admin(Method::GET, &hooks)).await.expect(200);
    let list = listed.body["webhooks"].as_array().unwrap();
    assert_eq!(list.len(), 10, "{listed:?}");
    assert!(
        list.iter().all(|w| w.get("secret").is_none()),
        "the secret is shown once"
    );

    // Delete, deliveries and test: unknown ids, malformed ids, another event's webhook.
    let other = app.create_event(1, json!({})).await;
    let webhook = &made[0];
    for (method, suffix) in [
        (Method::DELETE, ""),
        (Method::GET, "/deliveries"),
        (Method::POST, "/test"),
    ] {
        for (event_id, hook_id, status, code) in [
            (event.as_str(), "wh_nothing", 404, "not_found"),
            (event.as_str(), "bad%20id", 400, "bad_request"),
            (other.as_str(), webhook.as_str(), 404, "not_found"),
            ("no-such-event", webhook.as_str(), 404, "not_found"),
        ] {
            let path = format!("/api/admin/events/{event_id}/webhooks/{hook_id}{suffix}");
            app.send(app.admin(method.clone(), &path))
                .await
                .expect_problem(status, code);
        }
        let path = format!("/api/admin/events/{event}/webhooks/{webhook}{suffix}");
        app.send(app.request(method.clone(), &path))
            .await
            .expect_problem(401, "unauthorized");
    }
    let none = deliveries(&app, &event, webhook).await;
    assert_eq!(none.body["deliveries"], json!([]), "no test was queued");

    // A good delete frees a place; a second delete of the same one is 404.
    let path = format!("/api/admin/events/{event}/webhooks/{webhook}");
    app.send(app.admin(Method::DELETE, &path)).await.expect(204);
    app.send(app.admin(Method::DELETE, &path))
        .await
        .expect_problem(404, "not_found");
    app.send(create(json!({"url": good_url, "events": ["queue.opened"]})))
        .await
        .expect(201);
}

// The document's bounds are the enforced ones.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_webhook_bounds_are_the_enforced_ones() {
    let app = spawn_app(Backends::Embedded).await;
    let doc = app.get("/api/openapi.json").await.expect(200).body;
    let schema = &doc["components"]["schemas"]["CreateWebhook"]["properties"];
    let number = |v: &Value| usize::try_from(v.as_u64().unwrap()).unwrap();
    let url_max = number(&schema["url"]["maxLength"]);
    let (secret_min, secret_max) = (
        number(&schema["secret"]["minLength"]),
        number(&schema["secret"]["maxLength"]),
    );
    let kinds: Vec<Value> = schema["events"]["items"]["enum"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(number(&schema["events"]["maxItems"]), kinds.len());

    let event = app.create_event(1, json!({})).await;
    let hooks = format!("/api/admin/events/{event}/webhooks");
    let create = |body: Value| app.admin(Method::POST, &hooks).json(&body);
    // A loopback port nobody serves: deliveries never leave the machine.
    let prefix = "http://127.0.0.1:9/";
    let url_of = |chars: usize| format!("{prefix}{}", "é".repeat(chars - prefix.len()));
    app.send(create(json!({"url": url_of(url_max), "events": kinds})))
        .await
        .expect(201);
    app.send(create(
        json!({"url": url_of(url_max + 1), "events": ["queue.opened"]}),
    ))
    .await
    .expect_problem(400, "bad_request");
    for (secret, status) in [
        ("s".repeat(secret_min), 201),
        ("s".repeat(secret_max), 201),
        ("s".repeat(secret_min - 1), 400),
        ("s".repeat(secret_max + 1), 400),
    ] {
        let answer = app
            .send(create(
                json!({"url": prefix, "events": ["queue.opened"], "secret": secret}),
            ))
            .await;
        assert_eq!(
            answer.status,
            status,
            "{} characters: {answer:?}",
            secret.len()
        );
    }
    let listed = app.send(app.admin(Method::GET, &hooks)).await.expect(200);
    assert_eq!(
        listed.body["webhooks"].as_array().unwrap().len(),
        3,
        "{listed:?}"
    );
    let max = doc["components"]["schemas"]["WebhookList"]["properties"]["webhooks"]["maxItems"]
        .as_i64()
        .unwrap();
    assert_eq!(max, reservation::hooks::WEBHOOKS_PER_EVENT);
}

// The facts no transaction makes: the opening passed, the last seat sold.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_and_the_sell_out_are_noticed_once_on_postgres() {
    opened_and_sold_out(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_opening_and_the_sell_out_are_noticed_once_on_sqlite() {
    opened_and_sold_out(spawn_app(Backends::Embedded).await).await;
}

async fn opened_and_sold_out(app: TestApp) {
    let event = app
        .create_event(1, json!({"rate_per_min": 600, "max_active": 10}))
        .await;
    let (webhook, inbox) = listen(&app, &event, &["queue.opened", "event.sold_out"], 0).await;
    let opened = wait_for(&inbox, "queue.opened", kind_is("queue.opened")).await;
    assert!(opened.verified, "{opened:?}");
    assert_eq!(opened.body["id"], json!(format!("queue.opened:{event}")));

    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "hooks-sold-out")
        .await
        .expect(202);
    app.wait_confirmed(&buyer, &held.hold_id).await;
    let sold_out = wait_for(&inbox, "event.sold_out", kind_is("event.sold_out")).await;
    assert!(sold_out.verified, "{sold_out:?}");
    assert_eq!(sold_out.body["data"]["sold"], 1, "{sold_out:?}");

    // Each fact once, however many scans saw it.
    let list = deliveries(&app, &event, &webhook).await;
    let kinds: Vec<&Value> = list.body["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| &d["type"])
        .collect();
    assert_eq!(
        kinds,
        [&json!("event.sold_out"), &json!("queue.opened")],
        "{list:?}"
    );
}

// A sale refunded, and a payment the provider never answers.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refunded_order_reaches_the_receiver_signed_on_postgres() {
    refunded(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refunded_order_reaches_the_receiver_signed_on_sqlite() {
    refunded(spawn_app(Backends::Embedded).await).await;
}

async fn refunded(app: TestApp) {
    let event = app
        .create_event(1, json!({"rate_per_min": 600, "max_active": 10}))
        .await;
    let (webhook, inbox) = listen(&app, &event, &["order.refunded"], 0).await;
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "hooks-refund")
        .await
        .expect(202);
    let order = app.wait_confirmed(&buyer, &held.hold_id).await;

    // The service never refunds a sale on its own: an operator does, and the order row turns
    // refunded. The fact is recorded in that very transaction.
    let store = &app.store;
    let refund = |order: String| async move {
        sqlx::query(store.dialect().sql(
            "update orders set status = 'refunded', payment_status = 'refunded' \
             where order_id = $1",
        ))
        .bind(order)
        .execute(store.pool())
        .await
        .unwrap()
        .rows_affected()
    };
    assert_eq!(refund(order.clone()).await, 1);
    let got = wait_for(&inbox, "order.refunded", kind_is("order.refunded")).await;
    assert!(got.verified, "{got:?}");
    assert_eq!(got.body["id"], json!(format!("order.refunded:{order}")));
    assert_eq!(got.body["event"], json!(event));
    assert_eq!(got.body["data"]["order_id"], json!(order));
    assert_eq!(got.body["data"]["hold_id"], json!(held.hold_id));
    assert_eq!(got.body["data"]["seats"], json!([seat(1)]));
    assert_eq!(got.body["data"]["total_cents"], 2500);

    // Refunded again (an operator's repeat) is no new fact; the sale itself was not asked for.
    assert_eq!(refund(order.clone()).await, 1);
    let delivered = wait_delivery(&app, &event, &webhook, "delivered").await;
    assert_eq!(delivered["type"], "order.refunded", "{delivered}");
    let list = deliveries(&app, &event, &webhook).await;
    assert_eq!(
        list.body["deliveries"].as_array().unwrap().len(),
        1,
        "{list:?}"
    );
    assert_eq!(inbox.lock().unwrap().got.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_payment_stuck_past_its_abandon_time_reaches_the_receiver_signed_on_postgres() {
    let app = spawn_app_with(Backends::Postgres, |config| config.payment_overdue_s = 1).await;
    let event = app
        .create_event_with(
            2,
            json!({"resolve_s": 1, "abandon_s": 2,
                   "admission": {"rate_per_min": 6000, "max_active": 10, "offer_s": 30}}),
        )
        .await;
    let (webhook, inbox) = listen(&app, &event, &["payment.stuck"], 0).await;
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));

    // The provider stops answering before the buyer pays: the payment stays unanswered past
    // its abandon time and the overdue margin.
    let sim = SimControl::new(&app.simulator.as_ref().expect("HTTP simulator").base_url);
    sim.pause().await.expect("pause the simulator");
    let paying = app
        .checkout(&buyer, &held.hold_id, "pm_card_visa", "hooks-stuck")
        .await
        .expect(202);
    let payment = paying.str("payment_id");

    let got = wait_for(&inbox, "payment.stuck", kind_is("payment.stuck")).await;
    assert!(got.verified, "{got:?}");
    assert_eq!(got.body["id"], json!(format!("payment.stuck:{payment}")));
    assert_eq!(got.body["event"], json!(event));
    assert_eq!(got.body["data"]["payment_id"], json!(payment));
    assert_eq!(got.body["data"]["hold_id"], json!(held.hold_id));
    assert_eq!(got.body["data"]["amount_cents"], 2500);
    assert!(
        ["pending", "ambiguous", "authorized"]
            .contains(&got.body["data"]["state"].as_str().unwrap()),
        "{got:?}"
    );
    assert!(got.body["data"]["abandon_at"].is_string(), "{got:?}");

    // One delivery of the fact.
    wait_delivery(&app, &event, &webhook, "delivered").await;
    let list = deliveries(&app, &event, &webhook).await;
    assert_eq!(
        list.body["deliveries"].as_array().unwrap().len(),
        1,
        "{list:?}"
    );
    sim.resume().await.expect("resume the simulator");
}
