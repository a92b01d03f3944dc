//! Events (one on-sale each, with every setting defaulted) and their seats.

use sha2::{Digest, Sha256};

use crate::Error;
use crate::ids::{EventId, SeatId};
use crate::store::Store;

/// What an organizer gives to create an event; `NewEvent::new` defaults everything else.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub event_id: EventId,
    pub name: String,
    /// Unix milliseconds; `None` opens now (by the database clock).
    pub opens_at_ms: Option<i64>,
    pub hold_ttl_s: i64,
    /// Test-only override of `hold_ttl_s` in milliseconds (expiry races use 150 ms holds).
    pub hold_ttl_ms: Option<i64>,
    pub max_hold_s: i64,
    pub max_seats_per_hold: i64,
    pub resolve_s: i64,
    pub abandon_s: i64,
    pub currency: String,
    pub rate_per_min: i64,
    pub max_active: i64,
    pub session_s: i64,
    pub offer_s: i64,
}

impl NewEvent {
    pub fn new(event_id: EventId, name: impl Into<String>) -> NewEvent {
        NewEvent {
            event_id,
            name: name.into(),
            opens_at_ms: None,
            hold_ttl_s: 300,
            hold_ttl_ms: None,
            max_hold_s: 900,
            max_seats_per_hold: 6,
            resolve_s: 60,
            abandon_s: 600,
            currency: "usd".into(),
            rate_per_min: 600,
            max_active: 1000,
            session_s: 1800,
            offer_s: 120,
        }
    }
}

impl NewEvent {
    /// Every setting within its bound (`limits`) and consistent with the others: a hold's
    /// first life within its longest, and a session long enough for a hold's longest life
    /// plus its payment's abandon deadline.
    pub fn validate(&self) -> Result<(), Error> {
        use crate::limits::{self as l, within};
        within("hold_ttl_s", self.hold_ttl_s, 1, l::HOLD_S)?;
        if let Some(ms) = self.hold_ttl_ms {
            within("hold_ttl_ms", ms, 1, l::HOLD_S * 1000)?;
        }
        within("max_hold_s", self.max_hold_s, 1, l::HOLD_S)?;
        within(
            "max_seats_per_hold",
            self.max_seats_per_hold,
            1,
            l::SEATS_PER_HOLD,
        )?;
        within("resolve_s", self.resolve_s, 1, l::RESOLVE_S)?;
        within("abandon_s", self.abandon_s, 1, l::ABANDON_S)?;
        within("rate_per_min", self.rate_per_min, 0, l::RATE_PER_MIN)?;
        within("max_active", self.max_active, 0, l::MAX_ACTIVE)?;
        within("session_s", self.session_s, 1, l::SESSION_S)?;
        within("offer_s", self.offer_s, 1, l::OFFER_S)?;
        if self.hold_ttl_s > self.max_hold_s {
            return Err(Error::Inconsistent("hold_ttl_s must not exceed max_hold_s"));
        }
        if self.session_s < self.max_hold_s + self.abandon_s {
            return Err(Error::Inconsistent(
                "session_s must be at least max_hold_s + abandon_s",
            ));
        }
        Ok(())
    }
}

impl NewSeat {
    fn validate(&self) -> Result<(), Error> {
        use crate::limits::{self as l, within};
        within("price_cents", self.price_cents, 0, l::PRICE_CENTS)?;
        within("number", self.number, 0, l::SEAT_NUMBER)
    }
}

/// An event as stored. `seed_commitment` = hex(sha256(`fairness_seed` as text)).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Event {
    #[sqlx(try_from = "String")]
    pub event_id: EventId,
    pub name: String,
    pub opens_at_ms: i64,
    pub hold_ttl_s: i64,
    pub hold_ttl_ms: Option<i64>,
    pub max_hold_s: i64,
    pub max_seats_per_hold: i64,
    pub resolve_s: i64,
    pub abandon_s: i64,
    pub currency: String,
    pub fairness_seed: String,
    pub seed_commitment: String,
    pub created_at_ms: i64,
    /// The organizer's branding, as validated JSON (`look`).
    pub branding: Option<String>,
    /// The origins allowed to frame the event's page, as a JSON array (`look`).
    pub frame_ancestors: Option<String>,
}

/// One seat to add.
#[derive(Debug, Clone)]
pub struct NewSeat {
    pub seat_id: SeatId,
    pub section: String,
    pub row_label: String,
    pub number: i64,
    pub price_cents: i64,
}

impl Store {
    /// Creates the event and its admission controls with a fresh fairness seed.
    #[tracing::instrument(skip_all, err, fields(event = %e.event_id))]
    pub async fn create_event(&self, e: NewEvent) -> Result<Event, Error> {
        e.validate()?;
        let seed = hex::encode(rand::random::<[u8; 32]>());
        let commitment = hex::encode(Sha256::digest(seed.as_bytes()));
        let mut tx = self.begin().await?;
        sqlx::query(self.sql(
            "insert into events (event_id, name, opens_at, hold_ttl_s, hold_ttl_ms, max_hold_s, \
             max_seats_per_hold, resolve_s, abandon_s, currency, fairness_seed, seed_commitment) \
             values ($1, $2, coalesce(TS($3), NOW), $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        ))
        .bind(e.event_id.as_str())
        .bind(&e.name)
        .bind(e.opens_at_ms)
        .bind(e.hold_ttl_s)
        .bind(e.hold_ttl_ms)
        .bind(e.max_hold_s)
        .bind(e.max_seats_per_hold)
        .bind(e.resolve_s)
        .bind(e.abandon_s)
        .bind(&e.currency)
        .bind(&seed)
        .bind(&commitment)
        .execute(&mut *tx)
        .await
        // Two organizers creating one id at once: the primary key lets exactly one in.
        .map_err(|e| {
            if crate::error::is_event_id_taken(&e) {
                Error::EventExists
            } else {
                e.into()
            }
        })?;
        sqlx::query(
            "insert into admission_controls (event_id, rate_per_min, max_active, session_s, offer_s) \
             values ($1, $2, $3, $4, $5)",
        )
        .bind(e.event_id.as_str())
        .bind(e.rate_per_min)
        .bind(e.max_active)
        .bind(e.session_s)
        .bind(e.offer_s)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        self.get_event(&e.event_id).await
    }

    pub async fn get_event(&self, event: &EventId) -> Result<Event, Error> {
        sqlx::query_as::<_, Event>(self.sql(
            "select event_id, name, MS(opens_at) as opens_at_ms, hold_ttl_s, hold_ttl_ms, max_hold_s, \
             max_seats_per_hold, resolve_s, abandon_s, currency, fairness_seed, seed_commitment, \
             MS(created_at) as created_at_ms, branding, frame_ancestors from events where event_id = $1",
        ))
        .bind(event.as_str())
        .fetch_optional(&self.pool)
        .await?
        .ok_or(Error::EventNotFound)
    }

    /// Adds seats; seats that already exist are left as they are (safe to repeat).
    /// Returns how many rows were new.
    #[tracing::instrument(skip_all, err, fields(event = %event, n = seats.len()))]
    /// At most `limits::SEATS_PER_REQUEST` per call, and the event stays within
    /// `limits::SEATS_PER_EVENT` (seats already there count, repeats included).
    pub async fn add_seats(&self, event: &EventId, seats: &[NewSeat]) -> Result<u64, Error> {
        use crate::limits::{SEATS_PER_EVENT, SEATS_PER_REQUEST, within};
        let asked = i64::try_from(seats.len()).unwrap_or(i64::MAX);
        within("seats", asked, 1, SEATS_PER_REQUEST)?;
        seats.iter().try_for_each(NewSeat::validate)?;
        self.get_event(event).await?;
        let have = self.seat_count(event).await?;
        if have.saturating_add(asked) > SEATS_PER_EVENT {
            return Err(Error::OutOfRange {
                field: "seats of the event",
                min: 0,
                max: SEATS_PER_EVENT,
            });
        }
        let mut added = 0;
        for chunk in seats.chunks(500) {
            let mut sql = String::from(
                "insert into seats (event_id, seat_id, section, row_label, number, price_cents) values ",
            );
            for i in 0..chunk.len() {
                let b = i * 5;
                if i > 0 {
                    sql.push(',');
                }
                sql.push_str(&format!(
                    "($1, ${}, ${}, ${}, ${}, ${})",
                    b + 2,
                    b + 3,
                    b + 4,
                    b + 5,
                    b + 6
                ));
            }
            sql.push_str(" on conflict (event_id, seat_id) do nothing");
            let mut q = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(event.as_str());
            for s in chunk {
                q = q
                    .bind(s.seat_id.as_str())
                    .bind(&s.section)
                    .bind(&s.row_label)
                    .bind(s.number)
                    .bind(s.price_cents);
            }
            added += q.execute(&self.pool).await?.rows_affected();
        }
        Ok(added)
    }

    /// Adds `rows` × `per_row` seats named `{section}-{row}-{n}` (rows A, B, …, Z, AA, …).
    /// The block is bounded (`limits::generated_seats`) before a single seat is built.
    pub async fn generate_seats(
        &self,
        event: &EventId,
        section: &str,
        rows: u32,
        per_row: u32,
        price_cents: i64,
    ) -> Result<u64, Error> {
        let n = crate::limits::generated_seats(rows, per_row)?;
        crate::limits::within("price_cents", price_cents, 0, crate::limits::PRICE_CENTS)?;
        let mut seats = Vec::with_capacity(usize::try_from(n).unwrap_or(0));
        for r in 0..rows {
            let label = row_label(r);
            for n in 1..=per_row {
                seats.push(NewSeat {
                    seat_id: format!("{section}-{label}-{n}").parse()?,
                    section: section.to_owned(),
                    row_label: label.clone(),
                    number: i64::from(n),
                    price_cents,
                });
            }
        }
        self.add_seats(event, &seats).await
    }

    /// How many seats the event has.
    pub async fn seat_count(&self, event: &EventId) -> Result<i64, Error> {
        Ok(
            sqlx::query_scalar("select count(*) as n from seats where event_id = $1")
                .bind(event.as_str())
                .fetch_one(&self.pool)
                .await?,
        )
    }
}

/// 0 → A, 25 → Z, 26 → AA: spreadsheet-style row names.
fn row_label(mut r: u32) -> String {
    let mut out = Vec::new();
    loop {
        out.push(b'A' + (r % 26) as u8);
        if r < 26 {
            break;
        }
        r = r / 26 - 1;
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn row_labels_run_like_a_spreadsheet() {
        assert_eq!(super::row_label(0), "A");
        assert_eq!(super::row_label(25), "Z");
        assert_eq!(super::row_label(26), "AA");
        assert_eq!(super::row_label(27), "AB");
    }
}
