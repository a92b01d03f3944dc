//! Public reads of an event: summary, seat map (cached, with ETag) and the fairness proof.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;

use admission::EventState;
use reservation::EventId;

use crate::clock::rfc3339;
use crate::extract::PathId;
use crate::problem::Problem;
use crate::seat_cache::SeatSnapshot;
use crate::state::AppState;

pub fn state_name(state: EventState) -> &'static str {
    match state {
        EventState::PreQueue => "pre_queue",
        EventState::Open => "open",
        EventState::Paused => "paused",
        EventState::SoldOut => "sold_out",
        EventState::Closed => "closed",
    }
}

pub(crate) async fn event(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
) -> Result<Response, Problem> {
    let snapshot = snapshot(&state, &event).await?;
    let queue = state.admission.subscribe(event.as_str()).borrow().state;
    let mut body = snapshot.summary;
    body["status"] = json!(state_name(queue));
    body["seats_left"] = json!(snapshot.seats_left);
    Ok(axum::Json(body).into_response())
}

pub(crate) async fn seats(
    State(state): State<AppState>,
    PathId(event_id): PathId<EventId>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let snapshot = snapshot(&state, &event_id).await?;
    let etag = HeaderValue::from_str(&snapshot.etag).map_err(|_| Problem::internal())?;
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == snapshot.etag.as_bytes());
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], snapshot.body).into_response()
    };
    response.headers_mut().insert(header::ETAG, etag);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

/// The cached seat map and summary of the event, reloaded at most once a second.
pub async fn snapshot(state: &AppState, event: &EventId) -> Result<SeatSnapshot, Problem> {
    state
        .seats
        .get(event.as_str(), || async {
            let seats = state.store.seat_map(event).await?;
            let seats_left = seats.iter().filter(|s| s.state == "available").count() as u64;
            let list: Vec<_> = seats
                .iter()
                .map(|s| {
                    json!({
                        "seat_id": s.seat_id.as_str(), "section": s.section, "row": s.row_label,
                        "number": s.number, "price_cents": s.price_cents,
                        "state": if s.state == "available" { "available" } else { "taken" },
                    })
                })
                .collect();
            let body =
                serde_json::to_vec(&json!({ "seats": list })).map_err(|_| Problem::internal())?;
            let event = state.store.get_event(event).await?;
            let summary = json!({
                "event": event.event_id.as_str(),
                "name": event.name,
                "opens_at": rfc3339(event.opens_at_ms),
                "max_seats_per_hold": event.max_seats_per_hold,
                "currency": event.currency,
            });
            Ok::<_, Problem>(SeatSnapshot::new(Bytes::from(body), seats_left, summary))
        })
        .await
}

pub(crate) async fn fairness(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
) -> Result<Response, Problem> {
    let fairness = state.admission.fairness(event.as_str()).await?;
    let mut body = json!({ "seed_commitment": fairness.seed_commitment, "algorithm": "HMAC-SHA256(seed, ticket_id), ascending" });
    if let Some(seed) = fairness.seed {
        body["seed"] = json!(seed);
    }
    Ok(axum::Json(body).into_response())
}
