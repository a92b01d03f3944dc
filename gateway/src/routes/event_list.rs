//! `GET /api/admin/events`: the organizer's events with their state and seat counts, a page at
//! a time in id order (`after` is the last id of the page before; `next` names it).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use reservation::{EventId, EventListing};

use crate::auth::Organizer;
use crate::clock::{now_ms, rfc3339};
use crate::extract::Query;
use crate::problem::Problem;
use crate::requests::EventListQuery;
use crate::state::AppState;

/// Events per page when the query names no `limit`.
pub(crate) const DEFAULT_LIMIT: i64 = 50;
pub(crate) use reservation::event_list::EVENTS_PER_PAGE as MAX_LIMIT;

/// The event's state as the organizer reads it: a switch they set wins over what the seats
/// say, and a sale is sold out only once no seat is free or may come back.
fn state_of(event: &EventListing, now_ms: i64) -> &'static str {
    if event.closed {
        "closed"
    } else if event.seats_total > 0 && event.seats_available == 0 && event.seats_held == 0 {
        "sold_out"
    } else if event.paused {
        "paused"
    } else if event.opens_at_ms > now_ms {
        "scheduled"
    } else {
        "open"
    }
}

fn shown(event: &EventListing, now_ms: i64) -> Value {
    json!({
        "event": event.event_id.as_str(),
        "name": event.name,
        "opens_at": rfc3339(event.opens_at_ms),
        "state": state_of(event, now_ms),
        "seats": {
            "total": event.seats_total,
            "available": event.seats_available,
            "held": event.seats_held,
            "sold": event.seats_sold,
        },
    })
}

pub(crate) async fn list(
    State(state): State<AppState>,
    _: Organizer,
    Query(query): Query<EventListQuery>,
) -> Result<Response, Problem> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(reservation::Error::OutOfRange {
            field: "limit",
            min: 1,
            max: MAX_LIMIT,
        }
        .into());
    }
    let after = query
        .after
        .as_deref()
        .map(str::parse::<EventId>)
        .transpose()?;
    let events = state.store.list_events(after.as_ref(), limit).await?;
    let now = now_ms();
    let next = (events.len() as i64 == limit)
        .then(|| events.last().map(|e| e.event_id.as_str().to_owned()))
        .flatten();
    let list: Vec<Value> = events.iter().map(|e| shown(e, now)).collect();
    Ok(axum::Json(json!({ "events": list, "next": next })).into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing() -> EventListing {
        EventListing {
            event_id: "ev".parse().unwrap(),
            name: "Ev".into(),
            opens_at_ms: 1_000,
            paused: false,
            closed: false,
            seats_total: 10,
            seats_available: 4,
            seats_held: 1,
            seats_sold: 5,
        }
    }

    #[test]
    fn states_in_the_order_the_organizer_reads_them() {
        let e = listing();
        assert_eq!(state_of(&e, 2_000), "open");
        assert_eq!(state_of(&e, 500), "scheduled");
        let paused = EventListing {
            paused: true,
            ..e.clone()
        };
        assert_eq!(state_of(&paused, 2_000), "paused");
        let gone = EventListing {
            seats_available: 0,
            seats_held: 0,
            ..paused.clone()
        };
        assert_eq!(state_of(&gone, 2_000), "sold_out");
        let held = EventListing {
            seats_available: 0,
            ..e.clone()
        };
        assert_eq!(state_of(&held, 2_000), "open", "held seats may come back");
        let closed = EventListing {
            closed: true,
            ..gone
        };
        assert_eq!(state_of(&closed, 2_000), "closed");
        let empty = EventListing {
            seats_total: 0,
            seats_available: 0,
            seats_held: 0,
            ..e
        };
        assert_eq!(state_of(&empty, 2_000), "open");
    }
}
