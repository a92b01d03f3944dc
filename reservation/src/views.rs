//! What the store returns: holds, attempts, orders, seats — every time as Unix milliseconds.

use std::str::FromStr;

use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::ids::{AttemptId, EventId, HoldId, OrderId, SeatId, SessionId, trusted};

/// Where a hold is. `Expired` is also reported for a `held` row whose time has passed,
/// whatever the sweeper has done: expiry is decided by the clock, not by cleanup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldState {
    Held,
    Paying,
    Confirmed,
    Released,
    Expired,
    Abandoned,
}

impl HoldState {
    pub fn is_live(self) -> bool {
        matches!(self, HoldState::Held | HoldState::Paying)
    }
}

/// Where a payment attempt is (see the schema for each state's meaning).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    Pending,
    Ambiguous,
    Authorized,
    Confirmed,
    Captured,
    Declined,
    Voided,
    Refunded,
    Abandoned,
}

macro_rules! text_enum {
    ($t:ident { $($v:ident = $s:literal),* $(,)? }) => {
        impl $t {
            pub fn as_str(self) -> &'static str {
                match self { $($t::$v => $s),* }
            }
        }
        impl FromStr for $t {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s {
                    $($s => Ok($t::$v),)*
                    other => Err(Error::Storage(sqlx::Error::Decode(
                        format!("unknown {} {other:?}", stringify!($t)).into(),
                    ))),
                }
            }
        }
    };
}

text_enum!(HoldState { Held = "held", Paying = "paying", Confirmed = "confirmed",
    Released = "released", Expired = "expired", Abandoned = "abandoned" });
text_enum!(AttemptState { Pending = "pending", Ambiguous = "ambiguous", Authorized = "authorized",
    Confirmed = "confirmed", Captured = "captured", Declined = "declined", Voided = "voided",
    Refunded = "refunded", Abandoned = "abandoned" });

/// A hold on 1..n seats of one event, owned by one admission session.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Hold {
    pub hold_id: HoldId,
    pub event_id: EventId,
    pub session_id: SessionId,
    /// Unguessable; lets the buyer read this hold and its order after the session ends.
    pub receipt_key: String,
    pub state: HoldState,
    /// Sorted.
    pub seats: Vec<SeatId>,
    pub total_cents: i64,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub max_expires_at_ms: i64,
    pub order_id: Option<OrderId>,
    pub last_payment_error: Option<String>,
}

/// Column list matching `TryFrom<AnyRow>` below (a macro so `concat!` can build `'static` SQL).
macro_rules! hold_columns {
    () => {
        "hold_id, event_id, session_id, receipt_key, \
    case when state = 'held' and expires_at <= NOW then 'expired' else state end as state, \
    seats, total_cents, MS(created_at) as created_at_ms, MS(expires_at) as expires_at_ms, \
    MS(max_expires_at) as max_expires_at_ms, order_id, last_payment_error"
    };
}
pub(crate) use hold_columns;

pub(crate) fn seat_list(json: &str) -> Result<Vec<SeatId>, Error> {
    Ok(serde_json::from_str(json)?)
}

impl TryFrom<AnyRow> for Hold {
    type Error = Error;
    fn try_from(r: AnyRow) -> Result<Hold, Error> {
        Ok(Hold {
            hold_id: trusted(r.try_get("hold_id")?)?,
            event_id: trusted(r.try_get("event_id")?)?,
            session_id: trusted(r.try_get("session_id")?)?,
            receipt_key: r.try_get("receipt_key")?,
            state: r.try_get::<String, _>("state")?.parse()?,
            seats: seat_list(&r.try_get::<String, _>("seats")?)?,
            total_cents: r.try_get("total_cents")?,
            created_at_ms: r.try_get("created_at_ms")?,
            expires_at_ms: r.try_get("expires_at_ms")?,
            max_expires_at_ms: r.try_get("max_expires_at_ms")?,
            order_id: r
                .try_get::<Option<String>, _>("order_id")?
                .map(trusted)
                .transpose()?,
            last_payment_error: r.try_get("last_payment_error")?,
        })
    }
}

/// One try at taking money for a hold; `attempt_id` is the provider's idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PaymentAttempt {
    pub attempt_id: AttemptId,
    pub hold_id: HoldId,
    pub event_id: EventId,
    pub amount_cents: i64,
    pub currency: String,
    pub payment_method: String,
    pub state: AttemptState,
    pub provider_payment_id: Option<String>,
    pub last_error: Option<String>,
    pub created_at_ms: i64,
    /// From here on, reconciliation asks the provider (same key).
    pub resolve_by_ms: i64,
    /// From here on, policy voids the authorization and frees the seats.
    pub abandon_at_ms: i64,
    /// Where the provider sends the buyer back after authenticating (3-D Secure).
    pub return_url: Option<String>,
}

/// Column list matching `TryFrom<AnyRow>` below (a macro so `concat!` can build `'static` SQL).
macro_rules! attempt_columns {
    () => {
        "attempt_id, hold_id, event_id, amount_cents, currency, \
    payment_method, state, provider_payment_id, last_error, MS(created_at) as created_at_ms, \
    MS(resolve_by) as resolve_by_ms, MS(abandon_at) as abandon_at_ms, return_url"
    };
}
pub(crate) use attempt_columns;

impl TryFrom<AnyRow> for PaymentAttempt {
    type Error = Error;
    fn try_from(r: AnyRow) -> Result<PaymentAttempt, Error> {
        Ok(PaymentAttempt {
            attempt_id: trusted(r.try_get("attempt_id")?)?,
            hold_id: trusted(r.try_get("hold_id")?)?,
            event_id: trusted(r.try_get("event_id")?)?,
            amount_cents: r.try_get("amount_cents")?,
            currency: r.try_get("currency")?,
            payment_method: r.try_get("payment_method")?,
            state: r.try_get::<String, _>("state")?.parse()?,
            provider_payment_id: r.try_get("provider_payment_id")?,
            last_error: r.try_get("last_error")?,
            created_at_ms: r.try_get("created_at_ms")?,
            resolve_by_ms: r.try_get("resolve_by_ms")?,
            abandon_at_ms: r.try_get("abandon_at_ms")?,
            return_url: r.try_get("return_url")?,
        })
    }
}

/// A confirmed order (its seats are in `sales`, one row each).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Order {
    pub order_id: OrderId,
    pub event_id: EventId,
    pub hold_id: HoldId,
    pub attempt_id: AttemptId,
    pub seats: Vec<SeatId>,
    pub total_cents: i64,
    /// `confirmed` or `refunded`.
    pub status: String,
    /// `authorized`, `captured` or `refunded`.
    pub payment_status: String,
    pub created_at_ms: i64,
}

/// Column list matching `TryFrom<AnyRow>` below (a macro so `concat!` can build `'static` SQL).
macro_rules! order_columns {
    () => {
        "order_id, event_id, hold_id, attempt_id, seats, total_cents, \
    status, payment_status, MS(created_at) as created_at_ms"
    };
}
pub(crate) use order_columns;

impl TryFrom<AnyRow> for Order {
    type Error = Error;
    fn try_from(r: AnyRow) -> Result<Order, Error> {
        Ok(Order {
            order_id: trusted(r.try_get("order_id")?)?,
            event_id: trusted(r.try_get("event_id")?)?,
            hold_id: trusted(r.try_get("hold_id")?)?,
            attempt_id: trusted(r.try_get("attempt_id")?)?,
            seats: seat_list(&r.try_get::<String, _>("seats")?)?,
            total_cents: r.try_get("total_cents")?,
            status: r.try_get("status")?,
            payment_status: r.try_get("payment_status")?,
            created_at_ms: r.try_get("created_at_ms")?,
        })
    }
}
