//! `GET /metrics` (Prometheus text) and `GET /api/openapi.json` (the contract, generated from
//! the route table in `openapi.rs`).

use axum::Router;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics)).route(
        "/api/openapi.json",
        get(|| async { axum::Json(crate::openapi::document()) }),
    )
}

async fn metrics() -> Response {
    let body = crate::metrics::handle()
        .map(|h| h.render())
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}
