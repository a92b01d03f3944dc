//! Taking seats: named seats (`hold`) and general admission (`hold_ga`), all or nothing.
//! PostgreSQL takes them in one call (`hold_pg`); SQLite, in-process with one writer at a
//! time, runs the statements below.

use std::collections::BTreeSet;
use std::time::Duration;

use crate::Error;
use crate::dialect::Dialect;
use crate::ids::{self, HoldId, SeatId, SessionId, trusted};
use crate::journal::Entry;
use crate::store::{Store, Tx};
use crate::views::{Hold, HoldState};

/// The session about to hold, with its event's limits and the database clock at the start.
pub(crate) struct Holder {
    session_id: String,
    event_id: String,
    now_ms: i64,
    ttl_ms: i64,
    max_hold_ms: i64,
    max_seats: i64,
}

/// A seat row as locked, before the conditional update.
#[derive(sqlx::FromRow)]
struct Locked {
    seat_id: String,
    state: String,
    hold_id: Option<String>,
    /// 1 when a `held` seat's time has passed (SQLite has no boolean column).
    expired: i64,
    price_cents: i64,
}

impl Locked {
    /// The acquisition predicate, as read under the row lock.
    fn free(&self) -> bool {
        self.state == "available" || (self.state == "held" && self.expired == 1)
    }
}

/// The session about to hold, its event's limits and its live hold, as `holder` reads them.
#[derive(sqlx::FromRow)]
struct HolderRow {
    event_id: String,
    now_ms: i64,
    ended: i64,
    ttl_ms: i64,
    max_hold_s: i64,
    max_seats_per_hold: i64,
    live_hold: Option<String>,
    live_expired: i64,
}

/// How often general admission looks again when the free rows it saw were locked by others.
const GA_TRIES: u32 = 40;

impl Store {
    /// Holds the named seats for the session, all or nothing.
    // Refusals (a taken seat, an expired hold) are buyers' outcomes, not faults: logged at debug;
    // storage failures are logged once as errors where the gateway answers them.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(session = %session, n = seats.len()))]
    pub async fn hold(&self, session: &SessionId, seats: &[SeatId]) -> Result<Hold, Error> {
        if seats.is_empty() {
            return Err(Error::NoSeats);
        }
        let ids: BTreeSet<&SeatId> = seats.iter().collect();
        if ids.len() != seats.len() {
            return Err(Error::DuplicateSeats);
        }
        let sorted: Vec<SeatId> = ids.into_iter().cloned().collect();
        let json = serde_json::to_string(&sorted)?;
        if self.dialect == Dialect::Postgres {
            return self
                .retrying(|| self.hold_pg(session, &sorted, &json))
                .await;
        }
        let busy = self.busy_seats(session, &sorted, &json).await?;
        if !busy.is_empty() {
            return Err(Error::SeatUnavailable { seats: busy });
        }
        self.retrying(|| self.hold_named_once(session, &sorted, &json))
            .await
    }

    /// Losers of a taken seat are turned away in one statement, without a transaction or a
    /// row lock: a seat seen owned now may free up a moment later, which is the same answer as
    /// losing the race. Winning is only ever decided by the conditional update below. An
    /// unusable session finds nothing here and gets its own error from the full path.
    async fn busy_seats(
        &self,
        session: &SessionId,
        sorted: &[SeatId],
        json: &str,
    ) -> Result<Vec<SeatId>, Error> {
        // Only the seat predicate differs. One seat (every loser of a hot seat asks for one) is
        // a plain `=`: PostgreSQL reuses one generic plan for it, where the array form is
        // planned again on every call.
        macro_rules! busy_sql {
            ($seats:literal) => {
                concat!(
                    "select seat_id from seats \
                     where event_id = (select event_id from admission_sessions \
                                       where session_id = $1 and ended_at is null and expires_at > NOW) \
                     and ", $seats, " \
                     and not (state = 'available' or (state = 'held' and hold_expires_at <= NOW)) \
                     order by seat_id"
                )
            };
        }
        let (sql, seats) = match sorted {
            [one] => (busy_sql!("seat_id = $2"), one.as_str()),
            _ => (busy_sql!("seat_id IN_JSON($2))"), json),
        };
        sqlx::query_scalar::<_, String>(self.sql(sql))
            .bind(session.as_str())
            .bind(seats)
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .map(trusted)
            .collect()
    }

    async fn hold_named_once(
        &self,
        session: &SessionId,
        sorted: &[SeatId],
        json: &str,
    ) -> Result<Hold, Error> {
        let (mut tx, h) = self.holder(session, sorted.len()).await?;
        // Lock in seat order: two buyers wanting {S3,S7} and {S7,S3} queue, never deadlock.
        let rows: Vec<Locked> = sqlx::query_as(self.sql(
            "select seat_id, state, hold_id, \
             case when state = 'held' and hold_expires_at <= NOW then 1 else 0 end as expired, \
             price_cents from seats \
             where event_id = $1 and seat_id IN_JSON($2)) \
             order by seat_id FOR_UPDATE",
        ))
        .bind(&h.event_id)
        .bind(json)
        .fetch_all(&mut *tx)
        .await?;
        if rows.len() != sorted.len() {
            let found: BTreeSet<&str> = rows.iter().map(|r| r.seat_id.as_str()).collect();
            let seats = sorted
                .iter()
                .filter(|s| !found.contains(s.as_str()))
                .cloned()
                .collect();
            return Err(Error::UnknownSeats { seats });
        }
        let busy: Vec<SeatId> = rows
            .iter()
            .filter(|r| !r.free())
            .map(|r| trusted(r.seat_id.clone()))
            .collect::<Result<_, _>>()?;
        if !busy.is_empty() {
            return Err(Error::SeatUnavailable { seats: busy });
        }
        self.take(tx, &h, sorted, json, &rows).await
    }

    /// Holds `quantity` seats of a general-admission section, whichever are free.
    #[tracing::instrument(skip_all, err(level = "debug"), fields(session = %session, section, quantity))]
    pub async fn hold_ga(
        &self,
        session: &SessionId,
        section: &str,
        quantity: u32,
    ) -> Result<Hold, Error> {
        if quantity == 0 {
            return Err(Error::NoSeats);
        }
        for attempt in 0..GA_TRIES {
            let got = match self.dialect {
                Dialect::Postgres => {
                    self.retrying(|| self.hold_ga_pg(session, section, quantity))
                        .await?
                }
                Dialect::Sqlite => {
                    self.retrying(|| self.hold_ga_once(session, section, quantity))
                        .await?
                }
            };
            if let Some(hold) = got {
                return Ok(hold);
            }
            // Short: the free rows we skipped may be locked by buyers who will roll back.
            // Only a plain count below the quantity is sold out; otherwise look again.
            if self.free_in_section(session, section).await? < i64::from(quantity) {
                return Err(Error::SoldOut);
            }
            let cap = 2u64 << attempt.min(5);
            tokio::time::sleep(Duration::from_millis(rand::random_range(1..=cap))).await;
        }
        Err(Error::SoldOut)
    }

    async fn hold_ga_once(
        &self,
        session: &SessionId,
        section: &str,
        quantity: u32,
    ) -> Result<Option<Hold>, Error> {
        let (mut tx, h) = self.holder(session, quantity as usize).await?;
        // SKIP LOCKED: buyers racing for a section each take different free rows at once
        // instead of queueing behind the same first rows.
        let rows: Vec<Locked> = sqlx::query_as(self.sql(
            "select seat_id, state, hold_id, \
             case when state = 'held' and hold_expires_at <= NOW then 1 else 0 end as expired, \
             price_cents from seats \
             where event_id = $1 and section = $2 \
             and (state = 'available' or (state = 'held' and hold_expires_at <= NOW)) \
             order by seat_id limit $3 SKIP_LOCKED",
        ))
        .bind(&h.event_id)
        .bind(section)
        .bind(i64::from(quantity))
        .fetch_all(&mut *tx)
        .await?;
        if rows.len() < quantity as usize {
            return Ok(None);
        }
        let sorted: Vec<SeatId> = rows
            .iter()
            .map(|r| trusted(r.seat_id.clone()))
            .collect::<Result<_, _>>()?;
        let json = serde_json::to_string(&sorted)?;
        self.take(tx, &h, &sorted, &json, &rows).await.map(Some)
    }

    async fn free_in_section(&self, session: &SessionId, section: &str) -> Result<i64, Error> {
        let n = sqlx::query_scalar(self.sql(
            "select count(*) as n from seats join admission_sessions s on s.event_id = seats.event_id \
             where s.session_id = $1 and seats.section = $2 \
             and (seats.state = 'available' or (seats.state = 'held' and seats.hold_expires_at <= NOW))",
        ))
        .bind(session.as_str())
        .bind(section)
        .fetch_one(&self.pool)
        .await?;
        Ok(n)
    }

    /// Opens the write transaction and reads the session's event and limits, refusing ended
    /// sessions and a second live hold.
    async fn holder(&self, session: &SessionId, n: usize) -> Result<(Tx, Holder), Error> {
        let mut tx = self.begin().await?;
        let row: HolderRow = sqlx::query_as(self.sql(
            "select s.event_id, MS(NOW) as now_ms, \
             case when s.ended_at is not null or s.expires_at <= NOW then 1 else 0 end as ended, \
             coalesce(e.hold_ttl_ms, e.hold_ttl_s * 1000) as ttl_ms, e.max_hold_s, e.max_seats_per_hold, \
             h.hold_id as live_hold, \
             case when h.state = 'held' and h.expires_at <= NOW then 1 else 0 end as live_expired \
             from admission_sessions s join events e on e.event_id = s.event_id \
             left join holds h on h.session_id = s.session_id and h.state in ('held', 'paying') \
             where s.session_id = $1",
        ))
        .bind(session.as_str())
        .fetch_optional(&mut *tx)
        .await?
        .ok_or(Error::SessionNotFound)?;
        if row.ended == 1 {
            return Err(Error::SessionEnded);
        }
        let max_seats = row.max_seats_per_hold;
        if n as i64 > max_seats {
            return Err(Error::TooManySeats { max: max_seats });
        }
        if let Some(live) = row.live_hold {
            // The session's hold ran out: that ends the session (DESIGN §3), so record it now
            // rather than let this session start over without queueing again.
            if row.live_expired == 1 {
                self.expire_holds(&mut tx, &serde_json::to_string(&[live])?)
                    .await?;
                tx.commit().await?;
                return Err(Error::SessionEnded);
            }
            return Err(Error::HoldLimit);
        }
        let holder = Holder {
            session_id: session.as_str().to_owned(),
            event_id: row.event_id,
            now_ms: row.now_ms,
            ttl_ms: row.ttl_ms,
            max_hold_ms: row.max_hold_s * 1000,
            max_seats,
        };
        Ok((tx, holder))
    }

    /// The conditional update, judged on its row count, then the hold row and its log line.
    async fn take(
        &self,
        mut tx: Tx,
        h: &Holder,
        sorted: &[SeatId],
        json: &str,
        rows: &[Locked],
    ) -> Result<Hold, Error> {
        debug_assert!(sorted.len() as i64 <= h.max_seats);
        let hold_id = ids::generate("h");
        let expires_at_ms = h.now_ms + h.ttl_ms;
        let max_expires_at_ms = h.now_ms + h.max_hold_ms;
        self.stamp_events(&mut tx, [h.event_id.as_str()]).await?;
        let taken = sqlx::query(self.sql(
            "update seats set state = 'held', hold_id = $3, hold_expires_at = TS($4), \
             payment_attempt_id = null, version = version + 1, availability_version = SEAT_STAMP \
             where event_id = $1 and seat_id IN_JSON($2)) \
             and (state = 'available' or (state = 'held' and hold_expires_at <= NOW))",
        ))
        .bind(&h.event_id)
        .bind(json)
        .bind(&hold_id)
        .bind(expires_at_ms)
        .execute(&mut *tx)
        .await?;
        if taken.rows_affected() != sorted.len() as u64 {
            return Err(Error::SeatUnavailable {
                seats: sorted.to_vec(),
            });
        }
        // Seats taken over from expired holds: those holds are over, in this same transaction.
        let previous: BTreeSet<&str> = rows.iter().filter_map(|r| r.hold_id.as_deref()).collect();
        if !previous.is_empty() {
            self.expire_holds(&mut tx, &serde_json::to_string(&previous)?)
                .await?;
        }
        let receipt_key = self.receipts.issue();
        let total_cents: i64 = rows.iter().map(|r| r.price_cents).sum();
        let inserted = sqlx::query(self.sql(
            "insert into holds (hold_id, event_id, session_id, receipt_key, state, seats, total_cents, \
             created_at, expires_at, max_expires_at) \
             values ($1, $2, $3, $4, 'held', $5, $6, TS($7), TS($8), TS($9))",
        ))
        .bind(&hold_id)
        .bind(&h.event_id)
        .bind(&h.session_id)
        .bind(&receipt_key)
        .bind(json)
        .bind(total_cents)
        .bind(h.now_ms)
        .bind(expires_at_ms)
        .bind(max_expires_at_ms)
        .execute(&mut *tx)
        .await;
        match inserted {
            Err(e) if crate::error::is_live_hold_conflict(&e) => return Err(Error::HoldLimit),
            other => other?,
        };
        self.log(
            &mut tx,
            Entry {
                event_id: &h.event_id,
                kind: "ReservationCreated",
                hold_id: Some(&hold_id),
                seats: Some(json),
                ..Entry::default()
            },
        )
        .await?;
        tx.commit().await?;
        crate::failpoint::hit(crate::failpoint::Point::AfterHold, &h.event_id).await?;
        Ok(Hold {
            hold_id: trusted::<HoldId>(hold_id)?,
            event_id: trusted(h.event_id.clone())?,
            session_id: trusted(h.session_id.clone())?,
            receipt_key,
            state: HoldState::Held,
            seats: sorted.to_vec(),
            total_cents,
            created_at_ms: h.now_ms,
            expires_at_ms,
            max_expires_at_ms,
            order_id: None,
            last_payment_error: None,
        })
    }

    /// Marks `held` holds whose time has passed as `expired` (ids as a JSON array), logging
    /// HoldExpired and ending their sessions. Returns how many changed.
    pub(crate) async fn expire_holds(&self, tx: &mut Tx, hold_ids: &str) -> Result<usize, Error> {
        let ended: Vec<(String, String, String, String)> = sqlx::query_as(self.sql(
            "update holds set state = 'expired', ended_at = NOW \
             where hold_id IN_JSON($1)) and state = 'held' and expires_at <= NOW \
             returning hold_id, event_id, session_id, seats",
        ))
        .bind(hold_ids)
        .fetch_all(&mut **tx)
        .await?;
        for (hold, event, session, seats) in &ended {
            self.log(
                tx,
                Entry {
                    event_id: event,
                    kind: "HoldExpired",
                    hold_id: Some(hold),
                    seats: Some(seats),
                    ..Entry::default()
                },
            )
            .await?;
            self.end_hold_session(tx, event, session, hold, "expired")
                .await?;
        }
        Ok(ended.len())
    }
}
