//! The HTTP contract of API.md as OpenAPI 3.1, served at `GET /api/openapi.json`. The paths
//! come from the route book (`route_book.rs`): method, path, caller, body and answer schemas
//! are declared there once. The shared schemas and security schemes are written here.

use std::sync::LazyLock;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use reservation::MESSAGE_CHARS;
use reservation::limits as l;

use crate::auth::Caller;
use crate::look;
use crate::route_book::{Doc, Entry, Param, book};
use crate::routes::access::{ACCESS_RULES, PEM_MAX, SECRET_MAX, SECRET_MIN};
use crate::routes::admin::{NAME_CHARS, ROW_CHARS, SEATS_PER_LIST, SECTION_CHARS};
use crate::routes::codes::CODES_PER_UPLOAD;
use crate::routes::event_list;
use reservation::codes;

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
        body["required"] = json!(!doc.body_optional);
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

/// `after` of the code list: a code.
pub(crate) fn code_after() -> Value {
    json!({"type": "string", "maxLength": codes::CODE_MAX_CHARS})
}

/// `limit` of the code list.
pub(crate) fn code_page() -> Value {
    json!({"type": "integer", "minimum": 1, "maximum": codes::CODES_PER_PAGE})
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

/// `section` of the seat map: a section's name, as an organizer may write it.
pub(crate) fn section_name() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": SECTION_CHARS})
}

/// `since` of the seat map: a version an earlier answer gave.
pub(crate) fn seat_version() -> Value {
    json!({"type": "integer", "minimum": 0, "maximum": i64::MAX})
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
    let mut document = json!({
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
                "JoinRequest": join_request_schema(),
                "Joined": joined_schema(),
                "AddCodes": add_codes_schema(),
                "CodesAdded": {"type": "object", "required": ["added"], "properties": {
                    "added": {"type": "integer", "minimum": 0},
                    "codes": {"type": "array", "items": {"type": "string"},
                        "description": "the generated codes (absent for an upload)"}}},
                "CodeList": code_list_schema(),
                "Access": access_schema(),
                "AccessSettings": access_settings_schema(),
                "EventLook": event_look_schema(),
                "EventSettings": event_settings_schema(),
                "Branding": branding_schema(),
                "EventList": event_list_schema(),
                "CreateKey": crate::openapi_keys::create_key_schema(),
                "NewTeamKey": crate::openapi_keys::new_key_schema(),
                "TeamKeys": crate::openapi_keys::keys_schema(),
                "Timeline": crate::openapi_timeline::timeline_schema(),
                "WebhookEvent": {"type": "object", "description": "A Stripe-shaped event, signed over its raw bytes by `Stripe-Signature`."},
            },
        },
    });
    for (name, schema) in crate::openapi_hooks::schemas() {
        document["components"]["schemas"][name] = schema;
    }
    document
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
        let change = &mut schema["properties"];
        change["mode"] = json!({"type": "string", "enum": ["normal", "pass_through", "maintenance"],
            "description": "pass_through offers everyone waiting (the cap judged at claim); maintenance refuses joins (409 queue_maintenance) and pauses offers, keeping every place"});
        change["on_backend_down"] = json!({"type": "string", "enum": ["fail_closed", "fail_open"],
            "description": "while the queue backend is down: refuse (503) or admit from the database alone within the cap"});
        change["message"] = json!({"description": "shown as plain text on every waiting page; null clears it",
        "oneOf": [
            {"type": "null"},
            {"type": "object", "required": ["text", "level"], "additionalProperties": false,
             "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": MESSAGE_CHARS,
                    "allOf": [{"pattern": "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"},
                              {"pattern": NOT_ALL_BLANK}]},
                "level": {"type": "string", "enum": ["info", "warning"]}}},
        ]});
        change["version"] = json!({"type": "integer", "format": "int64", "minimum": 1,
            "description": "the version last read: a stale one is refused with 409 stale_version and nothing changes"});
        change["priority_share"] = json!({"type": "number", "minimum": 0, "maximum": 1,
            "description": "the share of offers the priority lane may take (in steps of 0.001)"});
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

/// Ids, codes and times as the organizer's code routes take them.
const CODE_PATTERN: &str = "^[A-Za-z0-9_-]{4,64}$";

fn join_request_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": {
        "code": {"type": "string", "maxLength": codes::CODE_MAX_CHARS,
            "description": "a presale or access code (403 `code_required`, `code_invalid`, `code_used_up`, `code_outside_window`)"},
        "identity": {"type": "string", "maxLength": admission::IDENTITY_TOKEN_BYTES,
            "description": "a JWT the organizer's site signed with `sub` and `exp` (and optionally `lane: priority`); the same `sub` always gets the same place (403 `identity_invalid`)"},
    }})
}

fn joined_schema() -> Value {
    json!({"type": "object", "required": ["queue_token", "ticket_id", "status", "position", "estimated_wait_s"],
    "properties": {
        "queue_token": {"type": "string"},
        "ticket_id": {"type": "string"},
        "status": {"type": "string"},
        "position": {"type": ["integer", "null"]},
        "estimated_wait_s": {"type": ["integer", "null"]},
        "estimated_wait_range_s": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0},
            "minItems": 2, "maxItems": 2, "description": "[low, high] seconds: the range the wait falls in, from the rate and how fast the cap turns over (null while offers are held, or beyond the cap's free places until that is known)"},
        "seat_chance": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
            "description": "how likely a seat is left at this place (null when unknown)"},
        "retry_after_s": {"type": "integer", "minimum": 1,
            "description": "seconds until the page's first read of the queue snapshot (or status): this answer already tells what a read would, so reading at once is one more request per arrival"},
        "lane": {"type": "string", "enum": ["priority"], "description": "present for the priority lane only"},
    }})
}

fn add_codes_schema() -> Value {
    let common = json!({
        "uses": {"type": "integer", "minimum": 1, "maximum": codes::USES_PER_CODE, "description": "uses of each code (default 1)"},
        "starts_at": {"type": "string", "format": "date-time"},
        "ends_at": {"type": "string", "format": "date-time", "description": "after starts_at"},
        "lane": {"type": "string", "enum": ["general", "priority"]},
    });
    let with = |name: &str, schema: Value| {
        let mut properties = common.clone();
        properties[name] = schema;
        json!({"type": "object", "required": [name], "additionalProperties": false, "properties": properties})
    };
    json!({"oneOf": [
        with("generate", json!({"type": "integer", "minimum": 1, "maximum": codes::CODES_PER_REQUEST})),
        with("codes", json!({"type": "array", "minItems": 1, "maxItems": CODES_PER_UPLOAD,
            "items": {"type": "string", "pattern": CODE_PATTERN}})),
    ]})
}

fn code_list_schema() -> Value {
    json!({"type": "object", "required": ["codes", "next_after"], "properties": {
        "codes": {"type": "array", "items": {"type": "object",
            "required": ["code", "uses", "uses_left", "lane"],
            "properties": {
                "code": {"type": "string"}, "uses": {"type": "integer"},
                "uses_left": {"type": "integer"}, "lane": {"type": "string"},
                "starts_at": {"type": "string", "format": "date-time"},
                "ends_at": {"type": "string", "format": "date-time"}}}},
        "next_after": {"type": ["string", "null"], "description": "pass as `after` for the next page"},
    }})
}

fn access_schema() -> Value {
    json!({"type": "object", "required": ["access", "general_opens_at", "identity"], "properties": {
        "access": {"type": "string", "enum": ACCESS_RULES},
        "general_opens_at": {"type": ["string", "null"], "format": "date-time"},
        "identity": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["alg", "required"],
            "properties": {"alg": {"type": "string"}, "required": {"type": "boolean"}}}]},
    }})
}

fn access_settings_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "minProperties": 1, "properties": {
        "access": {"type": "string", "enum": ACCESS_RULES,
            "description": "`presale` needs general_opens_at, given now or before"},
        "general_opens_at": {"type": "string", "format": "date-time"},
        "identity": {"description": "`null` removes the identity check", "oneOf": [
            {"type": "null"},
            {"type": "object", "required": ["alg", "secret"], "additionalProperties": false, "properties": {
                "alg": {"const": "HS256"},
                "secret": {"type": "string", "minLength": SECRET_MIN, "maxLength": SECRET_MAX},
                "required": {"type": "boolean"}}},
            {"type": "object", "required": ["alg", "public_key_pem"], "additionalProperties": false, "properties": {
                "alg": {"type": "string", "enum": ["ES256", "RS256"]},
                "public_key_pem": {"type": "string", "maxLength": PEM_MAX},
                "required": {"type": "boolean"}}},
        ]},
    }})
}

/// The look of an event's pages; at least one of the two is named.
/// The look, the name and the timings of an event. The timings change only before the queue
/// opens (409 `event_opened` after); `opens_at` must be in the future, `hold_ttl_s` at most
/// `max_hold_s`, and `max_hold_s + abandon_s` at most the admission `session_s`: rules across
/// fields, the stored event and the clock that JSON Schema cannot state.
fn event_look_schema() -> Value {
    let timing = "only before the queue opens (409 `event_opened` after)";
    json!({"type": "object", "additionalProperties": false, "minProperties": 1,
    "description": "Every field is optional; the change applies whole or not at all.",
    "properties": {
        "branding": {"$ref": "#/components/schemas/Branding"},
        "frame_ancestors": {"type": "array", "maxItems": look::FRAME_ANCESTORS,
            "description": "Origins allowed to frame `/events/{event}` (its Content-Security-Policy `frame-ancestors`); `[]` stops all framing.",
            "items": {"type": "string", "maxLength": look::ORIGIN_BYTES, "pattern": look::ORIGIN_PATTERN}},
        "name": {"type": "string", "minLength": 1, "maxLength": NAME_CHARS, "pattern": NOT_ALL_BLANK,
            "description": "may change at any time"},
        "opens_at": {"type": "string", "format": "date-time",
            "description": format!("in the future; {timing}")},
        "hold_ttl_s": {"type": "integer", "minimum": 1, "maximum": l::HOLD_S,
            "description": format!("at most max_hold_s; {timing}")},
        "max_hold_s": {"type": "integer", "minimum": 1, "maximum": l::HOLD_S,
            "description": format!("max_hold_s + abandon_s at most the admission session_s; {timing}")},
        "max_seats_per_hold": {"type": "integer", "minimum": 1, "maximum": l::SEATS_PER_HOLD,
            "description": timing},
        "resolve_s": {"type": "integer", "minimum": 1, "maximum": l::RESOLVE_S,
            "description": timing},
        "abandon_s": {"type": "integer", "minimum": 1, "maximum": l::ABANDON_S,
            "description": format!("max_hold_s + abandon_s at most the admission session_s; {timing}")},
    }})
}

/// `PATCH /api/admin/events/{event}`'s answer: the event as the organizer set it.
fn event_settings_schema() -> Value {
    let positive = json!({"type": "integer", "minimum": 1});
    json!({"type": "object",
    "required": ["event", "name", "opens_at", "hold_ttl_s", "max_hold_s", "max_seats_per_hold",
                 "resolve_s", "abandon_s", "branding", "frame_ancestors"],
    "properties": {
        "event": {"type": "string"},
        "name": {"type": "string"},
        "opens_at": {"type": "string", "format": "date-time"},
        "hold_ttl_s": positive, "max_hold_s": positive, "max_seats_per_hold": positive,
        "resolve_s": positive, "abandon_s": positive,
        "branding": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/Branding"}]},
        "frame_ancestors": {"type": "array", "items": {"type": "string"}},
    }})
}

/// Control characters (`char::is_control`), refused in the branding's texts; the paragraph
/// may break lines.
const CONTROL: &str = "[\\u0000-\\u001f\\u007f-\\u009f]";
const CONTROL_BUT_NEWLINE: &str = "[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f]";

/// The organizer's branding; `{}` removes it. Texts are shown as text, never as markup.
fn branding_schema() -> Value {
    let color = json!({"type": "string", "pattern": look::COLOR_PATTERN});
    json!({"type": "object", "additionalProperties": false, "properties": {
        "logo_url": {"type": "string", "maxLength": look::LOGO_URL_BYTES, "pattern": look::LOGO_PATTERN,
            "description": "an image of this site (`/…`) or of one https origin"},
        "colors": {"type": "object", "required": ["primary", "background"], "additionalProperties": false,
            "properties": {"primary": color, "background": color}},
        "heading": {"type": "string", "minLength": 1, "maxLength": look::HEADING_CHARS,
            "pattern": NOT_ALL_BLANK, "not": {"pattern": CONTROL}},
        "text": {"type": "string", "minLength": 1, "maxLength": look::TEXT_CHARS,
            "pattern": NOT_ALL_BLANK, "not": {"pattern": CONTROL_BUT_NEWLINE}},
    }})
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
