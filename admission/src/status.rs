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
/// still cost a request each).
pub(crate) fn retry_after_s(status: QueueStatus, position: Option<u64>) -> u64 {
    match status {
        QueueStatus::Offered => 1,
        QueueStatus::Waiting => (2 + position.unwrap_or(0) / 100).min(30),
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
        retry_after_s: retry_after_s(status, position),
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
            retry_after_s(QueueStatus::Waiting, Some(5000))
                > retry_after_s(QueueStatus::Waiting, Some(5))
        );
    }
}
