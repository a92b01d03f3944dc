//! The HTTP contract of API.md as OpenAPI 3.1, served at `GET /api/openapi.json`. The route
//! table below is the one source: an end-to-end test calls every entry against a running
//! gateway and fails if the router does not know it.

use serde_json::{Map, Value, json};

/// (method, path, summary, auth, success status)
pub const ROUTES: &[(&str, &str, &str, Auth, u16)] = &[
    (
        "post",
        "/api/events/{event}/queue",
        "Join the queue",
        Auth::None,
        201,
    ),
    (
        "get",
        "/api/events/{event}/queue/status",
        "Queue status (polling)",
        Auth::Queue,
        200,
    ),
    (
        "post",
        "/api/events/{event}/queue/claim",
        "Claim an offer",
        Auth::Queue,
        200,
    ),
    (
        "get",
        "/api/events/{event}/queue/ws",
        "Waiting-room WebSocket (token in query)",
        Auth::None,
        101,
    ),
    (
        "get",
        "/api/events/{event}",
        "Event summary",
        Auth::None,
        200,
    ),
    (
        "get",
        "/api/events/{event}/seats",
        "Seat map",
        Auth::None,
        200,
    ),
    (
        "get",
        "/api/events/{event}/fairness",
        "Pre-queue seed commitment and reveal",
        Auth::None,
        200,
    ),
    (
        "get",
        "/api/session",
        "The admission session and its live hold",
        Auth::Admission,
        200,
    ),
    (
        "post",
        "/api/events/{event}/holds",
        "Hold seats (all or nothing)",
        Auth::Admission,
        201,
    ),
    (
        "post",
        "/api/holds/{hold}/extend",
        "Extend a hold when the payment form opens",
        Auth::Admission,
        200,
    ),
    (
        "post",
        "/api/holds/{hold}/checkout",
        "Begin payment",
        Auth::Admission,
        202,
    ),
    (
        "delete",
        "/api/holds/{hold}",
        "Release a hold",
        Auth::Admission,
        204,
    ),
    (
        "get",
        "/api/holds/{hold}",
        "Read a hold",
        Auth::AdmissionOrReceipt,
        200,
    ),
    (
        "get",
        "/api/orders/{order}",
        "Read an order",
        Auth::AdmissionOrReceipt,
        200,
    ),
    (
        "post",
        "/api/payments/webhook",
        "Payment provider webhook (Stripe-Signature)",
        Auth::None,
        200,
    ),
    (
        "post",
        "/api/admin/events",
        "Create an event",
        Auth::Organizer,
        201,
    ),
    (
        "post",
        "/api/admin/events/{event}/seats",
        "Add seats",
        Auth::Organizer,
        200,
    ),
    (
        "patch",
        "/api/admin/events/{event}/admission",
        "Tune admission live",
        Auth::Organizer,
        200,
    ),
    (
        "get",
        "/api/admin/events/{event}/stats",
        "Queue, seat, hold and payment counts",
        Auth::Organizer,
        200,
    ),
    (
        "get",
        "/api/admin/events/{event}/stuck",
        "Holds and payments stuck in paying",
        Auth::Organizer,
        200,
    ),
    (
        "post",
        "/api/admin/events/{event}/close",
        "Close the queue",
        Auth::Organizer,
        200,
    ),
    ("get", "/healthz", "Process up", Auth::None, 200),
    (
        "get",
        "/readyz",
        "Database and queue backend reachable",
        Auth::None,
        200,
    ),
    ("get", "/metrics", "Prometheus metrics", Auth::None, 200),
    ("get", "/api/openapi.json", "This document", Auth::None, 200),
    ("get", "/", "Waiting-room page (HTML)", Auth::None, 200),
    (
        "get",
        "/admin",
        "Organizer dashboard (HTML)",
        Auth::None,
        200,
    ),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    None,
    Queue,
    Admission,
    AdmissionOrReceipt,
    Organizer,
}

pub fn document() -> Value {
    let mut paths = Map::new();
    for (method, path, summary, auth, status) in ROUTES {
        let params: Vec<Value> = path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
            .map(|name| {
                json!({"name": name, "in": "path", "required": true,
                       "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,64}$"}})
            })
            .collect();
        let security = match auth {
            Auth::None => json!([]),
            Auth::Queue => json!([{"queueToken": []}]),
            Auth::Admission => json!([{"admissionToken": []}]),
            Auth::AdmissionOrReceipt => json!([{"admissionToken": []}, {"receiptKey": []}]),
            Auth::Organizer => json!([{"organizerKey": []}]),
        };
        let mut operation = json!({
            "summary": summary,
            "parameters": params,
            "security": security,
            "responses": {
                status.to_string(): {"description": "success"},
                "4XX": {"description": "problem+json", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
            },
        });
        if let Some((body, answer)) = shapes(method, path) {
            if let Some(body) = body {
                operation["requestBody"] = body;
            }
            if let Some(answer) = answer {
                operation["responses"][status.to_string()] = answer;
            }
        }
        let entry = paths.entry((*path).to_owned()).or_insert_with(|| json!({}));
        if let Value::Object(ops) = entry {
            ops.insert((*method).to_owned(), operation);
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
            },
            "schemas": {
                "Problem": {"type": "object", "required": ["type", "title", "status", "code"],
                    "properties": {"type": {"type": "string"}, "title": {"type": "string"},
                        "status": {"type": "integer"}, "detail": {"type": "string"}, "code": {"type": "string"}}},
                "Checkout": checkout_schema(),
                "Hold": hold_schema(),
            },
        },
    })
}

/// Request and answer shapes documented beyond the route table: `(requestBody, success)`.
fn shapes(method: &str, path: &str) -> Option<(Option<Value>, Option<Value>)> {
    let json_of = |schema: &str| json!({"content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}});
    match (method, path) {
        ("post", "/api/holds/{hold}/checkout") => {
            let mut body = json_of("Checkout");
            body["required"] = json!(true);
            Some((Some(body), None))
        }
        ("get", "/api/holds/{hold}") => {
            let mut answer = json_of("Hold");
            answer["description"] = json!("the hold");
            Some((None, Some(answer)))
        }
        _ => None,
    }
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
    fn every_route_is_documented_once() {
        let doc = document();
        let mut seen = std::collections::HashSet::new();
        for (method, path, ..) in ROUTES {
            assert!(seen.insert((method, path)), "{method} {path} listed twice");
            assert!(
                doc["paths"][path][method].is_object(),
                "{method} {path} missing"
            );
        }
    }
}
