//! What each buyer will do, drawn once from the run's seed and the buyer's index, so worker
//! processes agree on the scenario without talking to each other.

use std::net::Ipv4Addr;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::config::{Config, SeatChoice};

/// How a buyer leaves early, if at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leave {
    Stays,
    /// Never claims the offer.
    AtOffer,
    /// Claims, then leaves without holding.
    AfterClaim,
    /// Holds, then leaves: the hold expires.
    WhileHolding,
}

#[derive(Clone, Debug)]
pub struct Plan {
    pub index: u64,
    /// Since the run's start.
    pub arrive_after: Duration,
    pub websocket: bool,
    pub leave: Leave,
    pub two_tabs: bool,
    /// The first payment method; a declined buyer retries with `pm_card_visa`.
    pub card: &'static str,
    /// The client address this buyer's requests are forwarded for.
    pub forwarded_for: Ipv4Addr,
    pub gateway: usize,
    pub seed: u64,
}

impl Plan {
    pub fn draw(config: &Config, index: u64) -> Plan {
        let seed = config.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut rng = StdRng::seed_from_u64(seed);
        let prequeue = rng.random_bool(config.prequeue_share);
        let opens = config.opens_in_s as f64;
        let arrive_s = if prequeue {
            rng.random_range(0.0..(opens - 0.5).max(0.01))
        } else {
            let start = opens.min(config.window_s - 0.01);
            rng.random_range(start..config.window_s.max(start + 0.01))
        };
        let leave = {
            let x: f64 = rng.random();
            let a = config.abandon_offer_share;
            let b = a + config.abandon_claimed_share;
            let c = b + config.abandon_hold_share;
            if x < a {
                Leave::AtOffer
            } else if x < b {
                Leave::AfterClaim
            } else if x < c {
                Leave::WhileHolding
            } else {
                Leave::Stays
            }
        };
        let card = {
            let x: f64 = rng.random();
            let a = config.declined_share;
            let b = a + config.slow_share;
            let c = b + config.lost_share;
            let d = c + config.error_share;
            if x < a {
                "pm_card_declined"
            } else if x < b {
                "pm_card_slow"
            } else if x < c {
                "pm_card_lost"
            } else if x < d {
                "pm_card_error"
            } else {
                "pm_card_visa"
            }
        };
        // 10.0.0.0/8 holds 16.7M distinct addresses: one per buyer keeps the join limit per
        // address on, as it is in production behind a proxy.
        let forwarded_for = Ipv4Addr::from(0x0A00_0000u32 | ((index as u32 + 1) & 0x00FF_FFFF));
        Plan {
            index,
            arrive_after: Duration::from_secs_f64(arrive_s),
            websocket: rng.random_bool(config.ws_share),
            leave,
            two_tabs: rng.random_bool(config.two_tab_share),
            card,
            forwarded_for,
            gateway: (index % config.gateways.len() as u64) as usize,
            seed,
        }
    }

    /// Buyers who mean to buy a seat (the demand `seats sold = min(demand, seats)` counts).
    pub fn wants_to_buy(&self) -> bool {
        self.leave == Leave::Stays
    }
}

/// Picks seats: a Zipf draw over seat ranks (rank 0 the hottest), by cumulative weights.
pub struct SeatPicker {
    ids: Vec<String>,
    cumulative: Vec<f64>,
    pub choice: SeatChoice,
}

impl SeatPicker {
    pub fn new(ids: Vec<String>, zipf_s: f64, choice: SeatChoice) -> SeatPicker {
        let mut total = 0.0;
        let cumulative = (0..ids.len())
            .map(|k| {
                total += 1.0 / ((k + 1) as f64).powf(zipf_s);
                total
            })
            .collect();
        SeatPicker {
            ids,
            cumulative,
            choice,
        }
    }

    pub fn pick(&self, rng: &mut StdRng) -> Option<&str> {
        let last = *self.cumulative.last()?;
        let x = rng.random_range(0.0..last);
        let i = self.cumulative.partition_point(|c| *c <= x);
        self.ids.get(i.min(self.ids.len() - 1)).map(String::as_str)
    }
}

/// Seat ids the soak creates: rows of 50, `<section>-<row>-<n>`.
pub fn seat_ids(section: &str, count: u32) -> Vec<String> {
    (0..count)
        .map(|i| format!("{section}-{}-{}", i / 50 + 1, i % 50 + 1))
        .collect()
}
