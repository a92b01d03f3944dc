//! What admission keeps in the database: the live controls an organizer tunes (versioned, read
//! every tick), the session counts that bound the meter, the checkpoint that survives a Redis
//! loss, and the generated secrets a restart must not forget.

use crate::Error;
use crate::access::{EventAccess, IdentityKey};
use crate::admission_modes::{AdmissionMode, BackendDown, QueueMessage};
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
    /// The event's `max_seats_per_hold`: the most one buyer can take.
    pub max_seats_per_hold: i64,
    /// The share of offers the priority lane may take, in thousandths.
    pub priority_permille: i64,
    /// Who may join, and the identity key (read in the same statement, so a tick reads both).
    pub access: EventAccess,
    pub mode: AdmissionMode,
    pub on_backend_down: BackendDown,
    pub message: Option<QueueMessage>,
}

/// `AdmissionControl` as read: booleans travel as integers (the Any driver does not decode
/// SQLite's 0/1 as bool).
#[derive(sqlx::FromRow)]
struct ControlRow {
    rate_per_min: i64,
    max_active: i64,
    session_s: i64,
    offer_s: i64,
    paused: i64,
    closed: i64,
    version: i64,
    opens_at_ms: i64,
    fairness_seed: String,
    max_seats_per_hold: i64,
    priority_permille: i64,
    access: Option<String>,
    general_opens_at_ms: Option<i64>,
    identity_alg: Option<String>,
    identity_key: Option<String>,
    identity_required: Option<i64>,
    mode: String,
    on_backend_down: String,
    message_text: Option<String>,
    message_level: Option<String>,
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
    /// The priority lane's share of offers, in thousandths (0-1000).
    pub priority_permille: Option<i64>,
    pub mode: Option<AdmissionMode>,
    pub on_backend_down: Option<BackendDown>,
    /// `Some(None)` clears the message.
    pub message: Option<Option<QueueMessage>>,
    /// The version the organizer last read: the change applies only if the row still has it
    /// (`None`: last writer wins).
    pub expected_version: Option<i64>,
}

impl AdmissionPatch {
    /// At least one setting, each within its bound (`limits`). A rate or cap of 0 is a
    /// valid live change (it stops new offers without pausing the line).
    pub fn validate(&self) -> Result<(), Error> {
        use crate::limits::{self as l, within};
        let AdmissionPatch {
            rate_per_min,
            max_active,
            session_s,
            offer_s,
            paused,
            closed,
            priority_permille,
            mode,
            on_backend_down,
            message,
            expected_version: _,
        } = self;
        if rate_per_min.is_none()
            && max_active.is_none()
            && session_s.is_none()
            && offer_s.is_none()
            && paused.is_none()
            && closed.is_none()
            && priority_permille.is_none()
            && mode.is_none()
            && on_backend_down.is_none()
            && message.is_none()
        {
            return Err(Error::NothingToChange);
        }
        if let Some(Some(m)) = message {
            m.validate()?;
        }
        if let Some(v) = self.expected_version {
            within("version", v, 1, i64::MAX)?;
        }
        let bounded = [
            ("rate_per_min", *rate_per_min, 0, l::RATE_PER_MIN),
            ("max_active", *max_active, 0, l::MAX_ACTIVE),
            ("session_s", *session_s, 1, l::SESSION_S),
            ("offer_s", *offer_s, 1, l::OFFER_S),
            ("priority_share", *priority_permille, 0, 1000),
        ];
        for (field, value, min, max) in bounded {
            if let Some(v) = value {
                within(field, v, min, max)?;
            }
        }
        Ok(())
    }
}

/// The durable trace of an event's queue.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct QueueCheckpoint {
    pub epoch: String,
    pub join_seq: i64,
    pub served: i64,
    /// The FIFO place served through.
    pub fifo_through: i64,
    /// The pre-queue rank of the last pre-queue ticket offered.
    pub prequeue_through: Option<f64>,
    /// The highest score the priority lane offered (a pre-queue rank, or a priority place).
    pub priority_through: Option<f64>,
}

impl Store {
    /// Bumps an event's admission settings version inside `tx`, so every instance reads the
    /// change made beside it on its next tick (the ticks reload the settings when it moves).
    pub(crate) async fn bump_admission_version(
        &self,
        tx: &mut crate::store::Tx,
        event: &EventId,
    ) -> Result<(), Error> {
        sqlx::query(self.sql(
            "update admission_controls set version = version + 1, updated_at = NOW \
             where event_id = $1",
        ))
        .bind(event.as_str())
        .execute(&mut **tx)
        .await?;
        Ok(())
    }

    pub async fn admission_control(
        &self,
        event: &EventId,
    ) -> Result<Option<AdmissionControl>, Error> {
        let row = sqlx::query_as::<_, ControlRow>(self.sql(
            "select cast(c.rate_per_min as bigint) as rate_per_min, cast(c.max_active as bigint) as max_active, \
             cast(c.session_s as bigint) as session_s, cast(c.offer_s as bigint) as offer_s, \
             cast(case when c.paused then 1 else 0 end as bigint) as paused, \
             cast(case when c.closed then 1 else 0 end as bigint) as closed, c.version, \
             MS(e.opens_at) as opens_at_ms, e.fairness_seed, \
             cast(e.max_seats_per_hold as bigint) as max_seats_per_hold, \
             cast(c.priority_permille as bigint) as priority_permille, a.access, \
             MS(a.general_opens_at) as general_opens_at_ms, a.identity_alg, a.identity_key, \
             cast(case when a.identity_required then 1 else 0 end as bigint) as identity_required, \
             c.mode, c.on_backend_down, c.message_text, c.message_level \
             from admission_controls c join events e on e.event_id = c.event_id \
             left join event_access a on a.event_id = c.event_id where c.event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|r| AdmissionControl {
            rate_per_min: r.rate_per_min,
            max_active: r.max_active,
            session_s: r.session_s,
            offer_s: r.offer_s,
            paused: r.paused != 0,
            closed: r.closed != 0,
            version: r.version,
            opens_at_ms: r.opens_at_ms,
            fairness_seed: r.fairness_seed,
            max_seats_per_hold: r.max_seats_per_hold,
            priority_permille: r.priority_permille,
            access: match r.access {
                None => EventAccess::open(),
                Some(access) => EventAccess {
                    access,
                    general_opens_at_ms: r.general_opens_at_ms,
                    identity_alg: r.identity_alg,
                    identity_key: r.identity_key.map(IdentityKey),
                    identity_required: r.identity_required.unwrap_or(0) != 0,
                },
            },
            mode: AdmissionMode::from_stored(&r.mode),
            on_backend_down: BackendDown::from_stored(&r.on_backend_down),
            message: QueueMessage::from_stored(r.message_text, r.message_level),
        }))
    }

    /// Applies a live change and bumps the version every instance's next tick compares.
    #[tracing::instrument(skip_all, err, fields(event = %event))]
    pub async fn update_admission_control(
        &self,
        event: &EventId,
        patch: &AdmissionPatch,
    ) -> Result<AdmissionControl, Error> {
        patch.validate()?;
        // The rule creation enforces, judged in the same statement against the event's own
        // hold and abandon deadlines: a session outlives a hold's longest life plus its
        // payment's abandon deadline, so no buyer loses their slot while paying. Only a change
        // of `session_s` is judged, so a pause or a close is never refused.
        let message = patch.message.as_ref();
        // A clear (`Some(None)`) and a new message are told apart by `$10`; `$13`, when
        // given, makes the change conditional on the version the organizer last read.
        let done = sqlx::query(self.sql(
            "update admission_controls set \
             rate_per_min = coalesce($2, rate_per_min), max_active = coalesce($3, max_active), \
             session_s = coalesce($4, session_s), offer_s = coalesce($5, offer_s), \
             paused = coalesce($6, paused), closed = coalesce($7, closed), \
             mode = coalesce($8, mode), on_backend_down = coalesce($9, on_backend_down), \
             message_text = case when $10 = 1 then $11 else message_text end, \
             message_level = case when $10 = 1 then $12 else message_level end, \
             priority_permille = coalesce($14, priority_permille), \
             version = version + 1, updated_at = NOW where event_id = $1 \
             and ($13 is null or version = $13) \
             and ($4 is null or $4 >= \
                 (select e.max_hold_s + e.abandon_s from events e where e.event_id = $1))",
        ))
        .bind(event.as_str())
        .bind(patch.rate_per_min)
        .bind(patch.max_active)
        .bind(patch.session_s)
        .bind(patch.offer_s)
        .bind(patch.paused)
        .bind(patch.closed)
        .bind(patch.mode.map(AdmissionMode::as_str))
        .bind(patch.on_backend_down.map(BackendDown::as_str))
        .bind(i64::from(message.is_some()))
        .bind(message.and_then(|m| m.as_ref().map(|m| m.text.clone())))
        .bind(message.and_then(|m| m.as_ref().map(|m| m.level.as_str())))
        .bind(patch.expected_version)
        .bind(patch.priority_permille)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(match self.admission_control(event).await? {
                Some(now) if patch.expected_version.is_some_and(|v| v != now.version) => {
                    Error::StaleVersion {
                        current: now.version,
                    }
                }
                Some(_) => Error::Inconsistent("session_s must be at least max_hold_s + abandon_s"),
                None => Error::EventNotFound,
            });
        }
        self.admission_control(event)
            .await?
            .ok_or(Error::EventNotFound)
    }

    /// Sessions neither ended nor past their end: the slots in use.
    pub async fn active_sessions(&self, event: &EventId) -> Result<i64, Error> {
        Ok(sqlx::query_scalar(self.sql(
            "select count(*) as n from admission_sessions \
             where event_id = $1 and ended_at is null and expires_at > NOW",
        ))
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?)
    }

    /// Sessions ever opened for the event.
    pub async fn admitted_total(&self, event: &EventId) -> Result<i64, Error> {
        Ok(sqlx::query_scalar(
            self.sql("select count(*) as n from admission_sessions where event_id = $1"),
        )
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?)
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
        Ok(sqlx::query_as::<_, QueueCheckpoint>(self.sql(
            "select epoch, join_seq, served, fifo_through, prequeue_through, priority_through \
                 from admission_checkpoints where event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&self.pool)
        .await?)
    }

    /// Saves the checkpoint; the counters only move forward within one epoch, so a slow
    /// instance writing late cannot pull them back.
    pub async fn save_checkpoint(
        &self,
        event: &EventId,
        checkpoint: &QueueCheckpoint,
    ) -> Result<(), Error> {
        sqlx::query(self.sql(
            "insert into admission_checkpoints \
             (event_id, epoch, join_seq, served, fifo_through, prequeue_through, priority_through) \
             values ($1, $2, $3, $4, $5, nullif(cast($6 as double precision), -1), \
                nullif(cast($7 as double precision), -1)) \
             on conflict (event_id) do update set \
             join_seq = case when admission_checkpoints.epoch = excluded.epoch \
                then GREATEST(admission_checkpoints.join_seq, excluded.join_seq) else excluded.join_seq end, \
             served = case when admission_checkpoints.epoch = excluded.epoch \
                then GREATEST(admission_checkpoints.served, excluded.served) else excluded.served end, \
             fifo_through = case when admission_checkpoints.epoch = excluded.epoch \
                then GREATEST(admission_checkpoints.fifo_through, excluded.fifo_through) \
                else excluded.fifo_through end, \
             prequeue_through = case when admission_checkpoints.epoch = excluded.epoch \
                then nullif(GREATEST(coalesce(admission_checkpoints.prequeue_through, -1), \
                    coalesce(excluded.prequeue_through, -1)), -1) \
                else excluded.prequeue_through end, \
             priority_through = case when admission_checkpoints.epoch = excluded.epoch \
                then nullif(GREATEST(coalesce(admission_checkpoints.priority_through, -1), \
                    coalesce(excluded.priority_through, -1)), -1) \
                else excluded.priority_through end, \
             epoch = excluded.epoch, updated_at = NOW",
        ))
        .bind(event.as_str())
        .bind(&checkpoint.epoch)
        .bind(checkpoint.join_seq)
        .bind(checkpoint.served)
        .bind(checkpoint.fifo_through)
        // Always a number (-1: none yet; ranks lie in [0, 1), priority places past 2^50): a
        // statement cached after binding NULL here was refused a later float by PostgreSQL
        // now and then.
        .bind(checkpoint.prequeue_through.unwrap_or(-1.0))
        .bind(checkpoint.priority_through.unwrap_or(-1.0))
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
        Ok(
            sqlx::query_scalar(self.sql("select value from settings where name = $1"))
                .bind(name)
                .fetch_one(&self.pool)
                .await?,
        )
    }
}

/// Seats by effective state, for the meter's sold-out decision and the chance of a seat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct SeatAvailability {
    /// Available, or held under an expired hold.
    pub available: i64,
    /// Held under a live hold, or paying: they may come back.
    pub held_or_paying: i64,
    pub sold: i64,
    /// Distinct live holds (held or paying): buyers who have taken their seats.
    pub live_holds: i64,
}

/// Holds that ended with a sale, and holds that ended giving their seats back (released,
/// expired, abandoned): how many held seats come back, as this sale's buyers behave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct EndedHolds {
    pub sold: i64,
    pub returned: i64,
}

impl Store {
    /// One pass over the event's seats (the meter asks every tick).
    pub async fn seat_availability(&self, event: &EventId) -> Result<SeatAvailability, Error> {
        Ok(sqlx::query_as::<_, SeatAvailability>(self.sql(
            "select \
             coalesce(sum(case when state = 'available' or (state = 'held' and hold_expires_at <= NOW) \
                 then 1 else 0 end), 0) as available, \
             coalesce(sum(case when (state = 'held' and hold_expires_at > NOW) or state = 'paying' \
                 then 1 else 0 end), 0) as held_or_paying, \
             coalesce(sum(case when state = 'sold' then 1 else 0 end), 0) as sold, \
             count(distinct case when (state = 'held' and hold_expires_at > NOW) or state = 'paying' \
                 then hold_id end) as live_holds \
             from seats where event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?)
    }

    /// One pass over the event's holds old enough to have ended, however they end: it grows
    /// with the sale's history, so callers that ask often keep the answer a while.
    ///
    /// A sale ends within seconds of its hold, a hold left unpaid only when its time runs out.
    /// Counted over every hold that has ended so far, the last hold-life's sales are in and its
    /// returns are not, and the share given back would read low for as long as the sale runs
    /// (most of all early, when recent holds are most of them). So only holds at least a hold's
    /// life old are judged, each as it ended: a `held` one whose time has passed gave its seats
    /// back even before the sweeper marks it. A payment still resolving, and a hold extended
    /// while its buyer pays, are judged when they end: their returns (a payment abandoned, an
    /// extended hold running out) still trail their sales, but they are few beside the holds
    /// left unpaid.
    pub async fn ended_holds(&self, event: &EventId) -> Result<EndedHolds, Error> {
        Ok(sqlx::query_as::<_, EndedHolds>(self.sql(
            "select coalesce(sum(case when h.state = 'confirmed' then 1 else 0 end), 0) as sold, \
             coalesce(sum(case when h.state <> 'confirmed' then 1 else 0 end), 0) as returned \
             from holds h join events e on e.event_id = h.event_id \
             where h.event_id = $1 \
             and h.created_at <= NOW - MSEC(coalesce(e.hold_ttl_ms, e.hold_ttl_s * 1000)) \
             and (h.state in ('confirmed', 'released', 'expired', 'abandoned') \
                  or (h.state = 'held' and h.expires_at <= NOW))",
        ))
        .bind(event.as_str())
        .fetch_one(&self.pool)
        .await?)
    }
}
