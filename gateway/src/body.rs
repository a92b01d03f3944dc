//! Request bodies for routes that hash what they received (idempotency): the raw bytes, the
//! content type checked, and the JSON parsed with our error shape.

use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, StatusCode, header};
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

/// The raw body, read through our error shape: axum's own `Bytes` rejection is plain text, so
/// a body over [`MAX_BODY`] would otherwise escape problem+json.
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        Bytes::from_request(req, state)
            .await
            .map(Self)
            .map_err(|rejection| {
                if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    Problem::new(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "bad_request",
                        "the body is over 64 KiB",
                    )
                } else {
                    Problem::bad_request(rejection.body_text())
                }
            })
    }
}

pub fn hash(body: &Bytes) -> String {
    hex::encode(Sha256::digest(body))
}
