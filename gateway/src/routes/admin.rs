//! The organizer API: create an event, add seats, tune admission live, read stats and stuck
//! payments, close the queue. Every route needs an organizer key of the role its entry in the
//! route book names; every change is audited with the key that made it.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use reservation::{
    AdmissionMode, AdmissionPatch, BackendDown, EventId, MessageLevel, NewEvent, NewSeat,
    QueueMessage, SeatId,
};

use crate::auth::Organizer;
use crate::clock::rfc3339;
use crate::extract::{JsonBody, PathId, Query};
use crate::problem::Problem;
use crate::requests::{
    AdmissionChange, BackendDownName, CreateEvent, LevelName, ModeName, SeatsRequest, StuckQuery,
};
use crate::state::AppState;

/// An event's name: 1-200 characters (as the document counts them: characters, not bytes),
/// at least one of them not white space (the name is stored trimmed).
pub(crate) const NAME_CHARS: usize = 200;
/// A listed seat's section and row label, in characters.
pub(crate) const SECTION_CHARS: usize = 64;
pub(crate) const ROW_CHARS: usize = 64;
/// Seats one listed upload may carry (a larger block is `generate`d).
pub(crate) const SEATS_PER_LIST: usize = 10_000;

pub(crate) fn is_name(name: &str) -> bool {
    name.chars().count() <= NAME_CHARS && name.chars().any(|c| !c.is_whitespace())
}

fn positive(name: &str, value: Option<i64>, into: &mut i64) -> Result<(), Problem> {
    match value {
        Some(v) if v <= 0 => Err(Problem::bad_request(format!("{name} must be positive"))),
        Some(v) => {
            *into = v;
            Ok(())
        }
        None => Ok(()),
    }
}

/// Records a change with the key that made it.
pub(crate) async fn audit(
    state: &AppState,
    who: &Organizer,
    action: &str,
    event: Option<&str>,
    detail: &Value,
) {
    if let Err(error) = state
        .store
        .audit(&who.actor, action, event, &detail.to_string())
        .await
    {
        tracing::error!(%error, action, "audit log write failed");
    }
}

pub(crate) async fn create(
    State(state): State<AppState>,
    who: Organizer,
    body: JsonBody<CreateEvent>,
) -> Result<Response, Problem> {
    let request = &body.value;
    let id = request.event.parse::<EventId>()?;
    if !is_name(&request.name) {
        return Err(Problem::bad_request(
            "name must be 1-200 characters, not all blank",
        ));
    }
    if request.admission.priority_share.is_some() {
        return Err(Problem::bad_request(
            "priority_share is a live setting: PATCH …/admission",
        ));
    }
    let mut spec = NewEvent::new(id.clone(), request.name.trim());
    if let Some(opens_at) = &request.opens_at {
        let at =
            time::OffsetDateTime::parse(opens_at, &time::format_description::well_known::Rfc3339)
                .map_err(|_| Problem::bad_request("opens_at must be an RFC 3339 time"))?;
        spec.opens_at_ms = Some(crate::clock::ms(at));
    }
    positive("hold_ttl_s", request.hold_ttl_s, &mut spec.hold_ttl_s)?;
    positive("max_hold_s", request.max_hold_s, &mut spec.max_hold_s)?;
    positive(
        "max_seats_per_hold",
        request.max_seats_per_hold,
        &mut spec.max_seats_per_hold,
    )?;
    positive("resolve_s", request.resolve_s, &mut spec.resolve_s)?;
    positive("abandon_s", request.abandon_s, &mut spec.abandon_s)?;
    positive(
        "rate_per_min",
        request.admission.rate_per_min,
        &mut spec.rate_per_min,
    )?;
    positive(
        "max_active",
        request.admission.max_active,
        &mut spec.max_active,
    )?;
    positive("offer_s", request.admission.offer_s, &mut spec.offer_s)?;
    // A session must outlive a hold's longest life plus its payment's abandon deadline. The
    // store judges each bound, then the rules between settings (`NewEvent::validate`).
    spec.session_s = request.admission.session_s.unwrap_or(
        spec.session_s
            .max(spec.max_hold_s.saturating_add(spec.abandon_s)),
    );
    if let Some(currency) = &request.currency {
        if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(Problem::bad_request("currency is a three-letter ISO code"));
        }
        spec.currency = currency.to_ascii_lowercase();
    }
    let event = state.store.create_event(spec).await?;
    if request.admission.paused == Some(true) {
        state
            .store
            .update_admission_control(
                &id,
                &AdmissionPatch {
                    paused: Some(true),
                    ..Default::default()
                },
            )
            .await?;
    }
    audit(
        &state,
        &who,
        "create_event",
        Some(id.as_str()),
        &serde_json::from_slice(&body.raw).unwrap_or(Value::Null),
    )
    .await;
    Ok((
        StatusCode::CREATED,
        axum::Json(json!({
            "event": event.event_id.as_str(),
            "name": event.name,
            "opens_at": rfc3339(event.opens_at_ms),
            "seed_commitment": event.seed_commitment,
        })),
    )
        .into_response())
}

pub(crate) async fn seats(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    JsonBody { value: request, .. }: JsonBody<SeatsRequest>,
) -> Result<Response, Problem> {
    state.store.get_event(&event).await?;
    let added = match request {
        SeatsRequest {
            seats: Some(seats),
            generate: None,
        } => {
            if seats.is_empty() || seats.len() > SEATS_PER_LIST {
                return Err(Problem::bad_request("give 1-10,000 seats per request"));
            }
            let list = seats
                .into_iter()
                .map(|s| {
                    if !(1..=SECTION_CHARS).contains(&s.section.chars().count())
                        || s.row.chars().count() > ROW_CHARS
                    {
                        return Err(Problem::bad_request(
                            "each seat needs a section of 1-64 characters and a row of at most 64",
                        ));
                    }
                    Ok(NewSeat {
                        seat_id: s.seat_id.parse::<SeatId>()?,
                        section: s.section,
                        row_label: s.row,
                        number: s.number,
                        price_cents: s.price_cents,
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            state.store.add_seats(&event, &list).await?
        }
        SeatsRequest {
            seats: None,
            generate: Some(g),
        } => {
            let valid_section = !g.section.is_empty()
                && g.section.len() <= 40
                && crate::extract::is_valid_id(&g.section);
            if !valid_section {
                return Err(Problem::bad_request("generate needs a section id"));
            }
            state
                .store
                .generate_seats(&event, &g.section, g.rows, g.per_row, g.price_cents)
                .await?
        }
        _ => return Err(Problem::bad_request("give either `seats` or `generate`")),
    };
    state.seats.invalidate(event.as_str());
    // New seats end a sold-out snapshot: published before the answer, so a buyer sent here
    // right after is not told "sold out" by a tick that ran before the seats existed.
    obey_now(&state, event.as_str()).await;
    audit(
        &state,
        &who,
        "add_seats",
        Some(event.as_str()),
        &json!({ "added": added }),
    )
    .await;
    Ok(
        axum::Json(json!({ "added": added, "total": state.store.seat_count(&event).await? }))
            .into_response(),
    )
}

pub(crate) async fn tune(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
    body: JsonBody<AdmissionChange>,
) -> Result<Response, Problem> {
    let request = &body.value;
    for (name, value) in [
        ("rate_per_min", request.rate_per_min),
        ("max_active", request.max_active),
        ("session_s", request.session_s),
        ("offer_s", request.offer_s),
    ] {
        if value
            .is_some_and(|v| v < 0 || (name != "rate_per_min" && name != "max_active" && v == 0))
        {
            return Err(Problem::bad_request(format!("{name} is out of range")));
        }
    }
    let patch = AdmissionPatch {
        rate_per_min: request.rate_per_min,
        max_active: request.max_active,
        session_s: request.session_s,
        offer_s: request.offer_s,
        paused: request.paused,
        closed: None,
        priority_permille: priority_permille(request.priority_share)?,
        mode: request.mode.map(|m| match m {
            ModeName::Normal => AdmissionMode::Normal,
            ModeName::PassThrough => AdmissionMode::PassThrough,
            ModeName::Maintenance => AdmissionMode::Maintenance,
        }),
        on_backend_down: request.on_backend_down.map(|d| match d {
            BackendDownName::FailClosed => BackendDown::FailClosed,
            BackendDownName::FailOpen => BackendDown::FailOpen,
        }),
        message: request.message.as_ref().map(|m| {
            m.as_ref().map(|m| QueueMessage {
                text: m.text.clone(),
                level: match m.level {
                    LevelName::Info => MessageLevel::Info,
                    LevelName::Warning => MessageLevel::Warning,
                },
            })
        }),
        expected_version: request.version,
    };
    let control = state.store.update_admission_control(&event, &patch).await?;
    obey_now(&state, event.as_str()).await;
    audit(
        &state,
        &who,
        "tune_admission",
        Some(event.as_str()),
        &serde_json::from_slice(&body.raw).unwrap_or(Value::Null),
    )
    .await;
    Ok(axum::Json(control_json(&control)).into_response())
}

/// The priority lane's share (0-1, NaN refused) in the thousandths the store keeps.
fn priority_permille(share: Option<f64>) -> Result<Option<i64>, Problem> {
    match share {
        None => Ok(None),
        Some(s) if (0.0..=1.0).contains(&s) => Ok(Some((s * 1000.0).round() as i64)),
        Some(_) => Err(reservation::Error::OutOfRange {
            field: "priority_share",
            min: 0,
            max: 1,
        }
        .into()),
    }
}

/// This instance ticks at once so the answer reflects the change; the others read the new
/// version on their next tick (every 100 ms).
pub(crate) async fn obey_now(state: &AppState, event: &str) {
    if let Err(error) = state.admission.tick(event).await {
        tracing::warn!(%error, "tick after an organizer change failed; the next tick applies it");
    }
}

fn control_json(c: &reservation::AdmissionControl) -> Value {
    json!({
        "rate_per_min": c.rate_per_min, "max_active": c.max_active, "session_s": c.session_s,
        "offer_s": c.offer_s, "paused": c.paused, "closed": c.closed, "version": c.version,
        "priority_share": c.priority_permille as f64 / 1000.0,
        "mode": c.mode.as_str(), "on_backend_down": c.on_backend_down.as_str(),
        "message": c.message.as_ref().map(|m| json!({"text": m.text, "level": m.level.as_str()})),
    })
}

pub(crate) async fn close(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    who: Organizer,
) -> Result<Response, Problem> {
    let patch = AdmissionPatch {
        closed: Some(true),
        ..Default::default()
    };
    let control = state.store.update_admission_control(&event, &patch).await?;
    obey_now(&state, event.as_str()).await;
    audit(&state, &who, "close", Some(event.as_str()), &json!({})).await;
    Ok(axum::Json(control_json(&control)).into_response())
}

pub(crate) async fn stats(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    _: Organizer,
) -> Result<Response, Problem> {
    let control = state
        .store
        .admission_control(&event)
        .await?
        .ok_or_else(|| Problem::not_found("no such event"))?;
    let counts = state.store.counts(&event).await?;
    let admitted_total = state.store.admitted_total(&event).await?;
    let snapshot = state.admission.subscribe(event.as_str()).borrow().clone();
    let seats = |s: &str| counts.seats(s);
    Ok(axum::Json(json!({
        "queue": {
            "state": crate::routes::events::state_name(snapshot.state),
            "waiting": snapshot.waiting,
            "offered": snapshot.open_offers,
            // Claims in flight or just settled: each still holds its place of the cap.
            "claiming": snapshot.claiming,
            "active": snapshot.active,
            "served": snapshot.served,
            "lapsed_total": snapshot.lapsed_total,
            "admitted_total": admitted_total,
            "outflow_per_min": snapshot.outflow_per_min,
        },
        "admission": control_json(&control),
        // This instance's backpressure: the share of `rate_per_min` it offers at, and why.
        "backpressure": state.admission.pressure(),
        "seats": { "available": seats("available"), "held": seats("held"), "paying": seats("paying"), "sold": seats("sold") },
        "holds": counts.holds,
        "payments": counts.attempts,
        // `simulated` means orders confirm without money changing hands.
        "payment_provider": state.settings.payment_mode.as_str(),
    }))
    .into_response())
}

pub(crate) async fn stuck(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    _: Organizer,
    Query(query): Query<StuckQuery>,
) -> Result<Response, Problem> {
    let older_than_s = query.older_than_s.unwrap_or(60);
    // The bound is judged first (400 `out_of_range`), then whether the event exists.
    let attempts = state.store.stuck(&event, older_than_s).await?;
    state.store.get_event(&event).await?;
    // Shown, not decided on: the reconciler acts on the database's clock; a second of skew
    // only moves when the flag appears.
    let overdue_before_ms =
        crate::clock::now_ms() - state.settings.payment_overdue_s.saturating_mul(1000);
    let list: Vec<Value> = attempts
        .iter()
        .map(|a| {
            json!({
                "overdue": a.abandon_at_ms <= overdue_before_ms,
                "payment_id": a.attempt_id.as_str(), "hold_id": a.hold_id.as_str(), "state": a.state.as_str(),
                "amount_cents": a.amount_cents, "payment_method": a.payment_method,
                "created_at": rfc3339(a.created_at_ms), "resolve_by": rfc3339(a.resolve_by_ms),
                "abandon_at": rfc3339(a.abandon_at_ms), "last_error": a.last_error,
            })
        })
        .collect();
    Ok(axum::Json(json!({ "older_than_s": older_than_s, "payments": list })).into_response())
}
