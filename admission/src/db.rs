//! What admission needs from the database, asked through one small trait that the gateway
//! implements over the reservation store (`admission_controls`, `admission_sessions`,
//! `admission_checkpoints`, `events`, `seats`).

use async_trait::async_trait;
use time::OffsetDateTime;

/// The database failed; opaque to admission, logged by the gateway.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DbError(pub Box<dyn std::error::Error + Send + Sync + 'static>);

impl DbError {
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        DbError(e.into())
    }
}

/// One event's admission controls and fairness seed, read on every tick.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub rate_per_min: u32,
    pub max_active: u32,
    pub session_s: u32,
    pub offer_s: u32,
    pub paused: bool,
    pub closed: bool,
    /// Bumped on every organizer change; snapshots carry it so "obeyed" can be observed.
    pub version: i64,
    pub opens_at: OffsetDateTime,
    /// `events.fairness_seed`: keys the pre-queue permutation; revealed at opening.
    pub seed: String,
    /// `events.max_seats_per_hold`: the most one buyer can take, the prior of "seats per
    /// buyer" before any buyer has finished.
    pub max_seats_per_buyer: u32,
    /// The share of offers the priority lane may take, in thousandths (0-1000).
    pub priority_permille: u32,
    /// Who may join (a code before the general opening, or always).
    pub access: crate::entry::Access,
    /// The organizer's identity key, when one place per person is wanted.
    pub identity: Option<crate::entry::IdentityRule>,
    pub mode: crate::Mode,
    /// While the queue backend is down: admit from the database alone (`true`) or refuse.
    pub fail_open: bool,
    pub message: Option<crate::QueueMessage>,
}

/// A durable admission session (`admission_sessions`, unique per event and ticket).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionRecord {
    pub session_id: String,
    pub ticket_id: String,
    pub expires_at: OffsetDateTime,
    /// True only for the call that inserted it: a second claim finds `false`.
    pub created: bool,
}

/// The last durable trace of an event's Redis queue, so a Redis loss can be recovered.
#[derive(Clone, Debug, PartialEq)]
pub struct Checkpoint {
    pub epoch: String,
    pub join_seq: u64,
    pub served: u64,
    /// The FIFO place served through.
    pub fifo_through: u64,
    /// The pre-queue rank of the last pre-queue ticket offered.
    pub prequeue_through: Option<f64>,
    /// The priority lane's served frontier: the highest score it offered (a pre-queue rank in
    /// [0, 1), or a place numbered from `PRIORITY_BASE`).
    pub priority_through: Option<f64>,
}

/// What one tick leaves for the organizer's admission log and timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TickLog<'a> {
    /// The places this tick offered (join sequences, as the tokens carry them).
    pub offered: &'a [u64],
    /// How long an offer may be claimed.
    pub offer_s: u32,
    /// Places ever given in both lanes (the queue's join counters); `None`: unchanged since
    /// this instance last recorded it.
    pub joins_total: Option<u64>,
}

/// Seat counts that decide "sold out" (seats were put on sale, and none is available, held or
/// paying) and feed the chance of a seat.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Availability {
    pub available: u64,
    pub held_or_paying: u64,
    pub sold: u64,
    /// Live holds (held or paying): the sessions that have already taken their seats.
    pub live_holds: u64,
    /// Holds ended with a sale, and holds ended giving their seats back.
    pub holds_sold: u64,
    pub holds_returned: u64,
}

impl Availability {
    /// No seat is available or may come back: nothing to offer, whether every seat is sold or
    /// none is added yet.
    pub fn none_to_offer(&self) -> bool {
        self.available == 0 && self.held_or_paying == 0
    }

    /// An event whose seats are not added yet is not sold out: the line forms and waits.
    pub fn sold_out(&self) -> bool {
        self.sold > 0 && self.none_to_offer()
    }
}

#[async_trait]
pub trait AdmissionDb: Send + Sync + 'static {
    /// `None` for an unknown event.
    async fn control(&self, event: &str) -> Result<Option<Control>, DbError>;
    /// Events whose queue is not closed: the ones the meter ticks.
    async fn open_events(&self) -> Result<Vec<String>, DbError>;
    /// Inserts the session or returns the existing one for this ticket (the fence against
    /// admitting anyone twice, whatever Redis forgot).
    async fn open_session(
        &self,
        event: &str,
        ticket: &str,
        place: u64,
        session_s: u32,
    ) -> Result<SessionRecord, DbError>;
    /// The ticket's session, or a new one only while fewer than `max_active` sessions are
    /// live (judged by the database in the insert); `None` when full, nothing written.
    async fn open_session_capped(
        &self,
        event: &str,
        ticket: &str,
        place: u64,
        session_s: u32,
        max_active: u32,
    ) -> Result<Option<SessionRecord>, DbError>;
    /// The ticket's session, if it was ever claimed.
    async fn session(&self, event: &str, ticket: &str) -> Result<Option<SessionRecord>, DbError>;
    /// Records the end of a session (confirmed, released, expired, abandoned); idempotent.
    async fn end_session(&self, event: &str, session_id: &str, reason: &str)
    -> Result<(), DbError>;
    /// Sessions not ended and not past `expires_at`: the slots in use.
    async fn active_sessions(&self, event: &str) -> Result<u64, DbError>;
    /// Sessions ever opened: the served counter's floor after a Redis loss.
    async fn admitted_total(&self, event: &str) -> Result<u64, DbError>;
    async fn load_checkpoint(&self, event: &str) -> Result<Option<Checkpoint>, DbError>;
    async fn save_checkpoint(&self, event: &str, checkpoint: &Checkpoint) -> Result<(), DbError>;
    async fn availability(&self, event: &str) -> Result<Availability, DbError>;
    /// Records a tick's offers (one statement however many; a place recorded already is
    /// kept as first written) and the join count of the current minute (the greatest kept).
    async fn record_tick(&self, event: &str, log: &TickLog<'_>) -> Result<(), DbError>;
    /// Whether a tick ever recorded an offer of `place` (`record_tick`).
    async fn was_offered(&self, event: &str, place: u64) -> Result<bool, DbError>;
}
