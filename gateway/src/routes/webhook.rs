//! `POST /api/payments/webhook`: the provider's news about a payment. Verified by signature,
//! deduplicated on the provider's event id, and acted on through the same finalize/decline path
//! as the outbox worker (the reservation core's `intake_webhook`).

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use serde_json::json;

use reservation::webhook_intake::{WebhookAck, WebhookError, intake_webhook};

use crate::problem::Problem;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/payments/webhook", post(receive))
}

async fn receive(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Problem> {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    let secret = state.settings.webhook_secret.as_bytes();
    match intake_webhook(&state.store, &state.provider, secret, signature, &body).await {
        Ok(ack) => {
            let body = match ack {
                WebhookAck::Applied {
                    attempt_id,
                    outcome,
                } => {
                    json!({"received": true, "payment_id": attempt_id.as_str(), "outcome": outcome})
                }
                WebhookAck::Duplicate { outcome } => {
                    json!({"received": true, "duplicate": true, "outcome": outcome})
                }
                WebhookAck::Unmatched => json!({"received": true, "matched": false}),
            };
            Ok((StatusCode::OK, axum::Json(body)).into_response())
        }
        Err(WebhookError::Signature(error)) => Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "unauthorized",
            format!("webhook signature refused: {error}"),
        )),
        Err(WebhookError::Malformed(why)) => {
            Err(Problem::bad_request(format!("malformed webhook: {why}")))
        }
        Err(WebhookError::ProviderUnavailable(why)) => {
            tracing::warn!(
                why,
                "webhook re-fetch failed; the provider will deliver again"
            );
            Err(Problem::overloaded(
                "the payment provider did not answer; deliver again later",
            ))
        }
        Err(WebhookError::Store(error)) => Err(error.into()),
    }
}
