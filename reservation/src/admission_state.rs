//! What admission keeps in the database: the live controls an organizer tunes (versioned, read
//! every tick), the session counts that bound the meter, the checkpoint that survives a Redis
//! loss, and the generated secrets a restart must not forget.

use sqlx::Row;

use crate::Error;
use crate::ids::{EventId, TicketId};
use crate::session::Session;
use crate::store::Store;

/// An event's admission controls as one tick reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionControl {
    pub rate_per_min: i64,
    pub max_active: i64,
    pub session_s: i64,
    pub offer_s: i64,
    pub paused: bool,
    pub closed: bool,
    pub version: i64,
    pub opens_at_ms: i64,
    pub fairness_seed: String,
}

/// An organizer's live change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct AdmissionPatch {
    pub rate_per_min: Option<i64>,
    pub max_active: Option<i64>,
    pub session_s: Option<i64>,
    pub offer_s: Option<i64>,
    pub paused: Option<bool>,
    pub closed: Option<bool>,
}

/// The durable trace of an event's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueCheckpoint {
    pub epoch: String,
    pub join_seq: i64,
    pub served: i64,
}

impl Store {
    pub async fn admission_control(
        &self,
        event: &EventId,
    ) -> Result<Option<AdmissionControl>, Error> {
        // Booleans travel as integers: the Any driver does not decode SQLite's 0/1 as bool.
        let row = sqlx::query(self.sql(
            "select cast(c.rate_per_min as bigint) as rate_per_min, cast(c.max_active as bigint) as max_active, \
             cast(c.session_s as bigint) as session_s, cast(c.offer_s as bigint) as offer_s, \
             cast(case when c.paused then 1 else 0 end as bigint) as paused, \
             cast(case when c.closed then 1 else 0 end as bigint) as closed, c.version, \
             MS(e.opens_at) as opens_at_ms, e.fairness_seed \
             from admission_controls c join events e on e.event_id = c.event_id where c.event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| {
            Ok(AdmissionControl {
                rate_per_min: r.try_get("rate_per_min")?,
                max_active: r.try_get("max_active")?,
                session_s: r.try_get("session_s")?,
                offer_s: r.try_get("offer_s")?,
                paused: r.try_get::<i64, _>("paused")? != 0,
                closed: r.try_get::<i64, _>("closed")? != 0,
                version: r.try_get("version")?,
                opens_at_ms: r.try_get("opens_at_ms")?,
                fairness_seed: r.try_get("fairness_seed")?,
            })
        })
        .transpose()
    }

    /// Applies a live change and bumps the version every instance's next tick compares.
    #[tracing::instrument(skip_all, err, fields(event = %event))]
    pub async fn update_admission_control(
        &self,
        event: &EventId,
        patch: &AdmissionPatch,
    ) -> Result<AdmissionControl, Error> {
        let done = sqlx::query(self.sql(
            "update admission_controls set \
             rate_per_min = coalesce($2, rate_per_min), max_active = coalesce($3, max_active), \
             session_s = coalesce($4, session_s), offer_s = coalesce($5, offer_s), \
             paused = coalesce($6, paused), closed = coalesce($7, closed), \
             version = version + 1, updated_at = NOW where event_id = $1",
        ))
        .bind(event.as_str())
        .bind(patch.rate_per_min)
        .bind(patch.max_active)
        .bind(patch.session_s)
        .bind(patch.offer_s)
        .bind(patch.paused)
        .bind(patch.closed)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(Error::EventNotFound);
        }
        self.admission_control(event)
            .await?
            .ok_or(Error::EventNotFound)
    }

    /// Sessions neither ended nor past their end: the slots in use.
    pub async fn active_sessions(&self, event: &EventId) -> Result<i64, Error> {
        let row = sqlx::query(self.sql(
            "select count(*) as n from admission_sessions \
             where event_id = $1 and ended_at is null and expires_at > NOW",
        ))
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    /// Sessions ever opened for the event.
    pub async fn admitted_total(&self, event: &EventId) -> Result<i64, Error> {
        let row = sqlx::query(
            self.sql("select count(*) as n from admission_sessions where event_id = $1"),
        )
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("n")?)
    }

    pub async fn session_of_ticket(
        &self,
        event: &EventId,
        ticket: &TicketId,
    ) -> Result<Option<Session>, Error> {
        Ok(sqlx::query_as::<_, Session>(self.sql(
            "select session_id, event_id, ticket_id, queue_place, MS(created_at) as created_at_ms, \
             MS(expires_at) as expires_at_ms, MS(ended_at) as ended_at_ms, end_reason \
             from admission_sessions where event_id = $1 and ticket_id = $2",
        ))
        .bind(event.as_str())
        .bind(ticket.as_str())
        .fetch_optional(&self.pool)
        .await?)
    }

    pub async fn load_checkpoint(&self, event: &EventId) -> Result<Option<QueueCheckpoint>, Error> {
        let row =
            sqlx::query(self.sql(
                "select epoch, join_seq, served from admission_checkpoints where event_id = $1",
            ))
            .bind(event.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| {
            Ok(QueueCheckpoint {
                epoch: r.try_get("epoch")?,
                join_seq: r.try_get("join_seq")?,
                served: r.try_get("served")?,
            })
        })
        .transpose()
    }

    /// Saves the checkpoint; the counters only move forward within one epoch, so a slow
    /// instance writing late cannot pull them back.
    pub async fn save_checkpoint(
        &self,
        event: &EventId,
        checkpoint: &QueueCheckpoint,
    ) -> Result<(), Error> {
        sqlx::query(self.sql(
            "insert into admission_checkpoints (event_id, epoch, join_seq, served) values ($1, $2, $3, $4) \
             on conflict (event_id) do update set \
             join_seq = case when admission_checkpoints.epoch = excluded.epoch \
                then GREATEST(admission_checkpoints.join_seq, excluded.join_seq) else excluded.join_seq end, \
             served = case when admission_checkpoints.epoch = excluded.epoch \
                then GREATEST(admission_checkpoints.served, excluded.served) else excluded.served end, \
             epoch = excluded.epoch, updated_at = NOW",
        ))
        .bind(event.as_str())
        .bind(&checkpoint.epoch)
        .bind(checkpoint.join_seq)
        .bind(checkpoint.served)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The setting `name`, storing `generated` first if it has none (a generated secret is
    /// kept so a restart logs no one out). Concurrent first starts agree on one value.
    pub async fn setting_or_insert(&self, name: &str, generated: &str) -> Result<String, Error> {
        sqlx::query(self.sql(
            "insert into settings (name, value) values ($1, $2) on conflict (name) do nothing",
        ))
        .bind(name)
        .bind(generated)
        .execute(&self.pool)
        .await?;
        let row = sqlx::query(self.sql("select value from settings where name = $1"))
            .bind(name)
            .fetch_one(&self.pool)
            .await?;
        Ok(row.try_get("value")?)
    }
}

/// Seats by effective state, for the meter's sold-out decision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SeatAvailability {
    /// Available, or held under an expired hold.
    pub available: i64,
    /// Held under a live hold, or paying: they may come back.
    pub held_or_paying: i64,
}

impl Store {
    /// One pass over the event's seats (the meter asks every tick).
    pub async fn seat_availability(&self, event: &EventId) -> Result<SeatAvailability, Error> {
        let row = sqlx::query(self.sql(
            "select \
             coalesce(sum(case when state = 'available' or (state = 'held' and hold_expires_at <= NOW) \
                 then 1 else 0 end), 0) as available, \
             coalesce(sum(case when (state = 'held' and hold_expires_at > NOW) or state = 'paying' \
                 then 1 else 0 end), 0) as busy \
             from seats where event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?;
        Ok(SeatAvailability {
            available: row.try_get("available")?,
            held_or_paying: row.try_get("busy")?,
        })
    }
}
