//! `GET /api/admin/events/{event}/timeline`: what admission did minute by minute since the
//! opening (joins, offers, claims, lapses, holds, seats sold) and when the seats are expected
//! to run out (`admission::Forecast`). Viewers may read it.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use admission::Forecast;
use reservation::{EventId, MinuteCounts};

use crate::auth::Organizer;
use crate::clock::rfc3339;
use crate::extract::PathId;
use crate::problem::Problem;
use crate::state::AppState;

/// The most minutes one answer lists: the last day.
pub(crate) const TIMELINE_MINUTES: i64 = 1_440;

fn minute(m: &MinuteCounts) -> Value {
    json!({
        "minute": rfc3339(m.minute_ms),
        "joins": m.joins, "offers": m.offers, "claims": m.claims, "lapsed": m.lapsed,
        "holds": m.holds, "sales": m.sales,
    })
}

pub(crate) async fn timeline(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    _: Organizer,
) -> Result<Response, Problem> {
    // Read first: an unknown event is refused before this instance starts following it.
    let timeline = state.store.timeline(&event, TIMELINE_MINUTES).await?;
    let snapshot = state.admission.subscribe(event.as_str()).borrow().clone();
    let forecast = Forecast::of(&snapshot);
    let sold_out_at = forecast
        .sold_out_in_s
        .and_then(|s| i64::try_from(s).ok())
        .map(|s| rfc3339(timeline.now_ms.saturating_add(s.saturating_mul(1000))));
    Ok(axum::Json(json!({
        "event": event.as_str(),
        "opens_at": rfc3339(timeline.opens_at_ms),
        "now": rfc3339(timeline.now_ms),
        "minutes": timeline.minutes.iter().map(minute).collect::<Vec<_>>(),
        "forecast": {
            "state": crate::routes::events::state_name(forecast.state),
            "seats_left": forecast.seats_left,
            "seats_per_buyer": forecast.seats_per_buyer,
            "outflow_per_min": forecast.outflow_per_min,
            "places_to_sell_out": forecast.places_to_sell_out,
            "sold_out_in_s": forecast.sold_out_in_s,
            "sold_out_in_range_s": forecast.sold_out_in_range_s,
            "sold_out_at": sold_out_at,
        },
    }))
    .into_response())
}
