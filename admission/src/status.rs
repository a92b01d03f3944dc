//! What a buyer is told: status, position (buyers ahead, 0 = next), the wait range and how
//! soon to ask again.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueStatus {
    PreQueue,
    Waiting,
    Offered,
    Admitted,
    OfferLapsed,
    Paused,
    SoldOut,
    Closed,
}

impl QueueStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            QueueStatus::PreQueue => "pre_queue",
            QueueStatus::Waiting => "waiting",
            QueueStatus::Offered => "offered",
            QueueStatus::Admitted => "admitted",
            QueueStatus::OfferLapsed => "offer_lapsed",
            QueueStatus::Paused => "paused",
            QueueStatus::SoldOut => "sold_out",
            QueueStatus::Closed => "closed",
        }
    }
}

/// The JSON status body of `GET …/queue/status`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    pub status: QueueStatus,
    /// Buyers ahead (an upper bound); `None` once the turn has come or passed.
    pub position: Option<u64>,
    pub estimated_wait_s: Option<u64>,
    pub estimated_wait_range_s: Option<(u64, u64)>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer_expires_in_s: Option<u64>,
    pub retry_after_s: u64,
}

/// The wait for `position` buyers ahead at the measured outflow: (point, low, high) seconds.
/// `None` without a measured outflow (paused, or nothing offered yet).
pub(crate) fn wait_estimate(
    position: u64,
    outflow_per_min: Option<f64>,
) -> Option<(u64, u64, u64)> {
    let per_s = outflow_per_min.filter(|f| *f > 0.0)? / 60.0;
    let point = (position as f64 + 1.0) / per_s;
    Some((
        point.ceil() as u64,
        (point * 0.8).floor() as u64,
        (point * 1.25).ceil() as u64,
    ))
}

/// Poll interval: near the front ask often, far back rarely (polls are answered from cache but
/// still cost a request each). Never longer than half the shortest expected wait, so a fast
/// queue does not leave a poller asleep while its offer runs down.
pub(crate) fn retry_after_s(
    status: QueueStatus,
    position: Option<u64>,
    estimate: Option<(u64, u64, u64)>,
) -> u64 {
    match status {
        QueueStatus::Offered => 1,
        QueueStatus::Waiting => {
            // Far back, every two minutes: 500,000 pollers at 30 s would be 16,000 requests a
            // second; the bound below brings them closer as their turn nears.
            let by_place = (2 + position.unwrap_or(0) / 100).min(120);
            match estimate {
                Some((_, soonest, _)) => by_place.min((soonest / 2).max(1)),
                None => by_place,
            }
        }
        QueueStatus::PreQueue | QueueStatus::Paused => 10,
        QueueStatus::SoldOut => 30,
        QueueStatus::Admitted | QueueStatus::OfferLapsed | QueueStatus::Closed => 60,
    }
}

pub(crate) fn build(
    status: QueueStatus,
    position: Option<u64>,
    outflow_per_min: Option<f64>,
    offer_expires_in_s: Option<u64>,
) -> Status {
    let estimate = match (status, position) {
        (QueueStatus::Waiting, Some(p)) => wait_estimate(p, outflow_per_min),
        _ => None,
    };
    Status {
        status,
        position,
        estimated_wait_s: estimate.map(|e| e.0),
        estimated_wait_range_s: estimate.map(|e| (e.1, e.2)),
        offer_expires_in_s,
        retry_after_s: retry_after_s(status, position, estimate),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_is_unknown_without_outflow_and_grows_with_position() {
        assert_eq!(wait_estimate(10, None), None);
        assert_eq!(wait_estimate(10, Some(0.0)), None);
        let (p, lo, hi) = wait_estimate(599, Some(600.0)).expect("outflow known");
        assert_eq!(p, 60);
        assert!(lo < p && p < hi);
        assert!(
            retry_after_s(QueueStatus::Waiting, Some(5000), None)
                > retry_after_s(QueueStatus::Waiting, Some(5), None)
        );
    }

    #[test]
    fn a_fast_queue_shortens_the_poll_interval() {
        // 3,000 ahead at 150 a second: the front is ~20 s away (16 at the soonest), so the
        // poller is told to come back within 8 s rather than the 32 s its place alone gives.
        let slow = build(QueueStatus::Waiting, Some(3000), Some(60.0), None);
        assert_eq!(slow.retry_after_s, 32);
        let far = build(QueueStatus::Waiting, Some(400_000), Some(60.0), None);
        assert_eq!(far.retry_after_s, 120);
        let fast = build(QueueStatus::Waiting, Some(3000), Some(9000.0), None);
        assert_eq!(fast.retry_after_s, 8);
        let front = build(QueueStatus::Waiting, Some(0), Some(9000.0), None);
        assert_eq!(front.retry_after_s, 1);
    }
}
