//! The chance of a seat: how likely a place in line is to be reached while a seat is left.
//!
//! Every buyer ahead gets one offer, and each offer ends with some seats taken: none when it
//! lapses (the buyer left the line, or never claimed) or when the buyer leaves without buying.
//! Per offer, on average, `q = c·b` seats go, where
//!
//! - `c` (claim share) = claimed ÷ (claimed + lapsed) offers, drawn toward a prior of 0.9 by
//!   `PRIOR_WEIGHT` pseudo-offers, so the first few offers do not swing it;
//! - `b` (seats per buyer) = (sold + (1 − ρ)·held) ÷ (finished sessions + sessions holding
//!   seats), drawn toward the event's per-buyer limit by `PRIOR_WEIGHT` pseudo-buyers. `ρ` is
//!   the share of held seats that come back (holds that lapse, payments that fail); sessions
//!   still choosing are left out, they have not shown what they take.
//!
//! The seats the queue still competes for: `R = seats_left + ρ·held − b·choosing − q·open
//! offers` (sessions still choosing and offers not yet answered will take theirs first). A
//! buyer with `p` ahead reaches a seat when the `p` offers ahead leave at least one, so by the
//! normal approximation of their sum
//!
//! ```text
//! chance(p) = Φ((R − p·q − ½) / √(base_var + p·σ² + p²·(var(q̂) + (m·q)²)))
//! ```
//!
//! with `σ²` the variance of one offer's seats (`q(1 − q)` for one seat per buyer, else half
//! the bound `q(L − q)` for seats in `[0, L]`), `var(q̂) = σ² ÷ (offers answered + prior)` the
//! uncertainty of the estimate itself, `m` = 3% model error (the mix of buyers drifts), and
//! `base_var` the returns' own spread plus a half seat of rounding. The page computes the same
//! from the published [`SeatModel`]; `Φ` is the Abramowitz–Stegun 7.1.26 approximation (error
//! below 1.5e-7), written the same way in `static/queue-snapshot.js`.

use serde::{Deserialize, Serialize};

/// Pseudo-observations behind each prior.
const PRIOR_WEIGHT: f64 = 5.0;
/// Share of offers claimed before any is answered.
const PRIOR_CLAIM_SHARE: f64 = 0.9;
/// Share of held seats that come back.
const RETURN_SHARE: f64 = 0.05;
/// Relative error allowed for the model itself.
const MODEL_ERROR: f64 = 0.03;

/// What the meter counts, for the model.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SeatCounts {
    pub seats_left: u64,
    pub held: u64,
    pub sold: u64,
    pub live_holds: u64,
    /// Sessions not ended (choosing, holding or paying).
    pub active: u64,
    /// Offers answered by a claim, and offers that lapsed.
    pub claimed: u64,
    pub lapsed: u64,
    pub open_offers: u64,
    /// The event's per-buyer seat limit.
    pub limit: u32,
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
}

/// Seats per admitted buyer so far, and the model.
pub(crate) fn model(c: &SeatCounts) -> (f64, SeatModel) {
    let limit = f64::from(c.limit.max(1));
    let finished = c
        .claimed
        .saturating_sub(c.active)
        .saturating_add(c.live_holds);
    let taken = c.sold as f64 + (1.0 - RETURN_SHARE) * c.held as f64;
    let per_buyer = (taken + PRIOR_WEIGHT * limit) / (finished as f64 + PRIOR_WEIGHT);
    let answered = (c.claimed + c.lapsed) as f64;
    let claim_share =
        (c.claimed as f64 + PRIOR_WEIGHT * PRIOR_CLAIM_SHARE) / (answered + PRIOR_WEIGHT);
    let q = claim_share * per_buyer;
    let per_place_var = if limit <= 1.0 {
        q * (1.0 - q).max(0.0)
    } else {
        q * (limit - q).max(0.0) / 2.0
    }
    .max(0.05 * q);
    let choosing = c.active.saturating_sub(c.live_holds) as f64;
    let seats_for_queue = c.seats_left as f64 + RETURN_SHARE * c.held as f64
        - per_buyer * choosing
        - q * c.open_offers as f64;
    let model = SeatModel {
        seats_for_queue: round(seats_for_queue, 3),
        per_place: round(q, 5),
        per_place_var: round(per_place_var, 5),
        estimate_var: round(
            per_place_var / (answered + PRIOR_WEIGHT) + (MODEL_ERROR * q).powi(2),
            7,
        ),
        base_var: round(
            0.25 + c.held as f64 * RETURN_SHARE * (1.0 - RETURN_SHARE),
            3,
        ),
    };
    (round(per_buyer, 3), model)
}

impl SeatModel {
    /// The chance (0–1, two decimals) that `position` buyers ahead leave a seat.
    pub fn chance(&self, position: u64) -> f64 {
        let p = position as f64;
        let mean = self.seats_for_queue - p * self.per_place - 0.5;
        let var = self.base_var + p * self.per_place_var + p * p * self.estimate_var;
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
    fn sold_out_is_no_chance() {
        let (_, m) = model(&sale(0));
        assert!(m.chance(0) < 0.5);
        assert!(m.chance(100) < 0.01);
    }
}
