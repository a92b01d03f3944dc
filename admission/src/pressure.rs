//! Backpressure: how much of the organizer's rate the meter may use while the reservation core
//! behind it struggles. The host (the gateway) judges the core's health and calls
//! [`Admission::report_health`] about once a second; the meter multiplies `rate_per_min` by the
//! resulting share on every tick, and holds offers while the share is zero.
//!
//! The share moves like TCP's congestion window (additive increase, multiplicative decrease):
//! it halves on each unhealthy report, so offers slow within seconds and stop within a few, and
//! climbs back a tenth per healthy report, so a recovered core is not flooded at once.

use std::sync::Mutex;

use crate::admission::Admission;

/// Below this share offers stop altogether: a trickle into a failing checkout helps nobody.
const FLOOR: f64 = 0.05;
const DECREASE: f64 = 0.5;
const INCREASE: f64 = 0.1;

/// The meter's share of the configured rate and why it is what it is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Pressure {
    /// 1.0 = the configured rate; 0.0 = offers held.
    pub share: f64,
    /// The signals that were unhealthy at the last report (empty when healthy).
    pub reasons: Vec<String>,
}

impl Default for Pressure {
    fn default() -> Self {
        Self {
            share: 1.0,
            reasons: Vec::new(),
        }
    }
}

impl Pressure {
    fn next(&self, reasons: Vec<String>) -> Pressure {
        let share = if reasons.is_empty() {
            (self.share + INCREASE).min(1.0)
        } else {
            let halved = self.share * DECREASE;
            if halved < FLOOR { 0.0 } else { halved }
        };
        Pressure { share, reasons }
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
    fn halves_while_unhealthy_stops_below_the_floor_and_climbs_back_slowly() {
        let mut p = Pressure::default();
        let bad = || vec!["hold_p99".to_owned()];
        p = p.next(bad());
        assert_eq!(p.share, 0.5);
        for _ in 0..4 {
            p = p.next(bad());
        }
        assert_eq!(
            p.share, 0.0,
            "0.5 → 0.25 → 0.125 → 0.0625 → below the floor"
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
    }
}
