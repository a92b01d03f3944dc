//! The outcomes a caller acts on, plus one opaque storage variant.

use crate::ids::SeatId;

/// Everything the store refuses, named so the gateway can map each to one HTTP answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("seats are not available: {seats:?}")]
    SeatUnavailable { seats: Vec<SeatId> },
    #[error("unknown seats: {seats:?}")]
    UnknownSeats { seats: Vec<SeatId> },
    #[error("a seat is listed twice")]
    DuplicateSeats,
    #[error("too many seats for one hold (at most {max})")]
    TooManySeats { max: i64 },
    #[error("no seats requested")]
    NoSeats,
    #[error("sold out")]
    SoldOut,
    #[error("event not found")]
    EventNotFound,
    /// The event id is taken (decided by the primary key, never by a prior read).
    #[error("an event with this id exists")]
    EventExists,
    /// An organizer's number outside its documented bounds (see `limits`).
    #[error("{field} must be between {min} and {max}")]
    OutOfRange {
        field: &'static str,
        min: i64,
        max: i64,
    },
    /// Settings that are each in range but break a rule between them.
    #[error("{0}")]
    Inconsistent(&'static str),
    /// A change of an event's timings after its queue opened: nothing changed.
    #[error("the event's queue has opened: its timings no longer change")]
    EventOpened,
    /// A value that breaks a rule with the event as stored, named by its field.
    #[error("{rule}")]
    FieldRule {
        field: &'static str,
        rule: &'static str,
    },
    /// A change that names nothing to change.
    #[error("the change names no setting")]
    NothingToChange,
    /// A conditional change named a version the settings have moved past: nothing changed.
    #[error("the settings changed since version was read (now {current})")]
    StaleVersion { current: i64 },
    #[error("session not found")]
    SessionNotFound,
    #[error("session has ended")]
    SessionEnded,
    #[error("hold not found")]
    HoldNotFound,
    #[error("hold belongs to another session")]
    NotOwner,
    #[error("hold has expired")]
    HoldExpired,
    #[error("the session already has a live hold")]
    HoldLimit,
    #[error("a payment is in progress for this hold")]
    PaymentInProgress,
    #[error("idempotency key reused with a different request")]
    IdempotencyConflict,
    #[error("payment attempt not found")]
    AttemptNotFound,
    /// Every slot for an organizer key is taken (`organizer_keys::MAX_KEYS`).
    #[error("the installation holds as many organizer keys as it may")]
    KeyLimit,
    #[error("organizer key not found")]
    KeyNotFound,
    #[error(transparent)]
    InvalidId(#[from] crate::ids::InvalidId),
    /// A test stopped the flow at a failpoint, as if the process had died there.
    #[error(transparent)]
    Crashed(#[from] crate::failpoint::FailpointCrash),
    /// The database failed or timed out; details are for the log, not the client.
    #[error("storage error")]
    Storage(#[source] sqlx::Error),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Self {
        Error::Storage(e)
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Storage(sqlx::Error::Decode(Box::new(e)))
    }
}

impl Error {
    /// Deadlocks, serialization failures, lock timeouts and SQLite busy: the transaction was
    /// rolled back whole, so running it again is safe.
    pub(crate) fn is_retryable(&self) -> bool {
        let Error::Storage(sqlx::Error::Database(db)) = self else {
            return false;
        };
        matches!(
            db.code().as_deref(),
            Some("40P01" | "40001" | "55P03" | "5" | "261" | "517" | "6" | "262")
        )
    }
}

/// A unique violation of the events table's primary key: the id is taken.
pub(crate) fn is_event_id_taken(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            db.constraint() == Some("events_pkey") || db.message().contains("events.event_id")
        }
        _ => false,
    }
}

/// A unique violation on the index that allows one live hold per session.
pub(crate) fn is_live_hold_conflict(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::Database(db) if db.is_unique_violation() => {
            db.constraint() == Some("holds_one_live_per_session")
                || db.message().contains("holds.session_id")
        }
        _ => false,
    }
}
