//! The figures `/metrics` samples once a second rather than counts where they happen: queue
//! state per live event (offers, lapses, admissions per minute against the configured rate,
//! Redis epoch changes), the sweeper, payment outcomes and time spent paying,
//! the database pool and the in-flight budgets.
//!
//! Database-derived figures are the same on every instance (they read shared rows): aggregate
//! them with `max`, not `sum`. The store reads them (`reservation::ops_figures`).

use std::collections::HashMap;
use std::time::Duration;

use reservation::Error;

use crate::overload::Group;
use crate::state::AppState;

const EVERY: Duration = Duration::from_secs(1);
/// Attempts resolved this long before the watermark are looked at again (commit order is not
/// `updated_at` order); the ids seen keep each one from being recorded twice.
const OVERLAP_MS: i64 = 5_000;

/// What a payment attempt's final state counts as.
fn outcome(state: &str) -> Option<&'static str> {
    match state {
        "confirmed" | "captured" | "refunded" => Some("succeeded"),
        "declined" => Some("declined"),
        "voided" => Some("voided"),
        "abandoned" => Some("abandoned"),
        _ => None,
    }
}

/// State carried from one sample to the next.
#[derive(Default)]
pub struct Sampler {
    epochs: HashMap<String, String>,
    /// `updated_at` (ms) of the newest resolved attempt recorded; `None` before the first look.
    watermark_ms: Option<i64>,
    recorded: HashMap<String, i64>,
    /// Overdue payments at the last look, so the error is logged when the count grows, not
    /// every second.
    overdue: i64,
}

impl Sampler {
    /// One sample of everything; failures are logged and the next second tries again.
    pub async fn sample(&mut self, state: &AppState) {
        let meter = state.admission.meter_figures();
        metrics::gauge!("floodgate_meter_events").set(meter.events as f64);
        metrics::counter!("floodgate_meter_ticks_total").absolute(meter.ticks_total);
        metrics::gauge!("floodgate_seat_cache_events").set(state.seats.len() as f64);
        self.queues(state).await;
        if let Err(error) = self.database(state).await {
            tracing::debug!(%error, "metrics sample of the database failed");
        }
        pool(state).await;
        for group in Group::LIMITED {
            if let Some(limit) = state.guard.limit(group) {
                metrics::gauge!("floodgate_inflight_requests", "group" => group.name())
                    .set(limit.in_flight() as f64);
                metrics::gauge!("floodgate_inflight_limit", "group" => group.name())
                    .set(limit.size() as f64);
                metrics::gauge!("floodgate_admitted_waiting", "group" => group.name())
                    .set(limit.waiting() as f64);
            }
        }
    }

    async fn queues(&mut self, state: &AppState) {
        let events = match state.store.live_event_limits().await {
            Ok(events) => events,
            Err(error) => {
                tracing::debug!(%error, "metrics: listing live events failed");
                return;
            }
        };
        for limits in events {
            let (event, rate, max_active) =
                (limits.event_id, limits.rate_per_min, limits.max_active);
            // An open event the database lists: the meter ticks it already.
            let snapshot = state.admission.subscribe(&event).borrow().clone();
            if snapshot.at_ms == 0 {
                continue; // not ticked here yet
            }
            metrics::counter!("floodgate_offers_total", "event" => event.clone())
                .absolute(snapshot.served);
            metrics::counter!("floodgate_offer_lapses_total", "event" => event.clone())
                .absolute(snapshot.lapsed_total);
            metrics::gauge!("floodgate_queue_waiting", "event" => event.clone())
                .set(snapshot.waiting as f64);
            metrics::gauge!("floodgate_active_sessions", "event" => event.clone())
                .set(snapshot.active as f64);
            let open = snapshot.state == admission::EventState::Open;
            metrics::gauge!("floodgate_queue_open", "event" => event.clone()).set(if open {
                1.0
            } else {
                0.0
            });
            metrics::gauge!("floodgate_admissions_per_minute", "event" => event.clone())
                .set(snapshot.outflow_per_min.unwrap_or(0.0));
            metrics::gauge!("floodgate_admission_rate_per_minute", "event" => event.clone())
                .set(rate as f64);
            metrics::gauge!("floodgate_admission_max_active", "event" => event.clone())
                .set(max_active as f64);
            // A new epoch means the queue state was lost and rebuilt from the checkpoint.
            if !snapshot.epoch.is_empty() {
                let previous = self.epochs.insert(event.clone(), snapshot.epoch.clone());
                let counter = metrics::counter!("floodgate_redis_epoch_changes_total", "event" => event.clone());
                match previous {
                    Some(old) if old != snapshot.epoch => counter.increment(1),
                    _ => counter.increment(0),
                }
            }
        }
    }

    async fn database(&mut self, state: &AppState) -> Result<(), Error> {
        // The outbox gauges are set by `backpressure.rs`, which reads the same figure each
        // second (whether or not backpressure acts on it).
        let lag = state.store.sweeper_lag_ms().await?;
        metrics::gauge!("floodgate_sweeper_lag_seconds").set(lag.max(0) as f64 / 1000.0);

        let mut outcomes: HashMap<&'static str, u64> = HashMap::new();
        for count in state.store.attempts_by_state().await? {
            metrics::gauge!("floodgate_payment_attempts", "state" => count.state.clone())
                .set(count.n as f64);
            if let Some(outcome) = outcome(&count.state) {
                *outcomes.entry(outcome).or_default() += u64::try_from(count.n).unwrap_or(0);
            }
        }
        for outcome in ["succeeded", "declined", "voided", "abandoned"] {
            metrics::counter!("floodgate_payments_total", "outcome" => outcome)
                .absolute(outcomes.get(outcome).copied().unwrap_or(0));
        }

        let oldest = state.store.oldest_open_attempt_ms().await?;
        metrics::gauge!("floodgate_paying_oldest_age_seconds").set(oldest.max(0) as f64 / 1000.0);
        self.overdue(state).await;
        self.paying_ages(state).await
    }

    /// Payments the provider has left unanswered long past their abandon time: their seats
    /// cannot be sold again until it answers, so this is an alert, never silence.
    async fn overdue(&mut self, state: &AppState) {
        let grace_s = state.settings.payment_overdue_s;
        let overdue = match state.store.overdue_attempts(grace_s).await {
            Ok(n) => n,
            Err(error) => {
                tracing::debug!(%error, "metrics: counting overdue payments failed");
                return;
            }
        };
        metrics::gauge!("floodgate_payments_overdue").set(overdue as f64);
        if overdue > self.overdue {
            tracing::error!(
                overdue,
                grace_s,
                "payments past their abandon time have no answer from the provider; their seats stay in paying until it answers"
            );
        }
        self.overdue = overdue;
    }

    /// Records, once each, how long attempts resolved since the last look spent paying.
    async fn paying_ages(&mut self, state: &AppState) -> Result<(), Error> {
        let histogram = metrics::histogram!("floodgate_paying_age_seconds");
        let Some(watermark) = self.watermark_ms else {
            // Start from now: history before this process is not replayed.
            self.watermark_ms = Some(state.store.now_ms().await?);
            return Ok(());
        };
        let mut newest = watermark;
        for attempt in state
            .store
            .attempts_resolved_since(watermark - OVERLAP_MS)
            .await?
        {
            let (created, updated) = (attempt.created_at_ms, attempt.updated_at_ms);
            newest = newest.max(updated);
            if self.recorded.insert(attempt.attempt_id, updated).is_none() {
                histogram.record((updated - created).max(0) as f64 / 1000.0);
            }
        }
        self.watermark_ms = Some(newest);
        self.recorded.retain(|_, at| *at > newest - 2 * OVERLAP_MS);
        Ok(())
    }
}

/// The request pool: connections busy and idle, a probe of how long taking one takes now, and
/// an estimate of requests waiting for one (sqlx does not count its waiters): requests in
/// flight in the database-backed groups beyond the busy connections, once the pool is full.
async fn pool(state: &AppState) {
    let reservation::PoolFigures { max, size, idle } = state.store.pool_figures();
    let busy = size.saturating_sub(idle);
    metrics::gauge!("floodgate_db_pool_connections", "state" => "busy").set(f64::from(busy));
    metrics::gauge!("floodgate_db_pool_connections", "state" => "idle").set(f64::from(idle));
    metrics::gauge!("floodgate_db_pool_max_connections").set(f64::from(max));
    let in_flight: usize = [
        Group::Reservations,
        Group::Webhooks,
        Group::Organizer,
        Group::Reads,
    ]
    .into_iter()
    .filter_map(|g| state.guard.limit(g).map(|l| l.in_flight()))
    .sum();
    let waiters = if busy >= max {
        in_flight.saturating_sub(busy as usize)
    } else {
        0
    };
    metrics::gauge!("floodgate_db_pool_waiters").set(waiters as f64);
    let took = state.store.acquire_probe(EVERY).await;
    metrics::gauge!("floodgate_db_pool_acquire_seconds").set(took.as_secs_f64());
}

/// Samples every second until `stop`.
pub async fn run(state: AppState, stop: tokio_util::sync::CancellationToken) {
    let mut sampler = Sampler::default();
    let mut every = tokio::time::interval(EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => sampler.sample(&state).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn final_states_count_as_outcomes_and_open_ones_do_not() {
        assert_eq!(outcome("captured"), Some("succeeded"));
        assert_eq!(outcome("declined"), Some("declined"));
        assert_eq!(outcome("authorized"), None);
        assert_eq!(outcome("pending"), None);
    }
}
