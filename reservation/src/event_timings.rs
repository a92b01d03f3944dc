//! The organizer's change of an event's name and timings. The timings (the opening, a hold's
//! lives, the payment deadlines and the seats one hold may take) change only while the queue
//! has not opened, judged by the database's clock in the statement that writes them: once
//! buyers are offered turns, everyone keeps the rules the first of them was shown. The name
//! only labels the event and may change at any time.

use crate::Error;
use crate::ids::EventId;
use crate::look::LookPatch;
use crate::store::{Store, Tx};

/// A change of name and timings: each field `None` is left as it is.
#[derive(Debug, Clone, Default)]
pub struct TimingsPatch {
    pub name: Option<String>,
    /// Unix milliseconds; must be after the database's now.
    pub opens_at_ms: Option<i64>,
    pub hold_ttl_s: Option<i64>,
    pub max_hold_s: Option<i64>,
    pub max_seats_per_hold: Option<i64>,
    pub resolve_s: Option<i64>,
    pub abandon_s: Option<i64>,
}

impl TimingsPatch {
    /// Whether the change touches anything but the name (and so needs the queue unopened).
    pub fn changes_timings(&self) -> bool {
        self.opens_at_ms.is_some()
            || self.hold_ttl_s.is_some()
            || self.max_hold_s.is_some()
            || self.max_seats_per_hold.is_some()
            || self.resolve_s.is_some()
            || self.abandon_s.is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.name.is_none() && !self.changes_timings()
    }

    /// Each number within the bound creation applies (`NewEvent::validate`); the rules between
    /// them are judged against the stored event, in the statement that writes them.
    fn validate(&self) -> Result<(), Error> {
        use crate::limits::{self as l, within};
        let bounded = [
            ("hold_ttl_s", self.hold_ttl_s, l::HOLD_S),
            ("max_hold_s", self.max_hold_s, l::HOLD_S),
            (
                "max_seats_per_hold",
                self.max_seats_per_hold,
                l::SEATS_PER_HOLD,
            ),
            ("resolve_s", self.resolve_s, l::RESOLVE_S),
            ("abandon_s", self.abandon_s, l::ABANDON_S),
        ];
        for (field, value, max) in bounded {
            if let Some(v) = value {
                within(field, v, 1, max)?;
            }
        }
        Ok(())
    }
}

/// What the event looked like when a change was refused, to name the reason.
#[derive(sqlx::FromRow)]
struct Refused {
    now_ms: i64,
    opens_at_ms: i64,
    hold_ttl_s: i64,
    max_hold_s: i64,
    abandon_s: i64,
    session_s: i64,
}

impl Store {
    /// Applies a change of look and of name and timings in one transaction: all of it or
    /// nothing. The timings are written by one conditional UPDATE that holds only while the
    /// event's `opens_at` is after the database's now (else `EventOpened`), a new `opens_at`
    /// is after it too, a hold's first life stays within its longest, and the admission
    /// session still outlives a hold's longest life plus its payment's abandon deadline.
    /// A change of timings bumps the admission settings' version, so every instance's next
    /// tick publishes a snapshot that shows it.
    #[tracing::instrument(skip_all, err, fields(event = %event))]
    pub async fn edit_event(
        &self,
        event: &EventId,
        look: &LookPatch,
        timings: &TimingsPatch,
    ) -> Result<(), Error> {
        if look.is_empty() && timings.is_empty() {
            return Err(Error::NothingToChange);
        }
        timings.validate()?;
        let mut tx = self.begin().await?;
        if timings.changes_timings() {
            // The settings row first: a concurrent `session_s` change waits for this one, and
            // the rule below reads the `session_s` that stands.
            self.bump_admission_version(&mut tx, event).await?;
        }
        if !timings.is_empty() {
            let done = sqlx::query(self.sql(
                "update events set name = coalesce($2, name), \
                 opens_at = coalesce(TS($3), opens_at), \
                 hold_ttl_s = coalesce($4, hold_ttl_s), \
                 hold_ttl_ms = case when $4 is null then hold_ttl_ms else null end, \
                 max_hold_s = coalesce($5, max_hold_s), \
                 max_seats_per_hold = coalesce($6, max_seats_per_hold), \
                 resolve_s = coalesce($7, resolve_s), abandon_s = coalesce($8, abandon_s) \
                 where event_id = $1 \
                 and ($9 = 0 or opens_at > NOW) \
                 and ($3 is null or TS($3) > NOW) \
                 and coalesce($4, hold_ttl_s) <= coalesce($5, max_hold_s) \
                 and (select c.session_s from admission_controls c where c.event_id = $1) \
                     >= coalesce($5, max_hold_s) + coalesce($8, abandon_s)",
            ))
            .bind(event.as_str())
            .bind(timings.name.as_deref())
            .bind(timings.opens_at_ms)
            .bind(timings.hold_ttl_s)
            .bind(timings.max_hold_s)
            .bind(timings.max_seats_per_hold)
            .bind(timings.resolve_s)
            .bind(timings.abandon_s)
            .bind(i32::from(timings.changes_timings()))
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 0 {
                let why = self.why_refused(&mut tx, event, timings).await;
                tx.rollback().await?;
                return Err(why?);
            }
        }
        if !look.is_empty() {
            self.write_look(&mut tx, event, look).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The rule a refused change broke, read after the UPDATE said no (the UPDATE decided;
    /// this only names the reason, in the order an organizer can act on them).
    async fn why_refused(
        &self,
        tx: &mut Tx,
        event: &EventId,
        timings: &TimingsPatch,
    ) -> Result<Error, Error> {
        let row = sqlx::query_as::<_, Refused>(self.sql(
            "select MS(NOW) as now_ms, MS(e.opens_at) as opens_at_ms, \
             cast(e.hold_ttl_s as bigint) as hold_ttl_s, cast(e.max_hold_s as bigint) as max_hold_s, \
             cast(e.abandon_s as bigint) as abandon_s, cast(c.session_s as bigint) as session_s \
             from events e join admission_controls c on c.event_id = e.event_id \
             where e.event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&mut **tx)
        .await?;
        let Some(r) = row else {
            return Ok(Error::EventNotFound);
        };
        if timings.changes_timings() && r.opens_at_ms <= r.now_ms {
            return Ok(Error::EventOpened);
        }
        if timings.opens_at_ms.is_some_and(|at| at <= r.now_ms) {
            return Ok(Error::FieldRule {
                field: "opens_at",
                rule: "opens_at must be in the future",
            });
        }
        let max_hold_s = timings.max_hold_s.unwrap_or(r.max_hold_s);
        if timings.hold_ttl_s.unwrap_or(r.hold_ttl_s) > max_hold_s {
            return Ok(Error::FieldRule {
                field: if timings.hold_ttl_s.is_some() {
                    "hold_ttl_s"
                } else {
                    "max_hold_s"
                },
                rule: "hold_ttl_s must not exceed max_hold_s",
            });
        }
        if r.session_s < max_hold_s + timings.abandon_s.unwrap_or(r.abandon_s) {
            return Ok(Error::FieldRule {
                field: if timings.max_hold_s.is_some() {
                    "max_hold_s"
                } else {
                    "abandon_s"
                },
                rule: "max_hold_s + abandon_s must not exceed the admission session_s \
                       (raise session_s with PATCH …/admission first)",
            });
        }
        // Every rule holds now: the event changed between the UPDATE and this read.
        Ok(Error::Inconsistent(
            "the event changed meanwhile; read it and try again",
        ))
    }
}
