//! `POST /api/payments/webhook`: the provider's news about a payment. Verified by signature,
//! deduplicated on the provider's event id, and acted on through the same finalize/decline path
//! as the outbox worker (the reservation core's `intake_webhook`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::json;

use reservation::webhook_intake::{WebhookAck, intake_webhook};

use crate::auth::SignedWebhook;
use crate::problem::Problem;
use crate::state::AppState;

/// The signature header was looked at before the body was read; it is checked against the
/// body here, once.
pub(crate) async fn receive(
    State(state): State<AppState>,
    SignedWebhook(signature): SignedWebhook,
    body: Bytes,
) -> Result<Response, Problem> {
    let secret = state.settings.webhook_secret.as_bytes();
    let ack = intake_webhook(
        &state.store,
        &state.provider,
        secret,
        Some(&signature),
        &body,
    )
    .await?;
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
