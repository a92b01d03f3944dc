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
    describe_counter!("floodgate_offers_total", "offers made by the meter");
    describe_counter!(
        "floodgate_admitted_total",
        "claims that opened an admission session"
    );
    describe_counter!("floodgate_offer_lapses_total", "offers not claimed in time");
    describe_gauge!("floodgate_live_sockets", "open waiting-room WebSockets");
    describe_histogram!(
        "floodgate_fanout_seconds",
        "time to push one tick to every socket of an event"
    );
    describe_counter!("floodgate_holds_total", "hold attempts by outcome");
    describe_counter!(
        "floodgate_hold_conflicts_total",
        "holds refused because a seat was taken"
    );
    describe_counter!("floodgate_payments_total", "payment outcomes");
    describe_gauge!("floodgate_outbox_depth", "outbox rows not done");
    describe_gauge!(
        "floodgate_outbox_oldest_age_seconds",
        "age of the oldest outbox row not done"
    );
    describe_histogram!("floodgate_paying_age_seconds", "time holds spent in paying");
    describe_gauge!(
        "floodgate_sweeper_lag_seconds",
        "age of the oldest expired hold not yet swept"
    );
    describe_counter!(
        "floodgate_redis_epoch_changes_total",
        "Redis losses detected"
    );
    describe_gauge!(
        "floodgate_db_pool_waiters",
        "requests waiting for a database connection"
    );
}
