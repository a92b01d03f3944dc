//! What the store returns: holds, attempts, orders, seats — every time as Unix milliseconds.

use std::str::FromStr;

use sqlx::FromRow;
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

/// A hold row as `hold_columns!` reads it.
#[derive(sqlx::FromRow)]
struct HoldRow {
    hold_id: String,
    event_id: String,
    session_id: String,
    receipt_key: String,
    state: String,
    seats: String,
    total_cents: i64,
    created_at_ms: i64,
    expires_at_ms: i64,
    max_expires_at_ms: i64,
    order_id: Option<String>,
    last_payment_error: Option<String>,
}

impl TryFrom<AnyRow> for Hold {
    type Error = Error;
    fn try_from(r: AnyRow) -> Result<Hold, Error> {
        let r = HoldRow::from_row(&r)?;
        Ok(Hold {
            hold_id: trusted(r.hold_id)?,
            event_id: trusted(r.event_id)?,
            session_id: trusted(r.session_id)?,
            receipt_key: r.receipt_key,
            state: r.state.parse()?,
            seats: seat_list(&r.seats)?,
            total_cents: r.total_cents,
            created_at_ms: r.created_at_ms,
            expires_at_ms: r.expires_at_ms,
            max_expires_at_ms: r.max_expires_at_ms,
            order_id: r.order_id.map(trusted).transpose()?,
            last_payment_error: r.last_payment_error,
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

/// An attempt row as `attempt_columns!` reads it.
#[derive(sqlx::FromRow)]
struct AttemptRow {
    attempt_id: String,
    hold_id: String,
    event_id: String,
    amount_cents: i64,
    currency: String,
    payment_method: String,
    state: String,
    provider_payment_id: Option<String>,
    last_error: Option<String>,
    created_at_ms: i64,
    resolve_by_ms: i64,
    abandon_at_ms: i64,
    return_url: Option<String>,
}

impl TryFrom<AnyRow> for PaymentAttempt {
    type Error = Error;
    fn try_from(r: AnyRow) -> Result<PaymentAttempt, Error> {
        let r = AttemptRow::from_row(&r)?;
        Ok(PaymentAttempt {
            attempt_id: trusted(r.attempt_id)?,
            hold_id: trusted(r.hold_id)?,
            event_id: trusted(r.event_id)?,
            amount_cents: r.amount_cents,
            currency: r.currency,
            payment_method: r.payment_method,
            state: r.state.parse()?,
            provider_payment_id: r.provider_payment_id,
            last_error: r.last_error,
            created_at_ms: r.created_at_ms,
            resolve_by_ms: r.resolve_by_ms,
            abandon_at_ms: r.abandon_at_ms,
            return_url: r.return_url,
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

/// An order row as `order_columns!` reads it.
#[derive(sqlx::FromRow)]
struct OrderRow {
    order_id: String,
    event_id: String,
    hold_id: String,
    attempt_id: String,
    seats: String,
    total_cents: i64,
    status: String,
    payment_status: String,
    created_at_ms: i64,
}

impl TryFrom<AnyRow> for Order {
    type Error = Error;
    fn try_from(r: AnyRow) -> Result<Order, Error> {
        let r = OrderRow::from_row(&r)?;
        Ok(Order {
            order_id: trusted(r.order_id)?,
            event_id: trusted(r.event_id)?,
            hold_id: trusted(r.hold_id)?,
            attempt_id: trusted(r.attempt_id)?,
            seats: seat_list(&r.seats)?,
            total_cents: r.total_cents,
            status: r.status,
            payment_status: r.payment_status,
            created_at_ms: r.created_at_ms,
        })
    }
}
