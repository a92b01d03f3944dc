//! The one clock admission reads in this process.
//!
//! In production the memory backend judges time by tokio's monotonic clock anchored to the wall
//! clock at start (so paused tokio time steers it in tests), and the Redis backend asks Redis's
//! `TIME`. A manual clock (feature `testing`) is passed to the Redis scripts as an argument so
//! tests can steer Redis time without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub type UnixMs = i64;

#[derive(Clone, Debug)]
pub struct Clock(Kind);

#[derive(Clone, Debug)]
enum Kind {
    Monotonic {
        base_ms: UnixMs,
        base: tokio::time::Instant,
    },
    // Only tests steer time; the variant exists in every build so the matches stay simple.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    Manual {
        now_ms: Arc<AtomicI64>,
        base_ms: UnixMs,
        base_std: std::time::Instant,
    },
}

impl Clock {
    /// Wall clock at creation plus tokio's monotonic time since (paused time steers it).
    pub fn system() -> Self {
        let base_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as UnixMs)
            .unwrap_or_default();
        let base = tokio::time::Instant::now();
        Clock(Kind::Monotonic { base_ms, base })
    }

    /// A clock that only moves when told; Redis scripts receive its reading as an argument.
    #[cfg(feature = "testing")]
    pub fn manual(start_ms: UnixMs) -> Self {
        Clock(Kind::Manual {
            now_ms: Arc::new(AtomicI64::new(start_ms)),
            base_ms: start_ms,
            base_std: std::time::Instant::now(),
        })
    }

    /// Moves a manual clock forward (no effect on the system clock).
    #[cfg(feature = "testing")]
    pub fn advance(&self, by: Duration) {
        if let Kind::Manual { now_ms, .. } = &self.0 {
            now_ms.fetch_add(by.as_millis() as i64, Ordering::SeqCst);
        }
    }

    /// Steps a manual clock back (a Redis failover to a replica whose clock lags).
    #[cfg(feature = "testing")]
    pub fn step_back(&self, by: Duration) {
        if let Kind::Manual { now_ms, .. } = &self.0 {
            now_ms.fetch_sub(by.as_millis() as i64, Ordering::SeqCst);
        }
    }

    pub fn now_ms(&self) -> UnixMs {
        match &self.0 {
            Kind::Monotonic { base_ms, base, .. } => {
                base_ms
                    + tokio::time::Instant::now()
                        .duration_since(*base)
                        .as_millis() as i64
            }
            Kind::Manual { now_ms, .. } => now_ms.load(Ordering::SeqCst),
        }
    }

    /// The time to hand a Redis script: `None` means "ask Redis `TIME`", the one shared clock.
    pub(crate) fn script_now(&self) -> Option<UnixMs> {
        match &self.0 {
            Kind::Monotonic { .. } => None,
            Kind::Manual { now_ms, .. } => Some(now_ms.load(Ordering::SeqCst)),
        }
    }
}

// governor meters with this clock so paused tokio time and the manual clock steer it too.
impl governor::clock::Clock for Clock {
    type Instant = std::time::Instant;

    fn now(&self) -> std::time::Instant {
        match &self.0 {
            Kind::Monotonic { .. } => tokio::time::Instant::now().into_std(),
            Kind::Manual {
                now_ms,
                base_ms,
                base_std,
            } => {
                let ms = (now_ms.load(Ordering::SeqCst) - base_ms).max(0) as u64;
                *base_std + Duration::from_millis(ms)
            }
        }
    }
}
