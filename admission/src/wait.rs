//! The wait for a place in line, from what the cap and the rate allow.
//!
//! A buyer with `p` ahead is offered after `p + 1` offers. The first of them go out at the
//! rate the meter offers at while the cap has free places; the rest only as places free, at
//! most `max_active ÷ W` a second with `W` the mean time a place is held (`turnover.rs`), and
//! never faster than the rate. `W` is known as a range, its two Little's-law ends, and the
//! point takes the wait the long end gives: through a sale places are held longer as seats
//! grow scarce (buyers search longer, more sessions run their whole length), and `W` measured
//! over the last window lags behind that, so the long end is the nearer guess for the waits
//! still to come. Two errors widen it, independent of each other: where `W` lies between its
//! ends (their half-distance, relative to the point) and two relative errors of the count
//! behind `W` (at least 0.1, at most 0.4). They add in quadrature to `r`, and the range is
//! `point ÷ (1 + r)` to `point × (1 + r)`: never a bare point, and not the two errors stacked
//! end on end. Offers go out in steps rather than evenly (a tick's batch, backpressure cutting
//! the pace or giving it back, places freeing in waves as sessions that began together end), so
//! a short wait is off by seconds whatever its size: neither end comes nearer the point than
//! `STEP_S` (the low end stops at zero), and only short waits are widened by it. While no place
//! has freed often enough to say how long one is held, a place beyond the free ones has no
//! estimate: the page says the wait is still being measured.
//! The range ends when the buyer can see the offer, not when it is made: a polling page hears
//! of it at its next read, so the high end adds the longest a page at the front waits for it.
//! `static/queue-snapshot.js` `waitEstimate` computes the same from the published model.

use serde::{Deserialize, Serialize};

/// How many relative errors either side the range covers.
const SPREADS: f64 = 2.0;
/// The relative error when the rate alone decides (offers go out tick by tick).
const RATE_SPREAD: f64 = 0.1;
/// The least either end of the range lies from the point, in seconds: how unevenly offers go
/// out, whatever the wait.
const STEP_S: f64 = 5.0;
/// `W`'s two ends further apart than this say too little to give a wait beyond the free places.
/// At this bound the half-distance between the ends (0.3 of the point) and the least count
/// error (two of 10 %) make `r` 0.36: a long wait's range spans 1.85×, a thirty-second one
/// about 2× with its step and hearing. Further apart, the first range most buyers see (they
/// all read within seconds of the bound being met) would be too wide to plan by.
const MAX_HELD_RATIO: f64 = 2.5;
/// Seconds a page at the front may take to hear of its offer: the snapshot it reads is up to a
/// second old (`max-age=1`) and read as often as the snapshot says while open. A page on the
/// WebSocket hears at once, so only the high end counts them.
pub(crate) const HEARD_WITHIN_S: f64 =
    (crate::public::retry_after_s(crate::snapshot::EventState::Open) + 1) as f64;

/// What the wait is computed from, published in the snapshot as `cap`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CapModel {
    /// The cap: buyers choosing seats at once (`max_active`).
    pub size: u32,
    /// Places free now: the cap less sessions not ended and open offers.
    pub free: u64,
    /// The rate the meter offers at now, backpressure included (0 while offers are held).
    pub offer_rate_per_min: u32,
    /// The mean seconds a place is held, low and high; `None` until enough have freed.
    pub held_s: Option<[f64; 2]>,
    /// The relative error of `held_s` (one over the root of the places freed behind it).
    pub held_spread: Option<f64>,
}

impl CapModel {
    /// Whether the time a place is held is known well enough to give a wait beyond the free
    /// places: measured, and its two ends within `MAX_HELD_RATIO` of each other.
    pub fn held_known(&self) -> bool {
        matches!(self.held_s, Some([short, long]) if short > 0.0 && long <= short * MAX_HELD_RATIO)
    }
}

/// The wait for `position` buyers ahead: (point, low, high) seconds; `None` while offers are
/// held, or beyond the free places before the time a place is held is known.
pub fn wait_estimate(position: u64, cap: &CapModel) -> Option<(u64, u64, u64)> {
    let rate = f64::from(cap.offer_rate_per_min) / 60.0;
    if rate <= 0.0 {
        return None;
    }
    let need = position as f64 + 1.0;
    let first = need.min(cap.free as f64);
    let by_rate = first / rate;
    let beyond = need - first;
    let (fast, slow, spread) = if beyond > 0.0 {
        let [short, long] = cap.held_s?;
        if !cap.held_known() {
            return None;
        }
        let size = f64::from(cap.size.max(1));
        (
            beyond / rate.min(size / short),
            beyond / rate.min(size / long),
            cap.held_spread.unwrap_or(RATE_SPREAD),
        )
    } else {
        (0.0, 0.0, RATE_SPREAD)
    };
    let spread = spread.clamp(0.1, 0.4);
    let point = by_rate + slow;
    let between_ends = if point > 0.0 {
        (slow - fast) / 2.0 / point
    } else {
        0.0
    };
    let counted = SPREADS * spread;
    // Written as the page writes it (no `hypot`), so both round alike.
    let r = (between_ends * between_ends + counted * counted).sqrt();
    let low = (point / (1.0 + r)).min(point - STEP_S).max(0.0).floor() as u64;
    let high = ((point * (1.0 + r)).max(point + STEP_S) + HEARD_WITHIN_S).ceil() as u64;
    Some((point.ceil() as u64, low, high))
}

/// The soonest `position` ahead can be offered, known before the wait is: the meter never
/// offers faster than its rate. `None` while offers are held.
pub fn soonest_offer_s(position: u64, cap: &CapModel) -> Option<u64> {
    soonest_at_rate_s(position, cap.offer_rate_per_min)
}

/// The soonest `position` ahead can be offered at `rate_per_min` (`None` at a rate of 0): while
/// offers are held, at the rate set, once they resume.
pub fn soonest_at_rate_s(position: u64, rate_per_min: u32) -> Option<u64> {
    let rate = f64::from(rate_per_min) / 60.0;
    (rate > 0.0).then(|| ((position as f64 + 1.0) / rate).floor() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(free: u64, held_s: Option<[f64; 2]>, spread: f64) -> CapModel {
        CapModel {
            size: 450,
            free,
            offer_rate_per_min: 2_700,
            held_s,
            held_spread: held_s.map(|_| spread),
        }
    }

    #[test]
    fn within_the_free_places_the_rate_decides() {
        // 45 offers a second: the 450th in line (449 ahead) is offered in ten seconds, told
        // as five either side (the least), the high end later by the time a page takes to hear.
        let (point, low, high) = wait_estimate(449, &cap(450, None, 0.1)).expect("rate known");
        assert_eq!((point, low, high), (10, 5, 18));
        // The next is beyond the free places, and how long a place is held is not known yet.
        assert_eq!(wait_estimate(450, &cap(450, None, 0.1)), None);
        // Even the first in line is given a range, not a point.
        let (_, low, high) = wait_estimate(0, &cap(450, None, 0.1)).expect("rate known");
        assert!(low < high, "{low}–{high}");
    }

    #[test]
    fn beyond_the_free_places_the_cap_turns_over() {
        // 450 places held 30 s: 15 free a second. 1,000 ahead, 50 free now: about 63 s beyond.
        let c = cap(50, Some([30.0, 30.0]), 0.05);
        let (point, low, high) = wait_estimate(999, &c).expect("known");
        let expected = 50.0 / 45.0 + 950.0 / 15.0;
        assert!(
            (point as f64 - expected).abs() <= 1.0,
            "{point} vs {expected}"
        );
        assert!(low as f64 <= expected && high as f64 >= expected);
        assert!(high as f64 / low as f64 <= 1.6, "{low}–{high}");
        // The measured outflow of the opening (the rate) would have said 22 s: a third of it.
        assert!(point > 3 * 22 - 5);
    }

    #[test]
    fn an_unsure_time_widens_the_range_and_an_unknown_one_gives_none() {
        let sure = wait_estimate(999, &cap(0, Some([29.0, 31.0]), 0.05)).expect("known");
        let unsure = wait_estimate(999, &cap(0, Some([20.0, 38.0]), 0.3)).expect("known");
        assert!(
            unsure.1 < sure.1 && unsure.2 > sure.2,
            "{sure:?} {unsure:?}"
        );
        // Ends too far apart, or not measured: no wait beyond the free places.
        assert_eq!(wait_estimate(999, &cap(0, Some([10.0, 60.0]), 0.1)), None);
        assert_eq!(wait_estimate(999, &cap(0, Some([16.0, 41.0]), 0.03)), None);
        assert_eq!(wait_estimate(999, &cap(0, None, 0.1)), None);
        // ... but a place among the free ones still has one.
        assert!(wait_estimate(10, &cap(50, None, 0.1)).is_some());
    }

    #[test]
    fn the_point_is_the_long_end_and_the_two_errors_add_in_quadrature() {
        // `W` known only between 20 s and 40 s (the most its ends may differ), from a large
        // count: 1,000 beyond the free places take 44–89 s. The point is the slow end, and the
        // range around it spans under a factor two, where stacking the count's error on both
        // ends would have said 37–111 s (a factor three).
        let (point, low, high) =
            wait_estimate(999, &cap(0, Some([20.0, 40.0]), 0.01)).expect("known");
        let slow = 1_000.0 / (450.0 / 40.0);
        assert!((point as f64 - slow).abs() <= 1.0, "{point} vs {slow}");
        assert!(high as f64 / low as f64 <= 2.0, "{low}–{high}");
        // The half-distance to the fast end (a quarter of the point) and two errors of 10 %;
        // the high end also waits for the page to hear.
        let r = (0.25f64 * 0.25 + 0.2 * 0.2).sqrt();
        assert!((low as f64 - slow / (1.0 + r)).abs() <= 1.0, "{low}");
        assert!(
            (high as f64 - slow * (1.0 + r) - HEARD_WITHIN_S).abs() <= 1.0,
            "{high}"
        );
        // Ends that agree leave the count's error alone: two of 10 %, either side.
        let (point, low, high) =
            wait_estimate(999, &cap(0, Some([30.0, 30.0]), 0.01)).expect("known");
        assert_eq!(low, (point as f64 / 1.2).floor() as u64, "{point} {low}");
        assert!(
            high as f64 <= point as f64 * 1.2 + HEARD_WITHIN_S + 1.0,
            "{point} {high}"
        );
    }

    #[test]
    fn a_short_wait_is_told_no_nearer_than_the_outflow_steps_and_a_long_one_as_before() {
        // 450 free places at 45 a second: every wait here is the rate's, r = 0.2.
        let c = cap(450, None, 0.1);
        for ahead in [0, 44, 134, 224, 314, 449] {
            let (_, low, high) = wait_estimate(ahead, &c).expect("rate known");
            let point = (ahead + 1) as f64 / 45.0;
            let relative = (point / 1.2).floor() as u64;
            let expected_low = (point - STEP_S).max(0.0).floor() as u64;
            assert_eq!(low, expected_low.min(relative), "{ahead} ahead");
            assert!(
                high as f64 >= point + STEP_S + HEARD_WITHIN_S,
                "{ahead} ahead: {low}–{high}"
            );
        }
        // The first in line: zero at the soonest, the step and the hearing at the latest.
        assert_eq!(wait_estimate(0, &c), Some((1, 0, 9)));
        // Beyond thirty seconds r is the wider: a minute away, the range is the relative one.
        let c = cap(3_000, None, 0.1);
        let (point, low, high) = wait_estimate(2_699, &c).expect("rate known");
        assert_eq!(point, 60);
        assert_eq!((low, high), (50, 75));
    }

    #[test]
    fn the_high_end_waits_as_long_as_a_page_at_the_front_takes_to_hear() {
        // The page mirrors the figure (`static/queue-snapshot.js`): three seconds.
        assert_eq!(HEARD_WITHIN_S, 3.0);
        // The first in line, offered within the tick, may still see it seconds later.
        let (point, low, high) = wait_estimate(0, &cap(450, None, 0.1)).expect("rate known");
        assert_eq!((point, low), (1, 0));
        assert!(high as f64 >= HEARD_WITHIN_S, "{high}");
    }

    #[test]
    fn a_fast_turnover_is_bounded_by_the_rate_and_held_offers_give_none() {
        // Places held a second would free 450 a second; the rate lets 45 out.
        let (point, _, _) = wait_estimate(899, &cap(0, Some([1.0, 1.0]), 0.05)).expect("known");
        assert_eq!(point, 20);
        let held = CapModel {
            offer_rate_per_min: 0,
            ..cap(450, Some([30.0, 30.0]), 0.05)
        };
        assert_eq!(wait_estimate(0, &held), None);
    }

    #[test]
    fn ends_as_far_apart_as_allowed_still_give_a_range_to_plan_by() {
        // `W` between 16 s and 40 s (2.5×): the first range of most buyers while the cap fills.
        // Three minutes away it spans 1.88× (130–245 s); half a minute away, with the step and
        // the hearing, 2× (22–44 s).
        let c = cap(0, Some([16.0, 40.0]), 0.03);
        // The page draws the same figures (tests/pages/queue_snapshot.test.js).
        assert_eq!(wait_estimate(1_999, &c), Some((178, 130, 245)));
        assert_eq!(wait_estimate(337, &c), Some((31, 22, 44)));
    }
}
