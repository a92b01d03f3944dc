//! Fan-out time per tick: how long after the first waiting socket of an event handled a tick
//! the last one finished with it. Atomics only: every socket touches this on every tick, so a
//! lock here would be contended by the whole crowd.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One event's tick in progress.
pub struct FanOut {
    event: String,
    origin: Instant,
    /// `at_ms` of the tick being fanned out (0 = none yet).
    tick: AtomicI64,
    first_ns: AtomicU64,
    last_ns: AtomicU64,
}

impl FanOut {
    fn new(event: &str) -> Self {
        Self {
            event: event.to_owned(),
            origin: Instant::now(),
            tick: AtomicI64::new(0),
            first_ns: AtomicU64::new(0),
            last_ns: AtomicU64::new(0),
        }
    }

    /// A socket finished handling the tick stamped `at_ms`. The first socket to see a newer
    /// tick closes the previous one and records its fan-out time.
    pub fn done(&self, at_ms: i64) {
        let now = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let current = self.tick.load(Ordering::Acquire);
        if at_ms == current {
            self.last_ns.fetch_max(now, Ordering::AcqRel);
            return;
        }
        if at_ms < current {
            return; // a late socket of an older tick
        }
        if self
            .tick
            .compare_exchange(current, at_ms, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            let first = self.first_ns.swap(now, Ordering::AcqRel);
            let last = self.last_ns.swap(now, Ordering::AcqRel);
            if current != 0 {
                let seconds = last.saturating_sub(first) as f64 / 1e9;
                metrics::histogram!("floodgate_fanout_seconds", "event" => self.event.clone())
                    .record(seconds);
            }
        } else {
            self.last_ns.fetch_max(now, Ordering::AcqRel);
        }
    }
}

/// The fan-out trackers of every event with sockets on this instance.
#[derive(Clone, Default)]
pub struct FanOuts(Arc<Mutex<HashMap<String, Arc<FanOut>>>>);

impl FanOuts {
    /// The tracker of `event` (taken once per socket, not per tick).
    pub fn of(&self, event: &str) -> Arc<FanOut> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.entry(event.to_owned())
            .or_insert_with(|| Arc::new(FanOut::new(event)))
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_is_closed_by_the_next_one() {
        let fanouts = FanOuts::default();
        let a = fanouts.of("e");
        let b = fanouts.of("e");
        assert!(Arc::ptr_eq(&a, &b));
        a.done(100);
        std::thread::sleep(std::time::Duration::from_millis(2));
        b.done(100);
        let spread = a.last_ns.load(Ordering::Acquire) - a.first_ns.load(Ordering::Acquire);
        assert!(spread > 0);
        // An older tick's straggler changes nothing; the next tick starts a new measurement.
        a.done(50);
        a.done(200);
        assert_eq!(a.tick.load(Ordering::Acquire), 200);
        assert_eq!(
            a.first_ns.load(Ordering::Acquire),
            a.last_ns.load(Ordering::Acquire)
        );
    }
}
