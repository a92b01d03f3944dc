//! The one place where typed outcomes become API.md's problem+json answers: the libraries'
//! errors, the edge's refusals (ids, queries, bodies, upgrades, signatures) and axum's own
//! (unknown route, wrong method). Every match names each variant, so a new client error in a
//! library does not compile until it has its answer here (no wildcard turns it into a 503).
//!
//! Conversions neither log nor count: a server-side cause rides on the `Problem`, and the
//! request span writes it once and counts the refusal (`request_span.rs`).

use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::http::StatusCode;
use serde_json::json;

use admission::AdmissionError;
use reservation::InvalidId;
use reservation::hooks::{HookError, InvalidHook};
use reservation::payments::webhook::SignatureError;
use reservation::webhook_intake::WebhookError;

use reservation::codes::CodeRefusal;

use crate::auth::RoleForbidden;
use crate::body::BodyError;
use crate::entry::EntryRefusal;
use crate::problem::Problem;

const CONFLICT: StatusCode = StatusCode::CONFLICT;

impl From<AdmissionError> for Problem {
    fn from(error: AdmissionError) -> Self {
        match error {
            AdmissionError::TokenMissing => {
                Problem::new(StatusCode::UNAUTHORIZED, "token_missing", "no token")
            }
            AdmissionError::TokenInvalid(why) => Problem::new(
                StatusCode::UNAUTHORIZED,
                "token_invalid",
                format!("the token is invalid: {why}"),
            ),
            AdmissionError::TokenExpired => Problem::new(
                StatusCode::UNAUTHORIZED,
                "token_expired",
                "the token expired",
            ),
            AdmissionError::WrongEvent => Problem::new(
                StatusCode::FORBIDDEN,
                "wrong_event",
                "the token belongs to another event",
            ),
            AdmissionError::NotAdmitted => Problem::new(
                StatusCode::FORBIDDEN,
                "not_admitted",
                "a queue token was sent where an admission token is needed",
            ),
            AdmissionError::RateLimited { retry_after_s } => Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                "too many joins from this address",
            )
            .retry_after(retry_after_s.max(1))
            .counted("join_limit"),
            AdmissionError::UnknownEvent => Problem::not_found("no such event"),
            AdmissionError::QueuePaused => {
                Problem::new(CONFLICT, "queue_paused", "the queue is paused")
            }
            AdmissionError::QueueClosed => {
                Problem::new(CONFLICT, "queue_closed", "the queue is closed")
            }
            // The organizer's message is the detail, and its own field for pages.
            AdmissionError::QueueMaintenance { message } => Problem::new(
                CONFLICT,
                "queue_maintenance",
                message
                    .clone()
                    .unwrap_or_else(|| "the queue is in maintenance: no new places for now".into()),
            )
            .with("message", json!(message)),
            AdmissionError::Full => Problem::overloaded(
                "every admission slot is taken; retry shortly while your offer lasts",
            )
            .counted("admission_full"),
            AdmissionError::SoldOut => Problem::new(CONFLICT, "sold_out", "every seat is sold"),
            AdmissionError::NotYourTurn => {
                Problem::new(CONFLICT, "not_your_turn", "it is not your turn yet")
            }
            AdmissionError::OfferLapsed => Problem::new(
                CONFLICT,
                "offer_lapsed",
                "your turn passed: the offer was not claimed in time",
            ),
            AdmissionError::IdentityInvalid => Problem::new(
                StatusCode::FORBIDDEN,
                "identity_invalid",
                "the identity token is missing, expired or not signed by the organizer",
            ),
            AdmissionError::Storage(error) => {
                Problem::overloaded("the queue backend is unavailable; retry shortly")
                    .caused_by(format!("admission backend failed: {}", chain(&error)))
                    .counted("queue_backend")
            }
        }
    }
}

impl From<reservation::Error> for Problem {
    fn from(error: reservation::Error) -> Self {
        use reservation::Error as E;
        let seat_list = |seats: &[reservation::SeatId]| {
            json!(seats.iter().map(|s| s.as_str()).collect::<Vec<_>>())
        };
        match error {
            E::SeatUnavailable { seats } => {
                Problem::new(CONFLICT, "seat_unavailable", "some seats are not free")
                    .with("seats", seat_list(&seats))
            }
            E::UnknownSeats { seats } => {
                Problem::not_found("some seats do not exist").with("seats", seat_list(&seats))
            }
            E::DuplicateSeats => Problem::bad_request("a seat is listed twice"),
            E::TooManySeats { max } => Problem::new(
                StatusCode::BAD_REQUEST,
                "too_many_seats",
                format!("a hold takes between 1 and {max} seats"),
            ),
            E::NoSeats => Problem::new(
                StatusCode::BAD_REQUEST,
                "too_many_seats",
                "a hold takes at least one seat",
            ),
            E::SoldOut => Problem::new(CONFLICT, "sold_out", "no seats are left in that section"),
            E::EventNotFound => Problem::not_found("no such event"),
            E::EventExists => {
                Problem::new(CONFLICT, "event_exists", "an event with this id exists")
            }
            E::OutOfRange { field, min, max } => Problem::new(
                StatusCode::BAD_REQUEST,
                "out_of_range",
                format!("{field} must be between {min} and {max}"),
            )
            .with("field", json!(field))
            .with("max", json!(max)),
            E::Inconsistent(rule) => Problem::bad_request(rule),
            E::NothingToChange => Problem::bad_request("the change names no setting"),
            E::EventOpened => Problem::new(
                CONFLICT,
                "event_opened",
                "the queue has opened: the event's timings no longer change",
            ),
            E::FieldRule { field, rule } => Problem::bad_request(rule).with("field", json!(field)),
            E::StaleVersion { current } => Problem::new(
                CONFLICT,
                "stale_version",
                "the settings changed since you read them; read them again",
            )
            .with("version", json!(current)),
            E::SessionNotFound | E::SessionEnded => Problem::new(
                StatusCode::UNAUTHORIZED,
                "token_expired",
                "the admission session has ended",
            ),
            E::HoldNotFound | E::NotOwner => Problem::not_found("no such hold"),
            E::AttemptNotFound => Problem::not_found("no such payment"),
            E::KeyNotFound => Problem::not_found("no such key"),
            E::KeyLimit => Problem::new(
                CONFLICT,
                "key_limit",
                format!(
                    "at most {} team keys at once: revoke one first",
                    reservation::organizer_keys::MAX_KEYS
                ),
            ),
            E::HoldExpired => Problem::new(CONFLICT, "hold_expired", "the hold has expired"),
            E::HoldLimit => Problem::new(
                CONFLICT,
                "hold_limit",
                "this session already has a live hold",
            ),
            E::PaymentInProgress => Problem::new(
                CONFLICT,
                "payment_in_progress",
                "a payment is in progress for this hold",
            ),
            E::IdempotencyConflict => Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency_conflict",
                "this Idempotency-Key was used with a different request",
            ),
            E::InvalidId(error) => error.into(),
            // A test's failpoint stands for the process dying mid-flow: the client sees what a
            // lost database would show it.
            error @ (E::Crashed(_) | E::Storage(_)) => {
                Problem::overloaded("the reservation database is unavailable; retry shortly")
                    .caused_by(format!("reservation store failed: {}", chain(&error)))
                    .counted("database")
            }
        }
    }
}

impl From<EntryRefusal> for Problem {
    fn from(refusal: EntryRefusal) -> Self {
        let (code, detail) = match refusal {
            EntryRefusal::CodeRequired => ("code_required", "this queue needs an access code now"),
            EntryRefusal::Code(CodeRefusal::Invalid) => {
                ("code_invalid", "no such access code for this event")
            }
            EntryRefusal::Code(CodeRefusal::UsedUp) => {
                ("code_used_up", "this access code has no uses left")
            }
            EntryRefusal::Code(CodeRefusal::OutsideWindow) => (
                "code_outside_window",
                "this access code is not valid at this time",
            ),
        };
        Problem::new(StatusCode::FORBIDDEN, code, detail)
    }
}

impl From<InvalidHook> for Problem {
    fn from(error: InvalidHook) -> Self {
        let field = match error {
            InvalidHook::Url => "url",
            InvalidHook::Kinds => "events",
            InvalidHook::Secret => "secret",
        };
        Problem::bad_request(error.to_string()).with("field", json!(field))
    }
}

impl From<HookError> for Problem {
    fn from(error: HookError) -> Self {
        match error {
            HookError::NotFound => Problem::not_found("no such webhook"),
            HookError::TooMany { max } => Problem::new(
                CONFLICT,
                "webhook_limit",
                format!("an event has at most {max} webhooks"),
            )
            .with("max", json!(max)),
            HookError::Invalid(error) => error.into(),
            HookError::Store(error) => error.into(),
        }
    }
}

impl From<RoleForbidden> for Problem {
    fn from(refused: RoleForbidden) -> Self {
        Problem::new(
            StatusCode::FORBIDDEN,
            "role_forbidden",
            format!(
                "this needs a key of role {} or above; this key is a {}",
                refused.needed, refused.has
            ),
        )
        .with("required_role", json!(refused.needed))
    }
}

impl From<InvalidId> for Problem {
    fn from(error: InvalidId) -> Self {
        Problem::bad_request(error.to_string())
    }
}

impl From<SignatureError> for Problem {
    fn from(error: SignatureError) -> Self {
        let detail = match error {
            SignatureError::Missing => "no Stripe-Signature header",
            SignatureError::Malformed => "the Stripe-Signature header is malformed",
            SignatureError::TooLarge => "the Stripe-Signature header is over 8 KiB or 16 entries",
            SignatureError::BadSignature => "no signature matches the body",
            SignatureError::Stale => "the signature's timestamp is outside the tolerance",
        };
        Problem::new(StatusCode::BAD_REQUEST, "bad_signature", detail)
    }
}

impl From<WebhookError> for Problem {
    fn from(error: WebhookError) -> Self {
        match error {
            WebhookError::Signature(error) => error.into(),
            WebhookError::Malformed(why) => {
                Problem::bad_request(format!("malformed webhook: {why}"))
            }
            // 503 so the provider delivers again later.
            WebhookError::ProviderUnavailable(why) => {
                Problem::overloaded("the payment provider did not answer; deliver again later")
                    .caused_by(format!("webhook re-fetch failed: {why}"))
            }
            WebhookError::Store(error) => error.into(),
        }
    }
}

impl From<BodyError> for Problem {
    fn from(error: BodyError) -> Self {
        let status = match &error {
            BodyError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyError::TooSlow { .. } => StatusCode::REQUEST_TIMEOUT,
            BodyError::Broken(_) => StatusCode::BAD_REQUEST,
        };
        Problem::new(status, "bad_request", error.to_string())
    }
}

impl From<serde_json::Error> for Problem {
    fn from(error: serde_json::Error) -> Self {
        Problem::bad_request(format!("invalid JSON body: {error}"))
    }
}

impl From<PathRejection> for Problem {
    fn from(rejection: PathRejection) -> Self {
        Problem::bad_request(rejection.body_text())
    }
}

impl From<QueryRejection> for Problem {
    fn from(rejection: QueryRejection) -> Self {
        Problem::bad_request(rejection.body_text())
    }
}

/// One of axum's own rejections as a `bad_request` problem, keeping its status when it is a
/// client error (413, 426…): what the client sent was wrong, never the server.
fn axum_rejection(status: StatusCode, text: String) -> Problem {
    let status = if status.is_client_error() {
        status
    } else {
        StatusCode::BAD_REQUEST
    };
    Problem::new(status, "bad_request", text)
}

impl From<BytesRejection> for Problem {
    fn from(rejection: BytesRejection) -> Self {
        axum_rejection(rejection.status(), rejection.body_text())
    }
}

/// A GET without the upgrade headers of a WebSocket (or a version the server does not speak).
impl From<WebSocketUpgradeRejection> for Problem {
    fn from(rejection: WebSocketUpgradeRejection) -> Self {
        axum_rejection(rejection.status(), rejection.body_text())
    }
}

/// axum's answer to a path no route has.
pub async fn no_such_route() -> Problem {
    Problem::not_found("no such route")
}

/// axum's answer to a known path with a method it does not take.
pub async fn method_not_allowed() -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}

/// An error and its sources on one line, for the log.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
