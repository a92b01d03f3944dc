//! Redis-only stories: two instances sharing one queue, and a Redis wipe mid-queue (on a
//! throwaway `redis-server` of this test's own, never the shared one).

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use admission::testing::ThrowawayRedis;
use admission::{Admission, AdmissionDb, EventState, Joined, Lane, PRIORITY_BASE, QueueStatus};
use support::{Harness, Kind, client};

const TICK: Duration = Duration::from_millis(100);

/// 10,000 joins through two instances sharing one Redis: offers strictly in queue order,
/// nobody twice, every claim a distinct session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_10000_through_two_instances() {
    let h = Harness::new(Kind::Redis, "fifo", |c| {
        c.rate_per_min = 120_000;
        c.max_active = 1_000_000;
    })
    .await;
    let other = h.instance().await;
    // Only the first instance has ticked: it joins by plain INCR, the other by the checked
    // script; both draw from the same sequence.
    h.tick().await;
    let instances = [h.adm.clone(), other];
    // 64 concurrent joiners, alternating instances.
    let mut tasks = Vec::new();
    for t in 0..64usize {
        let adm = instances[t % 2].clone();
        let event = h.event.clone();
        tasks.push(tokio::spawn(async move {
            let mut mine = Vec::new();
            for _ in 0..(10_000 / 64 + usize::from(t < 10_000 % 64)) {
                mine.push(adm.join(&event, client(), None).await.expect("join"));
            }
            mine
        }));
    }
    let mut joined = Vec::new();
    for t in tasks {
        joined.extend(t.await.expect("joiner"));
    }
    assert_eq!(joined.len(), 10_000);
    let seqs: HashSet<u64> = joined.iter().map(|j| j.claims.seq).collect();
    assert_eq!(seqs.len(), 10_000, "every join got its own place");

    // Both instances tick concurrently; each offer's global index comes from the served count.
    let mut by_index: Vec<(u64, u64)> = Vec::new();
    for _ in 0..80 {
        h.advance(TICK).await;
        let (a, b) = tokio::join!(instances[0].tick(&h.event), instances[1].tick(&h.event));
        for r in [a.expect("tick a"), b.expect("tick b")] {
            let first = r.snapshot.served - r.offered.len() as u64;
            by_index.extend(
                r.offered
                    .iter()
                    .enumerate()
                    .map(|(i, s)| (first + i as u64, *s)),
            );
        }
    }
    by_index.sort();
    let order: Vec<u64> = by_index.iter().map(|&(_, s)| s).collect();
    assert_eq!(order.len(), 10_000, "all offered once");
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "offers strictly in queue order"
    );
    let indices: Vec<u64> = by_index.iter().map(|&(i, _)| i).collect();
    assert_eq!(
        indices,
        (0..10_000).collect::<Vec<_>>(),
        "no offer counted twice"
    );

    // Claims through either instance: one distinct session each.
    let mut sessions = HashSet::new();
    for (i, j) in joined.iter().enumerate().take(2_000) {
        let a = instances[i % 2].claim(&j.claims).await.expect("claim");
        assert!(sessions.insert(a.session_id));
    }
    let again = instances[1]
        .claim(&joined[0].claims)
        .await
        .expect("claim again");
    assert!(
        sessions.contains(&again.session_id),
        "the same session on the other instance"
    );
    assert_eq!(h.db.sessions(&h.event).len(), 2_000);
}

async fn wait_for(url: &str) {
    for _ in 0..100 {
        if let Ok(c) = redis::Client::open(url)
            && let Ok(mut c) = c.get_multiplexed_async_connection().await
            && redis::cmd("PING")
                .query_async::<String>(&mut c)
                .await
                .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("own redis-server at {url} did not start");
}

/// A harness on a throwaway `redis-server` of the test's own (so it can be wiped): 600 offers
/// a minute, 60 s offers, `max_active` slots.
async fn own_redis_harness(name: &str, max_active: u32) -> (ThrowawayRedis, Harness) {
    own_redis_harness_in_lanes(name, max_active, 0).await
}

/// The same, the priority lane taking `priority_permille` of the offers.
async fn own_redis_harness_in_lanes(
    name: &str,
    max_active: u32,
    priority_permille: u32,
) -> (ThrowawayRedis, Harness) {
    let own = ThrowawayRedis::start();
    wait_for(&own.url).await;
    let clock = support::clock_for(Kind::Redis);
    let h = Harness::with(Kind::Redis, name, clock, own.url.clone(), |c| {
        c.rate_per_min = 600;
        c.max_active = max_active;
        c.offer_s = 60;
        c.priority_permille = priority_permille;
    })
    .await;
    (own, h)
}

/// Ticks until at least `n` offers have been made (at most 2,000 ticks), and returns them.
async fn offers_until(h: &Harness, n: usize) -> Vec<u64> {
    let mut offered = Vec::new();
    for _ in 0..2_000 {
        h.advance(TICK).await;
        offered.extend(h.tick().await.offered);
        if offered.len() >= n {
            break;
        }
    }
    offered
}

/// `n` joins in the priority lane.
async fn join_priority(h: &Harness, n: usize) -> Vec<Joined> {
    let mut joined = Vec::new();
    for _ in 0..n {
        let gate = h.adm.open_join(&h.event, client()).await.expect("gate");
        let j = h.adm.join_through(gate, None, Lane::Priority).await;
        joined.push(j.expect("a priority join"));
    }
    joined
}

/// Redis loses everything, as a restart without persistence would.
async fn flushall(url: &str) {
    let mut c = redis::Client::open(url)
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("own redis");
    let _: () = redis::cmd("FLUSHALL")
        .query_async(&mut c)
        .await
        .expect("FLUSHALL");
}

/// FLUSHALL mid-queue: afterwards no session is issued twice, the cap holds, tickets offered
/// before the wipe (claimed or not) do not come back ahead of the line, the others keep their
/// relative order, and arrivals after the wipe queue behind all earlier tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushall_mid_queue_recovers() {
    let (own, h) = own_redis_harness("flush", 30).await;
    let max_active = 30;
    let before = h.join_n(200).await;
    let mut claimed: HashMap<u64, String> = HashMap::new();
    let mut offered_before = Vec::new();
    for _ in 0..30 {
        h.advance(TICK).await;
        let r = h.tick().await;
        for seq in &r.offered {
            // Every other buyer claims before the wipe.
            if seq % 2 == 0 {
                let a = h
                    .adm
                    .claim(&before[(*seq - 1) as usize].claims)
                    .await
                    .expect("claim");
                claimed.insert(*seq, a.session_id);
            }
        }
        offered_before.extend(r.offered);
    }
    // The cap binds: 30 slots, claims counted until settled.
    assert!(
        offered_before.len() >= 20,
        "{} offered",
        offered_before.len()
    );

    flushall(&own.url).await;

    // A new arrival right after the wipe triggers the recovery and queues behind everyone.
    let newcomer = h.join().await;
    assert!(
        newcomer.claims.seq > 200,
        "seq restored past the checkpoint + margin"
    );
    // Returning tokens re-register during the grace period; no offers meanwhile. Those offered
    // before the wipe are told where they stand instead of rejoining the line.
    for j in &before {
        let st = h.adm.status(&j.claims).await.expect("status");
        let seq = j.claims.seq;
        let expected = if claimed.contains_key(&seq) {
            QueueStatus::Admitted
        } else if offered_before.contains(&seq) {
            QueueStatus::OfferLapsed
        } else {
            QueueStatus::Waiting
        };
        assert_eq!(st.status, expected, "ticket {seq}: {st:?}");
        // A returned place is told the same place at its next read, from the set it is back in.
        if expected == QueueStatus::Waiting {
            let again = h.adm.status(&j.claims).await.expect("status again");
            assert_eq!(
                (again.status, again.position),
                (st.status, st.position),
                "ticket {seq} read twice after the wipe"
            );
        }
    }
    for seq in claimed.keys() {
        let a = h
            .adm
            .claim(&before[(*seq - 1) as usize].claims)
            .await
            .expect("a claimed ticket keeps its session");
        assert_eq!(
            Some(&a.session_id),
            claimed.get(seq),
            "nobody admitted twice"
        );
    }
    let later = h.join_n(20).await;
    assert!(
        h.run(50, TICK).await.is_empty(),
        "offers wait out the reconnect grace"
    );

    let expected = 200 - offered_before.len() + 21;
    let mut after = Vec::new();
    let mut sessions: HashSet<String> = claimed.values().cloned().collect();
    for _ in 0..2_000 {
        h.advance(TICK).await;
        let r = h.tick().await;
        let active = h.db.active_sessions(&h.event).await.expect("active");
        assert!(
            active + r.snapshot.open_offers <= max_active,
            "cap exceeded after the wipe"
        );
        for seq in &r.offered {
            assert!(
                !offered_before.contains(seq),
                "ticket {seq} was offered before the wipe and came back"
            );
            let j = before
                .iter()
                .chain(std::iter::once(&newcomer))
                .chain(&later)
                .find(|j| j.claims.seq == *seq)
                .expect("an issued token");
            let a = h.adm.claim(&j.claims).await.expect("claim after the wipe");
            assert!(
                sessions.insert(a.session_id.clone()),
                "a fresh session per ticket"
            );
            h.adm
                .session_ended(&h.event, &a.session_id)
                .await
                .expect("end");
        }
        after.extend(r.offered);
        if after.len() == expected {
            break;
        }
    }
    assert_eq!(
        after.len(),
        expected,
        "every earlier token not yet offered, and every newcomer, offered once"
    );
    assert!(
        after.windows(2).all(|w| w[0] < w[1]),
        "relative order kept: {after:?}"
    );
    assert_eq!(
        after[200 - offered_before.len()],
        newcomer.claims.seq,
        "the newcomer after every earlier token"
    );
    let per_ticket: HashSet<String> =
        h.db.sessions(&h.event)
            .into_iter()
            .map(|(t, _)| t)
            .collect();
    assert_eq!(
        per_ticket.len(),
        h.db.sessions(&h.event).len(),
        "one session per ticket"
    );
    drop(own);
}

/// A second wipe before every place from the first came back, in both lanes: a place still
/// waiting from before the first (its page asleep while the line moved past it) is waiting
/// again, one brought back and offered between the wipes is told its turn passed, as is a
/// newcomer offered between them, and the places still waiting keep their order in each lane.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_wipe_keeps_the_places_still_waiting_from_the_first() {
    let (own, h) = own_redis_harness_in_lanes("flush-twice", 1_000, 300).await;
    let mut before = h.join_n(100).await;
    before.extend(join_priority(&h, 30).await);
    let offered_first = h.run(20, TICK).await;
    assert!(
        offered_first.iter().any(|s| *s >= PRIORITY_BASE) && offered_first.len() < 60,
        "{offered_first:?}"
    );

    flushall(&own.url).await;
    let mut newcomers = h.join_n(30).await;
    newcomers.extend(join_priority(&h, 10).await);
    // Half of the places still waiting in each lane come back now; the others' pages sleep.
    let (mut back, mut asleep) = (Vec::new(), Vec::new());
    for lane in [false, true] {
        let waiting: Vec<&Joined> = before
            .iter()
            .filter(|j| (j.claims.seq >= PRIORITY_BASE) == lane)
            .filter(|j| !offered_first.contains(&j.claims.seq))
            .collect();
        let (b, a) = waiting.split_at(waiting.len() / 2);
        back.extend_from_slice(b);
        asleep.extend_from_slice(a);
    }
    for j in &back {
        let st = h.adm.status(&j.claims).await.expect("status");
        assert_eq!(st.status, QueueStatus::Waiting, "{st:?}");
    }
    // The grace passes; the places brought back are offered, then some newcomers.
    let between = offers_until(&h, back.len() + 15).await;
    assert!(back.iter().all(|j| between.contains(&j.claims.seq)));
    let newcomers_offered: Vec<u64> = newcomers
        .iter()
        .map(|j| j.claims.seq)
        .filter(|seq| between.contains(seq))
        .collect();
    assert!(
        newcomers_offered.iter().any(|s| *s >= PRIORITY_BASE)
            && newcomers_offered.iter().any(|s| *s < PRIORITY_BASE)
            && newcomers_offered.len() < newcomers.len(),
        "{newcomers_offered:?} of the newcomers offered between the wipes"
    );

    flushall(&own.url).await;
    let last = h.join().await;
    let mut still_waiting = Vec::new();
    for j in asleep.iter().chain(&back).copied().chain(&newcomers) {
        let seq = j.claims.seq;
        let st = h.adm.status(&j.claims).await.expect("status");
        if between.contains(&seq) {
            assert_eq!(st.status, QueueStatus::OfferLapsed, "ticket {seq}: {st:?}");
        } else {
            assert_eq!(st.status, QueueStatus::Waiting, "ticket {seq}: {st:?}");
            still_waiting.push(seq);
        }
    }
    still_waiting.push(last.claims.seq);
    let after = offers_until(&h, still_waiting.len()).await;
    let mut sorted = after.clone();
    sorted.sort_unstable();
    still_waiting.sort_unstable();
    assert_eq!(
        sorted, still_waiting,
        "each place still waiting offered once"
    );
    for lane in [false, true] {
        let in_lane: Vec<u64> = after
            .iter()
            .copied()
            .filter(|s| (*s >= PRIORITY_BASE) == lane)
            .collect();
        assert!(in_lane.windows(2).all(|w| w[0] < w[1]), "{in_lane:?}");
    }
    drop(own);
}

/// The queue lost again while a returning ticket's status waits on the log of offers: the
/// question asked after the database's answer recovers the queue too, and the buyer is told
/// its place rather than an error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loss_while_the_log_of_offers_answers_is_recovered() {
    let (own, h) = own_redis_harness("flush-mid-status", 1_000).await;
    let before = h.join_n(60).await;
    let offered_first = h.run(20, TICK).await;
    let asleep = before
        .iter()
        .find(|j| !offered_first.contains(&j.claims.seq))
        .expect("a place still waiting");
    flushall(&own.url).await;
    // Newcomers are offered after the loss, so the checkpoint's frontier passes every place
    // from before it, and the sleeping page's place is judged by the log of offers.
    let newcomers = h.join_n(5).await;
    let between = offers_until(&h, newcomers.len()).await;
    assert!(!between.contains(&asleep.claims.seq), "{between:?}");
    flushall(&own.url).await;
    let url = own.url.clone();
    let lost_meanwhile = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = lost_meanwhile.clone();
    h.db.before_next_lookup(async move {
        flushall(&url).await;
        flag.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    let st = h.adm.status(&asleep.claims).await.expect("status");
    assert_eq!(st.status, QueueStatus::Waiting, "{st:?}");
    assert!(
        lost_meanwhile.load(std::sync::atomic::Ordering::SeqCst),
        "the queue was lost while the log of offers answered"
    );
    // Its place was registered again in the queue recovered the third time: it is offered.
    let after = offers_until(&h, 1).await;
    assert!(after.contains(&asleep.claims.seq), "{after:?}");
    drop(own);
}

/// The pre-queue's frontier survives a wipe too: pre-queue tickets offered before it are told
/// their turn passed, and the rest come back in their seeded order, ahead of later arrivals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushall_keeps_the_pre_queue_frontier() {
    let own = ThrowawayRedis::start();
    wait_for(&own.url).await;
    let clock = support::clock_for(Kind::Redis);
    let opens = clock.now_ms() + 5_000;
    let h = Harness::with(Kind::Redis, "pq-flush", clock, own.url.clone(), |c| {
        c.rate_per_min = 600;
        c.max_active = 1_000;
        c.offer_s = 60;
        c.opens_at = support::at(opens);
    })
    .await;
    let pre = h.join_n(100).await;
    assert!(pre.iter().all(|j| j.claims.pre_queue));
    h.advance(Duration::from_secs(6)).await;
    let offered_before = h.run(20, TICK).await;
    assert!(
        (5..100).contains(&offered_before.len()),
        "{} offered",
        offered_before.len()
    );

    flushall(&own.url).await;
    let newcomer = h.join().await;
    for j in &pre {
        let st = h.adm.status(&j.claims).await.expect("status");
        let expected = if offered_before.contains(&j.claims.seq) {
            QueueStatus::OfferLapsed
        } else {
            QueueStatus::Waiting
        };
        assert_eq!(st.status, expected, "ticket {}: {st:?}", j.claims.seq);
    }
    let after = offers_until(&h, 101 - offered_before.len()).await;
    assert_eq!(after.len(), 101 - offered_before.len());
    assert!(after.iter().all(|s| !offered_before.contains(s)));
    assert_eq!(
        after.last(),
        Some(&newcomer.claims.seq),
        "the pre-queue first, then the newcomer"
    );
    drop(own);
}

/// The priority lane's frontier survives a wipe too: priority tickets offered before it are
/// told their turn passed (or keep the session they claimed), and the rest come back in their
/// order, ahead of the lane's later arrivals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flushall_keeps_the_priority_frontier() {
    let (own, h) = own_redis_harness_in_lanes("p-flush", 1_000, 500).await;
    let priority = join_priority(&h, 40).await;
    let general = h.join_n(40).await;
    let offered_before = h.run(20, TICK).await;
    let lane_offered: Vec<u64> = offered_before
        .iter()
        .copied()
        .filter(|seq| *seq >= PRIORITY_BASE)
        .collect();
    assert!(
        (5..40).contains(&lane_offered.len()),
        "{} priority places offered",
        lane_offered.len()
    );
    let first = priority
        .iter()
        .find(|j| j.claims.seq == lane_offered[0])
        .expect("an issued priority token");
    let session = h.adm.claim(&first.claims).await.expect("claim").session_id;

    flushall(&own.url).await;
    let newcomer = join_priority(&h, 1).await.remove(0);
    for j in &priority {
        let seq = j.claims.seq;
        let expected = if seq == first.claims.seq {
            QueueStatus::Admitted
        } else if lane_offered.contains(&seq) {
            QueueStatus::OfferLapsed
        } else {
            QueueStatus::Waiting
        };
        let st = h.adm.status(&j.claims).await.expect("status");
        assert_eq!(st.status, expected, "priority ticket {seq}: {st:?}");
    }
    // The general lane's tokens come back too (`flushall_mid_queue_recovers` judges them).
    for j in &general {
        h.adm.status(&j.claims).await.expect("status");
    }
    let again = h
        .adm
        .claim(&first.claims)
        .await
        .expect("claimed before the wipe");
    assert_eq!(again.session_id, session, "nobody admitted twice");

    let expected = 81 - offered_before.len();
    let after = offers_until(&h, expected).await;
    let returned: Vec<u64> = general
        .iter()
        .chain(&priority)
        .map(|j| j.claims.seq)
        .filter(|seq| !offered_before.contains(seq))
        .chain(std::iter::once(newcomer.claims.seq))
        .collect();
    assert_eq!(
        after.len(),
        expected,
        "each place not offered before, once: {after:?}"
    );
    assert!(after.iter().all(|seq| returned.contains(seq)), "{after:?}");
    let lane: Vec<u64> = after
        .iter()
        .copied()
        .filter(|s| *s >= PRIORITY_BASE)
        .collect();
    assert!(
        lane.windows(2).all(|w| w[0] < w[1]),
        "the lane's order kept: {lane:?}"
    );
    assert_eq!(
        lane.last(),
        Some(&newcomer.claims.seq),
        "the lane's earlier tokens first, then the newcomer"
    );
    drop(own);
}

/// An instance whose own meter has not come back with an offer still learns it from the
/// buyer's status read: the claim that follows is told from the crowd's (`turn_has_come`),
/// for pre-queue places by their score, the places not offered still not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_read_teaches_the_instance_its_offer() {
    let clock = support::clock_for(Kind::Redis);
    let opens = clock.now_ms() + 5_000;
    let h = Harness::new(Kind::Redis, "learned", |c| {
        c.rate_per_min = 600;
        c.max_active = 1_000;
        c.offer_s = 60;
        c.opens_at = support::at(opens);
    })
    .await;
    let other = h.instance().await;
    // Both instances have ticked before the opening, so both know the queue's epoch.
    h.tick().await;
    other.tick(&h.event).await.expect("tick before the opening");
    let pre = h.join_n(60).await;
    assert!(pre.iter().all(|j| j.claims.pre_queue));
    h.advance(Duration::from_secs(6)).await;
    // Only the first instance's meter runs from here.
    let offered: HashSet<u64> = h.run(15, TICK).await.into_iter().collect();
    assert!(
        (5..60).contains(&offered.len()),
        "{} offered",
        offered.len()
    );
    let (yes, no): (Vec<_>, Vec<_>) = pre.iter().partition(|j| offered.contains(&j.claims.seq));
    assert!(
        pre.iter().all(|j| !other.turn_has_come(&j.claims)),
        "the other instance's last tick offered nothing"
    );
    for j in &yes {
        assert!(
            h.adm.turn_has_come(&j.claims),
            "the meter's own instance knows"
        );
        let st = other.status(&j.claims).await.expect("status");
        assert_eq!(st.status, QueueStatus::Offered, "{st:?}");
        assert!(other.turn_has_come(&j.claims), "learned from its status");
    }
    for j in &no {
        let st = other.status(&j.claims).await.expect("status");
        assert_eq!(st.status, QueueStatus::Waiting, "{st:?}");
        assert!(
            !other.turn_has_come(&j.claims),
            "not offered: {:?}",
            j.claims
        );
    }
}

/// After a wipe, a token coming back late in the reconnect grace keeps offers held 5 s past its
/// return, so the tail of a slowed crowd is not overtaken; then offers resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_returns_extend_the_reconnect_grace() {
    let (own, h) = own_redis_harness("grace", 1_000).await;
    let before = h.join_n(50).await;
    h.run(10, TICK).await;
    flushall(&own.url).await;
    h.join().await; // notices the loss and recovers: the grace (10 s) starts now
    h.adm
        .status(&before[40].claims)
        .await
        .expect("early return");
    // 8 s in, the last token comes back: the grace now ends 5 s later, at 13 s.
    assert!(h.run(80, TICK).await.is_empty(), "no offers in the grace");
    let st = h.adm.status(&before[49].claims).await.expect("late return");
    assert_eq!(st.status, QueueStatus::Waiting, "{st:?}");
    assert!(
        h.run(45, TICK).await.is_empty(),
        "offers still held 4.5 s after the late return"
    );
    let resumed = h.run(20, TICK).await;
    assert!(!resumed.is_empty(), "offers resume once returns stop");
    assert_eq!(resumed[0], before[40].claims.seq.min(before[49].claims.seq));
    drop(own);
}

/// A pause lives in the database, read on every tick with its version, so a Redis wipe cannot
/// undo it: no offers while paused, through the reconnect grace and long past it; on resume
/// the offers continue in queue order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_survives_a_wipe() {
    let (own, h) = own_redis_harness("pausewipe", 1_000).await;
    let joined = h.join_n(100).await;
    let before = h.run(20, TICK).await;
    assert!(!before.is_empty());
    assert!(before.iter().zip(1..).all(|(seq, place)| *seq == place));
    // Those offered claim, so only the waiting tail is left to come back.
    for seq in &before {
        h.adm
            .claim(&joined[(*seq - 1) as usize].claims)
            .await
            .expect("claim");
    }
    h.update(|c| c.paused = true);
    assert!(h.run(10, TICK).await.is_empty(), "no offers while paused");
    let epoch = h.tick().await.snapshot.epoch;

    flushall(&own.url).await;

    // The first tick notices the loss, recovers and starts the reconnect grace.
    let first = h.tick().await;
    assert!(first.offered.is_empty(), "an offer while paused: {first:?}");
    assert_ne!(first.snapshot.epoch, epoch, "the wipe was noticed");
    // The waiting buyers come back (re-registering the places Redis lost) and are told the
    // queue is paused.
    let waiting = &joined[before.len()..];
    for j in waiting {
        let st = h.adm.status(&j.claims).await.expect("status");
        assert_eq!(st.status, QueueStatus::Paused, "{:?} {st:?}", j.claims.seq);
    }
    // Six graces is the longest returning tokens can keep offers held; tick well past it, so
    // only the pause can be what holds them.
    let grace = support::config(&h.clock).reconnect_grace;
    let ticks = (7 * grace).as_millis() / TICK.as_millis();
    let during = h.run(ticks as usize, TICK).await;
    assert!(
        during.is_empty(),
        "offers while paused after the wipe: {during:?}"
    );
    let snap = h.tick().await.snapshot;
    assert_eq!(snap.state, EventState::Paused, "{snap:?}");
    // A pause keeps the line: a buyer joining now gets a place behind everyone.
    let late = h.join().await;
    assert_eq!(late.status, QueueStatus::Paused, "{late:?}");

    h.update(|c| c.paused = false);
    let after = h.run(200, TICK).await;
    let want: Vec<u64> = waiting
        .iter()
        .chain(std::iter::once(&late))
        .map(|j| j.claims.seq)
        .collect();
    assert_eq!(
        after, want,
        "offers continue in queue order, nobody skipped"
    );
    drop(own);
}

#[allow(dead_code)]
fn _assert_send(a: Arc<Admission>) -> Arc<Admission> {
    a
}

/// Pub/sub speeds the news: an instance whose own ticks are an hour apart hears another
/// instance's offers at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_wakes_other_instances() {
    let h = Harness::new(Kind::Redis, "pubsub", |c| c.max_active = 10_000).await;
    h.join_n(20).await;
    let mut cfg = support::config(&h.clock);
    cfg.tick_interval = Duration::from_secs(3_600);
    let quiet = Admission::connect(&h.url, h.db.clone(), cfg)
        .await
        .expect("connect");
    let mut rx = quiet.subscribe(&h.event);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let runner = quiet.clone();
    let meter = tokio::spawn(async move {
        runner
            .run_meter(async {
                let _ = stopped.await;
            })
            .await;
    });
    // Its first tick happens at start; then it sleeps for an hour.
    tokio::time::timeout(Duration::from_secs(5), rx.changed())
        .await
        .expect("first tick")
        .expect("feed open");
    tokio::time::sleep(Duration::from_millis(200)).await;
    rx.mark_unchanged();
    h.advance(Duration::from_secs(1)).await;
    let offered = h.tick().await.offered;
    assert!(!offered.is_empty());
    tokio::time::timeout(Duration::from_secs(5), async {
        while rx.borrow().served < offered.len() as u64 {
            rx.changed().await.expect("feed open");
        }
    })
    .await
    .expect("the quiet instance heard the other's offers through pub/sub");
    stop.send(()).expect("meter running");
    meter.await.expect("meter stops");
}

/// The Redis GCRA is clamped: a clock that steps back (failover) does not stall the meter,
/// and one that jumps forward does not release a burst.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meter_survives_clock_steps() {
    let h = Harness::new(Kind::Redis, "clockstep", |c| {
        c.max_active = 10_000;
        c.offer_s = 36_000;
        // Opened long ago, so a step back does not reopen the pre-queue.
        c.opens_at -= time::Duration::hours(1);
    })
    .await;
    h.join_n(300).await;
    assert!(!h.run(20, TICK).await.is_empty());
    h.clock.step_back(Duration::from_secs(600));
    let after_back = h.run(10, TICK).await.len();
    assert!(
        (9..=13).contains(&after_back),
        "{after_back} offers in the second after a step back"
    );
    h.advance(Duration::from_secs(1_200)).await;
    let burst = h.tick().await.offered.len();
    assert!(
        burst <= 3,
        "{burst} offers at once after a 20-minute jump forward"
    );
    let steady = h.run(10, TICK).await.len();
    assert!(
        (9..=11).contains(&steady),
        "{steady} offers in the next second"
    );
}
