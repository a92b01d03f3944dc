//! Reads: holds (expiry judged by the clock), orders, attempts, the seat map and counters.

use std::collections::BTreeMap;

use crate::Error;
use crate::ids::{AttemptId, EventId, HoldId, OrderId, SessionId, trusted};
use crate::store::{Store, Tx};
use crate::views::{Hold, Order, PaymentAttempt, attempt_columns, hold_columns, order_columns};

/// One seat as a buyer sees it. `state` is effective: a held seat past its expiry is
/// `available`, because expiry is already permission to take it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SeatView {
    pub seat_id: crate::ids::SeatId,
    pub section: String,
    pub row_label: String,
    pub number: i64,
    pub price_cents: i64,
    pub state: String,
    /// The stamp of the change that last turned this seat available or taken
    /// (see `availability`).
    pub availability_version: i64,
}

/// A seat row as the seat map reads it.
#[derive(sqlx::FromRow)]
struct SeatRow {
    seat_id: String,
    section: String,
    row_label: String,
    number: i64,
    price_cents: i64,
    state: String,
    availability_version: i64,
}

/// Rows by (effective) state, for dashboards and the sold-out decision.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    pub seats: BTreeMap<String, i64>,
    pub holds: BTreeMap<String, i64>,
    pub attempts: BTreeMap<String, i64>,
}

impl Counts {
    /// Seats in `state` (0 when none).
    pub fn seats(&self, state: &str) -> i64 {
        self.seats.get(state).copied().unwrap_or(0)
    }
}

impl Store {
    pub(crate) async fn read_hold(&self, tx: &mut Tx, hold: &HoldId) -> Result<Hold, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            hold_columns!(),
            " from holds where hold_id = $1"
        )))
        .bind(hold.as_str())
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(Error::HoldNotFound)?
        .try_into()
    }

    pub async fn get_hold(&self, hold: &HoldId) -> Result<Hold, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            hold_columns!(),
            " from holds where hold_id = $1"
        )))
        .bind(hold.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::HoldNotFound)?
        .try_into()
    }

    /// The hold a receipt key names (works after the session ended).
    pub async fn get_hold_by_receipt(&self, receipt_key: &str) -> Result<Hold, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            hold_columns!(),
            " from holds where receipt_key = $1"
        )))
        .bind(receipt_key)
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::HoldNotFound)?
        .try_into()
    }

    /// The session's live hold (held and unexpired, or paying), if any.
    pub async fn session_live_hold(&self, session: &SessionId) -> Result<Option<Hold>, Error> {
        let hold: Option<Hold> = sqlx::query(self.sql(concat!(
            "select ",
            hold_columns!(),
            " from holds where session_id = $1 and state in ('held', 'paying')"
        )))
        .bind(session.as_str())
        .fetch_optional(&self.pool)
        .await?
        .map(Hold::try_from)
        .transpose()?;
        Ok(hold.filter(|h| h.state.is_live()))
    }

    pub async fn get_order(&self, order: &OrderId) -> Result<Option<Order>, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            order_columns!(),
            " from orders where order_id = $1"
        )))
        .bind(order.as_str())
        .fetch_optional(&self.pool)
        .await?
        .map(Order::try_from)
        .transpose()
    }

    pub async fn get_attempt(&self, attempt: &AttemptId) -> Result<PaymentAttempt, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            attempt_columns!(),
            " from payment_attempts where attempt_id = $1"
        )))
        .bind(attempt.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::AttemptNotFound)?
        .try_into()
    }

    /// Every seat of the event with its effective state, in seat order.
    pub async fn seat_map(&self, event: &EventId) -> Result<Vec<SeatView>, Error> {
        self.get_event(event).await?;
        let rows: Vec<SeatRow> = sqlx::query_as(self.sql(
            "select seat_id, section, row_label, number, price_cents, \
             case when state = 'held' and hold_expires_at <= NOW then 'available' else state end as state, \
             availability_version from seats where event_id = $1 order by seat_id",
        ))
        .bind(event.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|r| {
                Ok(SeatView {
                    seat_id: trusted(r.seat_id)?,
                    section: r.section,
                    row_label: r.row_label,
                    number: r.number,
                    price_cents: r.price_cents,
                    state: r.state,
                    availability_version: r.availability_version,
                })
            })
            .collect()
    }

    /// Seats, holds and attempts of the event counted by effective state.
    pub async fn counts(&self, event: &EventId) -> Result<Counts, Error> {
        let mut out = Counts::default();
        for (text, map) in [
            (
                "select case when state = 'held' and hold_expires_at <= NOW then 'available' else state end as k, \
                 count(*) as n from seats where event_id = $1 group by 1",
                &mut out.seats,
            ),
            (
                "select case when state = 'held' and expires_at <= NOW then 'expired' else state end as k, \
                 count(*) as n from holds where event_id = $1 group by 1",
                &mut out.holds,
            ),
            (
                "select state as k, count(*) as n from payment_attempts where event_id = $1 group by 1",
                &mut out.attempts,
            ),
        ] {
            for (k, n) in sqlx::query_as::<_, (String, i64)>(self.sql(text))
                .bind(event.as_str())
                .fetch_all(&self.pool)
                .await?
            {
                *map.entry(k).or_insert(0) += n;
            }
        }
        Ok(out)
    }

    /// Open attempts whose `abandon_at` passed more than `grace_s` seconds ago. The reconciler
    /// asks the provider every few seconds and the first answer after `abandon_at` closes an
    /// attempt, so one still open a while later means the provider cannot be reached: the
    /// seats stay in `paying` until it answers, and somebody must look.
    pub async fn overdue_attempts(&self, grace_s: i64) -> Result<i64, Error> {
        let n: i64 = sqlx::query_scalar(self.sql(
            "select count(*) as n from payment_attempts \
             where state in ('pending', 'ambiguous', 'authorized') and abandon_at <= NOW - MSEC($1)",
        ))
        .bind(grace_s.saturating_mul(1000))
        .fetch_one(&self.pool)
        .await?;
        Ok(n)
    }

    /// Attempts still open (pending, ambiguous, authorized) that began more than
    /// `older_than_s` seconds ago (0 to `limits::STUCK_S`): "stuck in paying".
    pub async fn stuck(
        &self,
        event: &EventId,
        older_than_s: i64,
    ) -> Result<Vec<PaymentAttempt>, Error> {
        crate::limits::within("older_than_s", older_than_s, 0, crate::limits::STUCK_S)?;
        sqlx::query(self.sql(concat!(
            "select ",
            attempt_columns!(),
            " from payment_attempts where event_id = $1 \
             and state in ('pending', 'ambiguous', 'authorized') and created_at <= NOW - MSEC($2) \
             order by created_at"
        )))
        .bind(event.as_str())
        .bind(older_than_s.saturating_mul(1000))
        .fetch_all(&self.pool)
        .await?
        .into_iter()
        .map(PaymentAttempt::try_from)
        .collect()
    }
}
