//! `GET /api/session`: the admission session and its live hold, so a buyer who lost the answer
//! to a hold request finds the hold again.

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use crate::auth::{self, Admitted};
use crate::clock::rfc3339;
use crate::problem::Problem;
use crate::routes::holds::hold_json;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/session", get(read))
}

async fn read(State(state): State<AppState>, headers: HeaderMap) -> Result<Response, Problem> {
    let Admitted { session, claims } = auth::admitted(&state, &headers, None)?;
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
