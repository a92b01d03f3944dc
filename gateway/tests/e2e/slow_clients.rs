//! Slow clients cannot hold the gateway: a connection that sends half a request line and
//! stalls is dropped at the header deadline, buyers are answered while hundreds of such
//! connections sit open, and past the connection cap a new connection is closed at once
//! instead of taking one of the process's last files.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use support::{Backends, Gateway, spawn_app_with};

/// A buyer's join and status, answered within this while the gateway is under attack.
const ANSWERED_WITHIN: Duration = Duration::from_secs(2);

fn addr(gateway: &Gateway) -> String {
    gateway.base_url.trim_start_matches("http://").to_owned()
}

/// A connection that sends the start of a request line and then nothing more.
async fn stall(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    // Past the cap the gateway may have closed it already: that shows when reading.
    let _ = stream.write_all(b"GET /api/ev").await;
    stream
}

/// Waits until the gateway closes `stream` (whatever it sent first); how long that took.
async fn closed_after(stream: &mut TcpStream, within: Duration) -> Duration {
    let started = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout_at(started + within, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return started.elapsed(),
            Ok(Ok(_)) => {}
            Err(_) => panic!("the connection was still open after {within:?}"),
        }
    }
}

#[tokio::test]
async fn a_stalled_request_line_is_dropped_at_the_header_deadline() {
    let app = spawn_app_with(Backends::Embedded, |config| config.header_timeout_s = 1).await;
    let mut stalled = stall(&addr(&app)).await;
    let took = closed_after(&mut stalled, Duration::from_secs(5)).await;
    assert!(
        took >= Duration::from_millis(800),
        "closed after {took:?}, before the 1 s deadline"
    );

    // A connection that sends nothing at all is no different.
    let mut silent = TcpStream::connect(addr(&app)).await.unwrap();
    closed_after(&mut silent, Duration::from_secs(5)).await;
    app.gateway.stop().await;
}

#[tokio::test]
async fn buyers_are_answered_while_200_connections_stall() {
    let app = spawn_app_with(Backends::Embedded, |config| config.header_timeout_s = 10).await;
    let event = app
        .create_event(10, json!({ "rate_per_min": 600, "max_active": 10 }))
        .await;
    let mut stalled = Vec::new();
    for _ in 0..200 {
        stalled.push(stall(&addr(&app)).await);
    }

    let started = Instant::now();
    let queued = app.join_queue(&event).await;
    let joined = started.elapsed();
    let started = Instant::now();
    app.queue_status(&queued).await.expect(200);
    let polled = started.elapsed();
    assert!(
        joined < ANSWERED_WITHIN,
        "join answered in {joined:?} beside 200 stalled connections"
    );
    assert!(
        polled < ANSWERED_WITHIN,
        "status answered in {polled:?} beside 200 stalled connections"
    );
    eprintln!("beside 200 stalled connections: join {joined:?}, status {polled:?}");

    // The stalled connections were still open all along (the deadline, not luck, ends them).
    let mut probe = [0u8; 1];
    let still_open = tokio::time::timeout(Duration::from_millis(50), stalled[0].read(&mut probe));
    assert!(
        still_open.await.is_err(),
        "a stalled connection closed early"
    );
    drop(stalled);
    app.gateway.stop().await;
}

#[tokio::test]
async fn past_the_connection_cap_a_new_connection_is_closed_at_once() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.max_connections = 20;
        config.header_timeout_s = 3;
    })
    .await;
    // The readiness probe's keep-alive connection may still hold a slot: fill what is left.
    let mut stalled = Vec::new();
    for _ in 0..20 {
        stalled.push(stall(&addr(&app)).await);
    }
    // Closed well before the 3 s header deadline could have ended it.
    let mut over = stall(&addr(&app)).await;
    closed_after(&mut over, Duration::from_secs(2)).await;

    // Once the header deadline has dropped the stalled ones, clients get in again.
    for stream in &mut stalled {
        closed_after(stream, Duration::from_secs(10)).await;
    }
    let mut fresh = TcpStream::connect(addr(&app)).await.unwrap();
    fresh
        .write_all(b"GET /readyz HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    fresh.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    app.gateway.stop().await;
}
