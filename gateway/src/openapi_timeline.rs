//! The OpenAPI schema of the organizer's timeline (`routes/timeline.rs`).

use serde_json::{Value, json};

use crate::routes::timeline::TIMELINE_MINUTES;

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

fn nullable(kind: &str, description: &str) -> Value {
    json!({"type": [kind, "null"], "minimum": 0, "description": description})
}

pub(crate) fn timeline_schema() -> Value {
    let time = json!({"type": "string", "format": "date-time"});
    json!({"type": "object", "required": ["event", "opens_at", "now", "minutes", "forecast"],
    "properties": {
        "event": {"type": "string"},
        "opens_at": time,
        "now": time,
        "minutes": {"type": "array", "maxItems": TIMELINE_MINUTES,
            "description": "every minute (UTC, its start) from the earlier of the opening and \
                the first join to now, the last day at most, zeros included",
            "items": {"type": "object",
                "required": ["minute", "joins", "offers", "claims", "lapsed", "holds", "sales"],
                "properties": {
                    "minute": time,
                    "joins": {"type": "integer", "minimum": 0, "description": "places given (both lanes)"},
                    "offers": count(),
                    "claims": {"type": "integer", "minimum": 0, "description": "sessions opened"},
                    "lapsed": {"type": "integer", "minimum": 0, "description": "offers whose time to claim ran out unclaimed"},
                    "holds": {"type": "integer", "minimum": 0, "description": "holds created"},
                    "sales": {"type": "integer", "minimum": 0, "description": "seats sold"},
                }}},
        "forecast": {"type": "object",
            "required": ["state", "seats_left", "seats_per_buyer", "outflow_per_min",
                "places_to_sell_out", "sold_out_in_s", "sold_out_in_range_s", "sold_out_at"],
            "properties": {
                "state": {"type": "string", "enum": ["pre_queue", "open", "paused", "sold_out", "closed"]},
                "seats_left": count(),
                "seats_per_buyer": {"type": "number", "minimum": 0},
                "outflow_per_min": nullable("number", "offers per minute measured over the last minute"),
                "places_to_sell_out": nullable("integer",
                    "places behind the served frontier whose chance of a seat is at least one half"),
                "sold_out_in_s": nullable("integer",
                    "seconds until those places are offered, as a buyer that far back is told: \
                     the cap's free places at the rate, then as places free; null while nothing \
                     flows (paused, closed, before the opening) or while the time a place is held \
                     is still being measured"),
                "sold_out_in_range_s": {"type": ["array", "null"], "items": count(),
                    "minItems": 2, "maxItems": 2,
                    "description": "low and high seconds of that wait; null with sold_out_in_s"},
                "sold_out_at": {"type": ["string", "null"], "format": "date-time"},
            }},
    }})
}
