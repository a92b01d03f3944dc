//! The waitlist after a sell-out: buyers told "sold out" keep their places (their sockets stay
//! open, their status polls keep answering); when seats come back (the organizer adds some),
//! offers resume in queue order to those who stayed, heard on both gateways.
#![allow(clippy::unwrap_used)]

use crate::support;

use reqwest::Method;
use serde_json::json;

use support::{Backends, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buyers_told_sold_out_stay_in_line_and_are_offered_in_order_when_seats_come_back() {
    let app = spawn_app(Backends::Postgres).await;
    let peer = app.spawn_peer().await;
    // One seat, one buyer inside at a time.
    let event = app
        .create_event(
            1,
            json!({"rate_per_min": 6000, "max_active": 1, "offer_s": 60}),
        )
        .await;
    let first = app.admit(&event).await;
    let second = peer.join_queue(&event).await;
    let third = app.join_queue(&event).await;
    let mut listening = peer.open_socket(&second).await;
    listening.settle_at(0).await;

    // The first buyer buys the only seat: sold out, told to those waiting on both gateways.
    let held = app
        .hold(&first, &[support::buyer::seat(1)])
        .await
        .expect(201);
    let hold = held.str("hold_id");
    app.checkout(&first, &hold, "pm_card_visa", "k-1")
        .await
        .expect(202);
    app.wait_confirmed(&first, &hold).await;
    let told = listening.next_of("status").await;
    assert_eq!(told["status"], "sold_out", "{told}");
    app.poll_until(&second, "sold_out").await;
    peer.poll_until(&third, "sold_out").await;
    app.join_queue_raw(&event)
        .await
        .expect_problem(409, "sold_out");

    // Two seats come back: the line resumes, the second buyer (ahead) offered first.
    app.send(
        app.admin(Method::POST, &format!("/api/admin/events/{event}/seats"))
            .json(&json!({"generate": {"section": "B", "rows": 1, "per_row": 2, "price_cents": 2500}})),
    )
    .await
    .expect(200);
    listening.next_of("offered").await;
    assert!(
        !listening
            .heard
            .iter()
            .skip_while(|m| m != &&told)
            .skip(1)
            .any(|m| m["status"] == "sold_out"),
        "told once, then the offer: {:?}",
        listening.heard
    );
    let behind = peer.poll_until(&third, "waiting").await;
    assert_eq!(behind.body["position"], 0, "{behind:?}");
    let admitted = listening.claim().await;
    // Its session ends (the seats are released): the slot passes to the third buyer.
    let hold = peer
        .hold_raw(
            &event,
            &admitted.admission_token,
            &json!({"section": "B", "quantity": 1}),
        )
        .await
        .expect(201)
        .str("hold_id");
    peer.release(&admitted, &hold).await.expect(204);
    app.poll_until(&third, "offered").await;
}
