//! Overload: a join flood far beyond the join group's in-flight budget is shed with 503
//! `overloaded` + `Retry-After` (never a hang), while holds, checkouts and the status polls of a
//! buyer already waiting all go through; after the flood, joins work again. A seat-map flood is
//! shed while the queue snapshot and status still answer. The join limit per client address
//! believes `X-Forwarded-For` only from a trusted proxy.
//!
//! Latency under the flood is measured in `benches/overload.rs`, not asserted here.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use support::http::Answer;
use support::{Backends, spawn_app_with};

/// The join group's budget in this test: a handful, so 64 flooding clients overflow it.
const JOIN_BUDGET: usize = 2;
const FLOODERS: usize = 64;
const BUYERS: u32 = 12;

/// What the flood saw, counted by the flooders.
#[derive(Default)]
struct Flood {
    served: AtomicU64,
    shed: AtomicU64,
    other: std::sync::Mutex<Vec<String>>,
}

/// `FLOODERS` clients sending one request over and over until stopped.
struct Flooding {
    stop: Arc<AtomicBool>,
    seen: Arc<Flood>,
    flooders: Vec<tokio::task::JoinHandle<()>>,
}

impl Flooding {
    /// Starts the flood of `method url` (`served`: the status of a request let through) and
    /// returns once it is being shed; `what` names the budget it overflows.
    async fn start(method: Method, url: String, served: u16, what: &str) -> Flooding {
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(15))
            .build()
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Flood::default());
        let flooders = (0..FLOODERS)
            .map(|_| {
                tokio::spawn(flood_until(
                    client.request(method.clone(), &url),
                    served,
                    stop.clone(),
                    seen.clone(),
                ))
            })
            .collect();
        let started = tokio::time::Instant::now();
        while seen.shed.load(Ordering::Relaxed) < 20 {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{FLOODERS} flooding clients never overflowed {what}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Flooding {
            stop,
            seen,
            flooders,
        }
    }

    fn shed(&self) -> u64 {
        self.seen.shed.load(Ordering::Relaxed)
    }

    /// Stops the flood; every answer was the one let through or a 503 `overloaded`.
    async fn stop(self) -> Arc<Flood> {
        self.stop.store(true, Ordering::Relaxed);
        for flooder in self.flooders {
            flooder.await.unwrap();
        }
        let other = self.seen.other.lock().unwrap().clone();
        assert!(
            other.is_empty(),
            "a flooding request got neither its answer nor 503 overloaded: {other:?}"
        );
        self.seen
    }
}

async fn flood_until(
    request: reqwest::RequestBuilder,
    served: u16,
    stop: Arc<AtomicBool>,
    seen: Arc<Flood>,
) {
    while !stop.load(Ordering::Relaxed) {
        let Some(again) = request.try_clone() else {
            return;
        };
        let answer = match again.send().await {
            Ok(response) => Answer::from(response).await,
            Err(error) => {
                seen.other
                    .lock()
                    .unwrap()
                    .push(format!("no answer: {error}"));
                continue;
            }
        };
        if answer.status == served {
            seen.served.fetch_add(1, Ordering::Relaxed);
        } else if answer.status == 503 {
            check_shed(&answer);
            seen.shed.fetch_add(1, Ordering::Relaxed);
        } else {
            seen.other.lock().unwrap().push(format!("{answer:?}"));
        }
    }
}

/// Every shed request is a 503 `overloaded` problem with `Retry-After`.
fn check_shed(answer: &Answer) {
    answer.expect_problem(503, "overloaded");
    let retry: u64 = answer
        .retry_after
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("a shed request has a numeric Retry-After: {answer:?}"));
    assert!(retry >= 1, "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_flood_is_shed_while_holds_and_checkouts_go_through() {
    let app = spawn_app_with(Backends::Postgres, |config| {
        config.max_inflight_joins = JOIN_BUDGET;
        // A short line, so the flood overflows it and is shed.
        config.join_queue = JOIN_BUDGET;
    })
    .await;
    let event = app
        .create_event(
            BUYERS * 2,
            json!({"rate_per_min": 60000, "max_active": 1000, "offer_s": 120}),
        )
        .await;
    // The buyers who will hold and pay during the flood are admitted before it.
    let mut buyers = Vec::new();
    for _ in 0..BUYERS {
        buyers.push(app.admit(&event).await);
    }
    // And one who is in the queue already, polling its place: polls have a budget of their own.
    let waiting = app.join_queue(&event).await;

    // Holds and checkouts start only once the flood is being shed.
    let url = app.url(&format!("/api/events/{event}/queue"));
    let flood = Flooding::start(
        Method::POST,
        url,
        201,
        &format!("a join budget of {JOIN_BUDGET}"),
    )
    .await;
    let shed_before = flood.shed();
    let mut holds = Vec::new();
    for (i, buyer) in buyers.iter().enumerate() {
        let seat = support::buyer::seat(i as u32 + 1);
        let held = app.hold(buyer, &[seat]).await.expect(201);
        let hold = held.str("hold_id");
        app.checkout(buyer, &hold, "pm_card_visa", &format!("pay-{i}"))
            .await
            .expect(202);
        holds.push(hold);
    }
    for _ in 0..10 {
        app.queue_status(&waiting).await.expect(200);
    }
    // A refusal is answered half a second after it is decided (`SHED_DELAY`): wait for those
    // decided while the buyers held and paid.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let shed_during = flood.shed() - shed_before;
    let seen = flood.stop().await;
    assert!(
        shed_during > 0,
        "the flood was still being shed while the buyers held and paid"
    );
    eprintln!(
        "flood: {} joined, {} shed ({} while holding and paying)",
        seen.served.load(Ordering::Relaxed),
        seen.shed.load(Ordering::Relaxed),
        shed_during
    );

    // The money path finished: every checkout's payment goes through.
    for (buyer, hold) in buyers.iter().zip(&holds) {
        app.wait_confirmed(buyer, hold).await;
    }
    // After the flood, a join is served again.
    app.join_queue_raw(&event).await.expect(201);
    // And the refusals were counted by reason.
    let metrics = app.get("/metrics").await.text;
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("floodgate_rejections_total")
                && l.contains("reason=\"joins\"")
                && l.contains("status=\"503\"")
        })
        .unwrap_or_else(|| panic!("no shed joins counted in /metrics"));
    let counted: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(counted >= 1.0, "{line}");
}

/// Buyers losing holds at the sell-out re-read the seat map all at once; the crowd still
/// waiting must go on hearing the snapshot that tells it the seats are gone, so a seat-map
/// rush that overflows the reads budget never sheds a snapshot or status poll.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seat_map_flood_is_shed_while_snapshot_and_status_polls_answer() {
    let app = spawn_app_with(Backends::Postgres, |config| {
        config.max_inflight_reads = 1;
    })
    .await;
    let event = app
        .create_event(
            BUYERS,
            json!({"rate_per_min": 60, "max_active": 1, "offer_s": 120}),
        )
        .await;
    // Two in line: the first is offered, the second keeps waiting and polls.
    app.join_queue(&event).await;
    let waiting = app.join_queue(&event).await;

    let url = app.url(&format!("/api/events/{event}/seats"));
    let flood = Flooding::start(Method::GET, url, 200, "a reads budget of 1").await;
    let shed_before = flood.shed();
    let snapshot = format!("/api/events/{event}/queue/snapshot");
    let mut polls = Vec::new();
    for _ in 0..50 {
        polls.push(app.get(&snapshot).await.status);
        polls.push(app.queue_status(&waiting).await.status);
    }
    let shed_during = flood.shed() - shed_before;
    flood.stop().await;
    assert!(
        polls.iter().all(|s| *s == 200),
        "a poll was refused during the seat-map flood: {polls:?}"
    );
    assert!(
        shed_during > 0,
        "the seat-map flood was still being shed while the waiting buyer polled"
    );
}

#[tokio::test]
async fn x_forwarded_for_is_believed_only_from_a_trusted_proxy() {
    // The gateway trusts 127.0.0.1, where the test connects from.
    let trusting = spawn_app_with(Backends::Embedded, |config| {
        config.join_limit_per_min = 2;
        config.trusted_proxies = vec!["127.0.0.1/32".parse().unwrap()];
    })
    .await;
    let event = trusting.create_event(5, json!({})).await;
    let join = |via: &'static str| {
        let request = trusting
            .request(Method::POST, &format!("/api/events/{event}/queue"))
            .header("x-forwarded-for", via);
        trusting.send(request)
    };
    // The client wrote the left-most entry; the proxy appended the real address.
    join("6.6.6.6, 198.51.100.1").await.expect(201);
    join("7.7.7.7, 198.51.100.1").await.expect(201);
    let third = join("8.8.8.8, 198.51.100.1").await;
    third.expect_problem(429, "rate_limited");
    assert!(third.retry_after.is_some(), "{third:?}");
    // Another client behind the same proxy has a limit of its own.
    join("198.51.100.2").await.expect(201);

    // Without trust, the header is ignored: every join counts against the connection's address.
    let wary = spawn_app_with(Backends::Embedded, |config| {
        config.join_limit_per_min = 2;
    })
    .await;
    let event = wary.create_event(5, json!({})).await;
    let mut statuses = Vec::new();
    for i in 0..3 {
        let request = wary
            .request(Method::POST, &format!("/api/events/{event}/queue"))
            .header("x-forwarded-for", format!("198.51.100.{i}"));
        statuses.push(wary.send(request).await.status);
    }
    assert_eq!(statuses, [201, 201, 429]);
}
