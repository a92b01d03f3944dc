//! Begin payment and finalize on PostgreSQL in one round trip each (`fg_begin_payment`,
//! migration 0005; `fg_finalize`, 0007): the same checks, locks and writes as SQLite's
//! statement-by-statement path in `payment`, answered with which outcome happened.

use crate::Error;
use crate::failpoint::{self, Point};
use crate::ids::{self, AttemptId, HoldId, SessionId, trusted};
use crate::payment::Finalized;
use crate::store::{Store, Tx};
use crate::views::{AttemptState, Order, PaymentAttempt, seat_list};

/// The `fg_paying_answer` row.
#[derive(sqlx::FromRow)]
struct Answer {
    outcome: String,
    event_id: Option<String>,
    amount_cents: Option<i64>,
    currency: Option<String>,
    created_ms: Option<i64>,
    resolve_by_ms: Option<i64>,
    abandon_at_ms: Option<i64>,
}

fn missing(column: &str) -> Error {
    Error::Storage(sqlx::Error::ColumnNotFound(column.into()))
}

impl Store {
    pub(crate) async fn begin_payment_pg(
        &self,
        session: &SessionId,
        hold: &HoldId,
        payment_method: &str,
        return_url: Option<&str>,
    ) -> Result<PaymentAttempt, Error> {
        let attempt_id = ids::generate("pa");
        // `fetch_all`, never `fetch_one`: sqlx's Any driver answers `fetch_one` at the first
        // row, before PostgreSQL has committed the statement, and the caller's next step (on
        // another connection) could miss what this one wrote.
        let answer =
            sqlx::query_as::<_, Answer>("select * from fg_begin_payment($1, $2, $3, $4, $5)")
                .bind(session.as_str())
                .bind(hold.as_str())
                .bind(&attempt_id)
                .bind(payment_method)
                .bind(return_url)
                .fetch_all(&self.pool)
                .await
                .and_then(crate::hold_pg::first);
        let a = match answer {
            Ok(a) => a,
            // The seats stopped being ours and unexpired under their row locks.
            Err(sqlx::Error::Database(db)) if db.code().as_deref() == Some("FG002") => {
                return Err(Error::HoldExpired);
            }
            Err(e) => return Err(e.into()),
        };
        match a.outcome.as_str() {
            "paying" => {}
            "not_found" => return Err(Error::HoldNotFound),
            "not_owner" => return Err(Error::NotOwner),
            "in_progress" => return Err(Error::PaymentInProgress),
            "expired" => return Err(Error::HoldExpired),
            other => {
                return Err(Error::Storage(sqlx::Error::Decode(
                    format!("unknown begin-payment outcome {other:?}").into(),
                )));
            }
        }
        let event_id = a.event_id.ok_or_else(|| missing("event_id"))?;
        failpoint::hit(Point::AfterPayingCommitted, &event_id).await?;
        Ok(PaymentAttempt {
            attempt_id: trusted(attempt_id)?,
            hold_id: hold.clone(),
            event_id: trusted(event_id)?,
            amount_cents: a.amount_cents.ok_or_else(|| missing("amount_cents"))?,
            currency: a.currency.ok_or_else(|| missing("currency"))?,
            payment_method: payment_method.to_owned(),
            state: AttemptState::Pending,
            provider_payment_id: None,
            last_error: None,
            created_at_ms: a.created_ms.ok_or_else(|| missing("created_ms"))?,
            resolve_by_ms: a.resolve_by_ms.ok_or_else(|| missing("resolve_by_ms"))?,
            abandon_at_ms: a.abandon_at_ms.ok_or_else(|| missing("abandon_at_ms"))?,
            return_url: return_url.map(str::to_owned),
        })
    }
}

/// The `fg_finalize_answer` row.
#[derive(sqlx::FromRow)]
struct Finalizing {
    outcome: String,
    order_id: Option<String>,
    event_id: Option<String>,
    hold_id: Option<String>,
    attempt_id: Option<String>,
    seats: Option<String>,
    total_cents: Option<i64>,
    status: Option<String>,
    payment_status: Option<String>,
    created_at_ms: Option<i64>,
}

const FINALIZE_SQL: &str = "select * from fg_finalize($1, $2, $3)";

impl Finalizing {
    fn finalized(self) -> Result<Finalized, Error> {
        match self.outcome.as_str() {
            "confirmed" => {}
            "lost" => return Ok(Finalized::SeatLost),
            "no_attempt" => return Err(Error::AttemptNotFound),
            "no_hold" => return Err(Error::HoldNotFound),
            other => {
                return Err(Error::Storage(sqlx::Error::Decode(
                    format!("unknown finalize outcome {other:?}").into(),
                )));
            }
        }
        Ok(Finalized::Confirmed(Order {
            order_id: trusted(self.order_id.ok_or_else(|| missing("order_id"))?)?,
            event_id: trusted(self.event_id.ok_or_else(|| missing("event_id"))?)?,
            hold_id: trusted(self.hold_id.ok_or_else(|| missing("hold_id"))?)?,
            attempt_id: trusted(self.attempt_id.ok_or_else(|| missing("attempt_id"))?)?,
            seats: seat_list(self.seats.as_deref().ok_or_else(|| missing("seats"))?)?,
            total_cents: self.total_cents.ok_or_else(|| missing("total_cents"))?,
            status: self.status.ok_or_else(|| missing("status"))?,
            payment_status: self
                .payment_status
                .ok_or_else(|| missing("payment_status"))?,
            created_at_ms: self.created_at_ms.ok_or_else(|| missing("created_at_ms"))?,
        }))
    }
}

impl Store {
    /// `finalize` on PostgreSQL: one statement, committed on its own. While a test has armed
    /// the point just before finalize's commit, the same statement runs inside a transaction
    /// instead, so a crash there still rolls the sale back.
    pub(crate) async fn finalize_pg(
        &self,
        attempt: &AttemptId,
        provider_payment_id: Option<&str>,
    ) -> Result<Finalized, Error> {
        if failpoint::armed(Point::BeforeFinalizeCommit) {
            let mut tx = self.begin().await?;
            let done = self
                .finalize_pg_in(&mut tx, attempt, provider_payment_id)
                .await?;
            tx.commit().await?;
            return Ok(done);
        }
        // `fetch_all`: the answer arrives only once the statement has committed.
        sqlx::query_as::<_, Finalizing>(FINALIZE_SQL)
            .bind(attempt.as_str())
            .bind(provider_payment_id)
            .bind(ids::generate("o"))
            .fetch_all(&self.pool)
            .await
            .and_then(crate::hold_pg::first)?
            .finalized()
    }

    /// `finalize_in` on PostgreSQL: the same statement inside the caller's transaction.
    pub(crate) async fn finalize_pg_in(
        &self,
        tx: &mut Tx,
        attempt: &AttemptId,
        provider_payment_id: Option<&str>,
    ) -> Result<Finalized, Error> {
        let order_id = ids::generate("o");
        let done = sqlx::query_as::<_, Finalizing>(FINALIZE_SQL)
            .bind(attempt.as_str())
            .bind(provider_payment_id)
            .bind(&order_id)
            .fetch_all(&mut **tx)
            .await
            .and_then(crate::hold_pg::first)?
            .finalized()?;
        // Only a sale made now (not a repeat answered with the stored order) reaches the point.
        if let Finalized::Confirmed(order) = &done
            && order.order_id.as_str() == order_id
        {
            // Dropping `tx` here (a crash) rolls the whole sale back: the row still says paying.
            failpoint::hit(Point::BeforeFinalizeCommit, order.event_id.as_str()).await?;
        }
        Ok(done)
    }
}
