//! The Floodgate gateway: the HTTP and WebSocket face of admission and the reservation core.
//!
//! # Layout
//! - `config`: every setting as a flag and an environment variable; `payment_mode`: the
//!   provider sold through, and the payment settings refused at start.
//! - `listener`, `connections`, `tls`, `shutdown`, `telemetry`: process plumbing (the serve
//!   loop with its header deadline and connection cap; HTTPS when given a
//!   certificate); `tls_roots`: the extra CA handed to every outbound TLS hop.
//! - `security_headers`: the CSP, `nosniff` and referrer policy on every answer.
//! - `route_book`: every route declared once (caller, shed group, body limit, OpenAPI).
//! - `problem`, `extract`, `auth`, `body`, `requests`: the problem+json error shape, the
//!   typed extractors (ids, callers, bodies) and the request bodies.
//! - `key_book`: the team's organizer keys by hash, read again at most every half second;
//!   `csv_stream`: the organizer's exports as a streamed CSV body.
//! - `client_ip`: the address a join is limited by (trusted proxies).
//! - `overload`, `request_span`, `metrics`: load shedding and deadlines, request spans,
//!   Prometheus; `fanout`, `ops_gauges`: the figures `/metrics` samples (socket fan-out time,
//!   queue, outbox, sweeper, payments, pool).
//! - `backpressure`: slowing admission while the reservation core is unhealthy.
//! - `startup`, `state`, `secrets`, `demo`: building the shared state and background loops.
//! - `admission_db`: admission's database interface over the reservation store.
//! - `entry`: a join's access rule, identity token and access code.
//! - `errors`: library outcomes → problem+json, in one place.
//! - `routes/`: one file per resource of API.md.
//! - `seat_cache`, `seat_sections`, `openapi`: the cached seat map, cut by section and by
//!   change for a stadium; the OpenAPI document (`openapi_hooks`, `openapi_keys`,
//!   `openapi_timeline`: the schemas of the organizer's webhooks, the team's keys and the
//!   timeline).
//! - `look`: the organizer's branding and embedding sites, judged.
//! - `socket_feed`: the queue's snapshots for waiting sockets, paced to one a second;
//!   `socket_limits`: one live socket per ticket, and a cap per client address.

pub mod admission_db;
pub mod auth;
pub mod backpressure;
pub mod body;
pub mod client_ip;
pub mod clock;
pub mod config;
pub mod connections;
pub mod csv_stream;
pub mod demo;
pub mod entry;
pub mod errors;
pub mod extract;
pub mod fanout;
pub mod idempotent;
pub mod key_book;
pub mod listener;
pub mod look;
pub mod metrics;
pub mod openapi;
pub mod openapi_hooks;
pub mod openapi_keys;
pub mod openapi_timeline;
pub mod ops_gauges;
pub mod overload;
pub mod payment_mode;
pub mod problem;
pub mod readiness;
pub mod request_span;
pub mod requests;
pub mod route_book;
pub mod routes;
pub mod seat_cache;
pub mod seat_sections;
pub mod secrets;
pub mod security_headers;
pub mod shutdown;
pub mod socket_feed;
pub mod socket_limits;
pub mod startup;
pub mod state;
pub mod supervisor;
pub mod telemetry;
pub mod tls;
pub mod tls_roots;

use axum::Router;
use std::future::Future;
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
    // Checked before anything starts, as the certificate is.
    secrets::refuse_short(&config)?;
    let csp = security_headers::csp_header(&config.frame_ancestors)?;
    let cancel = CancellationToken::new();
    let state = startup::build(&config, cancel.clone()).await?;
    let addr = listener.local_addr()?;
    startup::point_simulator_at(&state, addr, tls.is_some());
    let mut loops = startup::spawn_loops(&state, config.backpressure(), config.hooks()).await?;
    // Outermost, so every answer carries them: pages, API answers, errors, 404s.
    let app = security_headers::apply(router(state), csp, config.frame_ancestors.clone());
    let scheme = if tls.is_some() { "https" } else { "http" };
    tracing::info!(%addr, scheme, database = %redact(&config.database_url), "gateway listening");
    let stop = cancel.clone();
    let stopping = async move {
        shutdown.await;
        // Sockets hear `reconnect` and close; background loops finish their step.
        stop.cancel();
    };
    let limits = config.connection_limits();
    match tls {
        None => connections::serve(listener, app, limits, stopping).await,
        Some(config) => {
            let listener = tls::TlsListener::new(listener, config)?;
            connections::serve(listener, app, limits, stopping).await;
        }
    }
    cancel.cancel();
    while loops.join_next().await.is_some() {}
    Ok(())
}

/// Every route of the route book, each behind its edge layer.
pub fn router(state: AppState) -> Router {
    route_book::router(state)
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
