//! The OpenAPI schemas of the organizer's webhooks, with the bounds the gateway enforces
//! (`reservation::hooks`), added to the document by `openapi.rs`.

use serde_json::{Value, json};

use reservation::hooks::{Kind, LISTED, SECRET_MAX, SECRET_MIN, URL_CHARS, WEBHOOKS_PER_EVENT};

fn kinds() -> Value {
    json!(Kind::ALL.map(Kind::as_str))
}

/// (name, schema) of every webhook schema.
pub(crate) fn schemas() -> Vec<(&'static str, Value)> {
    let webhook = json!({"type": "object", "required": ["webhook_id", "event", "url", "events", "created_at"],
    "properties": {
        "webhook_id": {"type": "string"},
        "event": {"type": "string"},
        "url": {"type": "string"},
        "events": {"type": "array", "items": {"type": "string", "enum": kinds()}},
        "created_at": {"type": "string", "format": "date-time"},
        "secret": {"type": "string", "description": "Only in the answer that creates the subscription: signs every delivery's `Floodgate-Signature: t=UNIX,v1=HEX` (HMAC-SHA256 of `t.body`)."},
    }});
    vec![
        (
            "CreateWebhook",
            json!({"type": "object", "required": ["url", "events"], "additionalProperties": false,
            "description": format!("An event has at most {WEBHOOKS_PER_EVENT} webhooks (409 `webhook_limit`)."),
            "properties": {
                "url": {"type": "string", "format": "uri", "minLength": 1, "maxLength": URL_CHARS,
                    "pattern": "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$",
                    "description": "absolute http(s) URL, without credentials; redirects are not followed"},
                "events": {"type": "array", "minItems": 1, "maxItems": Kind::ALL.len(), "uniqueItems": true,
                    "items": {"type": "string", "enum": kinds()}},
                "secret": {"type": "string", "minLength": SECRET_MIN, "maxLength": SECRET_MAX,
                    "pattern": "^[!-~]+$", "description": "generated when absent"},
            }}),
        ),
        ("Webhook", webhook.clone()),
        (
            "WebhookList",
            json!({"type": "object", "required": ["webhooks"], "properties": {
                "webhooks": {"type": "array", "maxItems": WEBHOOKS_PER_EVENT, "items": webhook}}}),
        ),
        (
            "WebhookDeliveries",
            json!({"type": "object", "required": ["deliveries"], "properties": {
            "deliveries": {"type": "array", "maxItems": LISTED, "description": "newest first",
            "items": {"type": "object", "required": ["delivery_id", "type", "id", "state", "tries", "created_at", "attempts"],
                "properties": {
                    "delivery_id": {"type": "integer"},
                    "type": {"type": "string", "description": "a subscribed kind, or `ping`"},
                    "id": {"type": "string", "description": "the fact's id, the same on every try"},
                    "state": {"type": "string", "enum": ["pending", "delivered", "failed"]},
                    "tries": {"type": "integer"},
                    "created_at": {"type": "string", "format": "date-time"},
                    "next_attempt_at": {"type": ["string", "null"], "format": "date-time"},
                    "attempts": {"type": "array", "items": {"type": "object",
                        "required": ["at", "duration_ms"], "properties": {
                            "at": {"type": "string", "format": "date-time"},
                            "status": {"type": ["integer", "null"]},
                            "error": {"type": ["string", "null"]},
                            "duration_ms": {"type": "integer"}}}},
                }}}}}),
        ),
    ]
}
