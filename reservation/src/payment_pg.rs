//! Begin payment on PostgreSQL in one round trip (`fg_begin_payment`, migration 0005): the
//! same checks, locks and writes as SQLite's statement-by-statement `begin_payment_once`,
//! answered with which outcome happened.

use crate::Error;
use crate::failpoint::{self, Point};
use crate::ids::{self, HoldId, SessionId, trusted};
use crate::store::Store;
use crate::views::{AttemptState, PaymentAttempt};

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
