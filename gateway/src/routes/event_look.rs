//! The look of an event's pages: the organizer sets the branding and the sites allowed to
//! frame the page (`PATCH /api/admin/events/{event}`); the page of the event
//! (`/events/{event}`) is served with a Content-Security-Policy that admits exactly those.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tower::ServiceExt;

use reservation::{EventId, LookPatch};

use crate::auth::Organizer;
use crate::extract::{JsonBody, PathId};
use crate::look::{self, Framing};
use crate::problem::Problem;
use crate::requests::EventLook;
use crate::routes::admin::audit;
use crate::routes::events::snapshot;
use crate::routes::pages;
use crate::state::AppState;

pub(crate) async fn patch(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    body: JsonBody<EventLook>,
) -> Result<Response, Problem> {
    let look = look::judge(body.value)?;
    let patch = LookPatch {
        branding: look.branding,
        frame_ancestors: look.frame_ancestors,
    };
    state.store.set_look(&event, &patch).await?;
    // This gateway shows the new look at once; the others within their cache's second.
    state.seats.invalidate(event.as_str());
    audit(
        &state,
        &who,
        "set_look",
        Some(event.as_str()),
        &serde_json::from_slice(&body.raw).unwrap_or(Value::Null),
    )
    .await;
    let stored = state.store.get_event(&event).await?;
    let parse = |j: Option<&str>| -> Value {
        j.and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or(Value::Null)
    };
    let frame_ancestors = match parse(stored.frame_ancestors.as_deref()) {
        Value::Null => json!([]),
        list => list,
    };
    Ok(axum::Json(json!({
        "event": event.as_str(),
        "branding": parse(stored.branding.as_deref()),
        "frame_ancestors": frame_ancestors,
    }))
    .into_response())
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
