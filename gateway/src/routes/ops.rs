//! `GET /metrics` (Prometheus text) and `GET /api/openapi.json` (the contract, generated from
//! the route book by `openapi.rs`).

use axum::http::header;
use axum::response::{IntoResponse, Response};

pub(crate) async fn openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::served(),
    )
        .into_response()
}

pub(crate) async fn metrics() -> Response {
    let body = crate::metrics::handle()
        .map(|h| h.render())
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}
