//! The join limit per client address. Which address is the client's (trusted proxies,
//! `X-Forwarded-For`) is the gateway's business; this only counts.

use std::net::IpAddr;
use std::num::NonZeroU32;

use governor::clock::Clock as _;
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::HashMapStateStore;
use governor::{Quota, RateLimiter};

use crate::clock::Clock;

type Keyed =
    RateLimiter<IpAddr, HashMapStateStore<IpAddr>, Clock, NoOpMiddleware<std::time::Instant>>;

pub(crate) struct JoinLimiter {
    clock: Clock,
    limiter: Option<Keyed>,
}

impl JoinLimiter {
    /// `per_min == 0` disables the limit.
    pub(crate) fn new(per_min: u32, clock: Clock) -> Self {
        let limiter = NonZeroU32::new(per_min)
            .map(|n| RateLimiter::hashmap_with_clock(Quota::per_minute(n), clock.clone()));
        JoinLimiter { clock, limiter }
    }

    /// `Err(retry_after_s)` when this address has joined too often.
    pub(crate) fn check(&self, addr: IpAddr) -> Result<(), u64> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        limiter.check_key(&addr).map_err(|not_until| {
            not_until
                .wait_time_from(self.clock.now())
                .as_secs()
                .saturating_add(1)
        })
    }

    /// Keyed state never evicts by itself: drop addresses whose bucket has refilled.
    pub(crate) fn evict_stale(&self) {
        if let Some(limiter) = &self.limiter {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    #[cfg(test)]
    pub(crate) fn tracked(&self) -> usize {
        self.limiter.as_ref().map_or(0, |l| l.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn limits_per_address_and_evicts_stale_keys() {
        let limiter = JoinLimiter::new(3, Clock::system());
        let a: IpAddr = [127, 0, 0, 1].into();
        let b: IpAddr = [127, 0, 0, 2].into();
        for _ in 0..3 {
            assert!(limiter.check(a).is_ok());
        }
        let retry = limiter.check(a).expect_err("fourth join within the minute");
        assert!((1..=21).contains(&retry), "retry after {retry}s");
        assert!(
            limiter.check(b).is_ok(),
            "another address has its own budget"
        );
        assert_eq!(limiter.tracked(), 2);
        tokio::time::advance(Duration::from_secs(81)).await;
        limiter.evict_stale();
        assert_eq!(limiter.tracked(), 0, "refilled buckets are evicted");
        assert!(limiter.check(a).is_ok());
    }
}
