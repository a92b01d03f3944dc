//! Joining the queue, asking where you stand (the polling fallback of the WebSocket) and
//! claiming your turn.

use std::net::SocketAddr;
use std::sync::LazyLock;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use metrics::Counter;
use serde::Serialize;
use serde_json::json;

use admission::{Lane, QueueStatus};
use reservation::EventId;

use crate::auth::QueueTicket;
use crate::client_ip::client_ip;
use crate::clock::rfc3339;
use crate::entry::{self, Entry};
use crate::extract::{JsonBody, PathId};
use crate::idempotent;
use crate::problem::Problem;
use crate::requests::JoinRequest;
use crate::state::AppState;

/// A join: the queue's gate (limit, event, state), then the entry (identity, code; nothing
/// to judge for an open event joined plainly), then the place.
pub(crate) async fn join(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    JsonBody { value: request, .. }: JsonBody<JoinRequest>,
) -> Result<Response, Problem> {
    let id = event.as_str();
    let key = idempotent::key(&headers)?;
    let client = client_ip(peer, &headers, &state.settings.trusted_proxies);
    request.check()?;
    let gate = state.admission.open_join(id, client).await?;
    let plain = request.code.is_none()
        && request.identity.is_none()
        && gate.control().identity.is_none()
        && !gate.control().access.needs_code(gate.now_ms());
    let entry = if plain {
        Entry {
            person: None,
            lane: Lane::General,
        }
    } else {
        entry::judge(&state.admission, &state.store, &event, &gate, &request).await?
    };
    let joined = state
        .admission
        .join_through(gate, entry.key(key.as_deref()), entry.lane)
        .await?;
    JOINS.increment(1);
    let admitted = joined.admitted.as_ref();
    let body = JoinBody {
        admission_token: admitted.map(|a| a.admission_token.as_str()),
        estimated_wait_range_s: joined.estimated_wait_range_s,
        estimated_wait_s: joined.estimated_wait_s,
        lane: joined.claims.lane,
        position: joined.position,
        queue_token: &joined.queue_token,
        retry_after_s: joined.retry_after_s,
        seat_chance: joined.seat_chance,
        session_expires_at: admitted.map(|a| rfc3339(crate::clock::ms(a.session_expires_at))),
        status: joined.status,
        ticket_id: &joined.ticket_id,
    };
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// The 201 answer to a join, serialized straight from the struct (no `json!` map of owned
/// keys and copied strings per join). Fields in alphabetical order: the bytes are what the
/// sorted `json!` map wrote.
#[derive(Serialize)]
struct JoinBody<'a> {
    /// Only when admitted at once (`fail_open` while the queue backend is down).
    #[serde(skip_serializing_if = "Option::is_none")]
    admission_token: Option<&'a str>,
    estimated_wait_range_s: Option<(u64, u64)>,
    estimated_wait_s: Option<u64>,
    /// Absent for the general lane, so a plain join's answer is what it always was.
    #[serde(skip_serializing_if = "Lane::is_general")]
    lane: Lane,
    position: Option<u64>,
    queue_token: &'a str,
    /// When the page reads first: the answer is already what a read would tell it.
    retry_after_s: u64,
    seat_chance: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    session_expires_at: Option<String>,
    status: QueueStatus,
    ticket_id: &'a str,
}

/// `floodgate_joins_total`, registered once rather than looked up per join (the recorder is
/// installed first, or the handle would stay a no-op).
static JOINS: LazyLock<Counter> = LazyLock::new(|| {
    crate::metrics::handle();
    metrics::counter!("floodgate_joins_total")
});

/// The public queue snapshot: the bytes the meter serialized when it published the tick, so a
/// poll costs a copy and no backend call. Public and cacheable for a second, so a CDN or a
/// reverse proxy can answer every poller; `If-None-Match` with its ETag gets a 304.
pub(crate) async fn snapshot(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let public = state.admission.public_snapshot(event.as_str()).await?;
    let etag = HeaderValue::from_str(&public.etag).map_err(|_| Problem::internal())?;
    let fresh = headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .any(|v| etag_matches(v.as_bytes(), public.etag.as_bytes()));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], public.body).into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, etag);
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=1"),
    );
    Ok(response)
}

/// `If-None-Match` (RFC 9110 §13.1.2): `*`, or a list of tags compared weakly.
fn etag_matches(header: &[u8], etag: &[u8]) -> bool {
    header.split(|b| *b == b',').any(|tag| {
        let tag = tag.trim_ascii();
        tag == b"*" || tag.strip_prefix(b"W/").unwrap_or(tag) == etag
    })
}

/// The ticket was checked against the path's event at the edge.
pub(crate) async fn status(
    State(state): State<AppState>,
    QueueTicket(claims): QueueTicket,
) -> Result<Response, Problem> {
    let status = state.admission.status(&claims).await?;
    let mut response = axum::Json(status).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

pub(crate) async fn claim(
    State(state): State<AppState>,
    QueueTicket(claims): QueueTicket,
) -> Result<Response, Problem> {
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

#[cfg(test)]
mod tests {
    use super::etag_matches;

    #[test]
    fn if_none_match_takes_lists_weak_tags_and_a_star() {
        let etag = br#""abc""#;
        assert!(etag_matches(br#""abc""#, etag));
        assert!(etag_matches(br#""x", W/"abc""#, etag));
        assert!(etag_matches(b"*", etag));
        assert!(!etag_matches(br#""abd""#, etag));
        assert!(!etag_matches(b"abc", etag));
    }
}
