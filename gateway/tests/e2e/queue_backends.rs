//! One sale by two gateways on each shared queue the suite starts besides the single Redis
//! node: a Redis Cluster, one Valkey node and a Valkey cluster (`bash scripts/test.sh` starts
//! them and names them in REDIS_CLUSTER_URL, VALKEY_URL and VALKEY_CLUSTER_URL). Buyers join
//! through either gateway into one line, are offered in that order, and one of them claims,
//! holds, pays and reads the confirmed order, each step on whichever gateway comes next.

use crate::support;

use serde_json::json;

use support::buyer::{Held, Queued, seat};
use support::rows::Rows;
use support::{Backends, Gateway, spawn_app_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_by_two_gateways_on_a_redis_cluster() {
    sale_by_two_gateways("REDIS_CLUSTER_URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_by_two_gateways_on_valkey() {
    sale_by_two_gateways("VALKEY_URL").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_by_two_gateways_on_a_valkey_cluster() {
    sale_by_two_gateways("VALKEY_CLUSTER_URL").await;
}

/// The queue URL the environment names in `var`; a missing one fails the test, never skips it.
fn queue_url(var: &str) -> String {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => url,
        _ => panic!(
            "{var} is not set: run this test through `bash scripts/test.sh` (or \
             `bash scripts/with-services.sh cargo test -p gateway --test e2e queue_backends`), which \
             starts that server, or set {var} to one that answers"
        ),
    }
}

async fn sale_by_two_gateways(var: &str) {
    let url = queue_url(var);
    let queue = url.clone();
    let app = spawn_app_with(Backends::Postgres, move |c| {
        c.redis_url = Some(queue.clone());
    })
    .await;
    let peer = app.spawn_peer().await;
    let gateways: [&Gateway; 2] = [&app, &peer];

    // One active session at a time, and a first buyer takes it: everyone after waits in line.
    // Two offers a second once the cap is lifted, so the line is served visibly in order.
    let event = app
        .create_event(
            10,
            json!({"rate_per_min": 120, "max_active": 1, "offer_s": 60}),
        )
        .await;
    app.admit(&event).await;
    let mut line: Vec<Queued> = Vec::new();
    for i in 0..4 {
        line.push(gateways[i % 2].join_queue(&event).await);
    }
    // Each place, read on the other gateway than the one joined through, is the join order.
    for (i, queued) in line.iter().enumerate() {
        let status = gateways[(i + 1) % 2].queue_status(queued).await.expect(200);
        assert_eq!(status.body["status"], "waiting", "{var}={url}: {status:?}");
        assert_eq!(
            status.body["position"], i as u64,
            "{var}={url}: the line is one across both gateways: {status:?}"
        );
    }

    peer.tune(&event, json!({"max_active": 50}))
        .await
        .expect(200);
    served_in_order(&gateways, &line, var).await;

    // The first in line claims on the gateway it did not join through, holds on the other,
    // pays on the first, and reads its order with the receipt key alone.
    let buyer = peer.claim(&line[0]).await;
    let wanted = [seat(1), seat(2)];
    let held = Held::from(&app.hold(&buyer, &wanted).await.expect(201));
    assert_eq!(held.seats, wanted);
    peer.checkout(&buyer, &held.hold_id, "pm_card_visa", "pay-1")
        .await
        .expect(202);
    let order = app.wait_confirmed(&buyer, &held.hold_id).await;
    let read = peer
        .read_order_with_receipt(&order, &held.receipt_key)
        .await
        .expect(200);
    assert_eq!(read.body["status"], "confirmed", "{read:?}");
    assert_eq!(read.body["seats"], json!(wanted), "{read:?}");
    assert_eq!(read.body["total_cents"], 5000, "{read:?}");

    let rows = Rows::of(&app.store).await;
    assert_eq!(rows.get("seats.sold"), 2, "{rows:?}");
    assert_eq!(rows.get("orders"), 1, "{rows:?}");
}

/// Polls the line until everyone is offered, asserting at each look that the offered buyers are
/// a prefix of the line. Read from the back: a buyer seen offered before someone ahead of them
/// is then seen still waiting was truly offered out of turn.
async fn served_in_order(gateways: &[&Gateway; 2], line: &[Queued], var: &str) {
    let started = tokio::time::Instant::now();
    loop {
        let mut offered = vec![false; line.len()];
        for (i, queued) in line.iter().enumerate().rev() {
            let status = gateways[i % 2].queue_status(queued).await.expect(200);
            offered[i] = status.body["status"] == "offered";
        }
        let served = offered.iter().take_while(|o| **o).count();
        assert!(
            offered[served..].iter().all(|o| !o),
            "{var}: offers out of queue order: {offered:?}"
        );
        if served == line.len() {
            return;
        }
        assert!(
            started.elapsed() < support::http::DEADLINE * 2,
            "{var}: the line was not served: {offered:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
