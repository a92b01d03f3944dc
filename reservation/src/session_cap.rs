//! A session opened with the cap judged by the database itself: for admission without the
//! meter (pass-through offers everyone; fail-open admits while the queue backend is down), the
//! one place left that can count the buyers inside.

use crate::Error;
use crate::ids::{self, EventId, TicketId};
use crate::session::Session;
use crate::store::Store;

impl Store {
    /// The ticket's session: the one it has, or a new one if fewer than `max_active` sessions
    /// are live. `None`: the event is full (nothing written).
    #[tracing::instrument(skip_all, err, fields(event = %event, ticket = %ticket))]
    pub async fn open_session_capped(
        &self,
        event: &EventId,
        ticket: &TicketId,
        queue_place: Option<i64>,
        session_s: i64,
        max_active: i64,
    ) -> Result<Option<Session>, Error> {
        self.retrying(|| self.open_capped_once(event, ticket, queue_place, session_s, max_active))
            .await
    }

    async fn open_capped_once(
        &self,
        event: &EventId,
        ticket: &TicketId,
        queue_place: Option<i64>,
        session_s: i64,
        max_active: i64,
    ) -> Result<Option<Session>, Error> {
        let mut tx = self.begin().await?;
        // Capped inserts of one event take turns on its controls row: each counts the live
        // sessions only after the one before has committed, so concurrent claims cannot each
        // see the last free slot. (SQLite's write transaction already runs them one at a time.)
        let known = sqlx::query_scalar::<_, i64>(self.sql(
            "select cast(1 as bigint) from admission_controls where event_id = $1 FOR_UPDATE",
        ))
        .bind(event.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        if known.is_none() {
            return Err(Error::EventNotFound);
        }
        let inserted = sqlx::query(self.sql(
            "insert into admission_sessions (session_id, event_id, ticket_id, queue_place, expires_at) \
             select $1, $2, $3, $4, NOW + MSEC($5) \
             where (select count(*) from admission_sessions \
                    where event_id = $2 and ended_at is null and expires_at > NOW) < $6 \
             on conflict (event_id, ticket_id) do nothing",
        ))
        .bind(ids::generate("s"))
        .bind(event.as_str())
        .bind(ticket.as_str())
        .bind(queue_place)
        .bind(session_s.saturating_mul(1000))
        .bind(max_active)
        .execute(&mut *tx)
        .await?;
        let session = sqlx::query_as::<_, Session>(self.sql(
            "select session_id, event_id, ticket_id, queue_place, MS(created_at) as created_at_ms, \
             MS(expires_at) as expires_at_ms, MS(ended_at) as ended_at_ms, end_reason \
             from admission_sessions where event_id = $1 and ticket_id = $2",
        ))
        .bind(event.as_str())
        .bind(ticket.as_str())
        .fetch_optional(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(session.map(|mut s| {
            s.created = inserted.rows_affected() == 1;
            s
        }))
    }
}
