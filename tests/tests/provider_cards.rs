//! The real HTTP client against the HTTP simulator: each test card, and every failure that
//! must read as ambiguous rather than as a decline.

mod support;

use std::time::Duration;

use floodgate_tests::sim_control::SimControl;
use reservation::payments::simulator::KnobsPatch;
use reservation::payments::{Outcome, Provider, StripeClient};
use support::{KEY, client, payment_id, request, simulator};

#[tokio::test]
async fn visa_authorizes_then_captures_once() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let pi = payment_id(&p.authorize(&request("att-visa", "pm_card_visa")).await);
    assert_eq!(
        p.retrieve(&pi).await,
        Outcome::Authorized {
            payment_id: pi.clone()
        }
    );
    assert_eq!(
        p.capture(&pi).await,
        Outcome::Captured {
            payment_id: pi.clone()
        }
    );
    // A second capture is refused by the provider and reported as where the payment stands.
    assert_eq!(
        p.capture(&pi).await,
        Outcome::Captured {
            payment_id: pi.clone()
        }
    );
    let ledger = SimControl::new(&sim.base_url).ledger().await.unwrap();
    let rec = &ledger.attempts["att-visa"];
    assert_eq!((rec.authorizations, rec.captures, rec.voids), (1, 1, 0));
    assert_eq!(rec.payment_ids, vec![pi]);
    assert!(ledger.charged_twice().is_empty());
    assert!(ledger.unsettled().is_empty());
}

#[tokio::test]
async fn declined_card_is_a_decline_naming_the_intent() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let out = p.authorize(&request("att-decl", "pm_card_declined")).await;
    let Outcome::Declined {
        payment_id: Some(pi),
        reason,
    } = out
    else {
        panic!("expected a decline with its intent, got {out:?}");
    };
    assert_eq!(reason, "generic_decline");
    assert!(matches!(p.retrieve(&pi).await, Outcome::Declined { .. }));
    let rec = &sim.simulator.ledger().attempts["att-decl"];
    assert_eq!((rec.authorizations, rec.declines), (0, 1));
}

#[tokio::test]
async fn decline_rate_knob_declines_good_cards() {
    let sim = simulator().await;
    sim.simulator.set_knobs(&KnobsPatch {
        decline_rate: Some(1.0),
        ..Default::default()
    });
    let out = client(&sim, 2_000)
        .authorize(&request("att-rate", "pm_card_visa"))
        .await;
    assert!(
        matches!(
            out,
            Outcome::Declined {
                payment_id: Some(_),
                ..
            }
        ),
        "{out:?}"
    );
}

#[tokio::test]
async fn slow_card_past_the_timeout_is_ambiguous_and_search_finds_it() {
    let sim = simulator().await;
    sim.simulator.set_knobs(&KnobsPatch {
        slow_ms: Some(1_000),
        ..Default::default()
    });
    let p = client(&sim, 300);
    let out = p.authorize(&request("att-slow", "pm_card_slow")).await;
    assert!(matches!(out, Outcome::Ambiguous { .. }), "{out:?}");
    assert!(matches!(
        p.search("att-slow").await,
        Outcome::Authorized { .. }
    ));
}

#[tokio::test]
async fn slow_card_within_the_timeout_authorizes_after_the_delay() {
    let sim = simulator().await;
    sim.simulator.set_knobs(&KnobsPatch {
        slow_ms: Some(300),
        ..Default::default()
    });
    let started = std::time::Instant::now();
    let out = client(&sim, 3_000)
        .authorize(&request("att-slow2", "pm_card_slow"))
        .await;
    assert!(matches!(out, Outcome::Authorized { .. }), "{out:?}");
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn lost_answer_is_ambiguous_while_the_intent_exists_and_a_retry_replays_it() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let req = request("att-lost", "pm_card_lost");
    let out = p.authorize(&req).await;
    // The connection is cut before the answer: a transport failure, not an unreadable body.
    assert!(
        matches!(&out, Outcome::Ambiguous { why } if why.starts_with("transport")),
        "{out:?}"
    );
    let found = payment_id(&p.search("att-lost").await);
    // Asking again with the same key returns the stored first answer, not a second charge.
    assert_eq!(payment_id(&p.authorize(&req).await), found);
    let ledger = sim.simulator.ledger();
    assert_eq!(ledger.attempts["att-lost"].payment_ids, vec![found]);
    assert_eq!(ledger.counters.lost_answers, 1);
    assert_eq!(ledger.counters.idempotent_replays, 1);
    assert!(ledger.charged_twice().is_empty());
}

#[tokio::test]
async fn error_card_is_ambiguous_and_creates_nothing() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let out = p.authorize(&request("att-err", "pm_card_error")).await;
    assert_eq!(
        out,
        Outcome::Ambiguous {
            why: "provider answered 500".into()
        }
    );
    assert_eq!(p.search("att-err").await, Outcome::NotFound);
    let ledger = sim.simulator.ledger();
    assert!(!ledger.attempts.contains_key("att-err"));
    assert_eq!(ledger.counters.server_errors, 1);
}

#[tokio::test]
async fn error_rate_latency_and_dead_provider_are_ambiguous_never_declines() {
    let sim = simulator().await;
    let p = client(&sim, 200);
    sim.simulator.set_knobs(&KnobsPatch {
        error_rate: Some(1.0),
        ..Default::default()
    });
    for out in [
        p.authorize(&request("att-5xx", "pm_card_visa")).await,
        p.search("att-5xx").await,
    ] {
        assert!(matches!(out, Outcome::Ambiguous { .. }), "{out:?}");
    }
    sim.simulator.set_knobs(&KnobsPatch {
        error_rate: Some(0.0),
        latency_min_ms: Some(500),
        latency_max_ms: Some(600),
        ..Default::default()
    });
    let out = p.authorize(&request("att-latency", "pm_card_visa")).await;
    assert!(matches!(out, Outcome::Ambiguous { .. }), "{out:?}");
    // Nothing listens on the simulator's port once it is dropped.
    let url = sim.base_url.clone();
    drop(sim);
    tokio::time::sleep(Duration::from_millis(50)).await;
    let dead = Provider::Http(StripeClient::new(&url, KEY, Duration::from_millis(500)).unwrap());
    let out = dead.authorize(&request("att-dead", "pm_card_visa")).await;
    assert!(matches!(out, Outcome::Ambiguous { .. }), "{out:?}");
}

#[tokio::test]
async fn bad_api_key_and_unknown_card_are_rejected() {
    let sim = simulator().await;
    let wrong = Provider::Http(
        StripeClient::new(&sim.base_url, "sk_wrong", Duration::from_secs(2)).unwrap(),
    );
    let out = wrong.authorize(&request("att-key", "pm_card_visa")).await;
    assert!(
        matches!(&out, Outcome::Rejected { code, .. } if code == "api_key_invalid"),
        "{out:?}"
    );
    let out = client(&sim, 2_000)
        .authorize(&request("att-pm", "pm_nonsense"))
        .await;
    assert!(
        matches!(&out, Outcome::Rejected { code, .. } if code == "resource_missing"),
        "{out:?}"
    );
    assert_eq!(
        client(&sim, 2_000).retrieve("pi_missing").await,
        Outcome::NotFound
    );
    assert!(sim.simulator.ledger().attempts.is_empty());
}
