//! Webhooks to the organizer's own systems: subscribe a URL to facts of an event, list and
//! delete subscriptions, read each one's deliveries and send a test event. The secret that
//! signs deliveries is shown once, in the answer that creates the subscription.

use axum::extract::{FromRequestParts, State};
use axum::http::StatusCode;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};

use reservation::hooks::{Delivery, HookSecret, HookUrl, Kinds, Subscription};
use reservation::{EventId, WebhookId};

use crate::auth::Organizer;
use crate::clock::rfc3339;
use crate::extract::{JsonBody, PathId};
use crate::problem::Problem;
use crate::routes::admin::audit;
use crate::state::AppState;

/// `POST /api/admin/events/{event}/webhooks`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    pub url: String,
    pub events: Vec<String>,
    /// Absent: one is generated. Never `null` (see `requests.rs`).
    #[serde(default, deserialize_with = "present")]
    pub secret: Option<String>,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    String::deserialize(d).map(Some)
}

/// `{event}` and `{webhook}` of a subscription's path, each parsed by its newtype.
pub struct HookPath {
    pub event: EventId,
    pub webhook: WebhookId,
}

impl<S: Send + Sync> FromRequestParts<S> for HookPath {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let axum::extract::Path((event, webhook)) =
            axum::extract::Path::<(String, String)>::from_request_parts(parts, state).await?;
        Ok(Self {
            event: event.parse()?,
            webhook: webhook.parse()?,
        })
    }
}

fn subscription_json(s: &Subscription) -> Value {
    json!({
        "webhook_id": s.webhook_id.as_str(),
        "event": s.event_id.as_str(),
        "url": s.url,
        "events": s.kinds.names(),
        "created_at": rfc3339(s.created_at_ms),
    })
}

fn delivery_json(d: &Delivery) -> Value {
    let attempts: Vec<Value> = d
        .attempts
        .iter()
        .map(|a| {
            json!({
                "at": rfc3339(a.at_ms),
                "status": a.status_code,
                "error": a.error,
                "duration_ms": a.duration_ms,
            })
        })
        .collect();
    json!({
        "delivery_id": d.id,
        "type": d.kind,
        "id": d.fact_id,
        "state": d.state,
        "tries": d.tries,
        "created_at": rfc3339(d.created_at_ms),
        "next_attempt_at": d.next_attempt_at_ms.map(rfc3339),
        "attempts": attempts,
    })
}

pub(crate) async fn create(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    JsonBody { value: request, .. }: JsonBody<CreateWebhook>,
) -> Result<Response, Problem> {
    let url = HookUrl::parse(&request.url)?;
    let kinds = Kinds::parse(&request.events)?;
    let secret = match &request.secret {
        Some(given) => HookSecret::parse(given)?,
        None => HookSecret::generate(),
    };
    let made = state
        .store
        .create_webhook(&event, &url, kinds, &secret)
        .await?;
    audit(
        &state,
        &who,
        "create_webhook",
        Some(event.as_str()),
        &json!({ "webhook_id": made.webhook_id.as_str(), "url": made.url, "events": kinds.names() }),
    )
    .await;
    let mut body = subscription_json(&made);
    // The only answer that carries it.
    body["secret"] = json!(secret.expose());
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

pub(crate) async fn list(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    _: Organizer,
) -> Result<Response, Problem> {
    state.store.get_event(&event).await?;
    let list: Vec<Value> = state
        .store
        .webhooks(&event)
        .await?
        .iter()
        .map(subscription_json)
        .collect();
    Ok(axum::Json(json!({ "webhooks": list })).into_response())
}

pub(crate) async fn delete(
    State(state): State<AppState>,
    path: HookPath,
    who: Organizer,
) -> Result<Response, Problem> {
    state
        .store
        .delete_webhook(&path.event, &path.webhook)
        .await?;
    audit(
        &state,
        &who,
        "delete_webhook",
        Some(path.event.as_str()),
        &json!({ "webhook_id": path.webhook.as_str() }),
    )
    .await;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub(crate) async fn deliveries(
    State(state): State<AppState>,
    path: HookPath,
    _: Organizer,
) -> Result<Response, Problem> {
    let list: Vec<Value> = state
        .store
        .webhook_deliveries(&path.event, &path.webhook)
        .await?
        .iter()
        .map(delivery_json)
        .collect();
    Ok(axum::Json(json!({ "deliveries": list })).into_response())
}

/// Queues a `ping` to the subscription; the worker sends it within its poll interval and the
/// deliveries list shows how it went.
pub(crate) async fn test(
    State(state): State<AppState>,
    path: HookPath,
    _: Organizer,
) -> Result<Response, Problem> {
    let delivery = state.store.ping_webhook(&path.event, &path.webhook).await?;
    Ok((
        StatusCode::ACCEPTED,
        axum::Json(json!({ "delivery_id": delivery, "type": reservation::hooks::PING })),
    )
        .into_response())
}
