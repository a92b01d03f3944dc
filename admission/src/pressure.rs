//! Backpressure: how much of the organizer's rate the meter may use while the reservation core
//! behind it struggles. The host (the gateway) judges the core's health and calls
//! [`Admission::report_health`] about once a second; the meter multiplies `rate_per_min` by the
//! resulting share on every tick, and holds offers while the share is zero.
//!
//! The share moves like TCP's congestion window (additive increase, multiplicative decrease):
//! it halves on an unhealthy report, and climbs back a tenth per healthy report, so a recovered
//! core is not flooded at once. Like TCP, which halves its window once per round trip rather
//! than per lost packet, it halves at most once per `ROUND_TRIP_REPORTS`: a cut acts only once
//! the buyers it held back would have reached the core (read their offer, claimed, chosen), and
//! the load already in flight keeps the core unhealthy until then. Halving on every report
//! would take offers to nothing within seconds on the strength of that load alone, leave the
//! cap's places empty, and refill them all at once when the core recovers: a storm's outflow
//! would stop and start instead of slowing.

use std::sync::Mutex;

use crate::admission::Admission;

/// Below this share offers stop altogether: a trickle into a failing checkout helps nobody.
const FLOOR: f64 = 0.05;
const DECREASE: f64 = 0.5;
const INCREASE: f64 = 0.1;
/// Reports (about a second each) between two cuts.
const ROUND_TRIP_REPORTS: u32 = 5;

/// The meter's share of the configured rate and why it is what it is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pressure {
    /// 1.0 = the configured rate; 0.0 = offers held.
    pub share: f64,
    /// The signals that were unhealthy at the last report (empty when healthy).
    pub reasons: Vec<String>,
    /// Reports since the share was last cut.
    #[serde(skip)]
    since_cut: u32,
}

impl Default for Pressure {
    fn default() -> Self {
        Self {
            share: 1.0,
            reasons: Vec::new(),
            since_cut: ROUND_TRIP_REPORTS,
        }
    }
}

impl Pressure {
    fn next(&self, reasons: Vec<String>) -> Pressure {
        let since_cut = self.since_cut.saturating_add(1);
        let (share, since_cut) = if reasons.is_empty() {
            ((self.share + INCREASE).min(1.0), since_cut)
        } else if since_cut < ROUND_TRIP_REPORTS {
            // The last cut has not reached the core yet.
            (self.share, since_cut)
        } else {
            let halved = self.share * DECREASE;
            (if halved < FLOOR { 0.0 } else { halved }, 0)
        };
        Pressure {
            share,
            reasons,
            since_cut,
        }
    }

    /// The rate the meter offers at under this share (0 while held).
    pub(crate) fn scale(&self, rate_per_min: u32) -> u32 {
        (f64::from(rate_per_min) * self.share).round() as u32
    }
}

#[derive(Default)]
pub(crate) struct PressureCell(Mutex<Pressure>);

impl PressureCell {
    pub(crate) fn get(&self) -> Pressure {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl Admission {
    /// The host's verdict on the reservation core: `unhealthy` names each failing signal
    /// (empty = healthy). Returns the share the meter now uses. Each call is one step.
    pub fn report_health(&self, unhealthy: Vec<String>) -> Pressure {
        let mut p = self
            .inner
            .pressure
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let next = p.next(unhealthy);
        if next.share != p.share {
            tracing::info!(share = next.share, reasons = ?next.reasons, "backpressure: admission share changed");
        }
        *p = next.clone();
        next
    }

    /// The meter's current share of the configured rate, and why.
    pub fn pressure(&self) -> Pressure {
        self.inner.pressure.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_once_a_round_trip_while_unhealthy_stops_below_the_floor_and_climbs_back_slowly() {
        let mut p = Pressure::default();
        let bad = || vec!["hold_p99".to_owned()];
        p = p.next(bad());
        assert_eq!(p.share, 0.5, "the first unhealthy report cuts at once");
        // The load already in flight keeps the core unhealthy for a while: no second cut until
        // the first has had a round trip to act.
        for _ in 1..ROUND_TRIP_REPORTS {
            p = p.next(bad());
            assert_eq!(p.share, 0.5);
            assert_eq!(p.reasons, bad());
        }
        p = p.next(bad());
        assert_eq!(p.share, 0.25);
        for _ in 0..3 * ROUND_TRIP_REPORTS {
            p = p.next(bad());
        }
        assert_eq!(
            p.share, 0.0,
            "0.5 → 0.25 → 0.125 → 0.0625 → below the floor, one round trip each"
        );
        assert_eq!(p.scale(600), 0);
        p = p.next(Vec::new());
        assert!((p.share - 0.1).abs() < 1e-9);
        assert_eq!(p.scale(600), 60);
        for _ in 0..20 {
            p = p.next(Vec::new());
        }
        assert_eq!(p.share, 1.0);
        assert!(p.reasons.is_empty());
        // Healthy for a round trip since the last cut: a new trouble cuts at once.
        assert_eq!(p.next(bad()).share, 0.5);
    }
}
