//! The priority lane, written once and run against every backend: it is offered first within
//! the organizer's share of the outflow, order inside each lane stays fair (the seeded
//! pre-queue permutation, then FIFO), the lane rides in the signed token, and the same person
//! keeps one place however many devices join at once.

mod support;

use std::collections::HashMap;
use std::time::Duration;

use admission::{Joined, Lane, PRIORITY_BASE, PlaceKey, QueueStatus};
use support::{Harness, Kind, client};

const TICK: Duration = Duration::from_millis(100);

async fn join_in(h: &Harness, lane: Lane) -> Joined {
    let gate = h.adm.open_join(&h.event, client()).await.expect("gate");
    h.adm
        .join_through(gate, None, lane)
        .await
        .expect("join in a lane")
}

async fn join_n_in(h: &Harness, lane: Lane, n: usize) -> Vec<Joined> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(join_in(h, lane).await);
    }
    out
}

/// Both lanes saturated for two minutes of queue time at 50 offers a second, with a share of
/// 0.3: the priority lane takes 30 % of the offers (within ±10 % of that), and every offer in
/// each lane goes out in its own FIFO order. The ratio is judged, never the speed.
async fn priority_share_over_two_minutes(kind: Kind) {
    let h = Harness::new(kind, "share", |c| {
        c.rate_per_min = 3_000;
        c.max_active = 1_000_000;
        c.priority_permille = 300;
    })
    .await;
    h.tick().await;
    // More than two minutes can offer in either lane: both stay saturated throughout.
    let general = h.join_n(4_500).await;
    let priority = join_n_in(&h, Lane::Priority, 2_000).await;
    assert!(priority.iter().all(|j| j.claims.lane == Lane::Priority));
    assert!(general.iter().all(|j| j.claims.lane == Lane::General));
    let offered = h.run(1_200, TICK).await;
    let (p, g): (Vec<u64>, Vec<u64>) = offered.iter().partition(|s| **s >= PRIORITY_BASE);
    assert!(offered.len() >= 5_000, "{} offers", offered.len());
    let share = p.len() as f64 / offered.len() as f64;
    assert!(
        (share - 0.3).abs() <= 0.03,
        "priority share {share:.3} of {} offers",
        offered.len()
    );
    let p_expected: Vec<u64> = priority
        .iter()
        .map(|j| j.claims.seq)
        .take(p.len())
        .collect();
    let g_expected: Vec<u64> = general.iter().map(|j| j.claims.seq).take(g.len()).collect();
    assert_eq!(p, p_expected, "the priority lane in FIFO order");
    assert_eq!(g, g_expected, "the general lane in FIFO order");
}
every_backend!(priority_share_over_two_minutes);

/// Before opening both lanes fill their pre-queues; at opening each lane is offered in its own
/// seeded permutation, then its later arrivals FIFO. A waiting priority place counts only the
/// priority places ahead of it, and its token carries the lane.
async fn fair_order_inside_each_lane(kind: Kind) {
    let h = Harness::new(kind, "lanes", |c| {
        c.rate_per_min = 60_000;
        c.max_active = 100_000;
        c.priority_permille = 500;
    })
    .await;
    let opens_at = support::at(h.clock.now_ms() + 60_000);
    h.update(|c| c.opens_at = opens_at);
    h.tick().await;
    let pre_general = h.join_n(40).await;
    let pre_priority = join_n_in(&h, Lane::Priority, 40).await;
    assert!(
        pre_priority
            .iter()
            .all(|j| j.status == QueueStatus::PreQueue)
    );
    assert!(h.run(5, TICK).await.is_empty(), "nothing before opening");

    h.advance(Duration::from_secs(60)).await;
    let post_general = h.join_n(10).await;
    let post_priority = join_n_in(&h, Lane::Priority, 10).await;
    let second = h
        .adm
        .status(&post_priority[1].claims)
        .await
        .expect("status");
    assert_eq!(second.status, QueueStatus::Waiting);
    assert!(
        second.position.is_some_and(|p| p <= 50),
        "a priority place counts its own lane: {second:?}"
    );
    let offered = h.run(30, TICK).await;
    assert_eq!(offered.len(), 100, "everyone offered");

    let seed = h
        .adm
        .fairness(&h.event)
        .await
        .expect("fairness")
        .seed
        .expect("seed revealed");
    for (name, pre, post) in [
        ("general", &pre_general, &post_general),
        ("priority", &pre_priority, &post_priority),
    ] {
        let by_seq: HashMap<u64, &str> = pre
            .iter()
            .chain(post.iter())
            .map(|j| (j.claims.seq, j.ticket_id.as_str()))
            .collect();
        let lane: Vec<&str> = offered
            .iter()
            .filter_map(|s| by_seq.get(s).copied())
            .collect();
        let mut expected =
            admission::pre_queue_order(&seed, pre.iter().map(|j| j.ticket_id.as_str()));
        expected.extend(post.iter().map(|j| j.ticket_id.as_str()));
        assert_eq!(lane, expected, "{name}: permutation, then FIFO");
    }
    let first = h.adm.claim(&pre_priority[0].claims).await;
    assert!(
        first.is_ok(),
        "an offered priority place is claimed: {first:?}"
    );
}
every_backend!(fair_order_inside_each_lane);

/// One person, twenty devices at once: one place, the same ticket and number on every answer.
async fn one_place_per_person(kind: Kind) {
    let h = Harness::new(kind, "person", |c| c.rate_per_min = 600).await;
    h.tick().await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let adm = h.adm.clone();
        let event = h.event.clone();
        tasks.push(tokio::spawn(async move {
            let gate = adm.open_join(&event, client()).await.expect("gate");
            adm.join_through(gate, Some(PlaceKey::Person("fan-42")), Lane::Priority)
                .await
                .expect("join")
        }));
    }
    let mut places = Vec::new();
    for t in tasks {
        places.push(t.await.expect("task"));
    }
    let first = &places[0];
    assert!(
        places
            .iter()
            .all(|j| j.ticket_id == first.ticket_id && j.claims.seq == first.claims.seq),
        "one place"
    );
    assert_eq!(first.claims.lane, Lane::Priority);
    let other = h.join().await;
    assert_ne!(
        other.ticket_id, first.ticket_id,
        "another buyer, another place"
    );
    let gate = h.adm.open_join(&h.event, client()).await.expect("gate");
    assert!(
        h.adm
            .has_place(&gate, PlaceKey::Person("fan-42"))
            .await
            .expect("has place")
    );
    // An Idempotency-Key that spells the person's name is a different key.
    let keyed = h
        .adm
        .join(&h.event, client(), Some("fan-42"))
        .await
        .expect("join");
    assert_ne!(keyed.ticket_id, first.ticket_id);
}
every_backend!(one_place_per_person);
