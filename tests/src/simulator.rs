//! The payment simulator served over HTTP: Stripe's paths for the provider subset of API.md
//! (with Stripe's `Request-Id`, `Stripe-Version` and `Idempotent-Replayed` headers), the 3-D
//! Secure challenge page (`/_sim/authenticate/{payment}`), and `/_sim/*` control routes
//! (knobs, pause, ledger) for tests and the soak tool.
//!
//! The behaviour is `reservation::payments::simulator`; this file only translates HTTP.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::rejection::FormRejection;
use axum::extract::{Form, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use reservation::payments::simulator::{
    AuthAnswer, Choice, Knobs, KnobsPatch, Ledger, SimReply, SimRequest, Simulator, SimulatorConfig,
};
use reservation::payments::{Provider, STRIPE_VERSION, StripeClient};
use serde::Deserialize;

/// How to start a simulator server.
#[derive(Clone)]
pub struct SimServerConfig {
    pub listen: SocketAddr,
    /// When set, requests must carry `Authorization: Bearer <api_key>`.
    pub api_key: Option<String>,
    pub simulator: SimulatorConfig,
}

impl Default for SimServerConfig {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            api_key: None,
            simulator: SimulatorConfig::default(),
        }
    }
}

/// A running simulator server; dropping the handle stops it.
pub struct SimulatorHandle {
    /// `http://127.0.0.1:PORT`, the value for `FLOODGATE_PAYMENT_URL`.
    pub base_url: String,
    /// Direct control of the same simulator, for tests in this process.
    pub simulator: Simulator,
    task: tokio::task::JoinHandle<()>,
}

impl SimulatorHandle {
    /// The real HTTP provider client pointed at this simulator.
    pub fn http_provider(&self, api_key: &str, timeout: Duration) -> Provider {
        // Building a client without TLS only fails if the system resolver cannot start.
        let client = StripeClient::new(&self.base_url, api_key, timeout)
            .expect("an HTTP client without TLS builds");
        Provider::Http(client)
    }
}

impl Drop for SimulatorHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct AppState {
    sim: Simulator,
    api_key: Option<String>,
}

/// Binds `config.listen` (port 0 picks a free port) and serves until the handle is dropped.
pub async fn spawn(config: SimServerConfig) -> std::io::Result<SimulatorHandle> {
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    let simulator = Simulator::new(config.simulator);
    let base_url = format!("http://{addr}");
    simulator.set_public_url(&base_url);
    let app = router(simulator.clone(), config.api_key);
    let task = tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "simulator server stopped");
        }
    });
    Ok(SimulatorHandle {
        base_url,
        simulator,
        task,
    })
}

pub fn router(sim: Simulator, api_key: Option<String>) -> Router {
    Router::new()
        .route("/v1/payment_intents", post(create_intent))
        .route("/v1/payment_intents/search", get(search))
        .route("/v1/payment_intents/{id}", get(retrieve))
        .route("/v1/payment_intents/{id}/capture", post(capture))
        .route("/v1/payment_intents/{id}/cancel", post(cancel))
        .route("/v1/refunds", post(create_refund))
        .route("/_sim/authenticate/{id}", get(challenge_page))
        .route("/_sim/authenticate/{id}/{choice}", post(challenge_choice))
        .route("/_sim/knobs", get(get_knobs).post(set_knobs))
        .route("/_sim/pause", post(pause))
        .route("/_sim/resume", post(resume))
        .route("/_sim/ledger", get(ledger))
        .with_state(AppState { sim, api_key })
}

type FormPairs = Form<Vec<(String, String)>>;

/// Capture and cancel take optional parameters: a bodiless POST is an empty form.
fn optional_form(form: Result<FormPairs, FormRejection>) -> Vec<(String, String)> {
    form.map(|Form(pairs)| pairs).unwrap_or_default()
}

fn idempotency_key(headers: &HeaderMap) -> Option<String> {
    headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

async fn serve(state: &AppState, headers: &HeaderMap, req: SimRequest) -> Response {
    if let Some(key) = &state.api_key {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given != Some(key.as_str()) {
            let body = serde_json::json!({"error": {"type": "invalid_request_error",
                "code": "api_key_invalid", "message": "Invalid API Key provided"}});
            return (StatusCode::UNAUTHORIZED, Json(body)).into_response();
        }
    }
    // One API version is simulated: a client pinned to another would read other shapes.
    if let Some(asked) = headers.get("stripe-version")
        && asked.as_bytes() != STRIPE_VERSION.as_bytes()
    {
        let body = serde_json::json!({"error": {"type": "invalid_request_error",
            "code": "api_version_unsupported", "param": "Stripe-Version",
            "message": format!("The simulator speaks Stripe API version {STRIPE_VERSION} only.")}});
        return (StatusCode::BAD_REQUEST, Json(body)).into_response();
    }
    let version = HeaderValue::from_static(STRIPE_VERSION);
    let mut response = match state.sim.handle(req).await {
        SimReply::Answer {
            status,
            body,
            replayed,
        } => {
            let mut response = (
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                Json(body),
            )
                .into_response();
            if replayed {
                response
                    .headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
            }
            response
        }
        // The request took effect, but the caller gets a connection cut mid-answer.
        SimReply::Lost => Response::new(Body::from_stream(futures::stream::once(async {
            Err::<Bytes, _>(std::io::Error::other("answer lost"))
        }))),
    };
    let request_id = format!("req_{}", uuid::Uuid::new_v4().simple());
    let headers = response.headers_mut();
    headers.insert("stripe-version", version);
    if let Ok(id) = HeaderValue::from_str(&request_id) {
        headers.insert("request-id", id);
    }
    response
}

async fn create_intent(State(s): State<AppState>, h: HeaderMap, Form(form): FormPairs) -> Response {
    let key = idempotency_key(&h);
    serve(
        &s,
        &h,
        SimRequest::CreateIntent {
            idempotency_key: key,
            form,
        },
    )
    .await
}

#[derive(Deserialize)]
struct SearchParams {
    query: String,
}

async fn search(
    State(s): State<AppState>,
    h: HeaderMap,
    Query(p): Query<SearchParams>,
) -> Response {
    serve(&s, &h, SimRequest::SearchIntents { query: p.query }).await
}

async fn retrieve(State(s): State<AppState>, h: HeaderMap, Path(id): Path<String>) -> Response {
    serve(&s, &h, SimRequest::RetrieveIntent { id }).await
}

async fn capture(
    State(s): State<AppState>,
    h: HeaderMap,
    Path(id): Path<String>,
    form: Result<FormPairs, FormRejection>,
) -> Response {
    let key = idempotency_key(&h);
    serve(
        &s,
        &h,
        SimRequest::CaptureIntent {
            id,
            idempotency_key: key,
            form: optional_form(form),
        },
    )
    .await
}

async fn cancel(
    State(s): State<AppState>,
    h: HeaderMap,
    Path(id): Path<String>,
    form: Result<FormPairs, FormRejection>,
) -> Response {
    let key = idempotency_key(&h);
    serve(
        &s,
        &h,
        SimRequest::CancelIntent {
            id,
            idempotency_key: key,
            form: optional_form(form),
        },
    )
    .await
}

/// The bank's challenge page a `requires_action` payment sends the buyer to.
async fn challenge_page(State(s): State<AppState>, Path(id): Path<String>) -> Response {
    match s.sim.authentication_page(&id) {
        Some(page) => Html(page).into_response(),
        None => (StatusCode::NOT_FOUND, "no such payment").into_response(),
    }
}

async fn challenge_choice(
    State(s): State<AppState>,
    Path((id, choice)): Path<(String, String)>,
) -> Response {
    let Some(choice) = Choice::parse(&choice) else {
        return (StatusCode::NOT_FOUND, "no such choice").into_response();
    };
    match s.sim.authenticate(&id, choice) {
        AuthAnswer::Return(url) => Redirect::to(&url).into_response(),
        AuthAnswer::Finished => Html(Simulator::finished_page()).into_response(),
        AuthAnswer::Unknown => (StatusCode::NOT_FOUND, "no such payment").into_response(),
    }
}

async fn create_refund(State(s): State<AppState>, h: HeaderMap, Form(form): FormPairs) -> Response {
    let key = idempotency_key(&h);
    serve(
        &s,
        &h,
        SimRequest::CreateRefund {
            idempotency_key: key,
            form,
        },
    )
    .await
}

async fn get_knobs(State(s): State<AppState>) -> Json<Knobs> {
    Json(s.sim.knobs())
}

async fn set_knobs(State(s): State<AppState>, Json(patch): Json<KnobsPatch>) -> Json<Knobs> {
    Json(s.sim.set_knobs(&patch))
}

async fn pause(State(s): State<AppState>) -> StatusCode {
    s.sim.pause();
    StatusCode::NO_CONTENT
}

async fn resume(State(s): State<AppState>) -> StatusCode {
    s.sim.resume();
    StatusCode::NO_CONTENT
}

async fn ledger(State(s): State<AppState>) -> Json<Ledger> {
    Json(s.sim.ledger())
}
