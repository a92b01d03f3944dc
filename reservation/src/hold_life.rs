//! A hold after it exists: extend, release, and the sweeper that tidies expired ones.

use std::collections::BTreeSet;

use crate::Error;
use crate::ids::{HoldId, SessionId};
use crate::journal::Entry;
use crate::store::{Store, Tx};
use crate::views::Hold;

/// A hold row as a transition needs it, read with the database clock.
pub(crate) struct HoldCtx {
    pub hold_id: String,
    pub session_id: String,
    pub event_id: String,
    /// Raw state of the row (`held` even when the time has passed).
    pub state: String,
    pub expired: bool,
    pub seats: String,
    pub seat_count: usize,
    pub total_cents: i64,
    pub now_ms: i64,
    pub expires_at_ms: i64,
    pub max_expires_at_ms: i64,
    pub ttl_ms: i64,
    pub currency: String,
    pub resolve_s: i64,
    pub abandon_s: i64,
}

/// What `sweep` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    pub seats_freed: u64,
    pub holds_expired: u64,
}

/// The row `hold_ctx` reads.
#[derive(sqlx::FromRow)]
struct HoldCtxRow {
    hold_id: String,
    session_id: String,
    event_id: String,
    state: String,
    /// 1 when the hold's time has passed (SQLite has no boolean column).
    expired: i64,
    seats: String,
    total_cents: i64,
    now_ms: i64,
    expires_at_ms: i64,
    max_expires_at_ms: i64,
    ttl_ms: i64,
    currency: String,
    resolve_s: i64,
    abandon_s: i64,
}

impl Store {
    pub(crate) async fn hold_ctx(&self, tx: &mut Tx, hold: &str) -> Result<HoldCtx, Error> {
        let r: HoldCtxRow = sqlx::query_as(self.sql(
            "select h.hold_id, h.session_id, h.event_id, h.state, h.seats, h.total_cents, \
             case when h.expires_at <= NOW then 1 else 0 end as expired, MS(NOW) as now_ms, \
             MS(h.expires_at) as expires_at_ms, MS(h.max_expires_at) as max_expires_at_ms, \
             coalesce(e.hold_ttl_ms, e.hold_ttl_s * 1000) as ttl_ms, e.currency, e.resolve_s, e.abandon_s \
             from holds h join events e on e.event_id = h.event_id where h.hold_id = $1",
        ))
        .bind(hold)
        .fetch_optional(&mut **tx)
        .await?
        .ok_or(Error::HoldNotFound)?;
        Ok(HoldCtx {
            seat_count: crate::views::seat_list(&r.seats)?.len(),
            hold_id: r.hold_id,
            session_id: r.session_id,
            event_id: r.event_id,
            state: r.state,
            expired: r.expired == 1,
            seats: r.seats,
            total_cents: r.total_cents,
            now_ms: r.now_ms,
            expires_at_ms: r.expires_at_ms,
            max_expires_at_ms: r.max_expires_at_ms,
            ttl_ms: r.ttl_ms,
            currency: r.currency,
            resolve_s: r.resolve_s,
            abandon_s: r.abandon_s,
        })
    }

    /// The owner's hold, checked for a transition that needs it live and `held`.
    pub(crate) async fn owned_held(
        &self,
        tx: &mut Tx,
        session: &SessionId,
        hold: &HoldId,
    ) -> Result<HoldCtx, Error> {
        let h = self.hold_ctx(tx, hold.as_str()).await?;
        if h.session_id != session.as_str() {
            return Err(Error::NotOwner);
        }
        match h.state.as_str() {
            "paying" => Err(Error::PaymentInProgress),
            "held" if !h.expired => Ok(h),
            _ => Err(Error::HoldExpired),
        }
    }

    /// Locks the hold's seat rows in seat order, the same order `hold` uses, before any
    /// transition touches them.
    pub(crate) async fn lock_seats(
        &self,
        tx: &mut Tx,
        event: &str,
        seats: &str,
    ) -> Result<(), Error> {
        sqlx::query(self.sql(
            "select seat_id from seats where event_id = $1 and seat_id IN_JSON($2)) \
             order by seat_id FOR_UPDATE",
        ))
        .bind(event)
        .bind(seats)
        .fetch_all(&mut **tx)
        .await?;
        Ok(())
    }

    /// Pushes the owner's live hold out by the event's hold TTL, never past `max_hold_s` from
    /// its creation.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(hold = %hold))]
    pub async fn extend(&self, session: &SessionId, hold: &HoldId) -> Result<Hold, Error> {
        self.retrying(|| self.extend_once(session, hold)).await
    }

    async fn extend_once(&self, session: &SessionId, hold: &HoldId) -> Result<Hold, Error> {
        let mut tx = self.begin().await?;
        let h = self.owned_held(&mut tx, session, hold).await?;
        self.lock_seats(&mut tx, &h.event_id, &h.seats).await?;
        let until = (h.now_ms + h.ttl_ms)
            .min(h.max_expires_at_ms)
            .max(h.expires_at_ms);
        let moved = sqlx::query(self.sql(
            "update seats set hold_expires_at = TS($3), version = version + 1 \
             where event_id = $1 and hold_id = $2 and state = 'held' and hold_expires_at > NOW",
        ))
        .bind(&h.event_id)
        .bind(&h.hold_id)
        .bind(until)
        .execute(&mut *tx)
        .await?;
        if moved.rows_affected() != h.seat_count as u64 {
            return Err(Error::HoldExpired);
        }
        sqlx::query(
            self.sql("update holds set expires_at = TS($2) where hold_id = $1 and state = 'held'"),
        )
        .bind(&h.hold_id)
        .bind(until)
        .execute(&mut *tx)
        .await?;
        self.log(
            &mut tx,
            Entry {
                event_id: &h.event_id,
                kind: "HoldExtended",
                hold_id: Some(&h.hold_id),
                detail: Some(serde_json::json!({ "expires_at_ms": until }).to_string()),
                ..Entry::default()
            },
        )
        .await?;
        let out = self.read_hold(&mut tx, hold).await?;
        tx.commit().await?;
        Ok(out)
    }

    /// Gives the seats back. Owner only; refused while paying. Releasing twice is a no-op.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(hold = %hold))]
    pub async fn release(&self, session: &SessionId, hold: &HoldId) -> Result<Hold, Error> {
        self.retrying(|| self.release_once(session, hold)).await
    }

    async fn release_once(&self, session: &SessionId, hold: &HoldId) -> Result<Hold, Error> {
        let mut tx = self.begin().await?;
        let h = self.hold_ctx(&mut tx, hold.as_str()).await?;
        if h.session_id != session.as_str() {
            return Err(Error::NotOwner);
        }
        match h.state.as_str() {
            "released" => return self.read_hold(&mut tx, hold).await,
            "paying" => return Err(Error::PaymentInProgress),
            "held" => {}
            _ => return Err(Error::HoldExpired),
        }
        self.lock_seats(&mut tx, &h.event_id, &h.seats).await?;
        // Only rows that still name this hold: seats taken over after expiry are not ours.
        self.free_seats(&mut tx, &h.event_id, &h.hold_id).await?;
        let ended = sqlx::query(
            self.sql("update holds set state = 'released', ended_at = NOW where hold_id = $1 and state = 'held'"),
        )
        .bind(&h.hold_id)
        .execute(&mut *tx)
        .await?;
        if ended.rows_affected() != 1 {
            return Err(Error::PaymentInProgress);
        }
        self.log(
            &mut tx,
            Entry {
                event_id: &h.event_id,
                kind: "ReservationReleased",
                hold_id: Some(&h.hold_id),
                seats: Some(&h.seats),
                ..Entry::default()
            },
        )
        .await?;
        self.end_hold_session(&mut tx, &h.event_id, &h.session_id, &h.hold_id, "released")
            .await?;
        let out = self.read_hold(&mut tx, hold).await?;
        tx.commit().await?;
        Ok(out)
    }

    pub(crate) async fn free_seats(
        &self,
        tx: &mut Tx,
        event: &str,
        hold: &str,
    ) -> Result<u64, Error> {
        self.stamp_events(tx, [event]).await?;
        Ok(sqlx::query(self.sql(
            "update seats set state = 'available', hold_id = null, hold_expires_at = null, \
             payment_attempt_id = null, version = version + 1, availability_version = SEAT_STAMP \
             where event_id = $1 and hold_id = $2 and state in ('held', 'paying')",
        ))
        .bind(event)
        .bind(hold)
        .execute(&mut **tx)
        .await?
        .rows_affected())
    }

    /// Turns up to `batch` expired holds back into available seats. Tidiness only: reads and
    /// `hold` already treat an expired hold as gone, whatever this has done.
    #[tracing::instrument(skip_all, err)]
    pub async fn sweep(&self, batch: i64) -> Result<Swept, Error> {
        self.retrying(|| self.sweep_once(batch)).await
    }

    async fn sweep_once(&self, batch: i64) -> Result<Swept, Error> {
        let mut tx = self.begin().await?;
        let holds: Vec<String> = sqlx::query_scalar(self.sql(
            "select distinct hold_id from seats where state = 'held' and hold_expires_at <= NOW \
             limit $1",
        ))
        .bind(batch)
        .fetch_all(&mut *tx)
        .await?;
        if holds.is_empty() {
            return Ok(Swept::default());
        }
        let json = serde_json::to_string(&holds)?;
        let locked: Vec<String> = sqlx::query_scalar(self.sql(
            "select event_id from seats where hold_id IN_JSON($1)) \
             order by event_id, seat_id FOR_UPDATE",
        ))
        .bind(&json)
        .fetch_all(&mut *tx)
        .await?;
        let events: BTreeSet<String> = locked.into_iter().collect();
        self.stamp_events(&mut tx, events.iter().map(String::as_str))
            .await?;
        let freed = sqlx::query(self.sql(
            "update seats set state = 'available', hold_id = null, hold_expires_at = null, \
             version = version + 1, availability_version = SEAT_STAMP \
             where hold_id IN_JSON($1)) and state = 'held' and hold_expires_at <= NOW",
        ))
        .bind(&json)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        let expired = self.expire_holds(&mut tx, &json).await?;
        // Scoped by event like every failpoint; only compiled in for tests.
        #[cfg(feature = "failpoints")]
        for event in sqlx::query_scalar::<_, String>(self.sql(
            "select distinct event_id from holds where hold_id in (select value from JSON_EACH($1))",
        ))
        .bind(&json)
        .fetch_all(&mut *tx)
        .await?
        {
            crate::failpoint::hit(crate::failpoint::Point::InsideSweeper, &event).await?;
        }
        tx.commit().await?;
        Ok(Swept {
            seats_freed: freed,
            holds_expired: expired as u64,
        })
    }
}
