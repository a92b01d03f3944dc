//! `GET /healthz` (the process is up) and `GET /readyz` (the database and the queue backend
//! answer and every background loop runs, as the probe and the supervisor last saw them: no
//! query per call; the body says whether payments are simulated, so a deployment selling for no
//! money is plain to see).

use axum::extract::State;

use crate::problem::Problem;
use crate::state::AppState;

pub(crate) async fn alive() -> &'static str {
    "ok"
}

pub(crate) async fn ready(State(state): State<AppState>) -> Result<String, Problem> {
    let down = state.readiness.down();
    if !down.is_empty() {
        return Err(
            Problem::overloaded(format!("not ready: {} down", down.join(", ")))
                .with("down", serde_json::json!(down)),
        );
    }
    let payments = state.settings.payment_mode.as_str();
    Ok(format!("ready\npayments: {payments}\n"))
}
