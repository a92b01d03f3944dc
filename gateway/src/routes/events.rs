//! Public reads of an event: summary with its sections and branding, seat map (cached, with
//! ETag; by section; changes since a version) and the fairness proof.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};

use admission::EventState;
use reservation::EventId;

use crate::clock::rfc3339;
use crate::extract::{PathId, Query};
use crate::look::Framing;
use crate::problem::Problem;
use crate::requests::SeatsQuery;
use crate::routes::admin::SECTION_CHARS;
use crate::seat_cache::SeatSnapshot;
use crate::seat_sections::{MAX_CHANGES, Since, Stadium, seat_json};
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
    body["sections"] = json!(snapshot.stadium.sections);
    Ok(axum::Json(body).into_response())
}

/// The whole map (ETag), one section (`?section=`), or the changes since a version (`?since=`).
pub(crate) async fn seats(
    State(state): State<AppState>,
    PathId(event_id): PathId<EventId>,
    Query(query): Query<SeatsQuery>,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let body = match (&query.section, query.since) {
        (Some(_), Some(_)) => {
            return Err(Problem::bad_request(
                "ask for a section or for changes, not both",
            ));
        }
        (Some(section), None) => {
            if !(1..=SECTION_CHARS).contains(&section.chars().count()) {
                return Err(Problem::bad_request(format!(
                    "section is 1-{SECTION_CHARS} characters"
                )));
            }
            let snapshot = snapshot(&state, &event_id).await?;
            snapshot
                .stadium
                .section(section)
                .ok_or_else(|| Problem::not_found("no such section"))?
        }
        (None, Some(since)) => {
            if since < 0 {
                return Err(Problem::bad_request("since is a version: 0 or more"));
            }
            let snapshot = snapshot(&state, &event_id).await?;
            match snapshot.stadium.since(since) {
                Since::Changes(answer) => {
                    Bytes::from(serde_json::to_vec(&answer).map_err(|_| Problem::internal())?)
                }
                Since::TooFarBehind => {
                    return Err(Problem::new(
                        StatusCode::GONE,
                        "seats_reload",
                        format!(
                            "more than {MAX_CHANGES} seats changed since that version: load the section again"
                        ),
                    ));
                }
            }
        }
        (None, None) => return whole_map(&state, &event_id, &headers).await,
    };
    let mut response = ([(header::CONTENT_TYPE, "application/json")], body).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    Ok(response)
}

async fn whole_map(
    state: &AppState,
    event_id: &EventId,
    headers: &HeaderMap,
) -> Result<Response, Problem> {
    let snapshot = snapshot(state, event_id).await?;
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

/// The cached seat map and summary of the event, reloaded at most once a second. The
/// availability version is read before the seats, so every change after it is in a later
/// `?since=` answer even when the seats read already showed it.
pub async fn snapshot(state: &AppState, event: &EventId) -> Result<SeatSnapshot, Problem> {
    state
        .seats
        .get(event.as_str(), || async {
            let version = state.store.availability_version(event).await?;
            let seats = state.store.seat_map(event).await?;
            let seats_left = seats.iter().filter(|s| s.state == "available").count() as u64;
            let list: Vec<_> = seats.iter().map(seat_json).collect();
            let body = serde_json::to_vec(&json!({ "version": version, "seats": list }))
                .map_err(|_| Problem::internal())?;
            let stadium = Stadium::new(version, &seats).map_err(|_| Problem::internal())?;
            let event = state.store.get_event(event).await?;
            let branding: Option<Value> = event
                .branding
                .as_deref()
                .and_then(|b| serde_json::from_str(b).ok());
            let summary = json!({
                "event": event.event_id.as_str(),
                "name": event.name,
                "opens_at": rfc3339(event.opens_at_ms),
                "max_seats_per_hold": event.max_seats_per_hold,
                "currency": event.currency,
                "branding": branding,
            });
            Ok::<_, Problem>(
                SeatSnapshot::new(Bytes::from(body), seats_left, summary)
                    .with_stadium(stadium)
                    .with_framing(Framing::of(&event)),
            )
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
