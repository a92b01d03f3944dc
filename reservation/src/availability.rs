//! The per-event count of seat availability changes, which lets the stadium map ask for what
//! changed since the version it holds. Every transaction that moves seats between available
//! and taken (as buyers see them) bumps its event's count once and stamps those seats with the
//! new value (migration 0016). Paying, selling, extending or a declined card leave the count
//! alone: the seat stays taken for buyers throughout.

use crate::Error;
use crate::ids::EventId;
use crate::store::{Store, Tx};

impl Store {
    /// Bumps the event's count and answers the new value, to stamp the seats this transaction
    /// changes. Call it after the seat rows are locked: the count's row lock is then held to
    /// the commit and never waited on by anyone who holds a seat lock another writer needs.
    pub(crate) async fn bump_availability(&self, tx: &mut Tx, event: &str) -> Result<i64, Error> {
        Ok(sqlx::query_scalar(
            "update events set availability_version = availability_version + 1 \
             where event_id = $1 returning availability_version",
        )
        .bind(event)
        .fetch_one(&mut **tx)
        .await?)
    }

    /// The event's count now. Read it before the seats it describes: a change committed in
    /// between is then seen twice (harmless) rather than never.
    pub async fn availability_version(&self, event: &EventId) -> Result<i64, Error> {
        sqlx::query_scalar("select availability_version from events where event_id = $1")
            .bind(event.as_str())
            .fetch_optional(&self.pool)
            .await?
            .ok_or(Error::EventNotFound)
    }
}
