//! The in-process simulator's 3-D Secure challenge page (`/_sim/authenticate/{payment}`),
//! served by the gateway itself in the embedded default, where no simulator server exists
//! for `next_action` to send the buyer to. With a real provider (`FLOODGATE_PAYMENT_URL`) the
//! provider serves its own page and these routes answer 404.

use axum::extract::rejection::PathRejection;
use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Redirect, Response};

use reservation::payments::Provider;
use reservation::payments::simulator::{AuthAnswer, Choice, Simulator};

use crate::problem::Problem;
use crate::state::AppState;

fn simulator(state: &AppState) -> Result<&Simulator, Problem> {
    match &state.provider {
        Provider::Simulated(s) => Ok(&s.simulator),
        Provider::Http(_) => Err(Problem::not_found("no such route")),
    }
}

pub(crate) async fn page(
    State(state): State<AppState>,
    payment: Result<Path<String>, PathRejection>,
) -> Response {
    let Path(payment) = match payment {
        Ok(path) => path,
        Err(rejection) => return Problem::from(rejection).into_response(),
    };
    let found = simulator(&state).map(|sim| sim.authentication_page(&payment));
    match found {
        Ok(Some(page)) => Html(page).into_response(),
        Ok(None) => Problem::not_found("no such payment").into_response(),
        Err(problem) => problem.into_response(),
    }
}

pub(crate) async fn choose(
    State(state): State<AppState>,
    path: Result<Path<(String, String)>, PathRejection>,
) -> Response {
    let Path((payment, choice)) = match path {
        Ok(path) => path,
        Err(rejection) => return Problem::from(rejection).into_response(),
    };
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
