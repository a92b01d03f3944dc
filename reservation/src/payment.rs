//! The payment saga's database steps: begin (held→paying), finalize (paying→sold), decline
//! (paying→held) and abandon (paying→available). Provider calls happen elsewhere, after commit.

use crate::Error;
use crate::dialect::Dialect;
use crate::failpoint::{self, Point};
use crate::hold_life::HoldCtx;
use crate::ids::{self, AttemptId, HoldId, SessionId, trusted};
use crate::journal::Entry;
use crate::store::{Store, Tx};
use crate::views::{AttemptState, Order, PaymentAttempt, attempt_columns, order_columns};

/// The outcome of `finalize`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finalized {
    /// The order exists (made now, or by an earlier call: repeating is a no-op).
    Confirmed(Order),
    /// The seats no longer name this hold and attempt (abandoned, then taken): nothing was
    /// sold; the caller must void or refund the money.
    SeatLost,
}

/// Grace a declined buyer keeps to try another card (DESIGN §4), capped by `max_hold_s`.
const DECLINE_GRACE_MS: i64 = 120_000;

impl Store {
    /// Moves the owner's live hold to `paying` and records the attempt and its `authorize`
    /// outbox row, all in one transaction: no money is asked for a hold that could not pay.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(hold = %hold))]
    pub async fn begin_payment(
        &self,
        session: &SessionId,
        hold: &HoldId,
        payment_method: &str,
    ) -> Result<PaymentAttempt, Error> {
        self.begin_payment_returning(session, hold, payment_method, None)
            .await
    }

    /// `begin_payment` with the page the provider sends the buyer back to when the card asks
    /// for authentication (3-D Secure).
    pub async fn begin_payment_returning(
        &self,
        session: &SessionId,
        hold: &HoldId,
        payment_method: &str,
        return_url: Option<&str>,
    ) -> Result<PaymentAttempt, Error> {
        match self.dialect {
            Dialect::Postgres => {
                self.retrying(|| self.begin_payment_pg(session, hold, payment_method, return_url))
                    .await
            }
            Dialect::Sqlite => {
                self.retrying(|| self.begin_payment_once(session, hold, payment_method, return_url))
                    .await
            }
        }
    }

    async fn begin_payment_once(
        &self,
        session: &SessionId,
        hold: &HoldId,
        payment_method: &str,
        return_url: Option<&str>,
    ) -> Result<PaymentAttempt, Error> {
        let mut tx = self.begin().await?;
        let h = self.owned_held(&mut tx, session, hold).await?;
        self.lock_seats(&mut tx, &h.event_id, &h.seats).await?;
        let attempt_id = ids::generate("pa");
        // Judged again under the row locks by the clock at this instant: a rival may take
        // an expired seat, so only rows still ours and unexpired may enter `paying`.
        let paying = sqlx::query(self.sql(
            "update seats set state = 'paying', payment_attempt_id = $3, version = version + 1 \
             where event_id = $1 and hold_id = $2 and state = 'held' and hold_expires_at > NOW",
        ))
        .bind(&h.event_id)
        .bind(&h.hold_id)
        .bind(&attempt_id)
        .execute(&mut *tx)
        .await?;
        if paying.rows_affected() != h.seat_count as u64 {
            return Err(Error::HoldExpired);
        }
        sqlx::query("update holds set state = 'paying' where hold_id = $1 and state = 'held'")
            .bind(&h.hold_id)
            .execute(&mut *tx)
            .await?;
        let attempt = self
            .insert_attempt(&mut tx, &h, &attempt_id, payment_method, return_url)
            .await?;
        tx.commit().await?;
        failpoint::hit(Point::AfterPayingCommitted, &h.event_id).await?;
        Ok(attempt)
    }

    async fn insert_attempt(
        &self,
        tx: &mut Tx,
        h: &HoldCtx,
        attempt_id: &str,
        payment_method: &str,
        return_url: Option<&str>,
    ) -> Result<PaymentAttempt, Error> {
        let resolve_by_ms = h.now_ms + h.resolve_s * 1000;
        let abandon_at_ms = h.now_ms + h.abandon_s * 1000;
        sqlx::query(self.sql(
            "insert into payment_attempts (attempt_id, hold_id, event_id, amount_cents, currency, \
             payment_method, state, created_at, resolve_by, abandon_at, return_url) \
             values ($1, $2, $3, $4, $5, $6, 'pending', TS($7), TS($8), TS($9), $10)",
        ))
        .bind(attempt_id)
        .bind(&h.hold_id)
        .bind(&h.event_id)
        .bind(h.total_cents)
        .bind(&h.currency)
        .bind(payment_method)
        .bind(h.now_ms)
        .bind(resolve_by_ms)
        .bind(abandon_at_ms)
        .bind(return_url)
        .execute(&mut **tx)
        .await?;
        self.log(
            tx,
            Entry {
                event_id: &h.event_id,
                kind: "PaymentInitiated",
                hold_id: Some(&h.hold_id),
                attempt_id: Some(attempt_id),
                seats: Some(&h.seats),
                ..Entry::default()
            },
        )
        .await?;
        let payload = serde_json::json!({
            "attempt_id": attempt_id, "hold_id": h.hold_id, "amount_cents": h.total_cents,
            "currency": h.currency, "payment_method": payment_method,
        });
        self.outbox(
            tx,
            "authorize",
            &h.event_id,
            Some(attempt_id),
            Some(&h.hold_id),
            &payload,
        )
        .await?;
        Ok(PaymentAttempt {
            attempt_id: trusted(attempt_id.to_owned())?,
            hold_id: trusted(h.hold_id.clone())?,
            event_id: trusted(h.event_id.clone())?,
            amount_cents: h.total_cents,
            currency: h.currency.clone(),
            payment_method: payment_method.to_owned(),
            state: AttemptState::Pending,
            provider_payment_id: None,
            last_error: None,
            created_at_ms: h.now_ms,
            resolve_by_ms,
            abandon_at_ms,
            return_url: return_url.map(str::to_owned),
        })
    }

    /// The attempt and its hold, for the steps that start from an attempt id.
    async fn attempt_ctx(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
    ) -> Result<(PaymentAttempt, HoldCtx), Error> {
        let a = self.attempt_in(tx, attempt).await?;
        let h = self.hold_ctx(tx, a.hold_id.as_str()).await?;
        Ok((a, h))
    }

    /// Locks the seats of the attempt's hold, in seat order. Every step that changes both an
    /// attempt and its seats in one transaction takes the seats first (as `finalize`,
    /// `decline` and `abandon` do), so two such steps queue instead of deadlocking.
    pub(crate) async fn lock_attempt_seats(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
    ) -> Result<(), Error> {
        let (_, h) = self.attempt_ctx(tx, attempt).await?;
        self.lock_seats(tx, &h.event_id, &h.seats).await
    }

    pub(crate) async fn order_of_attempt(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
    ) -> Result<Option<Order>, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            order_columns!(),
            " from orders where attempt_id = $1"
        )))
        .bind(attempt.as_str())
        .fetch_optional(&mut **tx)
        .await?
        .map(Order::try_from)
        .transpose()
    }

    /// paying→sold with the order and sales rows, only if every seat still names this hold
    /// and attempt; queues the capture. A repeat returns the stored order.
    #[tracing::instrument(skip_all, err, fields(attempt = %attempt))]
    pub async fn finalize(
        &self,
        attempt: &AttemptId,
        provider_payment_id: Option<&str>,
    ) -> Result<Finalized, Error> {
        if self.dialect == Dialect::Postgres {
            return self
                .retrying(|| self.finalize_pg(attempt, provider_payment_id))
                .await;
        }
        self.retrying(|| self.finalize_once(attempt, provider_payment_id))
            .await
    }

    async fn finalize_once(
        &self,
        attempt: &AttemptId,
        provider_payment_id: Option<&str>,
    ) -> Result<Finalized, Error> {
        let mut tx = self.begin().await?;
        let done = self
            .finalize_in(&mut tx, attempt, provider_payment_id)
            .await?;
        tx.commit().await?;
        Ok(done)
    }

    /// `finalize` inside the caller's transaction (webhook intake records the provider's
    /// event id in the same one). Writes nothing unless it sells.
    pub(crate) async fn finalize_in(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        provider_payment_id: Option<&str>,
    ) -> Result<Finalized, Error> {
        if self.dialect == Dialect::Postgres {
            return self.finalize_pg_in(tx, attempt, provider_payment_id).await;
        }
        let (a, h) = self.attempt_ctx(tx, attempt).await?;
        if let Some(order) = self.order_of_attempt(tx, attempt).await? {
            return Ok(Finalized::Confirmed(order));
        }
        self.lock_seats(tx, &h.event_id, &h.seats).await?;
        // Read again under the seat locks: a decline or abandon that committed while we waited
        // has closed the attempt, and a closed attempt never sells.
        if !is_open(self.attempt_state(tx, attempt).await?) {
            return Ok(match self.order_of_attempt(tx, attempt).await? {
                Some(order) => Finalized::Confirmed(order),
                None => Finalized::SeatLost,
            });
        }
        let order_id = ids::generate("o");
        // All of the hold's seats or none: the count guard keeps a partial sale from being
        // written in a transaction that goes on to queue the void.
        let sold = sqlx::query(
            "update seats set state = 'sold', order_id = $4, version = version + 1 \
             where event_id = $1 and hold_id = $2 and payment_attempt_id = $3 and state = 'paying' \
             and (select count(*) from seats where event_id = $1 and hold_id = $2 \
                  and payment_attempt_id = $3 and state = 'paying') = $5",
        )
        .bind(&h.event_id)
        .bind(&h.hold_id)
        .bind(a.attempt_id.as_str())
        .bind(&order_id)
        .bind(h.seat_count as i64)
        .execute(&mut **tx)
        .await?;
        if sold.rows_affected() != h.seat_count as u64 {
            // A concurrent finalize of the same attempt may have just won (its commit released
            // the seat locks we waited on): that is not a loss.
            return Ok(match self.order_of_attempt(tx, attempt).await? {
                Some(order) => Finalized::Confirmed(order),
                None => Finalized::SeatLost,
            });
        }
        sqlx::query(
            "insert into orders (order_id, event_id, hold_id, attempt_id, seats, total_cents, status, payment_status) \
             values ($1, $2, $3, $4, $5, $6, 'confirmed', 'authorized')",
        )
        .bind(&order_id)
        .bind(&h.event_id)
        .bind(&h.hold_id)
        .bind(a.attempt_id.as_str())
        .bind(&h.seats)
        .bind(h.total_cents)
        .execute(&mut **tx)
        .await?;
        // The second fence: sales is unique on (event_id, seat_id) whatever the seats row says.
        sqlx::query(self.sql(
            "insert into sales (event_id, seat_id, order_id) \
             select $1, value, $2 from JSON_EACH($3)",
        ))
        .bind(&h.event_id)
        .bind(&order_id)
        .bind(&h.seats)
        .execute(&mut **tx)
        .await?;
        sqlx::query(self.sql("update holds set state = 'confirmed', order_id = $2, ended_at = NOW where hold_id = $1"))
            .bind(&h.hold_id)
            .bind(&order_id)
            .execute(&mut **tx)
            .await?;
        let confirmed = sqlx::query(self.sql(
            "update payment_attempts set state = 'confirmed', \
             provider_payment_id = coalesce($2, provider_payment_id), updated_at = NOW \
             where attempt_id = $1 and state in ('pending', 'ambiguous', 'authorized')",
        ))
        .bind(a.attempt_id.as_str())
        .bind(provider_payment_id)
        .execute(&mut **tx)
        .await?;
        if confirmed.rows_affected() != 1 {
            // Every close takes the seat locks we hold, so this cannot happen; if it did, the
            // caller's transaction must not commit a sale of a closed attempt.
            return Err(Error::Storage(sqlx::Error::Protocol(
                "payment attempt closed under the seat locks".into(),
            )));
        }
        self.log(
            tx,
            Entry {
                event_id: &h.event_id,
                kind: "ReservationConfirmed",
                hold_id: Some(&h.hold_id),
                attempt_id: Some(a.attempt_id.as_str()),
                order_id: Some(&order_id),
                seats: Some(&h.seats),
                ..Entry::default()
            },
        )
        .await?;
        let payload = serde_json::json!({
            "attempt_id": a.attempt_id, "order_id": order_id, "amount_cents": a.amount_cents,
            "provider_payment_id": provider_payment_id,
        });
        self.outbox(
            tx,
            "capture",
            &h.event_id,
            Some(a.attempt_id.as_str()),
            Some(&h.hold_id),
            &payload,
        )
        .await?;
        self.end_hold_session(tx, &h.event_id, &h.session_id, &h.hold_id, "confirmed")
            .await?;
        let order = self
            .order_of_attempt(tx, attempt)
            .await?
            .ok_or(Error::AttemptNotFound)?;
        // Dropping `tx` here (a crash) rolls the whole sale back: the row still says paying.
        failpoint::hit(Point::BeforeFinalizeCommit, &h.event_id).await?;
        Ok(Finalized::Confirmed(order))
    }

    /// The provider declined: the seats go back to `held` under the same hold for at least
    /// two minutes (capped by `max_hold_s`) so the buyer can retry with a new attempt.
    /// A no-op on an attempt that is already final. Returns the attempt as stored.
    #[tracing::instrument(skip_all, err, fields(attempt = %attempt))]
    pub async fn decline(
        &self,
        attempt: &AttemptId,
        reason: &str,
    ) -> Result<PaymentAttempt, Error> {
        self.retrying(|| self.decline_once(attempt, reason)).await
    }

    async fn decline_once(
        &self,
        attempt: &AttemptId,
        reason: &str,
    ) -> Result<PaymentAttempt, Error> {
        let mut tx = self.begin().await?;
        let a = self.decline_in(&mut tx, attempt, reason).await?;
        tx.commit().await?;
        Ok(a)
    }

    /// `decline` inside the caller's transaction.
    pub(crate) async fn decline_in(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        reason: &str,
    ) -> Result<PaymentAttempt, Error> {
        let (a, h) = self.attempt_ctx(tx, attempt).await?;
        if !is_open(a.state) {
            return Ok(a);
        }
        self.lock_seats(tx, &h.event_id, &h.seats).await?;
        // The close decides, judged again under the seat locks: a finalize that committed while
        // we waited has sold the seats, and its order stands untouched.
        let Some(a) = self
            .close_attempt(tx, &a.attempt_id, "declined", Some(reason))
            .await?
        else {
            return self.attempt_in(tx, attempt).await;
        };
        let until = h
            .expires_at_ms
            .max(h.now_ms + DECLINE_GRACE_MS)
            .min(h.max_expires_at_ms);
        sqlx::query(self.sql(
            "update seats set state = 'held', payment_attempt_id = null, hold_expires_at = TS($4), \
             version = version + 1 \
             where event_id = $1 and hold_id = $2 and payment_attempt_id = $3 and state = 'paying'",
        ))
        .bind(&h.event_id)
        .bind(&h.hold_id)
        .bind(a.attempt_id.as_str())
        .bind(until)
        .execute(&mut **tx)
        .await?;
        sqlx::query(self.sql(
            "update holds set state = 'held', expires_at = TS($2), last_payment_error = $3 \
             where hold_id = $1 and state = 'paying'",
        ))
        .bind(&h.hold_id)
        .bind(until)
        .bind(reason)
        .execute(&mut **tx)
        .await?;
        self.log(
            tx,
            Entry {
                event_id: &h.event_id,
                kind: "PaymentDeclined",
                hold_id: Some(&h.hold_id),
                attempt_id: Some(a.attempt_id.as_str()),
                detail: Some(serde_json::json!({ "reason": reason }).to_string()),
                ..Entry::default()
            },
        )
        .await?;
        Ok(a)
    }

    /// Policy release at `abandon_at` (after the caller voided the authorization): the seats
    /// go back on sale, the attempt and hold end `abandoned`. A no-op on a final attempt.
    #[tracing::instrument(skip_all, err, fields(attempt = %attempt))]
    pub async fn abandon(&self, attempt: &AttemptId) -> Result<PaymentAttempt, Error> {
        self.retrying(|| self.abandon_once(attempt)).await
    }

    async fn abandon_once(&self, attempt: &AttemptId) -> Result<PaymentAttempt, Error> {
        let mut tx = self.begin().await?;
        let (a, h) = self.attempt_ctx(&mut tx, attempt).await?;
        if !is_open(a.state) {
            return Ok(a);
        }
        self.lock_seats(&mut tx, &h.event_id, &h.seats).await?;
        // The close decides, judged again under the seat locks: a finalize (or decline) that
        // committed while we waited stands, and no seat it sold or gave back is freed.
        let Some(a) = self
            .close_attempt(&mut tx, &a.attempt_id, "abandoned", None)
            .await?
        else {
            let stored = self.attempt_in(&mut tx, attempt).await?;
            tx.commit().await?;
            return Ok(stored);
        };
        self.stamp_events(&mut tx, [h.event_id.as_str()]).await?;
        sqlx::query(self.sql(
            "update seats set state = 'available', hold_id = null, hold_expires_at = null, \
             payment_attempt_id = null, version = version + 1, availability_version = SEAT_STAMP \
             where event_id = $1 and payment_attempt_id = $2 and state = 'paying'",
        ))
        .bind(&h.event_id)
        .bind(a.attempt_id.as_str())
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            self.sql("update holds set state = 'abandoned', ended_at = NOW where hold_id = $1 and state = 'paying'"),
        )
        .bind(&h.hold_id)
        .execute(&mut *tx)
        .await?;
        self.log(
            &mut tx,
            Entry {
                event_id: &h.event_id,
                kind: "PaymentAbandoned",
                hold_id: Some(&h.hold_id),
                attempt_id: Some(a.attempt_id.as_str()),
                seats: Some(&h.seats),
                ..Entry::default()
            },
        )
        .await?;
        self.end_hold_session(&mut tx, &h.event_id, &h.session_id, &h.hold_id, "abandoned")
            .await?;
        tx.commit().await?;
        Ok(a)
    }

    /// The attempt's state as this transaction sees it now.
    async fn attempt_state(&self, tx: &mut Tx, attempt: &AttemptId) -> Result<AttemptState, Error> {
        Ok(self.attempt_in(tx, attempt).await?.state)
    }

    /// The attempt as stored, read inside `tx`.
    async fn attempt_in(&self, tx: &mut Tx, attempt: &AttemptId) -> Result<PaymentAttempt, Error> {
        sqlx::query(self.sql(concat!(
            "select ",
            attempt_columns!(),
            " from payment_attempts where attempt_id = $1"
        )))
        .bind(attempt.as_str())
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(Error::AttemptNotFound)?
        .try_into()
    }

    /// Closes an attempt that is still open, deciding on the row itself: `None` when it was
    /// already final (a rival step won), and then nothing else may be written.
    async fn close_attempt(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        state: &str,
        error: Option<&str>,
    ) -> Result<Option<PaymentAttempt>, Error> {
        let closed = sqlx::query(self.sql(concat!(
            "update payment_attempts set state = $2, last_error = coalesce($3, last_error), updated_at = NOW \
             where attempt_id = $1 and state in ('pending', 'ambiguous', 'authorized') returning ",
            attempt_columns!()
        )))
        .bind(attempt.as_str())
        .bind(state)
        .bind(error)
        .fetch_all(&mut **tx)
        .await?;
        let Some(row) = closed.into_iter().next() else {
            return Ok(None);
        };
        let closed: PaymentAttempt = row.try_into()?;
        // Its authorize job, if it waits to try again, is owed nothing now: it will only look
        // for money a timed-out request may still create, which is not backlog.
        sqlx::query(
            "update outbox set watching = 1 \
             where attempt_id = $1 and kind = 'authorize' and done_at is null",
        )
        .bind(attempt.as_str())
        .execute(&mut **tx)
        .await?;
        Ok(Some(closed))
    }
}

fn is_open(s: AttemptState) -> bool {
    matches!(
        s,
        AttemptState::Pending | AttemptState::Ambiguous | AttemptState::Authorized
    )
}
