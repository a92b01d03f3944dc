//! Webhooks from the HTTP simulator: signed, and really delayed, duplicated and reordered.

use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use floodgate_tests::simulator::{SimServerConfig, SimulatorHandle, spawn};
use reservation::payments::simulator::{KnobsPatch, SimulatorConfig};
use reservation::payments::webhook::{self, SignatureError, WebhookEvent};
use reservation::payments::{AuthorizeRequest, Outcome, Provider};
use tokio::sync::mpsc;

const SECRET: &str = "whsec_floodgate_test";

struct Delivery {
    signature: Option<String>,
    body: Bytes,
    at: Instant,
}

impl Delivery {
    fn event(&self) -> WebhookEvent {
        webhook::parse_event(&self.body).expect("the simulator sends well-formed events")
    }
}

/// A webhook receiver on port 0 that answers `status` and reports every delivery.
async fn receiver(status: StatusCode) -> (String, mpsc::UnboundedReceiver<Delivery>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new()
        .route(
            "/hook",
            post(
                move |State(tx): State<mpsc::UnboundedSender<Delivery>>,
                      h: HeaderMap,
                      body: Bytes| async move {
                    let signature = h
                        .get("stripe-signature")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let _ = tx.send(Delivery {
                        signature,
                        body,
                        at: Instant::now(),
                    });
                    status
                },
            ),
        )
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("receiver binds 127.0.0.1:0");
    let url = format!(
        "http://{}/hook",
        listener.local_addr().expect("bound address")
    );
    tokio::spawn(async move { axum::serve(listener, app).await.expect("receiver serves") });
    (url, rx)
}

async fn setup(
    patch: KnobsPatch,
) -> (SimulatorHandle, Provider, mpsc::UnboundedReceiver<Delivery>) {
    let (url, rx) = receiver(StatusCode::OK).await;
    let sim = spawn(SimServerConfig {
        simulator: SimulatorConfig {
            webhook_secret: SECRET.into(),
            ..Default::default()
        },
        ..Default::default()
    })
    .await
    .expect("simulator binds 127.0.0.1:0");
    sim.simulator.set_knobs(&KnobsPatch {
        webhook_url: Some(url),
        ..patch
    });
    let p = sim.http_provider("sk", Duration::from_secs(3));
    (sim, p, rx)
}

async fn next(rx: &mut mpsc::UnboundedReceiver<Delivery>) -> Delivery {
    tokio::time::timeout(Duration::from_secs(3), rx.recv())
        .await
        .expect("a webhook within 3 s")
        .expect("receiver alive")
}

async fn nothing_more(rx: &mut mpsc::UnboundedReceiver<Delivery>) {
    let extra = tokio::time::timeout(Duration::from_millis(400), rx.recv()).await;
    assert!(extra.is_err(), "unexpected extra webhook");
}

fn visa(attempt: &str) -> AuthorizeRequest {
    AuthorizeRequest {
        attempt_id: attempt.into(),
        amount_cents: 1_000,
        currency: "eur".into(),
        payment_method: "pm_card_visa".into(),
        return_url: None,
    }
}

async fn authorized(p: &Provider, attempt: &str) -> String {
    match p.authorize(&visa(attempt)).await {
        Outcome::Authorized { payment_id } => payment_id,
        other => panic!("expected Authorized, got {other:?}"),
    }
}

fn now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

#[tokio::test]
async fn webhooks_are_signed_and_bad_or_old_signatures_fail() {
    let (_sim, p, mut rx) = setup(KnobsPatch::default()).await;
    let pi = authorized(&p, "att-sig").await;
    let d = next(&mut rx).await;
    let sig = d.signature.as_deref();
    assert_eq!(
        webhook::verify(SECRET.as_bytes(), sig, &d.body, now()),
        Ok(())
    );
    let event = d.event();
    assert_eq!(event.kind, "payment_intent.amount_capturable_updated");
    assert_eq!(
        (event.payment_id(), event.attempt_id()),
        (pi.as_str(), Some("att-sig"))
    );
    assert_eq!(
        event.data.object.status.as_deref(),
        Some("requires_capture")
    );

    assert_eq!(
        webhook::verify(b"another secret", sig, &d.body, now()),
        Err(SignatureError::BadSignature)
    );
    let mut tampered = d.body.to_vec();
    tampered.extend_from_slice(b" ");
    assert_eq!(
        webhook::verify(SECRET.as_bytes(), sig, &tampered, now()),
        Err(SignatureError::BadSignature)
    );
    assert_eq!(
        webhook::verify(
            SECRET.as_bytes(),
            sig,
            &d.body,
            now() + webhook::TOLERANCE_S + 5
        ),
        Err(SignatureError::Stale)
    );
    assert_eq!(
        webhook::verify(SECRET.as_bytes(), None, &d.body, now()),
        Err(SignatureError::Missing)
    );
}

#[tokio::test]
async fn each_money_movement_sends_its_event() {
    let (_sim, p, mut rx) = setup(KnobsPatch::default()).await;
    let declined = p
        .authorize(&AuthorizeRequest {
            payment_method: "pm_card_declined".into(),
            return_url: None,
            ..visa("att-d")
        })
        .await;
    assert!(matches!(declined, Outcome::Declined { .. }));
    assert_eq!(
        next(&mut rx).await.event().kind,
        "payment_intent.payment_failed"
    );

    let voided = authorized(&p, "att-v").await;
    next(&mut rx).await;
    p.cancel(&voided).await;
    let e = next(&mut rx).await.event();
    assert_eq!(
        (e.kind.as_str(), e.payment_id()),
        ("payment_intent.canceled", voided.as_str())
    );

    let paid = authorized(&p, "att-r").await;
    next(&mut rx).await;
    p.capture(&paid).await;
    assert_eq!(next(&mut rx).await.event().kind, "payment_intent.succeeded");
    p.refund("att-r", &paid).await;
    let e = next(&mut rx).await.event();
    assert_eq!(e.kind, "charge.refunded");
    assert_eq!(e.data.object.object, "charge");
    assert_eq!(
        (e.payment_id(), e.attempt_id()),
        (paid.as_str(), Some("att-r"))
    );
    nothing_more(&mut rx).await;
}

#[tokio::test]
async fn duplicate_knob_delivers_each_event_twice() {
    let (sim, p, mut rx) = setup(KnobsPatch {
        webhook_duplicate_rate: Some(1.0),
        ..Default::default()
    })
    .await;
    authorized(&p, "att-dup").await;
    let (a, b) = (next(&mut rx).await.event(), next(&mut rx).await.event());
    assert_eq!(a, b, "the same event, same id, twice");
    nothing_more(&mut rx).await;
    assert_eq!(sim.simulator.ledger().counters.webhooks_sent, 2);
}

#[tokio::test]
async fn out_of_order_knob_swaps_successive_events() {
    let (_sim, p, mut rx) = setup(KnobsPatch {
        webhook_out_of_order: Some(true),
        reorder_window_ms: Some(1_000),
        ..Default::default()
    })
    .await;
    let pi = authorized(&p, "att-ooo").await;
    p.capture(&pi).await;
    let first = next(&mut rx).await.event();
    let second = next(&mut rx).await.event();
    assert_eq!(first.kind, "payment_intent.succeeded");
    assert_eq!(second.kind, "payment_intent.amount_capturable_updated");

    // An event with no successor still goes out once the window has passed.
    let started = Instant::now();
    authorized(&p, "att-ooo-alone").await;
    let alone = next(&mut rx).await;
    assert_eq!(alone.event().attempt_id(), Some("att-ooo-alone"));
    assert!(alone.at - started >= Duration::from_millis(900));
}

#[tokio::test]
async fn delay_knob_holds_webhooks_back() {
    let (_sim, p, mut rx) = setup(KnobsPatch {
        webhook_delay_ms: Some(400),
        ..Default::default()
    })
    .await;
    let started = Instant::now();
    authorized(&p, "att-delay").await;
    let d = next(&mut rx).await;
    assert!(d.at - started >= Duration::from_millis(400));
}

#[tokio::test]
async fn a_refusing_receiver_is_retried_then_counted_as_failed() {
    let (url, mut rx) = receiver(StatusCode::INTERNAL_SERVER_ERROR).await;
    let sim = spawn(SimServerConfig::default()).await.unwrap();
    sim.simulator.set_knobs(&KnobsPatch {
        webhook_url: Some(url),
        ..Default::default()
    });
    let p = sim.http_provider("sk", Duration::from_secs(3));
    authorized(&p, "att-retry").await;
    let ids: Vec<String> = [
        next(&mut rx).await,
        next(&mut rx).await,
        next(&mut rx).await,
    ]
    .iter()
    .map(|d| d.event().id)
    .collect();
    assert!(
        ids.windows(2).all(|w| w[0] == w[1]),
        "retries resend the same event"
    );
    nothing_more(&mut rx).await;
    let counters = sim.simulator.ledger().counters;
    assert_eq!((counters.webhooks_sent, counters.webhooks_failed), (0, 1));
}
