//! Request bodies for routes that hash what they received (idempotency): the raw bytes, the
//! content type checked, and the JSON parsed with our error shape.

use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::problem::Problem;

pub const MAX_BODY: usize = 64 * 1024;

/// Parses a JSON body; an empty body parses as `{}` where the route allows it.
pub fn parse<T: DeserializeOwned>(headers: &HeaderMap, body: &Bytes) -> Result<T, Problem> {
    if !body.is_empty() {
        let json = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return Err(Problem::bad_request("the body must be application/json"));
        }
    }
    let bytes: &[u8] = if body.is_empty() { b"{}" } else { body };
    serde_json::from_slice(bytes)
        .map_err(|error| Problem::bad_request(format!("invalid JSON body: {error}")))
}

pub fn hash(body: &Bytes) -> String {
    hex::encode(Sha256::digest(body))
}
