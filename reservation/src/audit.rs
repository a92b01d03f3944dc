//! The organizer's audit log: who changed what, when (the database clock), and with which key.

use crate::Error;
use crate::store::Store;

/// Who made a change: the key's name and its id (`configured` for the key of the
/// configuration, which has no row of its own).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub key_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct AuditEntry {
    pub actor: String,
    /// The key that made the change (`None` for entries written before keys had ids).
    pub key_id: Option<String>,
    pub action: String,
    pub event_id: Option<String>,
    pub detail: String,
    pub at_ms: i64,
}

impl Store {
    pub async fn audit(
        &self,
        by: &Actor,
        action: &str,
        event: Option<&str>,
        detail: &str,
    ) -> Result<(), Error> {
        sqlx::query(
            "insert into audit_log (actor, key_id, action, event_id, detail) values ($1, $2, $3, $4, $5)",
        )
        .bind(&by.name)
        .bind(&by.key_id)
        .bind(action)
        .bind(event)
        .bind(detail)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The latest entries first.
    pub async fn audit_log(&self, limit: i64) -> Result<Vec<AuditEntry>, Error> {
        Ok(sqlx::query_as(self.sql(
            "select actor, key_id, action, event_id, detail, MS(at) as at_ms from audit_log order by id desc limit $1",
        ))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
