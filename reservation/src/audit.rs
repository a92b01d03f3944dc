//! The organizer's audit log: who changed what, when (the database clock).

use crate::Error;
use crate::store::Store;

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, sqlx::FromRow)]
pub struct AuditEntry {
    pub actor: String,
    pub action: String,
    pub event_id: Option<String>,
    pub detail: String,
    pub at_ms: i64,
}

impl Store {
    pub async fn audit(
        &self,
        actor: &str,
        action: &str,
        event: Option<&str>,
        detail: &str,
    ) -> Result<(), Error> {
        sqlx::query(
            "insert into audit_log (actor, action, event_id, detail) values ($1, $2, $3, $4)",
        )
        .bind(actor)
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
            "select actor, action, event_id, detail, MS(at) as at_ms from audit_log order by id desc limit $1",
        ))
        .bind(limit)
        .fetch_all(&self.pool)
        .await?)
    }
}
