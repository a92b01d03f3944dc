//! Slow bodies: clients that send their headers and then trickle the body a byte at a time
//! hold a connection each, but no share of a route group's in-flight budget, and a caller the
//! headers already refuse is answered without its body being waited for. With 40 connections
//! trickling to the organizer API and 200 to the holds route (both with valid credentials, the
//! worst case), the organizer's `PATCH …/admission` and a buyer's join and status are still
//! answered within 2 s. Loopback only; every connection is dropped at the end of the test.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use support::{Backends, spawn_app};

const ORGANIZER_TRICKLES: usize = 40;
const HOLD_TRICKLES: usize = 200;
const ANSWERED_WITHIN: Duration = Duration::from_secs(2);

fn authority(base_url: &str) -> String {
    base_url.trim_start_matches("http://").to_owned()
}

/// Sends `head` and the first byte of a 1,000-byte body, then one byte every half second
/// until the task is aborted.
async fn trickle(addr: String, head: String) {
    let Ok(mut stream) = TcpStream::connect(&addr).await else {
        return;
    };
    if stream.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    loop {
        if stream.write_all(b" ").await.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn head(method: &str, path: &str, addr: &str, token: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
    )
}

#[tokio::test]
async fn trickled_bodies_do_not_take_the_organizer_or_buyers_away() {
    let app = spawn_app(Backends::Embedded).await;
    let event = app
        .create_event(20, json!({"rate_per_min": 6000, "max_active": 1000}))
        .await;
    let buyer = app.admit(&event).await;
    let addr = authority(&app.base_url);

    let mut trickles = JoinSet::new();
    let admission = format!("/api/admin/events/{event}/admission");
    for _ in 0..ORGANIZER_TRICKLES {
        trickles.spawn(trickle(
            addr.clone(),
            head("PATCH", &admission, &addr, &app.organizer_key),
        ));
    }
    let holds = format!("/api/events/{event}/holds");
    for _ in 0..HOLD_TRICKLES {
        trickles.spawn(trickle(
            addr.clone(),
            head("POST", &holds, &addr, &buyer.admission_token),
        ));
    }
    // Every trickle has sent its headers and is inside its body.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let started = Instant::now();
    let tuned = tokio::time::timeout(
        ANSWERED_WITHIN,
        app.tune(&event, json!({"rate_per_min": 3000})),
    )
    .await
    .expect("the organizer's PATCH is answered within 2 s");
    tuned.expect(200);

    let queued = tokio::time::timeout(ANSWERED_WITHIN, app.join_queue(&event))
        .await
        .expect("a join is answered within 2 s");
    tokio::time::timeout(ANSWERED_WITHIN, app.queue_status(&queued))
        .await
        .expect("a status poll is answered within 2 s")
        .expect(200);
    eprintln!(
        "organizer PATCH, join and status answered in {:?} under {} trickling connections",
        started.elapsed(),
        ORGANIZER_TRICKLES + HOLD_TRICKLES
    );
    trickles.abort_all();
}

/// A caller the headers refuse is answered at once: the gateway does not wait for a body it
/// will not use.
#[tokio::test]
async fn a_refused_caller_is_answered_before_its_body() {
    let app = spawn_app(Backends::Embedded).await;
    let addr = authority(&app.base_url);
    for (method, path, code) in [
        (
            "PATCH",
            "/api/admin/events/anything/admission",
            "unauthorized",
        ),
        ("POST", "/api/events/anything/holds", "token_invalid"),
    ] {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        let request = head(method, path, &addr, "not-a-key");
        stream.write_all(request.as_bytes()).await.unwrap();
        stream.write_all(b"{").await.unwrap();
        let mut answer = vec![0; 4096];
        let read = tokio::time::timeout(ANSWERED_WITHIN, stream.read(&mut answer))
            .await
            .expect("answered without the rest of the body")
            .unwrap();
        let text = String::from_utf8_lossy(&answer[..read]);
        assert!(text.starts_with("HTTP/1.1 401"), "{method} {path}: {text}");
        assert!(text.contains(code), "{method} {path}: {text}");
    }
}
