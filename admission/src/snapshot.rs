//! The change feed: one snapshot per event per tick, published through a `watch` channel so
//! each waiting socket wakes once per tick whatever the crowd size.

use std::collections::VecDeque;

use serde::Serialize;

use crate::clock::UnixMs;
use crate::token::QueueClaims;

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
    pub active: u64,
    pub lapsed_total: u64,
    /// Offers per minute measured over the last minute; `None` before any outflow or paused.
    pub outflow_per_min: Option<f64>,
    pub epoch: String,
    pub at_ms: UnixMs,
}

impl Snapshot {
    /// The point estimate of the wait for `position` buyers ahead at the measured outflow;
    /// `None` without one (the same figure `status` gives, for pushes from the snapshot).
    /// Equal but for the tick's time and the outflow estimate: nobody's place, the event's
    /// state and the counts shown are the same.
    pub fn same_queue(&self, other: &Snapshot) -> bool {
        let comparable = Snapshot {
            at_ms: self.at_ms,
            outflow_per_min: self.outflow_per_min,
            ..other.clone()
        };
        *self == comparable
    }

    pub fn estimated_wait_s(&self, position: u64) -> Option<u64> {
        crate::status::wait_estimate(position, self.outflow_per_min).map(|(point, _, _)| point)
    }

    /// Buyers ahead of this token from the cached counters alone (no backend call): exact for
    /// FIFO arrivals, an upper bound (the whole remaining pre-queue) for pre-queue ones; `None`
    /// once its turn has come.
    pub fn position_hint(&self, claims: &QueueClaims) -> Option<u64> {
        if claims.pre_queue {
            return (self.ahead_of_fifo > 0).then(|| self.ahead_of_fifo - 1);
        }
        (claims.seq > self.cursor).then(|| self.ahead_of_fifo + claims.seq - self.cursor - 1)
    }
}

/// Measured outflow: served counter samples over a sliding minute.
#[derive(Debug, Default)]
pub(crate) struct Outflow {
    samples: VecDeque<(UnixMs, u64)>,
}

const WINDOW_MS: i64 = 60_000;

impl Outflow {
    pub(crate) fn record(&mut self, at_ms: UnixMs, served: u64) -> Option<f64> {
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
        Some((served - s0) as f64 * 60_000.0 / span as f64)
    }
}
