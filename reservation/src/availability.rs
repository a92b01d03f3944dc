//! The versions of an event's seat availability, which let the stadium map ask for what
//! changed since the version it holds. Every transaction that moves seats between available
//! and taken (as buyers see them) stamps those seats; paying, selling, extending or a declined
//! card leave the stamp alone: the seat stays taken for buyers throughout.
//!
//! PostgreSQL stamps with the transaction's id and reads a version as the oldest transaction
//! still running, less one, so holds of one event never wait for each other's commits
//! (migration 0019). SQLite has one writer at a time: there each event counts its changes.

use crate::Error;
use crate::dialect::Dialect;
use crate::ids::EventId;
use crate::store::{Store, Tx};

impl Store {
    /// Readies `SEAT_STAMP` for the seats of `events` this transaction changes next: SQLite
    /// counts one change for each event; on PostgreSQL the stamp is the transaction's id and
    /// needs no statement.
    pub(crate) async fn stamp_events<'a>(
        &self,
        tx: &mut Tx,
        events: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), Error> {
        if self.dialect == Dialect::Postgres {
            return Ok(());
        }
        for event in events {
            sqlx::query(
                "update events set availability_version = availability_version + 1 \
                 where event_id = $1",
            )
            .bind(event)
            .execute(&mut **tx)
            .await?;
        }
        Ok(())
    }

    /// A version every change at or below which is visible to reads that start after it. Read
    /// it before the seats it describes: a change that commits in between is then sent twice
    /// (harmless) rather than never.
    pub async fn availability_version(&self, event: &EventId) -> Result<i64, Error> {
        let sql = match self.dialect {
            Dialect::Postgres => {
                "select pg_snapshot_xmin(pg_current_snapshot())::text::bigint - 1 \
                 from events where event_id = $1"
            }
            Dialect::Sqlite => "select availability_version from events where event_id = $1",
        };
        sqlx::query_scalar(sql)
            .bind(event.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::EventNotFound)
    }
}
