//! App-owned extractors, so a bad body, a bad path id or a missing header gets our
//! problem+json shape instead of axum's plain-text rejection.

use axum::extract::rejection::{JsonRejection, PathRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::problem::Problem;

/// A JSON body; malformed JSON, wrong types or a wrong content type → 400, too large → 413.
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(Self(value)),
            Err(rejection) => Err(json_problem(&rejection)),
        }
    }
}

fn json_problem(rejection: &JsonRejection) -> Problem {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "bad_request",
            "the body is over 64 KiB",
        );
    }
    Problem::bad_request(rejection.body_text())
}

/// Is `s` an id as API.md allows in paths: `[A-Za-z0-9._-]{1,64}`?
pub fn is_valid_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// One id taken from the path, validated against API.md's id pattern.
pub struct PathId(pub String);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let axum::extract::Path(id) =
            axum::extract::Path::<String>::from_request_parts(parts, state)
                .await
                .map_err(|rejection: PathRejection| Problem::bad_request(rejection.body_text()))?;
        if is_valid_id(&id) {
            Ok(Self(id))
        } else {
            Err(Problem::bad_request("ids match [A-Za-z0-9._-]{1,64}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_valid_id;

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
