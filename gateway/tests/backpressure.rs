//! Backpressure: with the payment provider paused, a checkout's outbox job ages past the
//! threshold, the gateway judges the core unhealthy, and admission slows its offers and then
//! holds them, saying why in the organizer's stats; once the provider answers again the
//! backlog drains and offers resume at the configured rate.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use support::buyer::{Held, seat};
use support::{Backends, TestApp, spawn_app_with};

const PATIENCE: Duration = Duration::from_secs(40);

/// Polls the stats until `done` holds for them; panics with the last stats after PATIENCE.
async fn stats_until(
    app: &TestApp,
    event: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let started = Instant::now();
    loop {
        let stats = app.stats(event).await;
        if done(&stats) {
            return stats;
        }
        assert!(
            started.elapsed() < PATIENCE,
            "waited {PATIENCE:?} for {what}; stats: {stats:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn share(stats: &Value) -> f64 {
    stats["backpressure"]["share"]
        .as_f64()
        .expect("backpressure.share in stats")
}

fn served(stats: &Value) -> u64 {
    stats["queue"]["served"]
        .as_u64()
        .expect("queue.served in stats")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_provider_slows_then_holds_offers_and_they_resume_after() {
    let app = spawn_app_with(Backends::Postgres, |config| {
        config.backpressure_outbox_age_s = 2;
    })
    .await;
    let sim = app
        .simulator
        .as_ref()
        .expect("the HTTP simulator")
        .simulator
        .clone();
    // One offer a second, so a stop in offers shows within a few seconds.
    let event = app
        .create_event(
            20,
            json!({"rate_per_min": 60, "max_active": 1000, "offer_s": 60}),
        )
        .await;
    let payer = app.admit(&event).await;
    let held = Held::from(&app.hold(&payer, &[seat(1)]).await.expect(201));
    for _ in 0..60 {
        app.join_queue(&event).await;
    }
    let healthy = app.stats(&event).await;
    assert_eq!(
        share(&healthy),
        1.0,
        "a healthy core gets the full rate: {healthy:#}"
    );

    sim.pause();
    let paused_at = Instant::now();
    app.checkout(&payer, &held.hold_id, "pm_card_visa", "bp-1")
        .await
        .expect(202);
    let slowed = stats_until(&app, &event, "offers to slow down", |s| share(s) < 1.0).await;
    assert_eq!(
        slowed["backpressure"]["reasons"],
        json!(["outbox_age"]),
        "the organizer sees why: {slowed:#}"
    );
    let held_offers = stats_until(&app, &event, "offers to be held", |s| share(s) == 0.0).await;
    let stopped_after = paused_at.elapsed();
    // No offers while held: the served counter stands still over several ticks.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let still = app.stats(&event).await;
    assert_eq!(share(&still), 0.0, "{still:#}");
    assert_eq!(
        served(&still),
        served(&held_offers),
        "no offers while held: {still:#}"
    );

    sim.resume();
    let resumed_at = Instant::now();
    app.wait_confirmed(&payer, &held.hold_id).await;
    let recovered = stats_until(&app, &event, "the full rate to return", |s| share(s) == 1.0).await;
    assert_eq!(
        recovered["backpressure"]["reasons"],
        json!([]),
        "{recovered:#}"
    );
    let moving = stats_until(&app, &event, "offers to flow again", |s| {
        served(s) > served(&still)
    })
    .await;
    println!(
        "backpressure: offers held {:.1}s after the provider stalled; full rate {:.1}s after it answered; served {} → {}",
        stopped_after.as_secs_f64(),
        resumed_at.elapsed().as_secs_f64(),
        served(&still),
        served(&moving)
    );
}

/// While `max_active` binds, offers go out as fast as places free, whatever the rate: only the
/// line of admitted buyers waiting for a permit of the reservations budget shows that more are
/// let in than the core serves. Buyers reading their session through a budget of one permit
/// make that line; admission slows, then recovers once they stop.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admitted_buyers_waiting_for_the_core_slow_offers() {
    const BUYERS: usize = 16;
    let app = spawn_app_with(Backends::Postgres, |config| {
        config.max_inflight_reservations = 1;
        config.backpressure_admitted_wait_ms = 1;
    })
    .await;
    let event = app
        .create_event(
            40,
            json!({"rate_per_min": 600, "max_active": 1000, "offer_s": 60}),
        )
        .await;
    let mut buyers = Vec::new();
    for _ in 0..BUYERS {
        buyers.push(app.admit(&event).await);
    }
    let healthy = stats_until(&app, &event, "a healthy core", |s| share(s) == 1.0).await;
    assert_eq!(healthy["backpressure"]["reasons"], json!([]), "{healthy:#}");

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let app = std::sync::Arc::new(app);
    let readers: Vec<_> = buyers
        .into_iter()
        .map(|buyer| {
            let (app, stop) = (app.clone(), stop.clone());
            tokio::spawn(async move {
                let mut refused = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let session = app
                        .send(
                            app.request(reqwest::Method::GET, "/api/session")
                                .bearer_auth(&buyer.admission_token),
                        )
                        .await;
                    refused += u32::from(session.status != 200);
                }
                refused
            })
        })
        .collect();
    let slowed = stats_until(&app, &event, "offers to slow down", |s| share(s) < 1.0).await;
    let reasons = slowed["backpressure"]["reasons"].clone();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut refused = 0;
    for reader in readers {
        refused += reader.await.expect("reader");
    }
    assert!(
        reasons
            .as_array()
            .is_some_and(|r| r.contains(&json!("admitted_wait"))),
        "the organizer sees why: {slowed:#}"
    );
    assert_eq!(refused, 0, "admitted buyers waited, none was refused");
    let metrics = app.get("/metrics").await.text;
    assert!(
        metrics.contains("floodgate_backpressure_unhealthy_total{reason=\"admitted_wait\"}"),
        "counted in /metrics"
    );
    let recovered = stats_until(&app, &event, "the full rate to return", |s| share(s) == 1.0).await;
    assert_eq!(
        recovered["backpressure"]["reasons"],
        json!([]),
        "{recovered:#}"
    );
}
