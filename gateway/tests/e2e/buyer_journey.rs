//! One buyer's night, told the same way against PostgreSQL + Redis + the HTTP simulator and
//! against the embedded default: join behind others and watch the position fall over the
//! WebSocket, claim on the socket, race a rival for two seats, extend, pay, and keep the
//! order readable with the receipt key after the session ended. A rival whose card is
//! declined retries with a good one.

use crate::support;

use futures::future::join;
use reservation::SessionId;
use serde_json::json;

use support::buyer::{Admitted, Held, seat};
use support::rows::Rows;
use support::{Backends, TestApp, spawn_app};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buyer_journey_on_postgres_redis_and_http_simulator() {
    journey(spawn_app(Backends::Postgres).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buyer_journey_on_the_embedded_default() {
    journey(spawn_app(Backends::Embedded).await).await;
}

async fn journey(app: TestApp) {
    // 120 a minute: one offer every half second, slow enough to watch the position fall.
    let event = app
        .create_event(
            10,
            json!({"rate_per_min": 120, "max_active": 50, "offer_s": 30}),
        )
        .await;
    for _ in 0..4 {
        app.join_queue(&event).await; // buyers ahead who never claim
    }
    let me = app.join_queue(&event).await;
    let rival = app.join_queue(&event).await;

    let (mut socket, turn) = app.wait_for_turn(&me).await;
    let mut distinct = turn.positions.clone();
    distinct.dedup();
    assert!(
        distinct.len() >= 2 && distinct[0] >= 1,
        "the position is watched falling from behind others: {turn:?}"
    );
    // A message may repeat the position with a new wait estimate; it never goes up.
    assert!(
        turn.positions.windows(2).all(|w| w[1] <= w[0]),
        "positions only fall: {turn:?}"
    );
    assert_eq!(turn.positions.last(), Some(&0), "{turn:?}");
    assert!(
        turn.offer_expires_in_s > 0 && turn.offer_expires_in_s <= 30,
        "{turn:?}"
    );
    let me = socket.claim().await;
    socket.close().await;

    // The rival is the next in line; it polls and claims over HTTP.
    app.poll_until(&rival, "offered").await;
    let rival = app.claim(&rival).await;

    // Both reach for the same two seats at once: one wins, the other hears which are gone.
    let wanted = [seat(1), seat(2)];
    let (mine, theirs) = join(app.hold(&me, &wanted), app.hold(&rival, &wanted)).await;
    let (winner, winner_answer, loser, loser_answer) = match (mine.status, theirs.status) {
        (201, 409) => (me, mine, rival, theirs),
        (409, 201) => (rival, theirs, me, mine),
        other => panic!("exactly one hold wins the race, got {other:?}: {mine:?} {theirs:?}"),
    };
    loser_answer.expect_problem(409, "seat_unavailable");
    let lost = loser_answer.body["seats"].as_array().expect("seats named");
    assert!(
        !lost.is_empty() && lost.iter().all(|s| wanted.iter().any(|w| s == w)),
        "{loser_answer:?}"
    );
    let held = Held::from(&winner_answer);
    assert_eq!(held.seats, wanted);
    assert_eq!(winner_answer.body["total_cents"], 5000);

    // The payment form opens: extend, then pay.
    let extended = app.extend(&winner, &held.hold_id).await.expect(200);
    assert!(
        extended.body["expires_in_s"]
            .as_u64()
            .is_some_and(|s| s > 0),
        "{extended:?}"
    );
    let paying = app
        .checkout(&winner, &held.hold_id, "pm_card_visa", "pay-1")
        .await
        .expect(202);
    assert_eq!(paying.body["state"], "paying");
    let replay = app
        .checkout(&winner, &held.hold_id, "pm_card_visa", "pay-1")
        .await
        .expect(202);
    assert_eq!(
        replay.body["payment_id"], paying.body["payment_id"],
        "same key, same payment"
    );

    // The loser takes two other seats; the first card is declined, the second goes through.
    let other = [seat(3), seat(4)];
    let second = Held::from(&app.hold(&loser, &other).await.expect(201));
    app.checkout(&loser, &second.hold_id, "pm_card_declined", "try-1")
        .await
        .expect(202);
    let declined = app
        .wait_hold(&loser, &second.hold_id, |h| {
            h["state"] == "held" && h.get("last_payment_error").is_some()
        })
        .await;
    assert_eq!(
        declined["seats"],
        json!(other),
        "the seats stay with the buyer: {declined}"
    );
    app.checkout(&loser, &second.hold_id, "pm_card_visa", "try-2")
        .await
        .expect(202);

    let first_order = app.wait_confirmed(&winner, &held.hold_id).await;
    let second_order = app.wait_confirmed(&loser, &second.hold_id).await;

    // Both sessions ended with their confirmed holds; the receipt key still reads the order.
    for (buyer, order, receipt, seats) in [
        (&winner, &first_order, &held.receipt_key, &wanted),
        (&loser, &second_order, &second.receipt_key, &other),
    ] {
        assert_session_ended(&app, buyer).await;
        let read = app
            .read_order_with_receipt(order, receipt)
            .await
            .expect(200);
        assert_eq!(read.body["order_id"], json!(order));
        assert_eq!(read.body["event"], json!(event));
        assert_eq!(read.body["seats"], json!(seats));
        assert_eq!(read.body["total_cents"], 5000);
        assert_eq!(read.body["status"], "confirmed");
    }
    app.read_order_with_receipt(&first_order, &second.receipt_key)
        .await
        .expect_problem(404, "not_found");

    // The rows agree: four seats sold once each, two orders, one declined attempt.
    let rows = Rows::of(&app.store).await;
    assert_eq!(rows.get("seats.sold"), 4, "{rows:?}");
    assert_eq!(rows.get("sales"), 4, "{rows:?}");
    assert_eq!(rows.get("orders"), 2, "{rows:?}");
    assert_eq!(rows.get("payment_attempts.declined"), 1, "{rows:?}");
}

async fn assert_session_ended(app: &TestApp, buyer: &Admitted) {
    let id: SessionId = buyer.session_id.parse().expect("session ids are valid");
    let session = app
        .store
        .get_session(&id)
        .await
        .expect("the session is stored");
    assert!(
        session.ended_at_ms.is_some(),
        "a confirmed hold ends its session: {session:?}"
    );
}
