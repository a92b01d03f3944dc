//! `GET /api/session`: the admission session and its live hold, so a buyer who lost the answer
//! to a hold request finds the hold again.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::auth::Admitted;
use crate::clock::rfc3339;
use crate::problem::Problem;
use crate::routes::holds::hold_json;
use crate::state::AppState;

pub(crate) async fn read(
    State(state): State<AppState>,
    Admitted { session, claims }: Admitted,
) -> Result<Response, Problem> {
    let stored = state.store.get_session(&session).await?;
    let hold = state.store.session_live_hold(&session).await?;
    let mut body = json!({
        "session_id": session.as_str(),
        "event": claims.event,
        "expires_at": rfc3339(stored.expires_at_ms),
    });
    if let Some(hold) = hold {
        let mut view = hold_json(&hold);
        view["receipt_key"] = json!(hold.receipt_key);
        body["hold"] = view;
    }
    Ok(axum::Json(body).into_response())
}
