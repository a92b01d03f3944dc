//! The Floodgate gateway: the HTTP and WebSocket face of admission and the reservation core.
//!
//! # Layout
//! - `config`: every setting as a flag and an environment variable.
//! - `listener`, `shutdown`, `telemetry`: process plumbing.
//! - `problem`, `extract`: the problem+json error shape and the extractors that produce it.
//! - `client_ip`: the address a join is limited by (trusted proxies).
//! - `overload`, `request_span`, `metrics`: load shedding, request spans, Prometheus.

pub mod client_ip;
pub mod config;
pub mod extract;
pub mod listener;
pub mod metrics;
pub mod openapi;
pub mod overload;
pub mod problem;
pub mod request_span;
pub mod seat_cache;
pub mod shutdown;
pub mod telemetry;

use std::future::Future;

use axum::Router;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::config::Config;

/// Serves the gateway on `listener` until `shutdown` completes.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let app = Router::new().route("/healthz", get(|| async { "ok" }));
    tracing::info!(addr = %listener.local_addr()?, database = %redact(&config.database_url), "gateway listening");
    axum::serve(listener, app.into_make_service_with_connect_info::<std::net::SocketAddr>())
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

/// A database URL without its password, for logs.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://***{}", &url[..scheme], &url[at..]),
        _ => url.to_owned(),
    }
}
