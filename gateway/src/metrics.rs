//! Prometheus metrics: one recorder per process, rendered at `GET /metrics`. Names are stable
//! and prefixed `floodgate_`; they are described here so `/metrics` documents itself.

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the recorder once per process (tests start several gateways in one process).
pub fn handle() -> Option<PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let buckets = [
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
                60.0,
            ];
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), &buckets)
                .and_then(|builder| builder.install_recorder());
            match recorder {
                Ok(handle) => {
                    describe();
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed");
                    None
                }
            }
        })
        .clone()
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "floodgate_http_requests_total",
        "HTTP requests by route and status class"
    );
    describe_histogram!(
        "floodgate_http_request_duration_seconds",
        "HTTP latency by route"
    );
    describe_counter!(
        "floodgate_rejections_total",
        "429 and 503 answers by reason"
    );
    describe_counter!("floodgate_joins_total", "queue joins");
    describe_counter!(
        "floodgate_offers_total",
        "offers made by the meter, per event (lapsed ones included)"
    );
    describe_counter!(
        "floodgate_claims_total",
        "claims that opened an admission session (HTTP and WebSocket)"
    );
    describe_counter!(
        "floodgate_offer_lapses_total",
        "offers not claimed in time, per event"
    );
    describe_gauge!("floodgate_live_sockets", "open waiting-room WebSockets");
    describe_histogram!(
        "floodgate_fanout_seconds",
        "per tick and event: from the first waiting socket done with the tick to the last"
    );
    describe_counter!("floodgate_holds_total", "hold attempts by outcome");
    describe_counter!(
        "floodgate_payments_total",
        "payment attempts by final outcome (succeeded, declined, voided, abandoned)"
    );
    describe_gauge!("floodgate_outbox_depth", "outbox rows not done");
    describe_gauge!(
        "floodgate_outbox_oldest_age_seconds",
        "age of the oldest outbox job still owed (not only watching for late money)"
    );
    describe_gauge!(
        "floodgate_outbox_median_age_seconds",
        "the age half the owed outbox jobs exceed: what backpressure judges payments by"
    );
    describe_histogram!(
        "floodgate_paying_age_seconds",
        "time payment attempts spent open (the hold in paying), recorded when they resolve"
    );
    describe_gauge!(
        "floodgate_sweeper_lag_seconds",
        "age of the oldest expired hold not yet swept"
    );
    describe_counter!(
        "floodgate_redis_epoch_changes_total",
        "queue state losses recovered (a new epoch), per event"
    );
    describe_gauge!(
        "floodgate_db_pool_waiters",
        "requests waiting for a database connection (estimated: in-flight database requests beyond busy connections, once the pool is full)"
    );
    describe_gauge!(
        "floodgate_db_pool_connections",
        "request pool connections by state (busy, idle)"
    );
    describe_gauge!(
        "floodgate_db_pool_max_connections",
        "request pool size limit"
    );
    describe_gauge!(
        "floodgate_db_pool_acquire_seconds",
        "how long taking a pool connection took at the last probe"
    );
    describe_gauge!(
        "floodgate_paying_oldest_age_seconds",
        "age of the oldest payment attempt still open (pending, ambiguous, authorized)"
    );
    describe_gauge!(
        "floodgate_payment_attempts",
        "payment attempts by current state"
    );
    describe_gauge!(
        "floodgate_queue_waiting",
        "buyers waiting in line, per event"
    );
    describe_gauge!(
        "floodgate_active_sessions",
        "admission sessions live, per event"
    );
    describe_gauge!(
        "floodgate_queue_open",
        "1 while the event's queue is open (not pre-queue, paused, sold out or closed)"
    );
    describe_gauge!(
        "floodgate_admissions_per_minute",
        "offers per minute measured over the last minute, per event"
    );
    describe_gauge!(
        "floodgate_admission_rate_per_minute",
        "configured rate_per_min, per event"
    );
    describe_gauge!(
        "floodgate_admission_max_active",
        "configured max_active, per event"
    );
    describe_gauge!(
        "floodgate_inflight_requests",
        "requests in flight per route group"
    );
    describe_gauge!(
        "floodgate_inflight_limit",
        "in-flight budget per route group (beyond it: 503 overloaded)"
    );
    describe_gauge!(
        "floodgate_meter_events",
        "events this instance's meter ticks (they exist and their queue is not closed)"
    );
    describe_counter!("floodgate_meter_ticks_total", "meter ticks run, all events");
    describe_gauge!(
        "floodgate_seat_cache_events",
        "events with a cached seat map on this instance"
    );
    describe_counter!(
        "floodgate_loop_restarts_total",
        "background loops restarted after ending or panicking, per loop"
    );
    register_zeroes();
}

/// Every refusal reason exists from the start at 0, so `rate()` and alerts see the series
/// before the first refusal.
fn register_zeroes() {
    metrics::counter!("floodgate_rejections_total", "status" => "429", "reason" => "join_limit")
        .increment(0);
    for reason in [
        "joins",
        "sockets",
        "reservations",
        "webhooks",
        "organizer",
        "reads",
        "timeout",
        "database",
        "queue_backend",
    ] {
        metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => reason)
            .increment(0);
    }
    metrics::counter!("floodgate_joins_total").increment(0);
    metrics::counter!("floodgate_claims_total").increment(0);
    metrics::gauge!("floodgate_live_sockets").increment(0.0);
    for outcome in ["held", "conflict", "refused"] {
        metrics::counter!("floodgate_holds_total", "outcome" => outcome).increment(0);
    }
}
