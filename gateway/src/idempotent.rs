//! `Idempotency-Key` for POSTs that create things: the first answer is stored with its scope
//! (session, route, body hash) and replayed to a repeat; the same key with another body is
//! refused with 422; a concurrent duplicate waits for the first answer (inside the store).
//! A key whose first request died before answering (a crash, or a deadline that dropped the
//! request mid-way) is held by its lease only: after it, a retry takes the key over and runs.
//! The store's default lease (a minute) is several times the longest buyer request deadline,
//! so a request still running is never overtaken.

use std::future::Future;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use reservation::Idempotency;

use crate::problem::Problem;
use crate::state::AppState;

pub const HEADER: &str = "idempotency-key";

/// The request's key: absent is `None`; present but malformed is a 400.
pub fn key(headers: &HeaderMap) -> Result<Option<String>, Problem> {
    match headers.get(HEADER) {
        None => Ok(None),
        Some(value) => {
            let key = value
                .to_str()
                .map_err(|_| Problem::bad_request("Idempotency-Key is not text"))?;
            let ok =
                key.len() <= 255 && !key.is_empty() && key.bytes().all(|b| b.is_ascii_graphic());
            if ok {
                Ok(Some(key.to_owned()))
            } else {
                Err(Problem::bad_request(
                    "Idempotency-Key must be 1-255 printable characters",
                ))
            }
        }
    }
}

/// Runs `work` once per (scope, route, key); without a key it simply runs it.
pub async fn once<F, Fut>(
    state: &AppState,
    key: Option<&str>,
    scope: &str,
    route: &str,
    body_hash: &str,
    work: F,
) -> Result<Response, Problem>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<(StatusCode, Value), Problem>>,
{
    let Some(key) = key else {
        let (status, body) = work().await?;
        return Ok((status, axum::Json(body)).into_response());
    };
    match state
        .store
        .idempotency_begin(scope, route, key, body_hash)
        .await?
    {
        Idempotency::Replay { status, body } => Ok(replay(status, body)),
        Idempotency::InFlight => Err(Problem::overloaded(
            "the first request with this Idempotency-Key is still running",
        )),
        Idempotency::New => {
            let (status, body) = match work().await {
                Ok(done) => done,
                // A refusal is an answer too: the same key gets the same refusal.
                Err(problem) if problem.status.is_client_error() => {
                    let stored = problem.clone().into_response();
                    let text = problem.body().to_string();
                    state
                        .store
                        .idempotency_complete(scope, route, key, problem.status.as_u16(), &text)
                        .await?;
                    return Ok(stored);
                }
                Err(problem) => {
                    // No answer worth keeping: let a retry run again.
                    if let Err(error) = state.store.idempotency_abandon(scope, route, key).await {
                        tracing::warn!(%error, "could not release an idempotency key");
                    }
                    return Err(problem);
                }
            };
            state
                .store
                .idempotency_complete(scope, route, key, status.as_u16(), &body.to_string())
                .await?;
            Ok((status, axum::Json(body)).into_response())
        }
    }
}

fn replay(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let content_type = if status.is_success() {
        "application/json"
    } else {
        "application/problem+json"
    };
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
        .headers_mut()
        .insert("idempotent-replayed", HeaderValue::from_static("true"));
    response
}
