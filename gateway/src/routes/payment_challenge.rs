//! The in-process simulator's 3-D Secure challenge page (`/_sim/authenticate/{payment}`),
//! served by the gateway itself in the embedded default, where no simulator server exists
//! for `next_action` to send the buyer to. With a real provider (`FLOODGATE_PAYMENT_URL`) the
//! provider serves its own page and these routes answer 404.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use reservation::payments::Provider;
use reservation::payments::simulator::{AuthAnswer, Choice, Simulator};

use crate::problem::Problem;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/_sim/authenticate/{payment}", get(page))
        .route("/_sim/authenticate/{payment}/{choice}", post(choose))
}

fn simulator(state: &AppState) -> Result<&Simulator, Problem> {
    match &state.provider {
        Provider::Simulated(s) => Ok(&s.simulator),
        Provider::Http(_) => Err(Problem::not_found("no such route")),
    }
}

async fn page(State(state): State<AppState>, Path(payment): Path<String>) -> Response {
    let found = simulator(&state).map(|sim| sim.authentication_page(&payment));
    match found {
        Ok(Some(page)) => Html(page).into_response(),
        Ok(None) => Problem::not_found("no such payment").into_response(),
        Err(problem) => problem.into_response(),
    }
}

async fn choose(
    State(state): State<AppState>,
    Path((payment, choice)): Path<(String, String)>,
) -> Response {
    let sim = match simulator(&state) {
        Ok(sim) => sim,
        Err(problem) => return problem.into_response(),
    };
    let Some(choice) = Choice::parse(&choice) else {
        return Problem::not_found("no such choice").into_response();
    };
    match sim.authenticate(&payment, choice) {
        AuthAnswer::Return(url) => Redirect::to(&url).into_response(),
        AuthAnswer::Finished => Html(Simulator::finished_page()).into_response(),
        AuthAnswer::Unknown => Problem::not_found("no such payment").into_response(),
    }
}
