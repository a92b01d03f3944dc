//! A gateway whose queue backend (a throwaway `redis-server` of this test's own) stops under
//! it: `fail_closed` (the default) keeps refusing joins with 503 `overloaded`; `fail_open`
//! admits from the database alone, a join answered with an admission at once, the cap held by
//! the database's conditional insert. Both gateways obey the organizer's switch.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use admission::testing::ThrowawayRedis;
use reqwest::Method;
use serde_json::json;

use support::http::DEADLINE;
use support::{Backends, spawn_app_with};

/// Waits until `redis-server` answers a PING (it starts in the background).
async fn wait_for(url: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let host = url.trim_start_matches("redis://").to_owned();
    let started = tokio::time::Instant::now();
    loop {
        let pong = async {
            let mut conn = tokio::net::TcpStream::connect(&host).await?;
            conn.write_all(b"PING\r\n").await?;
            let mut buf = [0u8; 16];
            let n = conn.read(&mut buf).await?;
            Ok::<_, std::io::Error>(buf[..n].starts_with(b"+PONG"))
        };
        if matches!(pong.await, Ok(true)) {
            return;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "own redis-server at {url} did not start"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_open_admits_from_the_database_while_redis_is_down_and_fail_closed_refuses() {
    let own = ThrowawayRedis::start();
    wait_for(&own.url).await;
    let url = own.url.clone();
    let app = spawn_app_with(Backends::Postgres, move |c| {
        c.redis_url = Some(url.clone());
    })
    .await;
    let peer = app.spawn_peer().await;
    let event = app
        .create_event(10, json!({"rate_per_min": 600, "max_active": 2}))
        .await;
    let before = app.admit(&event).await; // one slot taken while Redis was up
    drop(own); // the queue backend is gone

    // fail_closed: a join is refused on both gateways, and nothing is written.
    for gateway in [&*app, &peer] {
        gateway
            .join_queue_raw(&event)
            .await
            .expect_problem(503, "overloaded");
    }
    let id: reservation::EventId = event.parse().unwrap();
    assert_eq!(app.store.admitted_total(&id).await.unwrap(), 1);

    // fail_open: the next join is admitted at once, through the session table.
    app.tune(&event, json!({"on_backend_down": "fail_open"}))
        .await
        .expect(200);
    let started = tokio::time::Instant::now();
    let joined = loop {
        // The peer reads the switch on its next tick (the database is up).
        let answer = peer.join_queue_raw(&event).await;
        if answer.status == 201 {
            break answer;
        }
        answer.expect_problem(503, "overloaded");
        assert!(started.elapsed() < DEADLINE, "the peer never failed open");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(joined.body["status"], "admitted", "{joined:?}");
    let token = joined.str("admission_token");
    let session = app
        .send(app.request(Method::GET, "/api/session").bearer_auth(&token))
        .await
        .expect(200);
    assert_eq!(session.body["event"], event.as_str(), "{session:?}");
    // The queue token of that join answers for itself while Redis stays down.
    let queued = support::buyer::Queued {
        event: event.clone(),
        queue_token: joined.str("queue_token"),
        ticket_id: joined.str("ticket_id"),
        position: None,
    };
    let status = app.queue_status(&queued).await.expect(200);
    assert_eq!(status.body["status"], "admitted", "{status:?}");
    let claimed = app.claim(&queued).await;
    assert_eq!(claimed.session_id, session.str("session_id"));

    // The cap (2) is judged by the database: one was admitted before, one now; the next waits.
    app.join_queue_raw(&event)
        .await
        .expect_problem(503, "overloaded");
    assert_eq!(app.store.active_sessions(&id).await.unwrap(), 2);
    // A slot coming back (a session ending) lets the next one in, still without Redis.
    let ended: reservation::SessionId = before.session_id.parse().unwrap();
    app.store.end_session(&ended, "released").await.unwrap();
    let next = app.join_queue_raw(&event).await.expect(201);
    assert_eq!(next.body["status"], "admitted", "{next:?}");

    // Back to fail_closed: refused again on both.
    app.tune(&event, json!({"on_backend_down": "fail_closed"}))
        .await
        .expect(200);
    let started = tokio::time::Instant::now();
    loop {
        let answers = [
            app.join_queue_raw(&event).await,
            peer.join_queue_raw(&event).await,
        ];
        if answers.iter().all(|a| a.status == 503) {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "still failing open: {answers:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(app.store.admitted_total(&id).await.unwrap(), 3);
}
