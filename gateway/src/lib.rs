//! The Floodgate gateway: the HTTP and WebSocket face of admission and the reservation core.
//!
//! # Layout
//! - `config`: every setting as a flag and an environment variable; `payment_mode`: the
//!   provider sold through, and the payment settings refused at start.
//! - `listener`, `tls`, `shutdown`, `telemetry`: process plumbing (HTTPS when given a
//!   certificate); `tls_roots`: the extra CA handed to every outbound TLS hop.
//! - `problem`, `extract`: the problem+json error shape and the extractors that produce it.
//! - `client_ip`: the address a join is limited by (trusted proxies).
//! - `overload`, `request_span`, `metrics`: load shedding and deadlines, request spans,
//!   Prometheus; `fanout`, `ops_gauges`: the figures `/metrics` samples (socket fan-out time,
//!   queue, outbox, sweeper, payments, pool).
//! - `backpressure`: slowing admission while the reservation core is unhealthy.
//! - `startup`, `state`, `secrets`, `demo`: building the shared state and background loops.
//! - `admission_db`: admission's database interface over the reservation store.
//! - `errors`: library outcomes → problem+json, in one place.
//! - `routes/`: one file per resource of API.md.
//! - `seat_cache`, `openapi`: the cached seat map; the OpenAPI document.
//! - `socket_feed`: the queue's snapshots for waiting sockets, paced to one a second.

pub mod admission_db;
pub mod auth;
pub mod backpressure;
pub mod body;
pub mod client_ip;
pub mod clock;
pub mod config;
pub mod demo;
pub mod errors;
pub mod extract;
pub mod fanout;
pub mod idempotent;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod ops_gauges;
pub mod overload;
pub mod payment_mode;
pub mod problem;
pub mod readiness;
pub mod request_span;
pub mod routes;
pub mod seat_cache;
pub mod secrets;
pub mod shutdown;
pub mod socket_feed;
pub mod startup;
pub mod state;
pub mod supervisor;
pub mod telemetry;
pub mod tls;
pub mod tls_roots;

use std::future::Future;
use std::net::SocketAddr;

use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::state::AppState;

/// Serves the gateway on `listener` until `shutdown` completes, then stops its loops.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    metrics::handle();
    // redis-rs builds its TLS configuration from the process's default provider; naming the
    // one this workspace compiles keeps that working whatever else a dependency turns on.
    // (Already installed by an earlier gateway in this process is fine.)
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    // Read before anything starts, so a bad certificate stops the gateway at once.
    let tls = match (&config.tls_cert_file, &config.tls_key_file) {
        (Some(cert), Some(key)) => Some(tls::server_config(cert, key)?),
        (None, None) => None,
        _ => anyhow::bail!("FLOODGATE_TLS_CERT_FILE and FLOODGATE_TLS_KEY_FILE go together"),
    };
    let cancel = CancellationToken::new();
    let state = startup::build(&config, cancel.clone()).await?;
    let addr = listener.local_addr()?;
    startup::point_simulator_at(&state, addr, tls.is_some());
    let mut loops = startup::spawn_loops(&state, config.backpressure()).await?;
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(%addr, scheme, database = %redact(&config.database_url), "gateway listening");
    let stop = cancel.clone();
    let stopping = async move {
        shutdown.await;
        // Sockets hear `reconnect` and close; background loops finish their step.
        stop.cancel();
    };
    let served = match tls {
        None => {
            axum::serve(listener, app)
                .with_graceful_shutdown(stopping)
                .await
        }
        // `tap_io` only to reach axum's `ConnectInfo<SocketAddr>` for any listener.
        Some(config) => {
            use axum::serve::ListenerExt;
            let listener = tls::TlsListener::new(listener, config)?.tap_io(|_| {});
            axum::serve(listener, app)
                .with_graceful_shutdown(stopping)
                .await
        }
    };
    cancel.cancel();
    while loops.join_next().await.is_some() {}
    served?;
    Ok(())
}

/// Every route of API.md, with the layers they share.
pub fn router(state: AppState) -> Router {
    let guard = state.guard.clone();
    Router::new()
        .merge(routes::health::router())
        .merge(routes::queue::router())
        .merge(routes::waiting_room::router())
        .merge(routes::events::router())
        .merge(routes::session::router())
        .merge(routes::holds::router())
        .merge(routes::orders::router())
        .merge(routes::pages::router())
        .merge(routes::admin::router())
        .merge(routes::ops::router())
        .merge(routes::webhook::router())
        .merge(routes::payment_challenge::router())
        // The request span, metrics and load shedding in one layer (shedding inside the span,
        // so shed and timed-out requests are logged and counted per route).
        .route_layer(axum::middleware::from_fn_with_state(
            guard,
            request_span::trace,
        ))
        .layer(axum::extract::DefaultBodyLimit::max(body::MAX_BODY))
        .fallback(|| async { problem::Problem::not_found("no such route") })
        .with_state(state)
}

/// A database URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}
