//! The public queue snapshot and what waiting buyers are told from it: one cacheable body for
//! everyone (ETag, 304, `public, max-age=1`), a place computed from it and a queue token that
//! equals the per-token status, the wait as a range and the chance of a seat on the socket,
//! a pause that keeps the line, and a sell-out told to every waiting socket.
#![allow(clippy::unwrap_used)]

use crate::support;

use reqwest::Method;
use serde_json::{Value, json};

use support::http::Answer;
use support::tokens::claims;
use support::{Backends, Gateway, TestApp, spawn_app, spawn_app_with};

struct Polled {
    answer: Answer,
    etag: String,
    cache_control: String,
}

async fn snapshot(app: &Gateway, event: &str, if_none_match: Option<&str>) -> Polled {
    let mut request = app.request(Method::GET, &format!("/api/events/{event}/queue/snapshot"));
    if let Some(tag) = if_none_match {
        request = request.header("if-none-match", tag);
    }
    let response = request.send().await.unwrap();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let (etag, cache_control) = (header("etag"), header("cache-control"));
    Polled {
        answer: Answer::from(response).await,
        etag,
        cache_control,
    }
}

/// A FIFO token's place from the snapshot alone, as the page computes it.
fn place_of(snapshot: &Value, token: &str) -> u64 {
    let c = claims(token);
    assert_eq!(c["pre"], false);
    snapshot["prequeue_left"].as_u64().unwrap() + c["seq"].as_u64().unwrap()
        - snapshot["fifo_served_through"].as_u64().unwrap()
        - 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_snapshot_is_public_cached_and_agrees_with_the_status() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(20, json!({"rate_per_min": 120, "max_active": 1000}))
        .await;
    let mut buyers = Vec::new();
    for _ in 0..40 {
        buyers.push(app.join_queue(&event).await);
    }
    // Offers have flowed long enough to measure the outflow.
    app.snapshot_until(&event, |s| s["outflow_per_min"].is_number())
        .await;

    // A token's place from the snapshot equals its status, when no tick was published between
    // the two reads (the second read answers 304 with the first's ETag).
    let last = buyers.last().unwrap();
    let (status, body) = loop {
        let first = snapshot(&app, &event, None).await;
        assert_eq!(first.answer.status, 200);
        assert_eq!(first.cache_control, "public, max-age=1");
        assert!(first.answer.content_type.starts_with("application/json"));
        assert!(
            first.etag.starts_with('"') && first.etag.len() > 2,
            "{}",
            first.etag
        );
        let status = app.queue_status(last).await.expect(200);
        let second = snapshot(&app, &event, Some(&first.etag)).await;
        if second.answer.status == 304 {
            assert_eq!(second.etag, first.etag);
            assert!(second.answer.text.is_empty(), "a 304 has no body");
            break (status.body, first.answer.body);
        }
    };
    for field in [
        "state",
        "fifo_served_through",
        "prequeue_served_through",
        "outflow_per_min",
        "rate_per_min",
        "seats_left",
        "seats_per_buyer",
        "retry_after_s",
        "read_within_s",
    ] {
        assert!(body.get(field).is_some(), "{field} missing from {body}");
    }
    assert_eq!(body["rate_per_min"], 120);
    assert_eq!(body["seats_left"], 20);
    assert_eq!(status["status"], "waiting");
    assert_eq!(status["position"], place_of(&body, &last.queue_token));
    // 20 seats for 40 buyers and no offer answered yet: the priors alone are not stated.
    assert_eq!(body["seat_model"]["known"], false, "{body}");
    assert!(
        status.get("seat_chance").is_some_and(Value::is_null),
        "not known yet: {status}"
    );
    let range = status["estimated_wait_range_s"]
        .as_array()
        .expect("a range");
    assert!(range[0].as_u64() < range[1].as_u64(), "{status}");

    // Unknown events: 404 problem+json, and the snapshot of one costs nothing lasting.
    let unknown = snapshot(&app, "no-such-event", None).await;
    unknown.answer.expect_problem(404, "not_found");
}

/// Before the opening a pre-queue buyer is told to read again a second past it (offers start
/// then and last only the offer's seconds), and from the opening the snapshot carries the
/// draw's seed, the one `…/fairness` reveals, so a page finds its place without asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pre_queue_page_reads_at_the_opening_and_finds_the_seed_in_the_snapshot() {
    let app = spawn_app(Backends::Embedded).await;
    let opens_at = (time::OffsetDateTime::now_utc() + time::Duration::seconds(4))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let event = app
        .create_event_with(
            10,
            json!({"opens_at": opens_at, "admission": {"rate_per_min": 60, "max_active": 100}}),
        )
        .await;
    let joined = app.join_queue_raw(&event).await.expect(201);
    // The join's answer already says what a first read would: read again a second past the
    // opening, not at once.
    assert_eq!(joined.body["status"], "pre_queue", "{}", joined.body);
    let first_read = joined.body["retry_after_s"].as_u64().unwrap_or(0);
    assert!((1..=5).contains(&first_read), "{}", joined.body);
    let queued = app.join_queue(&event).await;
    let before = app.queue_status(&queued).await.expect(200);
    assert_eq!(before.body["status"], "pre_queue", "{}", before.body);
    let retry = before.body["retry_after_s"].as_u64().unwrap();
    assert!((1..=5).contains(&retry), "{}", before.body);
    let closed = app
        .snapshot_until(&event, |s| s["state"] == "pre_queue")
        .await;
    assert!(
        closed["seed"].is_null(),
        "no seed before the opening: {closed}"
    );
    let opened = app.snapshot_until(&event, |s| s["opened"] == true).await;
    let fairness = app.get(&format!("/api/events/{event}/fairness")).await;
    assert_eq!(fairness.status, 200);
    assert!(opened["seed"].is_string(), "{opened}");
    assert_eq!(opened["seed"], fairness.body["seed"], "{opened}");
}

/// A pre-queue larger than the crowd's reads in a second does not wake in one second after the
/// opening: the snapshot counts it once and publishes the spread (the pre-queue ÷
/// `FLOODGATE_WAITING_READS_PER_S`, at most a quarter of an offer's life) each page wakes
/// within; until the opening nears, everyone reads at the snapshot's pace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_pre_queue_wakes_over_the_opening_spread() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.waiting_reads_per_s = 10;
        config.join_limit_per_min = 0;
    })
    .await;
    let opens_at = (time::OffsetDateTime::now_utc() + time::Duration::hours(1))
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap();
    let event = app
        .create_event_with(
            10,
            json!({"opens_at": opens_at,
                   "admission": {"rate_per_min": 60, "max_active": 100, "offer_s": 60}}),
        )
        .await;
    let mut queued = Vec::new();
    for _ in 0..200 {
        queued.push(app.join_queue(&event).await);
    }
    let body = app
        .snapshot_until(&event, |s| s["prequeue_left"].as_u64() >= Some(200))
        .await;
    assert_eq!(body["state"], "pre_queue", "{body}");
    // Each pre-queue join counted once, not again by the join sequence.
    assert_eq!(body["waiting"], 200, "{body}");
    // 200 at 10 reads a second: 20 s, but an offer lasts 60 s, so at most 15 s.
    assert_eq!(body["opening_spread_s"], 15, "{body}");
    for q in &queued[..5] {
        let status = app.queue_status(q).await.expect(200).body;
        assert_eq!(status["status"], "pre_queue", "{status}");
        assert_eq!(status["retry_after_s"], 10, "{status}");
    }
}

/// A buyer is shown a range and a chance from the join's own answer, before any read: certain
/// where the seats cover everyone ahead taking the most allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_join_answer_carries_the_range_and_the_chance() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(600, json!({"rate_per_min": 120, "max_active": 1000}))
        .await;
    for _ in 0..40 {
        app.join_queue(&event).await;
    }
    // The cap has free places for all of them: the rate alone decides their wait.
    app.snapshot_until(&event, |s| s["cap"]["offer_rate_per_min"] == 120)
        .await;
    let joined = app.join_queue_raw(&event).await.expect(201);
    let point = joined.body["estimated_wait_s"]
        .as_u64()
        .expect("a point once the rate is published");
    let range = joined.body["estimated_wait_range_s"]
        .as_array()
        .expect("a range");
    let (low, high) = (
        range[0].as_u64().expect("low"),
        range[1].as_u64().expect("high"),
    );
    assert!(
        low <= point && point <= high && low < high,
        "{}",
        joined.body
    );
    // 41 places at six seats each at most, and 600 seats.
    assert_eq!(joined.body["seat_chance"], 1.0, "{}", joined.body);
}

/// A crowd reads as often as the front answers: the snapshot's `read_within_s` is the crowd ÷
/// `FLOODGATE_WAITING_READS_PER_S`, and a buyer far back is told to read again within it
/// rather than at the slower pace its place alone would allow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn far_back_buyers_read_as_often_as_the_crowd_allows() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.waiting_reads_per_s = 200;
        config.join_limit_per_min = 0;
    })
    .await;
    let event = app
        .create_event(5, json!({"rate_per_min": 1, "max_active": 1000}))
        .await;
    let mut last = None;
    for _ in 0..1_000 {
        last = Some(app.join_queue(&event).await);
    }
    let last = last.unwrap();
    let body = app
        .snapshot_until(&event, |s| s["waiting"].as_u64() >= Some(990))
        .await;
    let within = body["read_within_s"].as_u64().unwrap();
    assert_eq!(
        within,
        body["waiting"].as_u64().unwrap().div_ceil(200),
        "{body}"
    );
    let status = app.queue_status(&last).await.expect(200).body;
    assert_eq!(status["status"], "waiting", "{status}");
    let position = status["position"].as_u64().unwrap();
    // By its place alone the last buyer would read every 2 + position / 100 seconds (11).
    assert!(2 + position / 100 > within, "{status} {body}");
    assert_eq!(status["retry_after_s"].as_u64(), Some(within), "{status}");
    // One more buyer is told the same pace by the join's own answer: its page holds what a
    // first read would tell, so it does not read at once.
    let joined = app.join_queue_raw(&event).await.expect(201).body;
    assert_eq!(joined["status"], "waiting", "{joined}");
    assert_eq!(joined["retry_after_s"].as_u64(), Some(within), "{joined}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_keeps_the_line_and_an_offer_made_before_it() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(
            20,
            json!({"rate_per_min": 1, "max_active": 1000, "offer_s": 60}),
        )
        .await;
    let first = app.join_queue(&event).await;
    app.poll_until(&first, "offered").await;
    let second = app.join_queue(&event).await;
    app.tune(&event, json!({"paused": true})).await.expect(200);
    app.snapshot_until(&event, |s| s["state"] == "paused").await;

    let during = app.join_queue_raw(&event).await.expect(201);
    assert_eq!(during.body["status"], "paused", "{during:?}");
    assert_eq!(
        during.body["position"], 1,
        "behind the buyer already waiting"
    );
    let st = app.queue_status(&second).await.expect(200);
    assert_eq!(st.body["status"], "paused");
    assert_eq!(st.body["position"], 0);
    assert!(st.body["estimated_wait_range_s"].is_null(), "{st:?}");

    // The offer made before the pause is claimed during it.
    app.claim(&first).await;
}

/// Between creating an event and adding its seats the line already forms: nobody is told
/// "sold out", and offers start once the seats are there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_without_seats_yet_keeps_a_line() {
    let app = spawn_app(Backends::Embedded).await;
    let event = format!("ev-{}", uuid::Uuid::now_v7().simple());
    let body = json!({"event": event, "name": "Seats still to come",
        "admission": {"rate_per_min": 600, "max_active": 10}});
    app.send(app.admin(Method::POST, "/api/admin/events").json(&body))
        .await
        .expect(201);
    // The meter has judged the seatless event at least once.
    app.snapshot_until(&event, |s| {
        s["epoch"].as_str().is_some_and(|e| !e.is_empty())
    })
    .await;
    let early = app.join_queue_raw(&event).await.expect(201);
    assert_eq!(early.body["status"], "waiting", "{early:?}");
    let queued = support::buyer::Queued::joined(&event, &early);
    let snap = snapshot(&app, &event, None).await.answer.body;
    assert_eq!(snap["state"], "open", "{snap}");
    assert_eq!(
        app.queue_status(&queued).await.expect(200).body["status"],
        "waiting"
    );

    app.add_seats(&event, 2).await;
    app.poll_until(&queued, "offered").await;
}

/// A waiting socket hears its place with a wait range and a chance, and sold out at the
/// tick after the last seat is sold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_socket_says_range_and_chance_then_sold_out() {
    let app: TestApp = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(1, json!({"rate_per_min": 600, "max_active": 1}))
        .await;
    let buyer = app.join_queue(&event).await;
    let offered = app.poll_until(&buyer, "offered").await;
    // One seat, and the offered buyer may take it: not known until buyers have been seen.
    assert!(
        offered.body.get("seat_chance").is_some_and(Value::is_null),
        "{offered:?}"
    );
    let waiting = app.join_queue(&event).await;
    let mut socket = app.open_socket(&waiting).await;
    let frame = socket.next_of("position").await;
    assert_eq!(frame["position"], 0);
    assert!(frame.get("estimated_wait_range_s").is_some(), "{frame}");
    assert!(
        frame.get("seat_chance").is_some_and(Value::is_null),
        "{frame}"
    );

    let admitted = app.claim(&buyer).await;
    let held = app
        .hold(&admitted, &[support::buyer::seat(1)])
        .await
        .expect(201);
    let hold = held.str("hold_id");
    app.checkout(&admitted, &hold, "pm_card_visa", "key-1")
        .await
        .expect(202);
    app.wait_confirmed(&admitted, &hold).await;
    loop {
        let message = socket.next().await.expect("socket open");
        if message["type"] == "status" && message["status"] == "sold_out" {
            break;
        }
    }
    let body = app
        .snapshot_until(&event, |s| s["state"] == "sold_out")
        .await;
    assert_eq!(body["seats_left"], 0);
    let st = app.queue_status(&waiting).await.expect(200);
    assert_eq!(st.body["status"], "sold_out");
    assert_eq!(st.body["seat_chance"], 0.0);
}
