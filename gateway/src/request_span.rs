//! One span per request with its id, method and matched route, and request metrics. Query
//! strings are never logged: the WebSocket route carries the queue token there.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

pub const REQUEST_ID: &str = "x-request-id";

pub async fn trace(mut request: Request, next: Next) -> Response {
    let id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.len() <= 64 && crate::extract::is_valid_id(v))
        .map(str::to_owned)
        .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let route = route.unwrap_or_else(|| "unmatched".to_owned());
    let method = request.method().clone();
    if let Ok(value) = HeaderValue::from_str(&id) {
        request.headers_mut().insert(REQUEST_ID, value);
    }
    let span = tracing::info_span!("request", request_id = %id, %method, route = %route);
    let started = Instant::now();
    let mut response = next.run(request).instrument(span.clone()).await;
    let elapsed = started.elapsed();
    let status = response.status();
    let shed = response
        .extensions()
        .get::<crate::overload::Shed>()
        .is_some();
    span.in_scope(|| {
        if status.is_server_error() && !shed {
            tracing::warn!(
                status = status.as_u16(),
                elapsed_ms = elapsed.as_millis() as u64,
                "request failed"
            );
        } else {
            tracing::debug!(
                status = status.as_u16(),
                elapsed_ms = elapsed.as_millis() as u64,
                "request done"
            );
        }
    });
    let class = match status.as_u16() {
        100..=399 => "ok",
        400..=499 => "4xx",
        _ => "5xx",
    };
    metrics::counter!("floodgate_http_requests_total", "route" => route.clone(), "class" => class)
        .increment(1);
    metrics::histogram!("floodgate_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID, value);
    }
    response
}
