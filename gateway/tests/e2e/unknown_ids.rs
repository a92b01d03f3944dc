//! A flood of made-up event ids leaves nothing behind: the real gateway binary (a child
//! process, so its CPU time and its log lines are its own) is sent 5,000 requests for random
//! event ids across join, status, seats, the event summary, fairness, the queue snapshot and
//! the waiting-room socket. Afterwards the meter still ticks only the one real event and the
//! log is quiet.
//!
//! The CPU seconds of the flood and of the idle second after it are printed (run with
//! `--nocapture`) for the record; they are figures, not assertions.

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use reqwest::Method;
use serde_json::json;

use support::process::GatewayProcess;

const FLOOD: usize = 5_000;
const CONCURRENCY: usize = 32;
const ORGANIZER_KEY: &str = "org-unknown-ids-0123456789abcdef0123456789";

async fn create_event(http: &reqwest::Client, base: &str) -> String {
    let event = format!("ev-{}", uuid::Uuid::now_v7().simple());
    let created = http
        .post(format!("{base}/api/admin/events"))
        .bearer_auth(ORGANIZER_KEY)
        .json(&json!({"event": event, "name": "Real night", "admission": {"rate_per_min": 60, "max_active": 10}}))
        .send()
        .await
        .expect("create the event");
    assert_eq!(created.status().as_u16(), 201, "create the real event");
    let seats =
        json!({ "generate": { "section": "A", "rows": 1, "per_row": 10, "price_cents": 2500 } });
    let added = http
        .post(format!("{base}/api/admin/events/{event}/seats"))
        .bearer_auth(ORGANIZER_KEY)
        .json(&seats)
        .send()
        .await
        .expect("add seats");
    assert_eq!(added.status().as_u16(), 200, "add the real event's seats");
    event
}

/// One request of the flood for a made-up id; what it answered does not matter here, only
/// that it was answered (and, for HTTP, was not a success).
async fn one(http: &reqwest::Client, base: &str, n: usize) {
    let id = format!("nx-{:032x}", rand::random::<u128>());
    let path = match n % 7 {
        0 => {
            let answer = http
                .request(Method::POST, format!("{base}/api/events/{id}/queue"))
                .send()
                .await
                .expect("the gateway answers a join");
            assert!(!answer.status().is_success(), "a join of {id} succeeded");
            return;
        }
        1 => format!("/api/events/{id}/queue/status"),
        2 => format!("/api/events/{id}/seats"),
        3 => format!("/api/events/{id}/fairness"),
        4 => format!("/api/events/{id}"),
        5 => format!("/api/events/{id}/queue/snapshot"),
        _ => {
            let url = format!(
                "{}/api/events/{id}/queue/ws?token=made-up",
                base.replacen("http", "ws", 1)
            );
            // Refused in some way (handshake refused, or an error frame and a close): either is fine.
            if let Ok((mut socket, _)) = tokio_tungstenite::connect_async(url).await {
                let _ = tokio::time::timeout(Duration::from_secs(2), socket.next()).await;
            }
            return;
        }
    };
    let answer = http
        .get(format!("{base}{path}"))
        .bearer_auth("made-up")
        .send()
        .await
        .expect("the gateway answers");
    assert!(
        !answer.status().is_success(),
        "{path} succeeded for a made-up id"
    );
}

/// `name`'s value in the Prometheus text, summed over its label sets; `None` when absent.
async fn metric(http: &reqwest::Client, base: &str, name: &str) -> Option<f64> {
    let text = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("metrics body");
    let mut found = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        if !(rest.starts_with(' ') || rest.starts_with('{')) {
            continue;
        }
        let value: f64 = rest
            .rsplit(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        *found.get_or_insert(0.0) += value;
    }
    found
}

async fn flood_leaves_nothing(database_url: &str, redis_url: Option<&str>, label: &str) {
    let gateway = GatewayProcess::start(database_url, redis_url, ORGANIZER_KEY, &[]).await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .expect("HTTP client");
    let base = gateway.base.clone();
    let event = create_event(&http, &base).await;
    // A real event the meter should keep ticking: one buyer in line.
    let joined = http
        .post(format!("{base}/api/events/{event}/queue"))
        .send()
        .await
        .expect("join the real event");
    assert_eq!(joined.status().as_u16(), 201);

    // Let start-up settle, then the idle baseline: one second with one real event.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let (cpu0, lines0) = (gateway.cpu_s(), gateway.lines());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu1, lines1) = (gateway.cpu_s(), gateway.lines());

    let started = std::time::Instant::now();
    futures::stream::iter(0..FLOOD)
        .for_each_concurrent(CONCURRENCY, |n| {
            let (http, base) = (&http, &base);
            async move { one(http, base, n).await }
        })
        .await;
    let flood_took = started.elapsed();
    let (cpu2, lines2) = (gateway.cpu_s(), gateway.lines());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu3, lines3) = (gateway.cpu_s(), gateway.lines());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let (cpu4, lines4) = (gateway.cpu_s(), gateway.lines());

    println!(
        "[{label}] idle before: {:.2} CPU s/s, {} log lines/s | flood of {FLOOD} in {:.2} s: \
         {:.2} CPU s, {} log lines | first second after: {:.2} CPU s, {} lines | \
         second after that: {:.2} CPU s, {} lines",
        cpu1 - cpu0,
        lines1 - lines0,
        flood_took.as_secs_f64(),
        cpu2 - cpu1,
        lines2 - lines1,
        cpu3 - cpu2,
        lines3 - lines2,
        cpu4 - cpu3,
        lines4 - lines3,
    );

    // The meter knows the one real event and nothing else.
    let events = metric(&http, &base, "floodgate_meter_events")
        .await
        .expect("/metrics has floodgate_meter_events");
    assert_eq!(events, 1.0, "events the meter ticks after the flood");
    // Ticks over one second: the one real event's ten a second (wake-ups may add a few).
    let ticks0 = metric(&http, &base, "floodgate_meter_ticks_total")
        .await
        .expect("/metrics has floodgate_meter_ticks_total");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let ticks1 = metric(&http, &base, "floodgate_meter_ticks_total")
        .await
        .expect("/metrics has floodgate_meter_ticks_total");
    assert!(
        ticks1 - ticks0 <= 30.0,
        "the meter ticked {} times in a second after the flood",
        ticks1 - ticks0
    );
    // The log is back to quiet: a flood of 404s leaves nothing writing every tick.
    let quiet = lines4 - lines3;
    assert!(
        quiet <= lines1 - lines0 + 5,
        "{quiet} log lines in the second after the flood settled (idle before: {})",
        lines1 - lines0
    );
    // The real event is still served.
    let answer = http
        .get(format!("{base}/api/events/{event}/fairness"))
        .send()
        .await
        .expect("fairness of the real event");
    assert_eq!(answer.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_ids_leave_nothing_behind_embedded() {
    let path = std::env::temp_dir().join(format!(
        "floodgate-unknown-ids-{}.db",
        uuid::Uuid::now_v7().simple()
    ));
    let url = format!("sqlite:{}", path.display());
    flood_leaves_nothing(&url, None, "sqlite+memory").await;
    let _ = std::fs::remove_file(&path);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn made_up_ids_leave_nothing_behind_postgres_redis() {
    let url = reservation::testing::fresh_database_url("t_unknown_ids_").await;
    let redis = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    flood_leaves_nothing(&url, Some(&redis), "postgres+redis").await;
}
