//! What reaches a handler is already typed: path ids parsed once into their newtypes, the query
//! parsed, the JSON body parsed with the hash of its raw bytes kept (idempotency compares it).
//! Every refusal is problem+json, built in `errors.rs`.

use std::str::FromStr;

use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use bytes::Bytes;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use reservation::InvalidId;

use crate::problem::Problem;

/// Is `s` an id as API.md allows in paths: `[A-Za-z0-9._-]{1,64}`?
pub fn is_valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The one id of the route's path, parsed into its newtype (`EventId`, `HoldId`, `OrderId`).
pub struct PathId<T>(pub T);

impl<S, T> FromRequestParts<S> for PathId<T>
where
    S: Send + Sync,
    T: FromStr<Err = InvalidId> + Send,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state).await?;
        Ok(Self(id.parse::<T>()?))
    }
}

/// The query string, parsed; a malformed one is a 400.
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Query(value) =
            axum::extract::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Self(value))
    }
}

/// A WebSocket upgrade; a plain GET (no upgrade headers) is refused as problem+json.
pub struct Upgrade(pub WebSocketUpgrade);

impl<S: Send + Sync> FromRequestParts<S> for Upgrade {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Ok(Self(
            WebSocketUpgrade::from_request_parts(parts, state).await?,
        ))
    }
}

/// A JSON body, with the SHA-256 of the bytes it came as: an `Idempotency-Key` replays only
/// the very same request. The edge has already read the body (with the route's size limit and
/// deadline, before any shed permit is taken), so this parses bytes in memory. An empty body
/// parses as `{}` where the type allows it.
pub struct JsonBody<T> {
    pub value: T,
    /// Hex SHA-256 of the raw bytes.
    pub hash: String,
    pub raw: Bytes,
}

impl<S, T> FromRequest<S> for JsonBody<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json(req.headers());
        let raw = Bytes::from_request(req, state).await?;
        let value = parse(json, &raw)?;
        let hash = hex::encode(Sha256::digest(&raw));
        Ok(Self { value, hash, raw })
    }
}

/// Does the request say its body is JSON?
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
        })
}

/// Parses a JSON body (`json`: its content type said so); an empty body parses as `{}`.
fn parse<T: DeserializeOwned>(json: bool, body: &[u8]) -> Result<T, Problem> {
    if !body.is_empty() && !json {
        return Err(Problem::bad_request("the body must be application/json"));
    }
    let bytes: &[u8] = if body.is_empty() { b"{}" } else { body };
    // Every body of the API is an object; serde would also fill a struct from an array of its
    // fields in order, which the document does not allow.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(Problem::bad_request("the body must be a JSON object"));
    }
    Ok(serde_json::from_slice(bytes)?)
}

#[cfg(test)]
mod tests {
    use super::{is_valid_id, parse};

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Checkout {
        #[allow(dead_code)]
        payment_method: String,
    }

    #[test]
    fn bodies_are_objects() {
        assert!(parse::<Checkout>(true, br#" {"payment_method": "pm_card_visa"}"#).is_ok());
        assert!(parse::<Checkout>(true, br#"["pm_card_visa"]"#).is_err());
        assert!(parse::<Checkout>(true, b"  [\"pm_card_visa\"]").is_err());
        assert!(parse::<Checkout>(false, br#"{"payment_method": "x"}"#).is_err());
    }

    #[test]
    fn id_pattern() {
        assert!(is_valid_id("A-12"));
        assert!(is_valid_id("demo.event_1"));
        assert!(!is_valid_id(""));
        assert!(!is_valid_id("a b"));
        assert!(!is_valid_id("x/y"));
        assert!(!is_valid_id(&"a".repeat(65)));
        assert!(!is_valid_id("é"));
    }
}
