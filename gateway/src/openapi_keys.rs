//! The OpenAPI schemas of the team's organizer keys (`routes/keys.rs`), with the bounds the
//! server enforces.

use serde_json::{Value, json};

use reservation::organizer_keys::{KEY_NAME_CHARS, MAX_KEYS, Role};

fn roles() -> Value {
    json!({"type": "string", "enum": Role::ALL.map(Role::as_str)})
}

pub(crate) fn create_key_schema() -> Value {
    json!({"type": "object", "required": ["name", "role"], "additionalProperties": false,
    "description": format!("At most {MAX_KEYS} team keys at once (409 `key_limit`)."),
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": KEY_NAME_CHARS,
            "pattern": "[^\\t\\n\\u000b\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]",
            "description": "not all blank, no control characters; stored trimmed"},
        "role": roles(),
    }})
}

fn listed_properties() -> Value {
    json!({
        "id": {"type": "string"},
        "name": {"type": "string"},
        "role": roles(),
        "last4": {"type": "string", "description": "the key's last four characters"},
        "created_at": {"type": "string", "format": "date-time"},
        "configured": {"type": "boolean",
            "description": "the key of the configuration: always an admin, not revocable here"},
    })
}

pub(crate) fn new_key_schema() -> Value {
    let mut properties = listed_properties();
    properties["key"] = json!({"type": "string", "description": "the bearer key, shown this once"});
    json!({"type": "object", "required": ["id", "name", "role", "key", "last4", "created_at"],
        "properties": properties})
}

pub(crate) fn keys_schema() -> Value {
    json!({"type": "object", "required": ["keys"], "properties": {
        "keys": {"type": "array", "maxItems": MAX_KEYS + 1, "items": {
            "type": "object", "required": ["id", "name", "role", "configured"],
            "properties": listed_properties()}},
    }})
}
