//! Holds on PostgreSQL in one round trip: the server-side functions of migration 0005 run the
//! session checks, the row locks, the conditional update, the hold row and its log line, and
//! answer with which outcome happened. Each outcome maps to the same typed error as SQLite's
//! statement-by-statement path in `hold`.

use crate::Error;
use crate::ids::{self, SeatId, SessionId, trusted};
use crate::store::Store;
use crate::views::{Hold, HoldState};

/// The `fg_hold_answer` row.
#[derive(sqlx::FromRow)]
struct Answer {
    outcome: String,
    seats: Option<String>,
    event_id: Option<String>,
    max_seats: Option<i64>,
    total_cents: Option<i64>,
    created_ms: Option<i64>,
    expires_ms: Option<i64>,
    max_expires_ms: Option<i64>,
}

/// Named seats in one statement. Its first part is a plain read: a buyer of a seat someone
/// else owns is answered `taken` from it, with no lock, no write and no function call (a
/// seat seen owned now may free up a moment later, the same answer as losing the race). Only
/// when every seat looks free does `fg_hold_free` run, and it decides under the row locks.
/// `offset 0` keeps the `case` in its own subquery, so the function runs at most once. The
/// bench sends the same text raw as its baseline.
pub const HOLD_SQL: &str = "select (r).outcome, (r).seats, (r).event_id, (r).max_seats, \
     (r).total_cents, (r).created_ms, (r).expires_ms, (r).max_expires_ms \
     from (select case when cardinality(busy.seats) = 0 then fg_hold_free($1, $2, $3, $4) \
                  else row('taken', array_to_json(busy.seats)::text, null, null, null, null, \
                           null, null)::fg_hold_answer end as r \
           from (select array(select seat_id from seats \
                    where event_id = (select event_id from admission_sessions \
                                      where session_id = $1 and ended_at is null \
                                        and expires_at > clock_timestamp()) \
                      and seat_id = any(array(select jsonb_array_elements_text($2::jsonb))) \
                      and not (state = 'available' \
                               or (state = 'held' and hold_expires_at <= clock_timestamp())) \
                    order by seat_id) as seats) busy \
           offset 0) answer";
const HOLD_GA_SQL: &str = "select * from fg_hold_ga_locked($1, $2, $3, $4, $5)";

/// A seat list the server wrote.
fn seat_list(json: Option<&str>) -> Result<Vec<SeatId>, Error> {
    let ids: Vec<String> = serde_json::from_str(json.unwrap_or("[]"))?;
    ids.into_iter().map(trusted).collect()
}

/// The one row a function call answers with.
pub(crate) fn first<T>(rows: Vec<T>) -> Result<T, sqlx::Error> {
    rows.into_iter().next().ok_or(sqlx::Error::RowNotFound)
}

fn missing(column: &str) -> Error {
    Error::Storage(sqlx::Error::ColumnNotFound(column.into()))
}

impl Store {
    /// `hold` on PostgreSQL: `sorted` are distinct seat ids, `json` their JSON array.
    pub(crate) async fn hold_pg(
        &self,
        session: &SessionId,
        sorted: &[SeatId],
        json: &str,
    ) -> Result<Hold, Error> {
        let hold_id = ids::generate("h");
        let receipt_key = self.receipts.issue();
        // `fetch_all`, never `fetch_one`: sqlx's Any driver answers `fetch_one` at the first
        // row, before PostgreSQL has committed the statement, and the caller's next step (on
        // another connection) could miss what this one wrote.
        let answer = sqlx::query_as::<_, Answer>(HOLD_SQL)
            .bind(session.as_str())
            .bind(json)
            .bind(&hold_id)
            .bind(&receipt_key)
            .fetch_all(&self.pool)
            .await
            .and_then(first);
        let answer = match answer {
            Err(e) => return Err(taking_failed(e, sorted)),
            Ok(a) => a,
        };
        self.answered(answer, session, hold_id, receipt_key).await
    }

    /// One try of `hold_ga` on PostgreSQL: the hold, or `None` when it found too few free
    /// unlocked rows this time.
    pub(crate) async fn hold_ga_pg(
        &self,
        session: &SessionId,
        section: &str,
        quantity: u32,
    ) -> Result<Option<Hold>, Error> {
        let hold_id = ids::generate("h");
        let receipt_key = self.receipts.issue();
        let answer = sqlx::query_as::<_, Answer>(HOLD_GA_SQL)
            .bind(session.as_str())
            .bind(section)
            .bind(i32::try_from(quantity).unwrap_or(i32::MAX))
            .bind(&hold_id)
            .bind(&receipt_key)
            .fetch_all(&self.pool)
            .await
            .and_then(first);
        let answer = match answer {
            Err(e) => return Err(taking_failed(e, &[])),
            Ok(a) => a,
        };
        if answer.outcome == "short" {
            return Ok(None);
        }
        self.answered(answer, session, hold_id, receipt_key)
            .await
            .map(Some)
    }

    /// The typed result of a hold answer.
    async fn answered(
        &self,
        a: Answer,
        session: &SessionId,
        hold_id: String,
        receipt_key: String,
    ) -> Result<Hold, Error> {
        match a.outcome.as_str() {
            "held" => {}
            "taken" => {
                return Err(Error::SeatUnavailable {
                    seats: seat_list(a.seats.as_deref())?,
                });
            }
            "unknown" => {
                return Err(Error::UnknownSeats {
                    seats: seat_list(a.seats.as_deref())?,
                });
            }
            "no_session" => return Err(Error::SessionNotFound),
            "ended" => return Err(Error::SessionEnded),
            "limit" => return Err(Error::HoldLimit),
            "too_many" => {
                return Err(Error::TooManySeats {
                    max: a.max_seats.ok_or_else(|| missing("max_seats"))?,
                });
            }
            other => {
                return Err(Error::Storage(sqlx::Error::Decode(
                    format!("unknown hold outcome {other:?}").into(),
                )));
            }
        }
        let event_id = a.event_id.ok_or_else(|| missing("event_id"))?;
        crate::failpoint::hit(crate::failpoint::Point::AfterHold, &event_id).await?;
        Ok(Hold {
            hold_id: trusted(hold_id)?,
            event_id: trusted(event_id)?,
            session_id: session.clone(),
            receipt_key,
            state: HoldState::Held,
            seats: seat_list(a.seats.as_deref())?,
            total_cents: a.total_cents.ok_or_else(|| missing("total_cents"))?,
            created_at_ms: a.created_ms.ok_or_else(|| missing("created_ms"))?,
            expires_at_ms: a.expires_ms.ok_or_else(|| missing("expires_ms"))?,
            max_expires_at_ms: a.max_expires_ms.ok_or_else(|| missing("max_expires_ms"))?,
            order_id: None,
            last_payment_error: None,
        })
    }
}

/// A failed call: a rival tab's hold (the one-live-hold index) is `HoldLimit`; seats changed
/// under their locks (never expected) is the seats being unavailable; the rest is storage.
fn taking_failed(e: sqlx::Error, seats: &[SeatId]) -> Error {
    if crate::error::is_live_hold_conflict(&e) {
        return Error::HoldLimit;
    }
    if let sqlx::Error::Database(db) = &e
        && db.code().as_deref() == Some("FG001")
    {
        return Error::SeatUnavailable {
            seats: seats.to_vec(),
        };
    }
    Error::Storage(e)
}
