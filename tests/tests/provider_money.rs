//! The real HTTP client against the HTTP simulator: idempotency, capture, void and refund in
//! the ledger, the pause switch and the control routes.

mod support;

use std::time::Duration;

use floodgate_tests::sim_control::SimControl;
use reservation::payments::simulator::KnobsPatch;
use reservation::payments::{AuthorizeRequest, Outcome};
use support::{client, payment_id, request, simulator};

#[tokio::test]
async fn same_key_replays_and_another_body_is_refused() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let req = request("att-idem", "pm_card_visa");
    let first = payment_id(&p.authorize(&req).await);
    assert_eq!(payment_id(&p.authorize(&req).await), first);
    let other = AuthorizeRequest {
        amount_cents: 1,
        ..req
    };
    let out = p.authorize(&other).await;
    assert!(
        matches!(&out, Outcome::Rejected { code, .. } if code == "idempotency_key_in_use"),
        "{out:?}"
    );
    let ledger = sim.simulator.ledger();
    assert_eq!(ledger.attempts["att-idem"].authorizations, 1);
    assert_eq!(ledger.counters.idempotent_replays, 1);
    assert_eq!(ledger.counters.idempotency_conflicts, 1);
}

#[tokio::test]
async fn concurrent_duplicates_charge_once() {
    let sim = simulator().await;
    let p = client(&sim, 5_000);
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let p = p.clone();
            tokio::spawn(async move { p.authorize(&request("att-race", "pm_card_visa")).await })
        })
        .collect();
    let mut ids = Vec::new();
    for t in tasks {
        ids.push(payment_id(&t.await.unwrap()));
    }
    ids.dedup();
    assert_eq!(ids.len(), 1);
    assert_eq!(
        sim.simulator.ledger().attempts["att-race"].authorizations,
        1
    );
}

#[tokio::test]
async fn void_and_refund_are_recorded_once() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let voided = payment_id(&p.authorize(&request("att-void", "pm_card_visa")).await);
    // A refund before capture is refused: the payment is only authorized, void it instead.
    assert_eq!(
        p.refund("att-void", &voided).await,
        Outcome::Authorized {
            payment_id: voided.clone()
        }
    );
    assert_eq!(
        p.cancel(&voided).await,
        Outcome::Canceled {
            payment_id: voided.clone()
        }
    );
    assert_eq!(
        p.cancel(&voided).await,
        Outcome::Canceled {
            payment_id: voided.clone()
        }
    );
    assert_eq!(
        p.capture(&voided).await,
        Outcome::Canceled {
            payment_id: voided.clone()
        }
    );

    let refunded = payment_id(&p.authorize(&request("att-refund", "pm_card_visa")).await);
    assert!(matches!(
        p.capture(&refunded).await,
        Outcome::Captured { .. }
    ));
    let Outcome::Refunded {
        refund_id: Some(re),
    } = p.refund("att-refund", &refunded).await
    else {
        panic!("expected a refund");
    };
    // Same key: the stored refund is replayed.
    assert_eq!(
        p.refund("att-refund", &refunded).await,
        Outcome::Refunded {
            refund_id: Some(re)
        }
    );
    assert_eq!(
        p.cancel(&refunded).await,
        Outcome::Captured {
            payment_id: refunded.clone()
        }
    );

    let ledger = sim.simulator.ledger();
    let v = &ledger.attempts["att-void"];
    assert_eq!(
        (v.authorizations, v.captures, v.voids, v.refunds),
        (1, 0, 1, 0)
    );
    let r = &ledger.attempts["att-refund"];
    assert_eq!(
        (r.authorizations, r.captures, r.voids, r.refunds),
        (1, 1, 0, 1)
    );
    assert!(ledger.unsettled().is_empty());
    assert!(ledger.charged_twice().is_empty());
}

#[tokio::test]
async fn lost_capture_still_captures() {
    let sim = simulator().await;
    let p = client(&sim, 2_000);
    let pi = payment_id(&p.authorize(&request("att-lostcap", "pm_card_visa")).await);
    sim.simulator.set_knobs(&KnobsPatch {
        lost_rate: Some(1.0),
        ..Default::default()
    });
    assert!(matches!(p.capture(&pi).await, Outcome::Ambiguous { .. }));
    assert_eq!(p.retrieve(&pi).await, Outcome::Captured { payment_id: pi });
}

#[tokio::test]
async fn pause_holds_calls_until_resume() {
    let sim = simulator().await;
    let control = SimControl::new(&sim.base_url);
    control.pause().await.unwrap();
    let p = client(&sim, 5_000);
    let call =
        tokio::spawn(async move { p.authorize(&request("att-pause", "pm_card_visa")).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!call.is_finished(), "a paused provider must not answer");
    assert!(
        control.ledger().await.unwrap().attempts.is_empty(),
        "nor act"
    );
    control.resume().await.unwrap();
    assert!(matches!(call.await.unwrap(), Outcome::Authorized { .. }));
}

#[tokio::test]
async fn knobs_are_settable_over_http() {
    let sim = simulator().await;
    let control = SimControl::new(&sim.base_url);
    let knobs = control
        .set_knobs(&KnobsPatch {
            decline_rate: Some(0.25),
            latency_max_ms: Some(7),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(knobs.decline_rate, 0.25);
    assert_eq!(control.knobs().await.unwrap(), sim.simulator.knobs());
    assert_eq!(sim.simulator.knobs().latency_max_ms, 7);
}

/// Retries an ambiguous call until the provider gives a definite answer, as the worker will.
async fn definite<F, Fut>(mut call: F) -> Outcome
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Outcome>,
{
    for _ in 0..50 {
        match call().await {
            Outcome::Ambiguous { .. } => continue,
            definite => return definite,
        }
    }
    panic!("no definite answer after 50 tries");
}

#[tokio::test]
async fn chaos_with_retries_on_the_same_key_never_charges_twice() {
    let sim = simulator().await;
    sim.simulator.set_knobs(&KnobsPatch {
        decline_rate: Some(0.1),
        lost_rate: Some(0.05),
        error_rate: Some(0.05),
        latency_max_ms: Some(5),
        ..Default::default()
    });
    let p = client(&sim, 2_000);
    let tasks: Vec<_> = (0..200)
        .map(|i| {
            let p = p.clone();
            tokio::spawn(async move {
                let req = request(&format!("att-chaos-{i}"), "pm_card_visa");
                match definite(|| p.authorize(&req)).await {
                    Outcome::Authorized { payment_id } => {
                        let captured = definite(|| p.capture(&payment_id)).await;
                        assert_eq!(captured, Outcome::Captured { payment_id });
                        true
                    }
                    Outcome::Declined { .. } => false,
                    other => panic!("unexpected {other:?}"),
                }
            })
        })
        .collect();
    let mut authorized = 0;
    for t in tasks {
        authorized += u32::from(t.await.unwrap());
    }
    let ledger = sim.simulator.ledger();
    assert!(
        ledger.charged_twice().is_empty(),
        "{:?}",
        ledger.charged_twice()
    );
    assert!(ledger.unsettled().is_empty());
    assert_eq!(ledger.attempts.len(), 200);
    assert!(ledger.attempts.values().all(|r| r.payment_ids.len() == 1));
    let captures: u32 = ledger.attempts.values().map(|r| r.captures).sum();
    assert_eq!(
        (ledger.total_authorizations(), captures),
        (u64::from(authorized), authorized)
    );
    let c = &ledger.counters;
    assert!(
        c.lost_answers > 0 && c.server_errors > 0,
        "the chaos knobs fired: {c:?}"
    );
    assert!(c.idempotent_replays > 0);
    assert!(
        (140..200).contains(&authorized),
        "decline_rate 0.1 gave {authorized}/200"
    );
}
