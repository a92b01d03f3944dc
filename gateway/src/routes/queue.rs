//! Joining the queue, asking where you stand (the polling fallback of the WebSocket) and
//! claiming your turn.

use std::net::SocketAddr;

use axum::Router;
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::auth;
use crate::client_ip::client_ip;
use crate::clock::rfc3339;
use crate::extract::PathId;
use crate::idempotent;
use crate::problem::Problem;
use crate::routes::events::event_id;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/events/{event}/queue", post(join))
        .route("/api/events/{event}/queue/status", get(status))
        .route("/api/events/{event}/queue/claim", post(claim))
}

async fn join(
    State(state): State<AppState>,
    PathId(id): PathId,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    event_id(&id)?;
    let key = idempotent::key(&headers)?;
    let client = client_ip(peer, &headers, &state.settings.trusted_proxies);
    let joined = state.admission.join(&id, client, key.as_deref()).await?;
    metrics::counter!("floodgate_joins_total").increment(1);
    let body = json!({
        "queue_token": joined.queue_token,
        "ticket_id": joined.ticket_id,
        "status": joined.status,
        "position": joined.position,
        "estimated_wait_s": joined.estimated_wait_s,
    });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

async fn status(
    State(state): State<AppState>,
    PathId(id): PathId,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    event_id(&id)?;
    let claims = auth::queued(&state, &id, auth::bearer(&headers))?;
    let status = state.admission.status(&claims).await?;
    let mut response = axum::Json(status).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn claim(
    State(state): State<AppState>,
    PathId(id): PathId,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    event_id(&id)?;
    let claims = auth::queued(&state, &id, auth::bearer(&headers))?;
    let admitted = state.admission.claim(&claims).await?;
    metrics::counter!("floodgate_claims_total").increment(1);
    let expires_ms = crate::clock::ms(admitted.session_expires_at);
    Ok(axum::Json(json!({
        "admission_token": admitted.admission_token,
        "session_id": admitted.session_id,
        "session_expires_at": rfc3339(expires_ms),
    }))
    .into_response())
}
