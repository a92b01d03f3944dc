//! The HTTP contract of API.md as OpenAPI 3.1, served at `GET /api/openapi.json`. The paths
//! come from the route book (`route_book.rs`): method, path, caller, body and answer schemas
//! are declared there once. The shared schemas and security schemes are written here.

use std::sync::LazyLock;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use reservation::limits as l;

use crate::auth::Caller;
use crate::route_book::{Doc, Entry, Param, book};
use crate::routes::admin::{NAME_CHARS, ROW_CHARS, SEATS_PER_LIST, SECTION_CHARS};
use crate::routes::event_list;

/// The document as served: built once.
pub fn served() -> Bytes {
    static SERVED: LazyLock<Bytes> =
        LazyLock::new(|| Bytes::from(serde_json::to_vec(&document()).unwrap_or_default()));
    SERVED.clone()
}

fn security(caller: Caller) -> Value {
    match caller {
        Caller::Anyone => json!([]),
        Caller::QueueToken => json!([{"queueToken": []}]),
        Caller::AdmissionToken => json!([{"admissionToken": []}]),
        Caller::AdmissionOrReceipt => json!([{"admissionToken": []}, {"receiptKey": []}]),
        Caller::Organizer(_) => json!([{"organizerKey": []}]),
        Caller::WebhookSignature => json!([{"webhookSignature": []}]),
    }
}

fn json_of(schema: &str) -> Value {
    json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}})
}

fn operation(entry: &Entry, doc: &Doc) -> Value {
    let mut params: Vec<Value> = entry
        .path
        .split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| {
            json!({"name": name, "in": "path", "required": true,
                   "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}})
        })
        .collect();
    for (name, schema, description) in doc.query {
        params.push(json!({"name": name, "in": "query", "required": false,
                           "schema": schema(), "description": description}));
    }
    for (name, schema, description) in doc.headers {
        params.push(json!({"name": name, "in": "header", "required": true,
                           "schema": schema(), "description": description}));
    }
    let success = match doc.response {
        _ if doc.csv => json!({"description": "a CSV file (RFC 4180, header row first), streamed",
            "headers": {"Content-Disposition": {"schema": {"type": "string"},
                "description": "attachment; filename=\"EVENT-NAME.csv\""}},
            "content": {"text/csv": {"schema": {"type": "string"}}}}),
        Some(schema) => {
            let mut answer = json_of(schema);
            answer["description"] = json!("success");
            answer
        }
        None => json!({"description": "success"}),
    };
    let mut operation = json!({
        "summary": doc.summary,
        "parameters": params,
        "security": security(entry.caller),
        "responses": {
            doc.success.to_string(): success,
            "4XX": {"description": "problem+json", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
        },
    });
    if let Caller::Organizer(role) = entry.caller {
        operation["responses"]["403"] = json!({
            "description": format!("`role_forbidden`: the key's role is below `{role}`"),
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
        });
        operation["x-minimum-role"] = json!(role.as_str());
    }
    if let (Some(schema), Some(limit)) = (doc.request, entry.body_limit) {
        let mut body = json_of(schema);
        body["required"] = json!(true);
        body["description"] = json!(format!("JSON, at most {limit} bytes"));
        operation["requestBody"] = body;
        operation["responses"]["413"] = json!({
            "description": format!("the body is over {limit} bytes"),
            "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}},
        });
    }
    operation
}

/// A string, unconstrained (the queue token is judged by its signature, not its shape).
pub(crate) fn any_string() -> Value {
    json!({"type": "string"})
}

/// `limit` of the organizer's event list.
pub(crate) fn event_page_limit() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": event_list::MAX_LIMIT})
}

/// An event id in a query.
pub(crate) fn event_id() -> Value {
    json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"})
}

/// `older_than_s` of the stuck-payments list.
pub(crate) fn stuck_age() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": l::STUCK_S})
}

/// The WebSocket handshake (RFC 6455) as the server checks it: without it the answer is 400
/// problem+json (426 where the connection cannot be upgraded), with it 101.
pub(crate) const WEBSOCKET_HANDSHAKE: &[Param] = &[
    ("Connection", connection_upgrade, "names `Upgrade`"),
    ("Upgrade", upgrade_websocket, "`websocket`"),
    ("Sec-WebSocket-Version", websocket_version, "`13`"),
    (
        "Sec-WebSocket-Key",
        any_string,
        "the client's nonce, echoed hashed",
    ),
];

fn connection_upgrade() -> Value {
    json!({"type": "string", "enum": ["Upgrade"]})
}

fn upgrade_websocket() -> Value {
    json!({"type": "string", "enum": ["websocket"]})
}

fn websocket_version() -> Value {
    json!({"type": "string", "enum": ["13"]})
}

pub fn document() -> Value {
    let mut paths = Map::new();
    for route in book() {
        let (entry, doc) = (route.entry(), route.doc());
        if !doc.listed {
            continue;
        }
        let item = paths
            .entry(entry.path.to_owned())
            .or_insert_with(|| json!({}));
        if let Value::Object(ops) = item {
            ops.insert(entry.verb.name().to_owned(), operation(entry, doc));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {"title": "Floodgate", "version": env!("CARGO_PKG_VERSION"),
                 "description": "Virtual waiting room and reservation gateway. See API.md."},
        "paths": paths,
        "components": {
            "securitySchemes": {
                "queueToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "admissionToken": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                "organizerKey": {"type": "http", "scheme": "bearer"},
                "receiptKey": {"type": "apiKey", "in": "header", "name": "Floodgate-Receipt"},
                "webhookSignature": {"type": "apiKey", "in": "header", "name": "Stripe-Signature"},
            },
            "schemas": {
                "Problem": {"type": "object", "required": ["type", "title", "status", "code"],
                    "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                        "status": {"type": "integer"}, "detail": {"type": "string"}, "code": {"type": "string"}}},
                "Checkout": checkout_schema(),
                "Hold": hold_schema(),
                "HoldRequest": hold_request_schema(),
                "CreateEvent": create_event_schema(),
                "AdmissionSettings": admission_schema(0, true),
                "NewEventAdmission": admission_schema(1, false),
                "AddSeats": add_seats_schema(),
                "EventList": event_list_schema(),
                "CreateKey": crate::openapi_keys::create_key_schema(),
                "NewTeamKey": crate::openapi_keys::new_key_schema(),
                "TeamKeys": crate::openapi_keys::keys_schema(),
                "WebhookEvent": {"type": "object", "description": "A Stripe-shaped event, signed over its raw bytes by `Stripe-Signature`."},
            },
        },
    })
}

fn event_list_schema() -> Value {
    let count = json!({"type": "integer", "minimum": 0});
    json!({"type": "object", "required": ["events", "next"], "properties": {
        "events": {"type": "array", "maxItems": event_list::MAX_LIMIT, "items": {
            "type": "object", "required": ["event", "name", "opens_at", "state", "seats"],
            "properties": {
                "event": {"type": "string"},
                "name": {"type": "string"},
                "opens_at": {"type": "string", "format": "date-time"},
                "state": {"type": "string", "enum": ["scheduled", "open", "paused", "closed", "sold_out"]},
                "seats": {"type": "object", "required": ["total", "available", "held", "sold"],
                    "properties": {"total": count, "available": count, "held": count, "sold": count}},
            }}},
        "next": {"type": ["string", "null"], "description": "pass as `after` for the next page; null on the last"},
    }})
}

fn hold_request_schema() -> Value {
    json!({"oneOf": [
        {"type": "object", "required": ["seats"], "additionalProperties": false,
         "properties": {"seats": {"type": "array", "minItems": 1, "maxItems": l::SEATS_PER_HOLD,
            "items": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}}}},
        {"type": "object", "required": ["section", "quantity"], "additionalProperties": false,
         "properties": {"section": {"type": "string"},
            "quantity": {"type": "integer", "minimum": 1, "maximum": l::SEATS_PER_HOLD}}},
    ]})
}

/// The admission settings: at creation (`flow_min` 1: an event starts with some outflow) and
/// as a live change (`flow_min` 0 stops new offers without pausing the line; a change names at
/// least one setting). `session_s` must also be at least the event's `max_hold_s + abandon_s`,
/// a rule across fields (and, live, across the stored event) that JSON Schema cannot state.
fn admission_schema(flow_min: i64, is_change: bool) -> Value {
    let mut schema = json!({"type": "object", "additionalProperties": false, "properties": {
        "rate_per_min": {"type": "integer", "minimum": flow_min, "maximum": l::RATE_PER_MIN},
        "max_active": {"type": "integer", "minimum": flow_min, "maximum": l::MAX_ACTIVE},
        "session_s": {"type": "integer", "minimum": 1, "maximum": l::SESSION_S,
            "description": "at least the event's max_hold_s + abandon_s"},
        "offer_s": {"type": "integer", "minimum": 1, "maximum": l::OFFER_S},
        "paused": {"type": "boolean"},
    }});
    if is_change {
        schema["minProperties"] = json!(1);
    }
    schema
}

/// A name: 1-200 characters, one of them at least not white space (Unicode `White_Space`,
/// as Rust's `char::is_whitespace` reads it).
const NOT_ALL_BLANK: &str = "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";

fn create_event_schema() -> Value {
    json!({"type": "object", "required": ["event", "name"], "additionalProperties": false,
    "properties": {
        "event": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "name": {"type": "string", "minLength": 1, "maxLength": NAME_CHARS, "pattern": NOT_ALL_BLANK},
        "opens_at": {"type": "string", "format": "date-time"},
        "hold_ttl_s": {"type": "integer", "minimum": 1, "maximum": l::HOLD_S,
            "description": "at most max_hold_s"},
        "max_hold_s": {"type": "integer", "minimum": 1, "maximum": l::HOLD_S},
        "max_seats_per_hold": {"type": "integer", "minimum": 1, "maximum": l::SEATS_PER_HOLD},
        "resolve_s": {"type": "integer", "minimum": 1, "maximum": l::RESOLVE_S},
        "abandon_s": {"type": "integer", "minimum": 1, "maximum": l::ABANDON_S},
        "currency": {"type": "string", "pattern": "^[A-Za-z]{3}$"},
        "admission": {"$ref": "#/components/schemas/NewEventAdmission"},
    }})
}

fn add_seats_schema() -> Value {
    json!({"oneOf": [
        {"type": "object", "required": ["seats"], "additionalProperties": false,
         "properties": {"seats": {"type": "array", "minItems": 1, "maxItems": SEATS_PER_LIST, "items": {
            "type": "object", "required": ["seat_id", "section", "price_cents"], "additionalProperties": false,
            "properties": {
                "seat_id": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
                "section": {"type": "string", "minLength": 1, "maxLength": SECTION_CHARS},
                "row": {"type": "string", "maxLength": ROW_CHARS},
                "number": {"type": "integer", "minimum": 0, "maximum": l::SEAT_NUMBER},
                "price_cents": {"type": "integer", "minimum": 0, "maximum": l::PRICE_CENTS}}}}}},
        {"type": "object", "required": ["generate"], "additionalProperties": false,
         "properties": {"generate": {
            "type": "object", "required": ["section", "rows", "per_row", "price_cents"], "additionalProperties": false,
            "description": format!("rows × per_row at most {}", l::SEATS_PER_REQUEST),
            "properties": {
                "section": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,40}$"},
                "rows": {"type": "integer", "minimum": 1, "maximum": l::ROWS},
                "per_row": {"type": "integer", "minimum": 1, "maximum": l::PER_ROW},
                "price_cents": {"type": "integer", "minimum": 0, "maximum": l::PRICE_CENTS}}}}},
    ], "description": format!("An event holds at most {} seats.", l::SEATS_PER_EVENT)})
}

fn checkout_schema() -> Value {
    json!({"type": "object", "required": ["payment_method"], "additionalProperties": false,
    "properties": {
        "payment_method": {"type": "string", "minLength": 1, "maxLength": 64,
            "examples": ["pm_card_visa", "pm_card_authenticationRequired"]},
        "return_url": {"type": "string", "format": "uri", "maxLength": 2048,
            "description": "Absolute http(s) URL of the buyer's page: where the provider sends the buyer back after a 3-D Secure check (see the hold's `next_action`)."},
    }})
}

fn hold_schema() -> Value {
    json!({"type": "object", "required": ["hold_id", "state", "seats", "expires_at", "expires_in_s"],
    "properties": {
        "hold_id": {"type": "string"},
        "event": {"type": "string"},
        "state": {"type": "string", "enum": ["held", "paying", "confirmed", "released", "expired", "abandoned"]},
        "seats": {"type": "array", "items": {"type": "string"}},
        "expires_at": {"type": "string", "format": "date-time"},
        "expires_in_s": {"type": "integer"},
        "total_cents": {"type": "integer"},
        "order_id": {"type": "string"},
        "last_payment_error": {"type": "string"},
        "next_action": {
            "description": "While `paying`: the card asks the buyer to authenticate (3-D Secure). Send the buyer's browser to `redirect_to_url.url`; the provider sends them back to the checkout's `return_url`, and the hold then turns `confirmed`, or `held` again with `last_payment_error` if authentication failed.",
            "type": "object", "required": ["type", "redirect_to_url"],
            "properties": {
                "type": {"const": "redirect_to_url"},
                "redirect_to_url": {"type": "object", "required": ["url"],
                    "properties": {"url": {"type": "string"}}},
            }},
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_route_is_documented_and_every_schema_exists() {
        let doc = document();
        for route in book() {
            let (entry, listed) = (route.entry(), route.doc().listed);
            let op = &doc["paths"][entry.path][entry.verb.name()];
            assert_eq!(
                op.is_object(),
                listed,
                "{} {}",
                entry.verb.name(),
                entry.path
            );
        }
        let text = doc.to_string();
        for reference in text.split("\"#/components/schemas/").skip(1) {
            let name = reference.split('"').next().unwrap_or_default();
            assert!(
                doc["components"]["schemas"][name].is_object(),
                "{name} missing"
            );
        }
    }
}
