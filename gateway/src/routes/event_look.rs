//! The look of an event's pages: the organizer sets the branding and the sites allowed to
//! frame the page (`PATCH /api/admin/events/{event}`, read back with `GET`); the page of the event
//! (`/events/{event}`) is served with a Content-Security-Policy that admits exactly those.
//! The same change renames the event (any time) and moves its opening and hold and payment
//! timings (only before its queue opens: `409 event_opened` after).

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tower::ServiceExt;

use reservation::{Event, EventId, LookPatch, TimingsPatch};

use crate::auth::Organizer;
use crate::clock::rfc3339;
use crate::extract::{JsonBody, PathId};
use crate::look::{self, Framing};
use crate::problem::Problem;
use crate::requests::EventLook;
use crate::routes::admin::{audit, is_name, obey_now};
use crate::routes::events::snapshot;
use crate::routes::pages;
use crate::state::AppState;

/// The event as the organizer set it, for the dashboard's forms to start from.
pub(crate) async fn read(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
) -> Result<Response, Problem> {
    let stored = state.store.get_event(&event).await?;
    Ok(axum::Json(event_json(&stored)).into_response())
}

pub(crate) async fn patch(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    mut body: JsonBody<EventLook>,
) -> Result<Response, Problem> {
    let look = look::judge(&mut body.value)?;
    let look = LookPatch {
        branding: look.branding,
        frame_ancestors: look.frame_ancestors,
    };
    let timings = timings(&body.value)?;
    if look.is_empty() && timings.is_empty() {
        return Err(Problem::bad_request(
            "the change names nothing to change: branding, frame_ancestors, name or a timing",
        ));
    }
    state.store.edit_event(&event, &look, &timings).await?;
    // This gateway shows the change at once; the others within their cache's second.
    state.seats.invalidate(event.as_str());
    if timings.changes_timings() {
        // The new opening and per-buyer limit are in this instance's snapshot before the
        // answer; the others read the bumped version on their next tick.
        obey_now(&state, event.as_str()).await;
    }
    let action = if timings.is_empty() {
        "set_look"
    } else {
        "edit_event"
    };
    audit(
        &state,
        &who,
        action,
        Some(event.as_str()),
        &serde_json::from_slice(&body.raw).unwrap_or(Value::Null),
    )
    .await;
    let stored = state.store.get_event(&event).await?;
    Ok(axum::Json(event_json(&stored)).into_response())
}

/// The name and timings of a change, judged as creation judges them (the store judges each
/// bound and the rules between them and the stored event).
fn timings(request: &EventLook) -> Result<TimingsPatch, Problem> {
    let name = match &request.name {
        None => None,
        Some(name) if is_name(name) => Some(name.trim().to_owned()),
        Some(_) => {
            return Err(
                Problem::bad_request("name must be 1-200 characters, not all blank")
                    .with("field", json!("name")),
            );
        }
    };
    let opens_at_ms = match &request.opens_at {
        None => None,
        Some(at) => Some(crate::clock::ms(
            time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339)
                .map_err(|_| {
                    Problem::bad_request("opens_at must be an RFC 3339 time")
                        .with("field", json!("opens_at"))
                })?,
        )),
    };
    Ok(TimingsPatch {
        name,
        opens_at_ms,
        hold_ttl_s: request.hold_ttl_s,
        max_hold_s: request.max_hold_s,
        max_seats_per_hold: request.max_seats_per_hold,
        resolve_s: request.resolve_s,
        abandon_s: request.abandon_s,
    })
}

/// The event as the organizer set it: its name, timings and look.
fn event_json(stored: &Event) -> Value {
    let parse = |j: Option<&str>| -> Value {
        j.and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or(Value::Null)
    };
    let frame_ancestors = match parse(stored.frame_ancestors.as_deref()) {
        Value::Null => json!([]),
        list => list,
    };
    json!({
        "event": stored.event_id.as_str(),
        "name": stored.name,
        "opens_at": rfc3339(stored.opens_at_ms),
        "hold_ttl_s": stored.hold_ttl_s,
        "max_hold_s": stored.max_hold_s,
        "max_seats_per_hold": stored.max_seats_per_hold,
        "resolve_s": stored.resolve_s,
        "abandon_s": stored.abandon_s,
        "branding": parse(stored.branding.as_deref()),
        "frame_ancestors": frame_ancestors,
    })
}

/// The waiting-room page of one event. An id that is not one, an unknown event or a store
/// that cannot answer gets the page with the default policy (nobody frames it); the page then
/// tells the buyer what went wrong.
pub(crate) async fn page(
    State(state): State<AppState>,
    event: Result<Path<String>, PathRejection>,
    request: Request,
) -> Response {
    let framing = match event.ok().and_then(|Path(raw)| raw.parse::<EventId>().ok()) {
        Some(id) => match snapshot(&state, &id).await {
            Ok(snapshot) => Some(snapshot.framing),
            Err(_) => None,
        },
        None => None,
    };
    let mut response = match pages::index_file().oneshot(request).await {
        Ok(file) => file.map(axum::body::Body::new).into_response(),
        Err(never) => match never {},
    };
    if let Some(framing) = framing {
        response.extensions_mut().insert(Framing::clone(&framing));
    }
    response
}
