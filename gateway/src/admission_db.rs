//! Admission's view of the database, implemented over the reservation store: the gateway is
//! the only crate that knows both sides.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;

use admission::{
    AdmissionDb, Availability, Checkpoint, Control, DbError, IdentityRule, SessionRecord, TickLog,
};
use reservation::{EndedHolds, EventId, QueueCheckpoint, SessionId, Store, TicketId};
use tokio::time::{Duration, Instant};

use crate::clock::at;

/// How long the ended holds counted for an event are reused. They feed only the chance of a
/// seat (how many held seats come back), which moves over many holds, while counting them
/// passes over the sale's whole history and the meter asks ten times a second.
const ENDED_HOLDS_FOR: Duration = Duration::from_secs(1);

pub struct StoreAdmissionDb {
    pub store: Store,
    /// Each event's identity rule as last read, so its key is parsed only when it changes.
    identities: Mutex<HashMap<String, IdentityRule>>,
    /// Each event's ended holds as last counted, and when.
    ended_holds: Mutex<HashMap<String, (Instant, EndedHolds)>>,
}

impl StoreAdmissionDb {
    pub fn new(store: Store) -> Self {
        StoreAdmissionDb {
            store,
            identities: Mutex::default(),
            ended_holds: Mutex::default(),
        }
    }

    /// The event's ended holds, counted again once the last count is `ENDED_HOLDS_FOR` old.
    async fn ended_holds(&self, event: &EventId) -> Result<EndedHolds, DbError> {
        let kept = {
            let known = self
                .ended_holds
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            known
                .get(event.as_str())
                .filter(|(at, _)| at.elapsed() < ENDED_HOLDS_FOR)
                .map(|(_, ended)| *ended)
        };
        if let Some(ended) = kept {
            return Ok(ended);
        }
        let ended = self.store.ended_holds(event).await.map_err(db_error)?;
        self.ended_holds
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(event.as_str().to_owned(), (Instant::now(), ended));
        Ok(ended)
    }

    /// The event's identity rule from the stored row, reusing the parsed key when unchanged.
    fn identity(&self, event: &EventId, access: &reservation::EventAccess) -> Option<IdentityRule> {
        let mut known = self
            .identities
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let rule = crate::entry::identity_rule(access, known.get(event.as_str()));
        match &rule {
            Some(rule) => {
                known.insert(event.as_str().to_owned(), rule.clone());
            }
            None => {
                known.remove(event.as_str());
            }
        }
        rule
    }
}

fn db_error(error: impl std::error::Error + Send + Sync + 'static) -> DbError {
    DbError::new(error)
}

fn event_id(event: &str) -> Result<EventId, DbError> {
    event.parse::<EventId>().map_err(db_error)
}

fn record(session: reservation::Session, created: bool) -> SessionRecord {
    SessionRecord {
        session_id: session.session_id.as_str().to_owned(),
        ticket_id: session.ticket_id.as_str().to_owned(),
        expires_at: at(session.expires_at_ms),
        created,
    }
}

fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[async_trait]
impl AdmissionDb for StoreAdmissionDb {
    async fn control(&self, event: &str) -> Result<Option<Control>, DbError> {
        let Ok(event) = event.parse::<EventId>() else {
            return Ok(None);
        };
        let Some(c) = self
            .store
            .admission_control(&event)
            .await
            .map_err(db_error)?
        else {
            return Ok(None);
        };
        let clamp = |v: i64| u32::try_from(v.max(0)).unwrap_or(u32::MAX);
        Ok(Some(Control {
            rate_per_min: clamp(c.rate_per_min),
            max_active: clamp(c.max_active),
            session_s: clamp(c.session_s),
            offer_s: clamp(c.offer_s),
            paused: c.paused,
            closed: c.closed,
            version: c.version,
            opens_at: at(c.opens_at_ms),
            seed: c.fairness_seed,
            max_seats_per_buyer: clamp(c.max_seats_per_hold),
            priority_permille: clamp(c.priority_permille).min(1000),
            access: crate::entry::access_rule(&c.access),
            identity: self.identity(&event, &c.access),
            mode: match c.mode {
                reservation::AdmissionMode::Normal => admission::Mode::Normal,
                reservation::AdmissionMode::PassThrough => admission::Mode::PassThrough,
                reservation::AdmissionMode::Maintenance => admission::Mode::Maintenance,
            },
            fail_open: c.on_backend_down == reservation::BackendDown::FailOpen,
            message: c.message.map(|m| admission::QueueMessage {
                text: m.text,
                level: match m.level {
                    reservation::MessageLevel::Info => admission::MessageLevel::Info,
                    reservation::MessageLevel::Warning => admission::MessageLevel::Warning,
                },
            }),
        }))
    }

    async fn open_events(&self) -> Result<Vec<String>, DbError> {
        let live = self.store.live_event_limits().await.map_err(db_error)?;
        Ok(live.into_iter().map(|e| e.event_id).collect())
    }

    async fn open_session(
        &self,
        event: &str,
        ticket: &str,
        place: u64,
        session_s: u32,
    ) -> Result<SessionRecord, DbError> {
        let ticket_id = ticket.parse::<TicketId>().map_err(db_error)?;
        let event = event_id(event)?;
        let place = i64::try_from(place).ok();
        let session = self
            .store
            .open_session(&event, &ticket_id, place, i64::from(session_s))
            .await
            .map_err(db_error)?;
        let created = session.created;
        Ok(record(session, created))
    }

    async fn open_session_capped(
        &self,
        event: &str,
        ticket: &str,
        place: u64,
        session_s: u32,
        max_active: u32,
    ) -> Result<Option<SessionRecord>, DbError> {
        let ticket_id = ticket.parse::<TicketId>().map_err(db_error)?;
        let event = event_id(event)?;
        let place = i64::try_from(place).ok().filter(|p| *p > 0);
        let session = self
            .store
            .open_session_capped(
                &event,
                &ticket_id,
                place,
                i64::from(session_s),
                i64::from(max_active),
            )
            .await
            .map_err(db_error)?;
        Ok(session.map(|s| {
            let created = s.created;
            record(s, created)
        }))
    }

    async fn session(&self, event: &str, ticket: &str) -> Result<Option<SessionRecord>, DbError> {
        let ticket_id = ticket.parse::<TicketId>().map_err(db_error)?;
        let found = self
            .store
            .session_of_ticket(&event_id(event)?, &ticket_id)
            .await
            .map_err(db_error)?;
        Ok(found.map(|s| record(s, false)))
    }

    async fn end_session(
        &self,
        _event: &str,
        session_id: &str,
        reason: &str,
    ) -> Result<(), DbError> {
        let session = session_id.parse::<SessionId>().map_err(db_error)?;
        match self.store.end_session(&session, reason).await {
            Ok(_) | Err(reservation::Error::SessionNotFound) => Ok(()),
            Err(error) => Err(db_error(error)),
        }
    }

    async fn active_sessions(&self, event: &str) -> Result<u64, DbError> {
        Ok(count(
            self.store
                .active_sessions(&event_id(event)?)
                .await
                .map_err(db_error)?,
        ))
    }

    async fn admitted_total(&self, event: &str) -> Result<u64, DbError> {
        Ok(count(
            self.store
                .admitted_total(&event_id(event)?)
                .await
                .map_err(db_error)?,
        ))
    }

    async fn load_checkpoint(&self, event: &str) -> Result<Option<Checkpoint>, DbError> {
        let found = self
            .store
            .load_checkpoint(&event_id(event)?)
            .await
            .map_err(db_error)?;
        Ok(found.map(|c| Checkpoint {
            epoch: c.epoch,
            join_seq: count(c.join_seq),
            served: count(c.served),
            fifo_through: count(c.fifo_through),
            prequeue_through: c.prequeue_through,
            priority_through: c.priority_through,
        }))
    }

    async fn save_checkpoint(&self, event: &str, checkpoint: &Checkpoint) -> Result<(), DbError> {
        let saved = QueueCheckpoint {
            epoch: checkpoint.epoch.clone(),
            join_seq: i64::try_from(checkpoint.join_seq).unwrap_or(i64::MAX),
            served: i64::try_from(checkpoint.served).unwrap_or(i64::MAX),
            fifo_through: i64::try_from(checkpoint.fifo_through).unwrap_or(i64::MAX),
            prequeue_through: checkpoint.prequeue_through,
            priority_through: checkpoint.priority_through,
        };
        self.store
            .save_checkpoint(&event_id(event)?, &saved)
            .await
            .map_err(db_error)
    }

    async fn availability(&self, event: &str) -> Result<Availability, DbError> {
        let event = event_id(event)?;
        let (a, ended) = tokio::try_join!(
            async { self.store.seat_availability(&event).await.map_err(db_error) },
            self.ended_holds(&event),
        )?;
        Ok(Availability {
            available: count(a.available),
            held_or_paying: count(a.held_or_paying),
            sold: count(a.sold),
            live_holds: count(a.live_holds),
            holds_sold: count(ended.sold),
            holds_returned: count(ended.returned),
        })
    }

    async fn record_tick(&self, event: &str, log: &TickLog<'_>) -> Result<(), DbError> {
        let event = event_id(event)?;
        let offers = self
            .store
            .record_offers(&event, log.offered, i64::from(log.offer_s) * 1000);
        let joins = async {
            match log.joins_total {
                Some(total) => {
                    let total = i64::try_from(total).unwrap_or(i64::MAX);
                    self.store.record_joins(&event, total).await
                }
                None => Ok(()),
            }
        };
        tokio::try_join!(offers, joins).map_err(db_error)?;
        Ok(())
    }

    async fn was_offered(&self, event: &str, place: u64) -> Result<bool, DbError> {
        self.store
            .was_offered(&event_id(event)?, i64::try_from(place).unwrap_or(i64::MAX))
            .await
            .map_err(db_error)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // a test: a panic is the failure report
    use super::*;
    use reservation::testing::{fresh_sqlite, seeded_event, session};

    /// A hold taken and released: its seat comes back, and it ends among the returned.
    async fn give_back(store: &Store, event: &EventId, seat: &str) {
        let holder = session(store, event).await;
        let hold = store.hold(&holder, &[seat.parse().unwrap()]).await.unwrap();
        store.release(&holder, &hold.hold_id).await.unwrap();
    }

    #[tokio::test]
    async fn seats_are_counted_every_tick_and_ended_holds_once_a_second() {
        let store = fresh_sqlite().await;
        // Holds are judged once a hold's life old: a short life keeps the test short.
        const LIFE_MS: u64 = 100;
        let life = Duration::from_millis(LIFE_MS);
        let event = seeded_event(&store, 4, |e| e.hold_ttl_ms = Some(LIFE_MS as i64)).await;
        let db = StoreAdmissionDb::new(store.clone());
        give_back(&store, &event, "S00001").await;
        tokio::time::sleep(life + Duration::from_millis(50)).await;
        let first = db.availability(event.as_str()).await.unwrap();
        assert_eq!((first.available, first.holds_returned), (4, 1));

        // A second hold: the seat it takes shows at once, its end not before a second.
        let holder = session(&store, &event).await;
        let hold = store
            .hold(&holder, &["S00002".parse().unwrap()])
            .await
            .unwrap();
        let held = db.availability(event.as_str()).await.unwrap();
        assert_eq!((held.available, held.held_or_paying), (3, 1));
        store.release(&holder, &hold.hold_id).await.unwrap();
        tokio::time::sleep(life + Duration::from_millis(50)).await;
        let kept = db.availability(event.as_str()).await.unwrap();
        assert_eq!((kept.available, kept.holds_returned), (4, 1));

        tokio::time::sleep(ENDED_HOLDS_FOR + Duration::from_millis(50)).await;
        let later = db.availability(event.as_str()).await.unwrap();
        assert_eq!(later.holds_returned, 2);
    }
}
