//! The outcomes a caller of admission acts on, and one opaque storage variant.

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    #[error("no token")]
    TokenMissing,
    #[error("invalid token: {0}")]
    TokenInvalid(InvalidToken),
    #[error("token expired")]
    TokenExpired,
    #[error("token of another event")]
    WrongEvent,
    #[error("a queue token where an admission token is needed")]
    NotAdmitted,
    #[error("too many joins from this address")]
    RateLimited { retry_after_s: u64 },
    #[error("unknown event")]
    UnknownEvent,
    #[error("queue paused")]
    QueuePaused,
    #[error("queue closed")]
    QueueClosed,
    /// The organizer put the queue in maintenance: joins are refused, with their message.
    #[error("queue in maintenance")]
    QueueMaintenance { message: Option<String> },
    /// The database refused a new session: `max_active` sessions are live (pass-through and
    /// fail-open, where the database judges the cap).
    #[error("every admission slot is taken")]
    Full,
    #[error("sold out")]
    SoldOut,
    #[error("not your turn yet")]
    NotYourTurn,
    #[error("your offer lapsed")]
    OfferLapsed,
    /// The identity token the organizer's site signed is missing where required, forged,
    /// expired or malformed.
    #[error("identity token invalid")]
    IdentityInvalid,
    /// Redis or the database failed; logged by the caller, shown as a generic 503.
    #[error("admission storage failed")]
    Storage(#[source] StorageError),
}

/// Why a token was refused as invalid: all map to `token_invalid`, the detail tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidToken {
    /// Not three base64url parts, bad JSON, missing claims.
    Malformed,
    /// `alg: none` or any algorithm other than the configured HS256.
    AlgorithmNotAllowed,
    /// A `kid` no key in the ring carries (or none at all).
    UnknownKey,
    /// Signature does not verify under the named key.
    BadSignature,
}

impl fmt::Display for InvalidToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InvalidToken::Malformed => "malformed",
            InvalidToken::AlgorithmNotAllowed => "algorithm not allowed",
            InvalidToken::UnknownKey => "unknown key id",
            InvalidToken::BadSignature => "bad signature",
        })
    }
}

/// Opaque: Redis, the database or token signing failed.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    #[error("database: {0}")]
    Db(#[from] crate::db::DbError),
    #[error("unexpected reply from a queue script: {0}")]
    Reply(String),
    #[error("signing: {0}")]
    Signing(#[from] jsonwebtoken::errors::Error),
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for AdmissionError {
            fn from(e: $t) -> Self {
                AdmissionError::Storage(e.into())
            }
        }
    )*};
}
storage_from!(
    redis::RedisError,
    crate::db::DbError,
    jsonwebtoken::errors::Error
);

impl From<StorageError> for AdmissionError {
    fn from(e: StorageError) -> Self {
        AdmissionError::Storage(e)
    }
}
