//! Two (or three) gateway instances sharing one PostgreSQL database and Redis: a waiting buyer
//! moved from a draining instance to another keeps their place, and offers go out in queue
//! order whichever instance a buyer joined through or listens on.

use crate::support;

use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use support::buyer::Queued;
use support::{Backends, Gateway, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_moved_to_another_gateway_keeps_its_place() {
    let app = spawn_app(Backends::Postgres).await;
    let draining = app.spawn_peer().await;
    // One active session at a time, and it is taken: everyone else waits in place.
    let event = app
        .create_event(
            10,
            json!({"rate_per_min": 6000, "max_active": 1, "offer_s": 60}),
        )
        .await;
    app.admit(&event).await;
    let mut line = Vec::new();
    for i in 0..4 {
        let via: &Gateway = if i % 2 == 0 { &app } else { &draining };
        line.push(via.join_queue(&event).await);
    }
    let me = &line[2];

    let mut socket = draining.open_socket(me).await;
    socket.settle_at(2).await; // two buyers ahead

    // The instance drains: the socket is told to reconnect (jittered), then closed.
    let stopping = tokio::spawn(draining.stop());
    let told = socket.next_of("reconnect").await;
    let after_ms = told["after_ms"].as_u64().expect("after_ms");
    assert!((100..=10_000).contains(&after_ms), "{told}");
    assert!(
        socket.next().await.is_none(),
        "closed after `reconnect`: {:?}",
        socket.heard
    );
    stopping.await.expect("the draining gateway stopped");

    // The same token on the other instance: the same place, over the socket and by polling.
    let mut socket = app.open_socket(me).await;
    socket.settle_at(2).await; // the place is kept
    let polled = app.queue_status(me).await.expect(200);
    assert_eq!(polled.body["position"], 2, "{polled:?}");

    // And the place is real: once slots open, the two ahead are served first, then this one.
    app.tune(&event, json!({"max_active": 50}))
        .await
        .expect(200);
    let turn = socket.wait_for_turn().await;
    assert!(turn.positions.iter().all(|p| *p < 2), "{turn:?}");
    for ahead in &line[..2] {
        let status = app.queue_status(ahead).await.expect(200);
        assert_eq!(
            status.body["status"], "offered",
            "those ahead were offered first: {status:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offers_follow_queue_order_across_two_gateways() {
    let app = spawn_app(Backends::Postgres).await;
    let peer = app.spawn_peer().await;
    // Two offers a second once the cap is lifted: far enough apart to order by arrival.
    let event = app
        .create_event(
            20,
            json!({"rate_per_min": 120, "max_active": 1, "offer_s": 60}),
        )
        .await;
    app.admit(&event).await;
    let gateways: [&Gateway; 2] = [&app, &peer];
    let mut line: Vec<Queued> = Vec::new();
    for i in 0..6 {
        line.push(gateways[i % 2].join_queue(&event).await);
    }
    // Each buyer listens on the other instance than the one it joined through.
    let mut listeners = Vec::new();
    for (i, queued) in line.iter().enumerate() {
        let mut socket = gateways[(i + 1) % 2].open_socket(queued).await;
        socket.settle_at(i as u64).await;
        listeners.push(tokio::spawn(async move {
            socket.wait_for_turn().await;
            Instant::now()
        }));
    }
    peer.tune(&event, json!({"max_active": 50}))
        .await
        .expect(200);
    let mut offered_at = Vec::new();
    for listener in listeners {
        offered_at.push(listener.await.expect("listener"));
    }
    for (i, pair) in offered_at.windows(2).enumerate() {
        assert!(
            pair[0] <= pair[1],
            "buyer {} was offered {:?} after buyer {}",
            i,
            pair[0].duration_since(pair[1]),
            i + 1
        );
    }
    let spread = offered_at[5].duration_since(offered_at[0]);
    assert!(
        spread >= Duration::from_millis(1500),
        "the rate was obeyed: {spread:?}"
    );
}
