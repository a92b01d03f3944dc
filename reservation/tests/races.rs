//! Races with real concurrency on PostgreSQL (32 connections, thousands of tokio tasks), each
//! judged from the rows and from the event log; plus the control that proves the judges bite.

mod common;

use std::time::{Duration, Instant};

use common::{exclusive, log_violations, naive_hold, percentile, row_violations, sessions, warm};
use rand::seq::SliceRandom;
use reservation::testing::{fresh_postgres, seeded_event};
use reservation::{Error, HoldState, SeatId};

fn seat(n: usize) -> SeatId {
    format!("S{n:05}").parse().expect("valid seat id")
}

/// Random 1–4 of `of` seats, in random order (so lock order is the store's job).
fn random_subset(of: usize) -> Vec<SeatId> {
    let mut all: Vec<usize> = (1..=of).collect();
    let mut rng = rand::rng();
    all.shuffle(&mut rng);
    let k = rand::random_range(1..=4);
    all[..k].iter().map(|&n| seat(n)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_many_buyers_random_subsets_never_overlap_and_never_deadlock() {
    let _one = exclusive().await;
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 50, |_| {}).await;
    let buyers = sessions(&store, &event, 2000).await;
    let tasks: Vec<_> = buyers
        .into_iter()
        .map(|s| {
            let store = store.clone();
            tokio::spawn(async move { store.hold(&s, &random_subset(50)).await })
        })
        .collect();
    let (mut won, mut lost) = (0, 0);
    for t in tasks {
        match t.await.expect("task") {
            Ok(_) => won += 1,
            Err(Error::SeatUnavailable { .. }) => lost += 1,
            Err(other) => panic!("only SeatUnavailable may surface, got {other:?}"),
        }
    }
    assert_eq!(won + lost, 2000);
    assert!(
        won >= 12,
        "50 seats in subsets of ≤4 leave at least 12 winners, got {won}"
    );
    assert_eq!(row_violations(&store, &event).await, Vec::<String>::new());
    assert_eq!(log_violations(&store, &event).await, Vec::<String>::new());
    let counts = store.counts(&event).await.expect("counts");
    assert_eq!(counts.holds.get("held").copied().unwrap_or(0), won);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn control_naive_read_then_write_is_caught_overlapping() {
    let _one = exclusive().await;
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 50, |_| {}).await;
    let buyers = sessions(&store, &event, 2000).await;
    let tasks: Vec<_> = buyers
        .into_iter()
        .map(|s| {
            let (store, event) = (store.clone(), event.clone());
            tokio::spawn(async move { naive_hold(&store, &event, &s, &random_subset(50)).await })
        })
        .collect();
    for t in tasks {
        t.await.expect("task");
    }
    let caught = log_violations(&store, &event).await;
    assert!(
        !caught.is_empty(),
        "the log judge must catch the naive hold overlapping"
    );
    assert!(
        !row_violations(&store, &event).await.is_empty(),
        "the row judge must catch it too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn b_thousand_buyers_one_seat_exactly_one_wins() {
    let _one = exclusive().await;
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 1, |_| {}).await;
    let buyers = sessions(&store, &event, 1000).await;
    warm(&store, 32).await;
    // All 1,000 arrive within one second (one every millisecond): the latency measured is the
    // store's answer to each buyer, not a client-side queue of 1,000 calls fired at once.
    let t0 = Instant::now();
    let tasks: Vec<_> = buyers
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let store = store.clone();
            tokio::spawn(async move {
                tokio::time::sleep_until((t0 + Duration::from_millis(i as u64)).into()).await;
                let t = Instant::now();
                let r = store.hold(&s, &[seat(1)]).await;
                (r, t.elapsed().as_secs_f64() * 1000.0)
            })
        })
        .collect();
    let (mut won, mut lost, mut loser_ms) = (0, 0, Vec::new());
    for t in tasks {
        let (r, ms) = t.await.expect("task");
        match r {
            Ok(_) => won += 1,
            Err(Error::SeatUnavailable { seats }) => {
                assert_eq!(seats, [seat(1)]);
                lost += 1;
                loser_ms.push(ms);
            }
            Err(other) => panic!("losers must get SeatUnavailable, got {other:?}"),
        }
    }
    assert_eq!((won, lost), (1, 999));
    let (p50, p99) = (
        percentile(loser_ms.clone(), 0.5),
        percentile(loser_ms.clone(), 0.99),
    );
    let max = percentile(loser_ms, 1.0);
    println!("one seat, 1000 buyers: loser p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms");
    // The bound is p99 ≤ 50 ms; the release-build figure is measured by the `holds`
    // benchmark. This debug build shares two cores with other compilers, so the bound is
    // asserted generously here (5×) to catch a regression to queueing, not to time the machine.
    assert!(p99 <= 250.0, "loser p99 {p99:.1} ms exceeds 250 ms");
    assert_eq!(row_violations(&store, &event).await, Vec::<String>::new());
    assert_eq!(log_violations(&store, &event).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn c_payment_versus_rival_across_the_expiry_instant() {
    let _one = exclusive().await;
    let store = fresh_postgres().await;
    let rounds = 300;
    let event = seeded_event(&store, rounds, |e| e.hold_ttl_ms = Some(150)).await;
    let owners = sessions(&store, &event, rounds as usize).await;
    let rivals = sessions(&store, &event, rounds as usize).await;
    let late = sessions(&store, &event, rounds as usize).await;
    let started = Instant::now();
    let mut outcomes = (0, 0, 0); // (owner paid, rival took, neither)
    for batch in 0..(rounds as usize / 30) {
        let tasks: Vec<_> = (batch * 30..batch * 30 + 30)
            .map(|i| {
                let store = store.clone();
                let (owner, rival, late) = (owners[i].clone(), rivals[i].clone(), late[i].clone());
                tokio::spawn(async move {
                    let s = seat(i + 1);
                    let hold = store
                        .hold(&owner, std::slice::from_ref(&s))
                        .await
                        .expect("owner holds");
                    // Aim both at the expiry instant (the hold's own deadline, read from the
                    // database clock, so a slow `hold` call on a loaded machine does not push
                    // both past it), each with its own jitter.
                    let until_expiry = |jitter: i64| {
                        let now =
                            time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
                        let left = hold.expires_at_ms as i128 - now + i128::from(jitter);
                        Duration::from_millis(u64::try_from(left.max(0)).unwrap_or(0))
                    };
                    let (pay_in, take_in) = (
                        until_expiry(rand::random_range(-15..15)),
                        until_expiry(rand::random_range(-15..15)),
                    );
                    let pay = {
                        let store = store.clone();
                        let hold = hold.hold_id.clone();
                        tokio::spawn(async move {
                            tokio::time::sleep(pay_in).await;
                            store.begin_payment(&owner, &hold, "pm").await
                        })
                    };
                    let take = {
                        let (store, s) = (store.clone(), s.clone());
                        tokio::spawn(async move {
                            tokio::time::sleep(take_in).await;
                            store.hold(&rival, &[s]).await
                        })
                    };
                    let (pay, take) = (pay.await.expect("pay"), take.await.expect("take"));
                    assert!(
                        !(pay.is_ok() && take.is_ok()),
                        "seat {s}: payment began AND rival held"
                    );
                    assert!(matches!(pay, Ok(_) | Err(Error::HoldExpired)), "{pay:?}");
                    assert!(
                        matches!(take, Ok(_) | Err(Error::SeatUnavailable { .. })),
                        "{take:?}"
                    );
                    if let Ok(attempt) = &pay {
                        // A paying seat is never taken, however long after expiry one tries.
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        assert!(matches!(
                            store.hold(&late, std::slice::from_ref(&s)).await,
                            Err(Error::SeatUnavailable { .. })
                        ));
                        let h = store.get_hold(&attempt.hold_id).await.expect("hold");
                        assert_eq!(h.state, HoldState::Paying);
                    }
                    (pay.is_ok(), take.is_ok())
                })
            })
            .collect();
        for t in tasks {
            match t.await.expect("round") {
                (true, _) => outcomes.0 += 1,
                (_, true) => outcomes.1 += 1,
                _ => outcomes.2 += 1,
            }
        }
    }
    println!(
        "expiry boundary: owner paid {}, rival took {}, neither {}",
        outcomes.0, outcomes.1, outcomes.2
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "300 rounds must take under a minute"
    );
    assert!(
        outcomes.0 > 0 && outcomes.1 > 0,
        "the race must cross the instant both ways: {outcomes:?}"
    );
    let paying: i64 =
        sqlx::query_scalar("select count(*) from seats where event_id = $1 and state = 'paying'")
            .bind(event.as_str())
            .fetch_one(store.pool())
            .await
            .expect("count");
    assert_eq!(paying, outcomes.0);
    assert_eq!(row_violations(&store, &event).await, Vec::<String>::new());
    assert_eq!(log_violations(&store, &event).await, Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn d_general_admission_exactly_one_hundred_win() {
    let _one = exclusive().await;
    for run in 0..2 {
        let store = fresh_postgres().await;
        let event = seeded_event(&store, 0, |_| {}).await;
        store
            .generate_seats(&event, "GA", 10, 20, 2500)
            .await
            .expect("200 GA seats");
        let buyers = sessions(&store, &event, 500).await;
        let tasks: Vec<_> = buyers
            .into_iter()
            .map(|s| {
                let store = store.clone();
                tokio::spawn(async move { store.hold_ga(&s, "GA", 2).await })
            })
            .collect();
        let (mut won, mut sold_out) = (0, 0);
        for t in tasks {
            match t.await.expect("task") {
                Ok(h) => {
                    assert_eq!(h.seats.len(), 2);
                    won += 1;
                }
                Err(Error::SoldOut) => sold_out += 1,
                Err(other) => panic!("run {run}: unexpected {other:?}"),
            }
        }
        assert_eq!((won, sold_out), (100, 400), "run {run}");
        assert_eq!(
            store.counts(&event).await.expect("counts").seats("held"),
            200
        );
        assert_eq!(row_violations(&store, &event).await, Vec::<String>::new());
        assert_eq!(log_violations(&store, &event).await, Vec::<String>::new());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn e_two_tabs_of_one_session_get_one_live_hold() {
    let _one = exclusive().await;
    let store = fresh_postgres().await;
    let event = seeded_event(&store, 200, |_| {}).await;
    let buyers = sessions(&store, &event, 100).await;
    let tasks: Vec<_> = buyers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let (store, s) = (store.clone(), s.clone());
            tokio::spawn(async move {
                let (one, two) = ([seat(2 * i + 1)], [seat(2 * i + 2)]);
                let tab1 = store.hold(&s, &one);
                let tab2 = store.hold(&s, &two);
                let (a, b) = tokio::join!(tab1, tab2);
                (a.is_ok() as u8 + b.is_ok() as u8, [a.err(), b.err()])
            })
        })
        .collect();
    for t in tasks {
        let (ok, errs) = t.await.expect("task");
        assert_eq!(ok, 1, "exactly one tab holds: {errs:?}");
        assert!(
            errs.iter().flatten().all(|e| matches!(e, Error::HoldLimit)),
            "{errs:?}"
        );
    }
    for s in &buyers {
        assert!(store.session_live_hold(s).await.expect("live").is_some());
    }
    let live: i64 =
        sqlx::query_scalar("select count(*) from holds where event_id = $1 and state = 'held'")
            .bind(event.as_str())
            .fetch_one(store.pool())
            .await
            .expect("count");
    assert_eq!(live, 100);
    assert_eq!(log_violations(&store, &event).await, Vec::<String>::new());
}
