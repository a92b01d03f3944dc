//! Waiting-room sockets cannot be hoarded: one live socket per queue token (a newer one
//! replaces the older, which is told why), a cap per client address answered 429 before the
//! upgrade, a claim over the socket spends the same budget as `POST …/claim`, and an upgrade
//! that never finishes its handshake is dropped.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use support::http::DEADLINE;
use support::{Backends, Gateway, spawn_app_with};

type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

async fn connect(app: &Gateway, event: &str, token: &str) -> Result<Ws, tungstenite::Error> {
    let url = app.ws_url(&format!("/api/events/{event}/queue/ws?token={token}"));
    tokio_tungstenite::connect_async(url.as_str())
        .await
        .map(|(ws, _)| ws)
}

/// What the server sent before closing the socket; panics if it stays open past `DEADLINE`.
async fn until_closed(ws: &mut Ws) -> Vec<Value> {
    let mut heard = Vec::new();
    loop {
        let frame = tokio::time::timeout(DEADLINE, ws.next())
            .await
            .unwrap_or_else(|_| panic!("still open after {DEADLINE:?}; heard {heard:?}"));
        match frame {
            Some(Ok(Message::Text(text))) => {
                heard.push(serde_json::from_str(text.as_str()).unwrap())
            }
            Some(Ok(Message::Close(frame))) => {
                let reason = frame.map(|f| f.reason.to_string()).unwrap_or_default();
                heard.push(json!({ "closed": reason }));
                return heard;
            }
            None | Some(Err(_)) => return heard,
            Some(Ok(_)) => {}
        }
    }
}

/// True when the socket is still open after `quiet` (messages may arrive meanwhile).
async fn stays_open(ws: &mut Ws, quiet: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + quiet;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => return true,
            Ok(Some(Ok(Message::Text(text)))) => {
                let message: Value = serde_json::from_str(text.as_str()).unwrap();
                if message["type"] == "replaced" {
                    return false;
                }
            }
            Ok(None | Some(Ok(Message::Close(_)) | Err(_))) => return false,
            Ok(Some(Ok(_))) => {}
        }
    }
}

#[tokio::test]
async fn three_hundred_sockets_with_one_token_leave_one_open() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.sockets_per_address = 1_000;
    })
    .await;
    let event = app
        .create_event(10, json!({ "rate_per_min": 1, "max_active": 1 }))
        .await;
    // The first in line is offered at once; the test's ticket waits behind it.
    app.join_queue(&event).await;
    let queued = app.join_queue(&event).await;

    let mut sockets = Vec::new();
    for _ in 0..300 {
        sockets.push(connect(&app, &event, &queued.queue_token).await.unwrap());
    }
    let newest = sockets.pop().unwrap();
    let mut replaced = 0;
    for ws in &mut sockets {
        let heard = until_closed(ws).await;
        let told = heard.iter().any(|m| m["type"] == "replaced");
        assert!(
            told,
            "an older socket closed without being told why: {heard:?}"
        );
        assert_eq!(
            heard.last(),
            Some(&json!({ "closed": "replaced" })),
            "{heard:?}"
        );
        replaced += 1;
    }
    assert_eq!(replaced, 299);
    let mut newest = newest;
    assert!(
        stays_open(&mut newest, Duration::from_secs(2)).await,
        "the newest socket was closed"
    );

    // Another ticket is not affected by this one's replacements.
    let other = app.join_queue(&event).await;
    let mut ws = connect(&app, &event, &other.queue_token).await.unwrap();
    assert!(stays_open(&mut ws, Duration::from_millis(500)).await);
    assert!(stays_open(&mut newest, Duration::from_millis(100)).await);
    app.gateway.stop().await;
}

#[tokio::test]
async fn sockets_per_address_are_capped_before_the_upgrade() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.sockets_per_address = 3;
    })
    .await;
    let event = app
        .create_event(10, json!({ "rate_per_min": 1, "max_active": 1 }))
        .await;
    let mut open = Vec::new();
    for _ in 0..3 {
        let queued = app.join_queue(&event).await;
        open.push(connect(&app, &event, &queued.queue_token).await.unwrap());
    }
    let fourth = app.join_queue(&event).await;
    match connect(&app, &event, &fourth.queue_token).await {
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 429);
            let content_type = response.headers()["content-type"].to_str().unwrap();
            assert_eq!(content_type, "application/problem+json");
            assert!(response.headers().contains_key("retry-after"));
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap()).unwrap();
            assert_eq!(body["code"], "rate_limited", "{body}");
        }
        Err(other) => panic!("refused otherwise than 429: {other}"),
        Ok(_) => panic!("a fourth socket from one address was upgraded"),
    }

    // A closed socket gives its place back.
    let mut first = open.remove(0);
    first.close(None).await.unwrap();
    drop(first);
    let started = tokio::time::Instant::now();
    let mut reopened = loop {
        match connect(&app, &event, &fourth.queue_token).await {
            Ok(ws) => break ws,
            Err(tungstenite::Error::Http(response)) if response.status() == 429 => {
                assert!(
                    started.elapsed() < DEADLINE,
                    "the place was never given back"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(other) => panic!("{other}"),
        }
    };
    assert!(stays_open(&mut reopened, Duration::from_millis(300)).await);
    app.gateway.stop().await;
}

/// A claim over the socket spends `POST …/claim`'s budget. With the budget full (a hold blocked
/// on a locked seat table keeps its one permit), the claim of a place not yet offered is shed,
/// while an offered buyer's claim over the socket waits in the admitted buyers' line and is
/// served once the permit is free, as its claim over HTTP would be.
#[tokio::test]
async fn a_claim_over_the_socket_spends_the_claim_budget() {
    let app = spawn_app_with(Backends::Postgres, |config| {
        config.max_inflight_reservations = 1;
    })
    .await;
    // Two places: the holder's session and the socket buyer's offer fill the cap.
    let event = app
        .create_event(10, json!({ "rate_per_min": 6000, "max_active": 2 }))
        .await;
    let holder = app.admit(&event).await;
    let waiting = app.join_queue(&event).await;
    let (mut socket, _) = app.wait_for_turn(&waiting).await;
    // Behind a full cap, its claim over HTTP is the crowd's: it tells when the budget is full.
    let probe = app.join_queue(&event).await;

    let mut lock = app.store.pool().begin().await.unwrap();
    sqlx::query("LOCK TABLE holds IN ACCESS EXCLUSIVE MODE")
        .execute(&mut *lock)
        .await
        .unwrap();
    let seats = [support::buyer::seat(1)];
    let blocked_hold = app.hold(&holder, &seats);
    let meanwhile = async {
        let started = tokio::time::Instant::now();
        loop {
            let answer = app.claim_raw(&probe, &probe.queue_token).await;
            if answer.status == 503 {
                answer.expect_problem(503, "overloaded");
                break;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "the hold never took the budget: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        socket.send(&json!({"type": "claim"})).await;
        // The offered buyer's claim waits in line rather than being refused.
        let in_line = "floodgate_admitted_waiting{group=\"reservations\"} 1";
        while !app.get("/metrics").await.text.lines().any(|l| l == in_line) {
            assert!(
                started.elapsed() < DEADLINE,
                "the socket's claim never waited for the budget"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        lock.rollback().await.unwrap();
    };
    let (held, ()) = tokio::join!(blocked_hold, meanwhile);
    held.expect(201);
    let admitted = socket.next_of("admitted").await;
    assert!(
        admitted["admission_token"]
            .as_str()
            .is_some_and(|t| !t.is_empty()),
        "{admitted}"
    );
    assert!(
        !socket.heard.iter().any(|m| m["type"] == "error"),
        "the offered buyer was refused: {:?}",
        socket.heard
    );
    app.gateway.stop().await;
}

/// An upgrade request whose headers never finish is dropped at the header deadline, and held
/// no place under the address's cap meanwhile.
#[tokio::test]
async fn an_upgrade_that_never_completes_its_handshake_is_dropped() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.header_timeout_s = 1;
        config.sockets_per_address = 1;
    })
    .await;
    let event = app
        .create_event(10, json!({ "rate_per_min": 1, "max_active": 1 }))
        .await;
    let queued = app.join_queue(&event).await;
    let addr = app.base_url.trim_start_matches("http://").to_owned();
    let mut stalled = TcpStream::connect(&addr).await.unwrap();
    let start = format!(
        "GET /api/events/{event}/queue/ws?token={} HTTP/1.1\r\nHost: {addr}\r\n\
         Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n",
        queued.queue_token
    );
    stalled.write_all(start.as_bytes()).await.unwrap();

    let mut ws = connect(&app, &event, &queued.queue_token).await.unwrap();
    assert!(stays_open(&mut ws, Duration::from_millis(200)).await);

    let mut buf = [0u8; 256];
    let closed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match stalled.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await;
    assert!(
        closed.is_ok(),
        "the unfinished upgrade was still open after 5 s"
    );
    assert!(stays_open(&mut ws, Duration::from_millis(100)).await);
    app.gateway.stop().await;
}

/// Behind a trusted proxy, the cap counts an IPv6 client by its /64, and a forwarded hop that
/// is not an address ends the walk: whatever a client writes to its left cannot buy it a
/// fresh place.
#[tokio::test]
async fn the_cap_holds_for_ipv6_neighbours_and_unreadable_forwarded_hops() {
    let app = spawn_app_with(Backends::Embedded, |config| {
        config.sockets_per_address = 2;
        config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    let event = app
        .create_event(10, json!({ "rate_per_min": 1, "max_active": 1 }))
        .await;
    let mut open = Vec::new();
    let mut from = async |forwarded: &str| {
        let queued = app.join_queue(&event).await;
        let url = app.ws_url(&format!(
            "/api/events/{event}/queue/ws?token={}",
            queued.queue_token
        ));
        let mut request = url.into_client_request().unwrap();
        request
            .headers_mut()
            .insert("x-forwarded-for", forwarded.parse().unwrap());
        match tokio_tungstenite::connect_async(request).await {
            Ok((ws, _)) => {
                open.push(ws);
                true
            }
            Err(tungstenite::Error::Http(response)) if response.status() == 429 => false,
            Err(other) => panic!("{other}"),
        }
    };
    assert!(from("2001:db8:1:2::1").await);
    assert!(from("2001:db8:1:2:ffff:ffff:ffff:ffff").await);
    assert!(
        !from("2001:db8:1:2:abcd::9").await,
        "a third address of the same /64 got a socket"
    );
    assert!(
        from("2001:db8:1:3::1").await,
        "the next /64 is another client"
    );

    // `nonsense` ends the walk: all three count as the proxy (127.0.0.1), whatever is left of it.
    assert!(from("203.0.113.5, nonsense").await);
    assert!(from("203.0.113.6, nonsense").await);
    assert!(
        !from("203.0.113.7, nonsense").await,
        "addresses written left of an unreadable hop bought a fresh place"
    );
    drop(open);
    app.gateway.stop().await;
}
