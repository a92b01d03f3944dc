//! What a buyer is told: status, position (buyers ahead, 0 = next), the wait range and how
//! soon to ask again.

use serde::Serialize;

use crate::clock::UnixMs;
use crate::snapshot::Snapshot;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueStatus {
    PreQueue,
    Waiting,
    Offered,
    Admitted,
    OfferLapsed,
    Paused,
    SoldOut,
    Closed,
}

impl QueueStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::PreQueue => "pre_queue",
            QueueStatus::Waiting => "waiting",
            QueueStatus::Offered => "offered",
            QueueStatus::Admitted => "admitted",
            QueueStatus::OfferLapsed => "offer_lapsed",
            QueueStatus::Paused => "paused",
            QueueStatus::SoldOut => "sold_out",
            QueueStatus::Closed => "closed",
        }
    }
}

/// The JSON status body of `GET …/queue/status`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    pub status: QueueStatus,
    /// Buyers ahead (an upper bound); `None` once the turn has come or passed.
    pub position: Option<u64>,
    pub estimated_wait_s: Option<u64>,
    pub estimated_wait_range_s: Option<(u64, u64)>,
    /// How likely a seat is left when this buyer's turn comes (0–1); `None` when unknown.
    pub seat_chance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer_expires_in_s: Option<u64>,
    pub retry_after_s: u64,
}

impl Status {
    /// Before the opening the next read is due at the ticket's moment just after it (offers
    /// start then, and each lasts only the offer's seconds; `opening` spreads the pre-queue's
    /// wake-ups over the first seconds), and meanwhile at the snapshot's pace.
    pub(crate) fn until_opening(
        mut self,
        opens_at_ms: UnixMs,
        now_ms: UnixMs,
        snapshot: &Snapshot,
        ticket_id: &str,
    ) -> Status {
        if self.status == QueueStatus::PreQueue {
            self.retry_after_s = crate::opening::read_s(
                opens_at_ms,
                now_ms,
                snapshot.opening_spread_s,
                crate::opening::ticket_share(ticket_id),
            );
        }
        self
    }
}

/// How often a page near the front reads while offers are paused: the snapshot's own pace.
const PAUSED_READ_S: u64 = crate::public::retry_after_s(crate::snapshot::EventState::Paused);
/// How often a page near the front reads once the event is sold out: the snapshot's own pace.
const SOLD_OUT_READ_S: u64 = crate::public::retry_after_s(crate::snapshot::EventState::SoldOut);

/// Reads spaced by place (`2 + ahead ÷ 100` s), never past `within`, the crowd's spacing, nor
/// past half the `soonest` the offer may come (the soak's page spaces its reads by it too).
pub fn by_place(position: Option<u64>, soonest: Option<u64>, within: u64) -> u64 {
    let spaced = (2 + position.unwrap_or(0) / 100).min(within.clamp(2, FAR_BACK_READ_S));
    soonest.map_or(spaced, |soonest| spaced.min((soonest / 2).max(1)))
}

/// The longest a waiting page goes between two reads, far back in a small crowd.
pub(crate) const FAR_BACK_READ_S: u64 = 120;

/// The longest a waiting page may go between reads so that the whole crowd makes about
/// `reads_per_s` reads a second: news for everyone (sold out, a pause) then reaches the last
/// of them within this many seconds.
pub(crate) fn read_within_s(waiting: u64, reads_per_s: u32) -> u64 {
    waiting
        .div_ceil(u64::from(reads_per_s.max(1)))
        .clamp(2, FAR_BACK_READ_S)
}

/// Poll interval: near the front ask often, far back rarely (polls are answered from cache but
/// still cost a request each), yet never longer than `within` (`read_within_s`), and never
/// longer than half the `soonest` the offer may come (the range's low end, or before the wait
/// is known the place at the rate), so a fast queue does not leave a poller asleep while its
/// offer runs down, nor one that was told "not known yet" asleep once its wait is known.
pub(crate) fn retry_after_s(
    status: QueueStatus,
    position: Option<u64>,
    soonest: Option<u64>,
    within: u64,
) -> u64 {
    match status {
        QueueStatus::Offered => 1,
        QueueStatus::Waiting => by_place(position, soonest, within),
        QueueStatus::PreQueue => crate::opening::PRE_QUEUE_READ_S,
        // A pause may last minutes and tabs stay open after a sell-out (seats may come back):
        // the crowd keeps its spacing by place, and a place offered soon after offers resume
        // (at the rate set) reads within half that; the front at the snapshot's pace.
        QueueStatus::Paused => by_place(position, soonest, within).max(PAUSED_READ_S),
        QueueStatus::SoldOut => by_place(position, soonest, within).max(SOLD_OUT_READ_S),
        QueueStatus::Admitted | QueueStatus::OfferLapsed | QueueStatus::Closed => 60,
    }
}

/// The status body for `status` at `position`, its wait and chance taken from the snapshot
/// the answer agrees with (`None`: nothing known, as when closed).
pub(crate) fn build(
    status: QueueStatus,
    position: Option<u64>,
    snapshot: Option<&Snapshot>,
    offer_expires_in_s: Option<u64>,
) -> Status {
    let estimate = match (status, position, snapshot) {
        (QueueStatus::Waiting, Some(p), Some(s)) => s.wait_estimate(p),
        _ => None,
    };
    let soonest = match (status, estimate, position) {
        (_, Some((_, low, _)), _) => Some(low),
        (QueueStatus::Waiting, None, Some(p)) => snapshot
            .and_then(|s| s.cap.as_ref())
            .and_then(|cap| crate::wait::soonest_offer_s(p, cap)),
        // Offers held: once they resume, at the rate set.
        (QueueStatus::Paused | QueueStatus::SoldOut, None, Some(p)) => {
            snapshot.and_then(|s| crate::wait::soonest_at_rate_s(p, s.rate_per_min))
        }
        _ => None,
    };
    let seat_chance = match (status, position, snapshot) {
        (QueueStatus::SoldOut, _, _) => Some(0.0),
        (QueueStatus::Waiting | QueueStatus::Paused, Some(p), Some(s)) => s.seat_chance(p),
        (QueueStatus::Offered, _, Some(s)) => s.seat_chance(0),
        _ => None,
    };
    Status {
        status,
        position,
        estimated_wait_s: estimate.map(|e| e.0),
        estimated_wait_range_s: estimate.map(|e| (e.1, e.2)),
        seat_chance,
        offer_expires_in_s,
        retry_after_s: retry_after_s(
            status,
            position,
            soonest,
            snapshot.map_or(FAR_BACK_READ_S, |s| s.read_within_s),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::EventState;
    use crate::wait::CapModel;

    /// Open, with the cap's places free: the rate decides the wait.
    fn flowing(per_min: u32) -> Snapshot {
        Snapshot {
            state: EventState::Open,
            cap: Some(CapModel {
                size: 1_000_000,
                free: 1_000_000,
                offer_rate_per_min: per_min,
                held_s: None,
                held_spread: None,
            }),
            read_within_s: FAR_BACK_READ_S,
            ..Snapshot::default()
        }
    }

    #[test]
    fn far_back_reads_less_often() {
        assert!(
            retry_after_s(QueueStatus::Waiting, Some(5000), None, FAR_BACK_READ_S)
                > retry_after_s(QueueStatus::Waiting, Some(5), None, FAR_BACK_READ_S)
        );
    }

    #[test]
    fn a_pre_queue_page_reads_again_at_its_moment_after_the_opening() {
        let opens = 1_000_000;
        let snap = Snapshot {
            opening_spread_s: 5,
            ..Snapshot::default()
        };
        let told = |status, ticket: &str| {
            build(status, Some(5), None, None)
                .until_opening(opens, opens - 3_400, &snap, ticket)
                .retry_after_s
        };
        // A second past the opening, then the ticket's own share of the five seconds.
        let moments: Vec<u64> = (0..200)
            .map(|i| told(QueueStatus::PreQueue, &format!("t{i}")))
            .collect();
        assert!(moments.iter().all(|s| (4..=8).contains(s)), "{moments:?}");
        assert!(moments.contains(&4) && moments.contains(&8), "{moments:?}");
        assert_eq!(
            told(QueueStatus::PreQueue, "t7"),
            told(QueueStatus::PreQueue, "t7")
        );
        // Only the pre-queue is told of the opening.
        assert_eq!(
            told(QueueStatus::Paused, "t7"),
            build(QueueStatus::Paused, Some(5), None, None).retry_after_s
        );
    }

    #[test]
    fn a_large_crowd_reads_as_often_as_the_front_answers() {
        // 490,000 waiting at 10,000 reads a second: each reads within 49 s, so far back
        // buyers learn of a sell-out in 49 s rather than two minutes.
        assert_eq!(read_within_s(490_000, 10_000), 49);
        assert_eq!(
            read_within_s(0, 10_000),
            2,
            "never faster than the open queue's pace"
        );
        assert_eq!(read_within_s(10_000_000, 10_000), FAR_BACK_READ_S);
        assert_eq!(
            read_within_s(5, 0),
            5,
            "a zero rate is read as one a second"
        );
        let far = retry_after_s(QueueStatus::Waiting, Some(400_000), None, 49);
        assert_eq!(far, 49);
        let near = retry_after_s(QueueStatus::Waiting, Some(300), None, 49);
        assert_eq!(near, 5, "near the front the place decides");
        // Whatever the crowd, the reads it makes stay near the budget: a share 1/within of
        // the buyers past the place where the place no longer decides, plus the few before.
        let crowd = 490_000u64;
        let within = read_within_s(crowd, 10_000);
        let reads: f64 = (0..crowd)
            .step_by(100)
            .map(|p| 100.0 / retry_after_s(QueueStatus::Waiting, Some(p), None, within) as f64)
            .sum();
        assert!(
            (10_000.0..11_000.0).contains(&reads),
            "{reads} reads a second"
        );
    }

    /// The cap full and the time a place is held not known yet: no wait to tell.
    fn filling(per_min: u32) -> Snapshot {
        Snapshot {
            state: EventState::Open,
            cap: Some(CapModel {
                size: 1_500,
                free: 0,
                offer_rate_per_min: per_min,
                held_s: None,
                held_spread: None,
            }),
            read_within_s: 49,
            ..Snapshot::default()
        }
    }

    #[test]
    fn before_the_wait_is_known_the_rate_bounds_how_long_a_page_sleeps() {
        // 3,000 ahead at 150 a second cannot be offered within 20 s, and may be soon after: the
        // page told "not known yet" reads again within 10 s, not the 32 s its place gives, so
        // it hears its wait once it is known rather than after its offer.
        let unknown = build(QueueStatus::Waiting, Some(3000), Some(&filling(9000)), None);
        assert_eq!(unknown.estimated_wait_range_s, None);
        assert_eq!(unknown.retry_after_s, 10);
        // Offers held: nothing bounds the wait, the place decides.
        let held = build(QueueStatus::Waiting, Some(3000), Some(&filling(0)), None);
        assert_eq!(held.retry_after_s, 32);
        // Far back the crowd's pace still decides.
        let far = build(
            QueueStatus::Waiting,
            Some(400_000),
            Some(&filling(9000)),
            None,
        );
        assert_eq!(far.retry_after_s, 49);
    }

    #[test]
    fn reading_sooner_before_the_wait_is_known_stays_near_the_budget() {
        // The front reads by the rate only until the wait is known, as it does once the range's
        // low end is there: a 490,000 crowd at 10,000 reads a second then makes about a ninth
        // more reads than by place alone, all of them from the buyers whose turn is nearest.
        let crowd = 490_000u64;
        let within = read_within_s(crowd, 10_000);
        let snap = filling(9000);
        let reads = |after: &dyn Fn(u64) -> u64| -> f64 {
            (0..crowd)
                .step_by(100)
                .map(|p| 100.0 / after(p) as f64)
                .sum()
        };
        let by_place = reads(&|p| retry_after_s(QueueStatus::Waiting, Some(p), None, within));
        let by_rate =
            reads(&|p| build(QueueStatus::Waiting, Some(p), Some(&snap), None).retry_after_s);
        assert!(
            (1.05..1.15).contains(&(by_rate / by_place)),
            "{by_rate} reads a second against {by_place}"
        );
    }

    #[test]
    fn paused_or_sold_out_the_crowd_keeps_its_spacing() {
        // 490,000 waiting through a pause of minutes, or with tabs left open after a sell-out:
        // far back they read within 49 s, as while open, not every few seconds (98,000 reads
        // a second at 5 s); the front at the snapshot's own pace.
        let within = read_within_s(490_000, 10_000);
        for status in [QueueStatus::Paused, QueueStatus::SoldOut] {
            assert_eq!(
                retry_after_s(status, Some(400_000), None, within),
                49,
                "{status:?}"
            );
        }
        // Near the front, at the snapshot's own pace.
        assert_eq!(
            retry_after_s(QueueStatus::Paused, Some(150), None, within),
            5
        );
        assert_eq!(
            retry_after_s(QueueStatus::SoldOut, Some(150), None, within),
            10
        );
        // Offers resuming at 15,000 a minute reach 4,700 ahead within 18 s: that page reads
        // within 9 s, not 49, so it does not sleep through its offer.
        let mut paused = flowing(15_000);
        paused.state = EventState::Paused;
        paused.rate_per_min = 15_000;
        paused.read_within_s = within;
        let st = build(QueueStatus::Paused, Some(4_700), Some(&paused), None);
        assert_eq!(st.retry_after_s, 9);
    }

    #[test]
    fn paused_or_unmeasured_has_no_wait_but_keeps_the_chance() {
        let mut paused = flowing(600);
        paused.state = EventState::Paused;
        if let Some(cap) = paused.cap.as_mut() {
            cap.offer_rate_per_min = 0;
        }
        let st = build(QueueStatus::Paused, Some(10), Some(&paused), None);
        assert_eq!(st.estimated_wait_range_s, None);
        assert_eq!(st.seat_chance, None, "no seat model yet");
        let sold_out = build(QueueStatus::SoldOut, Some(10), None, None);
        assert_eq!(sold_out.seat_chance, Some(0.0));
    }

    #[test]
    fn a_fast_queue_shortens_the_poll_interval() {
        // 3,000 ahead at 150 a second: the front is ~20 s away (15 at the soonest), so the
        // poller is told to come back within 7 s rather than the 32 s its place alone gives.
        let slow = build(QueueStatus::Waiting, Some(3000), Some(&flowing(60)), None);
        assert_eq!(slow.retry_after_s, 32);
        let far = build(
            QueueStatus::Waiting,
            Some(400_000),
            Some(&flowing(60)),
            None,
        );
        assert_eq!(far.retry_after_s, 120);
        let fast = build(QueueStatus::Waiting, Some(3000), Some(&flowing(9000)), None);
        assert_eq!(fast.retry_after_s, 7);
        let front = build(QueueStatus::Waiting, Some(0), Some(&flowing(9000)), None);
        assert_eq!(front.retry_after_s, 1);
    }
}
