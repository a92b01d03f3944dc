//! The one place where the libraries' typed outcomes become API.md's problem+json answers.
//! Storage failures are logged here, once, inside the request span, and shown generically.

use axum::http::StatusCode;
use serde_json::json;

use admission::AdmissionError;

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
            AdmissionError::RateLimited { retry_after_s } => {
                metrics::counter!("floodgate_rejections_total", "status" => "429", "reason" => "join_limit")
                    .increment(1);
                Problem::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limited",
                    "too many joins from this address",
                )
                .retry_after(retry_after_s.max(1))
            }
            AdmissionError::UnknownEvent => Problem::not_found("no such event"),
            AdmissionError::QueuePaused => {
                Problem::new(CONFLICT, "queue_paused", "the queue is paused")
            }
            AdmissionError::QueueClosed => {
                Problem::new(CONFLICT, "queue_closed", "the queue is closed")
            }
            AdmissionError::SoldOut => Problem::new(CONFLICT, "sold_out", "every seat is sold"),
            AdmissionError::NotYourTurn => {
                Problem::new(CONFLICT, "not_your_turn", "it is not your turn yet")
            }
            AdmissionError::OfferLapsed => Problem::new(
                CONFLICT,
                "offer_lapsed",
                "your turn passed: the offer was not claimed in time",
            ),
            AdmissionError::Storage(error) => {
                tracing::error!(error = %chain(&error), "admission backend failed");
                metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => "queue_backend")
                    .increment(1);
                Problem::overloaded("the queue backend is unavailable; retry shortly")
            }
        }
    }
}

impl From<reservation::Error> for Problem {
    fn from(error: reservation::Error) -> Self {
        use reservation::Error as E;
        match error {
            E::SeatUnavailable { seats } => {
                Problem::new(CONFLICT, "seat_unavailable", "some seats are not free").with(
                    "seats",
                    json!(seats.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
                )
            }
            E::UnknownSeats { seats } => Problem::not_found("some seats do not exist").with(
                "seats",
                json!(seats.iter().map(|s| s.as_str()).collect::<Vec<_>>()),
            ),
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
            E::SessionNotFound | E::SessionEnded => Problem::new(
                StatusCode::UNAUTHORIZED,
                "token_expired",
                "the admission session has ended",
            ),
            E::HoldNotFound | E::NotOwner => Problem::not_found("no such hold"),
            E::AttemptNotFound => Problem::not_found("no such payment"),
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
            E::InvalidId(error) => Problem::bad_request(error.to_string()),
            other => {
                tracing::error!(error = %chain(&other), "reservation store failed");
                metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => "database").increment(1);
                Problem::overloaded("the reservation database is unavailable; retry shortly")
            }
        }
    }
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
