//! The team's organizer keys: add one with a name and a role (the key is shown once), list
//! them (never a key or its hash), revoke one. Admins only; every change is audited.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use rand::RngCore;
use serde_json::{Value, json};

use reservation::KeyId;
use reservation::organizer_keys::{KEY_NAME_CHARS, NewKey, OrganizerKey, Role};

use crate::auth::{CONFIGURED_KEY_ID, CONFIGURED_KEY_NAME, Organizer};
use crate::clock::rfc3339;
use crate::extract::{JsonBody, PathId};
use crate::problem::Problem;
use crate::requests::CreateKey;
use crate::secrets::hash_key;
use crate::state::AppState;

/// A new key: a recognisable prefix and 24 random bytes as hex.
fn new_key() -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("fgk_{}", hex::encode(bytes))
}

fn listed(key: &OrganizerKey) -> Value {
    json!({
        "id": key.key_id.as_str(), "name": key.name, "role": key.role,
        "last4": key.last4, "created_at": rfc3339(key.created_at_ms), "configured": false,
    })
}

/// The name as stored: trimmed, 1-64 characters, not all blank, no control characters.
fn key_name(name: &str) -> Result<&str, Problem> {
    let trimmed = name.trim();
    let fits = (1..=KEY_NAME_CHARS).contains(&name.chars().count());
    if !fits || trimmed.is_empty() || trimmed.chars().any(char::is_control) {
        return Err(Problem::bad_request(
            "name must be 1-64 characters, not all blank, without control characters",
        ));
    }
    Ok(trimmed)
}

pub(crate) async fn create(
    State(state): State<AppState>,
    who: Organizer,
    JsonBody { value: request, .. }: JsonBody<CreateKey>,
) -> Result<Response, Problem> {
    let name = key_name(&request.name)?;
    let key = new_key();
    let hash = hex::encode(hash_key(&key));
    let last4 = &key[key.len() - 4..];
    let added = state
        .store
        .add_organizer_key(&NewKey {
            name,
            role: request.role,
            key_sha256: &hash,
            last4,
        })
        .await?;
    state.keys.forget().await;
    crate::routes::admin::audit(
        &state,
        &who,
        "create_key",
        None,
        &json!({"key_id": added.key_id.as_str(), "name": added.name, "role": added.role}),
    )
    .await;
    let mut body = listed(&added);
    body["key"] = json!(key);
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

pub(crate) async fn list(State(state): State<AppState>, _: Organizer) -> Result<Response, Problem> {
    let mut keys = vec![json!({
        "id": CONFIGURED_KEY_ID, "name": CONFIGURED_KEY_NAME, "role": Role::Admin,
        "configured": true,
    })];
    keys.extend(state.store.organizer_keys().await?.iter().map(listed));
    Ok(axum::Json(json!({ "keys": keys })).into_response())
}

pub(crate) async fn revoke(
    State(state): State<AppState>,
    PathId(key): PathId<KeyId>,
    who: Organizer,
) -> Result<Response, Problem> {
    if key.as_str() == CONFIGURED_KEY_ID {
        return Err(Problem::new(
            StatusCode::CONFLICT,
            "key_configured",
            "the configured key is changed in the configuration (FLOODGATE_ORGANIZER_KEY)",
        ));
    }
    let revoked = state.store.revoke_organizer_key(&key).await?;
    state.keys.forget().await;
    crate::routes::admin::audit(
        &state,
        &who,
        "revoke_key",
        None,
        &json!({"key_id": revoked.key_id.as_str(), "name": revoked.name, "role": revoked.role}),
    )
    .await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bounded_and_trimmed() {
        assert_eq!(key_name("  Box office ").unwrap(), "Box office");
        assert!(key_name(&"n".repeat(64)).is_ok());
        assert!(key_name(&"ü".repeat(64)).is_ok(), "characters, not bytes");
        assert!(key_name(&"n".repeat(65)).is_err());
        assert!(key_name("   ").is_err());
        assert!(key_name("").is_err());
        assert!(key_name("a\u{0}b").is_err());
    }
}
