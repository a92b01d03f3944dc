//! The chance of a seat: how likely a place in line is to be reached while a seat is left.
//!
//! Every buyer ahead gets one offer, and each offer ends with some seats taken: none when it
//! lapses (the buyer left the line, or never claimed) or when the buyer leaves without buying.
//! Per offer, on average, `q = c·b` seats go, where
//!
//! - `c` (claim share) = 1 − lapsed ÷ offers made at least an offer's life ago, drawn toward a
//!   prior of 0.9 by `PRIOR_WEIGHT` pseudo-offers, so the first few offers do not swing it.
//!   Claims come within seconds and lapses only when an offer runs out, so over every offer
//!   answered so far the last offer-life's claims are in and their lapses are not: the share
//!   would look higher than it is, most of all while the line moves fast. Only before the
//!   meter has kept an offer's life of ticks (just after a restart) is it claimed ÷ answered;
//! - `b` (seats per buyer) lies between two ends, as the seats taken so far (sold + (1 − ρ)·
//!   held, drawn toward the event's per-buyer limit by `PRIOR_WEIGHT` pseudo-buyers) over
//!   the sessions finished or holding seats (the high end: sessions still choosing are left
//!   out) and over every session claimed (the low end: they are counted as taking nothing).
//!   Sessions that end quickly are mostly sales, and those that run out of time looking for a
//!   seat end last, so early in a sale the few finished ones overstate `b`. The model goes
//!   from the low end toward the high one by the finished sessions' share of those counted,
//!   `F ÷ (F + choosing)` with `F` the sessions finished or holding plus the `PRIOR_WEIGHT`
//!   pseudo-buyers (the same as low ÷ high): while most sessions still choose, nearer the low
//!   end; once most have finished, near their rate, which by then is the sale's. How far the
//!   ends are apart is the uncertainty of `b`: `h`, their half-distance, as a uniform spread
//!   either side of it (variance `h² ÷ 3`). It narrows as the choosing sessions finish;
//! - `ρ` (return share) = holds that gave their seats back (released, expired, abandoned after
//!   a failed payment) ÷ holds ended, drawn toward a prior of 5 % by `PRIOR_WEIGHT` pseudo-holds.
//!   As with the claim share, only holds a hold's life old are judged: a sale ends within
//!   seconds, an unpaid hold only when its time runs out, so the last hold-life's sales would
//!   be in and its returns not, and the share would read low for as long as the sale runs.
//!   For the sale's first hold-life it is the prior alone.
//!   Measured, not assumed: in a storm, seats held by buyers who leave or whose card fails come
//!   back to the line, and the places just past the seats are the ones they reach.
//!
//! The seats the queue still competes for: `R = seats_left + ρ·held − b·choosing − q·open
//! offers` (sessions still choosing and offers not yet answered will take theirs first). A
//! buyer with `p` ahead reaches a seat when the `p` offers ahead leave at least one, so by the
//! normal approximation of their sum
//!
//! ```text
//! chance(p) = Φ((R − p·q − ½) / √(base_var + race + p·σ² + p²·(var(q̂) + (m·q)²)))
//! ```
//!
//! with `σ²` the variance of one offer's seats (`q(1 − q)` for one seat per buyer, else half
//! the bound `q(L − q)` for seats in `[0, L]`), `var(q̂) = σ² ÷ (offers answered + prior) +
//! c²·h² ÷ 3` the uncertainty of the estimate itself, `m` = 3% model error (the mix of buyers
//! drifts), and `base_var` the returns' own spread, the choosing sessions' share of `b`'s
//! uncertainty and a half seat of rounding. `race` (published as `race_var`) is the race for
//! the last seats: they go to the sessions choosing when the seats run out in the order their
//! buyers pick, not the order of their places, so a place before the end is reached or not as
//! if placed anywhere among the `W` sessions choosing and offers on their way (`(q·W)² ÷ 12`).
//! It counts only where seats are expected to be left for the place (`R − p·q − ½ ≥ 0`): a
//! place past the end is let in once every seat is taken, with nothing left to race for, and
//! mostly only a seat given back reaches it. So the chances no longer add up to the seats for
//! the line (the race takes from the places before the end and gives to none past it): places
//! past the end reached a seat less often than a race on both sides said. One `b` moves both
//! `R` and every offer's take, so the published `σ²` also carries their cross term
//! `2c·choosing·h² ÷ 3`. The page computes the same from the published [`SeatModel`]; `Φ` is
//! the Abramowitz–Stegun 7.1.26 approximation (error below 1.5e-7), written the same way in
//! `static/queue-snapshot.js`.
//!
//! Before the sale has shown how buyers behave the model is its priors alone, and every buyer
//! near the edge shares the same guess: stated as a number it would be wrong for all of them at
//! once. So a chance is stated only once the model rests on evidence (`known`): an offer's whole
//! life has passed since the opening (lapses show only when an offer runs out, claims within
//! seconds, so earlier counts see only the claims), and enough offers were answered and sessions
//! finished for them to outweigh the priors. Until then the page says "not known yet" with the
//! seats left and the people ahead, except for places the seats cover even if every buyer
//! ahead took the most allowed (`sure_places`): those are certain.

use serde::{Deserialize, Serialize};

/// Pseudo-observations behind each prior.
const PRIOR_WEIGHT: f64 = 5.0;
/// Share of offers claimed before any is answered.
const PRIOR_CLAIM_SHARE: f64 = 0.9;
/// Share of held seats that come back, before any hold has ended.
const PRIOR_RETURN_SHARE: f64 = 0.05;
/// Relative error allowed for the model itself.
const MODEL_ERROR: f64 = 0.03;
/// Offers answered, and sessions finished, before the counts outweigh the priors fourfold.
const EVIDENCE: u64 = 4 * PRIOR_WEIGHT as u64;

/// What the meter counts, for the model.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SeatCounts {
    pub seats_left: u64,
    pub held: u64,
    pub sold: u64,
    pub live_holds: u64,
    /// Holds ended with a sale, and holds ended giving their seats back.
    pub holds_sold: u64,
    pub holds_returned: u64,
    /// Sessions not ended (choosing, holding or paying).
    pub active: u64,
    /// Offers answered by a claim, and offers that lapsed.
    pub claimed: u64,
    pub lapsed: u64,
    /// Offers made at least an offer's life ago (claimed or lapsed by now), when known.
    pub run_their_course: Option<u64>,
    pub open_offers: u64,
    /// The event's per-buyer seat limit.
    pub limit: u32,
    /// Since the opening, and how long an offer stays open.
    pub opened_for_ms: u64,
    pub offer_s: u32,
}

/// The published parameters of `chance(p)` (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeatModel {
    /// `R`: seats left for the queue once earlier sessions and offers took theirs.
    pub seats_for_queue: f64,
    /// `q`: seats one offer takes on average.
    pub per_place: f64,
    /// `σ²`: the variance of one offer's seats.
    pub per_place_var: f64,
    /// `var(q̂) + (m·q)²`: the uncertainty of `q` itself, grows with the square of the place.
    pub estimate_var: f64,
    pub base_var: f64,
    /// The race for the last seats, counted before the end only (module docs).
    #[serde(default)]
    pub race_var: f64,
    /// Whether the counts behind the model outweigh its priors (module docs).
    pub known: bool,
    /// Places covered even if every session, offer and buyer ahead took the most allowed.
    pub sure_places: u64,
}

/// Seats per admitted buyer so far, and the model.
pub(crate) fn model(c: &SeatCounts) -> (f64, SeatModel) {
    let limit = f64::from(c.limit.max(1));
    let finished = c
        .claimed
        .saturating_sub(c.active)
        .saturating_add(c.live_holds);
    let returns = (c.holds_returned as f64 + PRIOR_WEIGHT * PRIOR_RETURN_SHARE)
        / ((c.holds_sold + c.holds_returned) as f64 + PRIOR_WEIGHT);
    let taken = c.sold as f64 + (1.0 - returns) * c.held as f64 + PRIOR_WEIGHT * limit;
    let choosing = c.active.saturating_sub(c.live_holds) as f64;
    let ended = finished as f64 + PRIOR_WEIGHT;
    let high = taken / ended;
    let low = taken / (ended + choosing);
    // The finished sessions speak for the choosing ones in proportion to their share.
    let per_buyer = low + (high - low) * ended / (ended + choosing);
    let per_buyer_var = ((high - low) / 2.0).powi(2) / 3.0;
    let (answered, claimed) = match c.run_their_course {
        Some(ran) if ran >= c.lapsed => (ran, ran - c.lapsed),
        _ => (c.claimed + c.lapsed, c.claimed),
    };
    let claim_share =
        (claimed as f64 + PRIOR_WEIGHT * PRIOR_CLAIM_SHARE) / (answered as f64 + PRIOR_WEIGHT);
    let q = claim_share * per_buyer;
    let per_place_var = if limit <= 1.0 {
        q * (1.0 - q).max(0.0)
    } else {
        q * (limit - q).max(0.0) / 2.0
    }
    .max(0.05 * q);
    let seats_for_queue = c.seats_left as f64 + returns * c.held as f64
        - per_buyer * choosing
        - q * c.open_offers as f64;
    let known = answered >= EVIDENCE
        && finished >= EVIDENCE
        && c.opened_for_ms >= u64::from(c.offer_s) * 1_000;
    // Every session still open and every open offer may yet take the limit.
    let spoken_for = (c.active + c.open_offers).saturating_mul(u64::from(c.limit.max(1)));
    let sure_places = match c.seats_left.checked_sub(spoken_for) {
        Some(spare) if spare >= 1 => (spare - 1) / u64::from(c.limit.max(1)) + 1,
        _ => 0,
    };
    let model = SeatModel {
        seats_for_queue: round(seats_for_queue, 3),
        per_place: round(q, 5),
        // `b` moves `R` and every offer's take together: the cross term of their variances.
        per_place_var: round(
            per_place_var + 2.0 * claim_share * choosing * per_buyer_var,
            5,
        ),
        estimate_var: round(
            per_place_var / (answered as f64 + PRIOR_WEIGHT)
                + claim_share.powi(2) * per_buyer_var
                + (MODEL_ERROR * q).powi(2),
            7,
        ),
        base_var: round(
            0.25 + c.held as f64 * returns * (1.0 - returns) + choosing.powi(2) * per_buyer_var,
            3,
        ),
        // The last seats go to the sessions choosing when they run out, in the order their
        // buyers pick: a place's rank among them and the offers on their way is uniform.
        race_var: round((q * (choosing + c.open_offers as f64)).powi(2) / 12.0, 3),
        known,
        sure_places,
    };
    (round(per_buyer, 3), model)
}

impl SeatModel {
    /// The chance stated to a buyer with `position` ahead: certain within the sure places, the
    /// model's once it is known, otherwise not known yet.
    pub fn stated(&self, position: u64) -> Option<f64> {
        if position < self.sure_places {
            Some(1.0)
        } else {
            self.known.then(|| self.chance(position))
        }
    }

    /// The chance (0–1, two decimals) that `position` buyers ahead leave a seat.
    pub fn chance(&self, position: u64) -> f64 {
        let p = position as f64;
        let mean = self.seats_for_queue - p * self.per_place - 0.5;
        let race = if mean >= 0.0 { self.race_var } else { 0.0 };
        let var = self.base_var + race + p * self.per_place_var + p * p * self.estimate_var;
        round(normal_cdf(mean / var.max(1e-9).sqrt()), 2)
    }
}

/// `x` to `digits` decimals, as published.
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Φ(z) by Abramowitz and Stegun 7.1.26.
pub(crate) fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-x * x).exp();
    if z >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sale(seats_left: u64) -> SeatCounts {
        SeatCounts {
            seats_left,
            limit: 1,
            claimed: 2_000,
            lapsed: 100,
            active: 0,
            sold: 2_000,
            ..SeatCounts::default()
        }
    }

    #[test]
    fn phi_is_the_normal_distribution() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.96) - 0.975).abs() < 1e-4);
        assert!((normal_cdf(-1.0) - 0.158_655).abs() < 1e-4);
    }

    #[test]
    fn near_the_front_of_plenty_is_very_likely_and_far_beyond_the_seats_is_not() {
        let (_, m) = model(&sale(1_000));
        assert!(m.chance(0) > 0.99);
        assert!(m.chance(500) > 0.95);
        assert!(m.chance(5_000) < 0.01);
        // Chances fall with the place, and the middle is where seats ÷ seats per offer runs out.
        let mut last = 1.0;
        for p in (0..3_000).step_by(50) {
            let c = m.chance(p);
            assert!(c <= last, "chance rose from {last} to {c} at {p}");
            last = c;
        }
        let edge = (m.seats_for_queue / m.per_place) as u64;
        assert!((0.3..=0.7).contains(&m.chance(edge)), "{}", m.chance(edge));
    }

    #[test]
    fn lapses_let_people_behind_the_seat_count_in() {
        // 1,000 seats, a tenth of offers lapse and buyers take one seat: the 1,050th in line
        // still has a fair chance.
        let (per_buyer, m) = model(&sale(1_000));
        assert!((per_buyer - 1.0).abs() < 0.01, "{per_buyer}");
        assert!(m.per_place < 0.96, "{m:?}");
        assert!(m.chance(1_020) > 0.5, "{}", m.chance(1_020));
    }

    #[test]
    fn lapses_are_counted_against_the_offers_that_had_time_to_lapse() {
        // 2,000 offers claimed and 100 lapsed, but only 1,000 offers are an offer's life old:
        // the 100 lapses are a tenth of those, not a twentieth of all.
        let all = sale(1_000);
        let (_, over_all) = model(&all);
        let (_, over_run) = model(&SeatCounts {
            run_their_course: Some(1_000),
            ..all
        });
        // Seats per buyer are 1: `q` is the claim share.
        assert!((over_all.per_place - 0.95).abs() < 0.01, "{over_all:?}");
        assert!((over_run.per_place - 0.9).abs() < 0.01, "{over_run:?}");
        // Offers lost to a restart's short memory (fewer than have lapsed) fall back to all.
        let (_, short) = model(&SeatCounts {
            run_their_course: Some(50),
            ..all
        });
        assert_eq!(short, over_all);
    }

    #[test]
    fn held_seats_come_back_as_often_as_this_sales_holds_gave_theirs_back() {
        // Nothing left but 1,000 seats held: how many reach the line depends on how many held
        // seats this sale's buyers gave back so far, not on a fixed guess.
        let held = |sold, returned| SeatCounts {
            held: 1_000,
            live_holds: 1_000,
            active: 1_000,
            holds_sold: sold,
            holds_returned: returned,
            sold: 1_000,
            ..sale(0)
        };
        let (_, kept) = model(&held(2_000, 0));
        let (_, given_back) = model(&held(1_600, 400));
        // A fifth of ended holds gave their seats back: about 200 of the 1,000 come back.
        assert!(
            (given_back.seats_for_queue - 200.0).abs() < 5.0,
            "{given_back:?}"
        );
        assert!(kept.seats_for_queue < 5.0, "{kept:?}");
        assert!(given_back.chance(100) > 0.9, "{}", given_back.chance(100));
        assert!(kept.chance(100) < 0.01, "{}", kept.chance(100));
    }

    #[test]
    fn without_data_the_prior_is_the_per_buyer_limit_and_the_answer_is_unsure() {
        let none = SeatCounts {
            seats_left: 100,
            limit: 4,
            ..SeatCounts::default()
        };
        let (per_buyer, m) = model(&none);
        assert_eq!(per_buyer, 4.0);
        // 100 seats at four a buyer and 90% claiming: about 28 buyers.
        assert!(m.chance(10) > 0.8, "{}", m.chance(10));
        assert!(m.chance(60) < 0.1, "{}", m.chance(60));
        let c = m.chance(27);
        assert!((0.2..0.8).contains(&c), "{c}");
    }

    #[test]
    fn sessions_still_choosing_put_seats_per_buyer_between_two_ends_and_widen_the_chance() {
        // 2,000 sessions finished with a seat each and 1,000 still choosing, with 2,000 seats
        // left. Counted as taking nothing they put `b` at 2⁄3, left out at 1: the finished are
        // two thirds of the sessions, so the model goes two thirds of the way from the low end
        // to the high one, and is unsure between the two.
        let counts = |choosing: u64| SeatCounts {
            active: choosing,
            claimed: 2_000 + choosing,
            ..sale(2_000)
        };
        let (none_choosing, settled) = model(&counts(0));
        let (per_buyer, m) = model(&counts(1_000));
        assert!((none_choosing - 1.0).abs() < 0.01, "{none_choosing}");
        assert!((per_buyer - 8.0 / 9.0).abs() < 0.01, "{per_buyer}");
        assert!(
            m.estimate_var > 10.0 * settled.estimate_var,
            "{m:?} {settled:?}"
        );
        // The places where the seats run out are further back and the chance falls over more
        // of them: from 90 % to 10 % over hundreds of places, not a few dozen.
        let place_at = |m: &SeatModel, chance: f64| (0..20_000).find(|&p| m.chance(p) < chance);
        let span = |m: &SeatModel| place_at(m, 0.1).zip(place_at(m, 0.9)).map(|(a, b)| a - b);
        assert!(span(&m) > Some(400), "{:?}", span(&m));
        assert!(span(&settled) < Some(200), "{:?}", span(&settled));
        // Once the choosing sessions finish (a seat each), the ends meet again.
        let finished = SeatCounts {
            claimed: 3_000,
            sold: 3_000,
            ..sale(1_000)
        };
        let (per_buyer, after) = model(&finished);
        assert!((per_buyer - 1.0).abs() < 0.01, "{per_buyer}");
        assert!(after.estimate_var < 2.0 * settled.estimate_var, "{after:?}");
    }

    #[test]
    fn the_more_sessions_have_finished_the_more_their_rate_is_the_rate() {
        // Half of the finished sessions took a seat; the choosing ones, counted as taking
        // nothing, put the low end at a sixth while they are twice the finished. With few
        // finished the model stays near that low end; with most finished it is near their half.
        let counts = |finished: u64, choosing: u64| SeatCounts {
            active: choosing,
            claimed: finished + choosing,
            sold: finished / 2,
            ..sale(10_000)
        };
        let (early, _) = model(&counts(500, 1_000));
        let (late, _) = model(&counts(20_000, 1_000));
        let low = 250.0 / 1_500.0;
        assert!(early > low && early < 0.3, "{early}");
        assert!(late > 0.49 && late < 0.51, "{late}");
    }

    #[test]
    fn the_race_for_the_last_seats_widens_the_chance_before_the_end_with_those_choosing() {
        // The same seats left for the same line, with 50 or 1,000 sessions choosing (and as
        // many more seats, so both have the same seats for the queue): the last seats go to
        // whichever choosing session picks first, so before the end the chance falls over more
        // places with more of them; past it nothing is left to race for, and the middle stays.
        let counts = |choosing: u64| SeatCounts {
            active: choosing,
            claimed: 100_000 + choosing,
            sold: 100_000,
            ..sale(1_000 + choosing)
        };
        let (_, few) = model(&counts(50));
        let (_, many) = model(&counts(1_000));
        assert!(
            (few.seats_for_queue - many.seats_for_queue).abs() < 5.0,
            "{few:?} {many:?}"
        );
        let place_at = |m: &SeatModel, chance: f64| {
            (0..20_000u64).find(|&p| m.chance(p) < chance).unwrap_or(0) as f64
        };
        assert!(
            place_at(&many, 0.9) < place_at(&few, 0.9) - 250.0,
            "{} {}",
            place_at(&many, 0.9),
            place_at(&few, 0.9)
        );
        assert!((place_at(&many, 0.1) - place_at(&few, 0.1)).abs() < 30.0);
        assert!((place_at(&many, 0.5) - place_at(&few, 0.5)).abs() < 30.0);
        // Falling all the way, with no step where the race stops counting.
        let mut last = 1.0;
        for p in 0..2_000 {
            let c = many.chance(p);
            assert!(c <= last && last - c < 0.03, "{last} then {c} at {p}");
            last = c;
        }
    }

    #[test]
    fn sessions_still_choosing_and_open_offers_come_first() {
        let mut busy = sale(1_000);
        busy.active = 400;
        busy.claimed += 400;
        busy.open_offers = 300;
        let (_, quiet) = model(&sale(1_000));
        let (_, m) = model(&busy);
        assert!(m.seats_for_queue < quiet.seats_for_queue - 600.0, "{m:?}");
        assert!(m.chance(500) < quiet.chance(500));
    }

    #[test]
    fn on_priors_alone_only_the_places_the_seats_cover_are_stated() {
        let none = SeatCounts {
            seats_left: 100,
            limit: 4,
            offer_s: 20,
            ..SeatCounts::default()
        };
        let (_, m) = model(&none);
        assert!(!m.known);
        // 100 seats at four at most a buyer: the first 25 places are certain.
        assert_eq!(m.sure_places, 25);
        assert_eq!(m.stated(0), Some(1.0));
        assert_eq!(m.stated(24), Some(1.0));
        assert_eq!(m.stated(25), None, "the model's guess is not stated");
        assert_eq!(m.stated(1_000), None);
        // Sessions still open and offers not yet answered may each take the limit.
        let busy = SeatCounts {
            active: 10,
            open_offers: 5,
            ..none
        };
        assert_eq!(model(&busy).1.sure_places, 10);
        let spoken = SeatCounts { active: 25, ..none };
        assert_eq!(model(&spoken).1.sure_places, 0);
    }

    #[test]
    fn the_chance_is_stated_once_an_offers_life_has_passed_and_counts_outweigh_the_priors() {
        let mut c = sale(1_000);
        c.offer_s = 20;
        c.opened_for_ms = 19_999;
        let (_, early) = model(&c);
        assert!(!early.known, "lapses cannot have shown yet");
        assert_eq!(early.stated(1_020), None);
        c.opened_for_ms = 20_000;
        let (_, m) = model(&c);
        assert!(m.known);
        assert_eq!(m.stated(1_020), Some(m.chance(1_020)));
        // Few answers, or few sessions finished, are still the priors.
        let few = SeatCounts {
            claimed: 19,
            lapsed: 0,
            sold: 19,
            ..c
        };
        assert!(!model(&few).1.known);
        let choosing = SeatCounts { active: 1_990, ..c };
        assert!(!model(&choosing).1.known, "10 sessions finished");
    }

    #[test]
    fn sold_out_is_no_chance() {
        let (_, m) = model(&sale(0));
        assert!(m.chance(0) < 0.5);
        assert!(m.chance(100) < 0.01);
    }
}
