//! Backpressure: once a second this instance judges the reservation core from what it sees —
//! its holds' p99 latency, how long admitted buyers' requests waited for a permit of the
//! reservations budget, whether the database answers, how long the outbox's owed jobs have waited —
//! and reports the verdict to admission, which slows offers while the core is unhealthy and
//! stops them if it stays so (see `admission::Pressure`). Buyers are not admitted into a
//! checkout that is failing; the organizer sees the share and the reasons in the stats and
//! in `/metrics`.

use std::sync::Mutex;
use std::time::Duration;

use crate::overload::Group;
use crate::state::AppState;

/// When a signal counts as unhealthy. Off = measured and shown, never acted on.
#[derive(Debug, Clone)]
pub struct Thresholds {
    pub enabled: bool,
    pub hold_p99: Duration,
    /// An admitted buyer's request waiting longer than this for a permit: the meter lets in
    /// more buyers than the core serves (while the cap binds, the rate alone says nothing).
    pub admitted_wait: Duration,
    pub outbox_age: Duration,
}

/// Fewer holds than this in a window say nothing about their p99.
const MIN_SAMPLES: usize = 5;
/// A database that does not answer a trivial query in this long is refusing (the query waits
/// for a pooled connection like any request, so an exhausted pool counts too).
const PING_TIMEOUT: Duration = Duration::from_secs(1);

/// What the request handlers tell the judge between two verdicts.
#[derive(Default)]
pub struct CoreHealth {
    hold_ms: Mutex<Vec<u32>>,
}

impl CoreHealth {
    /// A hold (won or refused) took this long inside the reservation core.
    pub fn record_hold(&self, took: Duration) {
        let ms = u32::try_from(took.as_millis()).unwrap_or(u32::MAX);
        self.hold_ms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ms);
    }

    fn take_window(&self) -> Vec<u32> {
        std::mem::take(&mut *self.hold_ms.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

fn p99(mut samples: Vec<u32>) -> Option<u32> {
    if samples.len() < MIN_SAMPLES {
        return None;
    }
    samples.sort_unstable();
    let at = (samples.len() * 99).div_ceil(100).saturating_sub(1);
    samples.get(at).copied()
}

/// One verdict: the names of the unhealthy signals (empty = healthy).
async fn judge(state: &AppState, limits: &Thresholds) -> Vec<String> {
    let mut unhealthy = Vec::new();
    if let Some(p99) = p99(state.health.take_window()) {
        metrics::gauge!("floodgate_backpressure_hold_p99_seconds").set(f64::from(p99) / 1000.0);
        if u128::from(p99) > limits.hold_p99.as_millis() {
            unhealthy.push("hold_p99".to_owned());
        }
    }
    if let Some(reservations) = state.guard.limit(Group::Reservations) {
        let waited = reservations.take_longest_admitted_wait();
        metrics::gauge!("floodgate_backpressure_admitted_wait_seconds").set(waited.as_secs_f64());
        if waited > limits.admitted_wait {
            unhealthy.push("admitted_wait".to_owned());
        }
    }
    let answered = tokio::time::timeout(PING_TIMEOUT, state.store.ping()).await;
    if !matches!(answered, Ok(Ok(()))) {
        unhealthy.push("database".to_owned());
    }
    match state.store.outbox_lag().await {
        Ok(backlog) => {
            metrics::gauge!("floodgate_outbox_depth").set(backlog.depth as f64);
            metrics::gauge!("floodgate_outbox_oldest_age_seconds")
                .set(backlog.oldest_age_ms as f64 / 1000.0);
            metrics::gauge!("floodgate_outbox_median_age_seconds")
                .set(backlog.median_age_ms as f64 / 1000.0);
            if u128::try_from(backlog.median_age_ms).unwrap_or(0) > limits.outbox_age.as_millis() {
                unhealthy.push("outbox_age".to_owned());
            }
        }
        // Already counted as the database failing above, most likely.
        Err(error) => tracing::debug!(%error, "outbox backlog unreadable"),
    }
    unhealthy
}

/// Judges every second until `stop`; with backpressure off it only measures.
pub async fn run(state: AppState, limits: Thresholds, stop: tokio_util::sync::CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let unhealthy = judge(&state, &limits).await;
        for reason in &unhealthy {
            metrics::counter!("floodgate_backpressure_unhealthy_total", "reason" => reason.clone())
                .increment(1);
        }
        if limits.enabled {
            let pressure = state.admission.report_health(unhealthy);
            metrics::gauge!("floodgate_backpressure_share").set(pressure.share);
        } else if !unhealthy.is_empty() {
            tracing::debug!(?unhealthy, "core unhealthy; backpressure is off");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_needs_enough_samples_and_takes_the_high_tail() {
        assert_eq!(p99(vec![900; MIN_SAMPLES - 1]), None);
        let mut window: Vec<u32> = vec![10; 99];
        window.push(5_000);
        assert_eq!(
            p99(window.clone()),
            Some(10),
            "one outlier in 100 is the 100th percentile"
        );
        window.push(5_000);
        assert_eq!(p99(window), Some(5_000));
    }
}
