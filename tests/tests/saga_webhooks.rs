//! Webhook intake: refused deliveries change nothing; unmatched ones are recorded and
//! acknowledged; the payload is never trusted (the payment is re-fetched); duplicates answer
//! with the stored result; webhook and worker converge on one finalize.

use std::time::Duration;

use floodgate_tests::saga::{Rig, WEBHOOK_SECRET};
use reservation::payments::webhook::{SignatureError, sign};
use reservation::payments::{AuthorizeRequest, Outcome};
use reservation::testing::seeded_event;
use reservation::webhook_intake::{WebhookAck, WebhookError, intake_webhook};
use reservation::{AttemptState, HoldState, Store};

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

fn event(id: &str, kind: &str, payment: &str, status: &str, attempt: &str) -> Vec<u8> {
    serde_json::json!({"id": id, "object": "event", "type": kind, "data": {"object": {
        "id": payment, "object": "payment_intent", "status": status,
        "metadata": {"attempt_id": attempt}}}})
    .to_string()
    .into_bytes()
}

/// Every row a delivery could touch, as text, to compare before and after.
async fn rows(store: &Store) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "select seat_id || ':' || state || ':' || coalesce(hold_id, '') || ':' || coalesce(payment_attempt_id, '') from seats order by 1",
        "select hold_id || ':' || state from holds order by 1",
        "select attempt_id || ':' || state || ':' || coalesce(provider_payment_id, '') from payment_attempts order by 1",
        "select order_id || ':' || payment_status from orders order by 1",
        "select id || ':' || kind || ':' || coalesce(cast(done_at as text), '') from outbox order by id",
        "select cast(count(*) as text) from reservation_events",
        "select provider_event_id || ':' || coalesce(outcome, '') from webhook_events order by 1",
    ] {
        let got: Vec<String> = sqlx::query_scalar(sql)
            .fetch_all(store.pool())
            .await
            .expect("snapshot query");
        out.extend(got);
    }
    out
}

/// A checkout whose authorization the provider has made (as the worker's call would), and the
/// payment id it made.
async fn authorized_checkout(
    rig: &Rig,
    ev: &reservation::EventId,
    seat: &str,
) -> (reservation::Hold, reservation::PaymentAttempt, String) {
    let (hold, attempt) = rig.checkout(ev, seat, "pm_card_visa").await;
    let req = AuthorizeRequest::new(
        attempt.attempt_id.as_str(),
        attempt.amount_cents,
        &attempt.currency,
        "pm_card_visa",
    );
    let Outcome::Authorized { payment_id } = rig.provider.authorize(&req).await else {
        panic!("authorized");
    };
    (hold, attempt, payment_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_and_unmatched_deliveries_change_nothing() {
    let rig = Rig::new(Duration::from_secs(2)).await;
    let ev = seeded_event(&rig.store, 2, |_| {}).await;
    let (hold, attempt) = rig.checkout(&ev, "S00001", "pm_card_visa").await;
    let secret = WEBHOOK_SECRET.as_bytes();
    let intake = async |sig: Option<&str>, body: &[u8]| {
        intake_webhook(&rig.store, &rig.provider, secret, sig, body).await
    };
    let before = rows(&rig.store).await;

    // A signed claim that the payment succeeded, for a payment the provider never made: the
    // re-fetch finds nothing, so nothing is sold.
    let forged = event(
        "evt_forged",
        "payment_intent.succeeded",
        "pi_forged",
        "succeeded",
        attempt.attempt_id.as_str(),
    );
    let cases: Vec<(&str, Option<String>, Vec<u8>)> = vec![
        (
            "bad signature",
            Some(sign(b"not the secret", now(), &forged)),
            forged.clone(),
        ),
        (
            "old timestamp",
            Some(sign(secret, now() - 301, &forged)),
            forged.clone(),
        ),
        ("missing header", None, forged.clone()),
        ("garbage header", Some("t=x,v1=zz".into()), forged.clone()),
        (
            "malformed body",
            Some(sign(secret, now(), b"{not json")),
            b"{not json".to_vec(),
        ),
        (
            "body not an event",
            Some(sign(secret, now(), br#"{"id":7}"#)),
            br#"{"id":7}"#.to_vec(),
        ),
    ];
    for (what, sig, body) in &cases {
        let got = intake(sig.as_deref(), body).await;
        match (what, &got) {
            (&"bad signature", Err(WebhookError::Signature(SignatureError::BadSignature)))
            | (&"old timestamp", Err(WebhookError::Signature(SignatureError::Stale)))
            | (&"missing header", Err(WebhookError::Signature(SignatureError::Missing)))
            | (&"garbage header", Err(WebhookError::Signature(SignatureError::Malformed)))
            | (&"malformed body" | &"body not an event", Err(WebhookError::Malformed(_))) => {}
            _ => panic!("{what}: unexpected {got:?}"),
        }
        assert_eq!(rows(&rig.store).await, before, "{what} changed rows");
    }

    // Valid, but about nobody we know: recorded and acknowledged, nothing else changes.
    let unknown = event(
        "evt_unknown",
        "payment_intent.succeeded",
        "pi_x",
        "succeeded",
        "pa_nobody",
    );
    let got = intake(Some(&sign(secret, now(), &unknown)), &unknown)
        .await
        .expect("acknowledged");
    assert_eq!(got, WebhookAck::Unmatched);
    let after = rows(&rig.store).await;
    assert_eq!(after.len(), before.len() + 1);
    assert!(after.contains(&"evt_unknown:unmatched".to_owned()));
    // The forged success for our attempt, validly signed: re-fetched, not found, not applied.
    let got = intake(Some(&sign(secret, now(), &forged)), &forged)
        .await
        .expect("acknowledged");
    assert_eq!(got, WebhookAck::Unmatched);
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Paying
    );
    // Repeats answer with the stored result.
    let again = intake(Some(&sign(secret, now(), &unknown)), &unknown)
        .await
        .expect("acknowledged");
    assert_eq!(
        again,
        WebhookAck::Duplicate {
            outcome: "unmatched".into()
        }
    );
    let held: i64 = sqlx::query_scalar("select count(*) from webhook_events where matched = false")
        .fetch_one(rig.store.pool())
        .await
        .expect("count");
    assert_eq!(held, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_and_worker_converge_on_one_finalize() {
    let rig = Rig::new(Duration::from_secs(2)).await;
    let ev = seeded_event(&rig.store, 2, |_| {}).await;
    // The provider authorizes (as the worker's call would); the event says so.
    let (hold, attempt, payment_id) = authorized_checkout(&rig, &ev, "S00002").await;
    let body = event(
        "evt_auth",
        "payment_intent.amount_capturable_updated",
        &payment_id,
        "requires_capture",
        attempt.attempt_id.as_str(),
    );
    let secret = WEBHOOK_SECRET.as_bytes();
    let first = intake_webhook(
        &rig.store,
        &rig.provider,
        secret,
        Some(&sign(secret, now(), &body)),
        &body,
    )
    .await
    .expect("applied");
    assert_eq!(
        first,
        WebhookAck::Applied {
            attempt_id: attempt.attempt_id.clone(),
            outcome: "confirmed".into()
        }
    );
    assert_eq!(
        rig.store.get_hold(&hold.hold_id).await.expect("read").state,
        HoldState::Confirmed
    );
    let before = rows(&rig.store).await;
    let second = intake_webhook(
        &rig.store,
        &rig.provider,
        secret,
        Some(&sign(secret, now(), &body)),
        &body,
    )
    .await
    .expect("duplicate");
    assert_eq!(
        second,
        WebhookAck::Duplicate {
            outcome: "confirmed".into()
        }
    );
    assert_eq!(
        rows(&rig.store).await,
        before,
        "a duplicate changes nothing"
    );
    // The worker's authorize job now repeats the same key, gets the same payment, and finds
    // the order already there: one sale, one capture.
    let worker = rig.start_worker().await;
    rig.settle(&ev, Duration::from_secs(20))
        .await
        .expect("settled with invariants");
    let a = rig
        .store
        .get_attempt(&attempt.attempt_id)
        .await
        .expect("read");
    assert_eq!(
        (a.state, a.provider_payment_id.as_deref()),
        (AttemptState::Captured, Some(payment_id.as_str()))
    );
    let rec = &rig.sim.simulator.ledger().attempts[attempt.attempt_id.as_str()];
    assert_eq!((rec.authorizations, rec.captures), (1, 1));
    worker.stop().await.expect("worker stops");
}

/// One event delivered many times at once (the provider retrying over several connections):
/// its id is claimed in the transaction that acts, so exactly one delivery acts and every
/// other one answers with that delivery's outcome, and the sale is made once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_duplicate_deliveries_act_once() {
    let rig = Rig::new(Duration::from_secs(2)).await;
    let ev = seeded_event(&rig.store, 2, |_| {}).await;
    let (_hold, attempt, payment_id) = authorized_checkout(&rig, &ev, "S00001").await;
    let body = event(
        "evt_raced",
        "payment_intent.amount_capturable_updated",
        &payment_id,
        "requires_capture",
        attempt.attempt_id.as_str(),
    );
    let secret = WEBHOOK_SECRET.as_bytes();
    let signature = sign(secret, now(), &body);
    let deliveries =
        (0..16).map(|_| intake_webhook(&rig.store, &rig.provider, secret, Some(&signature), &body));
    let acks: Vec<WebhookAck> = futures::future::join_all(deliveries)
        .await
        .into_iter()
        .map(|a| a.expect("acknowledged"))
        .collect();
    let applied = acks
        .iter()
        .filter(|a| matches!(a, WebhookAck::Applied { .. }))
        .count();
    assert_eq!(applied, 1, "exactly one delivery acts: {acks:?}");
    for ack in &acks {
        match ack {
            WebhookAck::Applied { outcome, .. } | WebhookAck::Duplicate { outcome } => {
                assert_eq!(outcome, "confirmed", "{acks:?}")
            }
            WebhookAck::Unmatched => panic!("matched event answered unmatched: {acks:?}"),
        }
    }
    let confirmed: i64 = sqlx::query_scalar(
        "select count(*) from reservation_events where kind = 'ReservationConfirmed'",
    )
    .fetch_one(rig.store.pool())
    .await
    .expect("count");
    let orders: i64 = sqlx::query_scalar("select count(*) from orders")
        .fetch_one(rig.store.pool())
        .await
        .expect("count");
    assert_eq!((confirmed, orders), (1, 1));
    let recorded: i64 = sqlx::query_scalar(
        "select count(*) from webhook_events where provider_event_id = 'evt_raced' and outcome = 'confirmed'",
    )
    .fetch_one(rig.store.pool())
    .await
    .expect("count");
    assert_eq!(recorded, 1);
}

/// Every sale hears the provider's word more than once (the worker's answer, each event and its
/// redeliveries). Once the order exists, a later word is answered from it: it waits for no
/// seat lock (another transaction holds the sold seat's row here), and only a capture is
/// recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_later_word_on_a_sale_waits_for_no_seat_lock() {
    let rig = Rig::new(Duration::from_secs(2)).await;
    let ev = seeded_event(&rig.store, 2, |_| {}).await;
    let (_hold, attempt, payment_id) = authorized_checkout(&rig, &ev, "S00001").await;
    let secret = WEBHOOK_SECRET.as_bytes();
    // Every word here is answered within the bound, confirmed: the first sells, the later ones
    // come while another transaction holds the sold seat's row.
    let deliver = |id: &'static str, kind: &'static str, status: &'static str| {
        let body = event(id, kind, &payment_id, status, attempt.attempt_id.as_str());
        let signature = sign(secret, now(), &body);
        let store = rig.store.clone();
        let provider = rig.provider.clone();
        async move {
            let ack = tokio::time::timeout(
                Duration::from_secs(10),
                intake_webhook(&store, &provider, secret, Some(&signature), &body),
            )
            .await
            .unwrap_or_else(|_| panic!("{id} answered within the bound"))
            .expect("applied");
            assert!(
                matches!(&ack, WebhookAck::Applied { outcome, .. } if outcome == "confirmed"),
                "{id}: {ack:?}"
            );
        }
    };
    let authorized = "payment_intent.amount_capturable_updated";
    deliver("evt_auth", authorized, "requires_capture").await;

    // Another transaction holds the sold seat's row until told to let go.
    let mut locker = rig.store.pool().begin().await.expect("begin");
    sqlx::query("select seat_id from seats where event_id = $1 and seat_id = 'S00001' for update")
        .bind(ev.as_str())
        .fetch_all(&mut *locker)
        .await
        .expect("lock the seat");

    // The same authorization told again under a new event id: answered from the order.
    deliver("evt_auth_again", authorized, "requires_capture").await;
    // The capture, once the provider has made it, is still recorded.
    let made = rig.provider.capture(&payment_id).await;
    assert!(matches!(made, Outcome::Captured { .. }), "{made:?}");
    deliver("evt_captured", "payment_intent.succeeded", "succeeded").await;
    locker.rollback().await.expect("let go");
    let a = rig
        .store
        .get_attempt(&attempt.attempt_id)
        .await
        .expect("read");
    assert_eq!(a.state, AttemptState::Captured);
    let (orders, paid): (i64, String) =
        sqlx::query_as("select count(*), max(payment_status) from orders where attempt_id = $1")
            .bind(attempt.attempt_id.as_str())
            .fetch_one(rig.store.pool())
            .await
            .expect("orders");
    assert_eq!((orders, paid.as_str()), (1, "captured"));
}
