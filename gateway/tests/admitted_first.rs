//! Buyers whose turn has come are never refused for load: while a crowd floods the cheap
//! anonymous routes (joins, event reads, made-up receipt reads of the reservations group),
//! offered buyers claim their offer, then hold, read their session and hold (with their token
//! and with their receipt key), extend and release, all at once, through a reservations budget
//! far smaller than their number. Every one of their requests gets a real answer (never 503):
//! they wait in line for a permit while the anonymous traffic is what is shed.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use reqwest::Method;
use serde_json::json;

use support::buyer::{Admitted, Queued};
use support::http::Answer;
use support::{Backends, spawn_app_with};

/// Far fewer reservation permits than admitted buyers acting at once.
const RESERVATIONS_BUDGET: usize = 4;
const ADMITTED: u32 = 32;
const ROUNDS: u32 = 3;
const FLOODERS: usize = 48;

/// One admitted buyer's visit: hold its seat, then rounds of reading the session and the hold
/// and extending it, then release (a release ends the session). Returns every answer that was
/// not the expected one.
async fn shop(app: &support::Gateway, buyer: &Admitted, seat: String) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut check = |what: &str, answer: &Answer, expected: u16| {
        if answer.status != expected {
            wrong.push(format!("{what}: {answer:?}"));
        }
    };
    let held = app.hold(buyer, std::slice::from_ref(&seat)).await;
    check("hold", &held, 201);
    if held.status != 201 {
        return wrong;
    }
    let hold = held.str("hold_id");
    let receipt = held.str("receipt_key");
    for _ in 0..ROUNDS {
        let session = app
            .send(
                app.request(Method::GET, "/api/session")
                    .bearer_auth(&buyer.admission_token),
            )
            .await;
        check("session", &session, 200);
        check("read hold", &app.read_hold(buyer, &hold).await, 200);
        // With the receipt key alone, as the buyer will for days after paying: the key's tag
        // tells it from the crowd's made-up ones, so it waits in line too.
        let by_receipt = app
            .send(
                app.request(Method::GET, &format!("/api/holds/{hold}"))
                    .header("floodgate-receipt", &receipt),
            )
            .await;
        check("read hold by receipt", &by_receipt, 200);
        check("extend", &app.extend(buyer, &hold).await, 200);
    }
    check("release", &app.release(buyer, &hold).await, 204);
    wrong
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitted_buyers_get_answers_while_a_crowd_is_shed() {
    let app = spawn_app_with(
        Backends::Postgres,
        support::flood::small_budgets(RESERVATIONS_BUDGET),
    )
    .await;
    let event = app
        .create_event(
            ADMITTED,
            json!({"rate_per_min": 60000, "max_active": 1000, "offer_s": 120}),
        )
        .await;
    // Every buyer's offer is made before the crowd arrives; the claims go out into it.
    let mut buyers: Vec<Queued> = Vec::new();
    for _ in 0..ADMITTED {
        let queued = app.join_queue(&event).await;
        app.poll_until(&queued, "offered").await;
        buyers.push(queued);
    }

    // The buyers shop only once the crowd is being refused somewhere.
    let (stop, seen, flooders) = support::flood::until_shed(&app.base_url, &event, FLOODERS).await;

    let app = Arc::new(app);
    let shoppers: Vec<_> = buyers
        .into_iter()
        .enumerate()
        .map(|(i, queued)| {
            let app = app.clone();
            tokio::spawn(async move {
                let claimed = app.claim_raw(&queued, &queued.queue_token).await;
                if claimed.status != 200 {
                    return vec![format!("claim: {claimed:?}")];
                }
                let buyer = Admitted {
                    event: queued.event.clone(),
                    admission_token: claimed.str("admission_token"),
                    session_id: claimed.str("session_id"),
                };
                let seat = support::buyer::seat(i as u32 + 1);
                shop(&app, &buyer, seat).await
            })
        })
        .collect();
    let mut wrong = Vec::new();
    for shopper in shoppers {
        wrong.extend(shopper.await.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for flooder in flooders {
        flooder.await.unwrap();
    }
    let statuses = seen.snapshot();
    eprintln!("flood answered: {statuses:?}");
    assert!(
        wrong.is_empty(),
        "{} admitted requests were not answered as asked (a 503 is a refusal for load): {wrong:#?}",
        wrong.len()
    );
    assert!(
        !statuses.contains_key(&0),
        "the gateway always answers the crowd: {statuses:?}"
    );

    // The buyers did outnumber the budget: some of their requests waited in line for a permit.
    let metrics = app.get("/metrics").await.text;
    let waited: f64 = metrics
        .lines()
        .find(|l| l.starts_with("floodgate_admitted_wait_seconds_count"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no admitted request ever waited for a permit"));
    assert!(waited >= 1.0);
}
