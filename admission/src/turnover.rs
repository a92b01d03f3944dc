//! How long a buyer keeps a place under the cap, measured by the meter.
//!
//! At most `max_active` buyers choose seats at once: an offer takes a place, and the place
//! frees when the offer lapses or the session ends. Once the cap is full, offers go out only as
//! fast as places free, `max_active ÷ W` a second, with `W` the mean time a place is held. Each
//! tick gives the places taken (offers and sessions) and the offers made; over a sliding window
//! that is the exposure `E` (place-seconds), the places entered `A` and the places freed `n`
//! (entered less the growth in places taken between the window's ends). Then `E ÷ n` is `W` as
//! Little's law gives it from the exits, and `E ÷ A` from the entries. In a steady sale both
//! are `W`. While the sale starts, places fill faster than they free: `E ÷ A` is too short
//! (most places have not run their course) and `E ÷ n` too long (only the quick ones have
//! freed), so the two bound `W` and meet as the sale settles. The wait forecast (`wait.rs`)
//! uses both ends. The window spans four times `W` (two minutes at least, fifteen at most), so
//! a sale whose buyers keep their places for minutes is judged over many of them.

use std::collections::VecDeque;

use crate::clock::UnixMs;

/// The window: four times the time a place is held, within these bounds.
const MIN_WINDOW_MS: i64 = 120_000;
const MAX_WINDOW_MS: i64 = 900_000;
const WINDOWS_OF_W: f64 = 4.0;
/// Places freed before `W` is given: fewer say little about the mean.
const MIN_FREED: u64 = 20;

/// The mean seconds a place is held, as a range, and how sure the count behind it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Held {
    pub low_s: f64,
    pub high_s: f64,
    /// `1 ÷ √n`: the relative error of a mean over `n` exits.
    pub spread: f64,
}

/// Cumulative counts as of one tick.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at_ms: UnixMs,
    taken: u64,
    served: u64,
    /// Place-milliseconds since the measurement began.
    exposure: f64,
}

/// What one tick saw.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tick<'a> {
    pub at_ms: UnixMs,
    /// Places taken: sessions not ended plus open offers.
    pub taken: u64,
    /// Offers ever made.
    pub served: u64,
    /// The queue's epoch: a new one (the queue state was lost and rebuilt) drops its open
    /// offers without freeing their buyers' places, so the measurement starts again.
    pub epoch: &'a str,
}

#[derive(Debug, Default)]
pub(crate) struct Turnover {
    samples: VecDeque<Sample>,
    epoch: String,
}

impl Turnover {
    /// Records a tick; `measuring` is false before the opening and once closed, which starts
    /// the measurement again.
    pub(crate) fn record(&mut self, tick: Tick<'_>, measuring: bool) -> Option<Held> {
        let Tick {
            at_ms,
            taken,
            served,
            epoch,
        } = tick;
        if !measuring {
            self.samples.clear();
            return None;
        }
        if self.epoch != epoch {
            self.samples.clear();
            epoch.clone_into(&mut self.epoch);
        }
        let exposure = match self.samples.back() {
            // A clock step back or a counter that went back starts again.
            Some(last) if last.served <= served && last.at_ms <= at_ms => {
                last.exposure + last.taken as f64 * (at_ms - last.at_ms) as f64
            }
            _ => {
                self.samples.clear();
                0.0
            }
        };
        let next = Sample {
            at_ms,
            taken,
            served,
            exposure,
        };
        self.samples.push_back(next);
        while self
            .samples
            .front()
            .is_some_and(|s| at_ms - s.at_ms > MAX_WINDOW_MS)
        {
            self.samples.pop_front();
        }
        // A first judgement over all that is kept sets the window; the second is over it.
        let whole = self.held_since(0, &next)?;
        let window =
            ((whole.high_s * 1000.0 * WINDOWS_OF_W) as i64).clamp(MIN_WINDOW_MS, MAX_WINDOW_MS);
        let from = self
            .samples
            .partition_point(|s| s.at_ms < at_ms - window)
            .min(self.samples.len() - 1);
        self.held_since(from, &next)
    }

    /// Offers made by `at_ms`, from the ticks kept since the measurement began; `None` when
    /// they do not reach that far back.
    pub(crate) fn served_by(&self, at_ms: UnixMs) -> Option<u64> {
        let after = self.samples.partition_point(|s| s.at_ms <= at_ms);
        self.samples.get(after.checked_sub(1)?).map(|s| s.served)
    }

    /// `W` over the samples from index `from` to `last`; `None` while too few places freed.
    fn held_since(&self, from: usize, last: &Sample) -> Option<Held> {
        let first = self.samples.get(from)?;
        // Freed = entered − the growth in places taken, from the window's ends alone: a claim
        // between its offer and its session is in neither count for a moment, and must not
        // count as a place freed.
        let entered = last.served - first.served;
        let freed = i128::from(entered) - (i128::from(last.taken) - i128::from(first.taken));
        let freed = u64::try_from(freed).unwrap_or(0);
        if freed < MIN_FREED {
            return None;
        }
        let exposure_s = (last.exposure - first.exposure) / 1000.0;
        let by_exits = exposure_s / freed as f64;
        let by_entries = if entered == 0 {
            by_exits
        } else {
            exposure_s / entered as f64
        };
        Some(Held {
            low_s: by_exits.min(by_entries),
            high_s: by_exits.max(by_entries),
            spread: 1.0 / (freed as f64).sqrt(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(at_ms: i64, taken: u64, served: u64) -> Tick<'static> {
        Tick {
            at_ms,
            taken,
            served,
            epoch: "e1",
        }
    }

    /// A sale where every place is held `hold_ms` and the meter refills the cap each tick.
    fn sale(cap: u64, hold_ms: i64, until_ms: i64) -> Vec<Option<Held>> {
        let mut t = Turnover::default();
        // The opening's first tick, before the cap fills.
        t.record(tick(-100, 0, 0), true);
        let mut started: VecDeque<i64> = VecDeque::new();
        let mut served = 0;
        let mut out = Vec::new();
        for at in (0..=until_ms).step_by(100) {
            while started.front().is_some_and(|s| at - s >= hold_ms) {
                started.pop_front();
            }
            while (started.len() as u64) < cap {
                started.push_back(at);
                served += 1;
            }
            out.push(t.record(tick(at, started.len() as u64, served), true));
        }
        out
    }

    #[test]
    fn offers_made_by_a_past_moment_are_read_from_the_ticks_kept() {
        let mut t = Turnover::default();
        assert_eq!(t.served_by(0), None);
        t.record(tick(1_000, 0, 10), true);
        t.record(tick(2_000, 5, 30), true);
        t.record(tick(3_000, 5, 70), true);
        assert_eq!(t.served_by(500), None, "before the first tick kept");
        assert_eq!(t.served_by(1_000), Some(10));
        assert_eq!(t.served_by(2_999), Some(30));
        assert_eq!(t.served_by(9_000), Some(70));
        // A pause in the measurement forgets the past.
        t.record(tick(4_000, 5, 80), false);
        assert_eq!(t.served_by(3_000), None);
    }

    #[test]
    fn a_steady_sale_gives_the_time_a_place_is_held() {
        // 300 places held 30 s each: both ends agree on 30 s once the window is past the start.
        let held = sale(300, 30_000, 400_000);
        let last = held.last().copied().flatten().expect("measured");
        assert!((last.low_s - 30.0).abs() < 1.0, "{last:?}");
        assert!((last.high_s - 30.0).abs() < 1.0, "{last:?}");
        assert!(last.spread < 0.1, "{last:?}");
    }

    #[test]
    fn at_the_opening_the_two_ends_bound_the_real_time() {
        // Nothing freed yet: nothing is said.
        let held = sale(300, 30_000, 60_000);
        assert!(held[..290].iter().all(Option::is_none));
        // Once places free, the range holds the real 30 s and narrows as the sale settles.
        let early = held[320].expect("measured at 32 s");
        assert!(early.low_s <= 30.0 && early.high_s >= 30.0, "{early:?}");
        let later = held[600].expect("measured at 60 s");
        assert!(later.low_s <= 30.0 && later.high_s >= 30.0, "{later:?}");
        assert!(
            later.high_s / later.low_s < early.high_s / early.low_s,
            "{early:?} {later:?}"
        );
    }

    #[test]
    fn places_held_for_minutes_are_judged_over_many_of_them() {
        // 100 places held five minutes: a two-minute window would see only the first exits;
        // four times `W` sees them settle.
        let held = sale(100, 300_000, 1_800_000);
        let last = held.last().copied().flatten().expect("measured");
        assert!((last.low_s - 300.0).abs() < 10.0, "{last:?}");
        assert!((last.high_s - 300.0).abs() < 10.0, "{last:?}");
    }

    #[test]
    fn a_pause_keeps_measuring_and_a_reset_starts_again() {
        let mut t = Turnover::default();
        // 50 places held, 25 freed and refilled a second for a minute: 2 s a place.
        let mut served = 50;
        assert!(t.record(tick(0, 50, served), true).is_none());
        let mut last = None;
        for s in 1..=60 {
            served += 25;
            last = t.record(tick(s * 1000, 50, served), true);
        }
        let steady = last.expect("measured");
        assert!((steady.low_s - 2.0).abs() < 0.01 && (steady.high_s - 2.0).abs() < 0.01);
        // Paused: no offers, places still free; the exits still tell the time a place is held.
        let paused = t.record(tick(61_000, 25, served), true).expect("measured");
        assert!(paused.high_s >= 2.0, "{paused:?}");
        // A claim between its offer and its session is briefly in neither count: not a place
        // freed.
        let before = t.record(tick(62_000, 50, served), true).expect("measured");
        t.record(tick(62_100, 49, served), true);
        let after = t.record(tick(62_200, 50, served), true).expect("measured");
        assert!(after.high_s >= before.high_s, "{before:?} {after:?}");
        // A new epoch (the queue state was lost: its open offers gone, their buyers' places
        // not freed) starts the measurement again, as does a counter that went back.
        let lost = Tick {
            epoch: "e2",
            ..tick(62_300, 25, served)
        };
        assert!(t.record(lost, true).is_none());
        assert!(t.record(tick(62_400, 25, 10), true).is_none());
        // Closed: nothing measured.
        assert!(t.record(tick(63_000, 25, 40), false).is_none());
    }
}
