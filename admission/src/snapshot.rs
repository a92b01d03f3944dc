//! The change feed: one snapshot per event per tick, published through a `watch` channel so
//! each waiting socket wakes once per tick whatever the crowd size.

use std::collections::VecDeque;

use serde::Serialize;

use crate::chance::SeatModel;
use crate::clock::UnixMs;
use crate::modes::{Mode, QueueMessage};
use crate::public::Public;
use crate::token::QueueClaims;
use crate::wait::CapModel;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum EventState {
    #[default]
    PreQueue,
    Open,
    Paused,
    SoldOut,
    Closed,
}

/// The event's queue as of the last tick (whichever instance ran it).
#[derive(Clone, Debug, PartialEq, Serialize, Default)]
pub struct Snapshot {
    pub event: String,
    /// The control row's version this tick obeyed.
    pub version: i64,
    pub state: EventState,
    /// `opens_at` has passed by the queue's clock (Redis `TIME` in Redis mode).
    pub opened: bool,
    /// When the queue opens (the organizer may move it until then).
    pub opens_at_ms: UnixMs,
    /// Offers ever made (lapsed ones included): the "served so far" of `position`.
    pub served: u64,
    /// Highest post-opening join sequence offered.
    pub cursor: u64,
    /// The pre-queue rank (in [0, 1)) of the last pre-queue ticket offered; `None` before any.
    pub prequeue_served_through: Option<f64>,
    /// Queued ahead of every not-yet-offered FIFO arrival (pre-queue and returned tokens).
    pub ahead_of_fifo: u64,
    /// Joins so far (the join sequence).
    pub join_seq: u64,
    pub waiting: u64,
    pub open_offers: u64,
    /// Claims in flight or just settled, each holding its place of the cap (`TickOutcome`).
    pub claiming: u64,
    pub active: u64,
    pub lapsed_total: u64,
    /// Offers per minute measured over the last minute; `None` before any outflow or paused.
    pub outflow_per_min: Option<f64>,
    pub epoch: String,
    pub at_ms: UnixMs,
    /// The outflow's variation: the relative spread of its 10-second samples over the last
    /// minute, widened while the measurement is young.
    pub outflow_spread: Option<f64>,
    /// The organizer's rate (offers per minute), before backpressure.
    pub rate_per_min: u32,
    /// Seats available now (held under an expired hold included), and held or paying.
    pub seats_left: u64,
    pub seats_held: u64,
    /// Seats per admitted buyer so far (the event's per-buyer limit before any data).
    pub seats_per_buyer: f64,
    /// What `seat_chance` is computed from (`chance`); `None` before the first tick.
    pub seat_model: Option<SeatModel>,
    /// The longest a waiting page goes between reads: the crowd ÷ the reads per second the
    /// front answers (`status::read_within_s`).
    pub read_within_s: u64,
    /// Seconds over which the pre-queue's first reads after the opening are spread
    /// (`opening`).
    pub opening_spread_s: u64,
    /// The organizer's mode (maintenance shows as `Paused` in `state`: offers pause).
    pub mode: Mode,
    /// The organizer's message to everyone waiting.
    pub message: Option<QueueMessage>,
    /// The pre-queue draw's seed, public from the opening (`fairness`): with it a pre-queue
    /// page works out its own score, and so its place, from the snapshot alone.
    pub seed: Option<String>,
    /// What the wait is computed from: the cap, its free places, the rate offers go out at
    /// and how long a place is held (`wait`); `None` before the first tick.
    pub cap: Option<CapModel>,
    /// The public JSON of this snapshot, serialized once when the tick is published.
    #[serde(skip)]
    pub public: Public,
}

impl Snapshot {
    /// Equal but for the tick's time, the outflow estimate and how long a place is held:
    /// nobody's place, the event's state and the counts shown are the same.
    pub fn same_queue(&self, other: &Snapshot) -> bool {
        let cap = match (self.cap, other.cap) {
            (Some(mine), Some(theirs)) => Some(CapModel {
                held_s: mine.held_s,
                held_spread: mine.held_spread,
                ..theirs
            }),
            (_, theirs) => theirs,
        };
        let comparable = Snapshot {
            at_ms: self.at_ms,
            outflow_per_min: self.outflow_per_min,
            outflow_spread: self.outflow_spread,
            cap,
            ..other.clone()
        };
        *self == comparable
    }

    /// The point estimate of the wait for `position` buyers ahead; `None` without one (the
    /// same figure `status` gives, for pushes from the snapshot).
    pub fn estimated_wait_s(&self, position: u64) -> Option<u64> {
        self.wait_estimate(position).map(|(point, _, _)| point)
    }

    /// The wait for `position` buyers ahead: (point, low, high) seconds; `None` while nothing
    /// flows (paused, sold out, closed, before the opening) or while the cap's turnover is not
    /// yet known for a place beyond its free ones (`wait`).
    pub fn wait_estimate(&self, position: u64) -> Option<(u64, u64, u64)> {
        crate::wait::wait_estimate(position, self.cap.as_ref()?)
    }

    /// The chance (0–1) that `position` buyers ahead leave a seat: 0 when sold out, `None`
    /// before the order is drawn, once closed, before the first tick, or while the model rests
    /// on its priors beyond the places the seats cover (`SeatModel::stated`).
    pub fn seat_chance(&self, position: u64) -> Option<f64> {
        match self.state {
            EventState::SoldOut => Some(0.0),
            EventState::Closed | EventState::PreQueue => None,
            EventState::Open | EventState::Paused => {
                self.seat_model.and_then(|m| m.stated(position))
            }
        }
    }

    /// Buyers ahead of this token from the cached counters alone (no backend call): exact for
    /// FIFO arrivals, an upper bound (the whole remaining pre-queue) for pre-queue ones; `None`
    /// once its turn has come.
    pub fn position_hint(&self, claims: &QueueClaims) -> Option<u64> {
        // The frontiers are the general lane's: a priority place asks the backend.
        if claims.seq >= crate::entry::PRIORITY_BASE {
            return None;
        }
        if claims.pre_queue {
            return (self.ahead_of_fifo > 0).then(|| self.ahead_of_fifo - 1);
        }
        (claims.seq > self.cursor).then(|| self.ahead_of_fifo + claims.seq - self.cursor - 1)
    }
}

/// Measured outflow: served counter samples over the sliding minute, taken only while offers
/// can flow.
#[derive(Debug, Default)]
pub(crate) struct Outflow {
    samples: VecDeque<(UnixMs, u64)>,
}

/// The outflow over the last minute and its variation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Measured {
    pub per_min: f64,
    /// Relative spread (standard deviation ÷ mean) of the 10-second outflows, plus a widening
    /// while less than a minute was seen; within [0.1, 0.4].
    pub spread: f64,
}

const WINDOW_MS: i64 = 60_000;
const BIN_MS: i64 = 10_000;
/// The spread assumed while fewer than two 10-second samples exist.
const FIRST_SPREAD: f64 = 0.3;
/// Added to the spread when the measurement is brand new, shrinking to nothing at a minute.
const YOUNG_SPREAD: f64 = 0.3;

impl Outflow {
    /// The outflow as of this tick; `flowing`: whether offers could go out (open, opened,
    /// someone in line). Time when they could not is no measure: the minute starts again.
    pub(crate) fn record(&mut self, at_ms: UnixMs, served: u64, flowing: bool) -> Option<Measured> {
        if !flowing {
            self.samples.clear();
            return None;
        }
        // A reset counter (Redis loss) restarts the measurement.
        if self.samples.back().is_some_and(|&(_, s)| s > served) {
            self.samples.clear();
        }
        self.samples.push_back((at_ms, served));
        while self
            .samples
            .front()
            .is_some_and(|&(t, _)| at_ms - t > WINDOW_MS)
        {
            self.samples.pop_front();
        }
        let &(t0, s0) = self.samples.front()?;
        let span = at_ms - t0;
        if span < 1_000 || served == s0 {
            return None;
        }
        let per_min = (served - s0) as f64 * 60_000.0 / span as f64;
        let observed = self.bin_spread(at_ms, served).unwrap_or(FIRST_SPREAD);
        let young = YOUNG_SPREAD * (1.0 - span as f64 / WINDOW_MS as f64).clamp(0.0, 1.0);
        Some(Measured {
            per_min,
            spread: (observed + young).clamp(0.1, 0.4),
        })
    }

    /// The served counter as of `t` (the last sample at or before it).
    fn served_at(&self, t: UnixMs) -> Option<u64> {
        let i = self.samples.partition_point(|&(at, _)| at <= t);
        i.checked_sub(1).map(|i| self.samples[i].1)
    }

    /// Standard deviation ÷ mean of the outflow in the 10-second bins back from `now`.
    fn bin_spread(&self, now: UnixMs, served: u64) -> Option<f64> {
        let mut rates = Vec::with_capacity(6);
        let mut end = served;
        for j in 1..=(WINDOW_MS / BIN_MS) {
            let Some(start) = self.served_at(now - j * BIN_MS) else {
                break;
            };
            rates.push(end.saturating_sub(start) as f64);
            end = start;
        }
        if rates.len() < 2 {
            return None;
        }
        let n = rates.len() as f64;
        let mean = rates.iter().sum::<f64>() / n;
        if mean <= 0.0 {
            return None;
        }
        let var = rates.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(var.sqrt() / mean)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(outflow: &mut Outflow, ticks: i64, per_tick: impl Fn(i64) -> u64) -> Option<Measured> {
        let mut served = 0;
        let mut last = None;
        for t in 0..ticks {
            served += per_tick(t);
            last = outflow.record(t * 100, served, true);
        }
        last
    }

    #[test]
    fn a_steady_outflow_has_the_narrowest_spread_once_a_minute_is_seen() {
        let mut o = Outflow::default();
        let m = feed(&mut o, 900, |_| 1).expect("measured");
        assert!((m.per_min - 600.0).abs() < 1.0, "{m:?}");
        assert_eq!(m.spread, 0.1);
    }

    #[test]
    fn a_young_or_bursty_outflow_is_less_sure() {
        let mut young = Outflow::default();
        let y = feed(&mut young, 50, |_| 1).expect("measured");
        assert!(y.spread >= 0.35, "{y:?}");
        // Bursts: 40 offers in every other 10-second bin, none in between.
        let mut bursty = Outflow::default();
        let b = feed(&mut bursty, 900, |t| u64::from((t / 100) % 2 == 0) * 4).expect("measured");
        assert_eq!(b.spread, 0.4, "{b:?}");
        assert!(Outflow::default().record(0, 0, true).is_none());
    }

    #[test]
    fn a_quiet_before_the_opening_does_not_slow_the_outflow() {
        let mut o = Outflow::default();
        // Ten minutes before the opening, then ten seconds at 10 offers a second.
        for t in 0..6_000 {
            assert!(o.record(t * 100, 0, false).is_none());
        }
        let mut last = None;
        for t in 6_000..6_100 {
            last = o.record(t * 100, (t - 6_000) as u64, true);
        }
        let m = last.expect("measured");
        assert!((m.per_min - 600.0).abs() < 10.0, "{m:?}");
        // A pause starts the minute again.
        assert!(o.record(610_100, 100, false).is_none());
        assert!(o.record(610_200, 101, true).is_none());
    }
}
