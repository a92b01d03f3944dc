//! Admission sessions: one per ticket, recorded when a buyer claims an offer.

use crate::Error;
use crate::dialect::Dialect;
use crate::ids::{self, EventId, SessionId, TicketId};
use crate::store::Store;

/// An admission session as stored.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Session {
    #[sqlx(try_from = "String")]
    pub session_id: SessionId,
    #[sqlx(try_from = "String")]
    pub event_id: EventId,
    #[sqlx(try_from = "String")]
    pub ticket_id: TicketId,
    pub queue_place: Option<i64>,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
    pub ended_at_ms: Option<i64>,
    pub end_reason: Option<String>,
    /// True only on the `open_session` call that inserted the row.
    #[sqlx(skip)]
    pub created: bool,
}

/// A claimed session and whether this claim inserted it.
#[derive(sqlx::FromRow)]
struct Claimed {
    #[sqlx(flatten)]
    session: Session,
    created: bool,
}

/// The session columns as the Rust shape reads them, followed by a where clause.
macro_rules! select_session {
    ($clause:literal) => {
        concat!(
            "select session_id, event_id, ticket_id, queue_place, MS(created_at) as created_at_ms, \
             MS(expires_at) as expires_at_ms, MS(ended_at) as ended_at_ms, end_reason \
             from admission_sessions ",
            $clause
        )
    };
}

impl Store {
    /// Records the session of a ticket, or returns the one it already has (claiming twice
    /// returns the same session: the unique (event, ticket) index decides, not a prior read).
    #[tracing::instrument(skip_all, err, fields(event = %event, ticket = %ticket))]
    pub async fn open_session(
        &self,
        event: &EventId,
        ticket: &TicketId,
        queue_place: Option<i64>,
        session_s: i64,
    ) -> Result<Session, Error> {
        if self.dialect == Dialect::Postgres {
            return self.claim_pg(event, ticket, queue_place, session_s).await;
        }
        self.get_event(event).await?;
        let id = ids::generate("s");
        let mut tx = self.begin().await?;
        let inserted = sqlx::query(self.sql(
            "insert into admission_sessions (session_id, event_id, ticket_id, queue_place, expires_at) \
             values ($1, $2, $3, $4, NOW + MSEC($5)) on conflict (event_id, ticket_id) do nothing",
        ))
        .bind(&id)
        .bind(event.as_str())
        .bind(ticket.as_str())
        .bind(queue_place)
        .bind(session_s.saturating_mul(1000))
        .execute(&mut *tx)
        .await?;
        let mut session = sqlx::query_as::<_, Session>(
            self.sql(select_session!("where event_id = $1 and ticket_id = $2")),
        )
        .bind(event.as_str())
        .bind(ticket.as_str())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        session.created = inserted.rows_affected() == 1;
        Ok(session)
    }

    /// `open_session` on PostgreSQL in one statement: insert the session of the ticket, or
    /// read the one it has. Only when neither returns a row (no such event, or a claim of the
    /// same ticket committed after this statement began) does it look again.
    async fn claim_pg(
        &self,
        event: &EventId,
        ticket: &TicketId,
        queue_place: Option<i64>,
        session_s: i64,
    ) -> Result<Session, Error> {
        // `fetch_all`, never `fetch_one`: sqlx's Any driver answers `fetch_one` at the first
        // row, before PostgreSQL has committed the statement, and the caller's next step (on
        // another connection) could miss what this one wrote.
        let claimed = sqlx::query_as::<_, Claimed>(
            "with ins as ( \
               insert into admission_sessions (session_id, event_id, ticket_id, queue_place, expires_at) \
               select $1, $2, $3, $4, clock_timestamp() + fg_msec($5) \
               where exists (select 1 from events where event_id = $2) \
               on conflict (event_id, ticket_id) do nothing \
               returning session_id, event_id, ticket_id, queue_place, fg_ms(created_at) as created_at_ms, \
               fg_ms(expires_at) as expires_at_ms, fg_ms(ended_at) as ended_at_ms, end_reason) \
             select *, true as created from ins \
             union all \
             select session_id, event_id, ticket_id, queue_place, fg_ms(created_at), fg_ms(expires_at), \
             fg_ms(ended_at), end_reason, false from admission_sessions \
             where event_id = $2 and ticket_id = $3 and not exists (select 1 from ins)",
        )
        .bind(ids::generate("s"))
        .bind(event.as_str())
        .bind(ticket.as_str())
        .bind(queue_place)
        .bind(session_s.saturating_mul(1000))
        .fetch_all(&self.pool)
        .await?;
        if let Some(c) = claimed.into_iter().next() {
            let mut session = c.session;
            session.created = c.created;
            return Ok(session);
        }
        self.get_event(event).await?;
        sqlx::query_as::<_, Session>(
            self.sql(select_session!("where event_id = $1 and ticket_id = $2")),
        )
        .bind(event.as_str())
        .bind(ticket.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::SessionNotFound)
    }

    pub async fn get_session(&self, session: &SessionId) -> Result<Session, Error> {
        sqlx::query_as::<_, Session>(self.sql(select_session!("where session_id = $1")))
            .bind(session.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::SessionNotFound)
    }

    /// Ends a session (session time up, buyer left). Returns false if it had already ended.
    #[tracing::instrument(skip_all, err, fields(session = %session))]
    pub async fn end_session(&self, session: &SessionId, reason: &str) -> Result<bool, Error> {
        let done = sqlx::query(self.sql(
            "update admission_sessions set ended_at = NOW, end_reason = $2 \
             where session_id = $1 and ended_at is null",
        ))
        .bind(session.as_str())
        .bind(reason)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            self.get_session(session).await?;
            return Ok(false);
        }
        Ok(true)
    }
}
