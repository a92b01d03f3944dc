//! The edge of every route, in one layer: the request span (its id, method and route), the
//! caller check from the headers, the body read within the route's limit and deadline, then
//! load shedding (`overload::guard`), and once the answer is known, one log line and the
//! request metrics. Query strings are never logged: the WebSocket route carries the queue
//! token there.
//!
//! The order is the point: a caller refused by its headers costs no body read, and a client
//! trickling its body holds no shed permit while it does (the permit is taken once the body
//! is in memory). One layer instead of several saves a boxed future and a service clone on
//! every request.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, OnceLock, RwLock};
use std::time::Instant;

use axum::extract::{Request, State};
use axum::http::HeaderValue;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics::{Counter, Histogram};
use tracing::Instrument;

use crate::problem::Refusal;
use crate::route_book::Edge;

pub const REQUEST_ID: &str = "x-request-id";

pub async fn trace(State(edge): State<Edge>, mut request: Request, next: Next) -> Response {
    // A valid id the client sent is kept as the very header value it came in (no copy);
    // otherwise a fresh one (uuid's `fast-rng`: a thread-local generator, no syscall per request).
    let id = request
        .headers()
        .get(REQUEST_ID)
        .filter(|v| v.to_str().is_ok_and(crate::extract::is_valid_id))
        .cloned()
        .unwrap_or_else(|| {
            let mut buffer = uuid::Uuid::encode_buffer();
            let hex = uuid::Uuid::new_v4().simple().encode_lower(&mut buffer);
            HeaderValue::from_str(hex).expect("hex digits are a valid header value")
        });
    let route = edge.entry.path;
    request.headers_mut().insert(REQUEST_ID, id.clone());
    let span = tracing::info_span!(
        "request",
        request_id = %id.to_str().unwrap_or_default(),
        method = %request.method(),
        route = %route
    );
    let started = Instant::now();
    let mut response = admit(edge, request, next).instrument(span.clone()).await;
    let elapsed = started.elapsed();
    let status = response.status();
    let shed = response
        .extensions()
        .get::<crate::overload::Shed>()
        .is_some();
    let refusal = response.extensions_mut().remove::<Refusal>();
    if let Some(reason) = refusal.as_ref().and_then(|r| r.reason) {
        metrics::counter!(
            "floodgate_rejections_total",
            "status" => status.as_u16().to_string(),
            "reason" => reason
        )
        .increment(1);
    }
    span.in_scope(|| {
        let elapsed_ms = elapsed.as_millis() as u64;
        if let Some(cause) = refusal.as_ref().and_then(|r| r.cause.as_deref()) {
            tracing::error!(
                status = status.as_u16(),
                elapsed_ms,
                cause,
                "request failed"
            );
        } else if status.is_server_error() && !shed {
            tracing::warn!(status = status.as_u16(), elapsed_ms, "request failed");
        } else {
            tracing::debug!(status = status.as_u16(), elapsed_ms, "request done");
        }
    });
    let class = match status.as_u16() {
        100..=399 => Class::Ok,
        400..=499 => Class::ClientError,
        _ => Class::ServerError,
    };
    RouteMetrics::record(route, class, elapsed.as_secs_f64());
    response.headers_mut().insert(REQUEST_ID, id);
    response
}

/// The caller from the headers, then the body, then a shed permit and the handler.
async fn admit(edge: Edge, request: Request, next: Next) -> Response {
    let Edge { app, entry } = edge;
    let (mut parts, body) = request.into_parts();
    if let Err(problem) = crate::auth::authenticate(entry.caller, &mut parts, &app).await {
        return problem.into_response();
    }
    let mut request = Request::from_parts(parts, body);
    if let Some(limit) = entry.body_limit {
        request = match crate::body::buffer(request, limit, app.guard.body_timeout()).await {
            Ok(read) => read,
            Err(refused) => return refused.into_response(),
        };
    }
    crate::overload::guard(&app.guard, entry.group, request, next).await
}

#[derive(Clone, Copy)]
enum Class {
    Ok,
    ClientError,
    ServerError,
}

impl Class {
    fn label(self) -> &'static str {
        match self {
            Class::Ok => "ok",
            Class::ClientError => "4xx",
            Class::ServerError => "5xx",
        }
    }
}

/// One route's request metrics, registered once: building a labelled key (label strings,
/// hashing, the recorder's registry lookup) for every request cost more than the increment.
/// The series are the same ones `counter!`/`histogram!` made per request: a class's counter
/// is registered on its first request, so no series appears before it did.
struct RouteMetrics {
    /// By `Class`: ok, 4xx, 5xx.
    requests: [OnceLock<Counter>; 3],
    duration: Histogram,
}

/// Routes are axum's templates (plus "unmatched"), so this map stays as small as the router.
static ROUTES: LazyLock<RwLock<HashMap<Box<str>, Arc<RouteMetrics>>>> = LazyLock::new(|| {
    // Handles taken before a recorder is installed would stay no-ops for good.
    crate::metrics::handle();
    RwLock::default()
});

impl RouteMetrics {
    fn record(route: &str, class: Class, seconds: f64) {
        let route_metrics = Self::of(route);
        route_metrics.requests[class as usize]
            .get_or_init(|| {
                metrics::counter!(
                    "floodgate_http_requests_total",
                    "route" => route.to_owned(),
                    "class" => class.label()
                )
            })
            .increment(1);
        route_metrics.duration.record(seconds);
    }

    fn of(route: &str) -> Arc<RouteMetrics> {
        let known = ROUTES
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(route)
            .cloned();
        if let Some(metrics) = known {
            return metrics;
        }
        ROUTES
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .entry(route.into())
            .or_insert_with(|| {
                Arc::new(RouteMetrics {
                    requests: Default::default(),
                    duration: metrics::histogram!(
                        "floodgate_http_request_duration_seconds",
                        "route" => route.to_owned()
                    ),
                })
            })
            .clone()
    }
}
