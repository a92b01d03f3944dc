//! The HTTP contract of API.md as OpenAPI 3.1, served at `GET /api/openapi.json`. The paths
//! come from the route book (`route_book.rs`): method, path, caller, body and answer schemas
//! are declared there once. The shared schemas and security schemes are written here.

use std::sync::LazyLock;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use crate::auth::Caller;
use crate::route_book::{Doc, Entry, book};

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
        Caller::OrganizerKey => json!([{"organizerKey": []}]),
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
        let schema: Value = serde_json::from_str(schema).unwrap_or_else(|_| json!({}));
        params.push(json!({"name": name, "in": "query", "required": false,
                           "schema": schema, "description": description}));
    }
    let success = match doc.response {
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
    if let Some(schema) = doc.request {
        let mut body = json_of(schema);
        body["required"] = json!(true);
        operation["requestBody"] = body;
    }
    operation
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
                "AdmissionSettings": admission_schema(),
                "AddSeats": add_seats_schema(),
                "WebhookEvent": {"type": "object", "description": "A Stripe-shaped event, signed over its raw bytes by `Stripe-Signature`."},
            },
        },
    })
}

fn hold_request_schema() -> Value {
    json!({"oneOf": [
        {"type": "object", "required": ["seats"], "additionalProperties": false,
         "properties": {"seats": {"type": "array", "minItems": 1,
            "items": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}}}},
        {"type": "object", "required": ["section", "quantity"], "additionalProperties": false,
         "properties": {"section": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1}}},
    ]})
}

fn admission_schema() -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": {
        "rate_per_min": {"type": "integer", "minimum": 0},
        "max_active": {"type": "integer", "minimum": 0},
        "session_s": {"type": "integer", "minimum": 1},
        "offer_s": {"type": "integer", "minimum": 1},
        "paused": {"type": "boolean"},
    }})
}

fn create_event_schema() -> Value {
    json!({"type": "object", "required": ["event", "name"], "additionalProperties": false,
    "properties": {
        "event": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
        "name": {"type": "string", "minLength": 1, "maxLength": 200},
        "opens_at": {"type": "string", "format": "date-time"},
        "hold_ttl_s": {"type": "integer", "minimum": 1},
        "max_hold_s": {"type": "integer", "minimum": 1},
        "max_seats_per_hold": {"type": "integer", "minimum": 1},
        "resolve_s": {"type": "integer", "minimum": 1},
        "abandon_s": {"type": "integer", "minimum": 1},
        "currency": {"type": "string", "pattern": "^[A-Za-z]{3}$"},
        "admission": {"$ref": "#/components/schemas/AdmissionSettings"},
    }})
}

fn add_seats_schema() -> Value {
    json!({"oneOf": [
        {"type": "object", "required": ["seats"], "additionalProperties": false,
         "properties": {"seats": {"type": "array", "minItems": 1, "maxItems": 10000, "items": {
            "type": "object", "required": ["seat_id", "section", "price_cents"], "additionalProperties": false,
            "properties": {
                "seat_id": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"},
                "section": {"type": "string", "minLength": 1, "maxLength": 64},
                "row": {"type": "string"}, "number": {"type": "integer"},
                "price_cents": {"type": "integer", "minimum": 0}}}}}},
        {"type": "object", "required": ["generate"], "additionalProperties": false,
         "properties": {"generate": {
            "type": "object", "required": ["section", "rows", "per_row", "price_cents"], "additionalProperties": false,
            "properties": {
                "section": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,40}$"},
                "rows": {"type": "integer", "minimum": 1}, "per_row": {"type": "integer", "minimum": 1},
                "price_cents": {"type": "integer", "minimum": 0}}}}},
    ]})
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
