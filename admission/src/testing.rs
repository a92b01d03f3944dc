//! An in-memory [`AdmissionDb`] for this crate's tests and benches (feature `testing`). The
//! gateway's tests exercise the real one against PostgreSQL.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;

use async_trait::async_trait;
use time::OffsetDateTime;

use crate::clock::Clock;
use crate::db::{AdmissionDb, Availability, Checkpoint, Control, DbError, SessionRecord, TickLog};

pub use crate::clock::Clock as TestClock;

#[derive(Clone, Debug)]
struct Session {
    id: String,
    ticket: String,
    expires_ms: i64,
    ended: bool,
}

#[derive(Default)]
struct State {
    controls: HashMap<String, Control>,
    sessions: HashMap<(String, String), Session>,
    checkpoints: HashMap<String, Checkpoint>,
    availability: HashMap<String, Availability>,
    /// Places offered per event, in the order the ticks recorded them (first write kept).
    offers: HashMap<String, (Vec<u64>, std::collections::HashSet<u64>)>,
    joins_total: HashMap<String, u64>,
    /// While set, writing the log of offers fails, as a database that times out would.
    offer_log_down: bool,
    /// Awaited once, the next time the log of offers is asked about a place.
    before_lookup: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

pub struct MemoryDb {
    clock: Clock,
    state: Mutex<State>,
}

impl MemoryDb {
    pub fn new(clock: Clock) -> Self {
        MemoryDb {
            clock,
            state: Mutex::new(State::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The places recorded as offered for `event`, in the order they were recorded.
    pub fn recorded_offers(&self, event: &str) -> Vec<u64> {
        self.lock()
            .offers
            .get(event)
            .map(|(order, _)| order.clone())
            .unwrap_or_default()
    }

    /// Makes writes of the log of offers fail (`true`) or succeed again.
    pub fn set_offer_log_down(&self, down: bool) {
        self.lock().offer_log_down = down;
    }

    /// Runs `step` the next time the log of offers is asked whether a place was offered, before
    /// it answers: what else happens while a returning ticket's status waits on the database.
    pub fn before_next_lookup(&self, step: impl Future<Output = ()> + Send + 'static) {
        self.lock().before_lookup = Some(Box::pin(step));
    }

    /// The greatest join count recorded for `event`.
    pub fn recorded_joins(&self, event: &str) -> u64 {
        self.lock().joins_total.get(event).copied().unwrap_or(0)
    }

    /// Creates or replaces an event's control row (bumping nothing: set `version` yourself).
    pub fn set_control(&self, event: &str, control: Control) {
        self.lock().controls.insert(event.to_owned(), control);
    }

    /// Applies a change to the control row and bumps its version, as the organizer API does.
    pub fn update_control(&self, event: &str, change: impl FnOnce(&mut Control)) {
        if let Some(c) = self.lock().controls.get_mut(event) {
            change(c);
            c.version += 1;
        }
    }

    pub fn set_availability(&self, event: &str, availability: Availability) {
        self.lock()
            .availability
            .insert(event.to_owned(), availability);
    }

    /// Every session ever opened for the event: (ticket, session id).
    pub fn sessions(&self, event: &str) -> Vec<(String, String)> {
        self.lock()
            .sessions
            .iter()
            .filter(|((e, _), _)| e == event)
            .map(|(_, s)| (s.ticket.clone(), s.id.clone()))
            .collect()
    }
}

/// A control row with the schema's defaults, opening at `opens_at`.
pub fn control(opens_at: OffsetDateTime, seed: &str) -> Control {
    Control {
        rate_per_min: 600,
        max_active: 1000,
        session_s: 1800,
        offer_s: 120,
        paused: false,
        closed: false,
        version: 1,
        opens_at,
        seed: seed.to_owned(),
        max_seats_per_buyer: 6,
        priority_permille: 0,
        access: crate::entry::Access::Open,
        identity: None,
        mode: crate::Mode::Normal,
        fail_open: false,
        message: None,
    }
}

fn record(s: &Session, created: bool) -> SessionRecord {
    SessionRecord {
        session_id: s.id.clone(),
        ticket_id: s.ticket.clone(),
        expires_at: at(s.expires_ms),
        created,
    }
}

fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

#[async_trait]
impl AdmissionDb for MemoryDb {
    async fn control(&self, event: &str) -> Result<Option<Control>, DbError> {
        Ok(self.lock().controls.get(event).cloned())
    }

    async fn open_events(&self) -> Result<Vec<String>, DbError> {
        Ok(self
            .lock()
            .controls
            .iter()
            .filter(|(_, c)| !c.closed)
            .map(|(event, _)| event.clone())
            .collect())
    }

    async fn open_session(
        &self,
        event: &str,
        ticket: &str,
        _place: u64,
        session_s: u32,
    ) -> Result<SessionRecord, DbError> {
        let now = self.clock.now_ms();
        let mut st = self.lock();
        let key = (event.to_owned(), ticket.to_owned());
        let (s, created) = match st.sessions.get(&key) {
            Some(s) => (s.clone(), false),
            None => {
                let s = Session {
                    id: uuid::Uuid::now_v7().to_string(),
                    ticket: ticket.to_owned(),
                    expires_ms: now + i64::from(session_s) * 1000,
                    ended: false,
                };
                st.sessions.insert(key, s.clone());
                (s, true)
            }
        };
        Ok(record(&s, created))
    }

    async fn session(&self, event: &str, ticket: &str) -> Result<Option<SessionRecord>, DbError> {
        let st = self.lock();
        Ok(st
            .sessions
            .get(&(event.to_owned(), ticket.to_owned()))
            .map(|s| SessionRecord {
                session_id: s.id.clone(),
                ticket_id: s.ticket.clone(),
                expires_at: at(s.expires_ms),
                created: false,
            }))
    }

    async fn end_session(&self, event: &str, session_id: &str, _: &str) -> Result<(), DbError> {
        let mut st = self.lock();
        for ((e, _), s) in st.sessions.iter_mut() {
            if e == event && s.id == session_id {
                s.ended = true;
            }
        }
        Ok(())
    }

    async fn open_session_capped(
        &self,
        event: &str,
        ticket: &str,
        _place: u64,
        session_s: u32,
        max_active: u32,
    ) -> Result<Option<SessionRecord>, DbError> {
        // One lock for the count and the insert, as the database's conditional insert is one
        // judgement.
        let now = self.clock.now_ms();
        let mut st = self.lock();
        let key = (event.to_owned(), ticket.to_owned());
        if let Some(s) = st.sessions.get(&key) {
            return Ok(Some(record(s, false)));
        }
        let live = st
            .sessions
            .iter()
            .filter(|((e, _), s)| e == event && !s.ended && s.expires_ms > now)
            .count() as u64;
        if live >= u64::from(max_active) {
            return Ok(None);
        }
        let s = Session {
            id: uuid::Uuid::now_v7().to_string(),
            ticket: ticket.to_owned(),
            expires_ms: now + i64::from(session_s) * 1000,
            ended: false,
        };
        st.sessions.insert(key, s.clone());
        Ok(Some(record(&s, true)))
    }

    async fn active_sessions(&self, event: &str) -> Result<u64, DbError> {
        let now = self.clock.now_ms();
        let st = self.lock();
        Ok(st
            .sessions
            .iter()
            .filter(|((e, _), s)| e == event && !s.ended && s.expires_ms > now)
            .count() as u64)
    }

    async fn admitted_total(&self, event: &str) -> Result<u64, DbError> {
        Ok(self
            .lock()
            .sessions
            .keys()
            .filter(|(e, _)| e == event)
            .count() as u64)
    }

    async fn load_checkpoint(&self, event: &str) -> Result<Option<Checkpoint>, DbError> {
        Ok(self.lock().checkpoints.get(event).cloned())
    }

    /// As the real stores: within one epoch every counter and frontier only moves forward, so
    /// a recovery story cannot pass here on a checkpoint they would have kept.
    async fn save_checkpoint(&self, event: &str, cp: &Checkpoint) -> Result<(), DbError> {
        let mut state = self.lock();
        let saved = state
            .checkpoints
            .entry(event.to_owned())
            .or_insert_with(|| cp.clone());
        if saved.epoch != cp.epoch {
            *saved = cp.clone();
            return Ok(());
        }
        let further = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        saved.join_seq = saved.join_seq.max(cp.join_seq);
        saved.served = saved.served.max(cp.served);
        saved.fifo_through = saved.fifo_through.max(cp.fifo_through);
        saved.prequeue_through = further(saved.prequeue_through, cp.prequeue_through);
        saved.priority_through = further(saved.priority_through, cp.priority_through);
        Ok(())
    }

    async fn availability(&self, event: &str) -> Result<Availability, DbError> {
        Ok(self
            .lock()
            .availability
            .get(event)
            .copied()
            .unwrap_or(Availability {
                available: 1,
                ..Availability::default()
            }))
    }

    async fn was_offered(&self, event: &str, place: u64) -> Result<bool, DbError> {
        let step = self.lock().before_lookup.take();
        if let Some(step) = step {
            step.await;
        }
        Ok(self
            .lock()
            .offers
            .get(event)
            .is_some_and(|(_, seen)| seen.contains(&place)))
    }

    async fn record_tick(&self, event: &str, log: &TickLog<'_>) -> Result<(), DbError> {
        let mut state = self.lock();
        if state.offer_log_down {
            return Err(DbError::new("the log of offers cannot be written"));
        }
        let (order, seen) = state.offers.entry(event.to_owned()).or_default();
        for place in log.offered {
            if seen.insert(*place) {
                order.push(*place);
            }
        }
        if let Some(joins) = log.joins_total {
            let total = state.joins_total.entry(event.to_owned()).or_default();
            *total = (*total).max(joins);
        }
        Ok(())
    }
}

/// A private `redis-server` on a free loopback port with no persistence, killed on drop: for
/// tests and benchmarks that wipe Redis or measure its memory, away from the shared server.
pub struct ThrowawayRedis {
    child: std::process::Child,
    pub url: String,
}

impl ThrowawayRedis {
    /// Panics with a clear message when `redis-server` is not installed: tests never skip.
    pub fn start() -> ThrowawayRedis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server (Debian package redis-server) must be installed");
        ThrowawayRedis {
            child,
            url: format!("redis://127.0.0.1:{port}"),
        }
    }
}

impl Drop for ThrowawayRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
