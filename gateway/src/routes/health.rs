//! `GET /healthz` (the process is up) and `GET /readyz` (the database answers; the body says
//! whether payments are simulated, so a deployment selling for no money is plain to see).

use axum::Router;
use axum::extract::State;
use axum::routing::get;

use crate::problem::Problem;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
}

async fn ready(State(state): State<AppState>) -> Result<String, Problem> {
    state.store.ping().await.map_err(|error| {
        tracing::warn!(%error, "database not ready");
        Problem::overloaded("the database does not answer")
    })?;
    let payments = state.settings.payment_mode.as_str();
    Ok(format!("ready\npayments: {payments}\n"))
}
