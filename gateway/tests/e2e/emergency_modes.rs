//! Maintenance and pass-through, obeyed by two gateways sharing PostgreSQL and Redis (and by the
//! embedded default): maintenance refuses joins with the organizer's message on both while the
//! places already given are kept (offers pause); pass-through offers everyone waiting at once,
//! and new joiners immediately, while the database holds the cap when offers are claimed.
#![allow(clippy::unwrap_used)]

use crate::support;

use serde_json::json;

use support::{Backends, Gateway, spawn_app};

async fn maintenance_story(backends: Backends) {
    let app = spawn_app(backends).await;
    let peer = match backends {
        Backends::Postgres => Some(app.spawn_peer().await),
        Backends::Embedded => None,
    };
    let gateways: Vec<&Gateway> = std::iter::once(&*app).chain(peer.as_ref()).collect();
    let event = app
        .create_event(5, json!({"rate_per_min": 600, "max_active": 1}))
        .await;
    app.admit(&event).await; // the one slot is taken: the next buyer waits in place
    let waiting = gateways[gateways.len() - 1].join_queue(&event).await;

    let text = "Short maintenance: back in 10 minutes.";
    app.tune(
        &event,
        json!({"mode": "maintenance", "message": {"text": text, "level": "warning"}}),
    )
    .await
    .expect(200);
    for gateway in &gateways {
        let snap = gateway
            .snapshot_until(&event, |s| s["mode"] == "maintenance")
            .await;
        assert_eq!(snap["state"], "paused", "offers pause: {snap}");
        assert_eq!(snap["message"]["text"], text);
        let refused = gateway.join_queue_raw(&event).await;
        refused.expect_problem(409, "queue_maintenance");
        assert_eq!(refused.body["message"], text, "{refused:?}");
        assert_eq!(refused.body["detail"], text, "{refused:?}");
        // The place already given is kept, and its status still answers.
        let status = gateway.queue_status(&waiting).await.expect(200);
        assert_eq!(status.body["status"], "paused", "{status:?}");
        assert_eq!(status.body["position"], 0, "{status:?}");
    }
    // Slots free up during maintenance: still no offer, the line is paused.
    app.tune(&event, json!({"max_active": 10}))
        .await
        .expect(200);
    let still = app.queue_status(&waiting).await.expect(200);
    assert_eq!(still.body["status"], "paused", "{still:?}");

    // Back to normal: joins are taken and the kept place is offered first.
    app.tune(&event, json!({"mode": "normal"}))
        .await
        .expect(200);
    for gateway in &gateways {
        gateway
            .snapshot_until(&event, |s| s["mode"] == "normal")
            .await;
    }
    gateways[0].poll_until(&waiting, "offered").await;
    gateways[gateways.len() - 1].join_queue(&event).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_refuses_joins_and_keeps_places_on_two_gateways() {
    maintenance_story(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn maintenance_refuses_joins_and_keeps_places_embedded() {
    maintenance_story(Backends::Embedded).await;
}

async fn pass_through_story(backends: Backends) {
    let app = spawn_app(backends).await;
    let peer = match backends {
        Backends::Postgres => Some(app.spawn_peer().await),
        Backends::Embedded => None,
    };
    let gateways: Vec<&Gateway> = std::iter::once(&*app).chain(peer.as_ref()).collect();
    // One offer a minute and room for two: without pass-through this line takes hours.
    let event = app
        .create_event(
            10,
            json!({"rate_per_min": 1, "max_active": 2, "offer_s": 120}),
        )
        .await;
    app.tune(&event, json!({"rate_per_min": 0}))
        .await
        .expect(200);
    let mut line = Vec::new();
    for i in 0..6 {
        line.push(gateways[i % gateways.len()].join_queue(&event).await);
    }

    app.tune(&event, json!({"mode": "pass_through"}))
        .await
        .expect(200);
    for (i, buyer) in line.iter().enumerate() {
        let via = gateways[(i + 1) % gateways.len()];
        via.poll_until(buyer, "offered").await;
    }
    // A new joiner is offered at once, on either gateway.
    for gateway in &gateways {
        gateway
            .snapshot_until(&event, |s| s["mode"] == "pass_through")
            .await;
        let late = gateway.join_queue(&event).await;
        gateway.poll_until(&late, "offered").await;
        line.push(late);
    }

    // Everyone claims at once through both gateways: the database lets exactly two in.
    let claims = line.iter().enumerate().map(|(i, buyer)| {
        let via = gateways[i % gateways.len()];
        async move { via.claim_raw(buyer, &buyer.queue_token).await }
    });
    let answers = futures::future::join_all(claims).await;
    let admitted: Vec<_> = answers.iter().filter(|a| a.status == 200).collect();
    assert_eq!(admitted.len(), 2, "the cap: {answers:?}");
    for refused in answers.iter().filter(|a| a.status != 200) {
        refused.expect_problem(503, "overloaded");
        assert!(refused.retry_after.is_some(), "{refused:?}");
    }
    let id: reservation::EventId = event.parse().unwrap();
    assert_eq!(app.store.active_sessions(&id).await.unwrap(), 2);
    // A refused buyer keeps the offer (it has not lapsed) and may try again.
    let refused = answers.iter().position(|a| a.status != 200).unwrap();
    let again = app.queue_status(&line[refused]).await.expect(200);
    assert_eq!(again.body["status"], "offered", "{again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_through_offers_everyone_and_the_database_holds_the_cap_on_two_gateways() {
    pass_through_story(Backends::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pass_through_offers_everyone_and_the_database_holds_the_cap_embedded() {
    pass_through_story(Backends::Embedded).await;
}
