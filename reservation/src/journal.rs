//! Appends to the reservation event log and the outbox, always inside the transaction that
//! made the change, so the log never disagrees with the rows.

use crate::Error;
use crate::store::{Store, Tx};

/// One line of the event log (DESIGN §4 kinds: `ReservationCreated`, `HoldExtended`, …).
#[derive(Default)]
pub(crate) struct Entry<'a> {
    pub event_id: &'a str,
    pub kind: &'static str,
    pub hold_id: Option<&'a str>,
    pub attempt_id: Option<&'a str>,
    pub order_id: Option<&'a str>,
    /// JSON array of seat ids.
    pub seats: Option<&'a str>,
    pub detail: Option<String>,
}

impl Store {
    pub(crate) async fn log(&self, tx: &mut Tx, e: Entry<'_>) -> Result<(), Error> {
        sqlx::query(
            "insert into reservation_events (event_id, kind, hold_id, attempt_id, order_id, seats, detail) \
             values ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(e.event_id)
        .bind(e.kind)
        .bind(e.hold_id)
        .bind(e.attempt_id)
        .bind(e.order_id)
        .bind(e.seats)
        .bind(e.detail)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    pub(crate) async fn outbox(
        &self,
        tx: &mut Tx,
        kind: &str,
        event_id: &str,
        attempt_id: Option<&str>,
        hold_id: Option<&str>,
        payload: &serde_json::Value,
    ) -> Result<(), Error> {
        sqlx::query("insert into outbox (kind, event_id, attempt_id, hold_id, payload) values ($1, $2, $3, $4, $5)")
            .bind(kind)
            .bind(event_id)
            .bind(attempt_id)
            .bind(hold_id)
            .bind(payload.to_string())
            .execute(&mut **tx)
            .await?;
        Ok(())
    }

    /// A hold reached a final state: its admission session ends and admission is told through
    /// the outbox (`session_ended`), so the slot goes back to the meter.
    pub(crate) async fn end_hold_session(
        &self,
        tx: &mut Tx,
        event_id: &str,
        session_id: &str,
        hold_id: &str,
        reason: &str,
    ) -> Result<(), Error> {
        sqlx::query(self.sql(
            "update admission_sessions set ended_at = NOW, end_reason = $2 \
             where session_id = $1 and ended_at is null",
        ))
        .bind(session_id)
        .bind(reason)
        .execute(&mut **tx)
        .await?;
        let payload = serde_json::json!({
            "session_id": session_id, "event_id": event_id, "hold_id": hold_id, "reason": reason,
        });
        self.outbox(tx, "session_ended", event_id, None, Some(hold_id), &payload)
            .await
    }
}
