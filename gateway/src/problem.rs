//! Every 4xx/5xx answer is `application/problem+json` with one of API.md's codes. The mapping
//! from the libraries' typed errors to these answers lives in `errors.rs`, in one place.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

#[derive(Debug, Clone)]
pub struct Problem {
    pub status: StatusCode,
    pub code: &'static str,
    pub detail: String,
    /// Extra members of the body (e.g. `seats` for `seat_unavailable`).
    pub extra: Map<String, Value>,
    /// Seconds for the `Retry-After` header (429 and 503).
    pub retry_after: Option<u64>,
    /// What the request span logs and counts for this refusal (boxed: rare, and a `Problem`
    /// travels in every handler's `Result`).
    pub refusal: Option<Box<Refusal>>,
}

/// Left on a problem's response for the request span, which logs the cause and counts the
/// refusal once per request.
#[derive(Clone, Debug, Default)]
pub struct Refusal {
    /// What went wrong on our side, for the log only (never shown to the client).
    pub cause: Option<String>,
    /// The `reason` label of `floodgate_rejections_total` this refusal counts under.
    pub reason: Option<&'static str>,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Self {
        Self {
            status,
            code,
            detail: detail.into(),
            extra: Map::new(),
            retry_after: None,
            refusal: None,
        }
    }

    pub fn with(mut self, key: &str, value: Value) -> Self {
        self.extra.insert(key.to_owned(), value);
        self
    }

    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds);
        self
    }

    /// Names the server-side cause, logged by the request span.
    pub fn caused_by(mut self, cause: impl Into<String>) -> Self {
        self.refusal.get_or_insert_default().cause = Some(cause.into());
        self
    }

    /// Counts this refusal under `floodgate_rejections_total{reason}` (in the request span).
    pub fn counted(mut self, reason: &'static str) -> Self {
        self.refusal.get_or_insert_default().reason = Some(reason);
        self
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", detail)
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", detail)
    }

    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", detail)
    }

    pub fn overloaded(detail: impl Into<String>) -> Self {
        // Jittered 2–5 s: a shed crowd told "1" comes back as one wave a second later.
        Self::new(StatusCode::SERVICE_UNAVAILABLE, "overloaded", detail)
            .retry_after(rand::random_range(2..=5))
    }

    /// An internal failure: logged once where it happened, shown to the client generically.
    pub fn internal() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "an internal error occurred",
        )
    }

    fn title(&self) -> &'static str {
        self.status.canonical_reason().unwrap_or("Error")
    }

    /// The JSON body (also what an idempotency key stores for a refusal).
    pub fn body(&self) -> Value {
        let mut body = json!({
            "type": format!("https://floodgate.dev/problems/{}", self.code),
            "title": self.title(),
            "status": self.status.as_u16(),
            "detail": self.detail,
            "code": self.code,
        });
        if let Value::Object(map) = &mut body {
            map.extend(self.extra.clone());
        }
        body
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let mut response = (self.status, axum::Json(self.body())).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(seconds) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Some(refusal) = self.refusal {
            response.extensions_mut().insert(*refusal);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn renders_problem_json_with_code_and_extras() {
        let response = Problem::new(StatusCode::CONFLICT, "seat_unavailable", "taken")
            .with("seats", json!(["A-1"]))
            .into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(
            response.headers()[header::CONTENT_TYPE],
            "application/problem+json"
        );
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .unwrap();
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(body["code"], "seat_unavailable");
        assert_eq!(body["status"], 409);
        assert_eq!(body["seats"], json!(["A-1"]));
    }

    #[tokio::test]
    async fn overloaded_has_retry_after() {
        let response = Problem::overloaded("database away").into_response();
        assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
        let retry: u64 = response.headers()[header::RETRY_AFTER]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((2..=5).contains(&retry), "jittered, got {retry}");
    }
}
